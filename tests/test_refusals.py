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
    ("dcg_score", (np.array([[1 + 1j, 2.0]]), [[1.0, 2.0]]), {}),
    ("ndcg_score", ([[1.0, 2.0]], np.array([[1 + 0j, 2.0]])), {}),
    ("reciprocal_rank_score", (np.array([[1 + 1j, 2.0]]), [[1.0, 2.0]]), {}),
    ("dcg_score", (np.zeros((2, 0)), np.zeros((2, 0))), {}),
    ("ndcg_score", (np.zeros((2, 0)), np.zeros((2, 0))), {}),
    ("dcg_score", (np.zeros((2, 3)), np.zeros((2, 0))), {}),
    ("dcg_score", (5, GOOD_SCORE), {}),
    ("ndcg_score", (None, GOOD_SCORE), {}),
    ("dcg_score", (GOOD_TRUE, "ab"), {}),
    ("dcg_score", (GOOD_TRUE, GOOD_SCORE), dict(sample_weight=5)),
    ("ndcg_score", (GOOD_TRUE, GOOD_SCORE), dict(k=0, sample_weight=5)),
]


def _sklearn(name):
    """scikit-learn's function; reciprocal rank refuses as dcg_score does."""
    return getattr(sklearn_metrics, "dcg_score" if name == "reciprocal_rank_score" else name)


@pytest.mark.parametrize("name, args, kwargs", SAME_AS_SKLEARN)
def test_refusals_match_sklearn(name, args, kwargs):
    with pytest.raises(Exception) as theirs:
        _sklearn(name)(*args, **kwargs)
    with pytest.raises(Exception) as ours:
        getattr(lsk, name)(*args, **kwargs)
    assert str(ours.value) == str(theirs.value)
    # scikit-learn's InvalidParameterError is a ValueError and a TypeError; so is ours.
    for base in (ValueError, TypeError, ZeroDivisionError):
        assert isinstance(ours.value, base) == isinstance(theirs.value, base)


@pytest.mark.parametrize("name", ["dcg_score", "ndcg_score", "reciprocal_rank_score"])
@pytest.mark.parametrize("which", ["y_true", "y_score", "sample_weight"])
def test_sparse_input_is_refused_as_scikit_learn_refuses_it(name, which):
    sparse = pytest.importorskip("scipy.sparse")
    args = dict(y_true=np.array(GOOD_TRUE), y_score=np.array(GOOD_SCORE), sample_weight=None)
    args[which] = sparse.csr_matrix([1.0, 2.0] if which == "sample_weight" else args[which])
    with pytest.raises(Exception) as theirs:
        _sklearn(name)(**args)
    with pytest.raises(InvalidParameterError) as ours:
        getattr(lsk, name)(**args)
    assert str(ours.value) == str(theirs.value).replace(_sklearn(name).__name__, name)
    assert str(ours.value).startswith(f"The '{which}' parameter of {name} must be an array-like")


@pytest.mark.parametrize("log_base", [1e-300, 1e300, 1e-30, 1 + 1e-12, 1 - 1e-12])
def test_extreme_log_bases_agree_with_sklearn(log_base):
    theirs = sklearn_metrics.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=log_base)
    ours = lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=log_base)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_subnormal_log_base_is_refused():
    # scikit-learn computes with it; XLA flushes it to zero, so lodestar refuses.
    with pytest.raises(InvalidParameterError) as error:
        lsk.dcg_score(GOOD_TRUE, GOOD_SCORE, log_base=1e-320)
    assert str(error.value) == (
        "The 'log_base' parameter of dcg_score must be a float in the range "
        "[2.2250738585072014e-308, 1.7976931348623157e+308] (the normal float64 numbers; "
        "a smaller base is flushed to zero). Got 1e-320 instead."
    )


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


