"""Tests of lodestar.losses: reductions, padding, numerics, transformations, Rax.

Tolerances: float64 comparisons (Rax agreement, padding and permutation
invariance, reductions, jit/vmap) use ``rtol=1e-10, atol=1e-12``; gradient
checks use :func:`jax.test_util.check_grads` in float64 with its default
tolerances; limits (temperature -> 0 against the exact metric) use
``atol=1e-4``. Half-precision cases only require finite values and gradients.

Every comparison is against an independently computed quantity (Rax, the exact
metric, a NumPy brute force, or the loss on other inputs), so each can fail.
"""

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax_compat
import tiers
from jax.test_util import check_grads

from lodestar import losses, metrics
from lodestar._validation import InvalidParameterError

F64 = jnp.float64
TIGHT = {"rtol": 1e-10, "atol": 1e-12}

LOSSES = {
    "softmax_loss": losses.softmax_loss,
    "listmle_loss": losses.listmle_loss,
    "pairwise_logistic_loss": losses.pairwise_logistic_loss,
    "lambda_loss": losses.lambda_loss,
    "approx_ndcg_loss": losses.approx_ndcg_loss,
    "neural_ndcg_loss": losses.neural_ndcg_loss,
    "poly1_softmax_loss": losses.poly1_softmax_loss,
    "pointwise_mse_loss": losses.pointwise_mse_loss,
    "pointwise_sigmoid_loss": losses.pointwise_sigmoid_loss,
    "pairwise_hinge_loss": losses.pairwise_hinge_loss,
    "pairwise_soft_zero_one_loss": losses.pairwise_soft_zero_one_loss,
    "pairwise_mse_loss": losses.pairwise_mse_loss,
    "pairwise_qr_loss": losses.pairwise_qr_loss,
    "unique_softmax_loss": losses.unique_softmax_loss,
}
NAMES = list(LOSSES)
# Pointwise losses score each item against its label, not the list's order.
POINTWISE = (losses.pointwise_mse_loss, losses.pointwise_sigmoid_loss)


# The default tier runs the per-loss tests on a listwise loss and a pairwise
# loss with lambda weights and cut-off; the slow tier on every loss (each also
# runs in the default tier's packed-list, NaN-rule and scikit-learn or Rax
# agreement tests).
@pytest.fixture(params=tiers.params(NAMES, default=("softmax_loss", "lambda_loss")))
def loss(request):
    return LOSSES[request.param]


def _batch(seed=0, shape=(3, 5)):
    """Tie-free float64 scores and labels (distinct labels per list)."""
    rng = np.random.default_rng(seed)
    scores = jnp.asarray(rng.normal(size=shape), F64)
    labels = np.stack([rng.permutation(shape[-1]) for _ in range(int(np.prod(shape[:-1])))])
    labels = jnp.asarray(labels.reshape(shape) % 4 + (labels.reshape(shape) >= 4) * 0.5, F64)
    return scores, labels


def _graded(seed=0, shape=(3, 5)):
    """Tie-free scores and distinct graded labels 0, 1, ..., n - 1."""
    rng = np.random.default_rng(seed)
    scores = jnp.asarray(rng.normal(size=shape), F64)
    rows = [rng.permutation(shape[-1]) for _ in range(int(np.prod(shape[:-1])))]
    labels = jnp.asarray(np.stack(rows).reshape(shape), F64)
    return scores, labels


# --------------------------------------------------------------------------
# Reductions and weights
# --------------------------------------------------------------------------


def test_reductions(loss):
    scores, labels = _graded(1)
    where = jnp.array([[True] * 5, [False] * 5, [True, True, False, True, False]])
    none = loss(scores, labels, where=where, reduction="none")
    total = loss(scores, labels, where=where, reduction="sum")
    mean = loss(scores, labels, where=where, reduction="mean")
    assert none.shape == (3,)
    assert none[1] == 0
    np.testing.assert_allclose(jnp.sum(none), total, **TIGHT)
    np.testing.assert_allclose(mean, total / 2, **TIGHT)  # two lists hold a real item
    assert float(jnp.abs(none[0])) > 0 and float(jnp.abs(none[2])) > 0
    # The default reduction is the mean.
    np.testing.assert_allclose(loss(scores, labels, where=where), mean, **TIGHT)


def test_single_list_reductions(loss):
    scores, labels = _graded(2, shape=(4,))
    none = loss(scores, labels, reduction="none")
    assert none.shape == ()
    np.testing.assert_allclose(loss(scores, labels, reduction="sum"), none, **TIGHT)
    np.testing.assert_allclose(loss(scores, labels, reduction="mean"), none, **TIGHT)


def test_weights(loss):
    scores, labels = _graded(3)
    weights = jnp.array([0.5, 2.0, 0.0], F64)
    plain = loss(scores, labels, reduction="none")
    weighted = loss(scores, labels, weights=weights, reduction="none")
    np.testing.assert_allclose(weighted, weights * plain, **TIGHT)
    np.testing.assert_allclose(
        loss(scores, labels, weights=weights, reduction="sum"), jnp.sum(weights * plain), **TIGHT
    )
    np.testing.assert_allclose(
        loss(scores, labels, weights=weights, reduction="mean"),
        jnp.sum(weights * plain) / 3,
        **TIGHT,
    )


