"""Packed lists: several lists in one row, told apart by integer segment ids.

A row of ``n`` items may hold many lists. ``segments`` (shape ``(..., n)``,
integers) names the list of each item: ids ``0 .. S - 1`` with ``S =
max_segments``. Every public metric, smooth metric and loss accepts it, and the
result has one value per list, ``(..., S)``, laid out by id.

The mechanism is the same for every function (decision 0009): the real items of
each list are gathered, in their order in the row, into a padded block of
``(..., S, L)`` items, ``L`` being room for the longest list, and the ordinary
unsegmented kernel runs on that block. A packed row therefore gives what the
same lists padded by hand give, because it *is* that padded form; ties are
averaged within a list and never across lists, and ``ignore_ties`` keeps the
descending order of the items' positions in the row.

The layout is one stable argsort of the row by segment id (the compiled
kernel's on CPU, where XLA's sort is many times slower, and XLA's elsewhere)
followed by gathers; its cost is small beside the kernel's.

Rules, shared by every public function:

* Padding (``where == False``) belongs to no list and its id is never
  inspected: it may hold anything, ``-1`` for instance.
* ``max_segments`` is static. When ``segments`` (and ``where``) are concrete it
  defaults to one more than the largest id of a real item (1 when there is
  none); when they are traced (under ``jit`` or ``vmap``) it is required.
  An id with no real item is an empty list, which scores 0.
* ``max_segment_size`` is static: room for the longest list. By default it is
  the longest list rounded up to a power of two (so a stream of batches
  compiles a handful of kernels), or ``n`` when the ids are traced. Under
  ``jit``, give it to avoid ``S`` blocks of ``n`` items.
* Real items with an id outside ``[0, S)``, or a list longer than
  ``max_segment_size``, are refused with :class:`ValueError` on concrete ids.
  On traced ids they are checked only inside
  :func:`lodestar.value_checks_under_jit`, through
  :func:`jax.experimental.checkify.checkify`; otherwise every list of such a
  row scores NaN, never a plausible number.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import _ranking, _validation


def _check_size(value, *, name: str, caller: str) -> int | None:
    """``value`` as an int >= 1, or None; refuse anything else."""
    return _validation.check_int_or_none(value, name=name, caller=caller, low=1)


def _check_ids(segments, scores, *, caller: str) -> jax.Array:
    dtype = getattr(segments, "dtype", None)
    if dtype is None:
        dtype = np.asarray(segments).dtype
    if not jnp.issubdtype(dtype, jnp.integer):
        raise ValueError(f"{caller} expects integer segment ids; got dtype {dtype}.")
    segments = jnp.asarray(segments)
    if segments.shape != scores.shape:
        raise ValueError(
            f"{caller} expects `segments` of the same shape as scores; got "
            f"segments {segments.shape} and scores {scores.shape}."
        )
    return segments


def _out_of_range_message(caller, max_segments):
    return (
        f"{caller} expects the segment ids of real items in [0, {max_segments}) "
        f"(max_segments={max_segments})."
    )


def _overflow_message(caller, max_segment_size):
    return f"{caller} got a list longer than max_segment_size={max_segment_size}."


def _concrete_sizes(segments, where, max_segments, max_segment_size, *, caller):
    """Check concrete ids on the host; ``(S, L)`` with the defaults filled in."""
    ids = np.asarray(segments)
    shape = (math.prod(ids.shape[:-1]), ids.shape[-1])
    ids = ids.reshape(shape)
    real = np.ones(shape, bool) if where is None else np.asarray(where).reshape(shape)
    real_ids = ids[real]
    if real_ids.size and real_ids.min() < 0:
        raise ValueError(f"{caller} expects non-negative segment ids; got {real_ids.min()}.")
    if max_segments is None:
        max_segments = int(real_ids.max()) + 1 if real_ids.size else 1
    elif real_ids.size and real_ids.max() >= max_segments:
        raise ValueError(
            _out_of_range_message(caller, max_segments) + f" Got {real_ids.max()} instead."
        )
    row = np.broadcast_to(np.arange(ids.shape[0])[:, None], ids.shape)[real]
    sizes = np.bincount(row * max_segments + real_ids, minlength=1)
    longest = int(sizes.max()) if sizes.size else 0
    if max_segment_size is None:
        max_segment_size = 1 << max(longest - 1, 0).bit_length()
    elif longest > max_segment_size:
        raise ValueError(
            _overflow_message(caller, max_segment_size) + f" The longest has {longest} items."
        )
    return max_segments, min(max_segment_size, shape[1])


def _slots(segments, valid, max_segments, max_segment_size):
    """The row index of the item in each ``(list, position)`` slot.

    Returns:
      ``(item, broken)``: ``item`` is int32 ``(..., S, L)``, ``n`` for an empty
      slot; ``broken`` is ``(...)``, True for a row with a real item whose id
      is out of range or a list longer than ``L``.
    """
    n = segments.shape[-1]
    batch = segments.shape[:-1]
    ids = jnp.arange(max_segments)
    in_range = (segments >= 0) & (segments < max_segments)
    # Padding and out-of-range items sort after every list, under id S.
    key = jnp.where(valid & in_range, segments, max_segments).astype(jnp.int32)
    order = _ranking.ascending_order(key)
    sizes = jnp.sum(key[..., None, :] == ids[:, None], axis=-1, dtype=jnp.int32)
    starts = jnp.cumsum(sizes, axis=-1) - sizes
    position = jnp.arange(max_segment_size)
    filled = position < sizes[..., None]
    source = jnp.minimum(starts[..., None] + position, n - 1).reshape(*batch, -1)
    item = jnp.take_along_axis(order, source, axis=-1).reshape(filled.shape)
    item = jnp.where(filled, item, n)
    broken = jnp.any(valid & ~in_range, axis=-1) | jnp.any(sizes > max_segment_size, axis=-1)
    return item, broken


@jax.jit
def _dense_ids(segments, where):
    """Each real item's id numbered ``0, 1, ...`` by ascending id within its row.

    The ids of padding are never inspected and become 0.
    """
    valid = jnp.ones(segments.shape, bool) if where is None else where
    key = jnp.where(valid, segments, jnp.iinfo(segments.dtype).max)
    order = _ranking.ascending_order(key)
    ordered = jnp.take_along_axis(key, order, axis=-1)
    new = jnp.concatenate(
        [jnp.ones_like(ordered[..., :1], bool), ordered[..., 1:] != ordered[..., :-1]], axis=-1
    )
    dense = (jnp.cumsum(new, axis=-1) - 1).astype(jnp.int32)
    inverse = jnp.argsort(order, axis=-1)
    return jnp.where(valid, jnp.take_along_axis(dense, inverse, axis=-1), 0)


@functools.partial(jax.jit, static_argnames=("max_segments", "max_segment_size"))
def _compact(scores, labels, where, segments, *, max_segments, max_segment_size):
    n = scores.shape[-1]
    if n == 0:
        shape = (*scores.shape[:-1], max_segments, 0)
        item = jnp.zeros(shape, jnp.int32)
        broken = jnp.zeros(scores.shape[:-1], bool)
    else:
        valid = jnp.ones(scores.shape, bool) if where is None else where
        item, broken = _slots(segments, valid, max_segments, max_segment_size)

    # The barrier keeps XLA from fusing the gathers into the kernel's pairwise
    # slices, which would redo them once per slice.
    laid_out = (_gather(scores, item), _gather(labels, item), item < n, item, broken)
    return lax.optimization_barrier(laid_out)


def _gather(x, item):
    """Per-item ``x`` ``(..., n)`` in the slots ``item`` ``(..., S, L)`` name; 0 when empty."""
    flat = item.reshape(*item.shape[:-2], -1)
    return jnp.take_along_axis(x, flat, axis=-1, mode="fill", fill_value=0).reshape(item.shape)


_layout = jax.jit(_gather)


@functools.partial(jax.jit, static_argnames=("n",))
def _to_items(values, item, *, n):
    batch = item.shape[:-2]
    flat_values = values.reshape(-1, item.shape[-2] * item.shape[-1])
    flat_item = item.reshape(flat_values.shape)

    def scatter(v, i):
        return jnp.zeros(n, v.dtype).at[i].set(v, mode="drop", unique_indices=True)

    return jax.vmap(scatter)(flat_values, flat_item).reshape(*batch, n)


@dataclasses.dataclass(frozen=True)
class LaidOutLists:
    """The lists of one call, laid out for an unsegmented kernel.

    Without segments it holds the inputs unchanged and its methods are the
    identity. With segments, ``scores``, ``labels`` and ``where`` have shape
    ``(..., S, L)``: list ``s`` of each row is the block ``[..., s, :]``.

    Attributes:
      scores: The scores to hand the kernel.
      labels: The labels to hand the kernel.
      where: The padding mask to hand the kernel (None: no padding).
      item: ``(..., S, L)`` row index of each slot's item (``n``: empty), or None.
      broken: ``(...)`` rows whose ids could not be laid out, or None when none
        can be (no segments, or ids checked on the host).
      n: The row length.
    """

    scores: jax.Array
    labels: jax.Array
    where: jax.Array | None
    item: jax.Array | None = None
    broken: jax.Array | None = None
    n: int = 0

    def per_list(self, values: jax.Array) -> jax.Array:
        """One value per list, ``(..., S)``; NaN for every list of a broken row."""
        if self.broken is None:
            return values
        return jnp.where(self.broken[..., None], jnp.nan, values)

    def layout(self, values: jax.Array) -> jax.Array:
        """Another per-item ``(..., n)`` array, laid out like the labels (0 in empty slots)."""
        if self.item is None:
            return values
        return _layout(jnp.asarray(values), self.item)

    def per_item(self, values: jax.Array) -> jax.Array:
        """``(..., S, L)`` per-slot values back in the items' places, ``(..., n)``.

        Padding gets 0; a broken row gets NaN everywhere.
        """
        if self.item is None:
            return values
        values = _to_items(values, self.item, n=self.n)
        if self.broken is None:
            return values
        return jnp.where(self.broken[..., None], jnp.nan, values)

    def list_weights(self, weights: jax.Array | None) -> jax.Array | None:
        """Per-list loss weights, NaN for the lists of a broken row."""
        if self.broken is None:
            return weights
        ones = jnp.ones(self.broken.shape + self.scores.shape[-2:-1])
        weights = ones if weights is None else weights
        return jnp.where(self.broken[..., None], jnp.nan, weights)


def split(
    scores: jax.Array,
    labels: jax.Array,
    where: jax.Array | None,
    segments,
    *,
    max_segments,
    max_segment_size,
    caller: str,
    one_result: bool = False,
) -> LaidOutLists:
    """Lay the packed lists of validated ``(scores, labels, where)`` out by segment.

    Args:
      scores: ``(..., n)`` scores, already checked by ``_validation.check_lists``.
      labels: ``(..., n)`` labels, likewise.
      where: ``(..., n)`` boolean mask, or None.
      segments: ``(..., n)`` integer list ids, or None for one list per row.
      max_segments: The number of lists per row, or None (see the module
        docstring).
      max_segment_size: Room for the longest list, or None.
      caller: The public function's name, used in messages.
      one_result: Whether the caller reduces every list to one number (a loss
        with ``reduction="mean"`` or ``"sum"``). Traced ids then need no
        ``max_segments``: they may be any integers, are numbered densely, and
        the row is laid out as up to ``n`` lists of ``max_segment_size``
        (default ``n``) slots.

    Returns:
      The :class:`LaidOutLists` to hand to the kernel and to map its result back.

    Raises:
      InvalidParameterError: ``max_segments`` or ``max_segment_size`` is not
        None and not an int >= 1.
      ValueError: ``segments`` is not an integer array of the scores' shape;
        the sizes are given without ``segments``; ``max_segments`` is missing
        for traced ids and a result per list; on concrete ids, a real item's id is negative or not
        below ``max_segments``, or a list is longer than ``max_segment_size``.
    """
    max_segments = _check_size(max_segments, name="max_segments", caller=caller)
    max_segment_size = _check_size(max_segment_size, name="max_segment_size", caller=caller)
    if segments is None:
        if max_segments is not None or max_segment_size is not None:
            raise ValueError(
                f"{caller} got max_segments or max_segment_size without segments; "
                "they size packed lists and mean nothing without them."
            )
        return LaidOutLists(scores, labels, where)
    segments = _check_ids(segments, scores, caller=caller)
    n = scores.shape[-1]
    concrete = _validation.is_concrete(segments, where)
    if concrete:
        max_segments, max_segment_size = _concrete_sizes(
            segments, where, max_segments, max_segment_size, caller=caller
        )
    elif max_segments is None and one_result:
        # A scalar result has no per-list shape to size: any ids are numbered
        # 0, 1, ... in their order, and a row holds at most n lists.
        segments = _dense_ids(segments, where)
        max_segments = n
        max_segment_size = n if max_segment_size is None else min(max_segment_size, n)
    elif max_segments is None:
        raise ValueError(
            f"{caller} needs max_segments when the segment ids are traced (under jit "
            "or vmap): the number of lists per row sets the result's shape."
        )
    else:
        max_segment_size = n if max_segment_size is None else min(max_segment_size, n)
    if not concrete:
        # Same contract as the value checks (decision 0003): raise under
        # checkify, and otherwise NaN rather than a plausible number.
        valid = jnp.ones(segments.shape, bool) if where is None else where
        in_range = (segments >= 0) & (segments < max_segments)
        _validation.traced_check(
            ~jnp.any(valid & ~in_range), _out_of_range_message(caller, max_segments)
        )
    scores, labels, where, item, broken = _compact(
        scores,
        labels,
        where,
        segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    if concrete:
        broken = None
    else:
        _validation.traced_check(~jnp.any(broken), _overflow_message(caller, max_segment_size))
    return LaidOutLists(scores, labels, where, item, broken, n)
