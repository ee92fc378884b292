"""Helpers shared by the benchmark scripts in this folder.

The scripts are run as ``python benchmarks/bench_<name>.py``; Python puts the
script's own folder first on ``sys.path``, so ``import _common`` finds this
module without installing anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata

import jax
import jax.numpy as jnp
import numpy as np

import lodestar
from lodestar import _ranking

# --------------------------------------------------------------------------- #
# Environment
# --------------------------------------------------------------------------- #


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def import_rax(disabled: bool):
    """``(rax module, None)``, or ``(None, status)`` when disabled or not importable."""
    if disabled:
        return None, "disabled (--no-rax)"
    try:
        import rax
    except ImportError:
        return None, "not installed"
    except Exception as error:  # noqa: BLE001 - any import failure is reported
        return None, f"import failed: {type(error).__name__}: {error}"
    return rax, None


def machine_info(extra_versions=(), **extra) -> dict:
    """Machine, JAX and package versions; ``extra_versions`` are more package names."""
    versions = {
        "lodestar": getattr(lodestar, "__version__", version("lodestar")),
        "jax": jax.__version__,
        "jaxlib": version("jaxlib"),
        "numpy": np.__version__,
    }
    versions.update({name: version(name) for name in extra_versions})
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "jax_devices": [str(d) for d in jax.devices()],
        "jax_backend": jax.default_backend(),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "<unset>"),
        "versions": versions,
        **extra,
    }


def print_header(title: str, info: dict, extra_lines=(), ratios: str = "the ratios") -> None:
    """The banner every script prints before timing: machine, JAX, versions."""
    print("=" * 100)
    print(title)
    print(
        f"machine : {info['platform']}; processor={info['processor']!r}; "
        f"os.cpu_count()={info['cpu_count']} (usable {info['cpu_affinity']})"
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


def resolved_method(n: int, k: int | None) -> str:
    """The engine method ``method="auto"`` runs for this list (this backend)."""
    k = None if k is None or k >= n else k
    chosen = _ranking.choose_method(n, k)
    if chosen == "sort_or_host":
        return "host" if jax.default_backend() == "cpu" else "sort"
    return chosen


# --------------------------------------------------------------------------- #
# Timing
# --------------------------------------------------------------------------- #


def warm_up_process(seconds: float = 1.0) -> None:
    """Run throwaway jitted work so the first timed cell is not penalised.

    The first computations of a process run several times slower (thread pool
    and allocator start-up); without this the first cell of the table is off.
    """
    x = jnp.asarray(np.random.default_rng(1).random((250_000, 4), np.float32))
    fn = jax.jit(lambda s: jnp.sum(s[..., None, :] > s[..., :, None], axis=-1))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        jax.block_until_ready(fn(x))


def time_jax(fn, args, reps: int) -> tuple[float, float, object]:
    """``(median seconds, first-call seconds, result)`` of ``fn(*args)``.

    The first call compiles and is not among the ``reps`` timed calls; every
    call is waited for with :func:`jax.block_until_ready`.
    """
    start = time.perf_counter()
    result = jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        result = jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), first, result


# --------------------------------------------------------------------------- #
# Command line and report
# --------------------------------------------------------------------------- #


def base_parser(description: str, quick_help: str) -> argparse.ArgumentParser:
    """A parser with the options every script has: --quick, --reps, --json."""
    parser = argparse.ArgumentParser(description=description)
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
    return args.reps if args.reps is not None else (1 if args.quick else 5)


def fmt_ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def fmt_ratio(a, b) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


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
