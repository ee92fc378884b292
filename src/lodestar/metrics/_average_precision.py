"""Average precision: precision at each relevant item's rank, expected over tie orders."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _rank_sums, _ranking
from lodestar.metrics import _kernel


def _average_precision(lists: _kernel.RankedLists, k):
    dtype = lists.dtype
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    relevant = lists.relevant()
    if lists.in_trec_eval_order:
        return _trec_eval_average_precision(lists, relevant, k)
    blocks = lists.ranking.blocks
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
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


def _trec_eval_average_precision(lists: _kernel.RankedLists, relevant, k):
    """AP in m_map.c's order: each relevant item's precision added in rank order, over R.

    The sum at ``k`` is the running total after ``k`` ranks: nothing before
    that point depends on ``k``, so XLA computes it once for map and all of
    map_cut's cut-offs (outside their loop) instead of once per cut-off.
    """
    ranked = _kernel.ranked_in_cut(lists, relevant.astype(lists.dtype), lists.n)
    positions = jnp.arange(1, lists.n + 1, dtype=lists.dtype)
    precisions = _kernel.ratio_or_zero(jnp.cumsum(ranked, axis=-1), positions)
    running = _kernel.running_sums_in_order(jnp.where(ranked > 0, precisions, 0))
    found = _kernel.running_sum_at(running, k)
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


AVERAGE_PRECISION = _kernel.Formula(
    "average_precision",
    _average_precision,
    labels="binary",
    nonnegative_labels=True,
    mapped_options=("k",),
)


def _precision_at_own_rank(items: _rank_sums.Items, view: _rank_sums.RankView):
    # For a relevant item, its rank among the relevant items is 1 + the
    # relevant items above it: precision at its rank is that over its rank.
    relevant = items.relevant()
    return jnp.where(relevant, view.among(relevant) / view.rank, 0)


def _relevant_total(items: _rank_sums.Items):
    return items.relevant_total()


# AP as a rank sum: u_i = [relevant i] (1 + relevant items above i) / r_i, over R.
AVERAGE_PRECISION_SUM = _rank_sums.RankSum(
    "average_precision", _precision_at_own_rank, _relevant_total
)


@_kernel.computes(AVERAGE_PRECISION)
def average_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
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
    whole list** (also those past ``k``), as trec_eval's ``map_cut_k`` does,
    or ``num_relevant`` if given: pass the number of relevant documents in the
    qrels, retrieved or not, to get trec_eval's ``map``.

    With ties, the expectation over the tie orders is exact, and a list costs
    O(n · m) for its largest tie block of :math:`m` items starting before ``k``:
    one pass without ties. :doc:`/ties` derives it.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: Only relevant items within the first ``k`` positions contribute; the
        denominator stays :math:`R`. None, or a ``k`` past ``n``, looks at the
        whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
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
    return _kernel.evaluate_formula(
        AVERAGE_PRECISION,
        scores,
        labels,
        caller="average_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )
