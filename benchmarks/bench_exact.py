"""Exact measures timed against one sort, scikit-learn and Rax, in one process.

Run from a clone as ``python benchmarks/bench_exact.py [options]``; ``--help``
lists the options. Only JAX and NumPy are needed:
scikit-learn and Rax are imported when present, and the report says which
references ran and why the others did not.

What is measured
----------------
For each batch shape ``(B, n)`` the benchmark draws float32 scores rounded to
two decimals (101 distinct values, so ties occur) and integer labels 0..4
stored as float32, places them on the default device and, in this one process,
times (median of ``--reps`` calls after a compiling call, each waited for with
:func:`jax.block_until_ready`):

* every public function of :mod:`lodestar.metrics` that takes a cut-off, jitted
  and per list, at ``k`` (row ``<metric>@10`` by default) and on the full list
  (row ``<metric>``); tie-averaged, as by default. Options a metric requires
  come from :data:`REQUIRED_OPTIONS` (``err``'s ``max_label`` is 4); a metric
  that fails to run is reported and the exit status is 1;
* **the floor**: one jitted ``jnp.sort(scores, axis=-1)`` of the same batch.
  Any exact metric over a full list must at least order each list, so
  ``lo/sort``, the metric's time over this sort's, says what the metric costs
  beyond ordering. On CPU, ``np.sort`` of the batch is a second, stricter floor
  (``lo/np``): XLA's CPU sort is far slower than NumPy's, and lodestar's
  compiled kernels are measured against the faster of the two (decision 0043);
* **scikit-learn** ``dcg_score`` / ``ndcg_score`` (tie-averaged, the same
  quantity) on NumPy arrays, where a counterpart exists. lodestar's per-list
  values on the first lists are checked against it; a difference above
  :data:`SKLEARN_TOLERANCE` prints ``MISMATCH`` and the exit status is 1.
  Batches above :data:`SKLEARN_MAX_ELEMENTS` are only checked, not timed;
* **Rax** ``dcg_metric``, ``ndcg_metric``, ``mrr_metric``, ``precision_metric``,
  ``recall_metric`` and ``ap_metric``, jitted and per list, with ``topn=k`` on
  the cut-off rows and a linear ``gain_fn`` so that the work matches lodestar's
  default gain. Rax breaks ties by position instead of averaging, so its values
  are recorded, not checked.

Every ratio is lodestar's time over the reference's: below 1, lodestar is
faster. Absolute milliseconds on a shared machine move by tens of percent
between runs; ratios taken in one process are what to compare.

Memory
------
Each function's peak memory is read from its compiled executable
(``jax.jit(f).lower(...).compile().memory_analysis()``): argument, output and
temporary bytes of XLA's buffer assignment, which already reuses buffers whose
lifetimes do not overlap. The peak is ``argument + output + temp - alias``.
The compiled kernels' row buffers (a few rows' worth per thread) are not
seen by XLA's buffer assignment; Python and NumPy allocations during one call
(none on the kernels' route) are measured with :mod:`tracemalloc` and added.
``x input`` is the peak over the bytes of the
arguments (scores and labels). On an accelerator the device allocator's
``peak_bytes_in_use`` after the call is also recorded; it is a process-wide
high-water mark, so it is attributed to a row only when that row raised it.
``--memory-shapes`` analyses further shapes by compiling alone, without
allocating them.
"""

from __future__ import annotations

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from _common import (
    base_parser,
    compile_with_memory,
    default_reps,
    device_peak_bytes,
    fmt_ms,
    fmt_ratio,
    host_peak_bytes,
    import_rax,
    machine_info,
    optional_import,
    parse_shape,
    print_header,
    print_mismatches,
    resolved_method,
    rows_by_shape,
    save_json,
    time_host,
    time_jax,
    version,
    warm_up_process,
)

from lodestar import _ranking, _registry

