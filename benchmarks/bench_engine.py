"""Timings of the rank-and-tie engine's methods, to set ``method="auto"``'s thresholds.

What is measured
----------------
``lodestar._ranking.tie_blocks`` computes, for every item of every list, the
items ranked strictly above it and the size of its tie block. It has four
methods (see ``src/lodestar/_ranking.py``):

* ``pairwise``: O(n^2) comparisons per list, no sort (timed for n <= 512 only);
* ``topk``: the k largest values (NumPy's sort on CPU when ties are averaged,
  else ``lax.top_k``), then O(n k) comparisons; needs a cut-off k < n;
* ``sort``: one multi-operand XLA ``lax.sort`` plus a scatter;
* ``native``: lodestar's compiled CPU kernel (CPU only; decision 0043).

``method="auto"`` (``_ranking.choose_method``) picks ``topk`` for ``k < n``,
``k <= TOPK_MAX_K`` and ``n >= TOPK_MIN_N`` when ``n >= TOPK_MIN_RATIO_NATIVE * k``
(ties averaged on CPU, where the top values come from NumPy's sort), or, with
``lax.top_k``, when ``k <= TOPK_MAX_K_XLA`` and ``n > TOPK_ALWAYS_N`` or
``n >= TOPK_MIN_RATIO * k``;
otherwise ``pairwise`` for ``n <= PAIRWISE_MAX_N``, else ``native`` on CPU and
``sort`` elsewhere.

This script times each method, jitted, on float32 scores
rounded to two decimals (so ties occur), with every item real
(``valid=None``) and ``ignore_ties=False`` unless ``--ignore-ties``, for
n in (4, 8, 12, 16, 24, 32, 48, 64, 80, 100, 128, 256, 384, 512, 1000) with a
batch of about 1,000,000 elements (B = 1e6 / n), and for each cut-off k in (1, 10, 32, 64, 128) with
k < n. ``pairwise``, ``sort`` and ``native`` do not depend on k, so they are
timed once per n; ``topk`` and ``auto`` are timed per (n, k).

For each (n, k) the table gives the milliseconds of each method (median of
``--reps`` runs after a compiling warm-up, with :func:`jax.block_until_ready`),
each method's time relative to the fastest (``1.00`` = the winner), the
winner, what ``auto`` chooses, and ``auto``'s time relative to the winner.
Relative times are what to read: on a shared two-core machine the absolute
milliseconds move by tens of percent between runs; a threshold is right when
``auto`` stays within noise (about 1.2x) of the winner everywhere.

Measured on XLA:CPU with jaxlib 0.10.2 (two-core x86-64): ``pairwise`` and
``topk`` fall off a cliff, about 30-60x, as soon as the compared width exceeds
32 (``n > 32`` for ``pairwise``, ``k > 32`` for ``topk``); probe the edge with
``--ns 32 33 --ks 32 33``. Re-measure on any other backend or jaxlib.

Every method's output is also checked against ``native`` (exact counts for every
item; for ``topk`` only items whose block starts before k, and items past k
must report ``above >= k``); a disagreement prints ``MISMATCH`` and the script
exits with status 1.

Usage
-----
::

    python benchmarks/bench_engine.py                # full run, a few minutes
    python benchmarks/bench_engine.py --quick        # CI smoke test, seconds
    python benchmarks/bench_engine.py --reps 9 --json results/engine.json
    python benchmarks/bench_engine.py --ns 32 40 48 --ks 16 32 48   # probe a threshold

``XLA_FLAGS`` is left as the environment sets it (normally unset); the header
prints it. ``native`` needs the CPU backend; on other backends it is skipped.
"""

from __future__ import annotations

import sys
import time

import _common as common
import jax
import numpy as np

from lodestar import _ranking

FULL_NS = (4, 8, 12, 16, 24, 32, 48, 64, 80, 100, 128, 256, 384, 512, 1000)
FULL_KS = (1, 10, 32, 64, 128)
FULL_ELEMENTS = 1_000_000
QUICK_NS = (4, 16, 32, 100)
QUICK_KS = (1, 10, 64)
QUICK_ELEMENTS = 20_000
PAIRWISE_LIMIT = 512
FULL_METHODS = ("pairwise", "sort", "native")