def test_weights_validation(loss):
    scores, labels = _graded(3)
    name = loss.__name__
    with pytest.raises(ValueError) as info:
        loss(scores, labels, weights=jnp.ones((2, 5)))
    assert str(info.value) == (
        f"{name} expects per-list weights of shape (3,) (the scores' shape without its "
        "last axis) or per-item weights of shape (3, 5); got weights (2, 5)."
    )
    with pytest.raises(ValueError, match="negative weights"):
        loss(scores, labels, weights=jnp.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="Input weights contains NaN"):
        loss(scores, labels, weights=jnp.array([1.0, jnp.nan, 1.0]))
    with pytest.raises(InvalidParameterError) as info:
        loss(scores, labels, reduction="avg")
    assert str(info.value) == (
        f"The 'reduction' parameter of {name} must be a str among "
        "{'mean', 'none', 'sum'}. Got 'avg' instead."
    )


def test_option_validation():
    scores, labels = _graded(0)
    cases = [
        (losses.pairwise_logistic_loss, {"temperature": 0.0}, "'temperature'"),
        (losses.lambda_loss, {"mu": -1.0}, "'mu' parameter of lambda_loss must be a float in"),
        (losses.lambda_loss, {"k": 0}, "'k'"),
        (losses.lambda_loss, {"gain": "cubic"}, "'gain'"),
        (losses.approx_ndcg_loss, {"temperature": -1.0}, "'temperature'"),
        (losses.neural_ndcg_loss, {"sinkhorn_iterations": -1}, "'sinkhorn_iterations'"),
        (losses.neural_ndcg_loss, {"sinkhorn_iterations": 2.5}, "'sinkhorn_iterations'"),
    ]
    for fn, kwargs, message in cases:
        with pytest.raises(InvalidParameterError, match=message):
            fn(scores, labels, **kwargs)
    with pytest.raises(ValueError, match="negative labels"):
        losses.softmax_loss(scores, -labels)
    with pytest.raises(ValueError, match="contains NaN"):
        losses.listmle_loss(scores.at[0, 0].set(jnp.nan), labels)


# --------------------------------------------------------------------------
# Padding and masking
# --------------------------------------------------------------------------


def test_padding_invariance(loss):
    scores, labels = _graded(4, shape=(4,))
    # Interleave three padding items holding junk, huge and tied values.
    position = jnp.array([0, 2, 3, 5])
    padded_scores = jnp.array([0.0, 1e6, 0.0, 0.0, -1e6, 0.0, 3.0], F64).at[position].set(scores)
    padded_labels = jnp.array([0.0, 9.0, 0.0, 0.0, 3.0, 0.0, 1.0], F64).at[position].set(labels)
    where = jnp.zeros(7, bool).at[position].set(True)

    def plain(s):
        return loss(s, labels)

    def padded(s):
        return loss(s, padded_labels, where=where)

    np.testing.assert_allclose(padded(padded_scores), plain(scores), **TIGHT)
    grad_plain = jax.grad(plain)(scores)
    grad_padded = jax.grad(padded)(padded_scores)
    np.testing.assert_allclose(grad_padded[position], grad_plain, **TIGHT)
    assert np.all(np.asarray(grad_padded)[~np.asarray(where)] == 0)
    assert np.any(np.asarray(grad_plain) != 0)


@pytest.mark.parametrize("reduction", ["mean", "none"])  # "sum" = sum of "none"
def test_fully_masked(loss, reduction):
    scores, labels = _graded(5, shape=(2, 4))
    where = jnp.zeros((2, 4), bool)
    value = loss(scores, labels, where=where, reduction=reduction)
    np.testing.assert_array_equal(value, 0)

    def total(s):
        return jnp.sum(loss(s, labels, where=where, reduction=reduction))

    grad = jax.grad(total)(scores)
    assert np.all(np.isfinite(grad)) and np.all(np.asarray(grad) == 0)


# --------------------------------------------------------------------------
# Numerics
# --------------------------------------------------------------------------


def _edge_cases():
    return {
        "tied_scores": (jnp.zeros(4, F64), jnp.array([2.0, 0.0, 1.0, 1.0], F64)),
        "zero_labels": (jnp.array([0.3, -1.0, 2.0, 0.5], F64), jnp.zeros(4, F64)),
        "one_item": (jnp.array([0.7], F64), jnp.array([1.0], F64)),
        "huge_scores": (
            jnp.array([1e6, -1e6, 1e6, -1e6], F64),
            jnp.array([0.0, 2.0, 1.0, 0.0], F64),
        ),
        "huge_scores_f32": (
            jnp.array([1e6, -1e6, 1e6, -1e6], jnp.float32),
            jnp.array([0.0, 2.0, 1.0, 0.0], jnp.float32),
        ),
        "tied_f32": (jnp.ones(4, jnp.float32), jnp.array([2.0, 0.0, 1.0, 1.0], jnp.float32)),
        "bfloat16": (
            jnp.array([0.5, 2.0, -1.0, 0.5], jnp.bfloat16),
            jnp.array([1.0, 0.0, 3.0, 0.0], jnp.bfloat16),
        ),
        "huge_bfloat16": (
            jnp.array([1e6, -1e6, 1e6, 0.0], jnp.bfloat16),
            jnp.array([1.0, 0.0, 3.0, 0.0], jnp.bfloat16),
        ),
    }


