"""The floor under an exact NDCG on CPU: what any host method must spend, timed.

Run from a clone as ``python benchmarks/bench_floor.py [options]``; ``--help``
lists the options. Only JAX and NumPy are needed.

What is measured
----------------
The exact kernels' bars are set against one ``np.sort`` of the scores (the
unit of every ratio here): NDCG@k within 2x, full-list NDCG within 3x. This
script times, in one process and on the batch of ``bench_exact.py`` (float32
scores with two decimals, labels 0..4), what every host method of those
measures must do at the least, so that a bar can be read against a floor
rather than against a guess:

* **the boundary**: a jitted ``jax.pure_callback`` that receives the scores
  and the labels and returns one zero per list, doing nothing else. Any
  method that ranks with NumPy inside a jitted measure pays it;
* **one selection of each input**: NDCG@k needs the k largest scores (the
  ranking's top) and the k largest labels (the ideal's). NumPy's fastest
  selection of a row is ``np.partition`` or ``np.sort``, whichever is faster
  here, so the script times both on each input;
* **the floors**: the boundary around those selections, the rows spread over
  lodestar's host thread pool as its callbacks spread them
  (``lodestar._host.for_row_chunks``), returning nothing useful. The top-k
  floor selects the scores and the labels; the full-list floor sorts both
  whole (a full ranking must order every score, and the ideal every label).
  A method at the floor would still have to count ties and sum the gains;
* **lodestar** ``ndcg`` at ``k`` and on the full list, jitted.

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

from lodestar import _host, metrics

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


def _floor_callback(batch: int, n: int, work):
    """A jitted callback that runs ``work(scores, labels)`` per chunk of rows, returns zeros."""

    def host(scores, labels):
        scores, labels = np.asarray(scores), np.asarray(labels)
        _host.for_row_chunks(lambda rows: work(scores[rows], labels[rows]), batch, n)
        return np.zeros(batch, np.float32)

    shape = jax.ShapeDtypeStruct((batch,), jnp.float32)
    return jax.jit(lambda s, y: jax.pure_callback(host, shape, s, y))


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
        "boundary": jax_ms(_floor_callback(batch, n, lambda s, y: None), scores, labels),
    }
    # The faster selection on each input, as a method at the floor would choose.
    top_how = "partition" if ms["np_partition"] < ms["np_sort"] else "sort"
    ideal_how = "partition" if ms["np_partition_labels"] < ms["np_sort_labels"] else "sort"

    def top_k_work(s, y):
        _select_top(s, k, top_how)
        _select_top(y, k, ideal_how)

    def full_work(s, y):
        np.sort(s, axis=-1)
        np.sort(y, axis=-1)

    ms["floor_ndcg_at_k"] = jax_ms(_floor_callback(batch, n, top_k_work), scores, labels)
    ms["floor_ndcg"] = jax_ms(_floor_callback(batch, n, full_work), scores, labels)
    ms["lodestar_ndcg_at_k"] = jax_ms(jax.jit(partial(metrics.ndcg, k=k)), scores, labels)
    ms["lodestar_ndcg"] = jax_ms(jax.jit(metrics.ndcg), scores, labels)
    return {
        "batch": batch,
        "n": n,
        "k": k,
        "threads": _host.THREADS,
        "top_k_selection": top_how,
        "ideal_selection": ideal_how,
        "ms": ms,
        "over_np_sort": {name: value / ms["np_sort"] for name, value in ms.items()},
    }


ROWS = (
    ("np_sort", "np.sort of the scores (the unit)"),
    ("np_sort_labels", "np.sort of the labels"),
    ("np_partition", "np.partition of the scores, top k"),
    ("np_partition_labels", "np.partition of the labels, top k"),
    ("boundary", "callback with both inputs, no work"),
    ("floor_ndcg_at_k", "floor of NDCG@k: boundary + two selections"),
    ("floor_ndcg", "floor of NDCG: boundary + two sorts"),
    ("lodestar_ndcg_at_k", "lodestar ndcg@k, jitted"),
    ("lodestar_ndcg", "lodestar ndcg, jitted"),
)


def print_report(report: dict) -> None:
    print(
        f"\n{report['batch']}x{report['n']}, k={report['k']}, host threads {report['threads']}"
        f" (selections: scores by {report['top_k_selection']},"
        f" labels by {report['ideal_selection']})"
    )
    print(f"{'':46} {'ms':>8} {'x np.sort':>10}")
    for key, label in ROWS:
        print(f"{label:46} {fmt_ms(report['ms'][key]):>8} {report['over_np_sort'][key]:>9.2f}x")
    for measure_name, measure in (("NDCG@k", "ndcg_at_k"), ("NDCG", "ndcg")):
        bar = BARS[measure]
        floor = report["over_np_sort"][f"floor_{measure}"]
        print(
            f"{measure_name}: bar {bar:g}x np.sort; the floor takes {floor:.2f}x"
            f" ({floor / bar:.0%} of the bar) before counting ties or summing gains;"
            f" lodestar {report['over_np_sort'][f'lodestar_{measure}']:.2f}x"
        )


def main(argv=None) -> int:
    """Run the measurement and print it; the exit status is 0 unless interrupted."""
    parser = base_parser(
        "Time what any host method of an exact NDCG must spend on CPU, beside lodestar's.",
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
    print_header("lodestar: the floor under an exact NDCG", info, ratios="the ratios to np.sort")
    if jax.default_backend() != "cpu":
        print("the floor is a host method's: run this on the CPU backend (JAX_PLATFORMS=cpu).")
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
