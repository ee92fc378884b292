"""lodestar against the corpus frozen from scikit-learn (no scikit-learn import).

Tolerance: float64, relative 1e-12 on every value, with an absolute floor of
1e-12 times the largest term that could cancel (the sum of |gain| times the
first discount), because DCG over negative labels can cancel to near zero.
"""

import math

import numpy as np
import pytest
from corpus.load import load_cases, load_metadata

from lodestar import metrics
from lodestar import sklearn as lsk

CASES = load_cases()
RTOL = 1e-12


def _atol(case):
    first_discount = abs(1 / (math.log(2) / math.log(case["log_base"])))
    return RTOL * max(1.0, float(np.abs(case["y_true"]).sum(axis=1).max()) * first_discount)


def test_corpus_is_the_size_it_claims():
    meta = load_metadata()
    assert len(CASES) == meta["n_cases"] >= 3000
    assert any(c["k"] is not None and c["k"] > c["y_true"].shape[1] for c in CASES)
    assert {2.0, 10.0, 0.5} <= {c["log_base"] for c in CASES}


@pytest.mark.parametrize("chunk", range(8))
def test_dcg_score_matches_frozen_sklearn(chunk):
    for case in CASES[chunk::8]:
        got = lsk.dcg_score(
            case["y_true"],
            case["y_score"],
            k=case["k"],
            log_base=case["log_base"],
            sample_weight=case["sample_weight"],
            ignore_ties=case["ignore_ties"],
        )
        assert math.isclose(got, case["dcg_score"], rel_tol=RTOL, abs_tol=_atol(case)), case[
            "case_id"
        ]


@pytest.mark.parametrize("chunk", range(8))
def test_ndcg_score_matches_frozen_sklearn(chunk):
    for case in CASES[chunk::8]:
        if math.isnan(case["ndcg_score"]):
            with pytest.raises(ValueError, match="negative y_true"):
                lsk.ndcg_score(case["y_true"], case["y_score"], k=case["k"])
            continue
        got = lsk.ndcg_score(
            case["y_true"],
            case["y_score"],
            k=case["k"],
            sample_weight=case["sample_weight"],
            ignore_ties=case["ignore_ties"],
        )
        assert math.isclose(got, case["ndcg_score"], rel_tol=RTOL, abs_tol=RTOL), case["case_id"]


def _padded(case):
    """The case inside a fixed (6, 64) block, padding holding garbage.

    One shape for every case also keeps the number of compilations small.
    """
    rows, n = case["y_true"].shape
    scores = np.full((6, 64), 5.0)
    labels = np.full((6, 64), -1.0)
    where = np.zeros((6, 64), bool)
    scores[:rows, :n] = case["y_score"]
    labels[:rows, :n] = case["y_true"]
    where[:rows, :n] = True
    return scores, labels, where


# 64 items: the ideal DCG sorts its gains with the compiled kernel, or, for
# a quarter of the cases in the slow tier, with XLA's sort (tests/test_oracle.py
# checks both routes more cheaply).
@pytest.mark.parametrize(
    "chunk, route",
    [*((chunk, "native") for chunk in range(4)), pytest.param(0, "xla", marks=pytest.mark.slow)],
    indirect=["route"],
)
def test_per_list_metrics_match_frozen_sklearn_rows(chunk, route):
    for case in CASES[chunk::4]:
        rows = case["y_true"].shape[0]
        scores, labels, where = _padded(case)
        options = dict(k=case["k"], ignore_ties=case["ignore_ties"], where=where)
        dcg_rows = metrics.dcg(scores, labels, log_base=case["log_base"], **options)[:rows]
        np.testing.assert_allclose(dcg_rows, case["dcg_rows"], rtol=RTOL, atol=_atol(case))
        if not np.isnan(case["ndcg_score"]):
            ndcg_rows = metrics.ndcg(scores, labels, **options)[:rows]
            np.testing.assert_allclose(ndcg_rows, case["ndcg_rows"], rtol=RTOL, atol=RTOL)
