"""Every traced float option of a loss or a smooth measure has its true derivative.

A training step may learn or anneal ``temperature``, ``mu``, ``margin`` or
``epsilon`` inside ``jit``; ``jax.grad`` and ``jax.jvp`` with respect to the
option must then give the derivative of the value, not a derivative cut by a
``stop_gradient`` meant for the scores. Each case compares, in float64 and
under one ``jit`` (so the option is traced), the reverse-mode derivative with
a central finite difference of step ``h = 1e-5``: its truncation error
(``h² f''' / 6``) and round-off (``1e-16 |f| / h``) stay below 1e-8 on these
2 x 8 lists, hence ``rtol=1e-6, atol=1e-8``; forward mode must agree with
reverse mode to rounding (``rtol=1e-9, atol=1e-12``). The scores are random
(no ties, no pair at a hinge's kink), so every function is smooth there.

The default tier takes each (function, option) pair once, the smooth
measures' relaxations spread over the measures so that each method is taken;
the slow tier takes every measure with every method, and the measures with a
soft cut-off with ``k`` too.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lodestar import losses, smooth
from lodestar.losses import _neural_ndcg

STEP = 1e-5
FINITE_DIFFERENCE = {"rtol": 1e-6, "atol": 1e-8}
FORWARD_REVERSE = {"rtol": 1e-9, "atol": 1e-12}


def _lists(shape=(2, 8)):
    rng = np.random.default_rng(33)
    scores = jnp.asarray(rng.normal(size=shape))
    labels = jnp.asarray(rng.integers(0, 4, size=shape).astype(np.float64))
    return scores, labels


# (id, function of (scores, labels, option value), option value).
LOSS_CASES = [
    ("lambda_loss-mu", lambda s, y, v: losses.lambda_loss(s, y, mu=v), 0.5),
    ("lambda_loss-mu-k", lambda s, y, v: losses.lambda_loss(s, y, mu=v, k=3), 0.5),
    ("lambda_loss-temperature", lambda s, y, v: losses.lambda_loss(s, y, temperature=v), 0.7),
    (
        "approx_ndcg_loss-temperature",
        lambda s, y, v: losses.approx_ndcg_loss(s, y, temperature=v, k=3),
        0.7,
    ),
    (
        "neural_ndcg_loss-temperature",
        lambda s, y, v: losses.neural_ndcg_loss(s, y, temperature=v),
        0.7,
    ),
    (
        "neural_ndcg_loss-temperature-no-sinkhorn",
        lambda s, y, v: losses.neural_ndcg_loss(s, y, temperature=v, sinkhorn_iterations=0),
        0.7,
    ),
    (
        "pairwise_logistic_loss-temperature",
        lambda s, y, v: losses.pairwise_logistic_loss(s, y, temperature=v),
        0.7,
    ),
    ("pairwise_hinge_loss-margin", lambda s, y, v: losses.pairwise_hinge_loss(s, y, margin=v), 0.8),
    (
        "pairwise_soft_zero_one_loss-temperature",
        lambda s, y, v: losses.pairwise_soft_zero_one_loss(s, y, temperature=v),
        0.7,
    ),
    ("poly1_softmax_loss-epsilon", lambda s, y, v: losses.poly1_softmax_loss(s, y, epsilon=v), 0.5),
]

MEASURES = {
    "ranks": lambda s, y, **o: jnp.sum(smooth.ranks(s, **o) * y),
    "dcg": smooth.dcg,
    "ndcg": smooth.ndcg,
    "precision": functools.partial(smooth.precision, k=3),
    "recall": functools.partial(smooth.recall, k=3),
    "average_precision": smooth.average_precision,
    "err": functools.partial(smooth.err, max_label=3),
    "reciprocal_rank": smooth.reciprocal_rank,
}
# Each method once in the default tier, on a measure whose path it changes.
DEFAULT_METHODS = {
    "ranks": "permutahedron",
    "dcg": "neuralsort",
    "ndcg": "softsort",
    "precision": "sigmoid",
    "recall": "neuralsort",
    "average_precision": "sigmoid",
    "err": "softsort",
    "reciprocal_rank": "sigmoid",
}
# The cut-off's soft weight carries the temperature too, whatever the method.
WITH_K = ("dcg", "ndcg", "average_precision", "err")


def _measure_case(name, method, k):
    measure = MEASURES[name]

    def value(s, y, v):
        options = {"temperature": v, "method": method} | ({} if k is None else {"k": k})
        return jnp.sum(measure(s, y, **options))

    default = method == DEFAULT_METHODS[name] and k is None
    ident = f"{name}-{method}" + ("" if k is None else f"-k{k}")
    return pytest.param(value, 0.7, id=ident, marks=() if default else pytest.mark.slow)


MEASURE_CASES = [
    _measure_case(name, method, k)
    for name in MEASURES
    for method in smooth.METHODS
    for k in (None, 3)
    if k is None or (name in WITH_K and method == DEFAULT_METHODS[name])
]


def _check_derivatives(function, at):
    scores, labels = _lists()

    def of_option(v):
        return function(scores, labels, v)

    @jax.jit
    def derivatives(v):
        grad = jax.grad(of_option)(v)
        _, tangent = jax.jvp(of_option, (v,), (jnp.ones_like(v),))
        difference = (of_option(v + STEP) - of_option(v - STEP)) / (2 * STEP)
        return grad, tangent, difference

    grad, tangent, difference = derivatives(jnp.float64(at))
    np.testing.assert_allclose(grad, difference, **FINITE_DIFFERENCE)
    np.testing.assert_allclose(tangent, grad, **FORWARD_REVERSE)
    assert abs(float(difference)) > 1e-6, "the option must change the value here"


@pytest.mark.parametrize(
    ("function", "at"),
    [pytest.param(f, at, id=ident) for ident, f, at in LOSS_CASES] + MEASURE_CASES,
)
def test_option_derivative_matches_finite_difference(function, at):
    _check_derivatives(function, at)


def test_blocked_neural_ndcg_temperature_derivative(monkeypatch):
    # Long lists hold no NeuralSort matrix; a limit of 0 takes that path here.
    monkeypatch.setattr(_neural_ndcg, "_NEURAL_DENSE_LIMIT", 0)
    _check_derivatives(
        lambda s, y, v: losses.neural_ndcg_loss(s[:, :7], y[:, :7], temperature=v), 0.7
    )
