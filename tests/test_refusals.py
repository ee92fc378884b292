"""Every refusal: exception class and message text, pinned.

For the drop-ins each refusal is compared with scikit-learn live (same class,
same text) where scikit-learn refuses the same input, and pinned verbatim
where lodestar deliberately differs.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lodestar import InvalidParameterError, metrics
from lodestar import sklearn as lsk

sklearn_metrics = pytest.importorskip("sklearn.metrics")

GOOD_TRUE = [[3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
GOOD_SCORE = [[0.5, 0.5, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4]]

SAME_AS_SKLEARN = [
    # (function name, args, kwargs)
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=0)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=-3)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=1.5)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k="3")),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=0)),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=2.0)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(log_base=0)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(log_base=-2.0)),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(log_base=float("nan"))),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(log_base=float("inf"))),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(log_base="e")),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(ignore_ties=1)),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(ignore_ties="no")),
    ("ndcg_score", ([[1.0]], [[0.3]]), {}),
    ("ndcg_score", ([[1.0], [2.0]], [[0.3], [0.1]]), {}),
    ("dcg_score", ([[1.0, 2.0], [1.0, 2.0]], [[1.0, 2.0]]), {}),
    ("ndcg_score", ([[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0]]), {}),
    ("dcg_score", ([1.0, 2.0], [1.0, 2.0]), {}),
    ("dcg_score", ([1.5, 2.0, 3.0], [1.0, 2.0, 3.0]), {}),
    ("ndcg_score", ([1, 2, 3], [1.0, 2.0, 3.0]), {}),
    ("dcg_score", ([[np.nan, 1.0]], [[1.0, 2.0]]), {}),
    ("dcg_score", ([[0.0, 1.0]], [[np.nan, 2.0]]), {}),
    ("ndcg_score", ([[0.0, 1.0]], [[np.inf, 2.0]]), {}),
    ("ndcg_score", ([[0.0, -np.inf]], [[1.0, 2.0]]), {}),
    ("dcg_score", (np.array([[0.0, 1.0]], np.float32), np.array([[np.inf, 2.0]], np.float32)), {}),
    ("ndcg_score", ([[1.0, -2.0]], [[1.0, 2.0]]), {}),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(sample_weight=[1.0])),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(sample_weight=[1.0, 2.0, 3.0])),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(sample_weight=[0.0, 0.0])),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(sample_weight=[1.0, -1.0])),
    ("dcg_score", (np.ones((2, 2, 2)), np.ones((2, 2, 2))), {}),
    ("dcg_score", (np.zeros((0, 3)), np.zeros((0, 3))), {}),
    ("ndcg_score", ([["a", "b"]], [[1.0, 2.0]]), {}),
]


@pytest.mark.parametrize("name, args, kwargs", SAME_AS_SKLEARN)
def test_refusals_match_sklearn(name, args, kwargs):
    with pytest.raises(Exception) as theirs:
        getattr(sklearn_metrics, name)(*args, **kwargs)
    with pytest.raises(Exception) as ours:
        getattr(lsk, name)(*args, **kwargs)
    assert str(ours.value) == str(theirs.value)
    # scikit-learn's InvalidParameterError is a ValueError and a TypeError; so is ours.
    for base in (ValueError, TypeError, ZeroDivisionError):
        assert isinstance(ours.value, base) == isinstance(theirs.value, base)


def test_single_document_dcg_uses_ndcg_sentence():
    # scikit-learn reports a target-type error here; lodestar says what is wrong.
    with pytest.raises(ValueError) as error:
        lsk.dcg_score([[1.0]], [[0.3]])
    assert str(error.value) == (
        "Computing NDCG is only meaningful when there is more than 1 document. Got 1 instead."
    )
    with pytest.raises(ValueError) as error:
        lsk.reciprocal_rank_score([[1.0], [0.0]], [[0.3], [0.2]])
    assert str(error.value) == (
        "Computing reciprocal rank is only meaningful when there is more than 1 document. "
        "Got 1 instead."
    )


@pytest.mark.parametrize("name", ["dcg_score", "ndcg_score", "reciprocal_rank_score"])
def test_column_mismatch_names_both_shapes(name):
    with pytest.raises(ValueError) as error:
        getattr(lsk, name)([[1.0, 0.0, 1.0]], [[0.1, 0.2]])
    assert str(error.value) == (
        "y_true and y_score must have the same shape (n_samples, n_labels); got y_true "
        "(1, 3) and y_score (1, 2)."
    )


@pytest.mark.parametrize("value", [True, False])
def test_bool_k_and_log_base_are_refused(value):
    with pytest.raises(InvalidParameterError, match=re.escape(f"Got {value!r} instead.")):
        lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, k=value)
    with pytest.raises(InvalidParameterError, match=re.escape(f"Got {value!r} instead.")):
        lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=value)


def test_two_dimensional_sample_weight_is_refused():
    with pytest.raises(
        ValueError,
        match=re.escape("sample_weight must be 1-D, one weight per sample; got shape (2, 1)."),
    ):
        lsk.ndcg_score(GOOD_TRUE, GOOD_SCORE, sample_weight=[[1.0], [2.0]])


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("reciprocal_rank_score", dict(k=0)),
        ("reciprocal_rank_score", dict(ignore_ties=None)),
    ],
)
def test_reciprocal_rank_score_validates_like_the_others(name, kwargs):
    with pytest.raises(InvalidParameterError, match=f"parameter of {name} must be"):
        getattr(lsk, name)(GOOD_TRUE, GOOD_SCORE, **kwargs)


def test_reciprocal_rank_score_refuses_nan_and_bad_weights():
    with pytest.raises(ValueError, match=re.escape("Input contains NaN.")):
        lsk.reciprocal_rank_score([[0.0, 1.0]], [[np.nan, 1.0]])
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero, can't be normalized"):
        lsk.reciprocal_rank_score(GOOD_TRUE, GOOD_SCORE, sample_weight=[0.0, 0.0])


def test_degenerate_bases_are_accepted_quietly(recwarn):
    assert lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=1) == 0.0
    assert lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=0.5) < 0
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# --- lodestar.metrics -------------------------------------------------------------

S = jnp.array([[0.5, 0.5, 0.2]], jnp.float32)
L = jnp.array([[1.0, 0.0, 2.0]], jnp.float32)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: metrics.dcg(S, L, k=0),
            InvalidParameterError,
            "The 'k' parameter of dcg must be an int in the range [1, inf) or None. Got 0 instead.",
        ),
        (
            lambda: metrics.ndcg(S, L, k=2.5),
            InvalidParameterError,
            "The 'k' parameter of ndcg must be an int in the range [1, inf) or None. Got 2.5 instead.",
        ),
        (
            lambda: metrics.reciprocal_rank(S, L, k=-1),
            InvalidParameterError,
            "The 'k' parameter of reciprocal_rank must be an int in the range [1, inf) or None. Got -1 instead.",
        ),
        (
            lambda: metrics.dcg(S, L, log_base=0.0),
            InvalidParameterError,
            "The 'log_base' parameter of dcg must be a float in the range (0.0, inf). Got 0.0 instead.",
        ),
        (
            lambda: metrics.dcg(S, L, log_base=float("inf")),
            InvalidParameterError,
            "The 'log_base' parameter of dcg must be a float in the range (0.0, inf). Got inf instead.",
        ),
        (
            lambda: metrics.dcg(S, L, gain="exp"),
            InvalidParameterError,
            "The 'gain' parameter of dcg must be a str among {'linear', 'exp2'} or a callable. Got 'exp' instead.",
        ),
        (
            lambda: metrics.ndcg(S, L, ignore_ties="yes"),
            InvalidParameterError,
            "The 'ignore_ties' parameter of ndcg must be an instance of 'bool' or an instance of 'numpy.bool'. Got 'yes' instead.",
        ),
        (
            lambda: metrics.dcg(S, L[:, :2]),
            ValueError,
            "dcg expects scores and labels of the same shape; got scores (1, 3) and labels (1, 2).",
        ),
        (
            lambda: metrics.ndcg(jnp.array(1.0), jnp.array(1.0)),
            ValueError,
            "ndcg expects scores of shape (..., n) with at least one dimension; got a scalar.",
        ),
        (
            lambda: metrics.dcg(S, L, where=jnp.ones((1, 3), jnp.float32)),
            ValueError,
            "dcg expects `where` to be a boolean mask; got dtype float32.",
        ),
        (
            lambda: metrics.dcg(S, L, where=jnp.ones((1, 2), bool)),
            ValueError,
            "dcg expects `where` of the same shape as scores; got where (1, 2) and scores (1, 3).",
        ),
        (
            lambda: metrics.dcg(np.array([["a", "b"]]), np.ones((1, 2))),
            ValueError,
            "dcg expects real-valued numeric scores; got dtype <U1.",
        ),
        (
            lambda: metrics.dcg(S, L, gain=lambda x: x[..., :1]),
            ValueError,
            "A callable gain must return an array of the labels' shape (1, 3); it returned shape (1, 1).",
        ),
        (lambda: metrics.ndcg(S, -L), ValueError, "ndcg should not be used on negative labels."),
        (lambda: metrics.dcg(S.at[0, 1].set(jnp.nan), L), ValueError, "Input scores contains NaN."),
        (
            lambda: metrics.dcg(S, L.at[0, 0].set(jnp.inf)),
            ValueError,
            "Input labels contains infinity or a value too large for dtype('float32').",
        ),
        (
            lambda: metrics.reciprocal_rank(S.at[0, 2].set(-jnp.inf), L),
            ValueError,
            "Input scores contains infinity or a value too large for dtype('float32').",
        ),
    ],
)
def test_metric_refusals(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "options",
    [dict(k=0), dict(k=1.5), dict(log_base=-1.0), dict(gain="nope"), dict(ignore_ties=None)],
)
def test_static_checks_raise_under_jit(options):
    @jax.jit
    def f(s, y):
        return metrics.dcg(s, y, **options)

    with pytest.raises(InvalidParameterError):
        f(S, L)


def test_shape_checks_raise_under_jit():
    with pytest.raises(ValueError, match="same shape"):
        jax.jit(metrics.ndcg)(S, L[:, :2])


def test_values_in_padding_are_never_refused():
    where = jnp.array([[True, True, False]])
    bad = S.at[0, 2].set(jnp.nan)
    np.testing.assert_allclose(metrics.dcg(bad, -L, where=where), metrics.dcg(S[:, :2], -L[:, :2]))
    np.testing.assert_allclose(
        metrics.ndcg(bad, L.at[0, 2].set(-1), where=where), metrics.ndcg(S[:, :2], L[:, :2])
    )
