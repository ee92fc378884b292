"""``lodestar.compare`` and ``lodestar.evaluate`` in a fresh Python process, against the command.

A script that scores files starts a new Python process each time, so what it
waits for is the import, the reading, the compilation and the evaluation,
like the command line. The command line keeps its compiled kernels on disk
(decision 0027); the Python API does so only when asked,
``lodestar.use_compilation_cache()``, since a library must not change a
user's JAX configuration on its own. This script writes TREC files, then
runs each of these as a separate process (``bench_cli.measure``), three
times, and keeps the fastest:

* **command**: ``lodestar compare QRELS RUN1 ... RUN5`` (and ``lodestar
  evaluate QRELS RUN``), warm: the cache filled by an earlier run;
* **python, cache**: a script calling ``lodestar.use_compilation_cache()``
  and then ``lodestar.compare`` (``lodestar.evaluate``) on the same files,
  warm;
* **python, default**: the same script without the cache: it compiles in
  every process.

The ratio is each time over the command's. The workload is 5 runs × 250
queries × 1,000 documents (scores with three decimals, so some tie) and the
default measures (``ndcg@10``, ``map`` for compare; trec_eval's default set
for evaluate). Absolute times on a shared machine move by tens of percent.

``--quick`` runs 2 runs × 10 queries × 100 documents once, so that CI can run
the script.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np
from bench_cli import measure

SCRIPT = """
import sys
import lodestar
if sys.argv[1] == "cache":
    lodestar.use_compilation_cache()
qrels, *runs = sys.argv[3:]
if sys.argv[2] == "compare":
    print(lodestar.compare(qrels, {f"run{i}": run for i, run in enumerate(runs)}))
else:
    print(lodestar.evaluate(qrels, runs[0]).mean)
"""


def write_files(directory, runs, queries, depth, seed=1):
    """A qrels judging a fifth of each query's pool on 0–2, and ``runs`` runs over the pool."""
    rng = np.random.default_rng(seed)
    qrels = os.path.join(directory, "qrels")
    with open(qrels, "w") as file:
        for q in range(queries):
            for d in rng.choice(2 * depth, depth // 5, replace=False):
                file.write(f"q{q} 0 d{d} {rng.integers(0, 3)}\n")
    paths = []
    for r in range(runs):
        paths.append(os.path.join(directory, f"run{r}"))
        with open(paths[-1], "w") as file:
            for q in range(queries):
                docs = rng.choice(2 * depth, depth, replace=False)
                scores = np.round(rng.random(depth), 3)
                file.writelines(
                    f"q{q} Q0 d{d} {rank} {s} r{r}\n"
                    for rank, (d, s) in enumerate(zip(docs, scores, strict=True))
                )
    return qrels, paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny workload once")
    parser.add_argument("--reps", type=int, default=3, help="runs of each; the fastest is kept")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args(argv)
    runs, queries, depth = (2, 10, 100) if args.quick else (5, 250, 1_000)
    reps = 1 if args.quick else args.reps
    report = {
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "python": sys.version.split()[0],
            "load_average": os.getloadavg()[0],
        },
        "workload": {"runs": runs, "queries": queries, "depth": depth},
        "seconds": {},
    }
    with tempfile.TemporaryDirectory() as directory:
        qrels, paths = write_files(directory, runs, queries, depth)
        env = {**os.environ, "LODESTAR_COMPILATION_CACHE": os.path.join(directory, "cache")}
        for job, files in (("compare", paths), ("evaluate", paths[:1])):
            commands = {
                "command": [sys.executable, "-m", "lodestar", job, qrels, *files],
                "python, cache": [sys.executable, "-c", SCRIPT, "cache", job, qrels, *files],
                "python, default": [sys.executable, "-c", SCRIPT, "none", job, qrels, *files],
            }
            for command in commands.values():
                measure(command, env)  # fills the cache: every row is timed warm
            times = {name: float("inf") for name in commands}
            for _ in range(reps):
                for name, command in commands.items():
                    times[name] = min(times[name], measure(command, env)[0])
            report["seconds"][job] = times
            for name, seconds in times.items():
                ratio = seconds / times["command"]
                print(f"{job:<9} {name:<16} {seconds:7.2f} s  {ratio:5.2f}× the command")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(report, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
