"""Exact ranking metrics, averaged over tied scores.

Every function here scores lists along the **last axis**: ``scores`` and
``labels`` have shape ``(..., n)`` with any number of leading batch axes, and
the result has shape ``(...)``, one value per list. Nothing is reduced; take
the mean yourself, or use :mod:`lodestar.sklearn` for scikit-learn's
weighted mean.

>>> import jax.numpy as jnp
>>> import lodestar
>>> scores = jnp.array([[0.9, 0.5, 0.5, 0.1], [0.1, 0.2, 0.3, 0.4]])
>>> labels = jnp.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
>>> lodestar.metrics.reciprocal_rank(scores, labels).tolist()
[0.41666..., 1.0]

The first list's relevant item ties with another for positions 2 and 3, so its
reciprocal rank is the mean of 1/2 and 1/3.

**Ties.** By default a tie between scores is averaged over every order of the
tied items (McSherry & Najork, 2008), which is what ``sklearn.metrics.dcg_score``
computes. ``ignore_ties=True`` instead ranks tied items by descending index,
deterministically: faster to reason about, and correct only when real ties
cannot occur.

**Padding.** ``where`` is a boolean mask of shape ``(..., n)``; ``False`` marks
padding, which takes no part in the ranking or in the ideal DCG. A padded list
scores exactly what the unpadded list scores, and a list with no real items
scores 0.

**Transformations.** Every function works under :func:`jax.jit` and
:func:`jax.vmap` and on any backend. Ranking is piecewise constant in the
scores, so :func:`jax.grad` with respect to the scores is zero; for training
use :mod:`lodestar.smooth` or :mod:`lodestar.losses`.

**Bad input.** Options (``k``, ``log_base``, ``gain``) and shapes are checked
when the function is traced, so they raise under ``jit`` too. NaN and infinity
in real items (and negative labels in :func:`ndcg`) raise :class:`ValueError` on
concrete arrays; under ``jit`` they are checked only inside
:func:`jax.experimental.checkify.checkify`, and otherwise a NaN score makes that
list's result NaN.

**Dtypes.** The result is floating: the promoted floating dtype of the inputs
(float32 in, float32 out; float64 with ``jax_enable_x64``), with float16 and
bfloat16 computed in float32. Integer and boolean scores are ranked by value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _gains, _ranking, _validation

if TYPE_CHECKING:
    from jaxtyping import Array, Bool, Float, Num

__all__ = ["dcg", "ndcg", "reciprocal_rank"]


def result_dtype(*arrays: jax.Array):
    """The floating dtype a metric computes and returns in.

    Floating inputs promote among themselves; integer and boolean inputs do
    not widen them. With no floating input the default float dtype is used.
    Half-precision results are widened to float32.
    """
    floating = [a.dtype for a in arrays if jnp.issubdtype(a.dtype, jnp.floating)]
    dtype = jnp.result_type(*floating) if floating else jax.dtypes.canonicalize_dtype(float)
    if jnp.finfo(dtype).bits < 32:
        dtype = jnp.dtype(jnp.float32)
    return dtype


def _evaluate(
    kernel, scores, labels, where, k, ignore_ties, *, caller, nonnegative_labels=False, **options
):
    """Validate what every exact metric shares, then run its jitted kernel.

    The cut-off goes to the kernel as a traced value, and as a static one only
    when the engine's top-k method will use it (see ``_ranking.exploited_cutoff``).
    """
    k = _validation.check_k(k, caller=caller)
    ignore_ties = _validation.check_bool(ignore_ties, name="ignore_ties", caller=caller)
    scores, labels, where = _validation.check_lists(scores, labels, where, caller=caller)
    _validation.check_values(
        scores, labels, where, caller=caller, nonnegative_labels=nonnegative_labels
    )
    n = scores.shape[-1]
    return kernel(
        scores,
        labels,
        where,
        n if k is None else min(k, n),
        rank_k=_ranking.exploited_cutoff(n, k),
        ignore_ties=ignore_ties,
        **options,
    )


def _nan_if_any_nan_score(value: jax.Array, scores: jax.Array, valid: jax.Array) -> jax.Array:
    """A list holding a NaN score has no ranking, so its metric is NaN."""
    if not jnp.issubdtype(scores.dtype, jnp.inexact):
        return value
    poisoned = jnp.any(valid & jnp.isnan(scores), axis=-1)
    return jnp.where(poisoned, jnp.nan, value)


def _discounted_gain(scores, gains, valid, *, k, rank_k, log_base, ignore_ties):
    """Tie-averaged DCG of ``gains`` ranked by ``scores``; padding excluded.

    ``k`` (possibly traced) truncates the discounts; ``rank_k`` (static, or
    None) only lets the engine skip ranking past it.
    """
    table = _gains.discount_table(scores.shape[-1], k=k, log_base=log_base, dtype=gains.dtype)
    blocks = _ranking.tie_blocks(scores, valid, k=rank_k, ignore_ties=ignore_ties)
    weights = _ranking.block_mean(table, blocks)
    return jnp.sum(jnp.where(valid, gains * weights, 0), axis=-1)


def _ideal_discounted_gain(gains, valid, *, k, rank_k):
    """DCG of the list ranked by its own gains (base 2), padding excluded.

    Equal gains are interchangeable, so any order of them gives the exact
    ideal. Which route is cheapest depends on the shape (decision 0004).
    """
    n = gains.shape[-1]
    table = _gains.discount_table(n, k=k, log_base=2.0, dtype=gains.dtype)
    if rank_k is not None:
        # Only the k largest gains matter: one top_k and a dot product.
        top = lax.top_k(jnp.where(valid, gains, -jnp.inf), rank_k)[0]
        top = jnp.where(top == -jnp.inf, 0, top)
        return jnp.sum(top * jnp.diff(table)[:rank_k], axis=-1)
    if n >= _ranking.ORDER_BY_SORT_MIN_N:
        order = _ranking.descending_order(gains, valid)
        ordered = jnp.take_along_axis(jnp.where(valid, gains, 0), order, axis=-1)
        return jnp.sum(ordered * jnp.diff(table), axis=-1)
    return _discounted_gain(gains, gains, valid, k=k, rank_k=None, log_base=2.0, ignore_ties=False)


def _valid(scores, where):
    return jnp.ones(scores.shape, bool) if where is None else where


# The kernels take the cut-off ``k`` as an array, so one compilation serves
# every k; ``rank_k`` is the static cut-off the engine may exploit (top-k), or
# None to rank whole lists. The public functions pass ``rank_k`` only when the
# top-k method will use it; ``lodestar.sklearn`` always passes None, so it
# compiles once per shape bucket.
_STATIC = ("rank_k", "gain", "ignore_ties")  # log_base stays traced


@functools.partial(jax.jit, static_argnames=_STATIC)
def dcg_kernel(scores, labels, where, k, *, log_base, rank_k, gain, ignore_ties):
    """Per-list DCG; see :func:`dcg`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    gains = _gains.apply_gain(gain, labels.astype(dtype))
    value = _discounted_gain(
        scores, gains, valid, k=k, rank_k=rank_k, log_base=log_base, ignore_ties=ignore_ties
    )
    return _nan_if_any_nan_score(value, scores, valid)


