"""lodestar's compiled CPU kernels: loaded, registered with XLA, and called.

On CPU the rank and tie engine sorts inside XLA's own program, with C++
handlers (``csrc/kernels.cc``, built on install into ``lodestar._kernels``)
registered as XLA FFI custom calls. A program holding them is an ordinary
JAX program: it exports with :mod:`jax.export` (also with a symbolic batch),
runs from any number of threads, and keeps 64-bit arrays 64-bit under any
configuration. Decision 0043 records the design and its measurements.

**The fallback.** Where the kernels were not built, fail to load, fail the
check they are given on first use, or are switched off with
``LODESTAR_KERNELS=xla``, every exact metric ranks with XLA's sort instead:
the same values, more slowly. Anything but a deliberate switch says so once
(:data:`note`).

**Platforms.** The kernels are CPU code. Each call is lowered through
:func:`jax.lax.platform_dependent`, with XLA's own route for every other
platform, so a program lowered for ``platforms=("cpu", "cuda")`` holds both.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

#: The environment switch: ``xla`` ranks with XLA's sort even where the
#: kernels are built; ``native`` (or unset) uses the kernels where they load.
ENVIRONMENT = "LODESTAR_KERNELS"
_CHOICES = ("native", "xla")

#: The custom-call targets, in the order ``lodestar._kernels.targets()`` names them.
TARGETS = (
    "lodestar_tie_blocks",
    "lodestar_argsort",
    "lodestar_largest",
    "lodestar_descending_gains",
    "lodestar_weighted_sum",
    "lodestar_weighted_sum_and_ideal",
    "lodestar_block_totals",
    "lodestar_top_tie_blocks",
    "lodestar_gain_sums",
)


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=4)


#: Says why the kernels are not used, once per process. A Python caller gets
#: a :class:`RuntimeWarning`; the command line sets this to its own note.
note: Callable[[str], None] = _warn

_lock = threading.Lock()
_state: tuple[bool, str | None] | None = None  # (loaded, why not)


def _register() -> str | None:
    """Register the kernels with XLA.

    Returns None once they are registered, ``""`` where the environment
    switched them off, and otherwise why they are not used.
    """
    choice = os.environ.get(ENVIRONMENT, "native").strip().lower() or "native"
    if choice not in _CHOICES:
        return f"{ENVIRONMENT}={os.environ[ENVIRONMENT]!r} is not one of {', '.join(_CHOICES)}"
    if choice == "xla":
        return ""  # chosen: nothing to say
    try:
        kernels = importlib.import_module("lodestar._kernels")
        for name, capsule in kernels.targets().items():
            jax.ffi.register_ffi_target(name, capsule, platform="cpu")
    except Exception as error:  # ImportError, or a jaxlib that refuses the handlers
        return f"they could not be loaded ({type(error).__name__}: {error})"
    return None


# Registered on import, so that a process that deserializes an exported
# program holding the kernels needs only to import lodestar.metrics (or this).
_not_registered = _register()


def _load() -> tuple[bool, str | None]:
    if _not_registered is not None:
        return False, _not_registered or None
    try:
        jax.local_devices(backend="cpu")
    except RuntimeError:  # JAX_PLATFORMS without cpu: nothing to run them on, nothing to say
        return False, None
    try:
        _check()
    except Exception as error:  # a jaxlib whose FFI refuses handlers built for another
        return False, f"they failed their check ({type(error).__name__}: {error})"
    return True, None


def _check() -> None:
    """One small call of every kernel, compared with the answer NumPy gives."""
    scores = np.array([[0.5, 2.0, 0.5, -1.0], [3.0, 3.0, 3.0, 1.0]], np.float32)
    valid = np.array([[True, True, True, False], [True, True, True, True]])
    counted = np.array([[1, 2, 3, 4], [1, 1, 1, 1]], np.int32)
    # One tie block of gains 2 and 4 against an ideal of 4, 4 (costs 4, 8):
    # G's terms (2/log2 4 + 4/log2 2)/2 at t = 1, (6/2)/log2 4 at t = 2.
    block = (
        np.array([[2.0, 4.0]], np.float32),
        np.zeros((1, 2), np.int32),
        np.full((1, 2), 2, np.int32),
        np.ones((1, 2), bool),
        np.array([[4.0, 4.0]], np.float32),
        np.array([2], np.int32),
    )

    def every_kernel(scores, valid, counted, block):
        above, tied = tie_blocks(scores, valid, ignore_ties=False)
        return (
            above,
            tied,
            stable_argsort(scores),
            *largest(scores, k=2),
            descending_gains(scores, valid),
            *block_totals(counted, above),
            *top_tie_blocks(scores, valid, k=1),
            gain_sums(*block, atoms=2),
        )

    cpu = jax.local_devices(backend="cpu")[0]
    # The first use may come inside the caller's trace: run the check now, in
    # one program (one compilation, not one per kernel).
    with jax.ensure_compile_time_eval(), jax.default_device(cpu):
        results = jax.jit(every_kernel)(scores, valid, counted, block)
    expected = (
        [[1, 0, 1, 4], [0, 0, 0, 3]],
        [[2, 1, 2, 1], [3, 3, 3, 1]],
        np.argsort(scores, axis=-1, kind="stable"),
        [[2.0, 0.5], [3.0, 3.0]],
        [2, 3],
        [[2.0, 0.5, 0.5, 0.0], [3.0, 3.0, 3.0, 1.0]],
        [[2, 0, 2, 6], [0, 0, 0, 3]],
        [[4, 2, 4, 4], [3, 3, 3, 1]],
        [[1, 0, 1, 4], [0, 0, 0, 1]],
        [[1, 1, 1, 1], [3, 3, 3, 1]],
        ([4.0], [0.0], [8.0]),
    )
    for found, wanted in zip(results, expected, strict=True):
        if not np.array_equal(np.asarray(found), np.asarray(wanted)):
            raise AssertionError(f"got {np.asarray(found).tolist()}, not {np.asarray(wanted)}")


def _state_now() -> tuple[bool, str | None]:
    global _state
    with _lock:
        if _state is None:
            _state = _load()
            if _state[1] is not None:
                note(
                    f"lodestar: the compiled CPU kernels are not used: {_state[1]}; exact "
                    f"metrics rank with XLA's sort instead, with the same values, more "
                    f"slowly (set {ENVIRONMENT}=xla to choose that and silence this note)"
                )
        return _state


def loaded() -> bool:
    """Whether the compiled kernels are registered and passed their check (loads them once)."""
    return _state_now()[0]


def refusal() -> str | None:
    """Why the kernels are not used, or None where they are used or were switched off."""
    return _state_now()[1]


_shapes_only = contextvars.ContextVar("lodestar_shapes_only", default=False)


@contextlib.contextmanager
def shapes_only():
    """Inside, :func:`applies` is False without asking JAX which backend runs.

    For traces that run nothing (:func:`jax.eval_shape`): asking starts JAX's
    backend, which ``jax.distributed.initialize`` must precede, and both
    routes give the same shapes and dtypes.
    """
    token = _shapes_only.set(True)
    try:
        yield
    finally:
        _shapes_only.reset(token)


def applies() -> bool:
    """Whether the engine ranks with the kernels: on CPU, where they loaded.

    In a program that XLA partitions over several devices a custom call would
    be gathered onto one device; there XLA's sort is used, which the
    partitioner runs on every shard. Inside a ``shard_map`` whose every mesh
    axis is manual, each device runs the kernels on its own lists. Decided at
    trace time: both routes give identical values, so only speed depends on it.
    Asking starts JAX's backend, unless inside :func:`shapes_only`.
    """
    if _shapes_only.get():
        return False
    if jax.default_backend() != "cpu":
        return False
    if jax.device_count() > 1:
        mesh = jax.sharding.get_abstract_mesh()
        if mesh.empty or not mesh.are_all_axes_manual:
            return False
    return loaded()


def export_checks() -> list[jax.export.DisabledSafetyCheck]:
    """The safety checks :func:`jax.export.export` must skip for lodestar's kernels."""
    return [jax.export.DisabledSafetyCheck.custom_call(name) for name in TARGETS]


