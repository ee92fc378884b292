"""Sums over the pairs of a list, in column blocks, in memory linear in the list length.

The pairwise losses, LambdaLoss, the sigmoid soft ranks and NeuralSort's
logits each sum a term over every pair ``(i, j)`` of a list. Written as
``x[..., :, None] - x[..., None, :]``, that holds ``(..., n, n)`` arrays, and
reverse-mode autodiff keeps several of them as residuals: 36 GiB for a
pairwise loss's value and gradient at 32 lists of 10,000 items.
:func:`pair_sum` instead folds the term over blocks of ``block`` columns with
a ``fori_loop``, and wraps each block in :func:`jax.checkpoint`, so that
autodiff keeps only a block's inputs and recomputes its ``(..., n, block)``
terms on the way back (decision 0029). It is plain JAX, with no custom
derivative rule, so ``grad``, ``jvp``, ``jacfwd``, ``vmap`` and
Hessian-vector products all work, and the derivative with respect to any
traced value the term closes over (a temperature) flows as usual.

The block width is a power of two chosen from the shapes: the whole list when
``lists * n * n`` is at most :data:`BUDGET` elements (one block, no loop: the
short lists of a training batch pay nothing), otherwise the widest block that
keeps ``lists * n * block`` within it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import jax
import jax.numpy as jnp
from jax import lax

# Elements of one block's (..., n, block) terms: 2**23 float32 values is
# 32 MiB per temporary. Measured in decision 0029: at 32 x 10,000 the value
# and gradient of the pairwise logistic loss need 0.1 GiB of XLA temporaries
# at this width, and the time is flat from 2**22 to 2**26.
BUDGET = 1 << 23

# The narrowest block: below it the loop's per-step cost dominates.
MIN_BLOCK = 8

Term = Callable[[tuple[jax.Array, ...], tuple[jax.Array, ...], jax.Array], jax.Array]


def block_width(batch: Sequence[int], n: int) -> int:
    """Columns per block for ``batch`` lists of ``n`` items; ``n`` means one block."""
    lists = math.prod(batch)
    if lists * n * n <= BUDGET or n <= MIN_BLOCK:
        return n
    width = max(BUDGET // max(lists * n, 1), MIN_BLOCK)
    return min(1 << (width.bit_length() - 1), n)


def pair_sum(
    term: Term,
    items: Sequence[jax.Array],
    *,
    over: Literal["columns", "pairs"],
) -> jax.Array:
    """Sum ``term`` over the pairs of each list, one block of columns at a time.

    Args:
      term: ``term(rows, columns, distinct) -> (..., n, b)``. ``rows`` holds each
        array of ``items`` as ``(..., n, 1)`` (item ``i``), ``columns`` as
        ``(..., 1, b)`` (item ``j`` of the block); ``distinct`` is the
        ``(n, b)`` mask of pairs ``i != j`` whose column is an item of the
        list (the last block is padded past ``n``). The term must be 0 (not
        merely finite) wherever it should not count, and finite everywhere,
        padded columns included, so that no NaN reaches a gradient.
      items: Per-item arrays, each ``(..., n)`` with the same shape.
      over: ``"columns"``: the ``(..., n)`` sum over ``j`` for each ``i``;
        ``"pairs"``: the ``(...)`` sum over every pair.

    Returns:
      The sums, in the term's dtype.
    """
    items = tuple(items)
    batch, n = items[0].shape[:-1], items[0].shape[-1]
    block = block_width(batch, n)
    blocks = -(-n // block)
    pad = [(0, 0)] * len(batch) + [(0, blocks * block - n)]
    columns = tuple(jnp.pad(x, pad) for x in items)
    rows = tuple(x[..., :, None] for x in items)
    row_index = jnp.arange(n)[:, None]

    # Autodiff keeps a block's inputs, not its (..., n, block) terms.
    @jax.checkpoint
    def one_block(rows, block_columns, start):
        column_index = start + jnp.arange(block)[None, :]
        distinct = (row_index != column_index) & (column_index < n)
        value = term(rows, tuple(c[..., None, :] for c in block_columns), distinct)
        return jnp.sum(value, axis=-1 if over == "columns" else (-2, -1))

    def add_block(index, total):
        start = index * block
        block_columns = tuple(lax.dynamic_slice_in_dim(c, start, block, axis=-1) for c in columns)
        return total + one_block(rows, block_columns, start)

    first = one_block(rows, tuple(c[..., :block] for c in columns), jnp.int32(0))
    if blocks == 1:
        return first
    return lax.fori_loop(1, blocks, add_block, first)