DEFAULT_SHAPES = ((10_000, 100), (100_000, 10), (1_000, 1_000))
DEFAULT_MEMORY_SHAPES = ((1_000_000, 100), (10_000, 10_000))
QUICK_SHAPES = ((200, 20), (50, 100))
DEFAULT_K = 10
SKLEARN_TOLERANCE = 1e-5  # NDCG absolute, DCG relative: float32 sums of n terms
SKLEARN_BUDGET_S = 15.0  # total seconds spent timing one scikit-learn cell
SKLEARN_MAX_ELEMENTS = 20_000_000  # larger batches: per-list check only
# Targets stated for exact NDCG; reported, not asserted.
SORT_TARGET_FULL = 1.5  # full-list NDCG over one jnp.sort
SORT_TARGET_CUTOFF = 1.0  # NDCG@k over one jnp.sort
MEMORY_TARGET = 3.0  # peak over the input bytes
MB = 1e6

# --------------------------------------------------------------------------- #
# The functions compared
# --------------------------------------------------------------------------- #


def _linear(label):
    return label


# lodestar metric -> (Rax function name, extra keyword arguments). Rax counts a
# label >= 1 as relevant, lodestar a label != 0: the same on labels 0..4.
RAX_COUNTERPARTS = {
    "dcg": ("dcg_metric", {"gain_fn": _linear}),
    "ndcg": ("ndcg_metric", {"gain_fn": _linear}),
    "reciprocal_rank": ("mrr_metric", {}),
    "precision": ("precision_metric", {}),
    "recall": ("recall_metric", {}),
    "average_precision": ("ap_metric", {}),
}
SKLEARN_COUNTERPARTS = ("dcg", "ndcg")  # sklearn.metrics.<name>_score, tie-averaged


def exact_rows(k: int) -> dict[str, tuple[str, int | None]]:
    """Row name -> ``(function name, cut-off)`` for every exact measure of the registry.

    Every measure gets a cut-off row and a full-list row, so a measure added
    to ``lodestar._registry`` is benchmarked without changes here. Measures
    sharing one function (``gm_map`` is MAP averaged differently) are timed
    once.
    """
    rows, seen = {}, set()
    for measure in _registry.MEASURES.values():
        if measure.function_path in seen:
            continue
        seen.add(measure.function_path)
        name = measure.function.__name__
        if measure.cutoff:
            rows[f"{name}@{k}"] = (name, k)
        rows[name] = (name, None)
    return rows


# The benchmark's labels run 0..MAX_LABEL; options a measure requires take
# these values where they depend on the labels, its registry example otherwise.
MAX_LABEL = 4
REQUIRED_OPTIONS = {"max_label": MAX_LABEL}


def lodestar_fn(name: str, k: int | None):
    """The measure per list at cut-off ``k``, given the options it requires."""
    measure = next(m for m in _registry.MEASURES.values() if m.function.__name__ == name)
    required = {**measure.required_options}
    required.update({o: v for o, v in REQUIRED_OPTIONS.items() if o in required})
    cut = {"k": k} if measure.cutoff else {}
    return lambda s, y: measure.function(s, y, **cut, **required)


def load_rax(disabled: bool):
    """Import Rax and check one known value; return ``(module or None, status)``."""
    rax, failure = import_rax(disabled)
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
    return rax, f"{version('rax')} (gain_fn=linear)"


def rax_fn(rax, name: str, k: int | None):
    """Rax's per-list counterpart of a lodestar row, or None."""
    if rax is None or name not in RAX_COUNTERPARTS:
        return None
    function, options = RAX_COUNTERPARTS[name]
    metric = getattr(rax, function)
    return lambda s, y: metric(s, y, topn=k, reduce_fn=None, **options)


def load_sklearn(disabled: bool):
    """``(sklearn.metrics module or None, status)``."""
    sklearn_metrics, failure = optional_import(
        "sklearn.metrics", "--no-sklearn" if disabled else None
    )
    return sklearn_metrics, failure or version("scikit-learn")


