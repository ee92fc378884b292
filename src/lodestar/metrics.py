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

**Packed lists.** ``segments``, an integer array of shape ``(..., n)``, packs
several lists into one row: item ``i`` belongs to list ``segments[..., i]``,
and the result has shape ``(..., max_segments)``, one value per list. Each
list scores exactly what it scores padded on its own (ties are averaged within
a list, never across lists), and an id with no real item scores 0 like an
empty list. Padding (``where=False``) belongs to no list, whatever its id.

>>> scores = jnp.array([0.9, 0.5, 0.5, 0.1, 0.3])
>>> labels = jnp.array([0.0, 1.0, 0.0, 1.0, 0.0])
>>> lodestar.metrics.reciprocal_rank(scores, labels, segments=jnp.array([0, 0, 0, 1, 1])).tolist()
[0.41666..., 0.5]

``max_segments`` (the number of lists per row) sets the result's shape, so it
is required under :func:`jax.jit`; ``max_segment_size`` (room for the longest
list) bounds the work, which grows with ``max_segments * max_segment_size``.
Ids outside ``[0, max_segments)`` and lists longer than ``max_segment_size``
are refused like NaN scores (below): on concrete ids they raise, and under
``jit`` every list of that row scores NaN. See decision 0009.

**Transformations.** Every function works under :func:`jax.jit` and
:func:`jax.vmap` and on any backend. Ranking is piecewise constant in the
scores, so :func:`jax.grad` with respect to the scores is zero; for training
use :mod:`lodestar.smooth` or :mod:`lodestar.losses`.

**Bad input.** Options (``k``, ``log_base``, ``gain``) and shapes are checked
when the function is traced, so they raise under ``jit`` too. NaN and infinity
in real items (and negative labels, except in :func:`dcg` and
:func:`reciprocal_rank`) raise :class:`ValueError` on
concrete arrays. Under ``jit`` they are checked inside
:func:`lodestar.value_checks_under_jit` through
:func:`jax.experimental.checkify.checkify`; otherwise a list holding a NaN score
or a label those checks refuse gives NaN, never a plausible number.

**Dtypes.** The result is floating: the promoted floating dtype of the inputs
(float32 in, float32 out; float64 with ``jax_enable_x64``), with float16 and
bfloat16 computed in float32. Integer and boolean scores are ranked by value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _gains, _ranking, _segments, _validation

if TYPE_CHECKING:
    from jaxtyping import Array, Bool, Float, Int, Num

__all__ = [
    "average_precision",
    "dcg",
    "err",
    "hits",
    "ndcg",
    "precision",
    "recall",
    "reciprocal_rank",
]


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
    kernel,
    scores,
    labels,
    where,
    k,
    ignore_ties,
    *,
    caller,
    nonnegative_labels=False,
    segments=None,
    max_segments=None,
    max_segment_size=None,
    **options,
):
    """Validate what every exact metric shares, then run its jitted kernel.

    The cut-off goes to the kernel as a traced value, and as a static one only
    when the engine's top-k method will use it (see ``_ranking.exploited_cutoff``).
    Packed lists (``segments``) are laid out one per block first (``_segments``).
    """
    k = _validation.check_k(k, caller=caller)
    ignore_ties = _validation.check_bool(ignore_ties, name="ignore_ties", caller=caller)
    scores, labels, where = _validation.check_lists(scores, labels, where, caller=caller)
    _validation.check_values(
        scores, labels, where, caller=caller, nonnegative_labels=nonnegative_labels
    )
    lists = _segments.split(
        scores,
        labels,
        where,
        segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        caller=caller,
    )
    n = lists.scores.shape[-1]
    value = kernel(
        lists.scores,
        lists.labels,
        lists.where,
        n if k is None else min(k, n),
        rank_k=_ranking.exploited_cutoff(n, k, ignore_ties=ignore_ties),
        ignore_ties=ignore_ties,
        **options,
    )
    if not _validation.is_concrete(scores, labels, where):
        # Traced inputs were not checked (decision 0003): a list holding a NaN
        # score or a refused label gives NaN. Concrete ones were refused above.
        value = _validation.nan_for_invalid_values(
            value, lists.scores, lists.labels, lists.where, nonnegative_labels=nonnegative_labels
        )
    return lists.per_list(value)


