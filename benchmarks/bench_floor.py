"""An exact NDCG on CPU against one ``np.sort``: both of lodestar's routes, timed.

Run from a clone as ``python benchmarks/bench_floor.py [options]``; ``--help``
lists the options. Only JAX and NumPy are needed.

What is measured
----------------
The exact kernels' bars are set against one ``np.sort`` of the scores (the
unit of every ratio here): NDCG@k within 2x, full-list NDCG within 3x. This
script times, in one process and on the batch of ``bench_exact.py`` (float32
scores with two decimals, labels 0..4):

* **NumPy's selections**: ``np.sort`` and ``np.partition`` of the scores and
  of the labels, what any method of these measures must do at the least (the
  ranking's top and the ideal's);
* **lodestar** ``ndcg`` at ``k`` and on the full list, jitted, on each route
  (decision 0043): the compiled kernels (``native``) and XLA's sort
  (``xla``, what ``LODESTAR_KERNELS=xla`` or a missing extension gives).

Every figure is a median after a warm-up call; ratios to ``np.sort`` in this
one process are what to read, not milliseconds.
"""

from __future__ import annotations

import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    base_parser,
    default_reps,
    fmt_ms,
    machine_info,
    parse_shape,
    print_header,
    save_json,
    time_host,
    time_jax,
    warm_up_process,
)
from bench_exact import make_batch

from lodestar import _native, metrics

DEFAULT_SHAPE = (10_000, 100)
QUICK_SHAPE = (64, 100)
DEFAULT_K = 10
HOST_BUDGET_S = 10.0
# The exact kernels' bars, over one np.sort of the scores.
BARS = {"ndcg_at_k": 2.0, "ndcg": 3.0}


def _select_top(rows: np.ndarray, k: int, how: str) -> np.ndarray:
    """The ``k`` largest of each row: unordered with ``partition``, all sorted with ``sort``."""
    if how == "partition":
        return np.partition(rows, rows.shape[-1] - k, axis=-1)
    return np.sort(rows, axis=-1)


def _on_route(route: str, fn, *example):
    """``fn`` compiled for ``example`` with the kernels (``native``) or XLA's sort (``xla``).

    The route is chosen when a program is traced, and lodestar's own programs
    are traced once per shape and process: JAX's caches are cleared before
    and after, or the second route would reuse the first one's programs.
    """
    applies = _native.applies
    jax.clear_caches()
    if route == "xla":
        _native.applies = lambda: False  # trace-time choice: XLA's sort
    try:
        return jax.jit(fn).lower(*example).compile()
    finally:
        _native.applies = applies
        jax.clear_caches()


def measure(batch: int, n: int, k: int, reps: int, seed: int) -> dict:
    """Every timing of the report, in milliseconds, for one ``(batch, n)`` and cut-off."""
    scores_np, labels_np = make_batch(np.random.default_rng(seed), batch, n)
    scores, labels = jnp.asarray(scores_np), jnp.asarray(labels_np)

    def host_ms(fn, *args):
        return 1e3 * time_host(fn, args, reps, HOST_BUDGET_S)[0]

    def jax_ms(fn, *args):
        return 1e3 * time_jax(fn, args, reps)[0]

    k = min(k, n)
    ms = {
        "np_sort": host_ms(np.sort, scores_np),
        "np_sort_labels": host_ms(np.sort, labels_np),
        "np_partition": host_ms(partial(_select_top, k=k, how="partition"), scores_np),
        "np_partition_labels": host_ms(partial(_select_top, k=k, how="partition"), labels_np),
    }
    routes = ("native", "xla") if _native.loaded() else ("xla",)
    for route in routes:
        at_k = _on_route(route, partial(metrics.ndcg, k=k), scores, labels)
        ms[f"{route}_ndcg_at_k"] = jax_ms(at_k, scores, labels)
        ms[f"{route}_ndcg"] = jax_ms(_on_route(route, metrics.ndcg, scores, labels), scores, labels)
    return {
        "batch": batch,
        "n": n,
        "k": k,
        "routes": list(routes),
        "ms": ms,
        "over_np_sort": {name: value / ms["np_sort"] for name, value in ms.items()},
    }


ROWS = (
    ("np_sort", "np.sort of the scores (the unit)"),
    ("np_sort_labels", "np.sort of the labels"),
    ("np_partition", "np.partition of the scores, top k"),
    ("np_partition_labels", "np.partition of the labels, top k"),
    ("native_ndcg_at_k", "lodestar ndcg@k, compiled kernels"),
    ("native_ndcg", "lodestar ndcg, compiled kernels"),
    ("xla_ndcg_at_k", "lodestar ndcg@k, XLA's sort (fallback)"),
    ("xla_ndcg", "lodestar ndcg, XLA's sort (fallback)"),
)


def print_report(report: dict) -> None:
    print(f"\n{report['batch']}x{report['n']}, k={report['k']}, routes {report['routes']}")
    print(f"{'':46} {'ms':>8} {'x np.sort':>10}")
    for key, label in ROWS:
        if key in report["ms"]:
            print(f"{label:46} {fmt_ms(report['ms'][key]):>8} {report['over_np_sort'][key]:>9.2f}x")
    for measure_name, measure in (("NDCG@k", "ndcg_at_k"), ("NDCG", "ndcg")):
        route = report["routes"][0]
        found = report["over_np_sort"][f"{route}_{measure}"]
        bar = BARS[measure]
        verdict = "within" if found <= bar else "above"
        print(f"{measure_name} ({route}): {found:.2f}x np.sort, {verdict} the bar of {bar:g}x")


def main(argv=None) -> int:
    """Run the measurement and print it; the exit status is 0 unless interrupted."""
    parser = base_parser(
        "Time lodestar's exact NDCG on CPU, on both routes, against one np.sort.",
        "a small batch, 1 repetition (a smoke test)",
    )
    parser.add_argument(
        "--shape", type=parse_shape, metavar="BxN", help="the batch (default 10000x100)"
    )
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="the cut-off (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k must be at least 1, got {args.k}")
    reps = default_reps(args)
    batch, n = args.shape or (QUICK_SHAPE if args.quick else DEFAULT_SHAPE)
    info = machine_info()
    print_header("lodestar: an exact NDCG against np.sort", info, ratios="the ratios to np.sort")
    if jax.default_backend() != "cpu":
        print("the kernels are CPU code: run this on the CPU backend (JAX_PLATFORMS=cpu).")
        return 1
    warm_up_process(0.2 if args.quick else 1.0)
    try:
        report = measure(batch, n, args.k, reps, args.seed)
    except KeyboardInterrupt:
        return 1
    print_report(report)
    save_json(args.json, info, reps, args.quick, bars=BARS, result=report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