@pytest.mark.parametrize(
    "case",
    tiers.params(_edge_cases(), default=("tied_scores", "one_item", "huge_scores_f32", "bfloat16")),
)
def test_finite_values_and_gradients(loss, case):
    scores, labels = _edge_cases()[case]
    value, grad = jax.value_and_grad(loss)(scores, labels)
    expected = F64 if scores.dtype == F64 else jnp.float32
    assert value.dtype == expected
    assert np.isfinite(float(value))
    assert grad.dtype == scores.dtype
    assert np.all(np.isfinite(np.asarray(grad, np.float32)))
    ndcg_based = loss in (losses.approx_ndcg_loss, losses.neural_ndcg_loss)
    if loss in POINTWISE:  # each item has its own target, whatever the list
        return
    if case == "one_item":  # one item: perfectly ranked, nothing to learn
        assert float(value) == (-1.0 if ndcg_based else 0.0)
        np.testing.assert_array_equal(grad, 0)
    # Zero labels leave nothing to order, except for ListMLE, and the pairwise
    # MSE, which still regresses the score differences on label differences of 0.
    if case == "zero_labels" and loss not in (losses.listmle_loss, losses.pairwise_mse_loss):
        assert float(value) == 0
        np.testing.assert_array_equal(grad, 0)


def test_one_item_listmle_is_zero():
    assert float(losses.listmle_loss(jnp.array([5.0], F64), jnp.array([1.0], F64))) == 0


# --------------------------------------------------------------------------
# Transformations and gradients
# --------------------------------------------------------------------------


def test_jit_and_vmap(loss):
    scores, labels = _graded(6)
    where = jnp.array([[True] * 5, [True, False, True, True, True], [False] * 5])
    eager = loss(scores, labels, where=where, reduction="none")
    jitted = jax.jit(functools.partial(loss, reduction="none"))(scores, labels, where=where)
    np.testing.assert_allclose(jitted, eager, **TIGHT)
    mapped = jax.vmap(lambda s, y, w: loss(s, y, where=w, reduction="none"))(scores, labels, where)
    np.testing.assert_allclose(mapped, eager, **TIGHT)


def test_check_grads(loss):
    scores, labels = _graded(7, shape=(2, 4))
    where = jnp.array([[True] * 4, [True, True, False, True]])
    check_grads(lambda s: loss(s, labels, where=where), (scores,), order=1, modes=["rev"])


def test_permutation_invariance(loss):
    scores, labels = _graded(8, shape=(6,))
    permutation = jnp.array([3, 0, 5, 1, 4, 2])
    np.testing.assert_allclose(
        loss(scores[permutation], labels[permutation]), loss(scores, labels), **TIGHT
    )


def test_better_ranking_has_lower_loss(loss):
    if loss in POINTWISE:
        pytest.skip("a pointwise loss scores each item against its label, not the order")
    labels = jnp.array([3.0, 2.0, 1.0, 0.0, 0.0], F64)
    perfect = jnp.array([2.0, 1.0, 0.0, -1.0, -2.0], F64)
    reversed_ = perfect[::-1]
    mixed = jnp.array([1.0, 2.0, 0.0, -1.0, -2.0], F64)
    best, middle, worst = (loss(s, labels) for s in (perfect, mixed, reversed_))
    assert best < middle < worst


# --------------------------------------------------------------------------
# Loss-specific properties
# --------------------------------------------------------------------------


def test_softmax_matches_formula():
    scores, labels = _graded(9, shape=(5,))
    p = labels / labels.sum()
    expected = -jnp.sum(p * jax.nn.log_softmax(scores))
    np.testing.assert_allclose(losses.softmax_loss(scores, labels), expected, **TIGHT)


def test_listmle_brute_force():
    """Plackett-Luce NLL computed by a plain loop in NumPy."""
    rng = np.random.default_rng(10)
    scores = rng.normal(size=6)
    labels = rng.permutation(6).astype(float)
    order = np.argsort(-labels)
    s = scores[order]
    expected = -sum(s[p] - np.log(np.sum(np.exp(s[p:]))) for p in range(6))
    np.testing.assert_allclose(
        losses.listmle_loss(jnp.asarray(scores), jnp.asarray(labels)), expected, **TIGHT
    )


def test_listmle_ties_and_key():
    scores = jnp.array([0.1, 0.9, 0.4], F64)
    labels = jnp.array([1.0, 1.0, 0.0], F64)
    # Stable: tied labels keep their order of appearance (item 0 before item 1).
    stable = losses.listmle_loss(scores, labels)
    expected = losses.listmle_loss(scores, jnp.array([2.0, 1.0, 0.0], F64))
    np.testing.assert_allclose(stable, expected, **TIGHT)
    key = jax.random.key(0)
    first = losses.listmle_loss(scores, labels, key=key)
    np.testing.assert_allclose(losses.listmle_loss(scores, labels, key=key), first, **TIGHT)
    other = losses.listmle_loss(scores, jnp.array([1.0, 2.0, 0.0], F64))
    assert np.isclose(first, stable) or np.isclose(first, other)
    draws = {
        round(float(losses.listmle_loss(scores, labels, key=jax.random.key(i))), 9)
        for i in range(16)
    }
    assert len(draws) == 2


