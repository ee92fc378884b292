"""Wall-clock cost of lodestar's exact metrics against scikit-learn, Rax and a sort.

What is measured
----------------
For each batch shape ``(B, n)`` (default 10,000 x 100, 100,000 x 10 and
1,000 x 1,000) the script draws float32 scores rounded to two decimals, so that
ties occur (101 distinct values), and integer labels 0..4 stored as float32,
then times, in this one process:

* ``lodestar``: :func:`jax.jit` of ``jnp.mean(lodestar.metrics.<metric>(...))``
  (NDCG@10, full-list NDCG, DCG@10, full-list reciprocal rank), exact and
  tie-averaged;
* ``sklearn``: ``sklearn.metrics.ndcg_score`` / ``dcg_score`` with their
  defaults (``ignore_ties=False``, i.e. tie-averaged, the same quantity lodestar
  computes); scikit-learn has no reciprocal rank, so that cell is empty;
* ``rax``: :func:`jax.jit` of ``rax.ndcg_metric`` / ``rax.dcg_metric`` /
  ``rax.mrr_metric`` (``topn=10`` for the @10 rows). Rax's default gain is
  ``2**label - 1``; the script passes the *linear* ``gain_fn=lambda label:
  label`` so that the work and the value match lodestar's and scikit-learn's
  default. Rax breaks ties by position instead of averaging over them, so on
  tied data its values differ from the other two by design (its value is
  printed, not checked); it is the fastest conceivable "one sort" baseline
  written in JAX;
* ``sort``: the floor, one jitted ``jnp.sort(scores, axis=-1)`` of the same
  batch. Any exact metric must at least order each list; on CPU lodestar may
  beat this floor for full lists because it sorts with NumPy on the host
  (engine method ``"host"``), which is far faster than XLA's CPU sort.
  ``np.sort`` of the batch is shown as a second reference.

Each JAX function is compiled and run once (warm-up), then timed ``--reps``
times with :func:`jax.block_until_ready`; the median is reported. Inputs are
placed on the device before timing. scikit-learn gets NumPy arrays and fewer
repetitions when one call is slow (its total per cell is capped at about 15 s).

The ratios are the result; the milliseconds are not. On a shared two-core CI
machine absolute times move by tens of percent from run to run, while the
ratios ``sklearn/lodestar`` (speed-up over scikit-learn), ``rax/lodestar``
(> 1: lodestar faster) and ``lodestar/sort`` (cost over the sort floor) are
stable enough to compare.

Correctness is checked on the way: the mean over all lists of lodestar's
metric against scikit-learn's, and lodestar per list against scikit-learn per
list on the first lists of the batch. A difference above 1e-5 (NDCG, absolute)
or 1e-5 relative (DCG) is printed as ``MISMATCH`` and makes the script exit
with status 1.

Rax
---
Rax 0.4.0 (the latest release) installs and runs its plain metrics under
jax 0.10.2: ``/work/venv/bin/pip install rax==0.4.0``. ``import rax`` and
``rax.ndcg_metric`` / ``dcg_metric`` / ``mrr_metric`` need no shim. Only the
transformation helpers (``rax.approx_t12n``, ``bounded_t12n``, ...) are broken:
they call ``jax.util.wraps``, which jax removed, and fail at call time with
``AttributeError: module 'jax' has no attribute 'util'``. This script uses none
of them. Before timing, the script runs ``rax.ndcg_metric`` on a tie-free
example with a known value; if that (or the import) fails, the reason is
printed in the header and the Rax column shows ``-``. If Rax is not installed
at all the header says ``rax: not installed`` and the script runs without it.

Usage
-----
::

    python benchmarks/bench_exact.py                 # full run, a few minutes
    python benchmarks/bench_exact.py --quick         # CI smoke test, seconds
    python benchmarks/bench_exact.py --reps 9 --json results/exact.json
    python benchmarks/bench_exact.py --no-rax        # skip Rax even if present

``XLA_FLAGS`` is left as the environment sets it (normally unset); the header
prints it.
"""