THRESHOLDS = {
    name: getattr(_ranking, name)
    for name in (
        "PAIRWISE_MAX_N",
        "TOPK_MAX_K",
        "TOPK_MIN_N",
        "TOPK_MIN_RATIO_NATIVE",
        "TOPK_MIN_RATIO",
        "TOPK_ALWAYS_N",
        "TOPK_MAX_K_XLA",
    )
}


def thresholds_text() -> str:
    return ", ".join(f"{name}={value}" for name, value in THRESHOLDS.items())


def header() -> dict:
    info = common.machine_info(**THRESHOLDS)
    common.print_header(
        "lodestar rank-engine benchmark (tie_blocks methods)",
        info,
        [f"current thresholds: {thresholds_text()}"],
        ratios="the x-best ratios",
    )
    return info


def engine(method: str, k: int | None, ignore_ties: bool):
    return jax.jit(
        lambda s: tuple(_ranking.tie_blocks(s, None, k=k, ignore_ties=ignore_ties, method=method))
    )


def compare(name: str, got, ref, k: int | None) -> str | None:
    """Check a method's (above, tied) against the reference; None when they agree."""
    above, tied = (np.asarray(a) for a in got)
    ref_above, ref_tied = (np.asarray(a) for a in ref)
    if k is None:
        bad = (above != ref_above) | (tied != ref_tied)
    else:
        inside = ref_above < k
        bad = (inside & ((above != ref_above) | (tied != ref_tied))) | (~inside & (above < k))
    if bad.any():
        return f"{name}: {int(bad.sum())} items disagree with native"
    return None


def run(ns, ks, elements: int, reps: int, ignore_ties: bool, seed: int):
    rng = np.random.default_rng(seed)
    cpu = jax.default_backend() == "cpu"
    rows, mismatches = [], []
    for n in ns:
        batch = max(1, round(elements / n))
        scores = jax.device_put(np.round(rng.random((batch, n)), 2).astype(np.float32))
        full = {}
        outputs = {}
        for method in FULL_METHODS:
            if method == "pairwise" and n > PAIRWISE_LIMIT:
                continue
            if method == "native" and not cpu:
                continue
            seconds, _, outputs[method] = common.time_jax(
                engine(method, None, ignore_ties), (scores,), reps
            )
            full[method] = 1e3 * seconds
        reference = outputs.get("native", outputs.get("sort"))
        for method, out in outputs.items():
            problem = compare(f"n={n} {method}", out, reference, None)
            if problem:
                mismatches.append(problem)
        print(f"  done n={n} B={batch} full-list methods", file=sys.stderr, flush=True)
        for k in (None, *[k for k in ks if k < n]):
            times = dict(full)
            if k is not None:
                seconds, _, out = common.time_jax(engine("topk", k, ignore_ties), (scores,), reps)
                times["topk"] = 1e3 * seconds
                problem = compare(f"n={n} k={k} topk", out, reference, k)
                if problem:
                    mismatches.append(problem)
            auto_seconds, _, _ = common.time_jax(engine("auto", k, ignore_ties), (scores,), reps)
            best = min(times, key=times.get)
            choice = common.resolved_method(n, k, ignore_ties=ignore_ties)
            rows.append(
                {
                    "n": n,
                    "batch": batch,
                    "k": k,
                    "ms": times,
                    "winner": best,
                    "auto": choice,
                    "auto_ms": 1e3 * auto_seconds,
                    "auto_over_best": 1e3 * auto_seconds / times[best],
                    "chosen_over_best": times[choice] / times[best] if choice in times else None,
                }
            )
    return rows, mismatches