def _discounted_gain(scores, gains, valid, *, k, rank_k, log_base, ignore_ties, largest_of=None):
    """Tie-averaged DCG of ``gains`` ranked by ``scores``; padding excluded.

    ``k`` (possibly traced) truncates the discounts; ``rank_k`` (static, or
    None) only lets the engine skip ranking past it. With ``largest_of`` (and
    ``rank_k``), also its ``rank_k`` largest values, from the same host sort
    where the engine sorts on the host.
    """
    table = _gains.discount_table(scores.shape[-1], k=k, log_base=log_base, dtype=gains.dtype)
    return _ranking.block_weighted_sum(
        scores, gains, valid, table, k=rank_k, ignore_ties=ignore_ties, largest_of=largest_of
    )


def _ideal_candidates(gains, valid):
    """The gains the ideal ranks, padding at -inf so that it comes last."""
    return jnp.where(valid, gains, -jnp.inf)


def _ideal_discounted_gain(gains, valid, *, k, rank_k, top_gains=None):
    """DCG of the list ranked by its own gains (base 2), padding excluded.

    Equal gains are interchangeable, so any order of them gives the exact
    ideal. Which route is cheapest depends on the shape (decision 0004).
    ``top_gains`` are the ``rank_k`` largest of :func:`_ideal_candidates`,
    if already found.
    """
    n = gains.shape[-1]
    table = _gains.discount_table(n, k=k, log_base=2.0, dtype=gains.dtype)
    if rank_k is not None:
        # Only the k largest gains matter: their values and a dot product.
        if top_gains is None:
            top_gains = _ranking.largest_values(_ideal_candidates(gains, valid), rank_k)
        top = jnp.where(top_gains == -jnp.inf, 0, top_gains)
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
# Large batches run through the kernels one tile of lists at a time
# (``lax.map``): the engine's per-item temporaries then stay tile-sized and in
# cache instead of several copies of the whole batch (decision 0011).
_TILE_ITEMS = 1 << 20


