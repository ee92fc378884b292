"""Precision, recall, hits, average precision and ERR (lodestar.metrics).

Tolerances (x64 is on via conftest):

* Every labelling of six tied items at every k, and the numpy reference on
  tie-free lists: float64, ``rtol = atol = 1e-12``. Only round-off separates
  the two sides. (The invariances every measure shares, from the tie-order
  brute force to jit, vmap, padding, dtypes and the NaN rule, are tested over
  the whole registry in ``tests/test_measures.py``.)
* Large tie blocks against exact fractions (Bestgen's expected AP of a random
  ranking; ERR of a block of equal grades): ``rtol = 1e-13``.
* Forward-mode ERR derivative in the labels against a central difference
  (step 1e-6): ``rtol = 1e-6``.
"""

import itertools
import math
import re
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.experimental import checkify

import lodestar
from lodestar import InvalidParameterError, metrics

TOL = dict(rtol=1e-12, atol=1e-12)
MAX_LABEL = 3.5


def _err(scores, labels, **options):
    return metrics.err(scores, labels, max_label=MAX_LABEL, **options)


def _err_of_order(labels, order, *, k=None):
    return oracles.err_of_order(labels, order, k=k, max_label=MAX_LABEL)


# name: (lodestar function with the shared signature, oracle on one explicit order)
MEASURES = {
    "precision": (metrics.precision, oracles.precision_of_order),
    "recall": (metrics.recall, oracles.recall_of_order),
    "hits": (metrics.hits, oracles.hits_of_order),
    "average_precision": (metrics.average_precision, oracles.ap_of_order),
    "err": (_err, _err_of_order),
}

# --- exactness: the all-permutations brute force ------------------------------------


@pytest.mark.parametrize("name", MEASURES)
def test_every_labelling_of_six_tied_items_at_every_k(name):
    # One block of 6 under every 0-2 labelling up to item order (which the
    # average ignores), the whole batch in one call per k.
    metric, oracle = MEASURES[name]
    labellings = np.array(list(itertools.combinations_with_replacement(range(3), 6)), float)
    scores = np.zeros(labellings.shape)
    for k in [None, *range(1, 8)]:
        expected = [
            oracles.tie_average(oracle, row, labels, k=k)
            for row, labels in zip(scores, labellings, strict=True)
        ]
        np.testing.assert_allclose(metric(scores, labellings, k=k), expected, **TOL)


# --- an independent reference on tie-free lists (trec_eval's and ranx's loops) -------


def reference(name, scores, labels, k):
    """Straight loops over the sorted list, written like trec_eval's m_*.c."""
    order = np.argsort(-scores, kind="stable")
    rel = labels[order]
    cutoff = len(rel) if k is None else min(k, len(rel))
    relevant_total = np.count_nonzero(labels)
    if name == "precision":
        return np.count_nonzero(rel[:cutoff]) / (len(rel) if k is None else k)
    if name == "recall":
        return np.count_nonzero(rel[:cutoff]) / relevant_total if relevant_total else 0.0
    if name == "hits":
        return float(np.any(rel[:cutoff] != 0))
    if name == "average_precision":
        so_far, total = 0, 0.0
        for i in range(cutoff):
            if rel[i] != 0:
                so_far += 1
                total += so_far / (i + 1)
        return total / relevant_total if relevant_total else 0.0
    stop = (np.exp2(rel[:cutoff]) - 1) / 2**MAX_LABEL
    reach = np.concatenate([[1.0], np.cumprod(1 - stop)[:-1]])
    return float(np.sum(reach * stop / np.arange(1, cutoff + 1)))


@pytest.mark.parametrize("name", MEASURES)
@given(
    n=st.integers(1, 60),
    k=st.one_of(st.none(), st.integers(1, 70)),
    seed=st.integers(0, 2**32 - 1),
)
def test_tie_free_lists_match_the_reference(name, n, k, seed):
    rng = np.random.default_rng(seed)
    scores = rng.permutation(n).astype(np.float64)
    labels = rng.integers(0, 4, n) * (rng.random(n) < 0.5)
    labels = labels.astype(np.float64)
    metric = MEASURES[name][0]
    expected = reference(name, scores, labels, k)
    # Padded to one width, so that one compilation serves every n.
    where = np.arange(64) < n
    padded_scores = np.where(where, np.resize(scores, 64), -1.0)
    padded_labels = np.where(where, np.resize(labels, 64), 0.0)
    for ignore_ties in (False, True):
        got = metric(padded_scores, padded_labels, k=k, ignore_ties=ignore_ties, where=where)
        np.testing.assert_allclose(got, expected, **TOL)


# --- known values ---------------------------------------------------------------------