def sklearn_fn(sklearn_metrics, name: str, k: int | None):
    """scikit-learn's batch-mean counterpart ``f(scores, labels)``, or None."""
    if sklearn_metrics is None or name not in SKLEARN_COUNTERPARTS:
        return None
    score = getattr(sklearn_metrics, f"{name}_score")
    # scikit-learn's signature is (y_true, y_score); ignore_ties=False default.
    return lambda s, y: score(y, s, k=k)


def per_list_difference(name, reference, scores, labels, values, rows: int) -> float:
    """Worst difference on the first lists: absolute for NDCG, relative for DCG."""
    worst = 0.0
    for i in range(min(rows, scores.shape[0])):
        want = reference(scores[i : i + 1], labels[i : i + 1])
        diff = abs(float(values[i]) - want)
        if name == "dcg":
            diff /= max(abs(want), 1e-12)
        worst = max(worst, diff)
    return worst


# --------------------------------------------------------------------------- #
# Measurement
# --------------------------------------------------------------------------- #


def make_batch(rng, batch: int, n: int):
    """Scores with ties (two decimals) and labels 0..MAX_LABEL, both float32."""
    scores = np.round(rng.random((batch, n)), 2).astype(np.float32)
    labels = rng.integers(0, MAX_LABEL + 1, size=(batch, n)).astype(np.float32)
    return scores, labels


def engine_fn(n: int, k: int | None):
    """The rank engine alone, as the metrics call it (the cut-off it exploits)."""
    rank_k = _ranking.exploited_cutoff(n, k)
    return lambda s: tuple(_ranking.tie_blocks(s, None, k=rank_k))


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