from __future__ import annotations

import statistics
import sys
import time

import _common as common
import jax
import jax.numpy as jnp
import numpy as np

from lodestar import metrics

FULL_SHAPES = ((10_000, 100), (100_000, 10), (1_000, 1_000))
QUICK_SHAPES = ((200, 20), (50, 100))
K = 10
NDCG_TOLERANCE = 1e-5  # absolute, float32
DCG_TOLERANCE = 1e-5  # relative, float32
SKLEARN_BUDGET_S = 15.0  # total seconds spent timing one scikit-learn cell


# --------------------------------------------------------------------------- #
# Environment
# --------------------------------------------------------------------------- #


def load_rax(disabled: bool):
    """Import Rax and check one known value; return ``(module or None, status)``."""
    rax, failure = common.import_rax(disabled)
    if rax is None:
        return None, failure
    try:
        # Tie-free list: scores rank labels [3, 0, 2, 1]; linear gains.
        # DCG = 3 + 0 + 2/2 + 1/log2(5); ideal = 3 + 2/log2(3) + 1/2.
        scores = jnp.array([[0.9, 0.7, 0.5, 0.1]], jnp.float32)
        labels = jnp.array([[3.0, 0.0, 2.0, 1.0]], jnp.float32)
        got = float(jax.jit(lambda s, y: rax.ndcg_metric(s, y, gain_fn=_linear))(scores, labels))
        want = (3 + 1 + 1 / np.log2(5)) / (3 + 2 / np.log2(3) + 0.5)
        if abs(got - want) > 1e-5:
            return None, f"self-check failed: ndcg_metric gave {got}, expected {want}"
    except Exception as error:  # noqa: BLE001 - reported, never hidden
        return None, f"ndcg_metric failed: {type(error).__name__}: {error}"
    return rax, f"{common.version('rax')} (plain metrics OK; gain_fn=linear)"


def _linear(label):
    return label


def header(rax_status: str) -> dict:
    info = common.machine_info(("scikit-learn",), rax=rax_status)
    common.print_header("lodestar exact-metric benchmark", info, [f"rax: {rax_status}"])
    return info


# --------------------------------------------------------------------------- #
# Timing
# --------------------------------------------------------------------------- #


def time_median(fn, args, reps: int) -> float:
    """Median seconds of ``fn(*args)`` after one compiling warm-up call."""
    return common.time_jax(fn, args, reps)[0]


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


# --------------------------------------------------------------------------- #
# Cases
# --------------------------------------------------------------------------- #


def make_batch(rng, batch: int, n: int):
    scores = np.round(rng.random((batch, n)), 2).astype(np.float32)
    labels = rng.integers(0, 5, size=(batch, n)).astype(np.float32)
    return scores, labels


def lodestar_fns():
    def mean_of(metric, **kw):
        return jax.jit(lambda s, y: jnp.mean(metric(s, y, **kw)))

    return {
        "ndcg@10": mean_of(metrics.ndcg, k=K),
        "ndcg": mean_of(metrics.ndcg),
        "dcg@10": mean_of(metrics.dcg, k=K),
        "rr": mean_of(metrics.reciprocal_rank),
    }


def rax_fns(rax):
    if rax is None:
        return {}
    return {
        "ndcg@10": jax.jit(lambda s, y: rax.ndcg_metric(s, y, topn=K, gain_fn=_linear)),
        "ndcg": jax.jit(lambda s, y: rax.ndcg_metric(s, y, gain_fn=_linear)),
        "dcg@10": jax.jit(lambda s, y: rax.dcg_metric(s, y, topn=K, gain_fn=_linear)),
        # Rax counts label >= 1 as relevant; lodestar label != 0: the same on 0..4.
        "rr": jax.jit(lambda s, y: rax.mrr_metric(s, y)),
    }


def sklearn_fns():
    from sklearn.metrics import dcg_score, ndcg_score

    # scikit-learn's signature is (y_true, y_score); ignore_ties=False default.
    return {
        "ndcg@10": lambda s, y: ndcg_score(y, s, k=K),
        "ndcg": lambda s, y: ndcg_score(y, s),
        "dcg@10": lambda s, y: dcg_score(y, s, k=K),
    }


