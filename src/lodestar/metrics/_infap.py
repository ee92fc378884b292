"""Inferred average precision (Yilmaz & Aslam, 2006): AP from a judged sample of the pool."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _validation
from lodestar.metrics import _kernel, _preceding

# trec_eval's INFAP_EPSILON (trec_eval.h): keeps the sampled precision defined
# where nothing judged lies above.
EPSILON = 0.00001


def _inferred_average_precision(lists: _kernel.RankedLists, k):
    dtype = lists.dtype
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    judged = lists.judged()
    pooled = judged
    if "pooled" in lists.context:
        pooled = judged | (lists.valid & lists.context["pooled"])
    relevant = lists.relevant()
    nonrelevant = judged & ~relevant
    unjudged = pooled & ~judged
    outside = lists.valid & ~pooled
    total_relevant = lists.relevant_total(relevant)
    blocks = lists.ranking.blocks
    lay = _preceding.layout(lists, k)

    def counts(indicator):
        above, within = _preceding.block_counts(indicator, blocks)
        return lay.ranked(above).astype(dtype), lay.ranked(within).astype(dtype)

    relevant_above, relevant_within = counts(relevant)
    nonrelevant_above, nonrelevant_within = counts(nonrelevant)
    unjudged_above, unjudged_within = counts(unjudged)
    _, outside_within = counts(outside)
    holds_relevant = relevant_within > 0
    start = lay.start.astype(dtype)
    size = lay.size.astype(dtype)
    offset = lay.offset.astype(dtype)
    # A relevant item's judged mates, and the share of its unjudged ones in the pool.
    judged_mates = jnp.where(holds_relevant, relevant_within - 1 + nonrelevant_within, 0)
    in_pool = _kernel.ratio_or_zero(unjudged_within, unjudged_within + outside_within)
    counted_above = relevant_above + nonrelevant_above + unjudged_above

    # Over the item's offset u: the 1 / (j + 1) part, kept at offset 0, and
    # H(s) at offset s: sum_u P(u, s judged predecessors) (pool above) / (j + 1).
    def over_offsets(u, carry):
        p, reciprocal, pool_share = carry
        counted = u < lay.cut
        rank = start + u + 1
        reciprocal = reciprocal + jnp.where(counted & (lay.offset == 0), 1 / rank, 0)
        pool = counted_above + offset + (u - offset) * in_pool
        pool_share = pool_share + jnp.where(counted, p * pool / rank, 0)
        return (
            _preceding.hypergeometric_next(p, u, lay.size - 1, judged_mates, lay),
            (reciprocal),
            pool_share,
        )

    first = (lay.offset == 0).astype(dtype) + lay.zero
    _, reciprocal, pool_share = lax.fori_loop(
        0, lay.steps(holds_relevant), over_offsets, (first, lay.zero, lay.zero)
    )

    # Over the judged predecessors s: x of them relevant (hypergeometric, s
    # draws from the judged mates), the sampled precision at offset x, times H(s).
    judged_steps = jnp.max(
        jnp.where(holds_relevant & (lay.cut > 0), jnp.minimum(judged_mates, lay.cut - 1) + 1, 0),
        initial=0,
    ).astype(jnp.int32)

    def over_judged(s, carry):
        p, total = carry
        share = lay.at_offset(pool_share, s)
        precision = (relevant_above + offset + EPSILON) / (
            relevant_above + nonrelevant_above + s + 2 * EPSILON
        )
        total = total + jnp.where(s <= judged_mates, p * precision * share, 0)
        return _preceding.hypergeometric_next(p, s, judged_mates, relevant_within - 1, lay), total

    _, sampled = lax.fori_loop(0, judged_steps, over_judged, (first, lay.zero))
    per_item = (reciprocal + sampled) / size
    found = jnp.sum(jnp.where(holds_relevant, per_item * relevant_within, 0), axis=-1)
    return _kernel.ratio_or_zero(found, total_relevant)


# No tie key: it estimates the precision above a relevant item from the
# judged sample above it, and neither relevance order is always an extreme
# (with -l 2 on trec_eval's test files one order of the ties gives 0.3333,
# below the relevant-last order's 0.375).
INFERRED_AVERAGE_PRECISION = _kernel.Formula(
    "inferred_average_precision",
    _inferred_average_precision,
    uses_order=True,
    labels="binary",
    nonnegative_labels=True,
    tie_key=None,
)


@_kernel.computes(INFERRED_AVERAGE_PRECISION)
def inferred_average_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    pooled: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Inferred average precision (infAP), expected over tied scores.

    Average precision when only a random sample of the judgement pool was
    judged (Yilmaz & Aslam, 2006), as trec_eval's ``infAP`` computes it. Items
    are of four kinds: judged relevant (a non-zero label), judged non-relevant
    (label 0), in the pool but not judged (``pooled`` and not ``judged``), and
    outside the pool. A relevant item at 0-based position :math:`j` ranked
    within ``k``, with :math:`R_j`, :math:`N_j` and :math:`U_j` items of the
    first three kinds above it, scores

    .. math::

        t_j = \frac{1}{j+1} + \frac{R_j + N_j + U_j}{j+1}\,
              \frac{R_j + \epsilon}{R_j + N_j + 2\epsilon}

    (1 at :math:`j = 0`), with trec_eval's :math:`\epsilon = 10^{-5}`: the
    items above outside the pool count as non-relevant, those in it as
    relevant in the proportion of the judged ones. infAP is
    :math:`\frac{1}{R}\sum t_j` over the relevant items, :math:`R` the
    relevant items of the list or ``num_relevant``. With every item judged
    it is average precision.

    With ties, the expectation over the tie orders is exact, O(m²) per block
    of :math:`m` tied items (decision 0016): one pass without ties.
    :doc:`/ties` derives it.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value of a judged item is relevant.
      k: Only the first ``k`` positions are read (trec_eval's ``-M``); the
        denominator stays :math:`R`. None, or a ``k`` past ``n``, reads the
        whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      pooled: ``(..., n)`` boolean mask of the items in the judgement pool,
        judged or not (trec_eval: in the qrels at all), or None for the
        judged items. A judged item always counts as pooled.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` infAP of each list, in [0, 1]. 0 for a list with no relevant
      item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where``, ``judged`` or ``pooled`` is not a boolean array of the
        same shape; ``num_relevant`` does not hold one count per list; on
        concrete inputs, a real item holds NaN or infinity or a negative
        label, or ``num_relevant`` is fractional, negative or below the
        list's own count.

    Example:
      A relevant item first, then one in the pool but not judged, then a
      relevant one: the unjudged item counts as relevant in the proportion
      of the judged items above it (all relevant), so infAP is nearly 1,
      where average precision with the item read as non-relevant is 5/6:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = -jnp.arange(3.0), jnp.array([1, 0, 1])
      >>> judged = jnp.array([True, False, True])
      >>> pooled = jnp.ones(3, bool)
      >>> value = metrics.inferred_average_precision(scores, labels, judged=judged, pooled=pooled)
      >>> print(f"{value:.4f}")
      1.0000
      >>> print(f"{metrics.average_precision(scores, labels):.4f}")
      0.8333

    Remarks:
      Items outside the pool are not skipped: they occupy their positions
      and count as non-relevant, which is what distinguishes ``pooled``
      from ``judged``. Give both from the qrels: trec_eval reads a document
      in the qrels with a negative judgement as pooled but unjudged.

    References:
      Yilmaz & Aslam, "Estimating average precision with incomplete and
      imperfect judgments", CIKM 2006. https://doi.org/10.1145/1183614.1183633

      trec_eval's m_infap.c.

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    caller = "inferred_average_precision"
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    pooled = _validation.check_item_mask(pooled, scores, name="pooled", caller=caller)
    return _kernel.evaluate_formula(
        INFERRED_AVERAGE_PRECISION,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        item_context={"judged": judged, "pooled": pooled},
        num_relevant=num_relevant,
    )
