"""``lodestar evaluate`` at scale: parse, join and evaluate times, and readers compared.

Writes a synthetic run of ``--queries`` x ``--depth`` lines (default
10,000 x 1,000, ten million lines) and qrels judging ``--judged`` documents
per query, then times, in this one process:

* reading the qrels and the run (lines per second for the run);
* joining them (labels, duplicate check, grouping by query);
* evaluating the default measures, tie-averaged and with ``--ignore-ties``
  (which also orders tied documents by docno);
* the reader against two simple alternatives on the first ``--compare-lines``
  lines: a Python loop over ``line.split()``, and ``np.loadtxt``.

``--quick`` runs a tiny size so that the script cannot rot. Timings on a
shared machine move by tens of percent; compare the ratios.
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from lodestar._trec import evaluate, join, names, read
from lodestar.cli import DEFAULT_MEASURES


def write_files(directory, queries, depth, judged, seed=0):
    """A run and qrels; 16 distinct query blocks, reused with other query ids."""
    rng = np.random.default_rng(seed)
    blocks, judgments = [], []
    for _ in range(16):
        docnos = rng.choice(10**8, size=depth, replace=False)
        scores = np.round(rng.random(depth) * 1000, 3)  # some ties, as in real runs
        order = np.argsort(-scores, kind="stable")
        blocks.append(
            [
                f"Q0 doc{docnos[i]:08d} {rank + 1} {scores[i]:.3f} bench".encode()
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
            run.write(prefix + (b"\n" + prefix).join(blocks[q % 16]) + b"\n")
            qrels.write(prefix + (b"\n" + prefix).join(judgments[q % 16]) + b"\n")
    return qrels_path, run_path


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def python_loop_reader(path):
    """The obvious reader: one ``split`` and one ``float`` per line."""
    qids, docnos, scores = [], [], []
    with open(path, "rb") as file:
        for line in file:
            fields = line.split()
            if len(fields) != 6:
                raise ValueError(line)
            qids.append(fields[0])
            docnos.append(fields[2])
            scores.append(float(fields[4]))
    return qids, docnos, np.array(scores)


def loadtxt_reader(path):
    table = np.loadtxt(path, dtype=str)
    return table[:, 0], table[:, 2], table[:, 4].astype(np.float64)


def compare_readers(run_path, lines, directory, rounds):
    """Each reader ``rounds`` times, interleaved; the fastest of each is kept."""
    sample = os.path.join(directory, "sample.txt")
    with open(run_path, "rb") as source, open(sample, "wb") as out:
        for _, line in zip(range(lines), source, strict=False):
            out.write(line)
    readers = {
        "lodestar._trec.read.read_run": read.read_run,
        "python line loop": python_loop_reader,
        "np.loadtxt(dtype=str)": loadtxt_reader,
    }
    best = dict.fromkeys(readers, float("inf"))
    for _ in range(rounds):
        for name, reader in readers.items():
            best[name] = min(best[name], timed(reader, sample)[1])
    ours = best["lodestar._trec.read.read_run"]
    print(f"\nreaders on {lines:,} lines (fastest of {rounds}; ratio to lodestar's)")
    for name, seconds in best.items():
        print(f"  {name:<24} {seconds:8.2f} s  {seconds / ours:5.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--judged", type=int, default=100, help="judged documents per query")
    parser.add_argument("--compare-lines", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the reader comparison")
    args = parser.parse_args(argv)
    if args.quick:
        args.queries, args.depth, args.judged, args.compare_lines = 50, 40, 10, 1_000
        args.rounds = 1
    requests = names.parse_all(DEFAULT_MEASURES)
    with tempfile.TemporaryDirectory() as directory:
        qrels_path, run_path = write_files(directory, args.queries, args.depth, args.judged)
        size = os.path.getsize(run_path)
        lines = args.queries * args.depth
        print(f"run: {args.queries:,} queries x {args.depth:,} documents = {lines:,} lines, ")
        print(f"     {size / 2**20:.0f} MiB; qrels: {args.judged} judged per query")
        qrels, qrels_time = timed(read.read_qrels, qrels_path)
        run, run_time = timed(read.read_run, run_path)
        print(f"read qrels      {qrels_time:8.2f} s")
        print(f"read run        {run_time:8.2f} s  ({lines / run_time / 1e6:.2f} M lines/s)")
        for label, ignore_ties in (("tie-averaged", False), ("--ignore-ties", True)):
            joined, join_time = timed(join.join, qrels, run, docno_order=ignore_ties)
            definitions = evaluate.Definitions(ignore_ties=ignore_ties)
            # The first call compiles; the second is the steady state.
            _, first = timed(evaluate.evaluate, joined, requests, definitions, max_grade=3)
            _, second = timed(evaluate.evaluate, joined, requests, definitions, max_grade=3)
            print(
                f"{label:<14}  join {join_time:6.2f} s, evaluate {len(requests)} measures "
                f"{first:6.2f} s (compiling), {second:6.2f} s (compiled)"
            )
        del run, qrels, joined
        compare_readers(run_path, min(args.compare_lines, lines), directory, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
