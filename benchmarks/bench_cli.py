"""``lodestar evaluate`` end to end, from the shell, against the tools IR people use instead.

What a user waits for is the whole command: starting Python, importing,
reading the files, joining, compiling, evaluating and printing. This script
writes synthetic TREC files, then runs each tool as a **separate process**,
one after the other, and records its wall time and peak resident memory
(``getrusage`` of the child):

* **lodestar**: ``lodestar evaluate QRELS RUN -m <six measures>``, tie-averaged
  and with ``--ignore-ties``; **cold** (an empty compilation cache) and
  **warm** (the cache filled by the previous run, as for a user's second
  evaluation of a run of the same shape);
* ``-m all_trec --trec-eval --ignore-ties``, warm, against trec_eval's
  ``-m all_trec`` (all 97 measures, output compared byte for byte by the
  test suite);
* **trec_eval** 10 (the C program), from ``--trec-eval BINARY`` or the
  ``TREC_EVAL`` environment variable, with the same six measures (skipped
  with a note where no binary is given: build it from
  https://github.com/usnistgov/trec_eval with ``make``);
* **pytrec_eval**, **ir_measures** and **ranx**, where installed: a Python
  process that reads the same files with the tool's own reader and evaluates
  the same measures.

The workloads are a 1,500 × 1,000 run (TREC depth), the same with every
query's documents its own (``trec-distinct``: 1.5 million distinct docnos, as
in a real run, where the others reuse 16 queries' documents), the same with
scores of two decimals in [0, 1) (``trec-two-decimals``: ties of about ten
documents, which trec_eval and ``--ignore-ties`` break by docno), a 10,000 ×
1,000 run (ten million lines) and a 1,000-line run. The six measures are NDCG@10,
NDCG, reciprocal rank, MAP, P@10 and recall@100. Every ratio is the other
tool's time over lodestar's: above 1, lodestar is faster. Absolute times on
a shared machine move by tens of percent; run it on a quiet machine, and
compare the ratios.

``--quick`` runs the small workload once, lodestar and trec_eval only, so
that CI can run the script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

LODESTAR_MEASURES = ["ndcg@10", "ndcg", "mrr", "map", "P@10", "recall@100"]
TREC_MEASURES = ["ndcg_cut.10", "ndcg", "recip_rank", "map", "P.10", "recall.100"]
ALL_TREC = "lodestar -m all_trec --trec-eval --ignore-ties, warm"
TREC_EVAL_ALL_TREC = "trec_eval (C) -m all_trec"
PRIMED = ("lodestar --ignore-ties, warm", ALL_TREC)
WORKLOADS = {
    "trec": (1_500, 1_000),
    "trec-distinct": (1_500, 1_000),
    "trec-two-decimals": (1_500, 1_000),
    "large": (10_000, 1_000),
    "small": (10, 100),
}
# Workloads whose queries retrieve documents of their own, as the queries of a
# real TREC run mostly do: 1.5 million distinct docnos instead of 16,000, which
# the readers and joins of every tool must hash and (with trec_eval's order of
# ties) sort.
DISTINCT_DOCNOS = {"trec-distinct"}
# A heavily tied run: scores in [0, 1) with two decimals, so that each query's
# 1,000 documents share 100 scores (ties of about ten), as a run whose scores
# were rounded does. trec_eval breaks such ties by docno, and so must
# lodestar with --ignore-ties.
TWO_DECIMALS = {"trec-two-decimals"}


def write_files(
    directory, queries, depth, judged, seed=0, *, distinct_docnos=False, two_decimals=False
):
    """A run and qrels: 16 distinct query blocks, reused under other query ids.

    Scores have three decimals in [0, 1000), so some documents tie, as in real
    runs (with ``two_decimals``, two decimals in [0, 1), so that most do); a
    tenth of each query's documents is judged on a 0–3 scale. With
    ``distinct_docnos`` each query's docnos carry its id, so that no two
    queries share a document.
    """
    rng = np.random.default_rng(seed)
    blocks, judgments = [], []
    scale, decimals = (1, 2) if two_decimals else (1000, 3)
    for _ in range(16):
        docnos = rng.choice(10**8, size=depth, replace=False)
        scores = np.round(rng.random(depth) * scale, decimals)
        order = np.argsort(-scores, kind="stable")
        blocks.append(
            [
                f"Q0 doc{docnos[i]:08d} {rank + 1} {scores[i]:.{decimals}f} bench".encode()
                for rank, i in enumerate(order)
            ]
        )
        labelled = rng.choice(depth, size=min(judged, depth), replace=False)
        levels = rng.choice(4, size=len(labelled), p=[0.6, 0.2, 0.15, 0.05])
        judgments.append(
            [f"0 doc{docnos[i]:08d} {r}".encode() for i, r in zip(labelled, levels, strict=True)]
        )
    run_path = os.path.join(directory, "run.txt")
    qrels_path = os.path.join(directory, "qrels.txt")
    with open(run_path, "wb") as run, open(qrels_path, "wb") as qrels:
        for q in range(queries):
            prefix = f"{q} ".encode()
            run_text = prefix + (b"\n" + prefix).join(blocks[q % 16]) + b"\n"
            qrels_text = prefix + (b"\n" + prefix).join(judgments[q % 16]) + b"\n"
            if distinct_docnos:
                own = f" q{q}doc".encode()
                run_text, qrels_text = (
                    run_text.replace(b" doc", own),
                    qrels_text.replace(b" doc", own),
                )
            run.write(run_text)
            qrels.write(qrels_text)
    return qrels_path, run_path


PYTREC_EVAL = """
import sys, pytrec_eval
def read(path, kind):
    table = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if kind == "qrels":
                table.setdefault(p[0], {})[p[2]] = int(p[3])
            else:
                table.setdefault(p[0], {})[p[2]] = float(p[4])
    return table
qrels, run = read(sys.argv[1], "qrels"), read(sys.argv[2], "run")
measures = {"ndcg_cut_10", "ndcg", "recip_rank", "map", "P_10", "recall_100"}
result = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
print(len(result))
"""

IR_MEASURES = """
import sys, ir_measures
from ir_measures import nDCG, RR, AP, P, R
measures = [nDCG@10, nDCG, RR, AP, P@10, R@100]
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
print(ir_measures.calc_aggregate(measures, qrels, run))
"""

RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
print(evaluate(qrels, run, ["ndcg@10", "ndcg", "mrr", "map", "precision@10", "recall@100"]))
"""


def measure(command, env=None):
    """Wall seconds and peak RSS (MB) of ``command``, run under a fresh Python parent.

    The parent's ``getrusage(RUSAGE_CHILDREN)`` then holds this command's peak
    alone, not the largest of every tool run so far.
    """
    wrapper = [
        sys.executable,
        "-c",
        "import json, resource, subprocess, sys, time;"
        "start = time.perf_counter();"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        "seconds = time.perf_counter() - start;"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024;"
        "print(json.dumps([done.returncode, seconds, peak, done.stderr[-2000:]]))",
        *command,
    ]
    out = subprocess.run(wrapper, env=env, capture_output=True, text=True, check=True).stdout
    status, seconds, peak, stderr = json.loads(out.splitlines()[-1])
    if status != 0:
        raise RuntimeError(f"{command[0]} failed ({status}): {stderr}")
    return seconds, peak


def tools(args, qrels, run, cache):
    """(name, command, environment) of every tool to time, with the reasons for those left out."""
    env = {**os.environ, "LODESTAR_COMPILATION_CACHE": cache}
    lodestar = [sys.executable, "-m", "lodestar", "evaluate", qrels, run, "-m", *LODESTAR_MEASURES]
    every = [sys.executable, "-m", "lodestar", "evaluate", qrels, run, "-m", "all_trec"]
    chosen = [
        ("lodestar, cold", lodestar, env),
        ("lodestar, warm", lodestar, env),
        ("lodestar --ignore-ties, warm", [*lodestar, "--ignore-ties"], env),
        (ALL_TREC, [*every, "--trec-eval", "--ignore-ties"], env),
    ]
    skipped = []
    binary = args.trec_eval or os.environ.get("TREC_EVAL") or shutil.which("trec_eval")
    if binary:
        command = [binary, *(f"-m{m}" for m in TREC_MEASURES), qrels, run]
        chosen.append(("trec_eval (C)", command, None))
        chosen.append((TREC_EVAL_ALL_TREC, [binary, "-m", "all_trec", qrels, run], None))
    else:
        skipped.append("trec_eval: no binary (give --trec-eval or set TREC_EVAL)")
    for name, module, script in (
        ("pytrec_eval", "pytrec_eval", PYTREC_EVAL),
        ("ir_measures", "ir_measures", IR_MEASURES),
        ("ranx", "ranx", RANX),
    ):
        if args.quick:
            skipped.append(f"{name}: not run with --quick")
            continue
        try:
            __import__(module)
        except ImportError:
            skipped.append(f"{name}: not installed")
            continue
        chosen.append((name, [sys.executable, "-c", script, qrels, run], None))
    return chosen, skipped


