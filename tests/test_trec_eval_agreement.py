"""``lodestar evaluate --trec-eval`` agrees with trec_eval, through pytrec_eval-terrier.

Each generated case writes a qrels and a run file, evaluates them with the
command line (``--trec-eval --ignore-ties --complete --json --per-query``),
and compares every query's value with pytrec_eval's for ``ndcg``,
``ndcg_cut_10``, ``recip_rank``, ``map``, ``P_10`` and ``recall_100``.

The cases hold queries with no relevant document, queries judged only
non-relevant or negative (-1, -2), queries of the qrels missing from the run
(empty runs: pytrec_eval gets an empty dict, lodestar ``--complete``), run
queries without judgments, unjudged retrieved documents, relevant documents
never retrieved, and the same docnos under several queries. A document listed
twice for one query cannot be given to pytrec_eval (its run is a dict); both
lodestar and trec_eval refuse it, which ``tests/test_cli.py`` checks.

Tolerance: 1e-9 absolute on every per-query value (both sides compute in
float64; the largest difference seen is a few ulps). Scores are distinct in
float32 unless a case says otherwise, so the rank order is the same whatever
the precision. pytrec_eval-terrier stores scores in single precision and
breaks ties by descending docno; the tied cases use ``--single-precision``
and check that ``--ignore-ties`` reproduces that order exactly.
"""

import json

import numpy as np
import pytest

from lodestar.cli import main

pytrec_eval = pytest.importorskip("pytrec_eval")

TOLERANCE = 1e-9
MEASURES = {
    # lodestar name: pytrec_eval name
    "ndcg": "ndcg",
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "map": "map",
    "P@10": "P_10",
    "recall@100": "recall_100",
}


def generate(seed: int, *, tied: bool):
    """Qrels and run dicts with every awkward case; scores tie if ``tied``."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(rng.integers(5, 25)):
        qid = f"q{q}"
        pool = [f"d{d}" for d in rng.choice(60, size=rng.integers(1, 60), replace=False)]
        judged = rng.random(len(pool)) < 0.6
        levels = rng.choice([-2, -1, 0, 0, 0, 1, 2, 3], size=len(pool))
        if q % 5 == 1:
            levels = np.minimum(levels, 0)  # judged, nothing relevant
        judgments = {d: int(r) for d, r, j in zip(pool, levels, judged, strict=True) if j}
        retrieved = [d for d in pool if rng.random() < 0.7]
        if q % 7 == 3:
            retrieved = []  # in the qrels, missing from the run
        if tied:
            scores = rng.integers(0, 4, size=len(retrieved)) / 4
        else:
            # Distinct in float32 too: multiples of 2**-12 below 2**12.
            scores = rng.choice(2**20, size=len(retrieved), replace=False) / 2**12
        ranking = dict(zip(retrieved, scores.tolist(), strict=True))
        if judgments and max(judgments.values()) < 0:
            # trec_eval sizes a table by the largest relevance plus one, and
            # crashes (pytrec_eval too) on a query judged only negative.
            judgments[next(iter(judgments))] = 0
        if judgments:
            qrels[qid] = judgments
        if ranking:
            run[qid] = ranking
    run["unjudged"] = {"d1": 1.0, "d2": 0.5}  # no qrels: not evaluated
    return qrels, run


def write(tmp_path, qrels, run):
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: -item[1])
        lines += [f"{q} Q0 {d} {i + 1} {s!r} test\n" for i, (d, s) in enumerate(ranked)]
    run_path.write_text("".join(lines))
    return str(qrels_path), str(run_path)


def lodestar_values(capsys, qrels_path, run_path, *extra):
    args = ["evaluate", qrels_path, run_path, "--json", "--per-query", "-m", *MEASURES]
    assert main([*args, "--trec-eval", "--ignore-ties", "--complete", *extra]) == 0
    return json.loads(capsys.readouterr().out)["per_query"]


def reference_values(qrels, run):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
    # An empty ranking for every judged query missing from the run, as with -c.
    return evaluator.evaluate({q: run.get(q, {}) for q in qrels})


def assert_agree(ours, reference):
    assert sorted(ours) == sorted(reference)
    for qid, values in reference.items():
        for name, theirs in MEASURES.items():
            assert abs(ours[qid][name] - values[theirs]) <= TOLERANCE, (qid, name)


@pytest.mark.parametrize("seed", range(6))
def test_agrees_without_ties(tmp_path, capsys, seed):
    qrels, run = generate(seed, tied=False)
    ours = lodestar_values(capsys, *write(tmp_path, qrels, run))
    assert_agree(ours, reference_values(qrels, run))


@pytest.mark.parametrize("seed", range(3))
def test_ignore_ties_reproduces_trec_eval_order(tmp_path, capsys, seed):
    qrels, run = generate(100 + seed, tied=True)
    ours = lodestar_values(capsys, *write(tmp_path, qrels, run), "--single-precision")
    assert_agree(ours, reference_values(qrels, run))


def test_single_precision_ties_scores_equal_in_float32(tmp_path, capsys):
    # 1.00000002 and 1.00000001 differ in float64 and tie in float32, where
    # the tie goes to the larger docno, 'b'.
    qrels, run = {"q": {"a": 1, "b": 0}}, {"q": {"a": 1.00000002, "b": 1.00000001}}
    paths = write(tmp_path, qrels, run)
    double = lodestar_values(capsys, *paths)
    single = lodestar_values(capsys, *paths, "--single-precision")
    assert double["q"]["mrr"] == 1.0
    assert single["q"]["mrr"] == 0.5
    assert reference_values(qrels, run)["q"]["recip_rank"] == 0.5


def test_cases_are_not_trivial():
    # The generated cases hold what the module docstring promises.
    qrels, run = generate(0, tied=False)
    assert any(all(r < 1 for r in docs.values()) for docs in qrels.values())
    assert any(q not in run for q in qrels)
    assert any(r < 0 for docs in qrels.values() for r in docs.values())
    docnos = [d for docs in run.values() for d in docs]
    assert len(docnos) > len(set(docnos))  # the same docno under several queries
