"""Rank-biased precision (Moffat & Zobel) and its residual, exact over tie orders."""

from __future__ import annotations

import numbers

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _validation
from lodestar.metrics import _counts, _first_relevant, _kernel


def persistence_table(lists: _kernel.RankedLists, k, p):
    """Prefix sums ``W[j] = -p^min(j, k)`` of the positional weights ``(1 - p) p^j``, ``j < k``.

    A block spanning ``[a, a + t)`` then has the mean weight
    ``(p^a - p^min(a + t, k)) / t``: a difference of two powers, never of two
    numbers near 1, so it keeps its relative precision far down the list.
    """
    p = jnp.asarray(p, lists.dtype)
    return -(p ** jnp.minimum(jnp.arange(lists.n + 1), k).astype(lists.dtype))


def _rank_biased_precision(lists: _kernel.RankedLists, k, *, p, max_label=None):
    dtype = lists.dtype
    labels = jnp.where(lists.valid, lists.labels.astype(dtype), 0)
    if "max_label" in lists.context:
        top = lists.context["max_label"].astype(dtype)
    elif max_label is not None:
        top = jnp.broadcast_to(jnp.asarray(max_label, dtype), labels.shape[:-1])
    else:
        top = jnp.max(labels, axis=-1, initial=0)
    if lists.in_trec_eval_order:
        value = _trec_eval_rank_biased_precision(lists, labels, top, k, p)
    else:
        # trec_eval rescales the gains to [0, 1] only when one exceeds 1.
        gains = labels / jnp.maximum(top, 1)[..., None]
        value = lists.ranking.weighted_sum(gains, persistence_table(lists, k, p))
    # A label above its list's max_label would be a gain above 1.
    return jnp.where(jnp.any(labels > top[..., None], axis=-1), jnp.nan, value)


def _trec_eval_rank_biased_precision(lists: _kernel.RankedLists, labels, top, k, p):
    """RBP in m_rbp.c's order: ``(1 - p) * (g_0 p^0 + g_1 p^1 + ...)``, left to right.

    In trec_eval's order (:attr:`~lodestar.metrics._kernel.RankedLists.in_trec_eval_order`),
    so that the value is trec_eval's to the bit: each weight is the previous one times
    ``p`` rather than a power, each gain a correctly rounded quotient, and the
    terms are added in rank order. Averaging over ties keeps the positional
    form above (a value trec_eval never computes).
    """
    p = jnp.asarray(p, lists.dtype)
    gains = _kernel.ratio_or_zero(labels, jnp.maximum(top, 1)[..., None])
    weights = _kernel.repeated_powers(p, lists.n)
    return (1 - p) * _kernel.sum_in_order(_kernel.ranked_in_cut(lists, gains, k) * weights)


def _trec_eval_residual(lists: _kernel.RankedLists, unjudged, k, p):
    """RBP's residual in m_rbp_resid.c's order, as :func:`_trec_eval_rank_biased_precision`.

    ``p^K + (1 - p) * (sum of the unjudged positions' weights)``, the weights
    stepped by repeated products up to the ``K``-th and added in rank order;
    0 when every one of the first ``K`` retrieved items was judged.
    """
    p = jnp.asarray(p, lists.dtype)
    weights = _kernel.repeated_powers(p, lists.n + 1)
    ranked = _kernel.ranked_in_cut(lists, unjudged.astype(lists.dtype), k)
    spread = _kernel.sum_in_order(ranked * weights[:-1])
    retrieved = _counts.retrieved_count(lists, k).astype(jnp.int32)
    tail = jnp.take(weights, retrieved)
    return jnp.where(jnp.any(ranked > 0, axis=-1), tail + (1 - p) * spread, 0)