def run_workload(name, queries, depth, args, directory):
    qrels, run = write_files(
        directory,
        queries,
        depth,
        max(1, depth // 10),
        distinct_docnos=name in DISTINCT_DOCNOS,
        two_decimals=name in TWO_DECIMALS,
    )
    lines = queries * depth
    cache = os.path.join(directory, f"cache-{name}")
    print(f"\n{name}: {queries:,} queries x {depth:,} documents = {lines:,} lines")
    chosen, skipped = tools(args, qrels, run, cache)
    results = {}
    for rep in range(args.reps):
        for tool, command, env in chosen:
            if tool == "lodestar, cold":
                shutil.rmtree(cache, ignore_errors=True)  # nothing compiled yet
            if tool in ("ranx", "ir_measures") and lines > args.python_tool_lines:
                results.setdefault(tool, None)
                continue
            if tool in PRIMED:
                # Warm: its own kernel compiled and kept by a run just before
                # (the cold run of each repetition empties the cache).
                measure(command, env)
            seconds, peak = measure(command, env)
            best = results.get(tool)
            if best is None or seconds < best[0]:
                results[tool] = (seconds, max(peak, best[1] if best else 0))
            print(f"  [{rep + 1}/{args.reps}] {tool:<30} {seconds:8.2f} s {peak:8.0f} MB")
    for note in skipped:
        print(f"  skipped {note}")
    warm = results["lodestar, warm"][0]
    print(f"  {'tool':<30} {'seconds':>8} {'peak MB':>8} {'÷ lodestar warm':>16}")
    for tool, value in results.items():
        if value is None:
            print(f"  {tool:<30} {'—':>8}   (not run above {args.python_tool_lines:,} lines)")
            continue
        print(f"  {tool:<30} {value[0]:8.2f} {value[1]:8.0f} {value[0] / warm:16.2f}")
    if results.get(TREC_EVAL_ALL_TREC) and results.get("trec_eval (C)"):
        print(
            f"  lodestar ÷ trec_eval: default measures {warm / results['trec_eval (C)'][0]:.2f}, "
            f"all_trec {results[ALL_TREC][0] / results[TREC_EVAL_ALL_TREC][0]:.2f}"
        )
    return {
        "queries": queries,
        "depth": depth,
        "lines": lines,
        "results": {
            t: None if v is None else {"seconds": v[0], "peak_mb": v[1]} for t, v in results.items()
        },
        "skipped": skipped,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small workload once")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=list(WORKLOADS),
        default=["small", "trec", "trec-distinct", "trec-two-decimals", "large"],
        help="which workloads (default: all five)",
    )
    parser.add_argument("--trec-eval", metavar="BINARY", help="trec_eval's binary")
    parser.add_argument(
        "--reps", type=int, default=3, help="runs of each tool; the fastest is kept"
    )
    parser.add_argument(
        "--python-tool-lines",
        type=int,
        default=2_000_000,
        help="pure-Python tools (ranx, ir_measures) are skipped above this many lines",
    )
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.workloads, args.reps = ["small"], 1
    report = {
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "python": sys.version.split()[0],
            "load_average_before": list(os.getloadavg()),
        },
        "workloads": {},
    }
    with tempfile.TemporaryDirectory() as directory:
        for name in args.workloads:
            queries, depth = WORKLOADS[name]
            report["workloads"][name] = run_workload(name, queries, depth, args, directory)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(report, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