@functools.partial(jax.jit, static_argnames=_STATIC)
def ndcg_kernel(scores, labels, where, k, *, rank_k, gain, ignore_ties):
    """Per-list NDCG; see :func:`ndcg`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    gains = jnp.where(valid, _gains.apply_gain(gain, labels.astype(dtype)), 0)
    value = _discounted_gain(
        scores, gains, valid, k=k, rank_k=rank_k, log_base=2.0, ignore_ties=ignore_ties
    )
    ideal = _ideal_discounted_gain(gains, valid, k=k, rank_k=rank_k)
    nonzero = ideal != 0
    value = jnp.where(nonzero, value / jnp.where(nonzero, ideal, 1), 0)
    return _nan_if_any_nan_score(value, scores, valid)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
def reciprocal_rank_kernel(scores, labels, where, k, *, rank_k, ignore_ties):
    """Per-list reciprocal rank; see :func:`reciprocal_rank`. Inputs validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    n = scores.shape[-1]
    if n == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    relevant = valid & (labels != 0)
    blocks = _ranking.tie_blocks(scores, valid, k=rank_k, ignore_ties=ignore_ties)
    block = _ranking.first_relevant_block(blocks, relevant)
    # Only offsets j with a + j <= k can count, so a static k bounds the sum.
    length = n if rank_k is None else min(rank_k, n)
    probabilities = _ranking.first_relevant_position_probabilities(block, length, dtype)
    rank = block.above[..., None] + jnp.arange(1, length + 1)  # 1-based rank of offset j
    weights = jnp.where(rank <= k, 1 / rank.astype(dtype), 0)
    value = jnp.sum(probabilities * weights, axis=-1)
    return _nan_if_any_nan_score(value, scores, valid)


def dcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    log_base: float = 2.0,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
) -> Float[Array, "*batch"]:
    r"""Discounted cumulative gain of each list, averaged over tied scores.

    .. math::

        \mathrm{DCG@k} = \sum_{p=1}^{\min(k, n)} \frac{g(\ell_{\pi(p)})}{\log_b(p + 1)}

    where :math:`\pi` orders the items by descending score. Items with tied
    scores share the mean of the discounts of the positions their tie block
    occupies (truncated at ``k``), which equals the mean of DCG over every
    order of the tied items.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance of each item.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      log_base: Base :math:`b` of the positional discount, in (0, inf). A base
        below 1 makes the discounts, and so the score, negative; a base of 1
        makes every discount 0.
      gain: ``"linear"`` (the label itself, as in scikit-learn), ``"exp2"``
        (:math:`2^\ell - 1`), or a callable applied to the labels.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.

    Returns:
      ``(...)`` DCG of each list. Unbounded above: it grows with the label
      values, so two lists are comparable only on the same judgement scale;
      use :func:`ndcg` for a number in [0, 1]. A list with no real items
      scores 0; a list with a NaN score scores NaN.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``log_base`` is not in (0, inf); ``gain`` is unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity.

    Example:
      Four documents whose scores all tie, scored both ways (the worked
      example of the Lodestar.Metrics ``Dcg.Score`` page):

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> relevance = jnp.array([3.0, 2.0, 1.0, 0.0])
      >>> tied = jnp.full(4, 0.5)
      >>> print(f"{metrics.dcg(tied, relevance):.3f}")
      3.842
      >>> print(f"{metrics.dcg(tied, relevance, ignore_ties=True):.3f}")
      2.923

    Remarks:
      The gains are linear by default. Much of the literature uses
      :math:`2^\ell - 1` instead (``gain="exp2"``), which on the list above
      ranked perfectly gives 9.3927… where the linear gain gives 4.7618…; the
      difference is the definition, not an error on either side. The averaged
      and arbitrary values above differ by almost a third, which is why
      ``ignore_ties`` defaults to False.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, "Computing information retrieval performance measures
      efficiently in the presence of tied scores", ECIR 2008.
      https://doi.org/10.1007/978-3-540-78646-7_38
    """
    # Checked in scikit-learn's order: k, then log_base.
    _validation.check_k(k, caller="dcg")
    log_base = _validation.check_log_base(log_base, caller="dcg")
    gain = _validation.check_gain(gain, caller="dcg")
    return _evaluate(
        dcg_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="dcg",
        log_base=log_base,
        gain=gain,
    )


def ndcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
) -> Float[Array, "*batch"]:
    r"""Normalised DCG of each list: DCG divided by the ideal DCG.

    .. math::

        \mathrm{NDCG@k} = \frac{\mathrm{DCG@k}(\text{scores})}
                               {\mathrm{DCG@k}(\text{items sorted by gain})}

    The ideal uses the same ``k``, the same gain and the base-2 discount, and
    only the list's own real items (padding is excluded). A list whose ideal
    DCG is 0 (no item with a non-zero gain) scores 0.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      gain: ``"linear"`` (the label itself, as in scikit-learn), ``"exp2"``
        (:math:`2^\ell - 1`), or a callable applied to the labels. The ideal
        ranks the items by their gains.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.

    Returns:
      ``(...)`` NDCG of each list, in [0, 1] for non-negative gains; 0 for a
      list with no relevant or no real item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label (the ratio would
        leave [0, 1]).

    Example:
      The worked example of the encyclopedia article on DCG: six documents
      ranked in the order given, graded 3, 2, 3, 0, 1, 2, with two more judged
      documents (graded 3 and 2) that the ranking did not retrieve. They enter
      as padding-free items with scores below the retrieved six, and the cut
      at 6 keeps them out of the DCG but in the ideal:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([3.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 2.0])
      >>> scores = -jnp.arange(8.0)
      >>> print(f"{metrics.ndcg(scores, labels, k=6):.3f}")
      0.785

    Remarks:
      NDCG does not penalise a bad document whose label is 0, nor a missing
      document: a list graded 1, 1, 1 and a list graded 1, 1, 1, 0 both score
      1. Score a fixed number of positions (``k``) and pad short lists with
      zero-gain items where that matters.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    gain = _validation.check_gain(gain, caller="ndcg")
    return _evaluate(
        ndcg_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="ndcg",
        nonnegative_labels=True,
        gain=gain,
    )


def reciprocal_rank(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
) -> Float[Array, "*batch"]:
    r"""Reciprocal rank of the first relevant item, expected over tied scores.

    Any non-zero label is relevant; 3 counts no more than 1. Without ties the
    value is :math:`1 / p` for the position :math:`p` (1-based) of the first
    relevant item, or 0 if it lies past ``k`` or no item is relevant.

    With ties, let :math:`B` be the first tie block that holds a relevant item,
    :math:`a` the number of items above it, :math:`m = |B|` and :math:`r` the
    relevant items in it. Under a uniformly random order of :math:`B`:

    .. math::

        \mathbb{E}[\mathrm{RR}] = \sum_{j=1}^{m-r+1}
            \frac{\binom{m-j}{r-1}}{\binom{m}{r}} \cdot \frac{1}{a + j},

    with the terms where :math:`a + j > k` dropped.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements; any non-zero value is relevant.
      k: Only a first relevant item within the first ``k`` positions counts.
        None, or a ``k`` past ``n``, looks at the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.

    Returns:
      ``(...)`` reciprocal rank of each list, in [0, 1]. 1 when a relevant item
      ranks first; 0 when none is relevant or none is within ``k``. A list with
      no relevant item counts 0 rather than being dropped: take the plain mean
      of the result to get MRR. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity.

    Example:
      Two queries; the first relevant document is second, then first:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> relevance = jnp.array([[0, 1, 0, 0], [1, 0, 0, 0]])
      >>> scores = jnp.array([[0.9, 0.5, 0.4, 0.1], [0.9, 0.5, 0.4, 0.1]])
      >>> float(metrics.reciprocal_rank(scores, relevance).mean())
      0.75

    Remarks:
      Everything after the first relevant item is invisible to this number,
      which makes it the wrong metric when the reader consumes the whole list.
      Report it beside :func:`ndcg`, not instead of it. Implementations differ
      on lists without a relevant item; dropping them raises the mean and makes
      two runs over different query sets incomparable, so lodestar keeps them
      as 0.

    References:
      Voorhees, "The TREC-8 question answering track report", TREC 1999.

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _evaluate(
        reciprocal_rank_kernel, scores, labels, where, k, ignore_ties, caller="reciprocal_rank"
    )