def test_hand_examples():
    ranked = -np.arange(6.0)
    labels = np.array([1.0, 0.0, 2.0, 0.0, 0.0, 1.0])  # relevant at ranks 1, 3, 6
    assert metrics.precision(ranked, labels, k=3) == pytest.approx(2 / 3, rel=1e-15)
    assert metrics.precision(ranked, labels, k=10) == pytest.approx(3 / 10, rel=1e-15)
    assert metrics.precision(ranked, labels) == pytest.approx(3 / 6, rel=1e-15)
    assert metrics.recall(ranked, labels, k=3) == pytest.approx(2 / 3, rel=1e-15)
    assert metrics.hits(ranked, labels, k=1) == 1.0
    assert metrics.hits(ranked, labels * (np.arange(6) > 0), k=2) == 0.0
    np.testing.assert_allclose(
        metrics.average_precision(ranked, labels), (1 + 2 / 3 + 3 / 6) / 3, rtol=1e-15
    )
    np.testing.assert_allclose(
        metrics.average_precision(ranked, labels, k=3), (1 + 2 / 3) / 3, rtol=1e-15
    )
    # ERR, grades 0-4: stop probabilities 1/16, 0, 3/16, 0, 0, 1/16.
    expected = 1 / 16 + (15 / 16) * (3 / 16) / 3 + (15 / 16) * (13 / 16) * (1 / 16) / 6
    np.testing.assert_allclose(metrics.err(ranked, labels, max_label=4), expected, rtol=1e-15)


def test_hits_is_hypergeometric_in_the_straddling_block():
    # 2 items above, then 5 tied of which 2 relevant; k = 4 keeps 2 block slots.
    scores = np.array([3.0, 3.0, 1, 1, 1, 1, 1, 0])
    labels = np.array([0.0, 0, 1, 0, 1, 0, 0, 1])
    expected = 1 - math.comb(3, 2) / math.comb(5, 2)
    np.testing.assert_allclose(metrics.hits(scores, labels, k=4), expected, rtol=1e-15)
    assert metrics.hits(scores, labels, k=7) == 1.0  # the whole block fits: exactly 1
    assert metrics.hits(scores, labels, k=2) == 0.0


def test_average_precision_of_a_random_ranking_at_large_blocks():
    # Bestgen (2015): a uniformly random order of m items, r relevant, has
    # E[AP] = (1/m) (H_m + (r - 1)/(m - 1) (m - H_m)); exact in fractions.
    m, r = 400, 3
    harmonic = sum(Fraction(1, j) for j in range(1, m + 1))
    expected = (harmonic + Fraction(r - 1, m - 1) * (m - harmonic)) / m
    labels = np.zeros(m + 50)
    labels[[7, 123, 399]] = 1
    scores = np.concatenate([np.ones(m), np.zeros(50)])
    labels[m + 3] = 0  # nothing relevant below the block
    np.testing.assert_allclose(
        metrics.average_precision(scores, labels), float(expected), rtol=1e-13
    )


def test_err_of_a_large_block_of_equal_grades():
    m, grade = 300, 2
    stop = Fraction(2**grade - 1, 2**4)
    expected = sum(stop * (1 - stop) ** u / (u + 1) for u in range(m))
    labels = np.full(m, float(grade))
    np.testing.assert_allclose(
        metrics.err(np.zeros(m), labels, max_label=4), float(expected), rtol=1e-13
    )
    # float32 stays within a few ulps: every update is a convex combination.
    got32 = metrics.err(np.zeros(m, np.float32), labels.astype(np.float32), max_label=4)
    np.testing.assert_allclose(got32, float(expected), rtol=1e-5)


def test_err_with_grades_at_the_maximum_and_huge_maximum():
    # A grade at max_label stops with (2^g - 1)/2^g < 1; a huge max_label
    # underflows to tiny stop probabilities without overflow or NaN.
    scores = np.array([1.0, 0.0])
    np.testing.assert_allclose(metrics.err(scores, np.array([1.0, 1.0]), max_label=1), 0.5 + 0.125)
    tiny = metrics.err(scores, np.array([1000.0, 0.0]), max_label=2000)
    assert 0 <= float(tiny) < 1e-300


# --- padding, batching, jit, vmap ---------------------------------------------------------


# --- gradients, dtypes, NaN -------------------------------------------------------------


def test_err_forward_derivative_in_the_labels():
    scores = jnp.array([0.5, 0.5, 0.2, 0.9])
    labels = jnp.array([1.0, 2.5, 0.0, 3.0])
    direction = jnp.array([0.3, -0.2, 0.0, 0.1])
    _, tangent = jax.jvp(lambda y: _err(scores, y), (labels,), (direction,))
    step = 1e-6
    numeric = (
        _err(scores, labels + step * direction) - _err(scores, labels - step * direction)
    ) / (2 * step)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)