def _over_tiles(kernel):
    """Evaluate a per-list ``kernel`` tile by tile when the batch is large.

    The lists are flattened and cut into tiles of about ``_TILE_ITEMS`` items
    (a tile size that divides the batch if one is near, so that no slice copies
    the input); the tiles run in a ``lax.map``, any remainder in one more call.
    Every list is computed by the same kernel either way. Only on a single
    device: a reshape of a batch sharded over devices would move data between
    them.
    """

    @functools.wraps(kernel)
    def tiled(scores, labels, where, k, **options):
        batch, n = scores.shape[:-1], scores.shape[-1]
        lists = math.prod(batch)
        rows = max(1, _TILE_ITEMS // max(n, 1))
        rows = next((d for d in range(rows, rows // 2, -1) if lists % d == 0), rows)
        tiles = lists // rows
        if tiles < 2 or jax.device_count() > 1:
            return kernel(scores, labels, where, k, **options)
        flat = [None if a is None else a.reshape(lists, n) for a in (scores, labels, where)]
        body = rows * tiles

        def run(arrays):
            return kernel(*arrays, k, **options)

        head = [None if a is None else a[:body].reshape(tiles, rows, n) for a in flat]
        values = lax.map(run, head).reshape(body)
        if body < lists:
            tail = run([None if a is None else a[body:] for a in flat])
            values = jnp.concatenate([values, tail])
        return values.reshape(batch)

    return tiled


_STATIC = ("rank_k", "gain", "ignore_ties")  # log_base stays traced


@functools.partial(jax.jit, static_argnames=_STATIC)
@_over_tiles
def dcg_kernel(scores, labels, where, k, *, log_base, rank_k, gain, ignore_ties):
    """Per-list DCG; see :func:`dcg`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    gains = _gains.apply_gain(gain, labels.astype(dtype))
    return _discounted_gain(
        scores, gains, valid, k=k, rank_k=rank_k, log_base=log_base, ignore_ties=ignore_ties
    )


@functools.partial(jax.jit, static_argnames=_STATIC)
@_over_tiles
def ndcg_kernel(scores, labels, where, k, *, rank_k, gain, ignore_ties):
    """Per-list NDCG; see :func:`ndcg`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    gains = jnp.where(valid, _gains.apply_gain(gain, labels.astype(dtype)), 0)
    options = dict(k=k, rank_k=rank_k, log_base=2.0, ignore_ties=ignore_ties)
    top_gains = None
    if rank_k is None:
        value = _discounted_gain(scores, gains, valid, **options)
    else:
        # One host sort finds the top scores and the top gains alike.
        candidates = _ideal_candidates(gains, valid)
        value, top_gains = _discounted_gain(scores, gains, valid, **options, largest_of=candidates)
    ideal = _ideal_discounted_gain(gains, valid, k=k, rank_k=rank_k, top_gains=top_gains)
    nonzero = ideal != 0
    return jnp.where(nonzero, value / jnp.where(nonzero, ideal, 1), 0)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
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
    return jnp.sum(probabilities * weights, axis=-1)


def dcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    log_base: float = 2.0,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
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
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
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
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
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
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
    )


def reciprocal_rank(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
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
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
        reciprocal_rank_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="reciprocal_rank",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


# --- Precision, recall, hits, average precision and ERR ---------------------------
#
# Relevance for the binary measures is any non-zero label, as for reciprocal
# rank; negative labels are refused (decision 0006).


def _ratio_or_zero(numerator: jax.Array, denominator: jax.Array) -> jax.Array:
    """``numerator / denominator``, and 0 where the denominator is 0."""
    nonzero = denominator != 0
    return jnp.where(nonzero, numerator / jnp.where(nonzero, denominator, 1), 0)


def _relevant_in_top(scores, relevant, valid, k, *, rank_k, ignore_ties, dtype):
    """Expected number of relevant items in the first ``k`` positions.

    Item ``i`` lands there with probability ``|[a, a + t) ∩ [0, k)| / t``: the
    block mean of the indicator ``1[p < k]``, whose prefix sums are ``min(p, k)``.
    """
    n = scores.shape[-1]
    table = jnp.minimum(jnp.arange(n + 1), k).astype(dtype)
    return _ranking.block_weighted_sum(
        scores, relevant.astype(dtype), valid, table, k=rank_k, ignore_ties=ignore_ties
    )


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
def precision_kernel(scores, labels, where, k, *, cutoff, rank_k, ignore_ties):
    """Per-list precision; see :func:`precision`. ``cutoff`` is the requested k or None."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    relevant = valid & (labels != 0)
    found = _relevant_in_top(
        scores, relevant, valid, k, rank_k=rank_k, ignore_ties=ignore_ties, dtype=dtype
    )
    if cutoff is None:
        slots = jnp.sum(valid, axis=-1).astype(dtype)
    else:
        slots = jnp.asarray(cutoff, dtype)
    return _ratio_or_zero(found, slots)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
def recall_kernel(scores, labels, where, k, *, rank_k, ignore_ties):
    """Per-list recall; see :func:`recall`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    relevant = valid & (labels != 0)
    found = _relevant_in_top(
        scores, relevant, valid, k, rank_k=rank_k, ignore_ties=ignore_ties, dtype=dtype
    )
    total = jnp.sum(relevant, axis=-1).astype(dtype)
    return _ratio_or_zero(found, total)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
def hits_kernel(scores, labels, where, k, *, rank_k, ignore_ties):
    """Per-list hits; see :func:`hits`. Inputs already validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    n = scores.shape[-1]
    relevant = valid & (labels != 0)
    blocks = _ranking.tie_blocks(scores, valid, k=rank_k, ignore_ties=ignore_ties)
    block = _ranking.first_relevant_block(blocks, relevant)
    # Only the first block holding a relevant item decides; c of its positions
    # lie within k, and a static k bounds c.
    slots = jnp.clip(k - block.above, 0, block.size)
    length = n if rank_k is None else min(rank_k, n)
    return 1 - _ranking.probability_none_relevant_first(block, slots, length, dtype)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
def average_precision_kernel(scores, labels, where, k, *, rank_k, ignore_ties):
    """Per-list average precision; see :func:`average_precision`. Inputs validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    relevant = valid & (labels != 0)
    blocks = _ranking.tie_blocks(scores, valid, k=rank_k, ignore_ties=ignore_ties)
    relevant_above, relevant_in_block = _ranking.block_totals(relevant.astype(jnp.int32), blocks)
    start = blocks.above.astype(dtype)
    size = blocks.tied.astype(dtype)
    # Expected share of relevant items among any u block-mates placed first.
    others = (relevant_in_block - 1).astype(dtype) / jnp.maximum(size - 1, 1)
    counted_above = 1 + relevant_above.astype(dtype)

    def precision_at_offset(u):
        return (counted_above + u * others) / (start + u + 1)

    expected = _ranking.block_position_sum(blocks, k, precision_at_offset, dtype) / size
    found = jnp.sum(jnp.where(relevant, expected, 0), axis=-1)
    total = jnp.sum(relevant, axis=-1).astype(dtype)
    return _ratio_or_zero(found, total)


def _expected_cascade(stop, valid, blocks, k, *, length, dtype):
    """Expected ERR@k from per-item stop probabilities, exact over tie orders.

    In rank order a block of ``m`` tied items starting at ``a`` is reached with
    probability ``reach(a)``, the product of ``1 - R`` over every item above it.
    Inside the block, the expected stop probability at offset ``u`` is
    ``s_u = (1/m) sum_i R_i ebar_u(B - i)``, where ``ebar_u`` is the mean over
    ``u``-subsets of the product of ``1 - R``. Adding the block's items one at a
    time (j = 1 .. m) updates the running means ``e_u`` (the ``ebar_u`` of the
    items added so far) and ``s_u`` by convex combinations:

        e_u <- ((j - u) e_u + u x e_{u-1}) / j
        s_u <- ((j - 1 - u) s_u + u x s_{u-1} + R e_u) / j

    for the j-th item's ``(R, x = 1 - R)``. Offset ``u`` of a block lives at
    rank ``a + u``, so one ``(..., length)`` array holds every block at once,
    and the loop runs as many times as the largest block starting before ``k``.
    """
    n = stop.shape[-1]
    # Rank order, blocks contiguous; the order inside a block does not matter,
    # the running means being symmetric in the block's items.
    order = _ranking.descending_order(-blocks.above, valid)

    def ranked(x):
        return jnp.take_along_axis(x, order, axis=-1)

    stop_ranked = ranked(jnp.where(valid, stop, 0))
    go_on = 1 - stop_ranked
    start = ranked(blocks.above)[..., :length]
    size = ranked(blocks.tied)[..., :length]
    real = ranked(valid)[..., :length]
    rank = jnp.arange(length)
    offset = (rank - start).astype(dtype)
    reach = jnp.cumprod(jnp.concatenate([jnp.ones_like(go_on[..., :1]), go_on[..., :-1]], -1), -1)
    reach_block = jnp.take_along_axis(reach, jnp.minimum(start, n - 1), axis=-1)

    def previous_offset(x):
        return jnp.concatenate([jnp.zeros_like(x[..., :1]), x[..., :-1]], axis=-1)

    def add_item(j, state):
        none_stopped, stops_at = state
        item = jnp.minimum(start + j - 1, n - 1)
        x = jnp.take_along_axis(go_on, item, axis=-1)
        r = jnp.take_along_axis(stop_ranked, item, axis=-1)
        count = j.astype(dtype)
        new_stops_at = (
            (count - 1 - offset) * stops_at
            + offset * x * previous_offset(stops_at)
            + r * none_stopped
        ) / count
        new_none_stopped = (
            (count - offset) * none_stopped + offset * x * previous_offset(none_stopped)
        ) / count
        joins = j <= size
        return (
            jnp.where(joins, new_none_stopped, none_stopped),
            jnp.where(joins, new_stops_at, stops_at),
        )

    steps = jnp.max(jnp.where(real & (start < k), size, 0), initial=0)
    # Typed like the labels' terms (sharded, and varying inside a shard_map),
    # which the block counts from a host sort need not be.
    no_stop = jnp.zeros_like(reach_block)
    initial = ((offset == 0).astype(dtype) + no_stop, no_stop)
    _, stops_at = lax.fori_loop(1, steps + 1, add_item, initial)
    weight = jnp.where(real & (rank < k), reach_block / (rank + 1).astype(dtype), 0)
    return jnp.sum(weight * stops_at, axis=-1)


@functools.partial(jax.jit, static_argnames=("rank_k", "ignore_ties"))
@_over_tiles
def err_kernel(scores, labels, where, k, *, max_label, rank_k, ignore_ties):
    """Per-list expected reciprocal rank; see :func:`err`. Inputs validated."""
    valid = _valid(scores, where)
    dtype = result_dtype(scores, labels)
    n = scores.shape[-1]
    if n == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    grades = labels.astype(dtype)
    ceiling = jnp.asarray(max_label, dtype)
    # (2^g - 1) / 2^max as 2^(g - max) - 2^-max: no overflow for any max_label.
    stop = jnp.exp2(grades - ceiling) - jnp.exp2(-ceiling)
    blocks = _ranking.tie_blocks(scores, valid, k=rank_k, ignore_ties=ignore_ties)
    length = n if rank_k is None else min(rank_k, n)
    value = _expected_cascade(stop, valid, blocks, k, length=length, dtype=dtype)
    # A grade above max_label would be a stop probability above 1.
    return jnp.where(jnp.any(valid & (grades > ceiling), axis=-1), jnp.nan, value)


def precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Precision at ``k``: the share of the first ``k`` positions holding a relevant item.

    Any non-zero label is relevant. The denominator is ``k`` itself, even when
    the list has fewer than ``k`` real items: the missing positions count as
    non-relevant, as in trec_eval's ``P_k`` and ranx's ``precision@k``. With
    ``k=None`` it is the number of real items, so the value is the share of the
    list that is relevant. With ties, by linearity,

    .. math::

        \mathbb{E}[\mathrm{P@k}] = \frac{1}{k} \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i},

    where item :math:`i`'s tie block spans the 0-based positions
    :math:`[a_i, a_i + t_i)`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions; also the denominator. None scores the whole
        list over its number of real items.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` precision of each list, in [0, 1]. 0 for a list with no real
      items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      The relevant item ties with another for positions 2 and 3, so half of it
      is expected in the top 2:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(f"{metrics.precision(scores, labels, k=2):.2f}")
      0.75
      >>> print(f"{metrics.precision(scores, labels, k=10):.2f}")  # 2 relevant / 10
      0.20

    Remarks:
      Rax and TF-Ranking divide by ``min(k, number of real items)`` instead, so
      a short list can reach 1 there; their value is lodestar's times
      ``k / min(k, n_real)``.
      Precision at a fixed ``k`` averages poorly over queries with very
      different numbers of relevant items; :func:`recall` and
      :func:`average_precision` normalise by that number.

    References:
      Manning, Raghavan & Schütze, *Introduction to Information Retrieval*,
      ch. 8, 2008. https://nlp.stanford.edu/IR-book/

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    k = _validation.check_k(k, caller="precision")
    return _evaluate(
        precision_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="precision",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        nonnegative_labels=True,
        cutoff=None if k is None else float(k),
    )


def recall(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Recall at ``k``: the share of the list's relevant items within the first ``k``.

    Any non-zero label is relevant. The denominator :math:`R` is the number of
    relevant real items **in the list**, not in a wider pool of judgements: to
    get trec_eval's ``recall_k``, which divides by every relevant document in
    the qrels, multiply by ``R / R_qrels``. With ties,

    .. math::

        \mathbb{E}[\mathrm{R@k}] = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i}.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions. None, or a ``k`` past ``n``, looks at the
        whole list (recall 1 whenever an item is relevant).
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` recall of each list, in [0, 1]. A list with no relevant item
      scores 0; it is never dropped. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      Of two relevant items, one is first and one ties for positions 2 and 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(f"{metrics.recall(scores, labels, k=2):.2f}")
      0.75

    Remarks:
      Recall at ``k`` rewards a list for holding few relevant items: a list
      with one relevant item ranked first scores 1 at every ``k``. Report it
      beside :func:`precision`, or use :func:`average_precision`.

    References:
      Manning, Raghavan & Schütze, *Introduction to Information Retrieval*,
      ch. 8, 2008. https://nlp.stanford.edu/IR-book/

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _evaluate(
        recall_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="recall",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        nonnegative_labels=True,
    )


def hits(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Hits at ``k``: 1 if a relevant item is among the first ``k``, else 0, expected over ties.

    Any non-zero label is relevant. Under tied scores the value is the
    probability of a hit. Only the first tie block :math:`B` holding a relevant
    item matters: with :math:`a` items above it, :math:`m = |B|`, :math:`r`
    relevant items in it and :math:`c = \min(\max(k - a, 0), m)` of its
    positions within ``k``, the hypergeometric probability that none of the
    :math:`r` lands in those :math:`c` positions gives

    .. math::

        \mathbb{E}[\mathrm{Hits@k}] = 1 - \binom{m - r}{c} \Big/ \binom{m}{c}
            = 1 - \prod_{j=0}^{c-1} \frac{m - r - j}{m - j}.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions. None, or a ``k`` past ``n``, looks at the
        whole list (1 whenever an item is relevant).
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` hits of each list, in [0, 1]; exactly 0 or 1 without ties. A
      list with no relevant item scores 0. NaN for a list with a NaN score.
      The plain mean over lists is the hit rate (trec_eval's ``success_k``).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      One relevant item among three tied for the top: a hit at 1 one time in
      three, at 2 two times in three:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.5, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([0, 1, 0, 0])
      >>> print(f"{metrics.hits(scores, labels, k=1):.4f} {metrics.hits(scores, labels, k=2):.4f}")
      0.3333 0.6667

    Remarks:
      ranx's ``hits@k`` is something else: the *number* of relevant items in
      the top ``k`` (lodestar: ``k * precision``). lodestar's ``hits`` is
      ranx's ``hit_rate@k`` and TF-Ranking's ``HitsMetric``.

    References:
      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _evaluate(
        hits_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="hits",
        nonnegative_labels=True,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


def average_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Average precision at ``k``, expected over tied scores; the mean over lists is MAP.

    Any non-zero label is relevant. Without ties,

    .. math::

        \mathrm{AP@k} = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0,\ p_i \le k}
            \mathrm{P@}p_i,

    the precision at the 1-based rank :math:`p_i` of each relevant item ranked
    within ``k``, over :math:`R`, the number of relevant real items **in the
    whole list** (also those past ``k``), as trec_eval's ``map_cut_k`` does. To
    get trec_eval's ``map``, which divides by every relevant document in the
    qrels, multiply by ``R / R_qrels``.

    With ties, let item :math:`i`'s block start at 0-based position :math:`a`,
    hold :math:`m` items of which :math:`r` are relevant, and let :math:`A`
    relevant items rank strictly above it. Given that :math:`i` sits at offset
    :math:`u` of its block, its :math:`u` predecessors are a uniformly random
    subset of its :math:`m - 1` block-mates, holding :math:`u (r-1)/(m-1)`
    relevant items in expectation. Precision at :math:`i`'s rank is linear in
    that count, so

    .. math::

        \mathbb{E}[\mathrm{AP@k}] = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0}
            \frac{1}{m} \sum_{u=0}^{\min(m, k - a) - 1}
            \frac{1 + A + u\,\frac{r - 1}{m - 1}}{a + u + 1}

    (the fraction :math:`\frac{r-1}{m-1}` is 0 when :math:`m = 1`). The inner
    sum runs over offsets, so a list costs O(n · m) for its largest tie block
    of :math:`m` items starting before ``k``: one pass without ties.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: Only relevant items within the first ``k`` positions contribute; the
        denominator stays :math:`R`. None, or a ``k`` past ``n``, looks at the
        whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` average precision of each list, in [0, 1]. A list with no
      relevant item scores 0; it is never dropped. NaN for a list with a NaN
      score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      Relevant items at ranks 1 and 3 give (1/1 + 2/3) / 2; with all four
      scores tied the expectation is lower:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.average_precision(-jnp.arange(4.0), labels):.4f}")
      0.8333
      >>> print(f"{metrics.average_precision(jnp.zeros(4), labels):.4f}")
      0.6806

    Remarks:
      Some "AP@k" definitions in recommender-system libraries divide by
      :math:`\min(k, R)` instead of :math:`R`; lodestar follows trec_eval,
      Rax, TF-Ranking and ranx. The value depends on every relevant item's
      rank, so it is a poor fit when only the first result is read; see
      :func:`reciprocal_rank`.

    References:
      Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR
      2000. https://doi.org/10.1145/345508.345543

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _evaluate(
        average_precision_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="average_precision",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        nonnegative_labels=True,
    )


def err(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    max_label: float,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Expected reciprocal rank (Chapelle et al., 2009), averaged over tied scores.

    A user reads down the list and stops at an item of grade :math:`g` with
    probability :math:`R(g) = (2^g - 1) / 2^{g_{\max}}`; ERR is the expected
    reciprocal of the rank where they stop:

    .. math::

        \mathrm{ERR@k} = \sum_{p=1}^{\min(k, n)} \frac{1}{p}\, R_{\pi(p)}
            \prod_{q < p} \bigl(1 - R_{\pi(q)}\bigr).

    With ties, a block :math:`B` of :math:`m` items starting at 0-based position
    :math:`a` is reached with probability :math:`\prod_{j\ \mathrm{above}\ B}
    (1 - R_j)`. The user stops at its offset :math:`u` with probability

    .. math::

        s_u = \frac{1}{m} \sum_{i \in B} R_i\,
              \bar e_u\bigl(\{1 - R_j\}_{j \in B \setminus i}\bigr),

    where :math:`\bar e_u` is the mean, over the :math:`u`-subsets, of the
    product of their values (the :math:`u` items placed before :math:`i` are a
    uniformly random subset of its block-mates). The block adds
    :math:`\sum_{u < \min(m, k - a)} s_u / (a + u + 1)`. The means are built
    item by item as convex combinations (decision 0006), in O(m^2) per block,
    so a tie-free list costs one pass. No closed form exists: the product does
    not factor over items.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` grades :math:`g`, in ``[0, max_label]``.
      max_label: :math:`g_{\max}`, the top grade of the judgement scale (4
        for the 0–4 scale of the TREC Web track and of Chapelle et al.), in
        (0, inf). Required: the maximum of each list would make a list's
        value depend on what it retrieved, and the maximum of a batch on the
        other lists.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` ERR of each list, in [0, 1). 0 for a list with no item of
      positive grade. NaN for a list with a NaN score, or with a grade above
      ``max_label`` under ``jit`` (refused on concrete inputs).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``max_label`` is not a real number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, a negative label, or a label above
        ``max_label``.

    Example:
      Grades 4 and 2 on a 0–4 scale: the user stops at rank 1 with probability
      15/16, else reaches rank 2 and stops there with probability 3/16:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5])
      >>> print(f"{metrics.err(scores, jnp.array([4, 2]), max_label=4):.6f}")
      0.943359
      >>> print(f"{15 / 16 + (1 / 16) * (3 / 16) / 2:.6f}")
      0.943359

    Remarks:
      ERR is not differentiable in the labels under reverse mode: its tie
      expectation is a :func:`jax.lax.while_loop` (forward mode works). Its
      gradient in the scores is zero like every exact metric's. ``gdeval``,
      the TREC Web track's reference, uses ``max_label=4`` and ranks ties in
      its own order.

    References:
      Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
      relevance", CIKM 2009. https://doi.org/10.1145/1645953.1646033

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    k = _validation.check_k(k, caller="err")
    max_label = _validation.check_positive_float(max_label, name="max_label", caller="err")
    scores, labels, where = _validation.check_lists(scores, labels, where, caller="err")
    _validation.check_labels_at_most(labels, where, max_label, name="max_label", caller="err")
    return _evaluate(
        err_kernel,
        scores,
        labels,
        where,
        k,
        ignore_ties,
        caller="err",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        nonnegative_labels=True,
        max_label=max_label,
    )
