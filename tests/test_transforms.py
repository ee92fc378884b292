"""Value checks through checkify, gradients in the labels, gains and tiling.

The invariances every measure shares (jit, vmap, batching, a zero gradient in
the scores, dtypes, the NaN rule) are tested over the whole registry in
``tests/test_measures.py``; this file holds what is particular to the
validation path and to DCG and NDCG.

Tolerances: float64 results are compared at ``rtol=1e-12``; float32 results
against the float64 values at ``rtol=2e-6`` (a few float32 ulps summed over
at most 50 positions); bfloat16/float16 inputs are ranked in float32 and
compared with float32 results at ``rtol=1e-6``.
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tiers
from jax.experimental import checkify

import lodestar
from lodestar import _registry, metrics
from lodestar.metrics import _kernel

rng = np.random.default_rng(5)
SCORES = np.round(rng.random((4, 3, 50)), 1)
LABELS = rng.integers(0, 4, (4, 3, 50)).astype(np.float64)


def test_grad_of_dcg_with_respect_to_labels_is_the_tie_averaged_discount():
    scores = jnp.array([0.5, 0.5, 0.1])
    grad = jax.grad(lambda y: metrics.dcg(scores, y))(jnp.array([1.0, 0.0, 2.0]))
    mean_top_two = (1 + 1 / np.log2(3)) / 2
    np.testing.assert_allclose(grad, [mean_top_two, mean_top_two, 0.5], rtol=1e-12)


VALUE_CHECK_CASES = [
    (lambda s, y: metrics.dcg(s.at[0, 1].set(jnp.nan), y), "Input scores contains NaN."),
    (
        lambda s, y: metrics.ndcg(s, y.at[1, 2].set(jnp.inf), k=2),
        "Input labels contains infinity or a value too large for dtype('float64').",
    ),
    (lambda s, y: metrics.ndcg(s, -y), "ndcg should not be used on negative labels."),
    (
        lambda s, y: metrics.reciprocal_rank(s, y.at[2, 0].set(jnp.nan)),
        "Input labels contains NaN.",
    ),
    (
        lambda s, y: metrics.reciprocal_rank(s.at[0, 0].set(-jnp.inf), y),
        "Input scores contains infinity or a value too large for dtype('float64').",
    ),
]


@pytest.mark.parametrize("call, message", VALUE_CHECK_CASES)
def test_value_checks_are_reachable_through_checkify_under_jit(call, message):
    scores = jnp.asarray(SCORES[0])
    labels = jnp.asarray(LABELS[0]) + 1
    checked = jax.jit(checkify.checkify(call))
    with lodestar.value_checks_under_jit():
        error, _ = checked(scores, labels)
        ok, value = jax.jit(checkify.checkify(lambda s, y: metrics.ndcg(s, y)))(scores, labels)
    assert message in str(error.get())
    with pytest.raises(checkify.JaxRuntimeError, match=re.escape(message)):
        error.throw()
    # Valid inputs pass the same checks.
    assert ok.get() is None
    assert np.all(np.isfinite(value))


@pytest.mark.parametrize(
    "case, poisoned_rows",
    [(0, [0]), (1, [1]), (2, [0, 1, 2]), (3, [2]), (4, [])],
    ids=["nan-score", "inf-label", "negative-labels", "nan-label", "inf-score-ranks"],
)
def test_without_value_checks_under_jit_bad_lists_give_nan(case, poisoned_rows):
    call = VALUE_CHECK_CASES[case][0]
    scores = jnp.asarray(SCORES[0])
    labels = jnp.asarray(LABELS[0]) + 1
    # The same jitted function, traced inside the context and then outside it:
    # the switch is part of the jit cache key, so no stale trace is reused.
    checked = jax.jit(checkify.checkify(call))
    with lodestar.value_checks_under_jit():
        assert checked(scores, labels)[0].get() is not None
    error, value = checked(scores, labels)
    assert error.get() is None
    value = np.asarray(value)
    assert np.isnan(value[poisoned_rows]).all()
    # An infinite score still ranks (first or last), so it gives a number.
    clean = [row for row in range(3) if row not in poisoned_rows]
    assert np.isfinite(value[clean]).all()


def test_value_checks_under_jit_are_off_by_default_and_cost_no_effect():
    traced = jax.make_jaxpr(lambda s, y: metrics.ndcg(s, y))(SCORES[0], LABELS[0])
    assert not traced.effects
    with lodestar.value_checks_under_jit():
        checked = jax.make_jaxpr(lambda s, y: metrics.ndcg(s, y))(SCORES[0], LABELS[0])
    assert checked.effects


def test_value_checks_under_jit_retrace_functions_traced_outside():
    # Traced outside first, then inside, then outside again. The switch is a
    # jax.make_user_context, so it is part of jit's cache key (the outer
    # function retraces inside) and of JAX's tracing cache (the inner jitted
    # function, cached while the outer one was traced outside, is traced
    # again instead of handing back its jaxpr without the checks).
    scores = SCORES[0].copy()
    scores[1, 3] = np.nan
    traces = []

    @jax.jit
    def inner(s, y):
        traces.append("inner")
        return metrics.ndcg(s, y)

    def outer(s, y):
        traces.append("outer")
        return inner(s, y)

    checked = jax.jit(checkify.checkify(outer))
    error, value = checked(scores, LABELS[0])
    assert error.get() is None and np.isnan(np.asarray(value)[1])
    with lodestar.value_checks_under_jit():
        error, _ = checked(scores, LABELS[0])
    assert "Input scores contains NaN." in str(error.get())
    assert traces == ["outer", "inner"] * 2
    error, _ = checked(scores, LABELS[0])  # outside again: the first trace is reused
    assert error.get() is None
    with lodestar.value_checks_under_jit(False):
        assert checked(scores, LABELS[0])[0].get() is None
    assert traces == ["outer", "inner"] * 2


def test_arrays_closed_over_by_a_jitted_function_are_traced_values():
    # jnp.asarray of a closed-over NumPy array is a tracer under jit, so the
    # traced contract applies: NaN for the list, no exception, no crash.
    scores = SCORES[0].copy()
    scores[1, 3] = np.nan
    segments = np.repeat(np.arange(5), 10)[None].repeat(3, axis=0)
    got = np.asarray(
        jax.jit(lambda g: metrics.dcg(scores, LABELS[0], segments=g, max_segments=5))(segments)
    )
    poisoned = np.zeros(got.shape, bool)
    poisoned[1, 0] = True  # the list holding item 3 of row 1
    assert np.isnan(got[poisoned]).all() and np.isfinite(got[~poisoned]).all()


def test_empty_and_single_item_lists():
    assert metrics.dcg(np.zeros((3, 0)), np.zeros((3, 0))).shape == (3,)
    np.testing.assert_array_equal(metrics.ndcg(np.zeros((3, 0)), np.zeros((3, 0))), 0.0)
    np.testing.assert_array_equal(metrics.reciprocal_rank(np.zeros((2, 0)), np.zeros((2, 0))), 0.0)
    assert metrics.ndcg(np.array([0.3]), np.array([2.0])) == 1.0
    assert metrics.reciprocal_rank(np.array([0.3]), np.array([0.0])) == 0.0


def test_callable_gain_and_exp2():
    scores = np.array([0.9, 0.5, 0.1])
    labels = np.array([1.0, 3.0, 0.0])
    exp2 = metrics.dcg(scores, labels, gain="exp2")
    np.testing.assert_allclose(exp2, 1 + 7 / np.log2(3), rtol=1e-12)
    np.testing.assert_allclose(
        metrics.dcg(scores, labels, gain=lambda y: 2**y - 1), exp2, rtol=1e-12
    )
    # The ideal ranks by gain: a decreasing gain makes the label-0 item ideal.
    np.testing.assert_allclose(
        metrics.ndcg(scores, labels, gain=lambda y: 5 - y),
        (4 + 2 / np.log2(3) + 5 / 2) / (5 + 4 / np.log2(3) + 2 / 2),
        rtol=1e-12,
    )


@pytest.mark.parametrize("k", [None, 10])
@pytest.mark.parametrize("n", [8, 100])
def test_ndcg_ideal_is_differentiable_in_labels_and_vmappable(n, k):
    # On CPU the compiled kernels give the values (their one pass per list
    # also gives the ideal) and XLA's route the derivatives.
    scores = jnp.asarray(np.round(rng.random((3, n)), 1))
    # Distinct labels: at tied gains the ideal (a sort) has only one-sided derivatives.
    labels = jnp.asarray(rng.random((3, n)) * 3)
    grad = jax.jit(jax.grad(lambda y: metrics.ndcg(scores, y, k=k).sum()))(labels)
    assert np.all(np.isfinite(grad))
    step = 1e-6
    for item in range(4):
        bumped = labels.at[1, item].add(step)
        numeric = (
            metrics.ndcg(scores, bumped, k=k).sum() - metrics.ndcg(scores, labels, k=k).sum()
        ) / step
        np.testing.assert_allclose(grad[1, item], numeric, rtol=1e-4, atol=1e-8)
    mapped = jax.vmap(lambda s, y: metrics.ndcg(s, y, k=k))(scores, labels)
    np.testing.assert_allclose(mapped, metrics.ndcg(scores, labels, k=k), rtol=1e-12)
    tangent = jax.jvp(lambda y: metrics.ndcg(scores, y, k=k), (labels,), (jnp.ones_like(labels),))
    np.testing.assert_allclose(tangent[1], jnp.sum(grad, axis=-1), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [10, 100, 400])
def test_ndcg_ideal_orders_float64_gains_finer_than_float32(n):
    # Gains 1e-9 apart: float32 (spacing 1.2e-7 near 1) cannot tell them apart,
    # so an ideal ordered by a float32 key would put them in index order.
    gains = 1.0 + rng.permutation(n) * 1e-9
    scores = rng.permutation(n).astype(np.float64)
    discounts = 1 / np.log2(np.arange(2, n + 2))
    ideal = np.sort(gains)[::-1] @ discounts
    index_order_ideal = gains @ discounts  # what a float32 key's stable sort gives
    assert len(np.unique(gains.astype(np.float32))) < n
    assert abs(index_order_ideal / ideal - 1) > 1e-11  # the check below can fail
    expected = gains[np.argsort(-scores)] @ discounts / ideal
    np.testing.assert_allclose(metrics.ndcg(scores, gains), expected, rtol=1e-13, atol=0)
    np.testing.assert_allclose(metrics.ndcg(gains, gains), 1.0, rtol=1e-15, atol=0)


def test_exp2_gain_is_exact_for_integer_grades_in_float64():
    # XLA's float64 exp2 misses 2**3, 2**4 and others by an ulp or more. A
    # one-item list's DCG is its gain times the first discount, exactly 1.
    labels = np.arange(-5.0, 40.0)[:, None]
    got = metrics.dcg(np.zeros_like(labels), labels, gain="exp2")
    np.testing.assert_array_equal(got, 2.0 ** labels[:, 0] - 1)


# Tiling is the kernel's, whatever the formula (tests/tiers.py): the default
# tier's measures, and in the slow tier one of every metrics module.
@pytest.mark.parametrize("key", tiers.engine_params())
def test_large_batches_tiled_like_one_call(monkeypatch, key):
    # Large batches run tile by tile (metrics._kernel._over_tiles). Shrink the tile so
    # that small batches take that path: 37 lists make 12 tiles and a tail,
    # 64 lists tiles that divide the batch.
    entry = _registry.MEASURES[key]
    options = {
        **({"k": 5} if entry.cutoff else {}),
        **({"max_label": 2} if key == "err" else entry.required_options),
    }
    cases = []
    for shape in [(37, 20), (4, 6, 20), (64, 20)]:
        scores = np.round(rng.random(shape), 1)
        labels = rng.integers(0, 3, shape).astype(np.float64)
        where = rng.random(shape) < 0.8
        call = functools.partial(entry.function, scores, labels, where=where, **options)
        cases.append((shape, call, np.asarray(call())))
    jax.clear_caches()  # the kernels are traced again with the small tile
    monkeypatch.setattr(_kernel, "TILE_ITEMS", 60)
    try:
        for shape, call, whole in cases:
            np.testing.assert_allclose(call(), whole, rtol=1e-14, atol=0, err_msg=str(shape))
    finally:
        jax.clear_caches()