def test_listmle_takes_one_key_of_either_kind_and_refuses_others_under_jit_too():
    scores = jnp.array([0.1, 0.9, 0.4], F64)
    labels = jnp.array([1.0, 1.0, 0.0], F64)
    typed = losses.listmle_loss(scores, labels, key=jax.random.key(3))
    raw = losses.listmle_loss(scores, labels, key=jax.random.PRNGKey(3))
    np.testing.assert_allclose(raw, typed, **TIGHT)
    # One key per call inside vmap: each mapped call sees a single key.
    keys = jax.random.split(jax.random.key(3), 4)
    mapped = jax.vmap(lambda key: losses.listmle_loss(scores, labels, key=key))(keys)
    assert mapped.shape == (4,)
    prefix = "The 'key' parameter of listmle_loss must be one jax.random.key, one "
    for bad, got in [
        (jnp.zeros(2, jnp.float32), "an array of dtype float32 and shape (2,)"),
        (keys, "an array of dtype key<fry> and shape (4,)"),
        (jnp.zeros(3, jnp.uint32), "an array of dtype uint32 and shape (3,)"),
        (7, "7"),
    ]:
        message = f"{prefix}jax.random.PRNGKey or None. Got {got} instead."
        with pytest.raises(InvalidParameterError, match=re.escape(message)):
            losses.listmle_loss(scores, labels, key=bad)
    with pytest.raises(InvalidParameterError, match="The 'key' parameter"):
        jax.jit(lambda key: losses.listmle_loss(scores, labels, key=key))(jnp.zeros(2))


def test_pairwise_temperature():
    scores, labels = _graded(11, shape=(5,))
    np.testing.assert_allclose(
        losses.pairwise_logistic_loss(scores, labels, temperature=0.5),
        losses.pairwise_logistic_loss(2 * scores, labels),
        **TIGHT,
    )


def test_lambda_loss_hand_computed():
    """The docstring example worked out by hand from the NDCG-Loss2++ formula."""
    labels = jnp.array([2.0, 1.0, 0.0], F64)
    scores = jnp.array([3.0, 2.0, 1.0], F64)
    d = [1 / math.log2(r + 1) for r in range(1, 5)]
    ideal = 3 * d[0] + 1 * d[1]
    g = [3 / ideal, 1 / ideal, 0.0]

    def term(i, j, mu=10.0):
        rho = abs(d[i] - d[j])
        delta = abs(d[abs(i - j) - 1] - d[abs(i - j)])
        return (rho + mu * delta) * abs(g[i] - g[j]) * math.log2(1 + math.exp(-(3 - i - (3 - j))))

    expected = term(0, 1) + term(0, 2) + term(1, 2)
    np.testing.assert_allclose(losses.lambda_loss(scores, labels), expected, **TIGHT)


@pytest.mark.parametrize("name", ["lambda_loss", "approx_ndcg_loss", "neural_ndcg_loss"])
def test_k_at_list_length_is_no_cutoff(name):
    scores, labels = _graded(12)
    fn = LOSSES[name]
    np.testing.assert_allclose(
        fn(scores, labels, k=5, reduction="none"), fn(scores, labels, reduction="none"), **TIGHT
    )
    cut = fn(scores, labels, k=2, reduction="none")
    assert np.all(np.isfinite(cut)) and not np.allclose(cut, fn(scores, labels, reduction="none"))


def test_lambda_k_drops_pairs_below_cutoff():
    labels = jnp.array([1.0, 1.0, 1.0, 0.0], F64)
    scores = jnp.array([4.0, 3.0, 2.0, 1.0], F64)
    # Item 2 pairs only with item 3 (the one lower label), and both rank past
    # k = 2: that pair cannot change NDCG@2, so item 2 gets no gradient.
    grad_k = jax.grad(lambda s: losses.lambda_loss(s, labels, k=2))(scores)
    assert grad_k[2] == 0 and grad_k[3] != 0 and grad_k[0] != 0
    grad = jax.grad(lambda s: losses.lambda_loss(s, labels))(scores)
    assert grad[2] != 0


@pytest.mark.parametrize("name", ["approx_ndcg_loss", "neural_ndcg_loss"])
def test_soft_ndcg_tends_to_exact_ndcg(name):
    scores, labels = _graded(13)
    exact = metrics.ndcg(scores, labels, gain="exp2")
    soft = LOSSES[name](scores, labels, temperature=1e-4, reduction="none")
    np.testing.assert_allclose(-soft, exact, atol=1e-4)


