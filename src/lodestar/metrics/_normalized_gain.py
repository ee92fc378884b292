"""trec_eval's G and binG: gains discounted by what the ranking lost before each document."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _native, _ranking, _validation
from lodestar.metrics import _dcg, _kernel, _preceding

ATOMS = 16
"""Distinct subset sums G keeps per (tie block, subset size); beyond, nearby sums are pooled."""


def _binary_normalized_gain(lists: _kernel.RankedLists, k):
    dtype = jnp.dtype(lists.dtype)
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    relevant = lists.relevant()
    # binG is G with a gain of 1 per relevant item and an ideal whose every
    # position costs 1; G's kernel, whose blocks of equal gains need no law
    # of subset sums, on CPU.
    ones = relevant.astype(dtype)
    found, _, _ = _by_route(
        lists,
        _operands(lists, ones, jnp.zeros_like(ones), k),
        native=functools.partial(
            _native.on_cpu,
            functools.partial(_native.gain_sums, atoms=1),
            functools.partial(_xla_binary_gain_sums, order=None),
        ),
        xla=_xla_binary_gain_sums,
    )
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


def _xla_binary_gain_sums(relevant, above, tied, valid, ideal, k, *, order):
    """:func:`_xla_gain_sums` for 0/1 gains and an ideal costing 1 a position, in closed form.

    Each relevant item's term is ``1 / log2(2 + v)``, ``v`` the non-relevant
    items above it, averaged over its block's orders: over the joint law of
    its offset and of the non-relevant mates before it
    (:func:`_preceding.predecessor_weights`).
    """
    dtype = relevant.dtype
    blocks, lay = _layout(relevant, above, tied, valid, k, order)
    relevant_above, relevant_within = _preceding.block_counts(relevant > 0, blocks)
    holds_relevant = lay.ranked(relevant_within)
    # A relevant item's non-relevant block-mates (judged or not) are the
    # block's items that are not relevant.
    mates = lay.size - holds_relevant
    weight = _preceding.predecessor_weights(lay, mates, where=holds_relevant > 0)
    # At offset v: v non-relevant mates precede the item.
    preceding = lay.start - lay.ranked(relevant_above) + lay.offset
    term = 1 / _kernel.log2(2 + preceding.astype(dtype))
    found = jnp.sum(jnp.where(weight > 0, weight * term, 0) * holds_relevant, axis=-1)
    zero = jnp.zeros_like(found)
    return found, zero, zero


def _fit_to(ideal, n):
    """The ideal's gains cut, or zero-padded, to ``n`` positions."""
    m = ideal.shape[-1]
    if m >= n:
        return ideal[..., :n]
    return jnp.concatenate([ideal, jnp.zeros(ideal.shape[:-1] + (n - m,), ideal.dtype)], -1)


def _operands(lists: _kernel.RankedLists, gains, ideal, k):
    """What G's kernel and XLA's route take: per-item gains, blocks and mask, the ideal, k."""
    blocks = lists.ranking.blocks
    valid = jnp.broadcast_to(lists.valid, gains.shape)
    return gains, blocks.above, blocks.tied, valid, ideal, jnp.asarray(k, jnp.int32)


def _by_route(lists: _kernel.RankedLists, operands, *, native, xla):
    """``native(*operands)`` where the compiled kernels apply, else ``xla`` with the rank order.

    ``native`` holds XLA's route too, for the other platforms a program is
    lowered for; ``xla`` takes the engine's rank order (shared with the
    other measures of the kernel) as ``order``.
    """
    floating = (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64))
    if jnp.dtype(lists.dtype) in floating and _native.applies():
        return native(*operands)
    return xla(*operands, order=lists.ranking.rank_order())


def _layout(gains, above, tied, valid, k, order):
    """The blocks and :class:`_preceding.Layout` of XLA's routes; the order formed if None."""
    blocks = _ranking.TieBlocks(above, tied)
    if order is None:
        order = _ranking.block_order(blocks, valid)
    per_row = jnp.broadcast_to(k, gains.shape[:-1])[..., None]
    lay = _preceding.layout_of(order, blocks, valid, per_row, like=gains, dtype=gains.dtype)
    return blocks, lay