class Bench:
    """One benchmark run: the options, the references and the rows measured."""

    def __init__(self, rows, k, reps, rax, sklearn_metrics, check_rows, seed):
        self.rows = rows
        self.k = k
        self.reps = reps
        self.rax = rax
        self.sklearn = sklearn_metrics
        self.check_rows = check_rows
        self.rng = np.random.default_rng(seed)
        self.cpu = jax.default_backend() == "cpu"
        self.results = []
        self.memory_only = []
        self.mismatches = []
        self.failures = []

    def timed_shape(self, batch: int, n: int) -> None:
        """Time and measure every row on one drawn batch."""
        scores_np, labels_np = make_batch(self.rng, batch, n)
        scores, labels = jax.device_put(scores_np), jax.device_put(labels_np)
        input_bytes = scores_np.nbytes + labels_np.nbytes
        shape = {"batch": batch, "n": n, "dtype": "float32", "input_bytes": input_bytes}
        engines = {}
        rows = []
        # lodestar first: on an accelerator the allocator's high-water mark is
        # then raised by lodestar's cells, not hidden by a reference's.
        for row, (name, k) in self.rows.items():
            try:
                compiled, memory = compile_with_memory(lodestar_fn(name, k), (scores, labels))
                seconds, _, values = time_jax(compiled, (scores, labels), self.reps)
            except Exception as error:  # noqa: BLE001 - reported, exit status 1
                self.failures.append(f"{batch}x{n} {row}: {type(error).__name__}: {error}")
                continue
            values = np.asarray(values)
            if self.cpu:
                memory["host_peak_bytes"] = host_peak_bytes(compiled, (scores, labels))
            device_peak, raised = device_peak_bytes(compiled, (scores, labels))
            rank_k = _ranking.exploited_cutoff(n, k)
            if rank_k not in engines:
                engines[rank_k] = compile_with_memory(engine_fn(n, k), (scores,))[1]
            rows.append(
                {
                    **shape,
                    "metric": row,
                    "k": k,
                    "engine": resolved_method(n, k),
                    "lodestar_ms": 1e3 * seconds,
                    "lodestar_mean": float(np.mean(values)),
                    **self._memory_fields(memory, input_bytes, engines[rank_k]),
                    "device_peak_bytes": device_peak,
                    "device_peak_raised_here": raised,
                    "note": "k >= n: same as the full list" if k is not None and k >= n else "",
                    "_values": values,
                }
            )
            _progress(f"{batch}x{n} {row:24s} lodestar {1e3 * seconds:.2f} ms")
        floor = self._floors(scores, scores_np)
        for r in rows:
            r.update(floor)
            r["lodestar_over_sort"] = _ratio(r["lodestar_ms"], r["sort_ms"])
            r["lodestar_over_np_sort"] = _ratio(r["lodestar_ms"], r["np_sort_ms"])
            self._rax(r, scores, labels)
            self._sklearn(r, scores_np, labels_np)
            del r["_values"]
        self.results.extend(rows)

    def _memory_fields(self, memory: dict, input_bytes: int, engine: dict) -> dict:
        peak = memory.get("xla_peak_bytes")
        if peak is not None:
            peak += memory.get("host_peak_bytes", 0)
        return {
            **memory,
            "peak_bytes": peak,
            "peak_over_input": _ratio(peak, input_bytes),
            "engine_peak_bytes": engine.get("xla_peak_bytes"),
        }

    def _floors(self, scores, scores_np) -> dict:
        compiled, memory = compile_with_memory(lambda s: jnp.sort(s, axis=-1), (scores,))
        sort_seconds = time_jax(compiled, (scores,), self.reps)[0]
        np_seconds = None
        if self.cpu:
            np_seconds = time_host(np.sort, (scores_np,), max(1, self.reps), SKLEARN_BUDGET_S)[0]
        return {
            "sort_ms": 1e3 * sort_seconds,
            "sort_peak_bytes": memory.get("xla_peak_bytes"),
            "np_sort_ms": None if np_seconds is None else 1e3 * np_seconds,
        }

    def _rax(self, r, scores, labels) -> None:
        name, k = self.rows[r["metric"]]
        r.update(rax_ms=None, rax_peak_bytes=None, lodestar_over_rax=None)
        fn = rax_fn(self.rax, name, k)
        if fn is None:
            return
        try:
            compiled, memory = compile_with_memory(fn, (scores, labels))
            seconds, _, values = time_jax(compiled, (scores, labels), self.reps)
        except Exception as error:  # noqa: BLE001 - a reference failing is reported
            r["rax_error"] = f"{type(error).__name__}: {error}"
            return
        r["rax_ms"] = 1e3 * seconds
        r["rax_mean"] = float(np.mean(values))
        r["rax_peak_bytes"] = memory.get("xla_peak_bytes")
        r["lodestar_over_rax"] = _ratio(r["lodestar_ms"], r["rax_ms"])

    def _sklearn(self, r, scores_np, labels_np) -> None:
        name, k = self.rows[r["metric"]]
        r.update(sklearn_ms=None, lodestar_over_sklearn=None)
        fn = sklearn_fn(self.sklearn, name, k)
        if fn is None:
            return
        difference = per_list_difference(
            name, fn, scores_np, labels_np, r["_values"], self.check_rows
        )
        r["diff_per_list_vs_sklearn"] = difference
        r["checked_lists"] = min(self.check_rows, r["batch"])
        if scores_np.size <= SKLEARN_MAX_ELEMENTS:
            seconds, mean, used = time_host(
                fn, (scores_np, labels_np), max(1, self.reps), SKLEARN_BUDGET_S
            )
            r["sklearn_ms"] = 1e3 * seconds
            r["sklearn_reps"] = used
            r["sklearn_mean"] = float(mean)
            r["lodestar_over_sklearn"] = _ratio(r["lodestar_ms"], r["sklearn_ms"])
        if difference > SKLEARN_TOLERANCE:
            self.mismatches.append(
                f"{r['batch']}x{r['n']} {r['metric']}: worst per-list difference"
                f" {difference:.3g} on the first {r['checked_lists']} lists"
                f" (tolerance {SKLEARN_TOLERANCE:g}, {'relative' if name == 'dcg' else 'absolute'})"
            )

    def memory_shape(self, batch: int, n: int) -> None:
        """Compile every row for a shape without allocating it; record memory."""
        spec = jax.ShapeDtypeStruct((batch, n), jnp.float32)
        input_bytes = 2 * batch * n * spec.dtype.itemsize
        shape = {"batch": batch, "n": n, "dtype": "float32", "input_bytes": input_bytes}
        sort_peak = compile_with_memory(lambda s: jnp.sort(s, axis=-1), (spec,))[1]
        engines = {}
        for row, (name, k) in self.rows.items():
            try:
                memory = compile_with_memory(lodestar_fn(name, k), (spec, spec))[1]
            except Exception as error:  # noqa: BLE001 - reported, exit status 1
                self.failures.append(f"{batch}x{n} {row}: {type(error).__name__}: {error}")
                continue
            rank_k = _ranking.exploited_cutoff(n, k)
            if rank_k not in engines:
                engines[rank_k] = compile_with_memory(engine_fn(n, k), (spec,))[1]
            rax_peak = None
            fn = rax_fn(self.rax, name, k)
            if fn is not None:
                rax_peak = compile_with_memory(fn, (spec, spec))[1].get("xla_peak_bytes")
            self.memory_only.append(
                {
                    **shape,
                    "metric": row,
                    "k": k,
                    "engine": resolved_method(n, k),
                    **self._memory_fields(memory, input_bytes, engines[rank_k]),
                    "sort_peak_bytes": sort_peak.get("xla_peak_bytes"),
                    "rax_peak_bytes": rax_peak,
                }
            )
            _progress(f"{batch}x{n} {row:24s} memory compiled")


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def _fmt_mb(value) -> str:
    if value is None:
        return "-"
    mb = value / MB
    return f"{mb:.0f}" if mb >= 100 else f"{mb:.3g}"