def export(
    fun: jax.stages.Wrapped,
    *,
    platforms: Sequence[str] | None = None,
    disabled_checks: Sequence[jax.export.DisabledSafetyCheck] = (),
) -> Callable[..., jax.export.Exported]:
    """:func:`jax.export.export` for a function that holds lodestar's exact metrics.

    On CPU the exact metrics rank inside XLA with lodestar's compiled kernels,
    which are XLA custom calls. ``jax.export`` refuses a custom call it does
    not know to be stable unless told otherwise; this adds the one option
    that tells it, ``disabled_checks=[DisabledSafetyCheck.custom_call(name)
    for each kernel]``, to yours. Everything else is ``jax.export.export``:
    symbolic shapes, ``platforms=("cpu", "cuda")`` (the CUDA side of the
    program ranks with XLA's sort), serialization. The process that calls
    the deserialized program must have imported lodestar, which registers
    the kernels with XLA: import :mod:`lodestar.metrics` there first.

    Args:
      fun: A jitted function (:func:`jax.jit`) to export.
      platforms: The platforms to lower for, as in ``jax.export.export``
        (None: the default backend's).
      disabled_checks: Further checks to skip, as in ``jax.export.export``.

    Returns:
      The function ``jax.export.export`` returns: call it with the arguments'
      shapes and dtypes (:class:`jax.ShapeDtypeStruct`) to get a
      :class:`jax.export.Exported`.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> import lodestar
      >>> from lodestar import metrics
      >>> (batch,) = jax.export.symbolic_shape("batch")
      >>> lists = jax.ShapeDtypeStruct((batch, 100), jnp.float32)
      >>> step = jax.jit(lambda s, y: metrics.ndcg(s, y, k=10))
      >>> exported = lodestar.export(step)(lists, lists)
      >>> restored = jax.export.deserialize(exported.serialize())
      >>> ones = jnp.ones((3, 100), jnp.float32)
      >>> restored.call(ones, ones).shape
      (3,)

    References:
      JAX, *Exporting and serializing staged-out computations*,
      https://docs.jax.dev/en/latest/export/export.html.
    """
    loaded()  # the targets are registered before anything lowers them
    return jax.export.export(
        fun, platforms=platforms, disabled_checks=[*export_checks(), *disabled_checks]
    )


def on_cpu(native: Callable, xla: Callable, *args):
    """``native(*args)`` when the program runs on CPU, ``xla(*args)`` elsewhere."""
    return lax.platform_dependent(*args, cpu=native, default=xla)


def _result(like: jax.Array, dtype, shape=None):
    """A kernel result's type: ``like``'s sharding and manual axes, ``dtype`` and ``shape``.

    Inside a ``shard_map`` the result varies over the same mesh axes as the
    lists it comes from, as XLA's route's does: both branches of
    :func:`on_cpu` must have one type.
    """
    aval = jax.typeof(like).update(dtype=jnp.dtype(dtype), weak_type=False)
    return aval if shape is None else aval.update(shape=tuple(shape))


def _call(target: str, results, *args, **attributes) -> Any:
    # One result or a tuple of them, as ``results`` is one type or a tuple:
    # each caller states which.
    return jax.ffi.ffi_call(target, results, vmap_method="broadcast_all")(*args, **attributes)


def tie_blocks(scores: jax.Array, valid: jax.Array, *, ignore_ties: bool):
    """Per-item ``(above, tied)`` int32 counts, the engine's contract (``_ranking``)."""
    out = _result(scores, jnp.int32)
    valid = jnp.broadcast_to(valid, scores.shape)
    return _call(
        "lodestar_tie_blocks", (out, out), scores, valid, ignore_ties=np.int64(ignore_ties)
    )


def top_tie_blocks(scores: jax.Array, valid: jax.Array, *, k: int):
    """:func:`tie_blocks` with averaged ties, exact for the blocks starting before ``k``.

    ``0 < k < n``. Every other real item gets ``above = k`` and ``tied = 1``,
    padding ``n`` and 1: XLA's top-k route's counts (``_ranking._topk``).
    """
    out = _result(scores, jnp.int32)
    valid = jnp.broadcast_to(valid, scores.shape)
    return _call("lodestar_top_tie_blocks", (out, out), scores, valid, k=np.int64(k))