def per_list_check(metric: str, scores, labels, lodestar_values, rows: int) -> float:
    """Max per-list difference (abs for NDCG, rel for DCG) over the first rows."""
    from sklearn.metrics import dcg_score, ndcg_score

    rows = min(rows, scores.shape[0])
    worst = 0.0
    for i in range(rows):
        s, y = scores[i : i + 1], labels[i : i + 1]
        if metric == "ndcg@10":
            ref = ndcg_score(y, s, k=K)
        elif metric == "ndcg":
            ref = ndcg_score(y, s)
        else:
            ref = dcg_score(y, s, k=K)
        diff = abs(float(lodestar_values[i]) - ref)
        if metric.startswith("dcg"):
            diff /= max(abs(ref), 1e-12)
        worst = max(worst, diff)
    return worst


def run(shapes, reps: int, rax, check_rows: int, seed: int) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    lo_fns = lodestar_fns()
    rx_fns = rax_fns(rax)
    sk_fns = sklearn_fns()
    per_list_fns = {
        "ndcg@10": jax.jit(lambda s, y: metrics.ndcg(s, y, k=K)),
        "ndcg": jax.jit(lambda s, y: metrics.ndcg(s, y)),
        "dcg@10": jax.jit(lambda s, y: metrics.dcg(s, y, k=K)),
    }
    sort_fn = jax.jit(lambda s: jnp.sort(s, axis=-1))
    results, mismatches = [], []
    for batch, n in shapes:
        scores_np, labels_np = make_batch(rng, batch, n)
        scores, labels = jax.device_put(scores_np), jax.device_put(labels_np)
        t_sort = time_median(sort_fn, (scores,), reps)
        t_npsort = time_host(np.sort, (scores_np,), max(1, reps), SKLEARN_BUDGET_S)[0]
        for metric, lo_fn in lo_fns.items():
            k = K if metric.endswith("@10") else None
            row = {
                "batch": batch,
                "n": n,
                "metric": metric,
                "engine": common.resolved_method(n, k),
                "lodestar_ms": 1e3 * time_median(lo_fn, (scores, labels), reps),
                "sort_ms": 1e3 * t_sort,
                "np_sort_ms": 1e3 * t_npsort,
                "sklearn_ms": None,
                "rax_ms": None,
                "note": "k >= n: same as full list" if k is not None and k >= n else "",
            }
            lo_value = float(lo_fn(scores, labels))
            row["lodestar_value"] = lo_value
            if metric in rx_fns:
                row["rax_ms"] = 1e3 * time_median(rx_fns[metric], (scores, labels), reps)
                row["rax_value"] = float(rx_fns[metric](scores, labels))
            if metric in sk_fns:
                t_sk, sk_value, used = time_host(
                    sk_fns[metric],
                    (scores_np, labels_np),
                    max(1, reps),
                    SKLEARN_BUDGET_S,
                )
                row["sklearn_ms"] = 1e3 * t_sk
                row["sklearn_reps"] = used
                row["sklearn_value"] = float(sk_value)
                mean_diff = abs(lo_value - sk_value)
                if metric.startswith("dcg"):
                    mean_diff /= max(abs(sk_value), 1e-12)
                per_list = np.asarray(per_list_fns[metric](scores, labels))
                list_diff = per_list_check(metric, scores_np, labels_np, per_list, check_rows)
                row["diff_mean_vs_sklearn"] = mean_diff
                row["diff_per_list_vs_sklearn"] = list_diff
                tolerance = DCG_TOLERANCE if metric.startswith("dcg") else NDCG_TOLERANCE
                if mean_diff > tolerance or list_diff > tolerance:
                    mismatches.append(
                        f"{batch}x{n} {metric}: lodestar {lo_value!r}"
                        f" vs sklearn {sk_value!r}; mean diff {mean_diff:.3g},"
                        f" worst per-list diff {list_diff:.3g}"
                        f" (first {min(check_rows, batch)} lists),"
                        f" tolerance {tolerance:g}"
                    )
            results.append(row)
            print(
                f"  done {batch}x{n} {metric:8s} lodestar {row['lodestar_ms']:.2f} ms",
                file=sys.stderr,
                flush=True,
            )
    return results, mismatches


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def print_table(results, rax_status: str) -> None:
    head = (
        f"{'shape':>13} {'metric':8} {'engine':8} | {'lodestar':>9} {'sklearn':>9} "
        f"{'rax':>9} {'jnp.sort':>9} {'np.sort':>8} | {'sk/lo':>8} {'rax/lo':>7} "
        f"{'lo/sort':>7} {'lo/np':>7} | {'|lo-sk|':>8}"
    )
    print()
    print(
        "Times in ms (median). Ratios: sk/lo = speed-up over scikit-learn; "
        "rax/lo > 1 means lodestar is faster;"
    )
    print(
        "lo/sort = lodestar's cost over one jitted jnp.sort of the batch (the floor). "
        "engine = lodestar's tie_blocks method."
    )
    print(
        "lo/np = lodestar over np.sort of the batch (on CPU NumPy's sort is the "
        "real floor: XLA's CPU sort is much slower)."
    )
    print("|lo-sk| = |mean lodestar - mean sklearn| (relative for dcg).")
    print(head)
    print("-" * len(head))
    for shape, r in common.rows_by_shape(results, "-" * len(head)):
        diff = r.get("diff_mean_vs_sklearn")
        lo = r["lodestar_ms"]
        cells = [
            f"{shape:>13} {r['metric']:8} {r['engine']:8} |",
            f"{common.fmt_ms(lo):>9}",
            f"{common.fmt_ms(r['sklearn_ms']):>9}",
            f"{common.fmt_ms(r['rax_ms']):>9}",
            f"{common.fmt_ms(r['sort_ms']):>9}",
            f"{common.fmt_ms(r['np_sort_ms']):>8} |",
            f"{common.fmt_ratio(r['sklearn_ms'], lo):>8}",
            f"{common.fmt_ratio(r['rax_ms'], lo):>7}",
            f"{common.fmt_ratio(lo, r['sort_ms']):>7}",
            f"{common.fmt_ratio(lo, r['np_sort_ms']):>7} |",
            f"{'-' if diff is None else f'{diff:.1e}':>8}",
        ]
        note = f"  ({r['note']})" if r["note"] else ""
        print(" ".join(cells) + note)
    print()
    print("Notes: sklearn has no reciprocal rank. Rax ran with gain_fn=lambda label: label")
    print("(linear, as lodestar and sklearn), not its 2^label-1 default.")
    print("Rax breaks ties by position, not by averaging, so its values differ on tied data")
    print(f"by design (values in --json). rax: {rax_status}")


def main(argv=None) -> int:
    parser = common.base_parser(__doc__.split("\n")[0], "tiny shapes, 1 repetition (CI smoke test)")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax even if installed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    reps = common.default_reps(args)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    check_rows = 20 if args.quick else 200

    rax, rax_status = load_rax(args.no_rax)
    info = header(rax_status)
    common.warm_up_process(0.2 if args.quick else 1.0)
    wall = time.perf_counter()
    results, mismatches = run(shapes, reps, rax, check_rows, args.seed)
    print_table(results, rax_status)
    wall = time.perf_counter() - wall
    print(f"\nshapes={list(shapes)} reps={reps} wall={wall:.1f}s")
    if mismatches:
        common.print_mismatches(
            "MISMATCH: lodestar disagrees with scikit-learn beyond tolerance:", mismatches
        )
    else:
        print(
            f"check: lodestar matches scikit-learn within {NDCG_TOLERANCE:g}"
            f" (NDCG abs, DCG rel) on every mean and on the first {check_rows}"
            " lists of each shape."
        )
    common.save_json(
        args.json, info, reps, args.quick, results=results, mismatches=mismatches, wall_s=wall
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