def _fmt_over(peak, input_bytes) -> str:
    ratio = _ratio(peak, input_bytes)
    return "-" if ratio is None else f"{ratio:.2f}"


def print_time_table(results, cpu: bool) -> None:
    """Times and every ratio, one row per (shape, metric)."""
    np_head = f" {'np.sort':>8}" if cpu else ""
    np_ratio = f" {'lo/np':>7}" if cpu else ""
    head = (
        f"{'shape':>12} {'metric':24} {'engine':8} | {'lodestar':>9} {'jnp.sort':>9}{np_head}"
        f" {'sklearn':>9} {'rax':>9} | {'lo/sort':>7}{np_ratio} {'lo/sk':>7} {'lo/rax':>7}"
        f" | {'|lo-sk|':>8}"
    )
    print()
    print("Times in ms (median); every ratio is lodestar's time over the reference's,")
    print("below 1 lodestar is faster. lo/sort: over one jitted jnp.sort of the batch (the")
    print("floor)." + (" lo/np: over np.sort of the batch (CPU's stricter floor)." if cpu else ""))
    print("|lo-sk|: worst per-list difference from scikit-learn (relative for dcg).")
    print(head)
    print("-" * len(head))
    for shape, r in rows_by_shape(results, "-" * len(head)):
        lo = r["lodestar_ms"]
        diff = r.get("diff_per_list_vs_sklearn")
        cells = [
            f"{shape:>12} {r['metric']:24} {r['engine']:8} |",
            f"{fmt_ms(lo):>9}",
            f"{fmt_ms(r['sort_ms']):>9}",
            *([f"{fmt_ms(r['np_sort_ms']):>8}"] if cpu else []),
            f"{fmt_ms(r['sklearn_ms']):>9}",
            f"{fmt_ms(r['rax_ms']):>9} |",
            f"{fmt_ratio(lo, r['sort_ms']):>7}",
            *([f"{fmt_ratio(lo, r['np_sort_ms']):>7}"] if cpu else []),
            f"{fmt_ratio(lo, r['sklearn_ms']):>7}",
            f"{fmt_ratio(lo, r['rax_ms']):>7} |",
            f"{'-' if diff is None else f'{diff:.1e}':>8}",
        ]
        note = f"  ({r['note']})" if r["note"] else ""
        print(" ".join(cells) + note)


