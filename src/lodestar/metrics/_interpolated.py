"""Interpolated precision at recall levels (trec_eval's ``iprec_at_recall``, ``11pt_avg``).

The interpolated precision at the ``c``-th relevant item is the largest
precision at any rank from there to the cut, a maximum over the ranking that
does not average linearly over tie orders. Its expectation is computed from
its distribution: ``E[IP] = D + integral over t >= D of (1 - P(IP <= t))``,
where ``D`` is the part that no tie order changes, and ``P(IP <= t)`` is a
product over tie blocks of the probability that the block's uniformly random
pattern of relevant and other items stays under the line of slope ``t``
(a lattice-path count, done as a dynamic programme over the block's offsets).
The step function ``P(IP <= t)`` only moves at the finitely many precisions
``j / i`` a block can reach, so walking them gives the exact value; where
there are too many, a fixed grid of thresholds brackets it within
``1 / (2 * GRID)``. Decision 0017 has the derivation.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _ranking, _validation
from lodestar.metrics import _kernel

ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""trec_eval's default recall levels for ``iprec_at_recall`` and ``11pt_avg``."""

EXACT_LIMIT = 128
"""A list is walked exactly when its tied blocks reach at most this many
precisions above ``D`` (counted with repeats); else the grid brackets it."""

GRID = 2048
"""The grid's thresholds are ``q / GRID``: the bracketed value is within
``1 / (2 * GRID)`` (about 2.4e-4) of the exact expectation."""

GRID_CHUNK = 16
"""Grid thresholds evaluated together in one pass over the blocks' offsets."""

TILE = 64
"""Packed lattice slots updated together in one step of the programme."""


def _wide():
    """The integer type for products of two positions: int64 with x64, else int32."""
    return jnp.int64 if jax.config.read("jax_enable_x64") else jnp.int32


def _best_fraction(num, den, keep, *, largest):
    """The largest (or smallest) fraction ``num / den`` among ``keep``, per list.

    Compared exactly by cross-multiplication. None kept: ``0 / 1`` for the
    largest, ``1 / 0`` (infinity) for the smallest.
    """
    wide = num.dtype
    none = (
        (jnp.array(0, wide), jnp.array(1, wide))
        if largest
        else (
            jnp.array(1, wide),
            jnp.array(0, wide),
        )
    )
    num = jnp.where(keep, num, none[0])
    den = jnp.where(keep, den, none[1])

    def pick(x, y):
        (n1, d1), (n2, d2) = x, y
        better = n1 * d2 > n2 * d1 if largest else n1 * d2 < n2 * d1
        return jnp.where(better, n1, n2), jnp.where(better, d1, d2)

    return lax.reduce((num, den), none, pick, (num.ndim - 1,))


def _lround(x):
    """C's ``lround`` for ``x >= 0``: the nearest whole number, halves away from zero."""
    whole = jnp.floor(x)
    return whole + (x - whole >= 0.5)


def _scatter_last(values, targets, size):
    """``(..., size)``: ``values`` ``(..., n)`` written at ``targets``; -1 elsewhere.

    A target of ``size`` or more is dropped.
    """
    shape = values.shape
    flat_values = values.reshape(-1, shape[-1])
    flat_targets = targets.reshape(-1, shape[-1])

    def one(v, t):
        return jnp.full(size, -1, v.dtype).at[t].set(v, mode="drop")

    return jax.vmap(one)(flat_values, flat_targets).reshape(shape[:-1] + (size,))


def _per_block_sums(values, bins, n):
    """``(..., n + 1)`` sums of ``values`` ``(..., n)`` into ``bins``."""
    shape = values.shape
    flat_values = values.reshape(-1, n)
    flat_bins = jnp.broadcast_to(bins, shape).reshape(-1, n)

    def one(v, b):
        return jnp.zeros(n + 1, v.dtype).at[b].add(v)

    return jax.vmap(one)(flat_values, flat_bins).reshape(shape[:-1] + (n + 1,))