def stable_argsort(keys: jax.Array) -> jax.Array:
    """int32 indices that sort each row ascending, equal keys by index, NaN last."""
    return _call("lodestar_argsort", _result(keys, jnp.int32), keys)


def largest(values: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """Each row's ``k`` largest values and how many of its values equal the k-th.

    The values are descending, NaN first (``lax.top_k``'s order); the count is
    0 where the k-th is NaN.
    """
    top = _result(values, values.dtype, values.shape[:-1] + (k,))
    count = _result(values, jnp.int32, values.shape[:-1])
    return _call("lodestar_largest", (top, count), values, k=np.int64(k))


def descending_gains(values: jax.Array, valid: jax.Array) -> jax.Array:
    """Each row's real values descending, a 0 per padding slot, then its real NaNs."""
    valid = jnp.broadcast_to(valid, values.shape)
    return _call("lodestar_descending_gains", _result(values, values.dtype), values, valid)


def weighted_sum(
    scores: jax.Array, values: jax.Array, valid: jax.Array, cumulative_table: jax.Array, k: int
) -> jax.Array:
    """``_ranking.block_weighted_sum`` with averaged ties, in one pass over each row.

    ``values`` and ``cumulative_table`` (``(n + 1,)``) share a float32 or
    float64 dtype, the result's; ``k`` is the cut-off, 0 for none.
    """
    return _weighted_sum_call(
        "lodestar_weighted_sum", 1, scores, values, valid, cumulative_table, k
    )


def weighted_sum_and_ideal(
    scores: jax.Array, values: jax.Array, valid: jax.Array, cumulative_table: jax.Array, k: int
) -> tuple[jax.Array, jax.Array]:
    """:func:`weighted_sum`, and the same sum over each row ranked by its own values.

    The ideal's ranking counts negative values as 0, and padding not at all:
    with gains and discounts, the ideal DCG. Small whole-number values (graded
    labels, their gains) are counted into a histogram instead of ranked.
    """
    return _weighted_sum_call(
        "lodestar_weighted_sum_and_ideal", 2, scores, values, valid, cumulative_table, k
    )


def block_totals(values: jax.Array, above: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``_ranking.block_totals``: per item, ``values`` summed over the blocks above and its own.

    ``values`` are int32, float32 or float64; ``above`` the int32 counts that
    name each item's block (padding's is ``n``).
    """
    out = _result(values, values.dtype)
    above = jnp.broadcast_to(above, values.shape)
    return _call("lodestar_block_totals", (out, out), values, above)


def gain_sums(
    gains: jax.Array,
    above: jax.Array,
    tied: jax.Array,
    valid: jax.Array,
    ideal: jax.Array,
    k: jax.Array,
    *,
    atoms: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """trec_eval's G in one pass over each row: its terms, the spread pooled, the ideal's cost.

    ``gains`` (float32 or float64, 0 where unjudged), ``above`` and ``tied``
    (the engine's int32 blocks, exact for every block starting before ``k``),
    ``valid``, ``ideal`` (the ideal's gains descending, zero-padded to the
    row's length, in ``gains``' dtype) are ``(..., n)``; ``k`` is the int32
    cut-off per row. Returns per row the expected terms summed, the second
    moment pooled away past ``atoms`` sums, and the ideal's cost down to its
    last position (``metrics._normalized_gain``).
    """
    out = _result(gains, gains.dtype, gains.shape[:-1])
    valid = jnp.broadcast_to(valid, gains.shape)
    k = jnp.broadcast_to(k, gains.shape[:-1]).astype(jnp.int32)
    return _call(
        "lodestar_gain_sums", (out, out, out), gains, above, tied, valid, ideal, k,
        atoms=np.int64(atoms),
    )  # fmt: skip


def _weighted_sum_call(target, results, scores, values, valid, cumulative_table, k):
    """One weighted-sum kernel's call: ``results`` per-row sums in ``values``' dtype."""
    valid = jnp.broadcast_to(valid, scores.shape)
    values = jnp.broadcast_to(values, scores.shape)
    out = _result(scores, values.dtype, scores.shape[:-1])
    shapes = out if results == 1 else (out,) * results
    return _call(target, shapes, scores, values, valid, cumulative_table, k=np.int64(k))
