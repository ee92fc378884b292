"""The worked examples of the seed documents, to the digits they print.

The C# pages print truncated values ("3.8424…"), so those are compared as
prefixes of the decimal expansion; the encyclopedia rounds to 3 places.
"""

import numpy as np

from lodestar import metrics
from lodestar import sklearn as lsk


def starts(value, digits):
    """``value`` printed to 10 places begins with ``digits`` (a truncation)."""
    return f"{float(value):.10f}".startswith(digits)


def test_dcg_page_tied_example():
    relevance = np.array([3.0, 2.0, 1.0, 0.0])
    tied = np.full(4, 0.5)
    assert starts(metrics.dcg(tied, relevance), "3.8424")
    assert starts(metrics.dcg(tied, relevance, ignore_ties=True), "2.9229")
    assert starts(lsk.dcg_score([relevance], [tied]), "3.8424")
    assert starts(lsk.dcg_score([relevance], [tied], ignore_ties=True), "2.9229")
    # The averaged value is the mean over all 24 orders of the tied items, and
    # the arbitrary one is a single order (descending index): 0.3 lower.
    averaged = float(metrics.dcg(tied, relevance))
    arbitrary = float(metrics.dcg(tied, relevance, ignore_ties=True))
    assert 0.3 < averaged / arbitrary - 1 < 0.34


def test_dcg_page_gain_remark():
    relevance = np.array([3.0, 2.0, 1.0, 0.0])
    perfect = -np.arange(4.0)
    assert starts(metrics.dcg(perfect, relevance, gain="exp2"), "9.3927")
    assert starts(metrics.dcg(perfect, relevance), "4.7618")


def test_dcg_page_weight_cancels_over_one_query():
    args = ([[3.0, 2.0, 1.0, 0.0]], [[0.5, 0.5, 0.5, 0.5]])
    assert lsk.dcg_score(*args, sample_weight=[7.0]) == lsk.dcg_score(*args)


def test_reciprocal_rank_page_example():
    relevance = np.array([[0, 1, 0, 0], [1, 0, 0, 0]], np.float64)
    scores = np.array([[0.9, 0.5, 0.4, 0.1], [0.9, 0.5, 0.4, 0.1]])
    assert float(metrics.reciprocal_rank(scores, relevance).mean()) == 0.75
    assert lsk.reciprocal_rank_score(relevance, scores) == 0.75


def test_reciprocal_rank_page_clauses():
    scores = np.array([[0.9, 0.5, 0.4, 0.1]] * 3)
    # Any non-zero label is relevant, and 3 counts no more than 1.
    assert lsk.reciprocal_rank_score([[0, 3, 0, 0]], scores[:1]) == 0.5
    assert lsk.reciprocal_rank_score([[0, 1, 0, 0]], scores[:1]) == 0.5
    # A query with no relevant document contributes 0 and is not dropped.
    assert lsk.reciprocal_rank_score([[1, 0, 0, 0], [0, 0, 0, 0]], scores[:2]) == 0.5


def test_encyclopedia_example():
    # Six retrieved documents graded 3, 2, 3, 0, 1, 2 in ranked order, and two
    # more judged documents (3 and 2) that were not retrieved: they rank below
    # the six, so DCG@6 ignores them while the ideal uses them.
    labels = np.array([3.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 2.0])
    scores = -np.arange(8.0)
    dcg6 = float(metrics.dcg(scores, labels, k=6))
    ideal6 = float(metrics.dcg(labels, labels, k=6))
    assert f"{dcg6:.3f}" == "6.861"
    assert f"{ideal6:.3f}" == "8.740"
    assert f"{float(metrics.ndcg(scores, labels, k=6)):.3f}" == "0.785"
    # CG6 is order-free, and swapping D3 and D4 lowers DCG6.
    swapped = scores.copy()
    swapped[[2, 3]] = swapped[[3, 2]]
    assert float(metrics.dcg(swapped, labels, k=6)) < dcg6