class _Blocks:
    """Each rank position's tie block, in rank order.

    ``start`` (``a``), ``size`` (``m``), ``rel`` (``r``, relevant items in the
    block), ``rel_above`` (``A``), the 1-based ``position`` (``i``) and
    ``offset`` in the block (``u``, from 1).
    """

    def __init__(self, lists: _kernel.RankedLists):
        wide = _wide()
        n = lists.n
        blocks = lists.ranking.blocks
        relevant = lists.relevant()
        above_rel, in_rel = _ranking.block_totals(relevant.astype(jnp.int32), blocks)
        order = lists.ranking.rank_order()

        def ranked(x):
            return jnp.take_along_axis(x, order, axis=-1).astype(wide)

        self.n = n
        self.valid = jnp.take_along_axis(lists.valid, order, axis=-1)
        self.start = jnp.minimum(ranked(blocks.above), n)
        self.size = ranked(blocks.tied)
        self.rel = ranked(in_rel)
        self.rel_above = ranked(above_rel)
        self.position = jnp.arange(1, n + 1, dtype=wide)
        self.offset = self.position - self.start
        self.real = jnp.sum(lists.valid, axis=-1).astype(wide)


class _Level:
    """One recall level's constants per list and per rank position."""

    def __init__(self, b: _Blocks, cut, counted, dtype):
        self.dtype = dtype
        self.counted = counted[..., None]  # c' = max(c, 1)
        self.cut = cut[..., None]  # N
        a, m, r, big_a, u, i = b.start, b.size, b.rel, b.rel_above, b.offset, b.position
        self.visible = b.valid & (i <= self.cut)
        self.last = jnp.clip(self.cut - a, 0, m)  # L: the block's offsets before the cut
        # Blocks whose pattern of relevant items is random.
        self.random = b.valid & (r > 0) & (r < m) & (a < self.cut)
        # Lattice points (u, h) of this offset: h relevant items among the first u.
        self.low = jnp.maximum(jnp.maximum(1, self.counted - big_a), r - (m - u))
        self.high = jnp.minimum(u, r)
        self.points = self.random & self.visible & (self.low <= self.high)
        # D: the largest precision no tie order changes.
        end = b.valid & (u == m) & (a + m <= self.cut) & (big_a + r >= self.counted)
        all_relevant = self.visible & (r == m) & (big_a + u >= self.counted)
        num = jnp.where(all_relevant, big_a + u, big_a + r)
        den = jnp.where(all_relevant, i, a + m)
        self.floor_num, self.floor_den = _best_fraction(num, den, end | all_relevant, largest=True)
        self.b = b

    def above_floor(self):
        """Per position, the lattice points whose precision exceeds ``D``."""
        b = self.b
        first = (self.floor_num[..., None] * b.position) // self.floor_den[..., None] + 1
        low = jnp.maximum(self.low, first - b.rel_above)
        return jnp.where(self.points, jnp.maximum(self.high - low + 1, 0), 0)

    def next_candidate(self, num, den):
        """The smallest precision a random block reaches above ``num / den``, per list."""
        b = self.b
        j = jnp.maximum(b.rel_above + self.low, (num[..., None] * b.position) // den[..., None] + 1)
        keep = self.points & (j <= b.rel_above + self.high)
        return _best_fraction(j, jnp.broadcast_to(b.position, j.shape), keep, largest=False)


class _Lattice:
    """The random blocks' lattice states, packed: block ``B``'s ``h`` at slot ``s_B + h``.

    A block of ``m`` items holding ``r`` relevant ones has ``r + 1`` states
    (``h`` relevant items so far), so the packed states of a list fill
    ``S = sum_B (r_B + 1)`` slots, fewer than its ``m``-slot blocks whenever
    they are mostly non-relevant. Each step of the programme places one more
    item of every block and visits only the tiles of ``TILE`` slots up to the
    longest ``S`` of the batch: ``O(m r)`` per threshold for one block, where
    a state per rank position (every block's ``h`` at its start ``a + h``)
    costs ``O(m n)``.
    """

    def __init__(self, level: _Level, tile: int):
        self.level = level
        b = level.b
        n = b.n
        wide = b.start.dtype
        starts = level.random & (b.offset == 1)
        states = jnp.where(starts, b.rel + 1, 0)
        first_slot = jnp.cumsum(states, axis=-1) - states
        self.used = jnp.sum(states, axis=-1)  # S per list
        self.tile = min(tile, n)
        self.tiles = -(-n // self.tile)
        slots = self.tiles * self.tile
        # The rank position of each packed slot's block: scattered at the
        # block's first slot, carried forward to its other slots.
        owner = jnp.where(starts, jnp.arange(n, dtype=wide), -1)
        target = jnp.where(starts, first_slot, slots)
        mark = _scatter_last(owner, target, slots)
        owner = lax.cummax(mark, axis=mark.ndim - 1)
        slot = jnp.arange(slots, dtype=wide)
        self.active = (slot < self.used[..., None]) & (owner >= 0)
        owner = jnp.maximum(owner, 0)

        def packed(x):
            return jnp.take_along_axis(x, owner, axis=-1)

        self.h = slot - packed(first_slot)
        self.start, self.size, self.rel = packed(b.start), packed(b.size), packed(b.rel)
        self.rel_above, self.last = packed(b.rel_above), packed(level.last)
        self.block_start = self.active & (self.h == 0)
        self.first_slot = packed(first_slot)

    def below(self, num, den):
        """``P(IP <= num / den)`` per threshold: ``num``, ``den`` are ``(..., T)``."""
        level = self.level
        b = level.b
        dtype = level.dtype
        tile = self.tile
        # Offsets past the last where some point of a block can exceed the
        # threshold are free; the programme stops there.
        top = b.rel_above[..., None, :] + jnp.minimum(b.offset, b.rel)[..., None, :]
        binds = (
            level.points[..., None, :]
            & (top >= level.counted[..., None, :])
            & (top * den[..., :, None] > num[..., :, None] * b.position[..., None, :])
        )
        steps = jnp.max(jnp.where(binds, b.offset[..., None, :], 0), initial=0)
        tiles = -(-jnp.max(self.used, initial=0) // tile)
        counted = level.counted
        num, den = num[..., :, None], den[..., :, None]
        # One spare slot in front: the shifted read of the first tile sees 0.
        mass = jnp.where(self.active & (self.h == 0), 1, 0).astype(dtype)
        mass = jnp.broadcast_to(mass[..., None, :], num.shape[:-1] + mass.shape[-1:])
        mass = jnp.concatenate([jnp.zeros_like(mass[..., :1]), mass], axis=-1)
        fields = (self.h, self.start, self.size, self.rel, self.rel_above, self.last)
        fields = tuple(jnp.broadcast_to(f, self.active.shape) for f in fields)

        def window(x, index, width):
            return lax.dynamic_slice_in_dim(x, index, width, axis=x.ndim - 1)

        def add_item(u, mass):
            def one_tile(j, mass):
                # Tiles run from the last down, so each reads its left
                # neighbour's slot before that neighbour is updated.
                t = tiles - 1 - j
                begin = t * tile
                h, a, m, r, big_a, last = (window(f, begin, tile)[..., None, :] for f in fields)
                old = window(mass, begin, tile + 1)
                current, shifted = old[..., 1:], old[..., :-1]
                hf, mf, rf = h.astype(dtype), m.astype(dtype), r.astype(dtype)
                uf = u.astype(dtype)
                left = jnp.maximum(mf - uf, 1)
                shifted = jnp.where(h >= 1, shifted, 0)
                new = current * (mf - uf - rf + hf) / left + shifted * (rf - hf + 1) / left
                position = a + u + 1
                kill = (h >= 1) & (big_a + h >= counted[..., None]) & (u + 1 <= last)
                kill = kill & ((big_a + h) * den > num * position)
                new = jnp.where(kill, 0, new)
                new = jnp.where((h <= r) & (u < last), new, current)
                return lax.dynamic_update_slice_in_dim(mass, new, begin + 1, axis=mass.ndim - 1)

            return lax.fori_loop(jnp.zeros((), tiles.dtype), tiles, one_tile, mass)

        mass = lax.fori_loop(jnp.zeros((), steps.dtype), steps, add_item, mass)[..., 1:]
        mass = jnp.where(self.active[..., None, :], mass, 0)
        slots = mass.shape[-1]
        sums = _per_block_sums(
            mass, jnp.broadcast_to(self.first_slot[..., None, :], mass.shape), slots
        )[..., :slots]
        return jnp.prod(jnp.where(self.block_start[..., None, :], sums, 1), axis=-1)


def _expected(lists: _kernel.RankedLists, k, level, *, exact_limit, grid, chunk, tile):
    """``E[IP]`` at one recall level per list, exact or within ``1 / (2 grid)``.

    Each round evaluates ``P(IP <= t)`` at ``chunk`` thresholds in one pass
    over the blocks' offsets: the next precisions the blocks reach (exact), or
    the next grid points ``q / grid`` (bracketed). The first round starts at
    ``D`` itself. Between consecutive thresholds ``t' < t`` the exact walk adds
    ``(t - t') (1 - P(IP <= t'))``, the grid the trapezoid
    ``(t - t') (1 - (P(IP <= t') + P(IP <= t)) / 2)``.
    """
    dtype, wide = lists.dtype, _wide()
    b = _Blocks(lists)
    total = lists.relevant_total(lists.relevant())
    exact_type = jnp.float64 if jax.config.read("jax_enable_x64") else jnp.float32
    cutoff = _lround(jnp.asarray(level, exact_type) * total.astype(exact_type))
    counted = jnp.maximum(jnp.minimum(cutoff, b.n + 1), 1).astype(wide)
    cut = jnp.minimum(jnp.asarray(k, wide), b.real)
    lv = _Level(b, cut, counted, dtype)
    lattice = _Lattice(lv, tile)
    floor_num, floor_den = lv.floor_num, lv.floor_den
    floor = floor_num.astype(dtype) / floor_den.astype(dtype)
    if lists.ranking.ignore_ties:
        return floor  # every block is one item: nothing is random
    exact = jnp.sum(lv.above_floor(), axis=-1) <= exact_limit
    # The grid: q / grid for q from just above D to the first point at or
    # above the largest precision a block reaches (P(IP <= t) = 1 from there).
    first = (floor_num * grid) // floor_den + 1
    top_num, top_den = _best_fraction(
        b.rel_above + lv.high, jnp.broadcast_to(b.position, lv.high.shape), lv.points, largest=True
    )
    final = jnp.minimum(-((-top_num * grid) // top_den), grid)
    half = jnp.where(exact, 0, 0.5).astype(dtype)[..., None]

    def thresholds(num, den, first_round, done):
        """The round's ``chunk`` next precisions after ``num / den`` (from it on the first)."""

        def advance(carry, j):
            num, den, ended = carry
            next_num, next_den = lv.next_candidate(num, den)
            stay = first_round & (j == 0)
            ended = ended | (~stay & (next_den == 0))
            move = ~stay & ~ended
            num = jnp.where(move, next_num, num)
            den = jnp.where(move, next_den, den)
            return (num, den, ended), (num, den)

        steps = jnp.arange(chunk, dtype=wide)
        (_, _, ended), (nums, dens) = lax.scan(advance, (num, den, done | ~exact), steps)
        return jnp.moveaxis(nums, 0, -1), jnp.moveaxis(dens, 0, -1), ended

    def more(state):
        return jnp.any(~state[-1])

    def round_(state):
        num, den, below, area, index, done = state
        # Exact lists: from D on the first round, then the next precisions.
        first_round = index == 0
        exact_num, exact_den, ended = thresholds(num, den, first_round, done)
        # Grid lists: D on the first round, then q / grid up to ``final``.
        q = first[..., None] + index * chunk + jnp.arange(chunk, dtype=wide) - 1
        q = jnp.minimum(q, final[..., None])
        grid_num = jnp.where(q < first[..., None], floor_num[..., None], q)
        grid_den = jnp.where(q < first[..., None], floor_den[..., None], grid)
        t_num = jnp.where(exact[..., None], exact_num, grid_num)
        t_den = jnp.where(exact[..., None], exact_den, grid_den)
        now = lattice.below(t_num, t_den)
        t = t_num.astype(dtype) / t_den.astype(dtype)
        left_t = jnp.concatenate(
            [(num.astype(dtype) / den.astype(dtype))[..., None], t[..., :-1]], -1
        )
        left = jnp.concatenate([below[..., None], now[..., :-1]], -1)
        pieces = (t - left_t) * (1 - left - half * (now - left))
        area = area + jnp.where(done, 0, jnp.sum(pieces, axis=-1))
        finished = jnp.where(exact, ended, q[..., -1] >= final)
        return (
            jnp.where(done, num, t_num[..., -1]),
            jnp.where(done, den, t_den[..., -1]),
            jnp.where(done, below, now[..., -1]),
            area,
            index + 1,
            done | finished,
        )

    zero = jnp.zeros_like(floor)
    index = jnp.zeros((), wide)
    state = (floor_num, floor_den, zero, zero, index, jnp.zeros_like(floor, dtype=bool))
    area = lax.while_loop(more, round_, state)[3]
    return floor + area


def _interpolated_precision(
    lists: _kernel.RankedLists,
    k,
    *,
    recall,
    exact_limit=EXACT_LIMIT,
    grid=GRID,
    chunk=GRID_CHUNK,
    tile=TILE,
):
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], lists.dtype)
    return _expected(lists, k, recall, exact_limit=exact_limit, grid=grid, chunk=chunk, tile=tile)


def _eleven_point_average(lists: _kernel.RankedLists, k, *, recall, **engine):
    """The mean of :func:`_interpolated_precision` over the levels ``recall``.

    The levels run one after another (``lax.map``), not mapped together: each
    level's walk then takes its own number of rounds, and holds its own
    ``(..., chunk, n)`` state, rather than every level running as many rounds
    as the slowest with all their states at once.
    """
    levels = jnp.atleast_1d(jnp.asarray(recall))

    def at(level):
        return _interpolated_precision(lists, k, recall=level, **engine)

    terms = jnp.moveaxis(lax.map(at, levels), 0, -1)
    return _kernel.mean_of_levels(terms, in_trec_eval_order=lists.in_trec_eval_order)


INTERPOLATED_PRECISION = _kernel.Formula(
    "interpolated_precision",
    _interpolated_precision,
    uses_order=True,
    labels="binary",
    nonnegative_labels=True,
    mapped_options=("recall",),
)
ELEVEN_POINT_AVERAGE = _kernel.Formula(
    "eleven_point_average",
    _eleven_point_average,
    uses_order=True,
    labels="binary",
    nonnegative_labels=True,
    mean_of=(INTERPOLATED_PRECISION, "recall"),
)


_LEVEL = _validation.Interval(float, 0.0, 1.0, "both")


def _check_level(level, *, caller: str) -> float:
    return _LEVEL.check(level, name="recall", caller=caller, also="or a sequence of them")


def _check_levels(recall, *, caller: str) -> tuple[float, ...]:
    if isinstance(recall, numbers.Real):
        return (_check_level(recall, caller=caller),)
    if isinstance(recall, str) or not isinstance(recall, Sequence) or len(recall) == 0:
        raise _LEVEL.refusal(
            recall, name="recall", caller=caller, also="or a non-empty sequence of them"
        )
    return tuple(_check_level(level, caller=caller) for level in recall)


@_kernel.computes(INTERPOLATED_PRECISION)
def interpolated_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    recall: float | Sequence[float],
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch levels"]:
    r"""Interpolated precision at recall levels: trec_eval's ``iprec_at_recall``.

    Any non-zero label is relevant. With :math:`R` relevant items (``num_relevant``
    if given), recall level :math:`x` is reached at the
    :math:`c = \mathrm{lround}(x R)`-th relevant item, rounded half away from
    zero as trec_eval does. The interpolated precision there is the largest
    precision at any rank from that item's down to the cut
    :math:`N = \min(k, n)`:

    .. math::

        \mathrm{IP}(x) = \max_{p_c \le i \le N} \frac{\mathrm{rel}(i)}{i},

    where :math:`\mathrm{rel}(i)` counts the relevant items in the first
    :math:`i` and :math:`p_c` is the rank of the :math:`c`-th (the first for
    :math:`c = 0`); it is 0 when fewer than :math:`c` relevant items are
    ranked within :math:`N`. These are the points of the standard
    recall-precision graph.

    **Ties.** The expectation over the tie orders is exact when the tie
    blocks can reach at most ``EXACT_LIMIT`` (128) precisions above the part
    that no order changes; otherwise it is **within** :math:`1/4096 \approx
    2.4 \cdot 10^{-4}` **of the exact value** (decision 0017). Without ties
    the value is exact. :doc:`/ties` derives it.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      recall: A recall level in [0, 1], or a sequence of them (trec_eval's
        default levels are ``ELEVEN_POINTS``, 0.0, 0.1, …, 1.0).
      k: Rank only the first ``k`` positions (trec_eval's ``-M``). None ranks
        the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` for one level, ``(..., levels)`` for a sequence: values in
      [0, 1]. 0 for a list with no relevant item ranked within ``k``, or no
      real item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``recall`` is not a float in [0, 1] or a
        non-empty sequence of them; ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Relevant items at ranks 2 and 3: precision 1/2 and 2/3 there, so 2/3
      at every level up to 1. With the first two tied, the first relevant
      item is first in half the orders:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([0, 1, 1])
      >>> metrics.interpolated_precision(jnp.array([3.0, 2.0, 1.0]), labels,
      ...                                recall=[0.0, 0.5, 1.0]).tolist()
      [0.666..., 0.666..., 0.666...]
      >>> metrics.interpolated_precision(jnp.array([2.0, 2.0, 1.0]), labels,
      ...                                recall=[0.0, 1.0]).tolist()
      [0.833..., 0.666...]

    Remarks:
      Interpolated precision is non-increasing in the recall level, and its
      mean over the levels is :func:`eleven_point_average`. The value at level
      0 is the best precision anywhere in the ranking, which a single early
      relevant item sets to 1.

    References:
      Manning, Raghavan & Schütze, *Introduction to Information Retrieval*,
      §8.4, 2008. https://nlp.stanford.edu/IR-book/

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38

      trec_eval's m_iprec_at_recall.c.
    """
    levels = _check_levels(recall, caller="interpolated_precision")
    _validation.check_k(k, caller="interpolated_precision")
    values = [
        _kernel.evaluate_formula(
            INTERPOLATED_PRECISION,
            scores,
            labels,
            caller="interpolated_precision",
            k=k,
            ignore_ties=ignore_ties,
            where=where,
            segments=segments,
            max_segments=max_segments,
            max_segment_size=max_segment_size,
            options={"recall": level},
            num_relevant=num_relevant,
        )
        for level in levels
    ]
    if isinstance(recall, numbers.Real):
        return values[0]
    return jnp.stack(values, axis=-1)


@_kernel.computes(ELEVEN_POINT_AVERAGE)
def eleven_point_average(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    recall: Sequence[float] = ELEVEN_POINTS,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""The mean interpolated precision over recall levels: trec_eval's ``11pt_avg``.

    The mean of :func:`interpolated_precision` over ``recall``, by default
    trec_eval's eleven levels 0.0, 0.1, …, 1.0. Like MAP and R-precision it
    estimates the area under the recall-precision graph; trec_eval keeps it
    for comparisons with old runs. The mean is linear, so its tie average is
    the mean of the levels' tie averages, each exact or within
    :math:`2.4 \cdot 10^{-4}` as :func:`interpolated_precision` says.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      recall: The recall levels, each in [0, 1]; a level listed twice counts
        twice (trec_eval's ``11pt_avg.0.2,0.5,0.8`` is the older 3-point
        average).
      k: Rank only the first ``k`` positions (trec_eval's ``-M``). None ranks
        the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` values in [0, 1]; 0 for a list with no relevant item ranked
      within ``k`` or no real item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``recall`` is not a non-empty sequence of floats
        in [0, 1] (or one such float); ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Relevant items at ranks 1 and 3 of two: interpolated precision 1 at the
      levels up to 0.7 (lround(0.7 × 2) = 1, the first relevant item) and 2/3
      from 0.8 on, so (8 + 3 × 2/3) / 11:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = jnp.array([3.0, 2.0, 1.0]), jnp.array([1, 0, 1])
      >>> print(f"{metrics.eleven_point_average(scores, labels):.6f}")
      0.909091

    Remarks:
      trec_eval computes its levels in the order given and assumes them
      ascending; lodestar averages over the levels in any order, which is the
      same for ascending levels. Prefer :func:`average_precision` for new work.

    References:
      Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR
      2000. https://doi.org/10.1145/345508.345543

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38

      trec_eval's m_11pt_avg.c.
    """
    levels = _check_levels(recall, caller="eleven_point_average")
    return _kernel.evaluate_formula(
        ELEVEN_POINT_AVERAGE,
        scores,
        labels,
        caller="eleven_point_average",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"recall": levels},
        num_relevant=num_relevant,
    )
