"""Comparing runs with Fisher's randomization test: lodestar against ranx.

What is measured
----------------
Synthetic per-query scores for ``--runs`` runs (default 5) on ``--queries``
queries (default 10,000): a query difficulty drawn from Beta(2, 5), shared by
every run, plus each run's small effect and its own noise, clipped to
[0, 1], so that the runs are correlated as real runs are and some pairs
differ significantly while others do not. One measure. Then, in this one
process:

* **lodestar**: ``lodestar.stats.compare_scores(scores, test="randomization",
  permutations=P, correction="none")``, which tests each of the
  ``runs * (runs - 1) / 2`` pairs once (10 for 5 runs), all with one shared
  set of ``P`` sign flips (float64, one matrix product per chunk). The first
  call compiles; the second is timed as the steady state. Both are printed.
* **ranx**: ``ranx.statistical_tests.compute_statistical_significance`` with
  ``stat_test="fisher"`` and ``n_permutations=P``, on the same arrays. This is
  the statistics step of ``ranx.compare`` (which first evaluates the runs
  from qrels; that step is not timed). ranx runs the test for every
  *ordered* pair (20 for 5 runs) and keeps one result per unordered pair, in
  numba-compiled code parallel over the permutations. A warm-up call on a
  tiny input compiles (or loads from numba's cache) before timing.

The ratio ``ranx / lodestar`` above 1 means lodestar is faster. The p-values
of the two are compared too: they are independent Monte Carlo estimates of
the same quantity, so they differ by about ``sqrt(2 p (1 - p) / P)``.

ranx at the full size takes about ten minutes of two cores: its cost is
linear in the permutations, so ``--ranx-permutations N`` times it with ``N``
and scales the time to ``P`` (said in the output). Without ranx installed
(``pip install ranx``) the script times lodestar alone and says so.

``--precision`` also measures what the decision on float64 rests on
(``docs/decisions/0014-significance-tests.md``): the same sign flips counted
in float32 and float64, with and without the tie tolerance, on scores
quantised to tenths (as P@10 is), where the exact counts are known from
integer arithmetic; and the time of each kernel.

Usage
-----
::

    python benchmarks/bench_compare.py                  # full size, ~15 minutes
    python benchmarks/bench_compare.py --ranx-permutations 5000
    python benchmarks/bench_compare.py --quick          # CI smoke test, seconds
    python benchmarks/bench_compare.py --precision --no-ranx
"""

from __future__ import annotations

import functools
import itertools
import sys
import time

import _common as common
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import stats
from lodestar.stats import _tests

EFFECTS = (0.0, 0.002, 0.004, 0.006, 0.012, 0.02, 0.03, 0.04)


def synthetic_scores(runs: int, queries: int, seed: int = 0) -> dict:
    """``{run: {"ndcg@10": values}}``: shared difficulty, per-run effect and noise."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 5, queries)
    return {
        f"run{r}": {
            "ndcg@10": np.clip(
                difficulty + EFFECTS[r % len(EFFECTS)] + 0.08 * rng.standard_normal(queries), 0, 1
            )
        }
        for r in range(runs)
    }


def time_lodestar(scores, permutations):
    """``(first seconds, second seconds, comparison)``."""
    start = time.perf_counter()
    stats.compare_scores(scores, test="randomization", permutations=permutations, correction="none")
    first = time.perf_counter() - start
    start = time.perf_counter()
    comparison = stats.compare_scores(
        scores, test="randomization", permutations=permutations, correction="none"
    )
    return first, time.perf_counter() - start, comparison


def load_ranx(disabled: bool):
    """``(compute_statistical_significance or None, status line)``."""
    module, failure = common.optional_import(
        "ranx.statistical_tests", "--no-ranx" if disabled else None
    )
    if module is None:
        return None, failure
    return module.compute_statistical_significance, common.version("ranx")


def time_ranx(significance, scores, permutations):
    """``(seconds, {(run, run): p})`` of ranx's Fisher test on every pair."""
    names = list(scores)
    tiny = {name: {m: v[:8] for m, v in scores[name].items()} for name in names}
    significance(names, tiny, stat_test="fisher", n_permutations=10)  # numba compile or load
    start = time.perf_counter()
    result = significance(
        names, scores, stat_test="fisher", n_permutations=permutations, max_p=0.05, random_seed=42
    )
    seconds = time.perf_counter() - start
    p_values = {
        (a, b): float(result[frozenset((a, b))]["ndcg@10"]["p_value"])
        for a, b in itertools.combinations(names, 2)
    }
    return seconds, p_values


