"""trec_eval's G and binG: gains discounted by what the ranking lost before each document."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _docs, _gains, _ranking, _validation
from lodestar.metrics import _bpref, _kernel, _preceding

if TYPE_CHECKING:
    from jaxtyping import Array, Bool, Float, Int, Num

ATOMS = 16
"""Distinct subset sums G keeps per (tie block, subset size); beyond, nearby sums are pooled."""


def _binary_normalized_gain(lists: _kernel.Lists, k):
    dtype = lists.dtype
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    relevant = lists.relevant()
    blocks = lists.ranking.blocks
    relevant_above, relevant_within = _preceding.block_counts(relevant, blocks)
    lay = _preceding.layout(lists, k)
    holds_relevant = lay.ranked(relevant_within)
    # A relevant item's non-relevant block-mates (judged or not) are the
    # block's items that are not relevant.
    mates = lay.size - holds_relevant
    weight = _preceding.predecessor_weights(lay, mates, where=holds_relevant > 0)
    # At offset v: v non-relevant mates precede the item.
    above = lay.start - lay.ranked(relevant_above) + lay.offset
    term = 1 / jnp.log2(2 + above.astype(dtype))
    found = jnp.sum(jnp.where(weight > 0, weight * term, 0) * holds_relevant, axis=-1)
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


def _ideal_cost(lists: _kernel.Lists, gain, gains, judged):
    """Per position ``p``, the cost ``sum_{t <= p} max(I_t, 1)``; and the ideal's total gain.

    ``I_t`` is the t-th largest gain of the ideal pool (``ideal_labels`` if
    given, else the list's judged items), 0 past its end.
    """
    dtype, n = lists.dtype, lists.n
    if "ideal_labels" in lists.context:
        labels = lists.context["ideal_labels"]
        pool_valid = lists.context.get("ideal_where", jnp.ones(labels.shape, bool))
        pool = _gains.apply_gain(gain, labels.astype(dtype))
    else:
        pool, pool_valid = gains, judged
    pool = jnp.where(pool_valid, pool, 0)
    order = _ranking.descending_order(pool, pool_valid)
    ideal = jnp.take_along_axis(pool, order, axis=-1)
    m = ideal.shape[-1]
    if m >= n:
        ideal = ideal[..., :n]
    else:
        ideal = jnp.concatenate([ideal, jnp.zeros(ideal.shape[:-1] + (n - m,), dtype)], axis=-1)
    cost = jnp.cumsum(jnp.maximum(ideal, 1), axis=-1)
    return cost, jnp.sum(jnp.maximum(pool, 0), axis=-1)


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


def gain_parts(lists: _kernel.Lists, k, *, gain, atoms=ATOMS):
    """G's numerator, the ideal's total gain, and the second moment pooled away.

    The numerator is exact (to round-off) when the third is 0; see
    :func:`normalized_gain` for the bound otherwise.
    """
    dtype = lists.dtype
    judged = _bpref.judged_items(lists)
    gains = jnp.where(judged, _gains.apply_gain(gain, lists.labels.astype(dtype)), 0)
    cost, ideal_total = _ideal_cost(lists, gain, gains, judged)
    blocks = lists.ranking.blocks
    lay = _preceding.layout(lists, k)
    nonzero = gains != 0
    gain_above, _ = _ranking.block_totals(gains, blocks)
    _, nonzero_within = _preceding.block_counts(nonzero, blocks)
    count = lay.ranked(nonzero_within)
    base = lay.ranked(gain_above)
    holds = (count > 0) & (lay.cut > 0)

    # Each block's non-zero gains at its first offsets, in rank order.
    n = lists.n
    ranked_nonzero = lay.ranked(nonzero) & (lay.cut > 0)
    before = jnp.cumsum(ranked_nonzero, axis=-1, dtype=jnp.int32) - ranked_nonzero
    index = before - lay.at_offset(before, 0)
    target = jnp.where(ranked_nonzero, lay.start + index, n)

    def pack(values, target):
        return jnp.zeros(n, values.dtype).at[target].set(values, mode="drop")

    ranked_gains = lay.ranked(gains)
    packed = jax.vmap(pack)(ranked_gains.reshape(-1, n), target.reshape(-1, n))
    packed = packed.reshape(ranked_gains.shape) + lay.zero
    probability, value, spread = _subset_sums(packed, count, lay, atoms, holds)

    # Over t, the block's first t positions: E[Y_t / t * 1 / log2(2 + cost - Y_t)]
    # with Y_t = Z_w, w hypergeometric (t draws from the block, count non-zero).
    size = lay.size
    w = (lay.offset + 1).astype(dtype)

    def over_positions(t, carry):
        hyp, none, found, pooled = carry
        hyp = _preceding.hypergeometric_next(hyp, t - 1, size, count, lay, first=none, lowest=1)
        remaining = (size - (t - 1)).astype(dtype)
        none = jnp.where(remaining > 0, none * (remaining - count) / jnp.maximum(remaining, 1), none)
        counted = (t <= lay.cut) & (w <= count)
        # The ideal's cost down to the t-th position, less the gain ranked there.
        slack = (lay.at_offset(cost, t - 1) - base)[..., None] - value
        term = (value / t.astype(dtype)) / jnp.log2(2 + slack)
        expected = jnp.sum(jnp.where(probability > 0, probability * term, 0), axis=-1)
        found = found + jnp.where(counted, hyp * expected, 0)
        pooled = pooled + jnp.where(counted, hyp * jnp.sum(spread, axis=-1), 0)
        return hyp, none, found, pooled

    none = jnp.ones_like(lay.zero)
    carry = (lay.zero, none, lay.zero, lay.zero)
    _, _, found, pooled = lax.fori_loop(1, lay.steps(holds) + 1, over_positions, carry)
    return jnp.sum(found, axis=-1), ideal_total, jnp.sum(pooled, axis=-1)


def _normalized_gain(lists: _kernel.Lists, k, *, gain, atoms=ATOMS):
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], lists.dtype)
    found, ideal_total, _ = gain_parts(lists, k, gain=gain, atoms=atoms)
    return _kernel.ratio_or_zero(found, ideal_total)


BINARY_NORMALIZED_GAIN = _kernel.Formula("binary_normalized_gain", _binary_normalized_gain)
NORMALIZED_GAIN = _kernel.Formula("normalized_gain", _normalized_gain, static=("gain",))


@_docs.shared
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
    """binG."""
    caller = "binary_normalized_gain"
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    return _kernel.evaluate(
        BINARY_NORMALIZED_GAIN,
        scores,
        labels,
        caller=caller,
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        nonnegative_labels=True,
        item_context={"judged": judged},
        list_context={
            "num_relevant": _validation.check_num_relevant(
                num_relevant, scores, segments, max_segments, caller=caller
            )
        },
    )


@_docs.shared
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
    """G."""
    caller = "normalized_gain"
    gain = _validation.check_gain(gain, caller=caller)
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    ideal_labels, ideal_where = _validation.check_ideal(
        ideal_labels, ideal_where, scores, segments, caller=caller
    )
    return _kernel.evaluate(
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
        nonnegative_labels=True,
        options={"gain": gain},
        item_context={"judged": judged},
        list_context={"ideal_labels": ideal_labels, "ideal_where": ideal_where},
    )
