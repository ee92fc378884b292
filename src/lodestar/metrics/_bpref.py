"""bpref: how many judged non-relevant items each judged relevant item outranks, exact over ties."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _validation
from lodestar.metrics import _kernel, _preceding


def _bpref(lists: _kernel.RankedLists, k):
    dtype = lists.dtype
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    relevant = lists.relevant()
    # Judged and below the relevance level (trec_eval's judged non-relevant).
    nonrelevant = lists.judged() & ~relevant
    total_relevant = lists.relevant_total(relevant)
    if "num_judged_nonrelevant" in lists.context:
        total_nonrelevant = lists.context["num_judged_nonrelevant"].astype(dtype)
    else:
        total_nonrelevant = jnp.sum(nonrelevant, axis=-1).astype(dtype)
    if lists.in_trec_eval_order:
        return _trec_eval_bpref(lists, relevant, nonrelevant, total_relevant, total_nonrelevant, k)
    blocks = lists.ranking.blocks
    nonrelevant_above, nonrelevant_within = _preceding.block_counts(nonrelevant, blocks)
    _, relevant_within = _preceding.block_counts(relevant, blocks)
    lay = _preceding.layout(lists, k)
    # A relevant item's judged non-relevant block-mates are the block's.
    mates = lay.ranked(nonrelevant_within)
    holds_relevant = lay.ranked(relevant_within)
    weight = _preceding.predecessor_weights(lay, mates, where=holds_relevant > 0)
    # At offset v: v judged non-relevant mates precede the item.
    above = lay.ranked(nonrelevant_above).astype(dtype) + lay.offset.astype(dtype)
    cap = jnp.minimum(total_relevant, total_nonrelevant)[..., None]
    term = 1 - _kernel.ratio_or_zero(jnp.minimum(above, total_relevant[..., None]), cap)
    found = jnp.sum(jnp.where(weight > 0, weight * term, 0) * holds_relevant, axis=-1)
    # Each term lies in [0, 1]; their weighted sum can land an ulp outside
    # (-5.6e-17 for a query whose every term is 0), which trec_eval's layout
    # would print as -0.0000. The clip keeps a NaN a NaN.
    return jnp.clip(_kernel.ratio_or_zero(found, total_relevant), 0, 1)


def _trec_eval_bpref(
    lists: _kernel.RankedLists, relevant, nonrelevant, total_relevant, total_nonrelevant, k
):
    """Binary preference in m_bpref.c's order: each relevant item's term in rank order, over R.

    The term is 1 before any judged non-relevant item, else
    ``1 - min(n, R) / min(N, R)``, as trec_eval writes it.
    """
    ranked_relevant = _kernel.ranked_in_cut(lists, relevant.astype(lists.dtype), k)
    ranked_nonrelevant = _kernel.ranked_in_cut(lists, nonrelevant.astype(lists.dtype), k)
    above = jnp.cumsum(ranked_nonrelevant, axis=-1)
    cap = jnp.minimum(total_relevant, total_nonrelevant)
    share = _kernel.ratio_or_zero(jnp.minimum(above, total_relevant[..., None]), cap[..., None])
    term = jnp.where(above > 0, 1 - share, 1)
    found = _kernel.sum_in_order(jnp.where(ranked_relevant > 0, term, 0))
    return _kernel.ratio_or_zero(found, total_relevant)


BPREF = _kernel.Formula("bpref", _bpref, uses_order=True, labels="binary", nonnegative_labels=True)


@_kernel.computes(BPREF)
def bpref(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    num_judged_nonrelevant: Num[Array, "*batch"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Binary preference (bpref, Buckley & Voorhees 2004), expected over tied scores.

    Only judged items take part: an unjudged item is skipped, neither relevant
    nor non-relevant. Any non-zero label of a judged item is relevant; a
    judged item labelled 0 is non-relevant. With :math:`R` relevant and
    :math:`N` judged non-relevant items (``num_relevant`` and
    ``num_judged_nonrelevant``, retrieved or not), each relevant item ranked
    within ``k`` scores the share of the top :math:`R` non-relevant items it
    outranks:

    .. math::

        \mathrm{bpref} = \frac{1}{R} \sum_{i\,\mathrm{relevant},\ p_i \le k}
            \Bigl(1 - \frac{\min(n_i, R)}{\min(N, R)}\Bigr),

    where :math:`n_i` counts the judged non-relevant items ranked above
    :math:`i` (the term is 1 when :math:`n_i = 0`). This is trec_eval's
    ``bpref``; ``k`` is its ``-M``.

    With ties, the expectation over the tie orders is exact, O(m²) per block
    of :math:`m` tied items (decision 0016): one pass without ties.
    :doc:`/ties` derives it.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value of a judged item is relevant, 0 is non-relevant.
      k: Only the first ``k`` positions are read (trec_eval's ``-M``); the
        normalisers stay :math:`R` and :math:`N`. None, or a ``k`` past
        ``n``, reads the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      num_judged_nonrelevant: ``(...)`` the number of judged non-relevant
        items of each list, retrieved or not (trec_eval's judged documents
        below the relevance level), or None to count the judged real items
        of the list labelled 0. It must be at least that count.
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
      ``(...)`` bpref of each list, in [0, 1]. 0 for a list with no relevant
      item; a relevant item above every judged non-relevant one scores 1, so
      a list with no judged non-relevant item scores the share of its
      relevant items retrieved within ``k``. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``num_relevant`` or ``num_judged_nonrelevant`` does not hold one
        count per list; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or a count is fractional, negative or
        below the list's own.

    Example:
      Relevant items at ranks 2 and 4 below judged non-relevant ones at
      ranks 1 and 3 (R = N = 2): the first outranks one of the two, the
      second none. With the top two tied, the first relevant item precedes
      the non-relevant one half of the time, scoring 1 or 1/2 (3/4 on average):

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([0, 1, 0, 1])
      >>> print(f"{metrics.bpref(-jnp.arange(4.0), labels):.4f}")
      0.2500
      >>> print(f"{metrics.bpref(jnp.array([1.0, 1.0, 0.5, 0.0]), labels):.4f}")
      0.3750

    Remarks:
      bpref is robust to incomplete judgements because it never reads an
      unjudged item: pass ``judged`` (and the qrels counts) rather than
      labelling unjudged items 0, which would count them as non-relevant.
      trec_eval's ``gm_bpref`` is the geometric mean of this value over
      queries (each floored at 1e-5); the registry entry ``gm_bpref``
      declares it.

    References:
      Buckley & Voorhees, "Retrieval evaluation with incomplete
      information", SIGIR 2004. https://doi.org/10.1145/1008992.1009000

      trec_eval's m_bpref.c and m_gm_bpref.c.

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    caller = "bpref"
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    return _kernel.evaluate_formula(
        BPREF,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        item_context={"judged": judged},
        list_context={
            "num_relevant": _validation.check_num_relevant(
                num_relevant, scores, segments, max_segments, caller=caller
            ),
            "num_judged_nonrelevant": _validation.check_list_count(
                num_judged_nonrelevant,
                scores,
                segments,
                max_segments,
                name="num_judged_nonrelevant",
                caller=caller,
            ),
        },
    )
