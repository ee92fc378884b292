"""Host callbacks: NumPy work behind :func:`jax.pure_callback`, safe in any configuration.

The engine sorts on the host where XLA's sort is slow (CPU). Two things make a
host callback fragile, and this module is the one place that deals with them.

**JAX's thread-local configuration.** ``jax.enable_x64`` and the other
configuration contexts are thread-local, and a callback runs on one of XLA's
threads (or lodestar's pool), where they are not set. JAX moves a callback's
arguments onto the CPU with ``device_put`` and checks its results with
``canonicalize_value``, both of which read that thread's ``jax_enable_x64``:
called from ``with jax.enable_x64(True):`` in a process without global x64, a
float64 argument would arrive as float32 (two scores distinct only beyond
float32's resolution would tie) and a float64 result would be refused
("Incorrect output dtype"). So :func:`call` carries every 64-bit array across
the boundary as pairs of uint32 words (a bitcast, which no configuration
changes), fixes every dtype at trace time, and reads no configuration at run
time. Decision 0013 records the failure and the choice.

**Threads.** NumPy's sorts and ufuncs release the GIL, and XLA's own threads
wait while a callback runs, so a callback shares its rows out among a pool of
threads sized to the cores this process may use (decision 0012).

**Programs from several threads.** ``jax.pure_callback`` places a callback's
arguments with ``device_put``, and XLA's CPU client makes that copy on the
same thread pool that runs dispatched programs. When several Python threads
each run a program with a callback at once, every thread of that pool can be
a callback waiting for its copy, and none is left to make it: the process
hangs. :func:`one_program_at_a_time` dispatches lodestar's own kernels, when
called eagerly on the CPU, only once every program another thread dispatched
has finished, so the programs in flight are always one thread's (decision
0026).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer

# Host callbacks work through a batch this many items at a time: their NumPy
# temporaries then stay a few cache-sized blocks instead of many copies of the
# whole batch (decision 0011).
CHUNK_ITEMS = 1 << 16
# A thread is given at least this many items; below it, handing work over
# costs more than it saves.
MIN_ITEMS_PER_THREAD = 1 << 15


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


# More threads than cores only makes timings swing between runs.
THREADS = max(1, min(_usable_cores(), 8))
_pool: tuple[int, ThreadPoolExecutor] | None = None


def row_chunks(rows: int, n: int, items: int | None = None):
    """Slices of about ``items`` items (default :data:`CHUNK_ITEMS`) of ``rows`` rows of ``n``."""
    step = max(1, (items or CHUNK_ITEMS) // max(n, 1))
    return (slice(start, min(start + step, rows)) for start in range(0, rows, step))


def for_row_chunks(work: Callable[[slice], None], rows: int, n: int, items: int | None = None):
    """Call ``work(chunk)`` for every chunk of rows, the chunks spread over threads.

    ``work`` must write only its own chunk's rows of preallocated outputs. The
    first exception raised by any chunk propagates.
    """
    chunks = list(row_chunks(rows, n, items))
    threads = min(THREADS, len(chunks), rows * n // MIN_ITEMS_PER_THREAD)
    if threads <= 1:
        for chunk in chunks:
            work(chunk)
        return

    def run_share(share):
        for chunk in share:
            work(chunk)

    # list() waits for every share and re-raises the first failure.
    list(thread_pool().map(run_share, [chunks[t::threads] for t in range(threads)]))


def thread_pool() -> ThreadPoolExecutor:
    """The host callbacks' thread pool, created afresh in a forked child."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (os.getpid(), ThreadPoolExecutor(THREADS, thread_name_prefix="lodestar-host"))
    return _pool[1]


# Taken by every eager call of a lodestar kernel on the CPU. Re-entrant: a
# kernel's Python wrapper may call another kernel.
_ONE_PROGRAM = threading.RLock()
# The results of eager kernel calls not yet known to be finished, with the
# thread that dispatched them: ``[(thread ident, results), ...]``.
_in_flight: list[tuple[int, object]] = []


def _runs_on_cpu(leaves) -> bool:
    """Whether a call with these argument leaves runs on the CPU."""
    for leaf in leaves:
        if isinstance(leaf, jax.Array):
            return next(iter(leaf.devices())).platform == "cpu"
    return jax.default_backend() == "cpu"