def print_memory_table(rows, title: str) -> None:
    """Peak memory per (shape, metric), lodestar against the sort and Rax."""
    head = (
        f"{'shape':>14} {'metric':24} {'engine':8} | {'input':>6} | {'peak':>7} {'x in':>6}"
        f" {'temp':>7} {'host':>7} {'engine':>7} | {'sort':>6} {'rax':>8} {'x in':>7}"
        f" | {'device':>7}"
    )
    print()
    print(title)
    print(
        "MB (10^6 bytes). peak = XLA argument + output + temp (compiled memory_analysis)"
        " + host-callback NumPy peak;"
    )
    print(
        "x in = peak / input (scores + labels); engine = the rank engine alone; "
        "device = allocator high-water mark (accelerators)."
    )
    print(f"'!' marks a peak above {MEMORY_TARGET:g}x the input.")
    print(head)
    print("-" * len(head))
    for shape, r in rows_by_shape(rows, "-" * len(head)):
        over = r["peak_over_input"]
        flag = "!" if over is not None and over > MEMORY_TARGET else " "
        device = r.get("device_peak_bytes")
        device_cell = _fmt_mb(device) + ("<" if r.get("device_peak_raised_here") is False else "")
        print(
            f"{shape:>14} {r['metric']:24} {r['engine']:8} | {_fmt_mb(r['input_bytes']):>6} |"
            f" {_fmt_mb(r['peak_bytes']):>7} {_fmt_over(r['peak_bytes'], r['input_bytes']):>5}"
            f"{flag} {_fmt_mb(r.get('temp_bytes')):>7} {_fmt_mb(r.get('host_peak_bytes')):>7}"
            f" {_fmt_mb(r['engine_peak_bytes']):>7} |"
            f" {_fmt_mb(r['sort_peak_bytes']):>6} {_fmt_mb(r['rax_peak_bytes']):>8}"
            f" {_fmt_over(r['rax_peak_bytes'], r['input_bytes']):>7} |"
            f" {'-' if device is None else device_cell:>7}"
        )
    if any(r.get("device_peak_raised_here") is False for r in rows):
        print("'<': that row did not raise the process's high-water mark; its peak is below it.")


def target_lines(results, memory_only, k: int) -> list[str]:
    """The stated targets for exact NDCG, each with the measured value."""
    lines = []
    for r in results:
        if r["metric"] == "ndcg" or r["metric"] == f"ndcg@{k}":
            target = SORT_TARGET_FULL if r["k"] is None else SORT_TARGET_CUTOFF
            ratio = r["lodestar_over_sort"]
            verdict = "met" if ratio <= target else "MISSED"
            lines.append(
                f"{r['batch']}x{r['n']} {r['metric']}: {ratio:.2f}x jnp.sort"
                f" (target <= {target:g}x): {verdict}"
            )
    for r in (*results, *memory_only):
        over = r["peak_over_input"]
        if r["metric"] in ("ndcg", f"ndcg@{k}") and over is not None:
            verdict = "met" if over <= MEMORY_TARGET else "MISSED"
            lines.append(
                f"{r['batch']}x{r['n']} {r['metric']}: peak {over:.2f}x input"
                f" (target <= {MEMORY_TARGET:g}x): {verdict}"
            )
    return lines