def _block_extreme(values, mask, blocks, reduce):
    """Per item, ``reduce`` (jnp.max or jnp.min) of ``values`` over its block's ``mask`` items."""
    n = values.shape[-1]
    bins = jnp.minimum(blocks.above, n)
    fill = -jnp.inf if reduce is jnp.max else jnp.inf

    def per_list(values, mask, bins):
        table = jnp.full(n + 1, fill, values.dtype)
        masked = jnp.where(mask, values, fill)
        table = table.at[bins].max(masked) if reduce is jnp.max else table.at[bins].min(masked)
        return table[bins]

    flat = jax.vmap(per_list)(values.reshape(-1, n), mask.reshape(-1, n), bins.reshape(-1, n))
    return flat.reshape(values.shape)


def _group_sum(values, group, atoms):
    """Sum ``values`` (..., 2C) into ``atoms`` bins along the last axis by ``group``."""
    shape = values.shape
    flat = values.reshape(-1, shape[-1])
    rows = flat.shape[0]
    ids = group.reshape(-1, shape[-1]) + atoms * jnp.arange(rows)[:, None]
    summed = jax.ops.segment_sum(flat.ravel(), ids.ravel(), num_segments=rows * atoms)
    return summed.reshape(shape[:-1] + (atoms,))


def _compact(probability, value, spread, atoms):
    """Merge ``2C`` weighted atoms into at most ``C``, exactly when they hold ``C`` sums or fewer.

    Equal sums (to a few ulps) merge exactly. Past ``C`` distinct sums, runs of
    neighbouring sums (in sorted order, about equally many per run) merge into
    their probability-weighted mean; ``spread`` adds up the second moment
    about the mean that a merge loses (decision 0016).
    """
    dtype = value.dtype
    empty = probability <= 0
    key = jnp.where(empty, 0, value)
    empty, key, probability, spread = lax.sort(
        (empty.astype(jnp.int8), key, probability, spread), dimension=value.ndim - 1, num_keys=2
    )
    previous = jnp.concatenate([key[..., :1], key[..., :-1]], axis=-1)
    tolerance = 256 * jnp.finfo(dtype).eps * (jnp.abs(key) + jnp.abs(previous))
    first = jnp.arange(key.shape[-1]) == 0
    distinct = (empty == 0) & (first | (jnp.abs(key - previous) > tolerance))
    group = jnp.cumsum(distinct, axis=-1, dtype=jnp.int32) - 1
    count = jnp.sum(distinct, axis=-1, keepdims=True, dtype=jnp.int32)
    group = jnp.where(count <= atoms, group, (group * atoms) // jnp.maximum(count, 1))
    group = jnp.clip(group, 0, atoms - 1)
    mass = _group_sum(probability, group, atoms)
    mean = _kernel.ratio_or_zero(_group_sum(probability * key, group, atoms), mass)
    deviation = key - jnp.take_along_axis(mean, group, axis=-1)
    lost = _group_sum(spread + probability * deviation**2, group, atoms)
    return mass, jnp.where(mass > 0, mean, 0), lost


def _subset_sums(packed, count, lay: _preceding.Layout, atoms, where):
    """The law of the sum of a uniformly random w-subset of each block's non-zero gains.

    ``packed`` holds each block's non-zero gains at its first ``count``
    offsets. Returned as ``(..., n, atoms)`` probabilities, sums and lost
    spread, for ``w = offset + 1`` at each offset (w = 0 is the sum 0).
    Adding the block's j-th gain ``g`` updates every ``w <= j`` by

        Z_j(w) = (j - w)/j Z_{j-1}(w) + w/j (Z_{j-1}(w - 1) + g),

    a mixture of laws, each kept as at most ``atoms`` weighted sums.
    """
    dtype = lay.zero.dtype
    shape = lay.zero.shape + (atoms,)
    zero_atoms = jnp.zeros(shape, dtype) + lay.zero[..., None]
    unit = jnp.zeros(shape, dtype).at[..., 0].set(1) + lay.zero[..., None]
    w = (lay.offset + 1).astype(dtype)[..., None]

    def shifted(x, first):
        moved = jnp.concatenate([jnp.zeros_like(x[..., :1, :]), x[..., :-1, :]], axis=-2)
        return jnp.where((lay.offset == 0)[..., None], first, moved)

    def add_gain(j, state):
        probability, value, spread = state
        g = lay.at_offset(packed, j - 1)[..., None]
        size = j.astype(dtype)
        keep, take = (size - w) / size, w / size
        merged = _compact(
            jnp.concatenate([probability * keep, shifted(probability, unit) * take], axis=-1),
            jnp.concatenate([value, shifted(value, 0) + g], axis=-1),
            jnp.concatenate([spread * keep, shifted(spread, 0) * take], axis=-1),
            atoms,
        )
        active = ((j <= count) & (lay.offset + 1 <= j))[..., None]
        return tuple(jnp.where(active, new, old) for new, old in zip(merged, state, strict=True))

    steps = jnp.max(jnp.where(where, count, 0), initial=0)
    return lax.fori_loop(1, steps + 1, add_gain, (zero_atoms, zero_atoms, zero_atoms))


class _Blocks(NamedTuple):
    """G's per-position inputs in rank order (all ``(..., n)``)."""

    lay: _preceding.Layout
    count: jax.Array  # non-zero gains in the position's block
    base: jax.Array  # gain above the block
    cost: jax.Array  # the ideal's cost down to each position
    holds: jax.Array  # the block holds a non-zero gain and starts before k
    gains: jax.Array  # each position's gain
    nonzero: jax.Array  # each position's gain is non-zero


def _expected_terms(blocks: _Blocks, probability, value, spread):
    """Sum over each block's first t positions of E[Y_t / t / log2(2 + cost - Y_t)].

    ``Y_t = Z_w``: ``w``, the non-zero gains among t draws from the block, is
    hypergeometric (kept at offset ``w - 1``, ``w = 0`` outside the layout);
    ``Z_w``'s law is the atoms ``(probability, value, spread)`` at offset
    ``w - 1``. Returns per position the terms and the spread they weigh.
    """
    lay, count = blocks.lay, blocks.count
    dtype = lay.zero.dtype
    w = (lay.offset + 1).astype(dtype)

    def over_positions(t, carry):
        hyp, none, found, pooled = carry
        hyp = _preceding.hypergeometric_next(hyp, t - 1, lay.size, count, lay, first=none, lowest=1)
        remaining = (lay.size - (t - 1)).astype(dtype)
        drawn_zero = none * (remaining - count) / jnp.maximum(remaining, 1)
        none = jnp.where(remaining > 0, drawn_zero, none)
        # The ideal's cost down to the t-th position, less the gain ranked there.
        slack = (lay.at_offset(blocks.cost, t - 1) - blocks.base)[..., None] - value
        term = (value / t.astype(dtype)) / _kernel.log2(2 + slack)
        expected = jnp.sum(jnp.where(probability > 0, probability * term, 0), axis=-1)
        # A count w that t draws cannot give has probability exactly 0, and
        # its sums may sit past the ideal's cost (an infinite term): skip it.
        counted = (t <= lay.cut) & (w <= count) & (hyp > 0)
        found = found + jnp.where(counted, hyp * expected, 0)
        pooled = pooled + jnp.where(counted, hyp * jnp.sum(spread, axis=-1), 0)
        return hyp, none, found, pooled

    carry = (lay.zero, jnp.ones_like(lay.zero), lay.zero, lay.zero)
    _, _, found, pooled = lax.fori_loop(1, lay.steps(blocks.holds) + 1, over_positions, carry)
    return found, pooled


def _one_sum(blocks: _Blocks, gain):
    """The atoms where every non-zero gain of a block is ``gain``: ``Z_w = w g``."""
    lay = blocks.lay
    w = (lay.offset + 1).astype(lay.zero.dtype)
    value = (w * jnp.where(blocks.holds, gain, 0))[..., None]
    probability = (w <= blocks.count).astype(value.dtype)[..., None] + lay.zero[..., None]
    return probability, value, jnp.zeros_like(value)


def _pooled_terms(blocks: _Blocks, atoms):
    """:func:`_expected_terms` over the law of the subset sums, built item by item."""
    lay = blocks.lay
    # Each block's non-zero gains at its first offsets, ascending: a canonical
    # order, so that pooled sums (if any) do not depend on the order the
    # engine leaves inside a block. Blocks past k sort last.
    n = lay.zero.shape[-1]
    *_, packed = lax.sort(
        (
            jnp.where(lay.cut > 0, lay.start, n),
            (~blocks.nonzero).astype(jnp.int8),
            blocks.gains,
        ),
        dimension=lay.zero.ndim - 1,
        num_keys=3,
    )
    sums = _subset_sums(packed + lay.zero, blocks.count, lay, atoms, blocks.holds)
    return _expected_terms(blocks, *sums)


def gain_parts(lists: _kernel.RankedLists, k, *, gain, atoms=ATOMS):
    """G's numerator, the ideal's total gain, and the second moment pooled away.

    The numerator is exact (to round-off) when the third is 0; see
    :func:`normalized_gain` for the bound otherwise. On CPU the compiled
    kernel takes each row's blocks one after another (decision 0043);
    elsewhere :func:`_xla_gain_sums` takes every position of the batch at once.
    """
    dtype = jnp.dtype(lists.dtype)
    judged = lists.judged()
    gains = jnp.where(judged, _gains.apply_gain(gain, lists.labels.astype(dtype)), 0)
    # A gain that is not positive costs 1 wherever it ranks, as a missing one
    # does, so only the positive gains need ordering: the command line gives
    # them sorted, and the kernel then holds no sort (decision 0018).
    ideal = _dcg.sorted_ideal_gains(lists, gain)
    ideal_total = jnp.sum(ideal, axis=-1)
    found, pooled, cost_total = _by_route(
        lists,
        _operands(lists, gains, _fit_to(ideal, lists.n), k),
        native=lambda *operands: _kernel_gain_sums(*operands, atoms),
        xla=functools.partial(_xla_gain_sums, atoms=atoms),
    )
    # The slack is a difference of two sums of gains, each rounded by the
    # dtype: past 2 / eps (2**53 in float64, 2**24 in float32) their rounding
    # exceeds the costs of 1 that the slack counts, and a term's discount is
    # anything (labels 2**60 and 1 gave a slack of -1, and G = inf). No value
    # is then given: NaN, which the command line refuses.
    held = jnp.maximum(cost_total, ideal_total) < 2 / jnp.finfo(dtype).eps
    return jnp.where(held, found, jnp.nan), ideal_total, pooled


@functools.partial(jax.custom_jvp, nondiff_argnums=(6,))
def _kernel_gain_sums(gains, above, tied, valid, ideal, k, atoms):
    """:func:`_native.gain_sums` on CPU, :func:`_xla_gain_sums` on other platforms."""
    return _native.on_cpu(
        functools.partial(_native.gain_sums, atoms=atoms),
        functools.partial(_xla_gain_sums, order=None, atoms=atoms),
        gains, above, tied, valid, ideal, k,
    )  # fmt: skip


@_kernel_gain_sums.defjvp
def _kernel_gain_sums_jvp(atoms, primals, tangents):
    # The kernel carries no derivatives: XLA's route gives them, in the gains
    # and the ideal (forward mode; its loops have traced lengths, which
    # reverse mode refuses on every route).
    xla = functools.partial(_xla_gain_sums, order=None, atoms=atoms)
    return _kernel_gain_sums(*primals, atoms), jax.jvp(xla, primals, tangents)[1]


def _xla_gain_sums(gains, above, tied, valid, ideal, k, *, order, atoms):
    """:func:`_native.gain_sums` with XLA's operations, every position of the batch at once.

    ``k`` is a cut-off for every row or one per row; ``order`` is the rank
    order if already computed, else None. Blocks whose
    non-zero gains are all equal have one sum per subset size; the law of
    the subset sums is built only for the lists holding a block that mixes
    gains, one list at a time (a tie between two graded items in a large
    batch then costs one list's work, not the batch's).
    """
    ranking_blocks, lay = _layout(gains, above, tied, valid, k, order)
    cost = jnp.cumsum(jnp.maximum(ideal, 1), axis=-1)
    nonzero = gains != 0
    gain_above, _ = _ranking.block_totals(gains, ranking_blocks)
    _, nonzero_within = _preceding.block_counts(nonzero, ranking_blocks)
    count = lay.ranked(nonzero_within)
    blocks = _Blocks(
        lay=lay,
        count=count,
        base=lay.ranked(gain_above),
        cost=cost,
        holds=(count > 0) & (lay.cut > 0),
        gains=lay.ranked(gains),
        nonzero=lay.ranked(nonzero),
    )
    highest = lay.ranked(_block_extreme(gains, nonzero, ranking_blocks, jnp.max))
    lowest = lay.ranked(_block_extreme(gains, nonzero, ranking_blocks, jnp.min))
    mixed = jnp.any(blocks.holds & (highest != lowest), axis=-1)

    found, pooled = _expected_terms(blocks, *_one_sum(blocks, highest))
    batch, n = mixed.shape, gains.shape[-1]

    def per_list(item):
        flag, one = item
        skip = (jnp.zeros_like(one.lay.zero), jnp.zeros_like(one.lay.zero))
        return lax.cond(flag, lambda: _pooled_terms(one, atoms), lambda: skip)

    def over_mixed_lists():
        items = (mixed.reshape(-1), jax.tree.map(lambda x: x.reshape(-1, n), blocks))
        spec = jax.typeof(found).sharding.spec
        if any(spec):
            # Lists sharded over explicit mesh axes: lax.map steps over whole
            # lists, so it takes them gathered and gives the results back
            # sharded as they came.
            whole = jax.sharding.PartitionSpec()
            items = jax.tree.map(lambda x: jax.sharding.reshard(x, whole), items)
        mixed_terms = lax.map(per_list, items)
        mixed_terms = [x.reshape(batch + (n,)) for x in mixed_terms]
        if any(spec):
            mixed_terms = [jax.sharding.reshard(x, spec) for x in mixed_terms]
        return tuple(mixed_terms)

    # A batch with no mixed block (every batch with ignore_ties) skips the
    # loop over its lists, whose steps cost even when each one skips: 0.015 s
    # of G's 0.15 s in `-m all_trec --ignore-ties` at TREC depth.
    mixed_found, mixed_pooled = lax.cond(jnp.any(mixed), over_mixed_lists, lambda: (found, pooled))
    where_mixed = mixed[..., None]
    found = jnp.where(where_mixed, mixed_found, found)
    pooled = jnp.where(where_mixed, mixed_pooled, pooled)
    return jnp.sum(found, axis=-1), jnp.sum(pooled, axis=-1), cost[..., -1]


def _normalized_gain(lists: _kernel.RankedLists, k, *, gain, atoms=ATOMS):
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], lists.dtype)
    found, ideal_total, _ = gain_parts(lists, k, gain=gain, atoms=atoms)
    return _kernel.ratio_or_zero(found, ideal_total)


