"""Non-finite and refused values under ``jit``: NaN for exactly those lists (decision 0003).

Eagerly, on concrete arrays, such values are refused with ``ValueError``.
Under ``jit`` they cannot be, and a list holding one must give NaN, never a
plausible number, while every other list keeps its finite value:

* every exact measure of the registry: a NaN score, a NaN or infinite label,
  a negative label where the measure refuses it. An infinite score is a legal
  position (first or last) and still ranks: finite.
* every smooth metric and every loss: the same, and an infinite score too (a
  soft rank is a function of the score values, not only of their order). The
  gradient of a loss (or smooth metric) is NaN for the real items of such a
  list, 0 for padding, and finite everywhere else.
* ``gain="exp2"`` with labels whose gains overflow: NaN as well.

Padding is never inspected: whatever it holds, its list is unaffected.

Each property draws a batch of four lists of six items (one compilation per
function), some lists corrupted in a real item, some padding corrupted too.
The default tier draws few examples; ``-m slow`` draws many more.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tiers
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar import _registry, losses, metrics, smooth

BATCH, N = 4, 6
KINDS = ("none", "nan_score", "inf_score", "neg_inf_score", "nan_label", "inf_label", "neg_label")
EXP2_KINDS = (*KINDS, "huge_label")


@st.composite
def batches(draw, kinds=KINDS):
    """Scores, labels, mask and the corruption of each list."""
    scores = np.array(
        draw(
            st.lists(
                st.sampled_from([0.0, 0.5, 1.0, -2.0, 3.0]), min_size=BATCH * N, max_size=BATCH * N
            )
        ),
        np.float64,
    ).reshape(BATCH, N)
    labels = np.array(
        draw(st.lists(st.integers(0, 3), min_size=BATCH * N, max_size=BATCH * N)), np.float64
    ).reshape(BATCH, N)
    labels[:, 0] = 1.0  # every list has a relevant item
    where = np.ones((BATCH, N), bool)
    corrupted = []
    for row in range(BATCH):
        kind = draw(st.sampled_from(kinds))
        slot = draw(st.integers(0, N - 1))
        _corrupt(scores, labels, row, slot, kind)
        corrupted.append(kind)
        if draw(st.booleans()):
            # Padding that holds anything, never inspected.
            pad = draw(st.integers(0, N - 1).filter(lambda p, s=slot: p != s))
            where[row, pad] = False
            _corrupt(scores, labels, row, pad, draw(st.sampled_from(kinds[1:])))
    return scores, labels, where, corrupted


def _corrupt(scores, labels, row, slot, kind):
    if kind == "nan_score":
        scores[row, slot] = np.nan
    elif kind == "inf_score":
        scores[row, slot] = np.inf
    elif kind == "neg_inf_score":
        scores[row, slot] = -np.inf
    elif kind == "nan_label":
        labels[row, slot] = np.nan
    elif kind == "inf_label":
        labels[row, slot] = np.inf
    elif kind == "neg_label":
        labels[row, slot] = -1.0
    elif kind == "huge_label":
        labels[row, slot] = 2000.0  # 2**2000 overflows float64


def expected_nan(corrupted, *, infinite_scores_rank, nonnegative_labels, exp2=False):
    refused = {"nan_score", "nan_label", "inf_label"}
    if not infinite_scores_rank:
        refused |= {"inf_score", "neg_inf_score"}
    if nonnegative_labels:
        refused.add("neg_label")
    if exp2:
        refused.add("huge_label")
    return np.array([kind in refused for kind in corrupted])


def assert_nan_exactly(values, nan):
    values = np.asarray(values)
    assert np.array_equal(np.isnan(values), nan), (values, nan)
    assert np.all(np.isfinite(values[~nan])), values


# --- exact measures ----------------------------------------------------------------------

MEASURES = list(_registry.MEASURES)


@functools.cache
def _exact(key):
    entry = _registry.MEASURES[key]
    fn = functools.partial(entry.function, **entry.required_options)
    return jax.jit(lambda s, y, w: fn(s, y, where=w)), entry


@functools.cache
def _exact_exp2(name):
    return jax.jit(lambda s, y, w: getattr(metrics, name)(s, y, where=w, gain="exp2"))


def _check_exact(key, case):
    scores, labels, where, corrupted = case
    fn, entry = _exact(key)
    nan = expected_nan(
        corrupted, infinite_scores_rank=True, nonnegative_labels=entry.nonnegative_labels
    )
    assert_nan_exactly(fn(scores, labels, where), nan)


@pytest.mark.parametrize("key", tiers.measure_params())
@settings(max_examples=25)
@given(case=batches())
def test_exact_measures_give_nan_for_exactly_the_refused_lists(key, case):
    _check_exact(key, case)


@pytest.mark.parametrize("name", ["dcg", "ndcg"])
@settings(max_examples=25)
@given(case=batches(EXP2_KINDS))
def test_exact_exp2_gains_that_overflow_give_nan(name, case):
    scores, labels, where, corrupted = case
    fn = _exact_exp2(name)
    nan = expected_nan(
        corrupted, infinite_scores_rank=True, nonnegative_labels=name == "ndcg", exp2=True
    )
    assert_nan_exactly(fn(scores, labels, where), nan)


# --- smooth metrics ----------------------------------------------------------------------

SMOOTH = {
    # name: (function, refuses negative labels, takes gain)
    "dcg": (smooth.dcg, False, True),
    "ndcg": (smooth.ndcg, True, True),
    "reciprocal_rank": (smooth.reciprocal_rank, False, False),
}


@functools.cache
def _value_and_grad(family, name, **options):
    """One jitted function per case: the values and the gradient of their sum."""
    function = (SMOOTH if family == "smooth" else LOSSES)[name][0]

    def fn(s, y, w):
        return function(s, y, where=w, **options)

    return jax.jit(lambda s, y, w: (fn(s, y, w), jax.grad(lambda t: jnp.sum(fn(t, y, w)))(s)))


def _check_differentiable(compiled, case, *, nonnegative_labels, exp2=False):
    """Values NaN for exactly the refused lists; gradients NaN for their real items only."""
    scores, labels, where, corrupted = case
    nan = expected_nan(
        corrupted, infinite_scores_rank=False, nonnegative_labels=nonnegative_labels, exp2=exp2
    )
    values, grad = compiled(scores, labels, where)
    assert_nan_exactly(values, nan)
    grad = np.asarray(grad)
    real_of_bad = nan[:, None] & where
    assert np.all(np.isnan(grad[real_of_bad])), grad
    assert np.all(np.isfinite(grad[~real_of_bad])), grad
    assert np.all(grad[~where] == 0), grad


@pytest.mark.parametrize("name", list(SMOOTH))
# The two most different soft ranks in the default tier, every one in the slow.
@pytest.mark.parametrize(
    "method", tiers.params(smooth.METHODS, default=("sigmoid", "permutahedron"))
)
@settings(max_examples=10)
@given(case=batches())
def test_smooth_metrics_give_nan_for_exactly_the_refused_lists(name, method, case):
    compiled = _value_and_grad("smooth", name, method=method, temperature=0.5)
    _check_differentiable(compiled, case, nonnegative_labels=SMOOTH[name][1])


@pytest.mark.parametrize("name", ["dcg", "ndcg"])
@settings(max_examples=10)
@given(case=batches(EXP2_KINDS))
def test_smooth_exp2_gains_that_overflow_give_nan(name, case):
    compiled = _value_and_grad("smooth", name, gain="exp2", k=3)
    _check_differentiable(compiled, case, nonnegative_labels=SMOOTH[name][1], exp2=True)


@functools.cache
def _ranks(method):
    return jax.jit(lambda s, w: smooth.ranks(s, where=w, method=method))


@pytest.mark.parametrize("method", smooth.METHODS)
@settings(max_examples=10)
@given(case=batches())
def test_soft_ranks_are_nan_for_every_real_item_of_a_list_with_a_bad_score(method, case):
    scores, labels, where, corrupted = case
    # Labels play no part in the ranks: only a non-finite score counts.
    nan = np.array([kind.endswith("score") for kind in corrupted])
    ranks = np.asarray(_ranks(method)(scores, where))
    assert np.all(np.isnan(ranks[nan[:, None] & where]))
    assert np.all(np.isfinite(ranks[~(nan[:, None] & where)]))
    assert np.all(ranks[~where] == 0)


# --- losses ------------------------------------------------------------------------------

LOSSES = {
    # name: (function, refuses negative labels, gain exp2 by default)
    "softmax_loss": (losses.softmax_loss, True, False),
    "listmle_loss": (losses.listmle_loss, False, False),
    "pairwise_logistic_loss": (losses.pairwise_logistic_loss, False, False),
    "lambda_loss": (losses.lambda_loss, True, True),
    "approx_ndcg_loss": (losses.approx_ndcg_loss, True, True),
    "neural_ndcg_loss": (losses.neural_ndcg_loss, True, True),
}


@functools.cache
def _mean_loss(name):
    function = LOSSES[name][0]
    return jax.jit(lambda s, y, w: function(s, y, where=w))


def _check_loss(name, case):
    _, nonnegative, exp2 = LOSSES[name]
    compiled = _value_and_grad("losses", name, reduction="none")
    _check_differentiable(compiled, case, nonnegative_labels=nonnegative, exp2=exp2)
    scores, labels, where, corrupted = case
    nan = expected_nan(
        corrupted, infinite_scores_rank=False, nonnegative_labels=nonnegative, exp2=exp2
    )
    mean = _mean_loss(name)(scores, labels, where)
    assert np.isnan(mean) == nan.any()


@pytest.mark.parametrize("name", list(LOSSES))
@settings(max_examples=20)
@given(data=st.data())
def test_losses_give_nan_for_exactly_the_refused_lists(name, data):
    _check_loss(name, data.draw(batches(EXP2_KINDS if LOSSES[name][2] else KINDS)))


# --- the exhaustive tier -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("key", MEASURES)
@settings(max_examples=300)
@given(case=batches())
def test_exact_measures_nan_rule_thoroughly(key, case):
    _check_exact(key, case)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LOSSES))
@settings(max_examples=200)
@given(data=st.data())
def test_losses_nan_rule_thoroughly(name, data):
    _check_loss(name, data.draw(batches(EXP2_KINDS if LOSSES[name][2] else KINDS)))