def _finished(results) -> bool:
    # is_ready is a method of JAX's arrays that jax.Array's annotations omit.
    leaves = jax.tree.leaves(results)
    return all(cast(Any, leaf).is_ready() for leaf in leaves if isinstance(leaf, jax.Array))


_Kernel = TypeVar("_Kernel", bound=Callable)


def one_program_at_a_time(kernel: _Kernel) -> _Kernel:
    """``kernel`` (a jitted function that may hold host callbacks), safe from many threads.

    Called eagerly on the CPU, the kernel is dispatched under a process-wide
    lock, and only once every program that another thread dispatched this way
    has finished: the programs in flight are then always one thread's (see the
    module docstring). One thread's calls still overlap as JAX's asynchronous
    dispatch lets them, so a single-threaded caller, the command line among
    them, waits no longer than before and stays interruptible. Called with
    tracers (inside the caller's ``jit``, ``vmap`` or ``grad``), or on an
    accelerator, it is called as it is: a traced call runs as part of the
    caller's program, and an accelerator's callbacks do not use the CPU
    client's pool.
    """

    @functools.wraps(kernel)
    def run(*args, **kwargs):
        leaves = jax.tree.leaves((args, kwargs))
        if any(isinstance(leaf, Tracer) for leaf in leaves) or not _runs_on_cpu(leaves):
            return kernel(*args, **kwargs)
        me = threading.get_ident()
        with _ONE_PROGRAM:
            others = [results for thread, results in _in_flight if thread != me]
            if others:
                jax.block_until_ready(others)
            _in_flight[:] = [
                (thread, results)
                for thread, results in _in_flight
                if thread == me and not _finished(results)
            ]
            results = kernel(*args, **kwargs)
            _in_flight.append((me, results))
            return results

    return cast(_Kernel, run)


def result_type(like: jax.Array, dtype, shape: Sequence[int] | None = None):
    """A callback result's type: ``like``'s sharding and manual axes, ``dtype`` and ``shape``."""
    aval = jax.typeof(like).update(dtype=jnp.dtype(dtype), weak_type=False)
    return aval if shape is None else aval.update(shape=tuple(shape))


def _wide(dtype) -> bool:
    """Whether JAX's run-time canonicalisation could narrow this dtype."""
    return jnp.dtype(dtype).itemsize == 8


def _to_words(x: jax.Array) -> jax.Array:
    return lax.bitcast_convert_type(x, jnp.uint32) if _wide(x.dtype) else x


def _from_words(words: np.ndarray, dtype) -> np.ndarray:
    words = np.asarray(words)
    if not _wide(dtype):
        return words
    return np.ascontiguousarray(words).view(dtype).reshape(words.shape[:-1])


def call(function: Callable[..., Sequence[np.ndarray]], results: Sequence, *args: jax.Array):
    """``function(*numpy_args)`` on the host, as :func:`jax.pure_callback` with ``vmap`` support.

    Args:
      function: Takes NumPy arrays of the arguments' dtypes and shapes (with
        any ``vmap`` axes in front) and returns a sequence of NumPy arrays,
        one per result, of the declared dtypes.
      results: The result types, from :func:`result_type`.
      *args: JAX arrays.

    Returns:
      A tuple of JAX arrays of the declared types.
    """
    arg_dtypes = [jnp.dtype(a.dtype) for a in args]
    result_dtypes = [jnp.dtype(r.dtype) for r in results]
    transported = [
        r.update(shape=(*r.shape, 2), dtype=jnp.dtype(jnp.uint32)) if _wide(r.dtype) else r
        for r in results
    ]

    def on_host(*words):
        arrays = [_from_words(w, d) for w, d in zip(words, arg_dtypes, strict=True)]
        out = function(*arrays)
        return tuple(
            np.ascontiguousarray(o, dtype=d).view(np.uint32).reshape(*o.shape, 2)
            if _wide(d)
            else np.asarray(o, dtype=d)
            for o, d in zip(out, result_dtypes, strict=True)
        )

    found = jax.pure_callback(
        on_host,
        tuple(transported),
        *[_to_words(a) for a in args],
        vmap_method="broadcast_all",
    )
    return tuple(
        lax.bitcast_convert_type(f, d) if _wide(d) else f
        for f, d in zip(found, result_dtypes, strict=True)
    )