BINARY_NORMALIZED_GAIN = _kernel.Formula(
    "binary_normalized_gain",
    _binary_normalized_gain,
    uses_order=True,
    labels="binary",
    nonnegative_labels=True,
)
# No tie key: its discount reads the gain collected so far, so a less
# relevant item placed early can lower it below relevant-last (labels 1, 1, 3,
# 2 give 0.689 against 0.704 for 1, 1, 2, 3).
NORMALIZED_GAIN = _kernel.Formula(
    "normalized_gain",
    _normalized_gain,
    static=("gain",),
    uses_order=True,
    labels="graded",
    nonnegative_labels=True,
    tie_key=None,
)


@_kernel.computes(BINARY_NORMALIZED_GAIN)
def binary_normalized_gain(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""trec_eval's binG: each relevant item discounted by the non-relevant items above it.

    Any non-zero label of a judged item is relevant; every other real item,
    judged or not, is non-relevant. A relevant item ranked within ``k`` with
    :math:`n_i` non-relevant items above it scores :math:`1 / \log_2(2 +
    n_i)`, and binG is the mean of that over the :math:`R` relevant items
    (``num_relevant``, retrieved or not):

    .. math::

        \mathrm{binG} = \frac{1}{R} \sum_{i\,\mathrm{relevant},\ p_i \le k}
            \frac{1}{\log_2(2 + n_i)}.

    It is :func:`normalized_gain` with 0/1 gains: a relevant item loses only
    for the non-relevant items ranked before it, not for its rank.

    With ties, the expectation over the tie orders is exact, O(m²) per block
    of :math:`m` tied items (decision 0016). :doc:`/ties` derives it.

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
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` binG of each list, in [0, 1]; 1 when every relevant item is
      retrieved above every non-relevant one. 0 for a list with no relevant
      item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``num_relevant`` does not hold one count per list; on concrete
        inputs, a real item holds NaN or infinity or a negative label, or
        ``num_relevant`` is fractional, negative or below the list's count.

    Example:
      Relevant items first and third: the second loses to one non-relevant
      item, :math:`(1 + 1/\log_2 3) / 2`:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.binary_normalized_gain(-jnp.arange(4.0), labels):.4f}")
      0.8155

    Remarks:
      trec_eval calls binG and G experimental (2008); they are rarely
      reported. An unjudged item counts as non-relevant here, unlike in
      :func:`bpref`, which skips it.

    References:
      trec_eval's m_binG.c (Buckley, 2008).

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        BINARY_NORMALIZED_GAIN,
        scores,
        labels,
        caller="binary_normalized_gain",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
        num_relevant=num_relevant,
    )


@_kernel.computes(NORMALIZED_GAIN)
def normalized_gain(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    judged: Bool[Array, "*batch n"] | None = None,
    ideal_labels: Num[Array, "*batch m"] | None = None,
    ideal_where: Bool[Array, "*batch m"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""trec_eval's G: each gain discounted by what the ranking has lost against the ideal.

    The ideal ranks every judged item (``ideal_labels`` if given, else the
    list's judged real items) by descending gain; let :math:`I_t` be its
    t-th gain (0 past its end) and :math:`C_p = \sum_{t \le p} \max(I_t,
    1)` its cost down to 0-based position :math:`p`. An item at position
    :math:`p < k` with gain :math:`g` contributes

    .. math::

        \frac{g}{\log_2\bigl(2 + C_p - S_p\bigr)},

    :math:`S_p` being the gains of the items at positions :math:`0 .. p`,
    its own included; G is the sum of the contributions over the ideal's
    total gain :math:`\sum_t \max(I_t, 0)`. An item that keeps pace with the
    ideal is barely discounted; one retrieved after items of lower gain is
    discounted by the gain lost. Unjudged items have gain 0 but take up
    positions. The gain is the label by default, as in trec_eval, where
    ``G.1=3.5,2=9`` sets the gain of relevance levels 1 and 2.

    With ties, the expectation over the tie orders is **exact** (to
    round-off) whenever no tie block has more than 16 distinct sums of its
    non-zero gains over subsets of one size: every block without ties, every
    block whose non-zero gains are equal (binary gains), and integer gains
    spanning a range :math:`\Delta` when :math:`\Delta \min(w, r - w) < 16`
    for :math:`r` non-zero gains. Beyond that, close sums are pooled, within
    a stated bound (decision 0016). :doc:`/ties` derives both.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance levels, non-negative.
      k: Only the first ``k`` positions are read (trec_eval's ``-M``); the
        ideal's total stays. None, or a ``k`` past ``n``, reads the whole
        list.
      gain: ``"linear"`` (the label itself, trec_eval's default), ``"exp2"``
        (:math:`2^\ell - 1`), or a callable applied to the labels, such as a
        lookup of trec_eval's ``level=gain`` table. Gains may be 0 or
        negative, as in trec_eval.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      ideal_labels: ``(..., m)`` labels of every judged item of each list,
        retrieved or not, for the ideal; None uses the judged real items of
        the list. It must hold every judged item's label for the value to
        stay finite. Not with ``segments``.
      ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks
        padding.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` G of each list, in [0, 1] for non-negative gains; 1 for the
      ideal ranking of every judged item when no non-zero gain is below 1. 0
      when the ideal's total gain is 0; NaN for a list with a NaN score, or
      whose ideal costs or gains sum to 2**53 or more (2**24 in float32),
      where their rounding outgrows the costs G discounts by.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``ideal_labels`` does not share the batch shape or comes with
        ``segments``; ``ideal_where`` comes without ``ideal_labels`` or
        differs from it in shape; on concrete inputs, a real item holds NaN
        or infinity or a negative label, or an ideal label is negative.

    Example:
      Gains 1 then 2 against the ideal 2, 1: the first item is 1 behind
      (:math:`1/\log_2 3`), the second has caught up (:math:`2/\log_2 2`),
      over a total of 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = jnp.array([0.9, 0.5]), jnp.array([1, 2])
      >>> print(f"{metrics.normalized_gain(scores, labels):.4f}")
      0.8770
      >>> print(f"{(1 / jnp.log2(3.0) + 2) / 3:.4f}")
      0.8770

    Remarks:
      trec_eval sorts its gain levels with an integer comparison of their
      difference, so levels whose gains differ by less than 1 (``G.1=0.5``)
      may be misordered in its ideal; lodestar sorts the gains exactly, and
      agrees with trec_eval whenever the gains of distinct levels differ by
      1 or more, integer gains included. trec_eval calls G experimental
      (2008).
      On CPU, lodestar's compiled kernels take each list's tie blocks one
      after another: on 10,000 tied lists of 100 graded items G costs 4 to 9
      times :func:`ndcg`. On other platforms (XLA's route) G costs about
      what :func:`binary_normalized_gain` does unless a tie block mixes
      different non-zero gains; the lists holding one are evaluated one at
      a time, at some milliseconds each.

    References:
      trec_eval's m_G.c and gain_init.c (Buckley, 2008).

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    caller = "normalized_gain"
    gain = _validation.check_gain(gain, caller=caller)
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    ideal_labels, ideal_where = _gains.check_ideal(
        ideal_labels, ideal_where, scores, segments, caller=caller
    )
    return _kernel.evaluate_formula(
        NORMALIZED_GAIN,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"gain": gain},
        item_context={"judged": judged},
        list_context={"ideal_labels": ideal_labels, "ideal_where": ideal_where},
    )