def print_table(rows) -> None:
    methods = ("pairwise", "topk", "sort", "native")
    head = (
        f"{'n':>5} {'B':>7} {'k':>5} | "
        + " ".join(f"{m:>9}" for m in methods)
        + " | "
        + " ".join(f"{m + '/best':>13}" for m in methods)
        + f" | {'winner':>8} {'auto':>8} {'auto/best':>9}"
    )
    print()
    print(
        "ms = median milliseconds of jitted tie_blocks(scores (B, n) float32,"
        " valid=None). x/best = time over the fastest method."
    )
    print(
        "k = '-' is the full list (no cut-off). auto/best = the measured"
        " method='auto' call over the winner (dispatch included)."
    )
    print(head)
    print("-" * len(head))
    last_n = None
    for r in rows:
        if last_n is not None and r["n"] != last_n:
            print("-" * len(head))
        last_n = r["n"]
        best = r["ms"][r["winner"]]
        ms = " ".join(f"{r['ms'][m]:9.2f}" if m in r["ms"] else f"{'-':>9}" for m in methods)
        rel = " ".join(
            f"{r['ms'][m] / best:13.2f}" if m in r["ms"] else f"{'-':>13}" for m in methods
        )
        k = "-" if r["k"] is None else str(r["k"])
        flag = "" if r["auto"] == r["winner"] else "  <- auto differs"
        print(
            f"{r['n']:>5} {r['batch']:>7} {k:>5} | {ms} | {rel} | {r['winner']:>8} "
            f"{r['auto']:>8} {r['auto_over_best']:9.2f}{flag}"
        )
    print()
    print(f"thresholds: {thresholds_text()}")
    misses = [r for r in rows if r["auto"] != r["winner"]]
    if misses:
        print(
            "cases where auto's method is not the fastest (chosen/best from the same "
            "timings; above ~1.2x is beyond noise):"
        )
        for r in misses:
            k = "-" if r["k"] is None else r["k"]
            print(
                f"  n={r['n']:>4} k={k!s:>4}: auto={r['auto']:8}"
                f" winner={r['winner']:8} "
                "chosen/best="
                + ("-" if r["chosen_over_best"] is None else f"{r['chosen_over_best']:.2f}")
            )
    else:
        print("auto chose the fastest method in every case.")


def main(argv=None) -> int:
    parser = common.base_parser(__doc__.split("\n")[0], "tiny sizes, 1 repetition (CI smoke test)")
    parser.add_argument(
        "--ignore-ties",
        action="store_true",
        help="time the ignore_ties=True variant of every method",
    )
    parser.add_argument(
        "--ns",
        type=int,
        nargs="+",
        metavar="N",
        help="list lengths to time instead of the default set",
    )
    parser.add_argument(
        "--ks",
        type=int,
        nargs="+",
        metavar="K",
        help="cut-offs to time instead of the default set",
    )
    parser.add_argument(
        "--elements",
        type=int,
        default=None,
        help="elements per batch, B = elements / n (default 1e6)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    reps = common.default_reps(args)
    ns, ks, elements = (
        (QUICK_NS, QUICK_KS, QUICK_ELEMENTS) if args.quick else (FULL_NS, FULL_KS, FULL_ELEMENTS)
    )
    ns = tuple(args.ns) if args.ns else ns
    ks = tuple(args.ks) if args.ks else ks
    elements = args.elements if args.elements else elements

    info = header()
    common.warm_up_process(0.2 if args.quick else 1.0)
    wall = time.perf_counter()
    rows, mismatches = run(ns, ks, elements, reps, args.ignore_ties, args.seed)
    print_table(rows)
    wall = time.perf_counter() - wall
    print(
        f"\nns={list(ns)} ks={list(ks)} elements~{elements} reps={reps} "
        f"ignore_ties={args.ignore_ties} wall={wall:.1f}s"
    )
    if mismatches:
        common.print_mismatches("MISMATCH between engine methods:", mismatches)
    else:
        print("check: every method agrees with native on every timed batch.")
    common.save_json(
        args.json,
        info,
        reps,
        args.quick,
        ignore_ties=args.ignore_ties,
        results=rows,
        mismatches=mismatches,
        wall_s=wall,
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
