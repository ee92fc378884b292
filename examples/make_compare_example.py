"""Write the qrels and three runs that ``lodestar compare --example`` compares.

The files are committed under ``src/lodestar/data/`` (``compare.qrels``,
``bm25.run``, ``dense.run``, ``hybrid.run``); this script records how they
were made. Each of 30 queries has 60 candidate documents with grades 0 to 2
(most 0). A run scores a candidate by its grade plus noise, retrieves its 20
best, and rounds the scores to one decimal, so that documents tie:

* ``bm25``: the noisiest;
* ``dense``: less noise, independent of bm25's;
* ``hybrid``: the mean of the two scores, which averages some noise away.

Run it with::

    python examples/make_compare_example.py [DIRECTORY]
"""

import sys
from pathlib import Path

import numpy as np

QUERIES = 30
CANDIDATES = 60
RETRIEVED = 20
NOISE = {"bm25": 1.6, "dense": 1.2}


def main(directory: Path) -> None:
    """Write the qrels and the three runs into ``directory``."""
    rng = np.random.default_rng(20261205)
    grades = rng.choice(3, size=(QUERIES, CANDIDATES), p=[0.75, 0.17, 0.08])
    scores = {name: grades + rng.normal(0, noise, grades.shape) for name, noise in NOISE.items()}
    scores["hybrid"] = (scores["bm25"] + scores["dense"]) / 2
    with open(directory / "compare.qrels", "w") as out:
        out.write("# lodestar compare example qrels: qid iter docno rel\n")
        for q in range(QUERIES):
            for d in range(CANDIDATES):
                out.write(f"q{q + 1:02d} 0 q{q + 1:02d}d{d + 1:02d} {grades[q, d]}\n")
    for name, run_scores in scores.items():
        with open(directory / f"{name}.run", "w") as out:
            out.write(f"# lodestar compare example run {name}: qid Q0 docno rank score tag\n")
            for q in range(QUERIES):
                rounded = np.round(run_scores[q], 1)
                best = np.argsort(-rounded, kind="stable")[:RETRIEVED]
                for rank, d in enumerate(best, start=1):
                    docno = f"q{q + 1:02d}d{d + 1:02d}"
                    out.write(f"q{q + 1:02d} Q0 {docno} {rank} {rounded[d]:.1f} {name}\n")


if __name__ == "__main__":
    default = Path(__file__).parents[1] / "src" / "lodestar" / "data"
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