def test_neural_ndcg_sinkhorn_makes_doubly_stochastic():
    from lodestar.losses._neural_ndcg import _DenseNeuralSort, _sinkhorn

    scores, _ = _graded(14, shape=(2, 5))
    valid = jnp.array([[True] * 5, [True, False, True, True, False]])
    products = _DenseNeuralSort(scores, valid, jnp.asarray(1.0, F64))
    for iterations, tol in ((0, None), (50, 1e-6)):
        u = v = jnp.ones(scores.shape, F64)
        if iterations:
            u, v = _sinkhorn(products, iterations)
        p = u[..., :, None] * products.p * v[..., None, :]
        rows = jnp.sum(p, axis=-1)
        cols = jnp.sum(p, axis=-2)
        np.testing.assert_allclose(rows[0], 1, atol=1e-12)
        np.testing.assert_allclose(rows[1], [1, 1, 1, 0, 0], atol=1e-12)
        if tol is not None:
            np.testing.assert_allclose(cols, jnp.where(valid, 1.0, 0.0), atol=tol)
        else:
            assert not np.allclose(cols[0], 1, atol=1e-3)


def _neural_ndcg_reference(scores, labels, temperature, iterations):
    """NeuralNDCG of one unpadded list as allRank computes it, densely, in NumPy."""
    s, y = np.asarray(scores, np.float64), np.asarray(labels, np.float64)
    n = s.size
    logits = (n + 1 - 2 * np.arange(1, n + 1))[:, None] * s - np.abs(s[:, None] - s).sum(1)
    logits = (logits - logits.max(1, keepdims=True)) / temperature
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    for _ in range(iterations):
        p = p / p.sum(0, keepdims=True)
        p = p / p.sum(1, keepdims=True)
    gains = 2**y - 1
    discount = 1 / np.log2(np.arange(2, n + 2))
    return -(p @ gains) @ discount / (np.sort(gains)[::-1] @ discount)