def _rank_biased_precision_residual(lists: _kernel.RankedLists, k, *, p):
    dtype = lists.dtype
    unjudged = lists.valid & ~lists.judged()
    if lists.in_trec_eval_order:
        return _trec_eval_residual(lists, unjudged, k, p)
    blocks = lists.ranking.blocks  # first, so that the weighted sum reuses them
    p = jnp.asarray(p, dtype)
    spread = lists.ranking.weighted_sum(unjudged.astype(dtype), persistence_table(lists, k, p))
    # The tail weight p^K counts only when an unjudged item was retrieved: the
    # chance of that is decided by the first block holding one, as for hits.
    block = _first_relevant.first_relevant_block(blocks, unjudged)
    length = lists.n if lists.ranking.k is None else min(lists.ranking.k, lists.n)
    slots = jnp.clip(k - block.above, 0, block.size)
    none = _first_relevant.probability_none_relevant_first(block, slots, length, dtype)
    tail = p ** _counts.retrieved_count(lists, k)
    return tail * (1 - none) + spread


RANK_BIASED_PRECISION = _kernel.Formula(
    "rank_biased_precision", _rank_biased_precision, labels="graded", nonnegative_labels=True
)
# It reads which positions hold unjudged items, not relevance.
RANK_BIASED_PRECISION_RESIDUAL = _kernel.Formula(
    "rank_biased_precision_residual",
    _rank_biased_precision_residual,
    labels="binary",
    nonnegative_labels=True,
    tie_key="unjudged",
)


def _check_p(p, caller):
    return _validation.check_float_in_range(
        p, name="p", caller=caller, low=0.0, high=1.0, closed="neither"
    )


