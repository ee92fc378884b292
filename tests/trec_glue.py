"""Generated TREC cases and the glue that feeds them to lodestar's functions per query.

Shared by the tests of interpolated precision and of the NDCG family
(decision 0017). A case holds qrels with every kind of judgment (relevant at
several levels, judged non-relevant, negative: in the pool but not judged),
retrieved documents that were never judged, relevant documents never
retrieved, and queries judged only non-relevant. Scores are distinct in
float32 (multiples of 2**-12 below 2**8), so trec_eval's order (pytrec_eval
stores scores in single precision) is the order of the scores.
"""

import os
import shutil

import numpy as np
import pytest

# A trec_eval 10 binary, built from https://github.com/usnistgov/trec_eval with
# `make`: $TREC_EVAL, else trec_eval on the path (the benchmarks read the same).
TREC_EVAL = os.environ.get("TREC_EVAL") or shutil.which("trec_eval")


def trec_eval_binary() -> str:
    """The trec_eval binary's path; the calling test is skipped without one."""
    if not TREC_EVAL or not os.access(TREC_EVAL, os.X_OK):
        pytest.skip("no trec_eval binary ($TREC_EVAL or trec_eval on the path)")
    return TREC_EVAL


def generate(seed: int, *, queries=(4, 14), pool=40):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(rng.integers(*queries)):
        qid = f"q{q}"
        docs = [f"d{d}" for d in rng.choice(2 * pool, size=rng.integers(1, pool), replace=False)]
        levels = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], size=len(docs))
        if q % 4 == 1:
            levels = np.minimum(levels, 0)
        judgments = {d: int(r) for d, r in zip(docs, levels, strict=True) if rng.random() < 0.8}
        if judgments and max(judgments.values()) < 0:
            # trec_eval (and pytrec_eval) crash on a query judged only negative.
            judgments[next(iter(judgments))] = 0
        retrieved = [d for d in docs if rng.random() < 0.7]
        retrieved += [f"x{i}" for i in range(rng.integers(0, 4))]  # never judged
        scores = rng.choice(2**20, size=len(retrieved), replace=False) / 2**12
        if judgments:
            qrels[qid] = judgments
        if retrieved:
            run[qid] = dict(zip(retrieved, scores.tolist(), strict=True))
    return qrels, run


class Query:
    """One query's arrays, as trec_eval reads them.

    Attributes:
      scores: the retrieved documents' scores.
      grades: their relevance level, 0 if unjudged (negative judgments too).
      judged: whether each is in the qrels with a level >= 0.
      relevant: judged with a level >= ``level``.
      pool: every judged document's level (>= 0), retrieved or not.
      num_relevant: the qrels' documents with a level >= ``level``.
    """

    def __init__(self, judgments, ranking, *, level=1):
        docs = list(ranking)
        self.scores = np.array([ranking[d] for d in docs], np.float64)
        self.judged = np.array([judgments.get(d, -1) >= 0 for d in docs])
        self.grades = (
            np.array([max(judgments.get(d, 0), 0) for d in docs], np.float64) * self.judged
        )
        self.relevant = (self.judged & (self.grades >= level)).astype(np.float64)
        self.pool = np.array([r for r in judgments.values() if r >= 0], np.float64)
        self.num_relevant = np.float64(sum(r >= level for r in judgments.values()))


def queries(qrels, run, *, level=1):
    """The queries trec_eval evaluates (judged and retrieved), as :class:`Query`."""
    return {q: Query(qrels[q], run[q], level=level) for q in run if q in qrels}


class Batch:
    """Every evaluated query padded into one batch, so that one call scores them all.

    Attributes:
      qids: the query ids, one per row (rows past them are padding).
      queries: each query's :class:`Query`.
      scores, grades, relevant: ``(queries, width)``; padding scores 0.
      judged, where: ``(queries, width)`` masks.
      pool, pool_where: ``(queries, width)`` judged levels and their mask.
      num_relevant: ``(queries,)``.
    """

    def __init__(self, qrels, run, *, level=1, width=64, rows=16):
        per_query = queries(qrels, run, level=level)
        self.qids = list(per_query)
        self.queries = per_query
        assert len(self.qids) <= rows

        def pad(values, dtype=np.float64):
            out = np.zeros((rows, width), dtype)
            for row, value in enumerate(values):
                out[row, : len(value)] = value
            return out

        items = list(per_query.values())
        self.scores = pad([q.scores for q in items])
        self.grades = pad([q.grades for q in items])
        self.relevant = pad([q.relevant for q in items])
        self.judged = pad([q.judged for q in items], bool)
        self.where = pad([np.ones(len(q.scores), bool) for q in items], bool)
        self.pool = pad([q.pool for q in items])
        self.pool_where = pad([np.ones(len(q.pool), bool) for q in items], bool)
        self.num_relevant = np.zeros(rows)
        self.num_relevant[: len(items)] = [q.num_relevant for q in items]


def padded(width, *arrays):
    """``arrays`` zero-padded to ``width``, and the mask of the real items."""
    n = len(arrays[0])
    out = [
        np.concatenate([np.asarray(a), np.zeros(width - n, np.asarray(a).dtype)]) for a in arrays
    ]
    return (*out, np.arange(width) < n)


def write_long_runs(directory, *, queries: int, depth: int, runs=("r",), decimals=6):
    """A qrels and runs of ``queries`` x ``depth`` documents: long work for the program.

    Every odd document is judged, with a grade of ``d % 3``; each run scores
    every document at random (its own seed), rounded to ``decimals`` (few
    decimals make ties). Returns ``(qrels path, [run paths])``.
    """
    qids = np.repeat(np.arange(queries), depth)
    docs = np.tile(np.arange(depth), queries)
    qrels = "".join(f"{q} 0 d{d} {d % 3}\n" for q, d in zip(qids, docs, strict=True) if d % 2)
    (directory / "qrels").write_text(qrels)
    paths = []
    for seed, name in enumerate(runs):
        scores = np.random.default_rng(seed).random(queries * depth)
        lines = (
            f"{q} Q0 d{d} 1 {s:.{decimals}f} {name}\n"
            for q, d, s in zip(qids, docs, scores, strict=True)
        )
        (directory / name).write_text("".join(lines))
        paths.append(str(directory / name))
    return str(directory / "qrels"), paths