def test_err_label_above_max_under_jit_gives_nan_for_that_list_only():
    labels = np.array([[1.0, 0.0, 2.0], [1.0, 5.0, 0.0]])
    scores = np.array([[0.3, 0.2, 0.1], [0.3, 0.2, 0.1]])
    got = np.asarray(jax.jit(lambda s, y: metrics.err(s, y, max_label=4))(scores, labels))
    assert np.isnan(got[1])
    np.testing.assert_allclose(got[0], metrics.err(scores[0], labels[0], max_label=4), **TOL)


# --- refusals ---------------------------------------------------------------------------

S = jnp.array([[0.5, 0.5, 0.2]], jnp.float32)
L = jnp.array([[1.0, 0.0, 2.0]], jnp.float32)
NAMES = ["precision", "recall", "hits", "average_precision", "err"]


def _call(name, scores=S, labels=L, **options):
    if name == "err":
        options.setdefault("max_label", 4)
    return getattr(metrics, name)(scores, labels, **options)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(k=0),
            "The 'k' parameter of {name} must be an int in the range [1, inf) or None. Got 0 instead.",
        ),
        (
            dict(k=2.0),
            "The 'k' parameter of {name} must be an int in the range [1, inf) or None. Got 2.0 instead.",
        ),
        (
            dict(k=True),
            "The 'k' parameter of {name} must be an int in the range [1, inf) or None. Got True instead.",
        ),
        (
            dict(ignore_ties="no"),
            "The 'ignore_ties' parameter of {name} must be an instance of 'bool' or an "
            "instance of 'numpy.bool'. Got 'no' instead.",
        ),
    ],
)
def test_option_refusals(name, options, message):
    with pytest.raises(InvalidParameterError) as caught:
        _call(name, **options)
    assert str(caught.value) == message.format(name=name)
    with pytest.raises(InvalidParameterError):  # static: raised at trace time too
        jax.jit(lambda s, y: _call(name, s, y, **options))(S, L)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda name: _call(name, labels=L[:, :2]),
            "{name} expects scores and labels of the same shape; got scores (1, 3) and labels (1, 2).",
        ),
        (
            lambda name: _call(name, where=jnp.ones((1, 2), bool)),
            "{name} expects `where` of the same shape as scores; got where (1, 2) and scores (1, 3).",
        ),
        (
            lambda name: _call(name, scores=jnp.array(1.0), labels=jnp.array(1.0)),
            "{name} expects scores of shape (..., n) with at least one dimension; got a scalar.",
        ),
        (lambda name: _call(name, scores=S.at[0, 1].set(jnp.nan)), "Input scores contains NaN."),
        (
            lambda name: _call(name, scores=S.at[0, 2].set(-jnp.inf)),
            "Input scores contains infinity or a value too large for dtype('float32').",
        ),
        (
            lambda name: _call(name, labels=L.at[0, 0].set(jnp.inf)),
            "Input labels contains infinity or a value too large for dtype('float32').",
        ),
        (
            lambda name: _call(name, labels=L.at[0, 1].set(-1.0)),
            "{name} should not be used on negative labels.",
        ),
    ],
)
def test_input_refusals(name, call, message):
    with pytest.raises(ValueError) as caught:
        call(name)
    assert str(caught.value) == message.format(name=name)


@pytest.mark.parametrize("max_label", [0, -1.0, float("nan"), float("inf"), None, "4", True])
def test_err_refuses_a_bad_max_label(max_label):
    with pytest.raises(InvalidParameterError) as caught:
        metrics.err(S, L, max_label=max_label)
    assert str(caught.value) == (
        "The 'max_label' parameter of err must be a float in the range (0.0, inf). "
        f"Got {max_label!r} instead."
    )


def test_err_requires_max_label():
    with pytest.raises(TypeError, match="max_label"):
        metrics.err(S, L)


def test_err_refuses_labels_above_max_label_eagerly_and_through_checkify():
    message = "Input labels contains a value greater than max_label=1.5 in err."
    with pytest.raises(ValueError, match=re.escape(message)):
        metrics.err(S, L, max_label=1.5)
    # Padding is never inspected.
    assert np.isfinite(metrics.err(S, L, max_label=1.5, where=jnp.array([[True, True, False]])))
    checked = jax.jit(checkify.checkify(lambda s, y: metrics.err(s, y, max_label=1.5)))
    with lodestar.value_checks_under_jit():
        error, _ = checked(S, L)
        ok, _ = checked(S, L.at[0, 2].set(1.5))
    with pytest.raises(checkify.JaxRuntimeError, match=re.escape(message)):
        error.throw()
    assert ok.get() is None
    # Outside the switch the list gives NaN instead.
    error, value = checked(S, L)
    assert error.get() is None and np.isnan(value).all()