def main(argv=None) -> int:
    """Run the benchmark; the exit status is 1 on a disagreement, a failure or an interrupt."""
    parser = base_parser(
        "Time lodestar's exact metrics against one jnp.sort, scikit-learn and Rax, and"
        " report their peak memory.",
        "tiny shapes, 1 repetition, no memory-only shapes (a smoke test)",
        prog="lodestar bench",
    )
    parser.add_argument(
        "--shapes",
        type=parse_shape,
        nargs="+",
        metavar="BxN",
        help="batch shapes to time (default 10000x100 100000x10 1000x1000)",
    )
    parser.add_argument(
        "--memory-shapes",
        type=parse_shape,
        nargs="*",
        metavar="BxN",
        help="shapes whose memory is analysed by compiling only"
        " (default 1000000x100 10000x10000; none with --quick)",
    )
    parser.add_argument(
        "--metrics",
        metavar="ROWS",
        help="comma-separated rows, such as ndcg@10,ndcg (default: every metric, cut-off and full)",
    )
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="the cut-off (default 10)")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax even if installed")
    parser.add_argument(
        "--no-sklearn", action="store_true", help="skip scikit-learn even if installed"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error(f"--k must be at least 1, got {args.k}")
    reps = default_reps(args)
    shapes = args.shapes or (QUICK_SHAPES if args.quick else DEFAULT_SHAPES)
    memory_shapes = args.memory_shapes
    if memory_shapes is None:
        memory_shapes = () if args.quick else DEFAULT_MEMORY_SHAPES
    rows = exact_rows(args.k)
    if args.metrics:
        chosen = [name.strip() for name in args.metrics.split(",") if name.strip()]
        unknown = [name for name in chosen if name not in rows]
        if unknown:
            parser.error(f"unknown rows {unknown}; choose among {list(rows)}")
        rows = {name: rows[name] for name in chosen}

    rax, rax_status = load_rax(args.no_rax)
    sklearn_metrics, sklearn_status = load_sklearn(args.no_sklearn)
    info = machine_info(rax=rax_status, sklearn=sklearn_status)
    print_header(
        "lodestar exact-metric benchmark",
        info,
        [f"rax: {rax_status}", f"scikit-learn: {sklearn_status}"],
    )
    warm_up_process(0.2 if args.quick else 1.0)
    wall = time.perf_counter()
    bench = Bench(rows, args.k, reps, rax, sklearn_metrics, 20 if args.quick else 200, args.seed)
    interrupted = False
    try:
        for batch, n in shapes:
            bench.timed_shape(batch, n)
        for batch, n in memory_shapes:
            bench.memory_shape(batch, n)
    except KeyboardInterrupt:
        # A time limit (``timeout -s INT``) or Ctrl-C: keep what is finished.
        interrupted = True
    wall = time.perf_counter() - wall

    print_time_table(bench.results, bench.cpu)
    print_memory_table(bench.results, "Peak memory of the timed shapes")
    if bench.memory_only:
        print_memory_table(bench.memory_only, "Peak memory by compiling only (not run)")
    print()
    if rax is None:
        print(f"Rax did not run: {rax_status}.")
    else:
        print("Rax ran with gain_fn=lambda label: label (linear, as lodestar), not its")
        print("2^label-1 default; it breaks ties by position, so its values differ by design.")
    if sklearn_metrics is None:
        print(f"scikit-learn did not run: {sklearn_status}; lodestar's values were not checked.")
    else:
        print(f"scikit-learn has counterparts for {', '.join(SKLEARN_COUNTERPARTS)} only.")
    for line in target_lines(bench.results, bench.memory_only, args.k):
        print("target: " + line)
    print(
        f"\nshapes={[f'{b}x{n}' for b, n in shapes]}"
        f" memory_shapes={[f'{b}x{n}' for b, n in memory_shapes]} reps={reps} wall={wall:.1f}s"
    )
    if bench.failures:
        print_mismatches("FAILED: lodestar metrics that did not run:", bench.failures)
    if bench.mismatches:
        print_mismatches(
            "MISMATCH: lodestar disagrees with scikit-learn beyond tolerance:", bench.mismatches
        )
    elif sklearn_metrics is not None:
        print(
            f"check: lodestar matches scikit-learn within {SKLEARN_TOLERANCE:g} (NDCG abs,"
            " DCG rel) on the first lists of every shape."
        )
    save_json(
        args.json,
        info,
        reps,
        args.quick,
        k=args.k,
        targets={
            "ndcg_over_sort": SORT_TARGET_FULL,
            "ndcg_at_k_over_sort": SORT_TARGET_CUTOFF,
            "peak_over_input": MEMORY_TARGET,
        },
        results=bench.results,
        memory_only=bench.memory_only,
        mismatches=bench.mismatches,
        failures=bench.failures,
        interrupted=interrupted,
        wall_s=wall,
    )
    if interrupted:
        print("INTERRUPTED: the tables and the JSON hold the shapes finished before it.")
    return 1 if bench.mismatches or bench.failures or interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