@_kernel.computes(RANK_BIASED_PRECISION)
def rank_biased_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    p: float = 0.9,
    max_label: float | Num[Array, "*batch"] | None = None,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Rank-biased precision (Moffat & Zobel, 2008), averaged over tied scores.

    A user reads the first item, and after each item reads the next one with
    probability ``p`` (the persistence); RBP is the expected gain per item
    read:

    .. math::

        \mathrm{RBP} = (1 - p) \sum_{j=0}^{\min(n, k) - 1} g_{\pi(j)}\, p^j,

    with 0-based positions :math:`j`. The gain is the label, divided by
    ``max_label`` when that exceeds 1, so gains lie in [0, 1] (trec_eval
    rescales the relevance levels by the query's largest when it is above 1).
    The weights are positional, so with ties item :math:`i`'s block
    :math:`[a_i, a_i + t_i)` gives it the mean weight
    :math:`(p^{a_i} - p^{\min(a_i + t_i, k)}) / t_i`, and the value is exact.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative, at most ``max_label``.
      p: The persistence, in (0, 1). trec_eval's default, 0.9, reads about 10
        items; 0.95 and 0.98 come closer to average precision.
      max_label: The top grade, a float or a ``(...)`` array with one per list
        (for packed lists ``(..., max_segments)``), non-negative. Gains are
        ``label / max(max_label, 1)``. None takes each list's largest label.
        trec_eval uses the largest relevance level among the query's judged
        documents, retrieved or not.
      k: Only the first ``k`` positions are read (trec_eval's ``-M``). None,
        or a ``k`` past ``n``, reads the whole list.
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
      ``(...)`` RBP of each list, in [0, 1). 0 for a list with no positive
      label or no real items. NaN for a list with a NaN score, or with a
      label above its ``max_label`` under ``jit`` (refused on concrete inputs).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``p`` is
        not a real number in (0, 1); ``max_label`` is a negative or non-finite
        float.
      ValueError: ``max_label`` is an array of the wrong shape or, on concrete
        inputs, holds a negative or non-finite value; ``scores`` and
        ``labels`` differ in shape or are scalars; ``where`` is not a boolean
        array of the same shape; on concrete inputs, a real item holds NaN or
        infinity, a negative label, or a label above its ``max_label``.

    Example:
      Relevant items at positions 1 and 3 with ``p=0.5``:
      :math:`0.5 (1 + 0.25)`. With grades 0–2 the gains are halved:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> print(metrics.rank_biased_precision(scores, jnp.array([1, 0, 1]), p=0.5))
      0.625
      >>> print(metrics.rank_biased_precision(scores, jnp.array([2, 0, 1]), p=0.5))
      0.5625

    Remarks:
      RBP needs no relevant count: unlike average precision it does not grow
      when the judgements miss relevant documents. Its residual,
      :func:`rank_biased_precision_residual`, bounds how much unjudged items
      could add.

    References:
      Moffat & Zobel, "Rank-biased precision for measurement of retrieval
      effectiveness", ACM TOIS 27(1), 2008. https://doi.org/10.1145/1416950.1416952

      trec_eval's ``m_rbp.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    caller = "rank_biased_precision"
    p = _check_p(p, caller)
    options = {"p": p, "max_label": None}
    per_list = None
    if isinstance(max_label, numbers.Real):
        options["max_label"] = _validation.check_float_in_range(
            max_label, name="max_label", caller=caller, low=0.0, high=float("inf"), closed="left"
        )
    elif max_label is not None:
        per_list = _validation.check_per_list_values(
            max_label, scores, segments, max_segments, name="max_label", caller=caller
        )
    value = _kernel.evaluate_formula(
        RANK_BIASED_PRECISION,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options=options,
        list_context={"max_label": per_list},
    )
    # Concrete NaN scores and labels were refused above, so a NaN left in a
    # concrete result is a label above its max_label.
    if _validation.is_concrete(value) and bool(np.isnan(np.asarray(value)).any()):
        raise ValueError(f"Input labels contains a value greater than max_label in {caller}.")
    return value


@_kernel.computes(RANK_BIASED_PRECISION_RESIDUAL)
def rank_biased_precision_residual(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    p: float = 0.9,
    k: int | None = None,
    ignore_ties: bool = False,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""RBP's residual: how much unjudged items could add to it (trec_eval's ``rbp_resid``).

    If each of the :math:`U` unjudged items among the first
    :math:`K = \min(n, k)` had the top gain, and everything past them too,
    :func:`rank_biased_precision` would rise by

    .. math::

        \mathrm{resid} = \begin{cases}
            p^K + (1 - p) \sum_{j < K,\ \pi(j)\ \mathrm{unjudged}} p^j & U > 0, \\
            0 & U = 0,
        \end{cases}

    as trec_eval's ``m_rbp_resid.c`` computes it: a list with every retrieved
    item judged scores 0, although the weight :math:`p^K` past its end is
    still unknown. With ties the sum is positional and exact as for RBP; the
    indicator :math:`U > 0` is random only when ``k`` cuts the first tie block
    holding an unjudged item, where its probability is hypergeometric,
    :math:`1 - \binom{m - u}{c} / \binom{m}{c}` for :math:`u` unjudged items
    among the block's :math:`m` and :math:`c` of its positions before ``k``.
    The mean is exact.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; only their
        shape is used.
      p: The persistence, in (0, 1); trec_eval's default is 0.9.
      k: Only the first ``k`` positions are read (trec_eval's ``-M``). None,
        or a ``k`` past ``n``, reads the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` the residual of each list, in [0, 1]. 0 without ``judged``
      (every real item judged) and for a list with no real items; NaN for a
      list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``p`` is
        not a real number in (0, 1).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape; on
        concrete inputs, a real item holds NaN or infinity, or a negative label.

    Example:
      The second of three items is unjudged, with ``p=0.5``:
      :math:`0.5^3 + 0.5 \cdot 0.5`:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 0])
      >>> judged = jnp.array([True, False, True])
      >>> print(metrics.rank_biased_precision_residual(scores, labels, p=0.5, judged=judged))
      0.375

    Remarks:
      RBP and its residual bracket the value complete judgements would give:
      ``[rbp, rbp + resid]``, when the trailing weight is counted.

    References:
      Moffat & Zobel, "Rank-biased precision for measurement of retrieval
      effectiveness", ACM TOIS 27(1), 2008. https://doi.org/10.1145/1416950.1416952

      trec_eval's ``m_rbp_resid.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    caller = "rank_biased_precision_residual"
    p = _check_p(p, caller)
    return _kernel.evaluate_formula(
        RANK_BIASED_PRECISION_RESIDUAL,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"p": p},
        judged=judged,
    )
