"""The metric-to-loss transformations of lodestar.losses: approx_t12n and gumbel_t12n.

Oracles: Rax 0.4.0's ``approx_t12n`` and ``gumbel_t12n`` (through the shim of
``tests/rax_compat.py``) where the definitions coincide, the smooth functions
themselves, and the sample mean of many Gumbel draws.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax_compat

from lodestar import InvalidParameterError, losses, metrics, smooth

SCORES = jnp.array([[0.0, 1.0, 3.0, 2.0, -1.0], [1.0, 0.5, 0.0, 2.0, 0.7]])
LABELS = jnp.array([[0.0, 0.0, 1.0, 2.0, 1.0], [1.0, 0.0, 0.0, 1.0, 0.0]])
WHERE = jnp.array([[True] * 5, [True, True, True, True, False]])


def test_approx_t12n_is_raxs_on_ndcg_dcg_and_recall():
    rax = rax_compat.import_rax()
    cases = (
        (metrics.ndcg, rax.ndcg_metric, {"gain": "exp2"}),
        (metrics.dcg, rax.dcg_metric, {"gain": "exp2"}),
        (metrics.recall, rax.recall_metric, {}),
    )
    # With padding, which Rax's mean and lodestar's both leave out of the lists.
    for ours, theirs, options in cases:
        got = losses.approx_t12n(ours, temperature=0.5)(SCORES, LABELS, where=WHERE, **options)
        want = rax.approx_t12n(theirs, temperature=0.5)(SCORES, LABELS, where=WHERE)
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_approx_t12n_is_minus_the_smooth_measure_reduced_as_a_loss():
    loss = losses.approx_t12n(metrics.average_precision, temperature=0.3)
    per_list = smooth.average_precision(SCORES, LABELS, temperature=0.3, where=WHERE)
    weights = jnp.array([2.0, 0.5])
    np.testing.assert_allclose(loss(SCORES, LABELS, where=WHERE, reduction="none"), -per_list)
    np.testing.assert_allclose(
        loss(SCORES, LABELS, where=WHERE, weights=weights, reduction="sum"),
        -jnp.sum(weights * per_list),
    )
    # "mean" divides by the lists with a real item, as every loss does: the
    # second list, all padding, scores 0 and is not counted.
    empty = WHERE.at[1].set(False)
    np.testing.assert_allclose(
        loss(SCORES, LABELS, where=empty),
        -smooth.average_precision(SCORES[0], LABELS[0], temperature=0.3),
    )
    # Packed lists: one value per list, and the mean over the lists.
    segments = jnp.array([[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]])
    packed = smooth.average_precision(SCORES, LABELS, temperature=0.3, segments=segments)
    got = loss(SCORES, LABELS, segments=segments, max_segments=2)
    np.testing.assert_allclose(got, -jnp.sum(packed) / 3)


@pytest.mark.parametrize(
    "metric, options",
    [
        pytest.param(metrics.ndcg, {"k": 3}, id="ndcg"),
        pytest.param(metrics.err, {"max_label": 2.0}, id="err", marks=pytest.mark.slow),
    ],
)
def test_approx_t12n_losses_are_finite_and_differentiable_under_jit_and_vmap(metric, options):
    loss = losses.approx_t12n(metric, temperature=0.5)
    value, grad = jax.jit(jax.value_and_grad(lambda s: loss(s, LABELS, **options)))(SCORES)
    assert np.isfinite(value) and np.all(np.isfinite(grad)) and np.any(grad != 0)
    np.testing.assert_allclose(value, loss(SCORES, LABELS, **options), rtol=1e-12)
    mapped = jax.vmap(lambda s, y: loss(s, y, **options))(SCORES, LABELS)
    np.testing.assert_allclose(
        mapped, loss(SCORES, LABELS, reduction="none", **options), rtol=1e-12
    )


def test_the_transformations_refuse_what_they_cannot_transform():
    with pytest.raises(InvalidParameterError, match="'metric' parameter of approx_t12n"):
        losses.approx_t12n(metrics.bpref)
    with pytest.raises(InvalidParameterError, match="'metric' parameter of approx_t12n"):
        losses.approx_t12n(smooth.ndcg)
    with pytest.raises(InvalidParameterError, match="'temperature' parameter of approx_t12n"):
        losses.approx_t12n(metrics.ndcg, temperature=0.0)
    with pytest.raises(InvalidParameterError, match="'metric' parameter of bound_t12n"):
        losses.bound_t12n(metrics.average_precision)
    with pytest.raises(InvalidParameterError, match="'samples' parameter of gumbel_t12n"):
        losses.gumbel_t12n(losses.softmax_loss, samples=0)
    with pytest.raises(InvalidParameterError, match="'fn' parameter of gumbel_t12n"):
        losses.gumbel_t12n(metrics)
    gumbel_softmax = losses.gumbel_t12n(losses.softmax_loss)
    for key in (3, None):
        with pytest.raises(InvalidParameterError, match="'key' parameter of gumbel_softmax_loss"):
            gumbel_softmax(SCORES, LABELS, key=key)


def test_gumbel_t12n_draws_raxs_noise_and_is_deterministic_for_a_key():
    rax = rax_compat.import_rax()
    key = jax.random.PRNGKey(42)
    ours = losses.gumbel_t12n(losses.approx_t12n(metrics.ndcg, temperature=0.5), samples=5)
    theirs = rax.gumbel_t12n(rax.approx_t12n(rax.ndcg_metric, temperature=0.5), samples=5)
    # Rax splits the key first for a function that accepts one (its approx
    # losses take any keyword); lodestar splits only for a declared ``key``.
    got = ours(SCORES, LABELS, gain="exp2", key=jax.random.split(key)[0])
    np.testing.assert_allclose(got, theirs(SCORES, LABELS, key=key), atol=1e-5)
    assert ours(SCORES, LABELS, key=key) == ours(SCORES, LABELS, key=key)
    assert ours(SCORES, LABELS, key=key) != ours(SCORES, LABELS, key=jax.random.PRNGKey(7))


def test_gumbel_t12n_mean_approaches_the_expected_value():
    # With one relevant item among two, hits@1 under Gumbel noise is the
    # probability that it scores highest: the softmax of the scores (the
    # Gumbel-max trick), here sigma(1) = 0.731.
    scores, labels = jnp.array([1.0, 0.0]), jnp.array([1.0, 0.0])
    exact_hits = lambda s, y: metrics.hits(s, y, k=1)  # noqa: E731
    estimate = losses.gumbel_t12n(exact_hits, samples=4000)(scores, labels, key=jax.random.key(0))
    assert abs(float(estimate) - float(jax.nn.sigmoid(1.0))) < 0.02


@pytest.mark.slow
def test_gumbel_t12n_gradients_are_finite_under_jit_and_vmap_and_pass_keys_on():
    loss = losses.gumbel_t12n(losses.listmle_loss, samples=3)
    grad = jax.jit(jax.grad(lambda s, k: loss(s, LABELS, key=k)))(SCORES, jax.random.key(1))
    assert np.all(np.isfinite(grad)) and np.any(grad != 0)
    # Under vmap each list draws its own (samples, n) noise from the key.
    keys = jax.random.split(jax.random.key(2), 2)
    per_list = jax.vmap(lambda s, y, k: loss(s, y, key=k))(SCORES, LABELS, keys)
    assert per_list.shape == (2,) and np.all(np.isfinite(per_list))


def test_bound_t12n_is_raxs_without_a_cutoff():
    rax = rax_compat.import_rax()
    for ours, theirs in ((metrics.ndcg, rax.ndcg_metric), (metrics.dcg, rax.dcg_metric)):
        for mask in (None, WHERE):
            got = losses.bound_t12n(ours)(SCORES, LABELS, where=mask, gain="exp2")
            want = rax.bound_t12n(theirs)(SCORES, LABELS, where=mask)
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_bound_t12n_bounds_the_exact_measure_from_below_at_ties_and_cutoffs():
    rng = np.random.default_rng(3)
    scores = jnp.asarray(rng.integers(0, 3, size=(64, 6)) * 0.4)  # ties in every list
    labels = jnp.asarray(rng.integers(0, 4, size=(64, 6)), float)
    for metric in (metrics.ndcg, metrics.dcg):
        loss = losses.bound_t12n(metric)
        for k in (None, 3):
            bound = -loss(scores, labels, k=k, reduction="none")
            exact = metric(scores, labels, k=k)
            assert np.all(bound <= exact + 1e-12)
    # The top item's bound is its rank, 1, once it leads every other by the margin.
    apart, top_only = jnp.array([9.0, 8.0, 3.0, 0.0]), jnp.array([1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(-losses.bound_t12n(metrics.ndcg)(apart, top_only), 1.0)


@pytest.mark.slow
def test_bound_t12n_gradients_are_finite_under_jit_and_vmap():
    loss = losses.bound_t12n(metrics.ndcg)
    grad = jax.jit(jax.grad(lambda s: loss(s, LABELS, where=WHERE, k=2)))(SCORES)
    assert np.all(np.isfinite(grad)) and np.any(grad != 0) and grad[1, 4] == 0
    mapped = jax.vmap(lambda s, y: loss(s, y))(SCORES, LABELS)
    np.testing.assert_allclose(mapped, loss(SCORES, LABELS, reduction="none"), rtol=1e-12)