@pytest.mark.parametrize("temperature, iterations", [(1.0, 0), (1.0, 50), (0.1, 50), (3.0, 7)])
def test_neural_ndcg_equals_a_dense_reference(temperature, iterations):
    scores, labels = _graded(15, shape=(4, 9))
    loss = losses.neural_ndcg_loss(
        scores,
        labels,
        temperature=temperature,
        sinkhorn_iterations=iterations,
        reduction="none",
    )
    expected = [
        _neural_ndcg_reference(s, y, temperature, iterations)
        for s, y in zip(scores, labels, strict=True)
    ]
    np.testing.assert_allclose(loss, expected, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------
# Agreement with Rax
# --------------------------------------------------------------------------


@pytest.fixture
def rax():
    return rax_compat.import_rax()


def _rax_batch(seed):
    scores, labels = _graded(seed, shape=(3, 6))
    where = jnp.array([[True] * 6, [True, False, True, True, False, True], [True] * 6])
    return scores, labels, where


def test_softmax_matches_rax(rax):
    scores, labels, where = _rax_batch(20)
    ours = losses.softmax_loss(scores, labels, where=where, reduction="none")
    theirs = rax.softmax_loss(
        scores,
        labels,
        where=where,
        label_fn=rax.utils.normalize_probabilities,
        reduce_fn=None,
    )
    np.testing.assert_allclose(ours, theirs, **TIGHT)
    np.testing.assert_allclose(
        losses.softmax_loss(scores, labels, where=where),
        rax.softmax_loss(scores, labels, where=where, label_fn=rax.utils.normalize_probabilities),
        **TIGHT,
    )


def test_pairwise_logistic_matches_rax(rax):
    scores, labels, where = _rax_batch(21)
    ours = losses.pairwise_logistic_loss(scores, labels, where=where, reduction="none")
    theirs = [
        rax.pairwise_logistic_loss(scores[b], labels[b], where=where[b], reduce_fn=jnp.sum)
        for b in range(3)
    ]
    np.testing.assert_allclose(ours, jnp.stack(theirs), **TIGHT)
    np.testing.assert_allclose(
        losses.pairwise_logistic_loss(scores, labels, where=where, reduction="sum"),
        rax.pairwise_logistic_loss(scores, labels, where=where, reduce_fn=jnp.sum),
        **TIGHT,
    )


def test_listmle_matches_rax(rax):
    scores, labels, where = _rax_batch(22)
    ours = losses.listmle_loss(scores, labels, where=where, reduction="none")
    theirs = rax.listmle_loss(scores, labels, where=where, reduce_fn=None)
    np.testing.assert_allclose(ours, theirs, **TIGHT)
    np.testing.assert_allclose(
        losses.listmle_loss(scores, labels, where=where),
        rax.listmle_loss(scores, labels, where=where),
        **TIGHT,
    )


@pytest.mark.parametrize("mu", [0.0, 10.0, 2.5])
def test_lambda_loss_matches_rax(rax, mu):
    """NDCG-Loss2++ = Rax's dcg (LambdaRank) + mu * dcg2 (NDCG-Loss2) lambdaweights.

    Rax scales its lambdaweights by the list size n and uses natural logs, so
    per list ours * n * ln 2 equals the Rax sum (k=None, tie-free scores).
    """
    scores, labels, where = _rax_batch(23)
    n = scores.shape[-1]
    ours = losses.lambda_loss(scores, labels, where=where, mu=mu, reduction="none")
    for b in range(3):

        def rax_sum(lambdaweight, b=b):
            return rax.pairwise_logistic_loss(
                scores[b],
                labels[b],
                where=where[b],
                lambdaweight_fn=functools.partial(lambdaweight, normalize=True),
                reduce_fn=jnp.sum,
            )

        expected = rax_sum(rax.dcg_lambdaweight) + mu * rax_sum(rax.dcg2_lambdaweight)
        np.testing.assert_allclose(ours[b] * n * math.log(2), expected, **TIGHT)


@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_approx_ndcg_matches_rax(rax, temperature):
    scores, labels, where = _rax_batch(24)
    ours = losses.approx_ndcg_loss(
        scores, labels, where=where, temperature=temperature, reduction="none"
    )
    approx_ndcg = rax.approx_t12n(rax.ndcg_metric, temperature=temperature)
    theirs = approx_ndcg(scores, labels, where=where, reduce_fn=None)
    np.testing.assert_allclose(ours, theirs, **TIGHT)


def _tied_batch(seed):
    """Tie-free scores, labels 0-3 with ties, a padded middle row, per-item weights."""
    rng = np.random.default_rng(seed)
    scores = jnp.asarray(rng.normal(size=(3, 6)), F64)
    labels = jnp.asarray(rng.integers(0, 4, size=(3, 6)), F64)
    weights = jnp.asarray(rng.uniform(0.5, 2.0, size=(3, 6)), F64)
    return scores, labels, _rax_batch(0)[2], weights


def _rax_per_list(function, scores, labels, where, weights=None, **options):
    def one(b):
        if weights is not None:
            options["weights"] = weights[b]
        return function(scores[b], labels[b], where=where[b], reduce_fn=jnp.sum, **options)

    return jnp.stack([one(b) for b in range(scores.shape[0])])


def test_pairwise_mse_qr_and_unique_softmax_match_rax(rax):
    scores, labels, where, weights = _tied_batch(25)
    cases = [
        (losses.pairwise_mse_loss, rax.pairwise_mse_loss, {}),
        (losses.pairwise_qr_loss, rax.pairwise_qr_loss, {"tau": 0.3, "squared": True}),
        (losses.unique_softmax_loss, rax.unique_softmax_loss, {}),
    ]
    for ours, theirs, options in cases:
        np.testing.assert_allclose(
            ours(scores, labels, where=where, weights=weights, reduction="none", **options),
            _rax_per_list(theirs, scores, labels, where, weights=weights, **options),
            rtol=1e-10,
            atol=1e-12,
        )


def test_unique_softmax_prefix_log_sum_exp_is_exact_over_blocks_of_blocks():
    from lodestar.losses._listwise import _PREFIX_BLOCK, _prefix_logsumexp

    # Past _PREFIX_BLOCK ** 2 items the blocks' totals are blocked in turn;
    # scores 1e6 apart would underflow a shifted cumulative sum.
    n = _PREFIX_BLOCK**2 + 3
    x = np.random.default_rng(29).normal(size=(2, n)) * np.array([[1.0], [1e6]])
    np.testing.assert_allclose(
        jax.jit(_prefix_logsumexp)(jnp.asarray(x, F64)),
        np.logaddexp.accumulate(x, axis=-1),
        rtol=1e-12,
    )


def _lambdaweight_cases(rax):
    return {
        "labeldiff": (losses.labeldiff_lambdaweight(), rax.labeldiff_lambdaweight, 1),
        "dcg": (losses.dcg_lambdaweight, rax.dcg_lambdaweight, 6),
        "dcg_normalized_top3": (
            losses.dcg_lambdaweight(normalize=True, topn=3),
            functools.partial(rax.dcg_lambdaweight, normalize=True, topn=3),
            6,
        ),
        "dcg2": (losses.dcg2_lambdaweight(gain="linear"), rax.dcg2_lambdaweight, 6),
        "dcg2_normalized_top3": (
            losses.dcg2_lambdaweight(normalize=True, topn=3),
            functools.partial(rax.dcg2_lambdaweight, normalize=True, topn=3),
            6,
        ),
    }


# Each pairwise loss with two kinds of weight, each kind with three losses:
# the weighting is shared code, so a full grid would compile 25 programs to
# check the same lines. The default tier takes the first three.
LAMBDAWEIGHT_CASES = [
    ("pairwise_logistic_loss", "labeldiff"),
    ("pairwise_logistic_loss", "dcg_normalized_top3"),
    ("pairwise_qr_loss", "dcg2_normalized_top3"),
    ("pairwise_hinge_loss", "dcg"),
    ("pairwise_hinge_loss", "dcg2_normalized_top3"),
    ("pairwise_soft_zero_one_loss", "dcg2"),
    ("pairwise_soft_zero_one_loss", "labeldiff"),
    ("pairwise_mse_loss", "dcg_normalized_top3"),
    ("pairwise_mse_loss", "dcg2"),
    ("pairwise_qr_loss", "dcg"),
]
LAMBDAWEIGHT_DEFAULT = LAMBDAWEIGHT_CASES[:3]


@pytest.mark.parametrize(
    "name, weight",
    [
        case if case in LAMBDAWEIGHT_DEFAULT else pytest.param(*case, marks=pytest.mark.slow)
        for case in LAMBDAWEIGHT_CASES
    ],
)
def test_lambdaweights_match_rax(rax, name, weight):
    """Rax multiplies its dcg and dcg2 weights by the list size n (padding included)."""
    scores, labels, where, _ = _tied_batch(26)
    ours, theirs, rax_factor = _lambdaweight_cases(rax)[weight]
    if weight == "dcg2":
        # Rax's default gain is 2**y - 1; lodestar's gain="linear" against Rax's gain_fn.
        theirs = functools.partial(theirs, gain_fn=lambda y: y)
    np.testing.assert_allclose(
        LOSSES[name](scores, labels, where=where, reduction="none", lambdaweight=ours) * rax_factor,
        _rax_per_list(getattr(rax, name), scores, labels, where, lambdaweight_fn=theirs),
        rtol=1e-10,
        atol=1e-12,
    )


def test_lambda_loss_is_the_logistic_loss_with_dcg_plus_mu_dcg2_weights():
    scores, labels, where, weights = _tied_batch(27)
    dcg = losses.dcg_lambdaweight(normalize=True)
    dcg2 = losses.dcg2_lambdaweight(normalize=True)

    def combined(mu):
        return losses.pairwise_logistic_loss(
            scores, labels, where=where, weights=weights, lambdaweight=dcg + mu * dcg2
        )

    lambda_loss = losses.lambda_loss(scores, labels, where=where, weights=weights, mu=2.5)
    # lambda_loss's pair terms are in bits.
    np.testing.assert_allclose(lambda_loss * math.log(2), combined(2.5), rtol=1e-12)
    # A traced mu keeps its derivative: the loss is linear in mu, with the
    # dcg2-weighted loss as its slope; the weights carry none.
    step = jax.jit(jax.value_and_grad(combined))
    slope = losses.pairwise_logistic_loss(
        scores, labels, where=where, weights=weights, lambdaweight=dcg2
    )
    np.testing.assert_allclose(step(2.5)[1], slope, rtol=1e-12)
    # A traced factor out of range makes the loss NaN, never a number.
    assert np.isnan(step(-1.0)[0])


def test_lambdaweights_keep_padding_out_and_refuse_what_they_cannot_weigh():
    scores, labels = _graded(28, shape=(1, 4))
    padded = jnp.pad(scores, ((0, 0), (0, 3)), constant_values=9.0)
    padded_labels = jnp.pad(labels, ((0, 0), (0, 3)), constant_values=3.0)
    where = (jnp.arange(7) < 4)[None]
    weight = losses.dcg_lambdaweight(topn=2) + 0.5 * losses.dcg2_lambdaweight()
    loss = losses.pairwise_logistic_loss
    np.testing.assert_allclose(
        loss(padded, padded_labels, where=where, lambdaweight=weight),
        loss(scores, labels, lambdaweight=weight),
        rtol=1e-12,
    )
    with pytest.raises(InvalidParameterError, match="must use one gain"):
        losses.dcg_lambdaweight() + losses.dcg2_lambdaweight(gain="linear")
    with pytest.raises(InvalidParameterError, match="'factor' parameter of LambdaWeight"):
        -1.0 * losses.dcg2_lambdaweight()
    # Gains need non-negative labels; the label difference takes any.
    negative = labels.at[0, 0].set(-1.0)
    with pytest.raises(ValueError, match="negative"):
        loss(scores, negative, lambdaweight=losses.dcg_lambdaweight)
    assert np.isfinite(loss(scores, negative, lambdaweight=losses.labeldiff_lambdaweight))


# --------------------------------------------------------------------------
# Refused values under jit, gain overflow, tiny temperatures
# --------------------------------------------------------------------------

REFUSED_UNDER_JIT = {
    # corruption of row 0 -> whether every loss refuses it (else: the listed ones)
    "nan_label": lambda s, y: (s, y.at[0, 1].set(jnp.nan)),
    "inf_label": lambda s, y: (s, y.at[0, 1].set(jnp.inf)),
    "nan_score": lambda s, y: (s.at[0, 2].set(jnp.nan), y),
    "inf_score": lambda s, y: (s.at[0, 2].set(-jnp.inf), y),
    "negative_label": lambda s, y: (s, y.at[0, 1].set(-1.0)),
}
NEGATIVE_LABELS_ACCEPTED = {
    "listmle_loss",
    "pairwise_logistic_loss",
    "pairwise_hinge_loss",
    "pairwise_soft_zero_one_loss",
    "pairwise_mse_loss",
    "pairwise_qr_loss",
    "pointwise_mse_loss",
    "pointwise_sigmoid_loss",
}


# tests/test_nonfinite.py sweeps every corruption too; here, per loss, the gradient.
@pytest.mark.parametrize(
    "corruption", tiers.params(REFUSED_UNDER_JIT, default=("nan_score", "negative_label"))
)
@pytest.mark.parametrize("name", tiers.params(NAMES, default=("softmax_loss", "lambda_loss")))
def test_refused_values_under_jit_give_nan_for_that_list_and_its_gradient(name, corruption):
    loss = LOSSES[name]
    scores, labels = _graded(11)
    where = jnp.array([[True, True, True, True, False]] + [[True] * 5] * 2)
    scores, labels = REFUSED_UNDER_JIT[corruption](scores, labels)
    refused = not (corruption == "negative_label" and name in NEGATIVE_LABELS_ACCEPTED)

    per_list = jax.jit(lambda s, y: loss(s, y, where=where, reduction="none"))(scores, labels)
    mean, grad = jax.jit(jax.value_and_grad(lambda s, y: loss(s, y, where=where)))(scores, labels)
    assert bool(jnp.isnan(per_list[0])) == refused
    assert bool(jnp.isnan(mean)) == refused
    assert np.all(np.isfinite(per_list[1:]))
    # An optimiser sees the NaN: every real item of that list gets a NaN
    # gradient, padding 0, the other lists their own finite gradient.
    assert bool(jnp.all(jnp.isnan(grad[0, :4]))) == refused
    assert float(grad[0, 4]) == 0.0
    assert np.all(np.isfinite(grad[1:]))
    clean = jax.grad(lambda s: loss(s, labels, where=where, reduction="none")[1:].sum())(scores)
    np.testing.assert_allclose(grad[1:], clean[1:] / 3, **TIGHT)
    # Eagerly, the same input is refused.
    if refused:
        with pytest.raises(ValueError):
            loss(scores, labels, where=where)


EXP2_LOSSES = ["lambda_loss", "approx_ndcg_loss", "neural_ndcg_loss"]


@pytest.mark.parametrize("name", tiers.params(EXP2_LOSSES, default=("lambda_loss",)))
def test_exp2_gains_that_overflow_are_refused_eagerly_and_nan_under_jit(name):
    loss = LOSSES[name]
    scores = jnp.array([[0.3, 0.2, 0.1], [0.3, 0.2, 0.1]], jnp.float32)
    labels = jnp.array([[128.0, 1.0, 0.0], [2.0, 1.0, 0.0]], jnp.float32)
    with pytest.raises(ValueError) as info:
        loss(scores, labels)
    assert str(info.value) == (
        "Input labels is too large for gain='exp2' in float32: the gains 2**label - 1 of a "
        "list must sum to less than 3.4028235e+38, the largest float32, so every label must "
        "be below 128. Use smaller labels, gain='linear', or float64 (labels below 1024)."
    )
    # Two labels of 127 overflow their sum; one alone does not.
    with pytest.raises(ValueError, match="too large for gain='exp2'"):
        loss(scores, labels.at[0, :2].set(127.0))
    value, grad = jax.value_and_grad(loss)(scores, labels.at[0, 0].set(127.0))
    assert np.isfinite(float(value)) and np.all(np.isfinite(grad))
    # float64 holds labels below 1024; linear gains hold any finite label.
    assert np.isfinite(float(loss(scores.astype(F64), labels.astype(F64))))
    assert np.isfinite(float(loss(scores, labels, gain="linear")))
    grad = jax.jit(jax.grad(lambda s: loss(s, labels)))(scores)
    per_list = jax.jit(lambda s, y: loss(s, y, reduction="none"))(scores, labels)
    assert bool(jnp.isnan(per_list[0])) and bool(jnp.isfinite(per_list[1]))
    assert np.all(np.isnan(grad[0])) and np.all(np.isfinite(grad[1]))


TEMPERATURE_LOSSES = ["pairwise_logistic_loss", *EXP2_LOSSES]


@pytest.mark.parametrize("name", TEMPERATURE_LOSSES)
def test_temperature_below_the_smallest_normal_is_refused(name):
    loss = LOSSES[name]
    scores = jnp.array([0.9, 0.1, 0.5], jnp.float32)
    labels = jnp.array([1.0, 0.0, 2.0], jnp.float32)
    with pytest.raises(InvalidParameterError) as info:
        loss(scores, labels, temperature=1e-45)
    assert str(info.value) == (
        f"The 'temperature' parameter of {name} must be a float in the range "
        "[1.1754944e-38, inf) when computing in float32: a smaller one is flushed to zero. "
        "For the hard-rank limit use lodestar.metrics. Got 1e-45 instead."
    )
    with pytest.raises(InvalidParameterError, match=r"\[2.2250738585072014e-308, inf\)"):
        jax.jit(lambda s: loss(s, labels.astype(F64), temperature=1e-310))(scores.astype(F64))
    # At the smallest normal temperature the smooth losses are finite, and so
    # is every gradient; the pairwise terms may overflow to inf, never NaN.
    value, grad = jax.value_and_grad(loss)(scores, labels, temperature=1.2e-38)
    assert not np.isnan(float(value))
    assert np.all(np.isfinite(grad))
    if name in ("approx_ndcg_loss", "neural_ndcg_loss"):
        exact = -metrics.ndcg(scores, labels, gain="exp2")
        np.testing.assert_allclose(float(value), float(exact), rtol=1e-6)
