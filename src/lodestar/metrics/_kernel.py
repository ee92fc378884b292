"""How an exact measure is evaluated: a formula over the rank engine, in one jitted kernel.

Every exact measure is a :class:`Formula`: a function of a :class:`RankedLists` (the
engine's :class:`lodestar._ranking.Ranking` of the batch, the labels, the mask
and any per-list context such as ``num_relevant``) and of the cut-off ``k``.
One jitted kernel, :func:`evaluate_formulas`, evaluates a tuple of formulas
on one batch and shares one ranking among them: a public function asks for
one formula, ``lodestar evaluate`` for every measure of the command line at
once.

:func:`evaluate_formula` is the path of a public function: validate (decision 0003),
lay packed lists out (0009), run the kernel, and turn a list holding a value
the checks would refuse into NaN when the inputs are traced.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import _executables, _gains, _lists, _ranking, _shapes, _validation


class RankedLists(NamedTuple):
    """What a formula sees: one batch of lists inside the kernel's trace.

    Attributes:
      ranking: The engine's view of the batch; shared by every formula of
        the kernel.
      labels: ``(..., n)`` labels as given (any numeric dtype).
      valid: ``(..., n)`` boolean mask of real items.
      dtype: The floating dtype to compute and return in.
      context: Per-list or per-item extras by name (``num_relevant``,
        ``judged``, ``ideal_labels`` ...); only those given are present.
    """

    ranking: _ranking.Ranking
    labels: jax.Array
    valid: jax.Array
    dtype: Any
    context: Mapping[str, jax.Array]

    @property
    def n(self) -> int:
        """The padded list length."""
        return self.labels.shape[-1]

    def judged(self) -> jax.Array:
        """The real items that were judged: the ``judged`` context if given, else all."""
        if "judged" in self.context:
            return self.valid & self.context["judged"]
        return self.valid

    def relevant(self) -> jax.Array:
        """What the binary measures count as relevant among the real items.

        Judged items with a non-zero label, or the ``relevant`` context if
        given (the command line's, at trec_eval's relevance level).
        """
        if "relevant" in self.context:
            return self.valid & self.context["relevant"]
        return self.judged() & (self.labels != 0)

    @property
    def in_trec_eval_order(self) -> bool:
        """Whether to compute in trec_eval's order: the ``trec_order`` context is given.

        The command line gives it under ``--trec-eval --ignore-ties``, where
        trec_eval's one ranking is lodestar's and its output must be matched
        to the byte: a formula that has a value falling half-way in the
        fourth decimal then adds its terms in rank order, one at a time, and
        steps its weights as trec_eval's loops do (decision 0042). Its value
        is never read, only its presence.
        """
        return "trec_order" in self.context and self.ranking.ignore_ties

    def relevant_total(self, relevant: jax.Array) -> jax.Array:
        """``num_relevant`` if given, else the relevant items of the list, in ``dtype``."""
        if "num_relevant" in self.context:
            return self.context["num_relevant"].astype(self.dtype)
        return jnp.sum(relevant, axis=-1).astype(self.dtype)


@dataclasses.dataclass(frozen=True)
class Formula:
    """An exact measure's arithmetic over the rank engine.

    Attributes:
      name: The measure's name, for messages.
      compute: ``compute(lists, k, **options) -> (...)``: one value per list.
        ``k`` is the cut-off as a traced integer (the list length when there
        is none); options are the static and traced options it was asked for.
      static: The names among the options that are Python values fixed at
        trace time (a gain name, a flag); the others are traced.
      exploits_cutoff: Whether the formula only needs the blocks that start
        before ``k``, so that the engine may take its top-k path.
      with_cutoff: Options derived from the requested cut-off (None or an
        int), for a formula that needs more than the clipped ``k`` (precision
        divides by the requested ``k``); None if it needs nothing more.
      uses_order: Whether it asks the ranking for its rank order.
      labels: ``"graded"`` (gains from the label's value) or ``"binary"``
        (relevant or not).
      nonnegative_labels: Whether it refuses negative labels.
      tie_key: What ranking tied items by gives its smallest and largest
        value over every order of the ties: ``"relevance"`` (the label, or
        whether it is relevant, as ``labels`` says; an unjudged item least),
        ``"unjudged"`` (whether the item is unjudged: the measure reads only
        that), or ``"judged_nonrelevant"`` (a count of judged non-relevant
        items); None where no such key is known. :func:`lodestar.metrics.tie_range`
        and ``--tie-range`` read it.
      mean_of: ``(formula, option)`` when the value is the mean of
        ``formula``'s values at each value of the sequence ``option`` (11pt_avg
        over iprec_at_recall's levels), so that a kernel asked for both
        computes each level once; None otherwise.
      mapped_options: Traced options (``"k"`` among them) over whose values
        several requests that differ in nothing else run one after another
        in one loop (``lax.map``): one copy of the formula in the program
        instead of one per request, and one request's working memory alive
        at a time (iprec_at_recall's tie lattice at its eleven levels;
        ``map_cut``'s nine cut-offs).
    """

    name: str
    compute: Callable[..., jax.Array]
    static: tuple[str, ...] = ()
    exploits_cutoff: bool = True
    with_cutoff: Callable[[int | None], dict[str, Any]] | None = None
    uses_order: bool = False
    labels: Literal["graded", "binary"] = "graded"
    nonnegative_labels: bool = False
    tie_key: Literal["relevance", "unjudged", "judged_nonrelevant"] | None = "relevance"
    mean_of: tuple[Formula, str] | None = None
    mapped_options: tuple[str, ...] = ()

    def options(self, k: int | None, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options to call ``compute`` with for the requested cut-off ``k``."""
        extra = self.with_cutoff(k) if self.with_cutoff is not None else {}
        return {**options, **extra}


_F = TypeVar("_F", bound=Callable)


def computes(formula: Formula) -> Callable[[_F], _F]:
    """Mark a public function as the one that evaluates ``formula``.

    The function carries its formula as ``function.formula``: what its
    arithmetic reads (label kind and sign, tie key) is then one fact that
    :func:`lodestar.metrics.tie_range` and the registry read from the function.
    """

    def mark(function: _F) -> _F:
        setattr(function, "formula", formula)  # noqa: B010  a function has no declared slot
        return function

    return mark


# Set while a formula is traced in trec_eval's order (see ratio_or_zero).
_correctly_rounded = contextvars.ContextVar("correctly_rounded", default=False)


@contextlib.contextmanager
def correctly_rounded_division(on: bool):
    """Trace :func:`ratio_or_zero`'s divisions correctly rounded while inside, if ``on``."""
    token = _correctly_rounded.set(on)
    try:
        yield
    finally:
        _correctly_rounded.reset(token)


def ratio_or_zero(numerator: jax.Array, denominator: jax.Array) -> jax.Array:
    """``numerator / denominator``, and 0 where the denominator is 0.

    XLA rewrites a division by a broadcast value (one cut-off for every list)
    as a multiplication by its reciprocal, which rounds twice: 9 / 1000
    becomes 0.009000000000000001, and a mean of such values printed 0.0073
    where trec_eval's quotients give 0.0072. In trec_eval's order
    (:func:`correctly_rounded_division`, which :func:`evaluate_formulas`
    turns on for :attr:`RankedLists.in_trec_eval_order`) the denominator is
    therefore broadcast to the numerator's shape behind an optimization
    barrier, which XLA does not see through, and every quotient is correctly
    rounded, as C's. Otherwise the division is left to XLA, so that values
    stay bitwise as they were.
    """
    nonzero = denominator != 0
    divisor = jnp.where(nonzero, denominator, 1)
    shape = jnp.broadcast_shapes(jnp.shape(numerator), jnp.shape(divisor))
    if _correctly_rounded.get() and jnp.shape(divisor) != shape:
        divisor = lax.optimization_barrier(jnp.broadcast_to(divisor, shape))
    return jnp.where(nonzero, numerator / divisor, 0)


def mean_of_levels(terms: jax.Array, *, in_trec_eval_order: bool) -> jax.Array:
    """The mean of 11pt_avg's levels, ``(..., levels)``, over the last axis.

    In trec_eval's order as m_11pt_avg.c takes it: the levels added from the
    last one given to the first (its loop walks the ranking upwards), over
    their count, correctly rounded. Otherwise ``jnp.mean``, so that values
    stay bitwise.
    """
    if not in_trec_eval_order:
        return jnp.mean(terms, axis=-1)
    count = jnp.asarray(terms.shape[-1], terms.dtype)
    with correctly_rounded_division(True):
        return ratio_or_zero(sum_in_order(terms[..., ::-1]), count)


def log2(x: jax.Array) -> jax.Array:
    """``jnp.log2(x)``; in trec_eval's order, exact where ``x`` is a power of two.

    XLA's ``log2`` is not the C library's: ``log2(8)`` is 2.9999999999999996,
    so G's term ``3 / log2(8)`` came out above 1 and its value
    0.03125000000000001, which prints 0.0313 where trec_eval's exact 1/32
    prints 0.0312. A power of two is the one place where C's ``log2`` is an
    integer and a value lands on a half-way decimal; elsewhere the two differ
    by an ulp of an irrational number, too little to reach the fourth decimal
    but by a coincidence of about 1e-12. Only inside
    :func:`correctly_rounded_division`, so that values stay bitwise elsewhere.
    """
    value = jnp.log2(x)
    if not _correctly_rounded.get():
        return value
    mantissa, exponent = jnp.frexp(x)
    return jnp.where(mantissa == 0.5, (exponent - 1).astype(value.dtype), value)


def cumulative_product(factors: jax.Array) -> jax.Array:
    """``jnp.cumprod`` over the last axis, as a parallel prefix (``lax.associative_scan``).

    XLA's CPU backend computes ``jnp.cumprod`` as a ``reduce_window`` of the
    whole axis for every element, ``n^2`` products per list: 3.5 ms on
    10,000 x 100 float32, against 1.0 ms for the parallel prefix. The
    products are grouped in another order, so they may differ in the last bit.
    """
    return lax.associative_scan(jnp.multiply, factors, axis=factors.ndim - 1)


def sum_in_order(terms: jax.Array) -> jax.Array:
    """The sum of ``terms`` over the last axis, added from the first to the last.

    trec_eval adds a query's terms one at a time, in rank order; XLA's
    reductions add them in a tree, which can round the sum apart from it in
    the last bit (and the fourth decimal, on a half-way value).
    """
    total = jnp.zeros(terms.shape[:-1], terms.dtype)
    return lax.fori_loop(
        0, terms.shape[-1], lambda j, total: total + jnp.take(terms, j, axis=-1), total
    )


def running_sums_in_order(terms: jax.Array) -> jax.Array:
    """Every running total of :func:`sum_in_order`: ``(..., n)``, each the previous plus one term.

    The total after ``k`` terms is bitwise :func:`sum_in_order` of the terms
    with those from ``k`` on set to zero (adding zero leaves a sum of
    non-negative terms as it is), so one pass serves every cut-off
    (:func:`running_sum_at`).
    """
    start = jnp.zeros(terms.shape[:-1], terms.dtype)

    def add(total, term):
        total = total + term
        return total, total

    _, running = lax.scan(add, start, jnp.moveaxis(terms, -1, 0))
    return jnp.moveaxis(running, 0, -1)


def running_sum_at(running: jax.Array, k) -> jax.Array:
    """The running total after the first ``k`` terms: 0 for ``k`` <= 0, the whole sum past the end.

    Args:
      running: ``(..., n)`` from :func:`running_sums_in_order`.
      k: A cut-off, static or traced, for every list.
    """
    n = running.shape[-1]
    if n == 0:
        return jnp.zeros(running.shape[:-1], running.dtype)
    k = jnp.asarray(k)
    total = jnp.take(running, jnp.clip(k - 1, 0, n - 1), axis=-1)
    return jnp.where(k > 0, total, 0)


def ranked_in_cut(lists: RankedLists, values: jax.Array, k) -> jax.Array:
    """``values`` in rank order, 0 from position ``k`` on and on padding.

    Only in trec_eval's order (:attr:`RankedLists.in_trec_eval_order`), where
    the ranking holds no ties and the command line gives the rank order.
    """
    order = lists.ranking.rank_order()
    ranked = jnp.take_along_axis(jnp.where(lists.valid, values, 0), order, axis=-1)
    return jnp.where(jnp.arange(lists.n) < k, ranked, 0)


def repeated_powers(base: jax.Array, count: int) -> jax.Array:
    """``1, base, base * base, ...``: ``count`` powers, each the previous one times ``base``.

    As trec_eval's loops step a weight (RBP's ``cur_p = cur_p * p``): each
    product rounds, so the values drift from ``base ** j`` in the last bits.
    """
    one = jnp.ones((), base.dtype)
    _, powers = lax.scan(lambda power, _: (power * base, power), one, None, length=count)
    return powers


# Large batches run through the kernel one tile of lists at a time
# (``lax.map``): the engine's per-item temporaries then stay tile-sized and in
# cache instead of several copies of the whole batch (decision 0011).
TILE_ITEMS = 1 << 20


def _over_tiles(kernel):
    """Evaluate a per-list ``kernel`` tile by tile when the batch is large.

    The lists are flattened and cut into tiles of about :data:`TILE_ITEMS`
    items (a tile size that divides the batch if one is near, so that no slice
    copies the input); the tiles run in a ``lax.map``, any remainder in one
    more call. Every array argument whose leading axes are the batch axes is
    cut the same way: per-item arrays and per-list context alike. Only on a
    single device: a reshape of a batch sharded over devices would move data
    between them. A symbolic shape (:func:`jax.export.symbolic_shape`) runs as
    one tile: its size is not known until the program is called.
    """

    @functools.wraps(kernel)
    def tiled(scores, arrays, traced, **static):
        if not all(isinstance(d, int) for d in scores.shape):
            return kernel(scores, arrays, traced, **static)
        batch, n = scores.shape[:-1], scores.shape[-1]
        lists = math.prod(batch)
        rows = max(1, TILE_ITEMS // max(n, 1))
        rows = next((d for d in range(rows, rows // 2, -1) if lists % d == 0), rows)
        tiles = lists // rows
        if tiles < 2 or jax.device_count() > 1:
            return kernel(scores, arrays, traced, **static)

        def flat(x):
            return x.reshape(lists, *x.shape[len(batch) :])

        flat_scores, flat_arrays = flat(scores), jax.tree.map(flat, arrays)
        body = rows * tiles

        def run(pair):
            return kernel(*pair, traced, **static)

        def head(x):
            return x[:body].reshape(tiles, rows, *x.shape[1:])

        values = lax.map(run, (head(flat_scores), jax.tree.map(head, flat_arrays)))
        values = jax.tree.map(lambda v: v.reshape(body), values)
        if body < lists:
            tail = run((flat_scores[body:], jax.tree.map(lambda x: x[body:], flat_arrays)))
            values = jax.tree.map(lambda v, t: jnp.concatenate([v, t]), values, tail)
        return jax.tree.map(lambda v: v.reshape(batch), values)

    return tiled


@_executables.stored
@functools.partial(
    jax.jit, static_argnames=("requests", "rank_k", "ignore_ties", "mapped", "means")
)
@_over_tiles
def evaluate_formulas(
    scores, arrays, traced, *, requests, rank_k, ignore_ties, mapped=(), means=()
):
    """Evaluate several formulas on one batch, sharing one ranking.

    Args:
      scores: ``(..., n)`` scores.
      arrays: ``{"labels": ..., "where": ... or None, "context": {...}}``, and
        optionally ``"blocks"`` (``(above, tied)``) and ``"order"`` computed
        beforehand (see :class:`lodestar._ranking.Ranking`).
      traced: Per request, a dict of its traced options, ``"k"`` among them.
      requests: Per request, ``(formula, static options as sorted pairs)``.
      rank_k: The static cut-off the engine may exploit, or None.
      ignore_ties: Break ties by descending index.
      mapped: Groups of requests (tuples of indices) of one formula that
        differ only in its :attr:`Formula.mapped_options`, each evaluated
        in one ``lax.map`` over those options' values.
      means: Pairs ``(j, (i, ...))``: request ``j``'s value is the mean of
        requests ``i, ...``'s values (see :attr:`Formula.mean_of`), which
        the caller found to be its terms; ``j``'s formula is not evaluated.
      store: Keep the compiled kernel on disk (:mod:`lodestar._executables`):
        only for a batch that arrives ranked, whose kernel holds no host
        callback.

    Returns:
      A tuple of ``(...)`` arrays, one per request.
    """
    labels, where, context = arrays["labels"], arrays["where"], arrays["context"]
    valid = _lists.valid(scores, where)
    dtype = _lists.compute_dtype(scores, labels)
    ranking = _ranking.Ranking(
        scores,
        valid,
        k=rank_k,
        ignore_ties=ignore_ties,
        blocks=arrays.get("blocks"),
        order=arrays.get("order"),
    )
    lists = RankedLists(ranking, labels, valid, dtype, context)

    def compute(request, options):
        (formula, static), options = request, dict(options)
        with correctly_rounded_division(lists.in_trec_eval_order):
            return formula.compute(lists, options.pop("k"), **dict(static), **options)

    values: list[Any] = [None] * len(requests)
    for group in mapped:
        request, options = requests[group[0]], traced[group[0]]
        names = request[0].mapped_options
        over = {n: jnp.stack([jnp.asarray(traced[i][n]) for i in group]) for n in names}
        found = lax.map(
            lambda chosen, request=request, options=options: compute(
                request, {**options, **chosen}
            ),
            over,
        )
        for place, i in enumerate(group):
            values[i] = found[place]
    skipped = {i for group in mapped for i in group} | {j for j, _ in means}
    for j, (request, options) in enumerate(zip(requests, traced, strict=True)):
        if j not in skipped:
            values[j] = compute(request, options)
    for j, indices in means:
        # As the formula's own mean: the terms stacked on the last axis.
        terms = jnp.stack([values[i] for i in indices], axis=-1)
        values[j] = mean_of_levels(terms, in_trec_eval_order=lists.in_trec_eval_order)
    return tuple(values)


def evaluate_formula(
    formula: Formula,
    scores,
    labels,
    *,
    caller: str,
    k,
    ignore_ties,
    where=None,
    segments=None,
    max_segments=None,
    max_segment_size=None,
    judged=None,
    num_relevant=None,
    options: Mapping[str, Any] | None = None,
    item_context: Mapping[str, Any] | None = None,
    list_context: Mapping[str, Any] | None = None,
):
    """A public function's path: validate, lay out, evaluate one formula, apply the NaN rule.

    Args:
      formula: The measure.
      scores: ``(..., n)`` array-like.
      labels: ``(..., n)`` array-like.
      caller: The public function's name, for messages.
      k: The cut-off, None or an int >= 1 (checked here).
      ignore_ties: Checked here.
      where: Padding mask, or None.
      segments: Packed-list ids, or None.
      max_segments: See :mod:`lodestar._segments`.
      max_segment_size: See :mod:`lodestar._segments`.
      judged: The public ``judged`` mask, or None; checked here (first) and
        laid out as the item context ``judged`` unless ``item_context`` has
        one, checked by the caller.
      num_relevant: The public ``num_relevant`` counts, or None; checked here
        (after ``judged``) and passed as the list context ``num_relevant``
        unless ``list_context`` has one.
      options: The formula's options, already validated.
      item_context: Extra per-item ``(..., n)`` arrays (None entries dropped),
        laid out with the lists.
      list_context: Extra per-list arrays (None entries dropped), shaped like
        the result.

    Returns:
      ``(...)`` (or ``(..., max_segments)``) one value per list.
    """
    nonnegative_labels = formula.nonnegative_labels
    judged = _validation.check_item_mask(judged, scores, name="judged", caller=caller)
    num_relevant = _validation.check_num_relevant(
        num_relevant, scores, segments, max_segments, caller=caller
    )
    item_context = {"judged": judged, **(item_context or {})}
    list_context = {"num_relevant": num_relevant, **(list_context or {})}
    k = _validation.check_k(k, caller=caller)
    ignore_ties = _validation.check_bool(ignore_ties, name="ignore_ties", caller=caller)
    gain = (options or {}).get("gain")
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=nonnegative_labels,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
    )
    context = {
        name: lists.layout(value) for name, value in item_context.items() if value is not None
    }
    context.update({name: v for name, v in list_context.items() if v is not None})
    n = lists.scores.shape[-1]
    options = formula.options(k, options or {})
    static = tuple(sorted((name, options.pop(name)) for name in formula.static))
    rank_k = None
    if formula.exploits_cutoff:
        rank_k = _ranking.exploited_cutoff(n, k, ignore_ties=ignore_ties)
    traced = ({"k": n if k is None else min(k, n), **options},)
    arrays = {"labels": lists.labels, "where": lists.where, "context": context}
    scores = lists.scores
    # A callable gain sees the padded labels; it keeps the call's own shape.
    bucket = None if callable(gain) else _bucket(scores, arrays)
    if bucket is not None:
        scores, arrays = _pad_to(bucket, scores, arrays, items=item_context.keys())
        if formula.exploits_cutoff:
            rank_k = _ranking.exploited_cutoff(bucket[1], k, ignore_ties=ignore_ties)
    (value,) = evaluate_formulas(
        scores,
        arrays,
        traced,
        requests=((formula, static),),
        rank_k=rank_k,
        ignore_ties=ignore_ties,
    )
    if bucket is not None:
        batch = lists.scores.shape[:-1]
        value = value[: math.prod(batch)].reshape(batch)
    for name, relevant, kind in _LIST_COUNTS:
        if name in context:
            value = _check_list_count(
                value, lists, context, name=name, relevant=relevant, kind=kind, caller=caller
            )
    if not _validation.is_concrete(lists.scores, lists.labels, lists.where):
        # Traced inputs were not checked (decision 0003): a list holding a NaN
        # score or a refused label gives NaN. Concrete ones were refused above.
        value = _validation.nan_for_invalid_values(
            value,
            lists.scores,
            lists.labels,
            lists.where,
            nonnegative_labels=nonnegative_labels,
            overflow=_lists.gain_overflows(gain, lists.scores, lists.labels, lists.where),
        )
        if "ideal_labels" in context:
            dtype = _lists.compute_dtype(lists.scores, lists.labels)
            ideal = context["ideal_labels"], context.get("ideal_where")
            value = _gains.nan_for_invalid_ideal(value, *ideal, gain, dtype)
    return lists.per_list(value)


# An eager call on a small batch in host memory runs padded to a bucketed
# shape: ``(rows, n)`` rounded up to powers of two, n to at least 8 (decision
# 0023). Calls at nearby shapes then share one compiled kernel instead of
# compiling one each, and padding changes no value. Larger batches keep their
# shape: there a copy of the input costs more than the compilation it saves
# (the decision records both costs).
BUCKET_MAX_ITEMS = 1 << 16
BUCKET_MIN_WIDTH = 8


def _bucket(scores, arrays) -> tuple[int, int] | None:
    """The padded ``(rows, n)`` to evaluate concrete host arrays at, or None to keep the shape."""
    leaves = [scores, *jax.tree.leaves(arrays)]
    if not _validation.is_concrete(*leaves) or not _validation.on_one_cpu_device(*leaves):
        return None
    n, rows = scores.shape[-1], math.prod(scores.shape[:-1])
    shape = (_shapes.bucket(rows), _shapes.bucket(n, BUCKET_MIN_WIDTH))
    if n == 0 or shape[0] * shape[1] > BUCKET_MAX_ITEMS or shape == scores.shape:
        return None
    return shape


def _pad_to(shape, scores, arrays, *, items):
    """``scores`` and ``arrays`` flattened to rows and padded (with NumPy) to ``shape``.

    Padding items are masked out of ``where``. The other arrays are padded
    with zeros: the labels and the per-item context named in ``items`` in
    their rows and after their last item, the rest of the context (per-list
    values, or an ideal ranking's labels and mask, of a length of their own)
    in their rows only.
    """
    rows, n = math.prod(scores.shape[:-1]), scores.shape[-1]

    def padded(x, *, per_item):
        x = np.asarray(x)
        inner = x.shape[scores.ndim - 1 :]
        out = np.zeros((shape[0], *((shape[1],) if per_item else inner)), x.dtype)
        out[(slice(rows), *(slice(d) for d in inner))] = x.reshape(rows, *inner)
        return out

    where = np.zeros(shape, bool)
    where[:rows, :n] = (
        True if arrays["where"] is None else np.asarray(arrays["where"]).reshape(rows, n)
    )
    context = {
        name: padded(value, per_item=name in items) for name, value in arrays["context"].items()
    }
    labels = padded(arrays["labels"], per_item=True)
    return padded(scores, per_item=True), {"labels": labels, "where": where, "context": context}


# The per-list counts a caller may give, each at least the list's own items of
# its kind: (context name, whether those items are relevant, their name).
_LIST_COUNTS = (
    ("num_relevant", True, "relevant"),
    ("num_judged_nonrelevant", False, "judged non-relevant"),
)


@functools.partial(jax.jit, static_argnames=("relevant",))
def _own_counts(labels, where, judged, *, relevant):
    """Per list, the real (and judged) items labelled non-zero, or with ``relevant=False`` 0."""
    items = _lists.valid(labels, where) & ((labels != 0) if relevant else (labels == 0))
    if judged is not None:
        items = items & judged
    return jnp.sum(items, axis=-1)


def _check_list_count(value, lists, context, *, name, relevant, kind, caller):
    """Refuse (or, traced, NaN) a list whose ``context[name]`` is below its own ``kind`` items."""
    total = context[name]
    own = _own_counts(lists.labels, lists.where, context.get("judged"), relevant=relevant)
    below = total < own
    if _validation.is_concrete(below):
        if bool(jnp.any(below)):
            raise ValueError(
                f"{caller} got {name} below the number of {kind} items in a list; "
                f"it counts every {kind} item of the list, retrieved or not."
            )
        return value
    _validation.traced_check(~jnp.any(below), f"{caller} got {name} below a list's count.")
    return jnp.where(below, jnp.nan, value)