def test_exp2_gain_overflow_is_refused_with_the_dtype_limit():
    big = L.at[0, 0].set(128.0)
    message = (
        "Input labels is too large for gain='exp2' in float32: the gains 2**label - 1 of a "
        "list must sum to less than 3.4028235e+38, the largest float32, so every label must "
        "be below 128. Use smaller labels, gain='linear', or float64 (labels below 1024)."
    )
    for metric in (metrics.dcg, metrics.ndcg):
        with pytest.raises(ValueError) as caught:
            metric(S, big, gain="exp2")
        assert str(caught.value) == message
        with pytest.raises(ValueError, match="too large for gain='exp2'"):
            metric(S, L.at[0, :2].set(127.0), gain="exp2")  # the sum overflows
        assert bool(jnp.all(jnp.isfinite(metric(S, L.at[0, 0].set(127.0), gain="exp2"))))
        assert bool(jnp.all(jnp.isfinite(metric(S, big))))  # linear gains: fine
        assert bool(jnp.isnan(jax.jit(lambda s, y, m=metric: m(s, y, gain="exp2"))(S, big)[0]))
    with pytest.raises(ValueError) as caught:
        metrics.dcg(S.astype(jnp.float64), L.at[0, 0].set(1024.0).astype(jnp.float64), gain="exp2")
    assert str(caught.value) == (
        "Input labels is too large for gain='exp2' in float64: the gains 2**label - 1 of a "
        "list must sum to less than 1.7976931348623157e+308, the largest float64, so every "
        "label must be below 1024. Use smaller labels, gain='linear'."
    )
    with pytest.raises(ValueError, match="Input ideal_labels is too large for gain='exp2'"):
        metrics.ndcg(S, L, gain="exp2", ideal_labels=jnp.array([[200.0, 1.0]]))
    jitted = jax.jit(lambda s, y, i: metrics.ndcg(s, y, gain="exp2", ideal_labels=i))
    assert bool(jnp.isnan(jitted(S, L, jnp.array([[200.0, 1.0]]))[0]))


def test_refused_ideal_labels_give_nan_under_jit():
    jitted = jax.jit(lambda s, y, i: metrics.ndcg(s, y, ideal_labels=i))
    for bad in (-1.0, jnp.nan, jnp.inf):
        assert bool(jnp.isnan(jitted(S, L, jnp.array([[bad, 1.0]]))[0]))
    assert bool(jnp.isfinite(jitted(S, L, jnp.array([[2.0, 1.0]]))[0]))


@pytest.mark.parametrize("log_base", [1e-300, 1e300, 1e-30, 1 + 1e-12])
def test_extreme_log_bases_are_computed_in_float32(log_base):
    # The base is carried in float64 under x64 and its logarithm is taken
    # there, so float32 lists get float64's value to float32 precision.
    expected = metrics.dcg(S.astype(jnp.float64), L.astype(jnp.float64), log_base=log_base)
    got = metrics.dcg(S, L, log_base=log_base)
    assert bool(jnp.all(jnp.isfinite(got)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_log_bases_that_float32_cannot_carry_are_refused_without_x64():
    with jax.enable_x64(False):
        with pytest.raises(InvalidParameterError) as caught:
            metrics.dcg(S, L, log_base=1e300)
        assert str(caught.value) == (
            "The 'log_base' parameter of dcg must be a float in the range "
            "[1.1754944e-38, 3.4028235e+38] (the normal float32 numbers, since "
            "jax_enable_x64 is off). Got 1e+300 instead."
        )
        assert bool(jnp.all(jnp.isfinite(metrics.dcg(S, L, log_base=1e30))))


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


@pytest.mark.parametrize(
    "scores, labels, which, value",
    [
        (np.array([[2**31, 1]]), np.array([[1, 0]]), "scores", "int64 holding 2147483648"),
        (np.array([[-(2**31) - 1, 1]]), np.array([[1, 0]]), "scores", "holding -2147483649"),
        (np.array([[2**40, 1]], np.uint64), np.array([[1, 0]]), "scores", "uint64 holding"),
        (np.array([[3, 1]]), np.array([[2**31, 0]]), "labels", "int64 holding 2147483648"),
        ([[2**31, 1]], [[1, 0]], "scores", "int64 holding 2147483648"),
    ],
)
def test_integers_that_would_wrap_without_x64_are_refused(scores, labels, which, value):
    message = (
        f"outside the range of {'uint32' if 'uint' in value else 'int32'} that JAX holds them "
        f"in without jax_enable_x64 (it would wrap around). Turn jax_enable_x64 on, or pass "
        f"{which} as floats."
    )
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match=f"^dcg got {which} of dtype .*{value}"):
            metrics.dcg(scores, labels)
        with pytest.raises(ValueError, match=re.escape(message)):
            metrics.dcg(scores, labels)
        # What fits is held exactly: the largest int32 score ranks first.
        top = metrics.reciprocal_rank(np.array([[2**31 - 1, 1]]), np.array([[1, 0]]))
        assert float(top[0]) == 1.0
    # With x64 on, JAX holds int64 and nothing is refused.
    assert np.isfinite(float(metrics.dcg(scores, labels)[0]))
