"""Fuzz ``lodestar evaluate --trec-eval`` against a trec_eval program, byte for byte.

Run by hand where trec_eval is built (the test machines have none)::

    python tests/trec_eval_rounding_fuzz.py /path/to/trec_eval --seconds 600 --out found/
    python tests/trec_eval_rounding_fuzz.py /path/to/trec_eval --queries 3000 --seconds 600

Each case writes small random qrels and run files, runs
``trec_eval -q -m all_trec QRELS RUN`` and
``lodestar evaluate --trec-eval --ignore-ties -q -m all_trec QRELS RUN``
(in this process, so that kernels compile once per shape), and requires the
two outputs to be the same bytes. The files are drawn to land values on a
half-way point of the fourth decimal, where a different order of the same
float64 operations changes the printed digit: few documents, small integer
relevances, some long lists, counts of relevant documents whose fractions of a cut-off are
exact (9/1000), several queries whose mean is a short decimal, and some
options (``-c``, ``-l 2``, ``-M``, ``-J``). Each differing case is saved
under ``--out`` with the differing lines, ready to be frozen as a test.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lodestar.cli import main


def draw_case(rng: random.Random, queries: int | None) -> tuple[str, str, list[str]]:
    """Qrels text, run text and trec_eval options of one random case.

    ``queries`` queries, or a few (1 to 16) if None.
    """
    qrels_lines, run_lines = [], []
    # Some cases have long lists, whose sums of many terms (AP, DCG) round
    # apart in another order more often than a few terms do.
    longest = rng.choice([14, 14, 14, 60, 200])
    count = rng.choice([1, 1, 2, 3, 4, 5, 8, 10, 16]) if queries is None else queries
    for q in range(count):
        qid = f"q{q}"
        docs = [f"d{d}" for d in range(rng.randint(1, longest))]
        judged = [d for d in docs if rng.random() < 0.7] or docs[:1]
        top = rng.choice([1, 2, 3, 4])
        for d in judged:
            grade = rng.choice([-1, 0, 0, 1, 1, 2, 3, 4][: top + 4])
            qrels_lines.append(f"{qid} 0 {d} {grade}\n")
        # Judged documents that are never retrieved (recall, the ideals).
        for extra in range(rng.choice([0, 0, 1, 3, 6, 9])):
            qrels_lines.append(f"{qid} 0 u{extra} {rng.choice([0, 1, 2])}\n")
        retrieved = rng.sample(docs, rng.randint(1, len(docs)))
        # Unjudged documents among the retrieved ones.
        retrieved += [f"x{x}" for x in range(rng.choice([0, 0, 1, 2, 5]))]
        rng.shuffle(retrieved)
        tied = rng.random() < 0.4
        for rank, d in enumerate(retrieved):
            score = rng.randint(0, 3) if tied else len(retrieved) - rank
            run_lines.append(f"{qid} Q0 {d} {rank + 1} {score} run\n")
    options = rng.choice([[], [], [], ["-c"], ["-l", "2"], ["-M", "3"], ["-J"]])
    return "".join(qrels_lines), "".join(run_lines), options


def lodestar_output(qrels: Path, run: Path, options: list[str]) -> tuple[int, str]:
    """The status and standard output of the command line in this process."""
    out, err = io.StringIO(), io.StringIO()
    args = ["evaluate", "--trec-eval", "--ignore-ties", "-q", "-m", "all_trec", *options]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([*args, str(qrels), str(run)])
    return status, out.getvalue() + err.getvalue()


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trec_eval")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("rounding-fuzz"))
    # Thousands of queries a case find more: a half-way value may show only in
    # a batch padded wide by its neighbours, and one compilation serves them all.
    parser.add_argument("--queries", type=int, default=None)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    cases = found = 0
    with tempfile.TemporaryDirectory() as scratch:
        qrels, run = Path(scratch) / "qrels", Path(scratch) / "run"
        while time.monotonic() < deadline:
            qrels_text, run_text, options = draw_case(rng, args.queries)
            qrels.write_text(qrels_text)
            run.write_text(run_text)
            reference = subprocess.run(
                [args.trec_eval, "-q", "-m", "all_trec", *options, str(qrels), str(run)],
                capture_output=True,
                text=True,
            )
            cases += 1
            # trec_eval refuses or crashes, or prints -nan (-J leaving a query
            # no document): not a case for agreement.
            if reference.returncode != 0 or "nan" in reference.stdout:
                continue
            status, ours = lodestar_output(qrels, run, options)
            if status == 0 and ours == reference.stdout:
                continue
            found += 1
            case = args.out / f"case{found:04d}"
            case.mkdir(parents=True, exist_ok=True)
            (case / "qrels").write_text(qrels_text)
            (case / "run").write_text(run_text)
            (case / "options").write_text(" ".join(options) + "\n")
            (case / "trec_eval").write_text(reference.stdout)
            (case / "lodestar").write_text(ours)
            theirs = reference.stdout.splitlines()
            mine = ours.splitlines()
            differing = [f"{a!r} != {b!r}" for a, b in zip(mine, theirs, strict=False) if a != b]
            if len(mine) != len(theirs):
                differing.append(f"{len(mine)} lines != {len(theirs)} lines")
            print(f"case{found:04d} {' '.join(options)}: " + "; ".join(differing[:4]), flush=True)
    print(f"{cases} cases, {found} differing", flush=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main_())
