"""Live property tests against scikit-learn, drop-ins and batched/padded metrics.

Tolerance: float64, ``rtol=1e-12`` with ``atol=1e-12`` (NDCG lies in [0, 1]; the
DCG inputs here have non-negative labels, so nothing cancels).
"""

import numpy as np
import pytest
import tiers
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

sklearn_metrics = pytest.importorskip("sklearn.metrics")

import oracles  # noqa: E402

from lodestar import _ranking, metrics  # noqa: E402
from lodestar import sklearn as lsk  # noqa: E402

TOL = dict(rtol=1e-12, atol=1e-12)


@st.composite
def batches(draw, *, tie_free=False):
    rows = draw(st.integers(1, 5))
    n = draw(st.integers(2, 40))
    labels = draw(
        hnp.arrays(np.float64, (rows, n), elements=st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5]))
    )
    if tie_free:
        scores = np.stack([draw(st.permutations(range(n))) for _ in range(rows)]).astype(np.float64)
        scores = scores / 7.0
    else:
        decimals = draw(st.integers(0, 2))
        scores = np.round(
            draw(hnp.arrays(np.float64, (rows, n), elements=st.floats(-3, 3))), decimals
        )
    k = draw(st.one_of(st.none(), st.integers(1, n + 3)))
    weights = draw(st.one_of(st.none(), hnp.arrays(np.float64, rows, elements=st.floats(0.1, 5))))
    return labels, scores, k, weights


@given(batches(), st.sampled_from([2, 10, np.e, 0.5, 1.0]))
def test_dcg_score_matches_sklearn(batch, log_base):
    labels, scores, k, weights = batch
    if log_base == 1.0:
        assert lsk.dcg_score(labels, scores, k=k, log_base=1.0) == 0.0
        return
    expected = sklearn_metrics.dcg_score(
        labels, scores, k=k, log_base=log_base, sample_weight=weights
    )
    got = lsk.dcg_score(labels, scores, k=k, log_base=log_base, sample_weight=weights)
    np.testing.assert_allclose(got, expected, **TOL)


@given(batches())
def test_ndcg_score_matches_sklearn(batch):
    labels, scores, k, weights = batch
    expected = sklearn_metrics.ndcg_score(labels, scores, k=k, sample_weight=weights)
    got = lsk.ndcg_score(labels, scores, k=k, sample_weight=weights)
    assert isinstance(got, float)
    np.testing.assert_allclose(got, expected, **TOL)


@given(batches(tie_free=True))
def test_ignore_ties_matches_sklearn_without_ties(batch):
    labels, scores, k, weights = batch
    for ours, theirs in [
        (lsk.dcg_score, sklearn_metrics.dcg_score),
        (lsk.ndcg_score, sklearn_metrics.ndcg_score),
    ]:
        expected = theirs(labels, scores, k=k, sample_weight=weights, ignore_ties=True)
        got = ours(labels, scores, k=k, sample_weight=weights, ignore_ties=True)
        np.testing.assert_allclose(got, expected, **TOL)


@given(batches(), st.data())
def test_padded_batched_metrics_match_sklearn_rows(batch, data):
    labels, scores, k, _ = batch
    rows, n = labels.shape
    n_pad = data.draw(st.integers(0, 8))
    width = n + n_pad
    padded_scores = np.full((rows, width), -7.0)
    padded_labels = np.full((rows, width), 9.0)
    where = np.zeros((rows, width), bool)
    for row in range(rows):
        slots = np.sort(data.draw(st.permutations(range(width)))[:n])
        padded_scores[row, slots] = scores[row]
        padded_labels[row, slots] = labels[row]
        where[row, slots] = True
    got_dcg = metrics.dcg(padded_scores, padded_labels, k=k, where=where)
    got_ndcg = metrics.ndcg(padded_scores, padded_labels, k=k, where=where)
    got_rr = metrics.reciprocal_rank(padded_scores, padded_labels, k=k, where=where)
    for row in range(rows):
        expected_dcg = sklearn_metrics.dcg_score(labels[row : row + 1], scores[row : row + 1], k=k)
        expected_ndcg = sklearn_metrics.ndcg_score(
            labels[row : row + 1], scores[row : row + 1], k=k
        )
        expected_rr = (
            oracles.tie_average(oracles.rr_of_order, scores[row], labels[row], k=k)
            if n <= 7
            else None
        )
        np.testing.assert_allclose(got_dcg[row], expected_dcg, **TOL)
        np.testing.assert_allclose(got_ndcg[row], expected_ndcg, **TOL)
        if expected_rr is not None:
            np.testing.assert_allclose(got_rr[row], expected_rr, **TOL)


@given(batches())
def test_reciprocal_rank_score_is_the_weighted_mean_of_the_metric(batch):
    labels, scores, k, weights = batch
    per_row = np.asarray(metrics.reciprocal_rank(scores, labels, k=k))
    expected = np.average(per_row, weights=weights)
    np.testing.assert_allclose(
        lsk.reciprocal_rank_score(labels, scores, k=k, sample_weight=weights), expected, **TOL
    )


@pytest.mark.slow  # the engine paths' own tests (test_measures.py) run in the default tier
def test_large_lists_match_sklearn_on_every_engine_path():
    # Lengths straddle the pairwise threshold, so the drop-ins (which rank whole
    # lists) compare the pairwise and sort paths with scikit-learn; the top-k
    # path is compared in the next test.
    rng = np.random.default_rng(11)
    for n in (5, 16, 17, 100, 300):
        labels = rng.integers(0, 5, size=(6, n)).astype(np.float64)
        scores = np.round(rng.random((6, n)), 1)
        for k in (None, 1, 3, 10, 64, 65, n - 1):
            if k is not None and k < 1:
                continue
            np.testing.assert_allclose(
                lsk.ndcg_score(labels, scores, k=k),
                sklearn_metrics.ndcg_score(labels, scores, k=k),
                **TOL,
            )
            np.testing.assert_allclose(
                lsk.dcg_score(labels, scores, k=k),
                sklearn_metrics.dcg_score(labels, scores, k=k),
                **TOL,
            )


@pytest.mark.parametrize("n", tiers.params([100, 300, 1000], default=(300,)))
def test_metrics_with_a_cut_off_match_sklearn_on_the_top_k_path(n):
    # lodestar.metrics exploits a small k (the top-k method); rows hold heavy
    # ties, blocks straddling k, padding-free and padded lists alike (padding
    # holds the highest scores and labels).
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 5, size=(8, n)).astype(np.float64)
    scores = np.round(rng.random((8, n)), 1)
    scores[0] = 0.5  # one block holds the whole list
    for k in (1, 3, 10, 32):
        assert _ranking.choose_method(n, k) == "topk"
        for name in ("dcg", "ndcg"):
            got = getattr(metrics, name)(scores, labels, k=k)
            reference = getattr(sklearn_metrics, f"{name}_score")
            want = [reference(labels[i : i + 1], scores[i : i + 1], k=k) for i in range(8)]
            np.testing.assert_allclose(got, want, **TOL)
        where = np.arange(n + 7) < n
        padded = metrics.ndcg(
            np.pad(scores, ((0, 0), (0, 7)), constant_values=9.0),
            np.pad(labels, ((0, 0), (0, 7)), constant_values=4.0),
            k=k,
            where=np.broadcast_to(where, (8, n + 7)),
        )
        np.testing.assert_allclose(padded, metrics.ndcg(scores, labels, k=k), **TOL)
