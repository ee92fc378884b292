"""NDCG averaged over points of the ranking: trec_eval's ``ndcg_rel`` and ``Rndcg``.

Both read the ideal's sorted positive gains ``s_0 >= s_1 >= ... > 0`` (``P`` of
them) and its running DCG ``I(b) = sum_{p < b} s_p d(p)``, ``d(p) = 1/log2(p + 2)``.
The derivations are in decision 0017.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _ranking, _validation
from lodestar.metrics import _dcg, _kernel


def _ideal_running_dcg(lists: _kernel.RankedLists, gain):
    """``(sorted positive gains s, I, P)``: ``I[..., b]`` the ideal DCG of the first ``b``."""
    ordered = _dcg.sorted_ideal_gains(lists, gain)
    discounts = _gains.discount_at(jnp.arange(1, ordered.shape[-1] + 1, dtype=lists.dtype), 2.0)
    terms = ordered * discounts
    running = jnp.concatenate([jnp.zeros_like(terms[..., :1]), jnp.cumsum(terms, axis=-1)], -1)
    count = jnp.sum(ordered > 0, axis=-1)
    return ordered, running, count


def _at(table, index):
    """``table[..., index[..., i]]`` for a per-list table, indices clipped to it."""
    index = jnp.clip(index, 0, table.shape[-1] - 1)
    return jnp.take_along_axis(table, index, axis=-1)


def _block_means(tables, ranking, n, *, pairs=None):
    """Each item's mean of per-position tables over its block's positions.

    ``tables`` is ``(t, ..., n)``: ``t`` tables at once, summed term by term
    over offsets in one loop (no difference of prefix sums), one pass per
    offset of the longest block. With ``pairs = (earlier, later)`` it also
    returns ``sum_{u < v} earlier[a + u] * later[a + v]`` over the block,
    carrying the running sum of ``earlier``. With ``ignore_ties`` every block
    is one item: the means are the tables at the item's position.
    """
    blocks = ranking.blocks
    start = jnp.minimum(blocks.above, n)
    size = blocks.tied.astype(tables.dtype)
    # Zeros that vary (inside a shard_map) as both the tables and the blocks
    # do, so the loop's carry keeps one type.
    zeros = jnp.zeros_like(tables[0]) + jnp.zeros_like(size)
    if ranking.ignore_ties:
        means = jnp.stack([_at(table, start) for table in tables])
        return means if pairs is None else (means, zeros)
    steps = jnp.max(jnp.where(start < n, blocks.tied, 0), initial=0)

    def add_offset(v, carry):
        sums, before, paired = carry
        at = start + v
        live = v < blocks.tied
        sums = sums + jnp.where(live, jnp.stack([_at(t, at) for t in tables]), 0)
        if pairs is not None:
            earlier, later = pairs
            paired = paired + jnp.where(live, _at(later, at) * before, 0)
            before = before + jnp.where(live, _at(earlier, at), 0)
        return sums, before, paired

    initial = (jnp.zeros_like(tables) + zeros, zeros, zeros)
    sums, _, paired = lax.fori_loop(jnp.zeros((), steps.dtype), steps, add_offset, initial)
    means = sums / size
    return means if pairs is None else (means, paired)


def _real_gains(lists, gain):
    return _dcg.judged_gains(lists, gain)


def _cut(lists, k):
    """``N``: the number of positions scored, ``min(k, real items)``."""
    return jnp.minimum(k, jnp.sum(lists.valid, axis=-1))


# --- Rndcg ---------------------------------------------------------------------------


def _ndcg_at_gain_levels(lists: _kernel.RankedLists, k, *, gain):
    dtype, n = lists.dtype, lists.n
    if n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    ordered, running, count = _ideal_running_dcg(lists, gain)
    m = ordered.shape[-1]
    cut = _cut(lists, k)
    # Boundaries b in [1, P]: where the ideal gain changes, and P itself.
    b = jnp.arange(1, m + 1)
    previous = ordered
    following = jnp.concatenate([ordered[..., 1:], jnp.zeros_like(ordered[..., :1])], -1)
    boundary = (b <= count[..., None]) & (following != previous)
    weight = jnp.where(boundary, 1 / jnp.where(boundary, running[..., 1:], 1), 0)
    # later[..., q]: the boundaries' weights summed over b > q (q = 0 .. m).
    later = jnp.concatenate(
        [jnp.flip(jnp.cumsum(jnp.flip(weight, -1), -1), -1), jnp.zeros_like(weight[..., :1])], -1
    )
    implied = (cut >= count + 2) & (count > 0)
    full = _at(running, count[..., None])[..., 0]
    points = jnp.sum(boundary, axis=-1) + implied
    position = jnp.arange(n)
    per_position = _at(later, jnp.broadcast_to(position, later.shape[:-1] + (n,)))
    per_position = per_position + jnp.where(implied, 1 / jnp.where(implied, full, 1), 0)[..., None]
    discount = _gains.discount_at(position.astype(dtype) + 1, 2.0)
    table = jnp.where(position < cut[..., None], discount * per_position, 0)
    gains = _real_gains(lists, gain)
    value = jnp.sum(gains * _block_means(table[None], lists.ranking, n)[0], axis=-1)
    relevant = _num_rel(lists)
    keep = (points > 0) & (relevant > 0)
    return jnp.where(keep, value / jnp.where(keep, points, 1).astype(dtype), 0)


def _num_rel(lists: _kernel.RankedLists):
    """trec_eval's ``num_rel``: ``num_relevant``, else relevant ideal labels, else the list's."""
    context = lists.context
    if "num_relevant" in context:
        return context["num_relevant"]
    if "ideal_labels" in context:
        labels = context["ideal_labels"]
        valid = context.get("ideal_where", jnp.ones(labels.shape, bool))
        return jnp.sum(valid & (labels != 0), axis=-1)
    return jnp.sum(lists.relevant(), axis=-1)


# --- ndcg_rel ------------------------------------------------------------------------


def _ndcg_at_relevant(lists: _kernel.RankedLists, k, *, gain):
    dtype, n = lists.dtype, lists.n
    if n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    _, running, count = _ideal_running_dcg(lists, gain)
    cut = _cut(lists, k)
    blocks = lists.ranking.blocks
    position = jnp.arange(n)
    visible = position < cut[..., None]
    # Added to zeros shaped (and sharded) as the lists, not broadcast to them:
    # under explicit mesh axes the stack below needs one sharding.
    discount = _gains.discount_at(position.astype(dtype) + 1, 2.0) + jnp.zeros_like(
        visible, dtype=dtype
    )
    # 1 / ideal DCG through position p (inclusive), constant from P on.
    ideal_here = _at(running, jnp.minimum(position + 1, count[..., None]))
    weight = jnp.where(visible & (ideal_here > 0), 1 / jnp.where(ideal_here > 0, ideal_here, 1), 0)

    gains = _real_gains(lists, gain)
    positive = gains > 0
    size = blocks.tied.astype(dtype)
    pairs = jnp.maximum(size * (size - 1), 1)
    _, block_gain = _ranking.block_totals(gains, blocks)
    others = block_gain - gains

    tables = jnp.stack(
        [
            discount,
            jnp.where(visible, discount, 0),
            weight,
            weight * discount,
            visible.astype(dtype),
        ]
    )
    means, within = _block_means(tables, lists.ranking, n, pairs=(discount, weight))
    mean_discount, shown_discount, mean_weight, own, shown = means
    dcg_above, _ = _ranking.block_totals(gains * mean_discount, blocks)

    # E[sum over positive x of DCG(p_x) / IDCG(p_x)], p_x < N.
    at_relevant = gains * own + dcg_above * mean_weight + others * within / pairs
    # E[Q * DCG@N], Q the positive items within N.
    dcg_cut = jnp.sum(gains * shown_discount, axis=-1)
    block_dcg = block_gain * shown_discount
    slots = shown * size
    with_count = (
        gains * shown_discount
        + shown * (dcg_cut[..., None] - block_dcg)
        + others * jnp.maximum(slots - 1, 0) * shown_discount * size / pairs
    )
    full = _at(running, count[..., None])[..., 0]
    found = jnp.sum(jnp.where(positive, at_relevant, 0), axis=-1)
    missed = count.astype(dtype) * dcg_cut - jnp.sum(jnp.where(positive, with_count, 0), axis=-1)
    total = found + _kernel.ratio_or_zero(missed, full)
    # trec_eval reports a sum that is not positive as 0 (m_ndcg_rel.c).
    return _kernel.ratio_or_zero(jnp.maximum(total, 0), count.astype(dtype))


NDCG_AT_RELEVANT = _kernel.Formula(
    "ndcg_at_relevant",
    _ndcg_at_relevant,
    static=("gain",),
    labels="graded",
    nonnegative_labels=True,
)
NDCG_AT_GAIN_LEVELS = _kernel.Formula(
    "ndcg_at_gain_levels",
    _ndcg_at_gain_levels,
    static=("gain",),
    labels="graded",
    nonnegative_labels=True,
)


def _evaluate(
    formula,
    caller,
    scores,
    labels,
    *,
    k,
    gain,
    ignore_ties,
    ideal_labels,
    ideal_where,
    judged,
    where,
    segments,
    max_segments,
    max_segment_size,
    num_relevant=None,
):
    gain = _validation.check_gain(gain, caller=caller)
    ideal_labels, ideal_where = _gains.check_ideal(
        ideal_labels, ideal_where, scores, segments, caller=caller
    )
    return _kernel.evaluate_formula(
        formula,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
        num_relevant=num_relevant,
        options={"gain": gain},
        list_context={"ideal_labels": ideal_labels, "ideal_where": ideal_where},
    )


@_kernel.computes(NDCG_AT_RELEVANT)
def ndcg_at_relevant(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    ideal_labels: Num[Array, "*batch m"] | None = None,
    ideal_where: Bool[Array, "*batch m"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""NDCG averaged at the rank of every positive-gain item: trec_eval's ``ndcg_rel``.

    Let the ideal rank the :math:`P` items of positive gain (of
    ``ideal_labels`` if given, else of the list) by gain, with running ideal
    DCG :math:`I(p)` through 0-based position :math:`p` (constant from
    :math:`P` on). In one order of the first :math:`N = \min(k, n)` items,
    let :math:`\mathrm{DCG}(p)` be the running DCG and :math:`Q` the number of
    positive-gain items ranked. Then

    .. math::

        S = \sum_{p < N,\ g_{\pi(p)} > 0} \frac{\mathrm{DCG}(p)}{I(p)}
            + (P - Q)\,\frac{\mathrm{DCG}(N - 1)}{I(P - 1)},
        \qquad \mathrm{ndcg\_rel} = \frac{\max(S, 0)}{P}:

    NDCG at each positive item retrieved, and the final NDCG for each one
    missed.

    With ties, the expectation over the tie orders is exact whenever
    :math:`S` cannot be negative, that is for non-negative gains, and with
    ``ignore_ties`` (decision 0017). :doc:`/ties` derives it.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative.
      k: Score only the first ``k`` positions (trec_eval's ``-M``); the ideal
        is not cut. None scores the whole list.
      gain: ``"linear"`` (the label, trec_eval's default), ``"exp2"``, a
        :class:`GainTable` (trec_eval's ``ndcg_rel.1=3,2=9``) or a callable.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      ideal_labels: ``(..., m)`` labels of every judged item of each list,
        retrieved or not, for the ideal ranking; None uses the list's own
        judged items. Not with ``segments``.
      ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks
        padding.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item gains 0 whatever its
        label, which matters when level 0 has a gain.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` values in [0, 1] for non-negative gains when the ideal holds
      every retrieved item's label; 0 for a list without a positive gain in
      its ideal or without real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``ideal_labels`` does not share the batch shape or comes with
        ``segments``; ``ideal_where`` comes without ``ideal_labels`` or differs
        from it in shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label.

    Example:
      Relevant items at ranks 1 and 3 of three: NDCG at the first is 1, at
      the second (1 + 1/2) / (1 + 1/log2 3), and the mean of the two is

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = jnp.array([3.0, 2.0, 1.0]), jnp.array([1, 0, 1])
      >>> print(f"{metrics.ndcg_at_relevant(scores, labels):.6f}")
      0.959860

    Remarks:
      With negative gains, :math:`S` may be negative in some tie orders and
      positive in others; lodestar then returns :math:`\max(\mathbb{E}[S], 0)/P`,
      which differs from the tie average of trec_eval's value by at most
      :math:`\min(\mathbb{E}[S^+], \mathbb{E}[S^-])/P` (decision 0017). An
      experimental measure of trec_eval; :func:`ndcg` is the standard one.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38

      trec_eval's m_ndcg_rel.c and gain_init.c.
    """
    return _evaluate(
        NDCG_AT_RELEVANT,
        "ndcg_at_relevant",
        scores,
        labels,
        k=k,
        gain=gain,
        ignore_ties=ignore_ties,
        ideal_labels=ideal_labels,
        ideal_where=ideal_where,
        judged=judged,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_kernel.computes(NDCG_AT_GAIN_LEVELS)
def ndcg_at_gain_levels(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    ideal_labels: Num[Array, "*batch m"] | None = None,
    ideal_where: Bool[Array, "*batch m"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""NDCG averaged where the ideal's gain changes: trec_eval's ``Rndcg``.

    The ideal ranks the :math:`P` items of positive gain by gain. At each
    depth :math:`b \le P` where its gain changes (after the last item of a
    gain level, :math:`b = P` included) NDCG is taken at depth :math:`b`,
    :math:`\mathrm{DCG}@\min(b, N) / I(b)`, with :math:`N = \min(k, n)` and
    :math:`I(b)` the ideal DCG of the first :math:`b`; when :math:`N \ge P + 2`
    one more point, :math:`\mathrm{DCG}@N / I(P)`, is added (m_Rndcg.c's final
    "R-level change at num_retrieved"). The value is the mean over these
    points. If trec_eval's levels hold 5 items of gain 3, 3 of gain 2 and 10
    of gain 1, the points are depths 5, 8 and 18.

    Every point is a DCG, linear in the ranking, so the value is
    :math:`\sum_p g_{\pi(p)} d(p)\,\omega(p)` for a per-list positional weight
    :math:`\omega`, and the tie average is exact by McSherry & Najork's block
    means: each item gets the mean of :math:`d\,\omega` over its block.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative.
      k: Score only the first ``k`` positions (trec_eval's ``-M``); the ideal
        is not cut. None scores the whole list.
      gain: ``"linear"`` (the label, trec_eval's default), ``"exp2"``, a
        :class:`GainTable` (trec_eval's ``Rndcg.1=3,2=9``) or a callable.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` trec_eval's ``num_rel``, the relevant judged
        items of each list; a list with none scores 0. None counts the
        non-zero ``ideal_labels`` (or the list's relevant items).
      ideal_labels: ``(..., m)`` labels of every judged item of each list,
        retrieved or not, for the ideal ranking; None uses the list's own
        judged items. Not with ``segments``.
      ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks
        padding.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item gains 0 whatever its
        label, which matters when level 0 has a gain.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` values, in [0, 1] for non-negative gains when the ideal holds
      every retrieved item's label; 0 for a list with no relevant item, no
      positive gain in its ideal or no real item (trec_eval prints NaN when
      relevant items all gain 0 or less); NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``num_relevant`` has the wrong shape; ``ideal_labels`` does not share
        the batch shape or comes with ``segments``; ``ideal_where`` comes
        without ``ideal_labels`` or differs from it in shape; on concrete
        inputs, a real item holds NaN or infinity, or a negative label, or
        ``num_relevant`` is below the list's own relevant items or not a whole
        number.

    Example:
      Gains 2 and 1 ranked in reverse: the ideal's gain changes at depths 1
      and 2, where NDCG is 1/2 and (1 + 2/log2 3) / (2 + 1/log2 3); their mean:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = jnp.array([2.0, 1.0]), jnp.array([1, 2])
      >>> print(f"{metrics.ndcg_at_gain_levels(scores, labels):.6f}")
      0.679859

    Remarks:
      An experimental measure of trec_eval, built so that the average does
      not depend on where each query's gain levels end; :func:`ndcg` is the
      standard one.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38

      trec_eval's m_Rndcg.c and gain_init.c.
    """
    return _evaluate(
        NDCG_AT_GAIN_LEVELS,
        "ndcg_at_gain_levels",
        scores,
        labels,
        k=k,
        gain=gain,
        ignore_ties=ignore_ties,
        ideal_labels=ideal_labels,
        ideal_where=ideal_where,
        judged=judged,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )
