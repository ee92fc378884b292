"""Helpers shared by the benchmark scripts in this folder.

The scripts are run from a clone as ``python benchmarks/bench_<name>.py``;
Python puts the script's own folder first on ``sys.path``, so ``import
_common`` finds this module. Nothing here is installed with lodestar: the
harness, and the one stand-in it gives JAX for Rax 0.4.0, belong to the
benchmarks, not to the library (decision 0019).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
import types
from importlib import metadata

import jax
import jax.numpy as jnp
import numpy as np

import lodestar
from lodestar import _native, _ranking

# --------------------------------------------------------------------------- #
# Environment
# --------------------------------------------------------------------------- #


def version(name: str) -> str:
    """The installed version of a distribution, or ``"not installed"``."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _wraps(wrapped, namestr=None, docstr=None, **kwargs):
    del namestr, docstr, kwargs  # metadata only; functools.wraps copies it
    return functools.wraps(wrapped)


def install_jax_util_shim() -> bool:
    """Give JAX the ``jax.util.wraps`` that Rax 0.4.0's transformations call.

    Rax 0.4.0's transformations (``approx_t12n`` and friends) decorate with
    ``jax.util.wraps``, which newer JAX removed. That helper only copied a
    function's name and docstring, so :func:`functools.wraps` stands in for it:
    the shim changes no computation. It is installed only when ``jax.util`` is
    absent.

    Returns:
      Whether the shim was installed by this call.
    """
    if hasattr(jax, "util"):
        return False
    jax.util = types.SimpleNamespace(wraps=_wraps)
    return True


def optional_import(name: str, disabled_by: str | None = None):
    """``(module, None)``, or ``(None, reason)`` when disabled or not importable.

    Args:
      name: The module to import.
      disabled_by: The option that disabled it (then nothing is imported), or None.
    """
    if disabled_by:
        return None, f"disabled ({disabled_by})"
    try:
        # The package first: a submodule already imported would otherwise be
        # returned even where its package is blocked or gone.
        importlib.import_module(name.partition(".")[0])
        return importlib.import_module(name), None
    except ImportError:
        return None, "not installed"
    except Exception as error:  # noqa: BLE001 - any import failure is reported
        return None, f"import failed: {type(error).__name__}: {error}"


def import_rax(disabled: bool):
    """``(rax module, None)``, or ``(None, reason)``; installs the shim first."""
    if not disabled:
        install_jax_util_shim()
    return optional_import("rax", "--no-rax" if disabled else None)


def machine_info(extra_versions=(), **extra) -> dict:
    """Machine, JAX and package versions; ``extra_versions`` are more package names."""
    versions = {
        "lodestar": lodestar.__version__,
        "jax": jax.__version__,
        "jaxlib": version("jaxlib"),
        "numpy": np.__version__,
    }
    versions.update({name: version(name) for name in extra_versions})
    device = jax.devices()[0]
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "jax_devices": [str(d) for d in jax.devices()],
        "jax_backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "<unset>"),
        "versions": versions,
        **extra,
    }


def print_header(title: str, info: dict, extra_lines=(), ratios: str = "the ratios") -> None:
    """The banner every benchmark prints before timing: machine, JAX, versions."""
    print("=" * 100)
    print(title)
    print(
        f"machine : {info['platform']}; processor={info['processor']!r}; "
        f"os.cpu_count()={info['cpu_count']} (usable {info['cpu_affinity']}); "
        f"load={info['load_average']}"
    )
    print(
        f"jax     : devices={info['jax_devices']} backend={info['jax_backend']} "
        f"XLA_FLAGS={info['XLA_FLAGS']}"
    )
    print(
        "versions: "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items())
        + f", python {info['python']}"
    )
    for line in extra_lines:
        print(line)
    print(f"NOTE: absolute ms on a shared machine are noise; read {ratios}.")
    print("=" * 100)


def resolved_method(n: int, k: int | None, *, ignore_ties: bool = False) -> str:
    """The engine method ``method="auto"`` runs for this list (this backend)."""
    k = None if k is None or k >= n else k
    chosen = _ranking.choose_method(n, k, ignore_ties=ignore_ties)
    if chosen in ("sort_or_native", "pairwise_or_native"):
        return "native" if _native.applies() else chosen.removesuffix("_or_native")
    return chosen


# --------------------------------------------------------------------------- #
# Timing and memory
# --------------------------------------------------------------------------- #


def warm_up_process(seconds: float = 1.0) -> None:
    """Run throwaway jitted work so the first timed cell is not penalised.

    The first computations of a process run several times slower (thread pool
    and allocator start-up); without this the first cell of a table is off.
    """
    x = jnp.asarray(np.random.default_rng(1).random((250_000, 4), np.float32))
    fn = jax.jit(lambda s: jnp.sum(s[..., None, :] > s[..., :, None], axis=-1))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        jax.block_until_ready(fn(x))


# With more than one repetition asked for, sub-millisecond functions are timed
# for at least this long: a median of five 0.2 ms calls is mostly scheduler
# noise on a shared machine.
MIN_TIMED_SECONDS = 0.25
MAX_SAMPLES = 5000


def time_jax(fn, args, reps: int) -> tuple[float, float, object]:
    """``(median seconds, first-call seconds, result)`` of ``fn(*args)``.

    The first call (which compiles a plain jitted function) is not among the
    timed calls; every call is waited for with :func:`jax.block_until_ready`.
    There are ``reps`` timed calls, or with ``reps > 1`` as many more as fill
    ``MIN_TIMED_SECONDS`` (at most ``MAX_SAMPLES``).
    """
    start = time.perf_counter()
    result = jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    samples = []

    def more():
        if len(samples) < reps:
            return True
        return reps > 1 and sum(samples) < MIN_TIMED_SECONDS and len(samples) < MAX_SAMPLES

    while more():
        start = time.perf_counter()
        result = jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), first, result


def time_host(fn, args, reps: int, budget_s: float) -> tuple[float, object, int]:
    """Median seconds of a host function; the first call is a sample too.

    Returns ``(median, last result, repetitions used)``; stops early once the
    calls made so far would overrun ``budget_s``.
    """
    samples = []
    result = None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn(*args)
        samples.append(time.perf_counter() - start)
        if sum(samples) + samples[-1] > budget_s:
            break
    return statistics.median(samples), result, len(samples)


def compile_with_memory(fn, args) -> tuple[object, dict]:
    """Compile ``jax.jit(fn)`` for ``args`` (arrays or shape structs).

    Returns:
      ``(compiled executable, memory)``. ``memory`` holds XLA's argument,
      output, temporary and aliased bytes and ``xla_peak_bytes`` =
      argument + output + temp - alias, or is empty where the backend gives no
      analysis.
    """
    compiled = jax.jit(fn).lower(*args).compile()
    analysis = compiled.memory_analysis()
    if analysis is None:
        return compiled, {}
    memory = {
        "argument_bytes": int(analysis.argument_size_in_bytes),
        "output_bytes": int(analysis.output_size_in_bytes),
        "temp_bytes": int(analysis.temp_size_in_bytes),
        "alias_bytes": int(analysis.alias_size_in_bytes),
    }
    memory["xla_peak_bytes"] = (
        memory["argument_bytes"]
        + memory["output_bytes"]
        + memory["temp_bytes"]
        - memory["alias_bytes"]
    )
    return compiled, memory


def host_peak_bytes(fn, args) -> int:
    """Peak bytes Python and NumPy allocate during one call (host callbacks)."""
    already = tracemalloc.is_tracing()
    if already:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        jax.block_until_ready(fn(*args))
        return tracemalloc.get_traced_memory()[1]
    finally:
        if not already:
            tracemalloc.stop()


def _device_peak() -> int | None:
    stats = jax.devices()[0].memory_stats()
    return None if not stats else stats.get("peak_bytes_in_use")


def device_peak_bytes(fn, args) -> tuple[int | None, bool | None]:
    """``(allocator high-water mark after one call, whether this call raised it)``.

    The mark is process-wide and cannot be reset, so it belongs to this call
    only when the call raised it. ``(None, None)`` on backends without
    allocator statistics (CPU).
    """
    before = _device_peak()
    if before is None:
        return None, None
    jax.block_until_ready(fn(*args))
    after = _device_peak()
    return after, after > before


# --------------------------------------------------------------------------- #
# Command line and report helpers
# --------------------------------------------------------------------------- #


def base_parser(description: str, quick_help: str, prog: str | None = None):
    """A parser with the options every benchmark has: --quick, --reps, --json."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument(
        "--reps",
        type=int,
        default=None,
        help="timed repetitions per cell (default 5; 1 with --quick)",
    )
    parser.add_argument("--json", metavar="PATH", help="write machine info and results here")
    return parser


def default_reps(args) -> int:
    """``--reps``, else 1 with ``--quick`` and 5 without."""
    return args.reps if args.reps is not None else (1 if args.quick else 5)


def fmt_ms(value) -> str:
    """Milliseconds with two decimals, ``-`` for a missing cell."""
    return "-" if value is None else f"{value:.2f}"


def fmt_ratio(a, b) -> str:
    """``a / b`` to three significant digits, ``-`` when either is missing."""
    return "-" if a is None or b is None or b == 0 else f"{a / b:.3g}x"


def rows_by_shape(results, rule: str):
    """Yield ``(shape, row)`` and print ``rule`` between rows of different shapes."""
    last_shape = None
    for r in results:
        shape = f"{r['batch']}x{r['n']}"
        if last_shape is not None and shape != last_shape:
            print(rule)
        last_shape = shape
        yield shape, r


def print_mismatches(title: str, mismatches) -> None:
    """Print problems in a banner that stands out from the tables."""
    print("\n" + "!" * 100)
    print(title)
    for line in mismatches:
        print("  " + line)
    print("!" * 100)


def save_json(path, info: dict, reps: int, quick: bool, **fields) -> None:
    """Write machine info, settings and ``fields`` to ``path`` (if given) and say so."""
    if not path:
        return
    payload = {"machine": info, "reps": reps, "quick": quick, **fields}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)
    print(f"wrote {path}")


def parse_shape(text: str) -> tuple[int, int]:
    """``"10000x100"`` -> ``(10000, 100)``; for argparse ``type=``."""
    parts = text.lower().replace("_", "").split("x")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected a shape BxN such as 10000x100, got {text!r}")
    return int(parts[0]), int(parts[1])
