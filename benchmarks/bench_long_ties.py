"""Long tied blocks: tie-averaged ``lodestar evaluate`` against ``--ignore-ties``.

Interpolated precision (``iprec_at_recall``, and ``-m official``, which holds
it) and ``G`` are not sums over positions, so their averages over every order
of a tied block take work that grows with the block (decisions 0016 and
0017); with ``--ignore-ties`` the same command ranks ties by document id, as
trec_eval does. This script writes TREC files whose lists end in one long tie
and runs each command as a separate process (``bench_cli.measure``):

* **block-M**: one query whose M documents all score 0, 5 % of them relevant
  (M = 1,000, 3,000, 10,000 and 20,000), ``-m iprec_at_recall`` (eleven
  levels);
* **tail**: 10 queries of 1,000 documents, the first 100 with distinct
  scores and the last 900 tied at 0, 5 % relevant on grades 1–2,
  ``-m official``;
* **graded-3000**: one query of 3,000 tied documents, 5 % relevant on grades
  1–4, ``-m G``.

Each command runs cold (an empty compilation cache) and warm (the cache
filled), tie-averaged and with ``--ignore-ties``. The ratio is the
tie-averaged time over ``--ignore-ties``'s; for the blocks it also prints the
extra seconds of averaging per million of ``m * r`` (block length times
relevant items), which stays level when the work grows linearly in both.
Absolute times on a shared machine move by tens of percent.

``--quick`` runs one block of 300 documents once, so that CI can run the
script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
from bench_cli import measure

RELEVANT_SHARE = 0.05


def write_block(directory, name, documents, grades, seed):
    """One query of ``documents`` tied documents; returns (qrels, run, relevant count)."""
    rng = np.random.default_rng(seed)
    relevant = rng.random(documents) < RELEVANT_SHARE
    labels = np.where(relevant, rng.integers(1, grades + 1, documents), 0)
    qrels, run = os.path.join(directory, f"{name}.qrels"), os.path.join(directory, f"{name}.run")
    with open(qrels, "w") as q, open(run, "w") as r:
        for d, label in enumerate(labels):
            q.write(f"q1 0 d{d} {label}\n")
            r.write(f"q1 Q0 d{d} {d + 1} 0 run\n")
    return qrels, run, int(relevant.sum())


def write_tail(directory, seed, queries=10, head=100, tail=900):
    """Lists of ``head`` distinct scores, then ``tail`` documents tied at 0."""
    rng = np.random.default_rng(seed)
    qrels, run = os.path.join(directory, "tail.qrels"), os.path.join(directory, "tail.run")
    with open(qrels, "w") as q, open(run, "w") as r:
        for query in range(queries):
            for d in range(head + tail):
                label = rng.integers(1, 3) if rng.random() < RELEVANT_SHARE else 0
                q.write(f"q{query} 0 d{d} {label}\n")
                score = (head + tail - d) / 10 if d < head else 0
                r.write(f"q{query} Q0 d{d} {d + 1} {score} run\n")
    return qrels, run


def time_command(qrels, run, measures, cache, reps):
    """Seconds of cold and warm runs, tie-averaged and with ``--ignore-ties``."""
    env = {**os.environ, "LODESTAR_COMPILATION_CACHE": cache}
    command = [sys.executable, "-m", "lodestar", "evaluate", qrels, run, "-m", *measures]
    seconds = {}
    for label, extra in (("averaged", []), ("ignore_ties", ["--ignore-ties"])):
        shutil.rmtree(cache, ignore_errors=True)
        cold = measure([*command, *extra], env)[0]
        warm = min(measure([*command, *extra], env)[0] for _ in range(reps))
        seconds[label] = {"cold": cold, "warm": warm}
    return seconds


def report(name, seconds, work=None):
    averaged, plain = seconds["averaged"], seconds["ignore_ties"]
    line = (
        f"  {name:<14} averaged {averaged['cold']:7.2f} s cold {averaged['warm']:7.2f} s warm"
        f" | --ignore-ties {plain['cold']:6.2f} / {plain['warm']:6.2f} s"
        f" | ratio warm {averaged['warm'] / plain['warm']:5.1f}"
    )
    if work:
        extra = (averaged["warm"] - plain["warm"]) / (work / 1e6)
        line += f" | {extra:6.2f} s per million m*r"
    print(line, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one block of 300 documents, once")
    parser.add_argument(
        "--blocks",
        type=int,
        nargs="+",
        default=[1_000, 3_000, 10_000, 20_000],
        help="lengths of the one-query tied blocks",
    )
    parser.add_argument("--reps", type=int, default=2, help="warm runs; the fastest is kept")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.blocks, args.reps = [300], 1
    results = {
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg(),
            "python": sys.version.split()[0],
        },
        "workloads": {},
    }
    with tempfile.TemporaryDirectory() as directory:
        cache = os.path.join(directory, "cache")
        print("tie-averaged against --ignore-ties (ratio: averaged / --ignore-ties)")
        for documents in args.blocks:
            name = f"block-{documents}"
            qrels, run, relevant = write_block(directory, name, documents, 1, seed=documents)
            seconds = time_command(qrels, run, ["iprec_at_recall"], cache, args.reps)
            work = documents * relevant
            results["workloads"][name] = {"m_times_r": work, "seconds": seconds}
            report(name, seconds, work)
        if not args.quick:
            qrels, run = write_tail(directory, seed=1)
            seconds = time_command(qrels, run, ["official"], cache, args.reps)
            results["workloads"]["tail"] = {"seconds": seconds}
            report("tail", seconds)
            qrels, run, _ = write_block(directory, "graded", 3_000, 4, seed=3)
            seconds = time_command(qrels, run, ["G"], cache, args.reps)
            results["workloads"]["graded-3000"] = {"seconds": seconds}
            report("graded-3000", seconds)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(results, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
