"""Tie blocks in rank order, and what precedes an item inside its block.

bpref, infAP, binG and G give each item a term that is non-linear in how many
items of some kind rank above it. Under a uniformly random order of a tie block
of ``m`` items, an item lands at offset ``u`` with probability ``1 / m`` and its
``u`` predecessors are a uniformly random ``u``-subset of its ``m - 1``
block-mates: the number ``v`` of them of a kind holding ``q`` of the mates is
hypergeometric. The measures sum their term over that joint law.

The arithmetic runs on per-position arrays in rank order (each block contiguous,
padding last), as ERR's cascade does (decision 0006): a block starting at
position ``a`` keeps the value for count ``v`` at position ``a + v``, so one
``(..., n)`` array holds every block at once, and a loop over the draws ``u``
runs as many times as the largest block starting before ``k``: one pass when
nothing ties. Every block shares its counts with all its items, so only
block-level quantities are laid out. See decision 0016.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _ranking


class Layout(NamedTuple):
    """The tie blocks of a batch in rank order.

    Attributes:
      order: ``(..., n)`` the item at each rank position; blocks contiguous,
        padding last (the order inside a block is unspecified).
      start: ``(..., n)`` the first position of each position's block.
      size: ``(..., n)`` the size ``m`` of each position's block.
      offset: ``(..., n)`` the position minus ``start``.
      cut: ``(..., n)`` how many of the block's positions lie before ``k``
        (0 for padding and for blocks starting at or after ``k``).
      zero: ``(..., n)`` zeros of the compute dtype, typed like the labels
        (sharded, and varying inside a ``shard_map``), to start loop carries.
    """

    order: jax.Array
    start: jax.Array
    size: jax.Array
    offset: jax.Array
    cut: jax.Array
    zero: jax.Array

    def ranked(self, values: jax.Array) -> jax.Array:
        """Per-item ``values`` at the rank positions."""
        return jnp.take_along_axis(values, self.order, axis=-1)

    def at_offset(self, values: jax.Array, offset) -> jax.Array:
        """Per position, the rank-ordered ``values`` at ``offset`` of its own block.

        ``offset`` is a scalar or a per-position array; positions past the end
        read the last one (mask them).
        """
        n = values.shape[-1]
        index = jnp.clip(self.start + offset, 0, n - 1)
        return jnp.take_along_axis(values, index, axis=-1)

    def previous(self, values: jax.Array, first) -> jax.Array:
        """Each position's value at the previous offset of its block; ``first`` at offset 0."""
        shifted = jnp.concatenate([jnp.zeros_like(values[..., :1]), values[..., :-1]], axis=-1)
        return jnp.where(self.offset == 0, first, shifted)

    def steps(self, where: bool | jax.Array = True) -> jax.Array:
        """The largest ``cut`` among positions ``where``: a loop's trip count."""
        return jnp.max(jnp.where(where, self.cut, 0), initial=0)


def layout(lists, k) -> Layout:
    """The :class:`Layout` of a kernel's ``RankedLists`` for the traced cut-off ``k``."""
    ranking = lists.ranking
    return layout_of(
        ranking.rank_order(), ranking.blocks, lists.valid, k, like=lists.labels, dtype=lists.dtype
    )


def layout_of(order, blocks: _ranking.TieBlocks, valid, k, *, like, dtype) -> Layout:
    """The :class:`Layout` of lists given their rank ``order``, blocks and real items.

    ``like`` is a per-item array whose sharding (and manual mesh axes) the
    layout's zeros take, in ``dtype``.
    """
    n = order.shape[-1]
    valid = jnp.take_along_axis(jnp.broadcast_to(valid, order.shape), order, axis=-1)
    start = jnp.take_along_axis(blocks.above, order, axis=-1)
    size = jnp.take_along_axis(blocks.tied, order, axis=-1)
    offset = jnp.arange(n) - start
    cut = jnp.where(valid, jnp.clip(k - start, 0, size), 0)
    zero = jnp.zeros_like(jnp.take_along_axis(like, order, axis=-1), dtype=dtype)
    return Layout(order, start, size, offset, cut, zero)


def block_counts(indicator: jax.Array, blocks: _ranking.TieBlocks):
    """Items of a kind above each item's block, and in it: :func:`block_totals` of int32."""
    return _ranking.block_totals(indicator.astype(jnp.int32), blocks)


def hypergeometric_next(p, drawn, population, successes, lay: Layout, first=0.0, lowest=0):
    """One more draw without replacement: the law of the successes drawn, per block.

    ``p`` holds, at offset ``o`` of each block, the probability that ``drawn``
    draws from ``population`` items holding ``successes`` gave ``v = lowest +
    o`` successes; ``first`` is the probability of ``lowest - 1`` successes
    (kept outside the layout when ``lowest`` is 1). Returns the law after
    ``drawn + 1`` draws:

        p'(v) = (p(v) (N - d - (q - v)) + p(v - 1) (q - v + 1)) / (N - d)

    Both weights are non-negative wherever their probability is not zero, and
    a count that cannot occur gets exactly 0. Blocks with no item left to draw
    keep ``p``.
    """
    dtype = p.dtype
    remaining = population.astype(dtype) - drawn
    v = (lay.offset + lowest).astype(dtype)
    q = successes.astype(dtype)
    stay = remaining - (q - v)
    take = q - v + 1
    moved = (p * stay + lay.previous(p, first) * take) / jnp.where(remaining > 0, remaining, 1)
    return jnp.where(remaining > 0, moved, p)


def predecessor_weights(lay: Layout, successes, *, where: bool | jax.Array = True) -> jax.Array:
    """``P(u < cut, v)``: the joint law of an item's offset and its predecessors of a kind.

    For an item of a block of ``m`` whose ``m - 1`` mates hold ``q =
    successes`` of a kind, the item sits at offset ``u`` with probability
    ``1 / m`` and, given ``u``, has ``v`` predecessors of the kind with the
    hypergeometric probability of ``v`` successes in ``u`` draws from ``m - 1``.
    Returned at offset ``v`` of each block: the probability that the item lies
    before ``k`` with ``v`` such predecessors,

        W(v) = (1/m) sum_{u < cut} C(q, v) C(m - 1 - q, u - v) / C(m - 1, u).

    A block wholly before ``k`` gets ``W(v) = 1 / (q + 1)`` for ``v = 0 .. q``:
    the item's place among itself and the ``q`` mates is uniform, whatever the
    other mates (up to round-off, which the loop keeps to a few ulps).

    Args:
      lay: The layout.
      successes: ``(..., n)`` per position, the mates of the kind (block-level).
      where: Positions whose blocks need it (sets the trip count).

    Returns:
      ``(..., n)`` of the compute dtype.
    """
    size = lay.size.astype(lay.zero.dtype)
    first = (lay.offset == 0).astype(lay.zero.dtype) + lay.zero

    def draw(u, carry):
        p, weight = carry
        weight = weight + jnp.where(u < lay.cut, p, 0)
        return hypergeometric_next(p, u, lay.size - 1, successes, lay), weight

    _, weight = lax.fori_loop(0, lay.steps(where), draw, (first, lay.zero))
    return weight / size