# --------------------------------------------------------------------------- #
# Precision: float32 against float64 on the same sign flips
# --------------------------------------------------------------------------- #


@functools.partial(jax.jit, static_argnames=("flips", "dtype", "tolerance"))
def _counts(a, b, key, *, flips, dtype, tolerance):
    """lodestar's Monte Carlo count, with the arithmetic dtype and the tolerance as options.

    The same draws as ``lodestar.stats`` (same key, chunks and bit unpacking).
    """
    pairs, n = a.shape
    d = (a - b).astype(dtype)
    threshold = jnp.abs(jnp.sum(d, axis=-1))
    if tolerance:
        scale = jnp.sum(jnp.abs(a) + jnp.abs(b), axis=-1).astype(dtype)
        threshold = threshold - 2.0 * (n + 1) * jnp.finfo(dtype).eps * scale
    rows = _tests._chunk_rows(n)
    words = -(-n // 32)
    shifts = jnp.arange(32, dtype=jnp.uint32)

    def body(chunk, count):
        drawn = jax.random.bits(jax.random.fold_in(key, chunk), (rows, words), jnp.uint32)
        bits = ((drawn[:, :, None] >> shifts) & 1).reshape(rows, words * 32)[:, :n]
        signs = jnp.where(bits == 1, -1.0, 1.0).astype(dtype)
        flipped = jnp.matmul(signs, d.T, precision=lax.Precision.HIGHEST)
        valid = chunk * rows + jnp.arange(rows) < flips
        return count + jnp.sum((jnp.abs(flipped) >= threshold) & valid[:, None], axis=0)

    return lax.fori_loop(0, -(-flips // rows), body, jnp.zeros(pairs, jnp.int64))


def precision_check(runs, queries, permutations):
    """Counts and kernel times in float32 and float64 on scores in tenths."""
    rng = np.random.default_rng(1)
    difficulty = rng.integers(0, 11, queries)
    tenths = [
        np.clip(difficulty + rng.integers(-2, 3, queries) + (r > 2), 0, 10) for r in range(runs)
    ]
    first, second = zip(*itertools.combinations(range(runs), 2), strict=True)
    with jax.enable_x64(True):
        exact_a = jnp.asarray(np.stack([tenths[i] for i in first]), jnp.float64)
        exact_b = jnp.asarray(np.stack([tenths[j] for j in second]), jnp.float64)
        key = _tests._key(0)
        # Integer-valued float64 sums are exact: the reference counts.
        reference = np.asarray(
            _counts(exact_a, exact_b, key, flips=permutations, dtype="float64", tolerance=False)
        )
        a, b = exact_a / 10, exact_b / 10  # the values a metric reports
        rows = []
        for dtype, tolerance in itertools.product(("float32", "float64"), (False, True)):
            run = functools.partial(
                _counts, a, b, key, flips=permutations, dtype=dtype, tolerance=tolerance
            )
            jax.block_until_ready(run())
            start = time.perf_counter()
            counts = np.asarray(jax.block_until_ready(run()))
            seconds = time.perf_counter() - start
            off = counts.astype(np.int64) - reference
            rows.append(
                {
                    "dtype": dtype,
                    "tolerance": tolerance,
                    "seconds": seconds,
                    "pairs_wrong": int(np.sum(off != 0)),
                    "max_count_error": int(np.max(np.abs(off))),
                    "max_p_error": float(np.max(np.abs(off)) / (permutations + 1)),
                }
            )
    print(
        f"\nprecision: {len(first)} pairs x {queries:,} queries in tenths, "
        f"{permutations:,} sign flips; exact counts {reference.tolist()}"
    )
    print(f"  {'dtype':<8} {'tolerance':<10} {'kernel s':>9} {'pairs off':>10} {'max |dp|':>10}")
    for r in rows:
        print(
            f"  {r['dtype']:<8} {str(r['tolerance']):<10} {r['seconds']:9.2f} "
            f"{r['pairs_wrong']:>10} {r['max_p_error']:10.2e}"
        )
    return {"reference_counts": reference.tolist(), "rows": rows}


def main(argv=None) -> int:
    parser = common.base_parser(
        __doc__.splitlines()[0], "tiny sizes (3 runs x 200 queries, 2,000 flips): a smoke test"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--permutations", type=int, default=100_000)
    parser.add_argument(
        "--ranx-permutations",
        type=int,
        default=None,
        help="time ranx with this many permutations and scale linearly (default: the same)",
    )
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx even if installed")
    parser.add_argument(
        "--precision", action="store_true", help="also count in float32 and float64 (tenths)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.queries, args.permutations = 3, 200, 2_000
        args.ranx_permutations = None
    ranx_permutations = args.ranx_permutations or args.permutations
    significance, ranx_status = load_ranx(args.no_ranx)
    info = common.machine_info(extra_versions=("ranx", "numba"))
    common.print_header(
        "lodestar.stats.compare_scores (randomization test) against ranx's Fisher test",
        info,
        [f"ranx: {ranx_status}"],
    )
    common.warm_up_process()
    scores = synthetic_scores(args.runs, args.queries)
    pairs = args.runs * (args.runs - 1) // 2
    print(
        f"{args.runs} runs x {args.queries:,} queries, one measure, {pairs} pairs, "
        f"{args.permutations:,} permutations"
    )
    first, second, comparison = time_lodestar(scores, args.permutations)
    print(f"lodestar compare_scores: {second:8.2f} s  (first call, compiling: {first:.2f} s)")
    result = {
        "runs": args.runs,
        "queries": args.queries,
        "permutations": args.permutations,
        "lodestar_first_s": first,
        "lodestar_s": second,
    }
    if significance is None:
        print(f"ranx: {ranx_status}; lodestar timed alone.")
    else:
        seconds, ranx_p = time_ranx(significance, scores, ranx_permutations)
        scaled = seconds * args.permutations / ranx_permutations
        note = (
            ""
            if ranx_permutations == args.permutations
            else f"  (measured {seconds:.2f} s at {ranx_permutations:,} permutations, scaled)"
        )
        print(f"ranx compute_statistical_significance: {scaled:8.2f} s{note}")
        print(
            f"ratio ranx / lodestar: {scaled / second:.3g}x "
            f"(against lodestar's first call, compiling: {scaled / first:.3g}x)"
        )
        names = list(comparison.runs)
        differences = []
        for (a, b), p_ranx in ranx_p.items():
            p_ours = float(comparison.p_values[names.index(a), names.index(b), 0])
            error = np.sqrt(max(p_ours * (1 - p_ours), 1e-6) * 2 / min(ranx_permutations, 10**9))
            differences.append((abs(p_ours - p_ranx), error))
        worst = max(d / e for d, e in differences)
        print(
            f"p-values: largest |lodestar - ranx| = {max(d for d, _ in differences):.2e}, "
            f"at most {worst:.2f} Monte Carlo standard errors"
        )
        result.update(
            ranx_s=scaled,
            ranx_measured_s=seconds,
            ranx_permutations=ranx_permutations,
            ratio=scaled / second,
            ratio_first_call=scaled / first,
            largest_p_difference=max(d for d, _ in differences),
        )
    if args.precision:
        result["precision"] = precision_check(args.runs, args.queries, args.permutations)
    common.save_json(args.json, info, common.default_reps(args), args.quick, result=result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
