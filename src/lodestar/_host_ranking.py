"""The engine's counts and rank orders of NumPy arrays, outside any jitted kernel.

The command line ranks each padded batch here, once, and hands the counts to
its kernel as data, which then serves every measure (decision 0018): with
lodestar's compiled kernels, in small programs of their own; without them,
with NumPy's sort, which on CPU is faster than XLA's. The counts are
:mod:`lodestar._ranking`'s, under its contract; the programs here are its own
functions, jitted.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from lodestar import _native, _ranking

# NumPy ranks the command line's lists where the kernels are not loaded, this
# many items at a time: its temporaries then stay a few cache-sized blocks
# instead of several copies of the whole batch (decision 0011).
_NUMPY_CHUNK_ITEMS = 1 << 16


@functools.partial(jax.jit, static_argnames="ignore_ties")
def _native_tie_blocks(scores, valid, *, ignore_ties):
    # The kernel merges -0.0 into 0.0 itself. XLA's `scores == 0` would also
    # merge subnormals (its threads treat them as zero), which NumPy, the
    # fallback, and trec_eval tell apart.
    kernel = functools.partial(_native.tie_blocks, ignore_ties=ignore_ties)
    xla_method = functools.partial(_ranking.xla_sort, ignore_ties=ignore_ties)
    return _ranking.native_or(
        kernel, xla_method, _ranking.rankable(scores, merge_zeros=False), valid
    )


def host_tie_blocks(scores: np.ndarray, valid: np.ndarray, ignore_ties: bool):
    """The engine's counts (no cut-off) of NumPy arrays, as NumPy arrays, any batch shape.

    The command line ranks its batches with this outside its jitted kernel
    (decision 0018): with the compiled kernels, in one small program of its
    own; without them, with NumPy's sort, which on CPU is faster than XLA's.
    """
    scores, valid = np.asarray(scores), np.broadcast_to(valid, np.shape(scores))
    if _native.loaded():
        # The scores keep their dtype: float64 scores distinct only beyond
        # float32's resolution must not tie.
        with jax.enable_x64(scores.dtype.itemsize == 8):
            above, tied = _native_tie_blocks(scores, valid, ignore_ties=ignore_ties)
        return np.asarray(above), np.asarray(tied)
    shape = scores.shape
    n = shape[-1]
    flat, flat_valid = scores.reshape(-1, n), valid.reshape(-1, n)
    above = np.empty(flat.shape, np.int32)
    tied = np.empty(flat.shape, np.int32)
    step = max(1, _NUMPY_CHUNK_ITEMS // max(n, 1))
    for start in range(0, flat.shape[0], step):
        rows = slice(start, start + step)
        above[rows], tied[rows] = _host_tie_blocks_2d(flat[rows], flat_valid[rows], ignore_ties)
    return above.reshape(shape), tied.reshape(shape)


# The index takes the low 31 bits of a packed sort key (below).
_INDEX_BITS = 31
_INDEX_MASK = (1 << _INDEX_BITS) - 1


def _descending_keys(scores: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
    """uint64 keys whose ascending sort is the ranking, or None if a score takes 64 bits.

    A key packs, from the top bit down: whether the item is padding, the
    score's bits complemented in an order-preserving code, and the index
    complemented. One sort of the keys then puts real items first, by
    descending score, ties by descending index (``ignore_ties``'s order), and
    the sorted keys hold the order and the scores both: NumPy sorts 64-bit
    integers as fast as it sorts float32, where ``argsort`` takes 3 times as
    long and a stable one 15 times (decision 0037).
    """
    dtype = scores.dtype
    if dtype == np.float32:
        # IEEE order as unsigned order: flip every bit of a negative float,
        # only the sign bit of the others. (-0.0 was merged with 0.0 before.)
        flip = (scores.view(np.int32) >> 31).view(np.uint32) | np.uint32(1 << 31)
        ordered = scores.view(np.uint32) ^ flip
    elif dtype.kind == "u" and dtype.itemsize <= 4:
        ordered = scores.astype(np.uint32, copy=False)
    elif dtype.kind == "i" and dtype.itemsize <= 4:
        ordered = scores.astype(np.int32, copy=False).view(np.uint32) ^ np.uint32(1 << 31)
    else:
        return None
    n = scores.shape[-1]
    key = (~ordered).astype(np.uint64)
    key <<= np.uint64(_INDEX_BITS)
    key |= (~valid).astype(np.uint64) << np.uint64(63)
    key |= np.arange(_INDEX_MASK, _INDEX_MASK - n, -1, dtype=np.uint64)
    return key


def _host_tie_blocks_2d(scores: np.ndarray, valid: np.ndarray, ignore_ties: bool):
    rows, n = scores.shape
    key = _descending_keys(scores, valid) if n <= _INDEX_MASK else None
    if key is not None:
        key.sort(axis=-1)
        order = (np.uint64(_INDEX_MASK) - (key & np.uint64(_INDEX_MASK))).view(np.int64)
        key >>= np.uint64(_INDEX_BITS)  # padding flag and score: equal within a tie block
        same = key[:, 1:] == key[:, :-1]
    else:
        # A stable ascending sort, reversed, ranks ties by descending index. Tie
        # blocks do not depend on the order inside a block, and the unstable
        # sort is several times faster.
        order = np.argsort(scores, axis=-1, kind="stable" if ignore_ties else None)[:, ::-1]
        sorted_valid = np.take_along_axis(valid, order, axis=-1)
        if not sorted_valid.all():
            # Stable radix sort on the flag moves padding last, keeping the rest.
            padding_last = np.argsort(~sorted_valid, axis=-1, kind="stable")
            order = np.take_along_axis(order, padding_last, axis=-1)
            sorted_valid = np.take_along_axis(sorted_valid, padding_last, axis=-1)
        sorted_scores = np.take_along_axis(scores, order, axis=-1)
        same = (sorted_scores[:, 1:] == sorted_scores[:, :-1]) & (
            sorted_valid[:, 1:] == sorted_valid[:, :-1]
        )
        order = order.astype(np.int64)
    if ignore_ties:
        above_sorted = np.broadcast_to(np.arange(n, dtype=np.int32), (rows, n)).ravel()
        tied_sorted = np.ones(rows * n, np.int32)
    else:
        # Blocks over the flattened batch: every row starts one, so no block
        # crosses a row. Each item reads its block's start and length.
        first = np.ones((rows, n), bool)
        first[:, 1:] = ~same
        index = np.int32 if rows * n < 2**31 else np.int64
        starts = np.flatnonzero(first).astype(index)
        block = np.cumsum(first, axis=None, dtype=index)
        block -= 1
        tied_sorted = np.diff(starts, append=index(rows * n)).astype(np.int32)[block]
        above_sorted = (starts % index(n)).astype(np.int32)[block]
    order += (np.arange(rows, dtype=np.int64) * n)[:, None]
    destination = order.ravel()
    real = valid.ravel()[destination]
    above = np.empty(rows * n, np.int32)
    tied = np.empty(rows * n, np.int32)
    above[destination] = np.where(real, above_sorted, n)
    tied[destination] = np.where(real, tied_sorted, 1)
    return above.reshape(rows, n), tied.reshape(rows, n)


def host_rank_order(above: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """:meth:`Ranking.rank_order` from host counts: items by ``above``, padding last."""
    key = np.where(valid, above, above.shape[-1] + 1).astype(np.int32)
    if _native.loaded():
        return np.asarray(_ascending_order_program(key))
    return np.argsort(key, axis=-1, kind="stable").astype(np.int32)


_ascending_order_program = jax.jit(_ranking.ascending_order)


def host_trec_order(scores: np.ndarray, docno_rank: np.ndarray) -> np.ndarray:
    """One list's indices in trec_eval's order: descending score, ties by descending docno.

    ``docno_rank`` orders the document ids (a larger rank, a larger docno).
    """
    return np.lexsort((-docno_rank, -scores))
