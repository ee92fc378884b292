"""The rank and tie engine: every exact metric is a thin formula over it.

Sort one list by descending score. Equal scores form *tie blocks*. For each
item ``i`` the engine reports two counts:

* ``above[i]``: the number of real items with a strictly higher score;
* ``tied[i]``: the size of ``i``'s tie block, ``i`` included.

Under a uniformly random tie-break item ``i`` lands on each position
``above[i] .. above[i] + tied[i] - 1`` with probability ``1 / tied[i]``
(McSherry & Najork, 2008), so any metric that is a sum over positions of
``gain(label) * w(position)`` has the exact tie-averaged value
``sum_i gain_i * mean(w[above_i : above_i + tied_i])``. With
``ignore_ties=True`` the engine instead breaks ties by descending index and
reports ``above`` as the 0-based position and ``tied`` as 1.

Contract shared by every method:

* Padding (``valid == False``) takes no part: it is never counted in another
  item's ``above`` or ``tied``. A padding item itself gets ``above = n`` and
  ``tied = 1``; formulas mask it out.
* With a cut-off ``k``, counts are exact for every item whose block starts
  before ``k`` (``above < k``). An item whose block starts at or after ``k``
  gets some ``above >= k``; it is invisible to a metric truncated at ``k``.
* Scores reach the engine through :func:`jax.lax.stop_gradient`: the counts
  are integers and carry no gradient.

Four methods compute the counts; :func:`tie_blocks` picks one per shape and
backend. The choice and its measurements are recorded in
``docs/decisions/0004-rank-engine-algorithms.md``.

* ``"pairwise"``: O(n^2) comparisons, no sort; fastest for short lists.
* ``"topk"``: :func:`jax.lax.top_k` then O(n k) comparisons against the top
  values; for ``k`` much smaller than ``n``.
* ``"sort"``: one multi-operand :func:`jax.lax.sort`, block bounds by
  cumulative max/min, then a scatter back to item order. Used on GPU and TPU.
* ``"native"``: lodestar's compiled CPU kernel (:mod:`lodestar._native`), an
  XLA custom call, on CPU only, where XLA's sort is far slower; XLA's sort on
  any other platform the same program is lowered for (decision 0043).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple, overload

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _native

METHODS = ("auto", "pairwise", "topk", "sort", "native")

# Thresholds for method="auto"; measured in benchmarks/bench_engine.py and
# recorded in docs/decisions/0004-rank-engine-algorithms.md and 0012.
PAIRWISE_MAX_N = 512
TOPK_MAX_K = 128
# Top-k needs TOPK_MIN_N items and n >= ratio * k. How small k must be depends
# on how the k largest are found: the compiled kernel (CPU, ties
# averaged) is cheap, lax.top_k is not, and with it top-k wins below
# TOPK_ALWAYS_N items only when k is small against n.
TOPK_MIN_N = 80
TOPK_MIN_RATIO_NATIVE = 3
TOPK_MIN_RATIO = 16
TOPK_ALWAYS_N = 384
# lax.top_k's n * k comparisons lose to the compiled kernel's sort above this k.
TOPK_MAX_K_XLA = 64
# From this length on, the NDCG ideal orders the gains with one sort
# (_gains.descending_gains) instead of a second counting pass; up to 32 items
# the pass is cheaper (XLA's fast reductions, _CHUNK). Decisions 0004 and
# 0041 record the measurements.
ORDER_BY_SORT_MIN_N = 33
# XLA:CPU reduces a boolean comparison over a last axis of up to 32 elements
# much faster than over 33 or more, so comparisons are summed in slices of
# this width. Decision 0004 records the cliff (benchmarks/bench_engine.py).
_CHUNK = 32


class TieBlocks(NamedTuple):
    """Per-item tie-block counts; see the module docstring for the contract.

    Attributes:
      above: int32 ``(..., n)``, real items ranked strictly above each item.
      tied: int32 ``(..., n)``, the size of each item's tie block (>= 1).
    """

    above: jax.Array
    tied: jax.Array


def rankable(scores: jax.Array, *, merge_zeros: bool = True) -> jax.Array:
    """Scores in a dtype whose order all methods agree on, gradient stopped.

    Booleans become uint8 and half floats become float32; both conversions
    preserve order exactly. Negative zero becomes zero unless ``merge_zeros``
    is False, for code that only compares with ``==`` and ``>`` or sorts with
    NumPy, where -0.0 already equals 0.0 (it saves a copy of the batch).
    Integer scores keep their dtype: they are compared, never negated, so
    unsigned values cannot wrap around.
    """
    scores = lax.stop_gradient(scores)
    if scores.dtype == jnp.bool_:
        return scores.astype(jnp.uint8)
    if jnp.issubdtype(scores.dtype, jnp.floating):
        if jnp.finfo(scores.dtype).bits < 32:
            scores = scores.astype(jnp.float32)
        if merge_zeros:
            # -0.0 equals 0.0, but sorts below it in XLA's total order: make
            # the two one value so every method sees one tie.
            return jnp.where(scores == 0, jnp.zeros((), scores.dtype), scores)
    return scores


def choose_method(n: int, k: int | None, *, ignore_ties: bool = False) -> str:
    """The method ``"auto"`` resolves to for a list length, cut-off and tie rule.

    Decided at trace time; every method gives the same counts, so the choice
    only sets the speed.
    """
    if k is not None and k < n and k <= TOPK_MAX_K and n >= TOPK_MIN_N:
        # Averaged ties take the top values from the compiled kernel where it
        # applies; the descending-index tie-break needs lax.top_k's indices.
        if not ignore_ties and _native.applies():
            if n >= TOPK_MIN_RATIO_NATIVE * k:
                return "topk"
        elif k <= TOPK_MAX_K_XLA and (n > TOPK_ALWAYS_N or n >= TOPK_MIN_RATIO * k):
            return "topk"
    if n <= PAIRWISE_MAX_N:
        # The kernel counts short lists' averaged ties pairwise too, several
        # times faster than XLA's pairwise pass (decision 0043).
        if not ignore_ties and _native.applies():
            return "pairwise_or_native"
        return "pairwise"
    return "sort_or_native"


def exploited_cutoff(n: int, k: int | None, *, ignore_ties: bool = False) -> int | None:
    """``k`` if the automatic method makes use of it, else None.

    Only the top-k method needs the cut-off at trace time; every other method
    ranks whole lists, so callers can keep ``k`` out of the compilation key.
    """
    if k is not None and k < n and choose_method(n, k, ignore_ties=ignore_ties) == "topk":
        return k
    return None


def tie_blocks(
    scores: jax.Array,
    valid: jax.Array | None,
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    method: str = "auto",
) -> TieBlocks:
    """Compute per-item ``(above, tied)`` counts over the last axis.

    Args:
      scores: ``(..., n)`` scores; higher ranks first.
      valid: ``(..., n)`` boolean mask of real items, or None for all real.
      k: Only blocks starting before ``k`` need exact counts (None: all).
      ignore_ties: Break ties by descending index instead of averaging.
      method: One of :data:`METHODS`.

    Returns:
      A :class:`TieBlocks` of int32 arrays shaped like ``scores``.
    """
    scores = rankable(scores)
    n = scores.shape[-1]
    if valid is None:
        valid = jnp.ones(scores.shape, bool)
    if k is not None and k >= n:
        k = None  # a cut-off past the end cuts nothing
    if method == "auto":
        method = choose_method(n, k, ignore_ties=ignore_ties)
    if method == "topk" and k is None:
        method = "sort_or_native"
    if n == 0:
        empty = jnp.zeros(scores.shape, jnp.int32)
        return TieBlocks(empty, empty + 1)
    # XLA's method for each, the route on any platform but CPU.
    xla_methods = {"pairwise": _pairwise, "pairwise_or_native": _pairwise, "sort": xla_sort}
    xla_methods.update(native=xla_sort, sort_or_native=xla_sort)
    xla_methods["topk"] = functools.partial(_topk, k=k)
    if method not in xla_methods:
        raise ValueError(f"Unknown rank method {method!r}; expected one of {METHODS}.")
    xla_method = functools.partial(xla_methods[method], ignore_ties=ignore_ties)
    if method == "topk" and k is not None and not ignore_ties and _native.applies():
        kernel = functools.partial(_native.top_tie_blocks, k=k)
    elif method == "native" or (method.endswith("_or_native") and _native.applies()):
        kernel = functools.partial(_native.tie_blocks, ignore_ties=ignore_ties)
    else:
        return xla_method(scores, valid)
    return native_or(kernel, xla_method, scores, valid)


def _count(this, others, others_valid, relation, others_index=None) -> jax.Array:
    """``sum_j others_valid[j] & relation(others[j], this[i], index_j, i)`` per ``i``.

    ``this`` is ``(..., n)``; ``others``, ``others_valid`` and ``others_index``
    (the others' item indices, by default their positions) are ``(..., m)``.
    The sum runs over slices of ``_CHUNK`` columns (see ``_CHUNK``) inside a
    ``fori_loop``: unrolled, XLA keeps every slice's partial count alive at
    once, m / 32 buffers of the batch's size (decision 0011).
    """
    n, m = this.shape[-1], others.shape[-1]
    if others_index is None:
        others_index = jnp.arange(m)
    others_index = jnp.broadcast_to(others_index, others.shape)
    this_index = jnp.arange(n)[:, None]

    def add_slice(total, others, others_valid, others_index):
        hits = relation(
            others[..., None, :], this[..., :, None], others_index[..., None, :], this_index
        )
        hits = hits & others_valid[..., None, :]
        return total + jnp.sum(hits, axis=-1, dtype=jnp.int32)

    def add_chunk(chunk, total):
        def take(x):
            return lax.dynamic_slice_in_dim(x, chunk * _CHUNK, _CHUNK, axis=-1)

        return add_slice(total, take(others), take(others_valid), take(others_index))

    # zeros_like, not zeros: the loop's carry must have the counts' own type,
    # sharded like the lists and varying over the devices of a shard_map.
    total = jnp.zeros_like(this, dtype=jnp.int32)
    full = m // _CHUNK
    if full > 1:
        total = lax.fori_loop(0, full, add_chunk, total)
    elif full == 1:
        total = add_chunk(0, total)
    rest = slice(full * _CHUNK, m)
    if m > full * _CHUNK:
        total = add_slice(
            total, others[..., rest], others_valid[..., rest], others_index[..., rest]
        )
    return total


def _greater_or_later(other, this, other_index, this_index):
    return (other > this) | ((other == this) & (other_index > this_index))


def _greater(other, this, *_):
    return other > this


def _equal(other, this, *_):
    return other == this


def _pairwise(scores, valid, ignore_ties) -> TieBlocks:
    if ignore_ties:
        above = _count(scores, scores, valid, _greater_or_later)
        tied = jnp.ones_like(above)
    else:
        # Two boolean passes: on a quiet machine they beat one packed integer
        # pass carrying both counts (decision 0004, "Correction").
        above = _count(scores, scores, valid, _greater)
        tied = _count(scores, scores, valid, _equal)
        # max(., 1): a NaN score equals nothing, not even itself.
        tied = jnp.maximum(tied, 1)
    return _mask_padding(TieBlocks(above, tied), valid)


def lowest(dtype) -> jax.Array:
    """The smallest value of ``dtype``: -inf for floats, below every real score."""
    if jnp.issubdtype(dtype, jnp.floating):
        return jnp.array(-jnp.inf, dtype)
    return jnp.array(jnp.iinfo(dtype).min, dtype)


def _topk(scores, valid, k, ignore_ties) -> TieBlocks:
    masked = jnp.where(valid, scores, lowest(scores.dtype))
    if ignore_ties:
        # The descending-index tie-break needs the top items' indices.
        top_values, top_index = lax.top_k(masked, k)
        # Without the barrier XLA may fuse the consumers of top_k's outputs
        # into a full sort, which is what this path exists to avoid.
        top_values, top_index = lax.optimization_barrier((top_values, top_index))
    else:
        # Averaged ties need only the values: every item above the k-th value
        # is among them, and the block at the k-th value is counted below over
        # the whole list.
        top_values = largest_values(masked, k)
    threshold = top_values[..., k - 1 : k]
    above_threshold = scores > threshold
    at_threshold = (scores == threshold) & valid
    count_above = jnp.sum(top_values > threshold, axis=-1, keepdims=True, dtype=jnp.int32)

    in_top = jnp.ones(top_values.shape, bool)
    if ignore_ties:
        above_top = _count(scores, top_values, in_top, _greater_or_later, top_index)
        # Tied at the threshold: count the threshold items with a larger index.
        later_at_threshold = (
            jnp.flip(jnp.cumsum(jnp.flip(at_threshold, -1), axis=-1, dtype=jnp.int32), -1)
            - at_threshold
        )
        above_at = count_above + later_at_threshold
        tied_top = tied_at = 1
    else:
        above_top = _count(scores, top_values, in_top, _greater)
        tied_top = _count(scores, top_values, in_top, _equal)
        above_at = jnp.broadcast_to(count_above, scores.shape)
        tied_at = jnp.sum(at_threshold, axis=-1, keepdims=True, dtype=jnp.int32)
    above = jnp.where(above_threshold, above_top, jnp.where(at_threshold, above_at, k))
    tied = jnp.where(above_threshold, tied_top, jnp.where(at_threshold, tied_at, 1))
    return _mask_padding(TieBlocks(above, jnp.maximum(tied, 1)), valid)


def _descending_key(scores):
    if jnp.issubdtype(scores.dtype, jnp.floating):
        return -scores
    # Bitwise not reverses the order of signed and unsigned integers alike
    # without the overflow of negation.
    return jnp.invert(scores)


def _positions_like(x: jax.Array) -> jax.Array:
    """int32 positions along the last axis, shaped as ``x``, sharded and varying as it is.

    Inside a ``shard_map`` an iota alone varies over no mesh axis, and under
    explicit mesh axes it is not sharded: sorted beside ``x``, it must be both.
    """
    index = lax.broadcasted_iota(jnp.int32, x.shape, x.ndim - 1)
    return index + jnp.zeros_like(x, dtype=jnp.int32)


def xla_sort(scores, valid, ignore_ties) -> TieBlocks:
    n = scores.shape[-1]
    axis = scores.ndim - 1
    index = _positions_like(scores)
    padding_last = jnp.logical_not(valid).astype(jnp.int8)
    keys = [padding_last, _descending_key(scores)]
    if ignore_ties:
        keys.append(jnp.invert(index))
    *sorted_keys, order = lax.sort((*keys, index), dimension=axis, num_keys=len(keys))
    sorted_padding, sorted_scores = sorted_keys[0], sorted_keys[1]
    position = index
    if ignore_ties:
        above_sorted = position
        tied_sorted = jnp.ones_like(position)
    else:
        same = (sorted_scores[..., 1:] == sorted_scores[..., :-1]) & (
            sorted_padding[..., 1:] == sorted_padding[..., :-1]
        )
        start, end = _run_bounds(same, position)
        above_sorted, tied_sorted = start, end - start

    def unsort(values, order):
        return jnp.zeros_like(values).at[order].set(values, unique_indices=True)

    flat_order = order.reshape(-1, n)
    above = jax.vmap(unsort)(above_sorted.reshape(-1, n), flat_order).reshape(scores.shape)
    tied = jax.vmap(unsort)(tied_sorted.reshape(-1, n), flat_order).reshape(scores.shape)
    return _mask_padding(TieBlocks(above, tied), valid)


def native_or(kernel, xla_method, scores, valid) -> TieBlocks:
    """The counts from a compiled ``kernel`` on CPU, from ``xla_method`` elsewhere."""
    return _native.on_cpu(lambda *a: TieBlocks(*kernel(*a)), xla_method, scores, valid)


def descending_order(values: jax.Array, valid: jax.Array) -> jax.Array:
    """Indices that order each list's real values descending, padding last.

    The order among equal values is unspecified. On CPU, where the compiled
    kernels apply, this is their stable argsort; elsewhere XLA's. The indices
    carry no gradient.
    """
    # The key keeps the values' own float dtype: a float32 key would merge
    # float64 gains closer than float32 resolution and misorder them.
    values = lax.stop_gradient(values)
    if not jnp.issubdtype(values.dtype, jnp.floating):
        values = values.astype(jnp.float32)
    key = jnp.where(valid, -values, jnp.inf)
    return ascending_order(key)


def ascending_order(key: jax.Array) -> jax.Array:
    """int32 indices that sort each row of ``key`` ascending, stably, NaN last.

    The compiled kernel's argsort on CPU where it applies, XLA's stable sort
    elsewhere (and in the same program when lowered for other platforms too).
    """

    def xla(key):
        index = _positions_like(key)
        return lax.sort((key, index), dimension=key.ndim - 1, num_keys=1, is_stable=True)[1]

    if not _native.applies():
        return xla(key)
    return _native.on_cpu(_native.stable_argsort, xla, key)


def largest_values(values: jax.Array, k: int) -> jax.Array:
    """The ``k`` largest values of each list, descending: ``lax.top_k``'s values.

    On CPU, where the compiled kernels apply, one pass of their selection per
    row, which is much faster than :func:`jax.lax.top_k` (decisions 0012 and
    0043 record the timings). Values pass through ``stop_gradient``. Mask
    padding to the lowest value first.

    Args:
      values: ``(..., n)`` values, ``n >= k``.
      k: How many to return.

    Returns:
      ``(..., k)`` values in ``values``' dtype.
    """
    return _largest(values, k, count_kth=False)[0]


def _largest(values, k, *, count_kth) -> tuple[jax.Array, jax.Array | None]:
    """:func:`largest_values`, and how many values equal the k-th largest.

    Returns ``(top, kth_count)``; ``kth_count`` (int32 ``(...)``, 0 where the
    k-th is NaN) only with ``count_kth``, else None.
    """
    values = lax.stop_gradient(values)

    def xla(values):
        top = lax.top_k(values, k)[0]
        return top, jnp.sum(values == top[..., k - 1 :], axis=-1, dtype=jnp.int32)

    def native(values):
        return _native.largest(values, k)

    if _native.applies():
        top, count = _native.on_cpu(native, xla, values)
    else:
        top, count = xla(values)
    return top, count if count_kth else None


def _mask_padding(blocks: TieBlocks, valid) -> TieBlocks:
    n = valid.shape[-1]
    return TieBlocks(
        jnp.where(valid, blocks.above, n).astype(jnp.int32),
        jnp.where(valid, blocks.tied, 1).astype(jnp.int32),
    )


def at_positions(table: jax.Array, positions: jax.Array) -> jax.Array:
    """``table[positions]`` for a per-position table and per-item positions.

    The result is sharded like ``positions``: for explicitly sharded lists JAX
    cannot infer the sharding of a gather from a replicated table.
    """
    return table.at[positions].get(out_sharding=jax.typeof(positions).sharding)


def block_mean(cumulative_table: jax.Array, blocks: TieBlocks) -> jax.Array:
    """Each item's mean of a positional table over the positions its block spans.

    Args:
      cumulative_table: ``(n + 1,)`` prefix sums ``W`` of a positional table.
      blocks: Per-item counts from :func:`tie_blocks`.

    Returns:
      ``(W[above + tied] - W[above]) / tied`` per item, indices clipped to ``n``.
    """
    n = cumulative_table.shape[0] - 1
    start = jnp.minimum(blocks.above, n)
    stop = jnp.minimum(blocks.above + blocks.tied, n)
    span = at_positions(cumulative_table, stop) - at_positions(cumulative_table, start)
    return span / blocks.tied.astype(span.dtype)


@overload
def block_weighted_sum(
    scores: jax.Array,
    values: jax.Array,
    valid: jax.Array | None,
    cumulative_table: jax.Array,
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    method: str = "auto",
    ideal: None = None,
) -> jax.Array: ...


@overload
def block_weighted_sum(
    scores: jax.Array,
    values: jax.Array,
    valid: jax.Array | None,
    cumulative_table: jax.Array,
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    method: str = "auto",
    ideal: Callable[[jax.Array], jax.Array],
) -> tuple[jax.Array, jax.Array]: ...


def block_weighted_sum(
    scores: jax.Array,
    values: jax.Array,
    valid: jax.Array | None,
    cumulative_table: jax.Array,
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    method: str = "auto",
    ideal: Callable[[jax.Array], jax.Array] | None = None,
) -> jax.Array | tuple[jax.Array, jax.Array]:
    """``sum_i values[i] * m[i]`` per list, ``m[i]`` the block mean of a positional table.

    ``m[i]`` is item ``i``'s mean of the table over the positions its block
    spans (:func:`block_mean` of :func:`tie_blocks`), so the sum is the exact
    tie-averaged value of ``sum_p table[p] * values[item at p]``: DCG with
    gains as values and discounts as the table, the expected number of
    relevant items in the top ``k`` with indicators.

    Where the ``topk`` method averages ties, no per-item counts are formed:
    every block starting before ``k`` holds one of the ``k`` largest values,
    so the blocks above the k-th value are read off the sorted top values, and
    one pass over the list sums the values of the items in them and of the
    items at the k-th value, whose block may continue past the top ``k``.
    Decision 0012 records what this saves for DCG and NDCG with a cut-off.

    Args:
      scores: ``(..., n)`` scores; higher ranks first.
      values: ``(..., n)`` per-item numbers to weight.
      valid: ``(..., n)`` boolean mask of real items, or None for all real.
      cumulative_table: ``(n + 1,)`` prefix sums of a positional table that is
        zero from position ``k`` on (so ``W[p] = W[k]`` for ``p >= k``).
      k: Cut-off; only blocks starting before it count.
      ignore_ties: Break ties by descending index instead of averaging.
      method: One of :data:`METHODS`.
      ideal: Asks for the ideal's sum as well: the same sum over each list
        ranked by its own values, negative values counting as 0 (with gains
        and discounts, the ideal DCG). Where the compiled kernels apply, the
        pass over each row that ranks it gives the ideal too; elsewhere, and
        for derivatives (the kernels have none), this callable computes it
        from the values it is given.

    Returns:
      ``(...)`` sums in the dtype of ``values * cumulative_table``; padding
      takes no part. With ``ideal``, the pair (sums, ideal sums).
    """
    n = scores.shape[-1]
    if valid is None:
        valid = jnp.ones(scores.shape, bool)
    if k is not None and k >= n:
        k = None
    if method == "auto":
        method = choose_method(n, k, ignore_ties=ignore_ties)
    total_dtype = jnp.result_type(values, cumulative_table)
    if (
        method in ("topk", "sort_or_native", "pairwise_or_native", "native")
        and not ignore_ties
        and n > 0
        and cumulative_table.ndim == 1
        and total_dtype in (jnp.float32, jnp.float64)
        and _native.applies()
    ):
        # The compiled kernel ranks and sums in one pass over each row (the
        # ideal too, if asked for); XLA's route on any other platform the
        # program is lowered for. The kernel merges -0.0 into 0.0 itself.
        def native(scores, values, valid, table):
            scores = rankable(scores, merge_zeros=False)
            if ideal is None:
                return _native.weighted_sum(scores, values, valid, table, k or 0)
            return _native.weighted_sum_and_ideal(scores, values, valid, table, k or 0)

        if method == "pairwise_or_native":
            xla_method = "pairwise"
        else:
            xla_method = "sort" if k is None else "topk"

        def xla_total(scores, values, valid, table):
            total = _xla_weighted_sum(scores, values, valid, table, k, False, xla_method)
            return total.astype(total_dtype)

        def xla(scores, values, valid, table):
            total = xla_total(scores, values, valid, table)
            return total if ideal is None else (total, ideal(values).astype(total_dtype))

        def xla_of_operands(scores, values, valid, table):
            # XLA's route from the operands alone (a derivative rule may close
            # over no traced value, as `ideal` may): the ideal as the positive
            # values ranked by themselves, its ties averaged like the list's.
            total = xla_total(scores, values, valid, table)
            if ideal is None:
                return total
            positive = jnp.maximum(values, 0)
            return total, xla_total(positive, positive, valid, table)

        @jax.custom_jvp
        def either(scores, values, valid, table):
            return _native.on_cpu(native, xla, scores, values, valid, table)

        @either.defjvp
        def either_jvp(primals, tangents):
            # The kernels carry no derivatives: XLA's route gives them, in the
            # values and the table (the scores' counts have none).
            sums = _native.on_cpu(native, xla_of_operands, *primals)
            return sums, jax.jvp(xla_of_operands, primals, tangents)[1]

        return either(
            scores, values.astype(total_dtype), valid, cumulative_table.astype(total_dtype)
        )
    total = _xla_weighted_sum(scores, values, valid, cumulative_table, k, ignore_ties, method)
    return total if ideal is None else (total, ideal(values))


def _xla_weighted_sum(scores, values, valid, cumulative_table, k, ignore_ties, method):
    """:func:`block_weighted_sum` through per-item counts, or XLA's top-k where it applies."""
    if method == "topk" and k is not None and not ignore_ties:
        scores = rankable(scores, merge_zeros=False)
        return _topk_weighted_sum(scores, values, valid, cumulative_table, k)
    blocks = tie_blocks(scores, valid, k=k, ignore_ties=ignore_ties, method=method)
    means = block_mean(cumulative_table, blocks)
    return jnp.sum(jnp.where(valid, values * means, 0), axis=-1)


class Ranking:
    """One batch of lists as the engine sees it: counts computed on demand, and once.

    A kernel builds one inside its trace and hands it to every measure it
    evaluates; the measures ask for what they need (:attr:`blocks`,
    :meth:`weighted_sum`, :meth:`rank_order`) and share it, so evaluating
    several measures of one run costs one ranking. A weighted sum asked for
    before the blocks may take the top-k path, which forms no per-item counts.

    Args:
      scores: ``(..., n)`` scores; higher ranks first.
      valid: ``(..., n)`` boolean mask of real items.
      k: The static cut-off the engine may exploit (top-k), or None to rank
        whole lists; see :func:`exploited_cutoff`.
      ignore_ties: Break ties by descending index instead of averaging.
      method: One of :data:`METHODS`.
      blocks: The counts, if already computed (for the whole lists); the
        command line computes them outside its jitted kernel with
        :func:`lodestar._host_ranking.host_tie_blocks` (decision 0018).
      order: The rank order (:meth:`rank_order`), if already computed.
    """

    def __init__(
        self, scores, valid, *, k=None, ignore_ties=False, method="auto", blocks=None, order=None
    ):
        self.scores = scores
        self.valid = valid
        self.n = scores.shape[-1]
        self.k = None if k is None or k >= self.n else k
        self.ignore_ties = ignore_ties
        self.method = method
        self._blocks: TieBlocks | None = None if blocks is None else TieBlocks(*blocks)
        self._order: jax.Array | None = order

    @property
    def counted(self) -> bool:
        """Whether :attr:`blocks` are formed already (given, or asked for before)."""
        return self._blocks is not None

    @property
    def blocks(self) -> TieBlocks:
        """Per-item ``(above, tied)`` counts (:func:`tie_blocks`)."""
        if self._blocks is None:
            self._blocks = tie_blocks(
                self.scores, self.valid, k=self.k, ignore_ties=self.ignore_ties, method=self.method
            )
        return self._blocks

    @overload
    def weighted_sum(self, values, cumulative_table, *, ideal: None = None) -> jax.Array: ...

    @overload
    def weighted_sum(
        self, values, cumulative_table, *, ideal: Callable[[jax.Array], jax.Array]
    ) -> tuple[jax.Array, jax.Array]: ...

    def weighted_sum(
        self, values, cumulative_table, *, ideal: Callable[[jax.Array], jax.Array] | None = None
    ) -> jax.Array | tuple[jax.Array, jax.Array]:
        """:func:`block_weighted_sum` of ``values``, reusing the blocks if already counted.

        With ``ideal``, also the ideal's sum (see :func:`block_weighted_sum`).
        """
        if self._blocks is None:
            return block_weighted_sum(
                self.scores,
                values,
                self.valid,
                cumulative_table,
                k=self.k,
                ignore_ties=self.ignore_ties,
                method=self.method,
                ideal=ideal,
            )
        means = block_mean(cumulative_table, self._blocks)
        total = jnp.sum(jnp.where(self.valid, values * means, 0), axis=-1)
        return total if ideal is None else (total, ideal(values))

    def rank_order(self) -> jax.Array:
        """Item indices in rank order, each tie block contiguous, padding last.

        The order inside a block is unspecified: only what is symmetric in a
        block's items may depend on it.
        """
        if self._order is None:
            self._order = block_order(self.blocks, self.valid)
        return self._order


def block_order(blocks: TieBlocks, valid: jax.Array) -> jax.Array:
    """Item indices in rank order, blocks contiguous, padding last (`Ranking.rank_order`)."""
    n = valid.shape[-1]
    # Sorted as whole numbers, as _host_ranking.host_rank_order does: the
    # kernel's sort takes one pass over keys in [0, n + 1], several over floats.
    key = jnp.where(valid, blocks.above, n + 1).astype(jnp.int32)
    return ascending_order(key)


def _topk_weighted_sum(scores, values, valid, cumulative_table, k):
    # Padding takes the lowest value, so it can only meet the k-th value.
    floor = lowest(scores.dtype)
    masked = jnp.where(valid, scores, floor)
    top, tied = _largest(masked, k, count_kth=True)  # descending
    assert tied is not None  # asked for with count_kth
    threshold = top[..., k - 1 :]
    # The k-th value's block may continue past the top k; its size was counted
    # over the whole list, padding included if it sits at the lowest value.
    padding = jnp.sum(~valid, axis=-1, dtype=jnp.int32)
    tied = jnp.where(threshold[..., 0] == floor, tied - padding, tied)
    # In the sorted top values a block is a run of equal values; the last
    # run's size is the count above.
    start, stop = _runs(top)
    size = jnp.where(top == threshold, tied[..., None], stop - start)
    means = block_mean(cumulative_table, TieBlocks(start, jnp.maximum(size, 1)))
    # Every slot of a run carries its block's mean, so any match will do; an
    # item matching no slot ranks at k or later.
    item_means = jnp.zeros(scores.shape, means.dtype)
    for j in range(k):
        item_means = jnp.where(masked == top[..., j : j + 1], means[..., j : j + 1], item_means)
    return jnp.sum(jnp.where(valid, values * item_means, 0), axis=-1)


def _runs(top: jax.Array) -> tuple[jax.Array, jax.Array]:
    """First and past-last slot of each slot's run of equal values in sorted rows.

    A run's first slot is the count of values above it and its past-last slot
    the count of values at or above it. Up to 32 slots, counting them pairwise
    is faster than the running max and min XLA:CPU makes of ``cummax`` and
    ``cummin`` (decision 0012 has the measurement); beyond, the counts would
    cost k^2.
    """
    k = top.shape[-1]
    if k <= _CHUNK:
        start = jnp.sum(top[..., None, :] > top[..., :, None], axis=-1, dtype=jnp.int32)
        stop = jnp.sum(top[..., None, :] >= top[..., :, None], axis=-1, dtype=jnp.int32)
        return start, stop
    slot = lax.broadcasted_iota(jnp.int32, top.shape, top.ndim - 1)
    return _run_bounds(top[..., 1:] == top[..., :-1], slot)


def _run_bounds(same: jax.Array, position: jax.Array) -> tuple[jax.Array, jax.Array]:
    """First and past-last position of each position's run along the last axis.

    ``same[..., j]`` says whether positions ``j`` and ``j + 1`` share a run;
    ``position`` is the iota of the last axis. A running max of the runs'
    first positions and a reverse running min of their past-last positions
    give both bounds at every position.
    """
    axis = position.ndim - 1
    edge = jnp.ones_like(position[..., :1], dtype=bool)  # sharded like the lists
    first = jnp.concatenate([edge, ~same], axis=-1)
    last = jnp.concatenate([~same, edge], axis=-1)
    start = lax.cummax(jnp.where(first, position, 0), axis=axis)
    stop = lax.cummin(jnp.where(last, position + 1, position.shape[-1]), axis=axis, reverse=True)
    return start, stop


def block_totals(values: jax.Array, blocks: TieBlocks) -> tuple[jax.Array, jax.Array]:
    """Per item, the sum of ``values`` over the blocks above its own, and over its own.

    A block is named by its first position ``above``, so one scatter-add of
    ``values`` into ``n + 1`` bins and one prefix sum give both totals in O(n)
    per list, with no pairwise pass. Padding sits in bin ``n`` (after every real
    block); give it a value of 0 or mask it out. With a cut-off, the totals are
    exact for every item whose block starts before ``k``.

    Args:
      values: ``(..., n)`` numbers to total, e.g. relevance indicators.
      blocks: Per-item counts from :func:`tie_blocks`.

    Returns:
      ``(above, within)``, each shaped and typed like ``values``.
    """
    n = values.shape[-1]
    if values.dtype in (jnp.int32, jnp.float32, jnp.float64) and n > 0 and _native.applies():
        # The kernel's three passes over each row beat XLA's scatter-add
        # several times over (decision 0043).
        above = jnp.broadcast_to(blocks.above, values.shape).astype(jnp.int32)
        if jnp.issubdtype(values.dtype, jnp.floating):
            return _linear_block_totals(values, above)
        return _native.on_cpu(_native.block_totals, _xla_block_totals, values, above)
    return _xla_block_totals(values, blocks.above)


@jax.custom_jvp
def _linear_block_totals(values, above):
    """The kernel's totals; their derivative is the same linear map of the tangents, XLA's.

    XLA's route of the map, which JAX can transpose for reverse mode (the
    kernel it cannot).
    """
    return _native.on_cpu(_native.block_totals, _xla_block_totals, values, above)


@_linear_block_totals.defjvp
def _linear_block_totals_jvp(primals, tangents):
    values, above = primals
    return _linear_block_totals(values, above), _xla_block_totals(tangents[0], above)


def _xla_block_totals(values, above):
    n = values.shape[-1]
    bins = jnp.minimum(above, n)

    def per_list(values, bins):
        return jnp.zeros(n + 1, values.dtype).at[bins].add(values)

    flat = jax.vmap(per_list)(values.reshape(-1, n), bins.reshape(-1, n))
    totals = flat.reshape(values.shape[:-1] + (n + 1,))
    earlier = jnp.cumsum(totals, axis=-1) - totals
    above = jnp.take_along_axis(earlier, bins, axis=-1)
    within = jnp.take_along_axis(totals, bins, axis=-1)
    return above, within


def block_position_sum(blocks: TieBlocks, k, term: Callable[[jax.Array], jax.Array], dtype):
    """Per item, ``sum_u term(u)`` over the offsets ``u`` of its block's positions before ``k``.

    Item ``i``'s block spans positions ``above_i + u`` for ``u = 0 .. tied_i - 1``;
    only those with ``above_i + u < k`` are summed. ``term(u)`` receives the
    offset as a scalar of ``dtype`` and returns a per-item ``(..., n)`` array. The
    loop runs once per offset of the longest block starting before ``k`` (a
    traced trip count), so a tie-free list costs one elementwise pass and a
    list of ``m`` tied items ``m`` passes: O(n * m), not O(n^2), and summed
    term by term, never as a difference of prefix sums.

    It is a :func:`jax.lax.while_loop`: reverse-mode differentiation through
    ``term`` is not available (the engine's counts carry none anyway).

    Returns:
      ``(..., n)`` sums of ``dtype``; 0 for padding.
    """
    counted = jnp.clip(k - blocks.above, 0, blocks.tied)
    steps = jnp.max(counted, initial=0)

    def add_offset(u, total):
        return total + jnp.where(u < counted, term(jnp.asarray(u, dtype)), 0)

    # Offset 0 outside the loop: the carry then has the type of the terms
    # (sharded, and varying inside a shard_map), which the counts from the compiled
    # kernel need not have.
    first = add_offset(0, jnp.zeros((), dtype))
    return lax.fori_loop(1, steps, add_offset, first)
