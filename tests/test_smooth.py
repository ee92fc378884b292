"""Tests of lodestar.smooth: soft ranks and the smooth DCG, NDCG and reciprocal rank.

Tolerances (float64 unless stated; x64 is on via conftest):

* Convergence: on tie-free scores (gaps >= 0.1) the error against
  lodestar.metrics never grows as the temperature falls along
  1, 0.1, 0.01, 0.001 (slack 1e-12), and is below 1e-3 at T = 0.001; soft ranks
  are within 1e-6 of the hard ranks at T = 0.001.
* Finite differences: jax.test_util.check_grads, order 1, reverse mode, at
  T = 0.5, eps 1e-6, atol = rtol = 1e-5.
* Padding: values and real items' gradients agree with the unpadded list to
  1e-12; padding gradients are exactly 0.
* Permutahedron vs the numpy reference (sort + pool adjacent violators): 1e-9
  (absolute, ranks are O(n)); 1e-6 at n = 10,000 in float64.
* Rax (approx_t12n of ndcg_metric / dcg_metric, same temperature, same gain
  and base-2 discount): 1e-10 in float64.
* Numerics cases (ties, all-zero labels, fully masked, one item, +-1e6,
  T = 1e-6, float32, bfloat16): values and gradients finite; nothing more.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax_compat
import tiers
from jax.test_util import check_grads

from lodestar import InvalidParameterError, _pairs, _soft_ranks, metrics, smooth

METHODS = smooth.METHODS
# The sweeps (convergence, padding, jit/vmap, finite values, finite
# differences, NaN, the smallest temperature) run in the default tier on the
# sigmoid ranks and the permutahedron projection, the two most different
# methods, and on every method in the slow tier.
SWEPT_METHODS = tiers.params(METHODS, default=("sigmoid", "permutahedron"))
# The sweeps whose permutahedron case adds mostly compilation (finite values,
# padding, the smallest temperature): sigmoid alone in the default tier, every
# method in the slow. The permutahedron's values and gradients are checked in
# the default tier by the convergence, finite-difference and jit tests.
SIGMOID_ONLY = tiers.params(METHODS, default=("sigmoid",))
TEMPERATURES = (1.0, 0.1, 0.01, 0.001)


def tie_free(rng, shape, gap=0.1):
    """Scores whose distinct values are at least ``gap`` apart within each list."""
    n = shape[-1]
    base = np.arange(n, dtype=np.float64) * gap * 1.5
    rows = [
        rng.permutation(base) + rng.uniform(0, gap * 0.5, n)
        for _ in range(int(np.prod(shape[:-1])))
    ]
    return jnp.asarray(np.reshape(rows, shape), jnp.float64)


def graded(rng, shape, levels=4):
    return jnp.asarray(rng.integers(0, levels, shape).astype(np.float64))


def hard_ranks(scores):
    return jnp.argsort(jnp.argsort(-scores, axis=-1), axis=-1) + 1.0


# --------------------------------------------------------------------------
# 1. Convergence to the exact metrics
# --------------------------------------------------------------------------


def _assert_converges(errors, label):
    errors = np.asarray(errors)
    assert np.all(np.diff(errors) <= 1e-12), f"{label}: errors {errors} do not decrease"
    assert errors[-1] < 1e-3, f"{label}: error {errors[-1]} at T={TEMPERATURES[-1]}"


@pytest.mark.parametrize("method", SWEPT_METHODS)
def test_converges_to_exact_metrics(method):
    rng = np.random.default_rng(0)
    n = 7
    scores = tie_free(rng, (3, n))
    labels = graded(rng, (3, n)).at[2].set(jnp.array([0, 0, 1, 0, 0, 1, 0.0]))
    for k in (None, 1, 3, n):
        for name in ("dcg", "ndcg"):
            exact = getattr(metrics, name)(scores, labels, k=k)
            errors = [
                float(
                    jnp.max(
                        jnp.abs(
                            getattr(smooth, name)(scores, labels, k=k, temperature=t, method=method)
                            - exact
                        )
                    )
                )
                for t in TEMPERATURES
            ]
            _assert_converges(errors, f"{name} k={k}")
    exact = metrics.reciprocal_rank(scores, labels)
    errors = [
        float(
            jnp.max(
                jnp.abs(
                    smooth.reciprocal_rank(scores, labels, temperature=t, method=method) - exact
                )
            )
        )
        for t in TEMPERATURES
    ]
    _assert_converges(errors, "reciprocal_rank")
    soft = smooth.ranks(scores, temperature=TEMPERATURES[-1], method=method)
    np.testing.assert_allclose(soft, hard_ranks(scores), atol=1e-6)


def test_convergence_test_can_fail():
    # A smooth metric at a large temperature is far from the exact one, so the
    # convergence check above does detect a wrong limit.
    rng = np.random.default_rng(1)
    scores, labels = tie_free(rng, (8,)), graded(rng, (8,))
    far = smooth.dcg(scores, labels, temperature=1.0) - metrics.dcg(scores, labels)
    assert abs(float(far)) > 1e-2


# --------------------------------------------------------------------------
# 2. Finite values and gradients in the hard cases
# --------------------------------------------------------------------------


def _hard_batch(dtype):
    """Rows: ties; all-zero labels; fully masked; +-1e6; ordinary."""
    scores = np.array(
        [
            [0.5, 0.5, 0.5, 0.5, 0.5, 0.5],
            [0.1, 0.4, 0.2, 0.9, 0.3, 0.0],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [1e6, -1e6, 1e6, -1e6, 0.0, 1e6],
            [0.3, -0.2, 0.7, 0.1, -0.9, 0.6],
        ]
    )
    labels = np.array(
        [
            [1, 0, 2, 0, 1, 3],
            [0, 0, 0, 0, 0, 0],
            [1, 2, 0, 1, 0, 0],
            [1, 0, 0, 2, 0, 1],
            [0, 1, 0, 3, 2, 0],
        ],
        dtype=np.float64,
    )
    where = np.ones(scores.shape, bool)
    where[2] = False
    where[4, [1, 3]] = False
    return jnp.asarray(scores, dtype), jnp.asarray(labels, dtype), jnp.asarray(where)


def _metrics_and_grads(method, scores, labels, where):
    """Values of every function at T = 1e-6, and the gradient of their weighted sum.

    One gradient of a weighted sum (rather than one per function) halves the
    compile time; a NaN or infinity in any function's gradient still shows in
    it (NaN cannot cancel, and inf - inf is NaN).
    """
    weights = jnp.linspace(1.0, 2.0, scores.shape[-1], dtype=jnp.float32)
    opts = {"temperature": 1e-6, "method": method, "where": where}

    def every_function(s):
        return {
            "dcg@2": smooth.dcg(s, labels, k=2, **opts),
            "ndcg": smooth.ndcg(s, labels, **opts),
            "rr": smooth.reciprocal_rank(s, labels, **opts),
            "ranks": smooth.ranks(s, **opts) * weights,
        }

    def total(s):
        values = every_function(s)
        return sum(jnp.sum(v) * (i + 1) for i, v in enumerate(values.values()))

    return every_function(scores), jax.grad(total)(scores)


@pytest.mark.parametrize("method", SIGMOID_ONLY)
def test_values_and_gradients_are_finite(method):
    for dtype in (jnp.float32, jnp.bfloat16):
        scores, labels, where = _hard_batch(dtype)
        one_s, one_y = jnp.asarray([[0.3], [-1e6]], dtype), jnp.asarray([[1.0], [0.0]], dtype)

        @jax.jit
        def run(scores, labels, where, one_s, one_y, dtype=dtype):
            # One-item lists (shape (2, 1)) in float32 only, to save a compilation.
            ones = _metrics_and_grads(method, one_s, one_y, None) if dtype == jnp.float32 else None
            return _metrics_and_grads(method, scores, labels, where), ones

        (values, grad), one = run(scores, labels, where, one_s, one_y)
        arrays = [grad, *values.values()] + ([one[1], *one[0].values()] if one else [])
        for array in arrays:
            assert bool(jnp.all(jnp.isfinite(array))), (dtype, array)
        assert grad.dtype == dtype
        for name, value in values.items():
            assert value.dtype == jnp.float32, (dtype, name)
            # The fully masked list scores 0.
            assert bool(jnp.all(value[2] == 0)), (dtype, name)
        assert bool(jnp.all(grad[2] == 0))  # ... with zero gradient
        # All-zero labels: RR and NDCG 0.
        assert float(values["rr"][1]) == 0.0 and float(values["ndcg"][1]) == 0.0
        if one:
            # One item: rank 1, nothing to move; a lone relevant item gives RR 1.
            np.testing.assert_array_equal(one[0]["ranks"], [[1.0], [1.0]])
            np.testing.assert_array_equal(one[0]["rr"], [1.0, 0.0])
            assert bool(jnp.all(one[1] == 0))


def test_tied_scores_share_a_rank():
    scores = jnp.array([0.5, 0.5, 0.5, 0.1])
    for method in METHODS:
        r = smooth.ranks(scores, temperature=1e-3, method=method)
        np.testing.assert_allclose(r[:3], r[0], atol=1e-9, err_msg=method)
        assert abs(float(r[3]) - 4.0) < 1e-6, method
    for method in ("sigmoid", "softsort", "permutahedron"):
        r = smooth.ranks(scores, temperature=1e-3, method=method)
        np.testing.assert_allclose(r, [2.0, 2.0, 2.0, 4.0], atol=1e-6, err_msg=method)


# --------------------------------------------------------------------------
# 3. Gradients against finite differences
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", SWEPT_METHODS)
def test_gradients_match_finite_differences(method):
    rng = np.random.default_rng(2)
    scores = tie_free(rng, (2, 6), gap=0.2)
    labels = graded(rng, (2, 6)).at[:, 0].set(1.0)
    weights = jnp.asarray(rng.normal(size=(2, 6)))

    @jax.jit
    def every_function(s):
        # One function (one compilation) whose outputs cover every public function.
        return jnp.concatenate(
            [
                (smooth.ranks(s, temperature=0.5, method=method) * weights).ravel(),
                smooth.dcg(s, labels, temperature=0.5, method=method, k=3, log_base=3.0),
                smooth.ndcg(s, labels, temperature=0.5, method=method, gain="exp2"),
                smooth.reciprocal_rank(s, labels, temperature=0.5, method=method),
            ]
        )

    check_grads(every_function, (scores,), order=1, modes=["rev"], eps=1e-6, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------
# 4. Padding
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", SIGMOID_ONLY)
def test_padding_takes_no_part(method):
    rng = np.random.default_rng(3)
    scores = tie_free(rng, (2, 5))
    labels = graded(rng, (2, 5)).at[:, 1].set(2.0)
    slots = np.array([0, 2, 3, 5, 7])  # real items interleaved with padding
    padded_s = jnp.full((2, 9), jnp.nan).at[:, slots].set(scores).at[:, 1].set(1e9)
    padded_y = jnp.full((2, 9), jnp.nan).at[:, slots].set(labels)
    where = jnp.zeros((2, 9), bool).at[:, slots].set(True)
    item_weights = jnp.linspace(1.0, 2.0, 5)
    list_weights = jnp.array([1.0, 3.0])

    def fns(labels, where, take):
        opts = {"temperature": 0.3, "method": method, "where": where}
        return {
            "ranks": lambda s: smooth.ranks(s, **opts)[..., take] * item_weights,
            "dcg@2": lambda s: smooth.dcg(s, labels, k=2, **opts),
            "ndcg": lambda s: smooth.ndcg(s, labels, **opts),
            "rr": lambda s: smooth.reciprocal_rank(s, labels, **opts),
        }

    def values_and_grads(scores, labels, where, take):
        # The gradient of a weighted sum of every function (one backward pass),
        # and that of RR alone.
        fs = fns(labels, where, take)

        def total(s):
            return sum(
                jnp.sum(fn(s).T * list_weights) * (i + 1) for i, fn in enumerate(fs.values())
            )

        values = {name: fn(scores) for name, fn in fs.items()}
        rr_grad = jax.grad(lambda s: jnp.sum(fs["rr"](s)))(scores)
        return values, jax.grad(total)(scores), rr_grad

    @jax.jit
    def run(scores, labels, padded_s, padded_y, where):
        return (
            values_and_grads(scores, labels, None, slice(None)),
            values_and_grads(padded_s, padded_y, where, slots),
        )

    (values, grad, rr_grad), (values_p, grad_p, rr_grad_p) = run(
        scores, labels, padded_s, padded_y, where
    )
    for name in values:
        np.testing.assert_allclose(values_p[name], values[name], atol=1e-12, err_msg=name)
    for plain, padded in ((grad, grad_p), (rr_grad, rr_grad_p)):
        np.testing.assert_allclose(padded[:, slots], plain, atol=1e-12)
        assert bool(jnp.all(jnp.where(where, 0, padded) == 0))
        assert bool(jnp.all(jnp.isfinite(padded)))
    # Smooth RR moves every relevant item, not only the top one.
    relevant_grad = rr_grad[labels != 0]
    assert relevant_grad.size >= 4 and bool(jnp.all(relevant_grad != 0)), relevant_grad


# --------------------------------------------------------------------------
# 5. Transformations and size
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", SWEPT_METHODS)
def test_jit_and_vmap(method):
    rng = np.random.default_rng(4)
    # The shape and options of the convergence test, so the eager calls reuse its kernels.
    scores, labels = tie_free(rng, (3, 7)), graded(rng, (3, 7))

    def all_metrics(s, y):
        return [
            smooth.dcg(s, y, temperature=0.2, method=method, k=3),
            smooth.ndcg(s, y, temperature=0.2, method=method, k=3),
            smooth.reciprocal_rank(s, y, temperature=0.2, method=method),
            smooth.ranks(s, temperature=0.2, method=method),
        ]

    eager = all_metrics(scores, labels)
    # vmap over lists of a (1, 3, 7) batch: rows are independent and jit agrees.
    mapped = jax.jit(jax.vmap(all_metrics))(scores[None], labels[None])
    for want, got in zip(eager, mapped, strict=True):
        np.testing.assert_allclose(got[0], want, rtol=1e-12)


@pytest.mark.parametrize("method", ["sigmoid", "neuralsort", "softsort"])
def test_quadratic_methods_at_n_1000(method):
    rng = np.random.default_rng(5)
    scores = jnp.asarray(rng.normal(size=1000), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 3, 1000), jnp.float32)
    value, grad = jax.jit(
        jax.value_and_grad(lambda s: smooth.ndcg(s, labels, temperature=0.1, method=method))
    )(scores)
    assert 0 < float(value) <= 1.0
    assert bool(jnp.all(jnp.isfinite(grad)))


def test_permutahedron_at_n_10000_under_jit():
    rng = np.random.default_rng(6)
    n = 10_000
    scores = jnp.asarray(rng.normal(size=n), jnp.float32)
    labels = jnp.asarray(rng.integers(0, 3, n), jnp.float32)

    @jax.jit
    def run(s):
        r = smooth.ranks(s, temperature=0.01, method="permutahedron")
        value, grad = jax.value_and_grad(
            lambda s: smooth.ndcg(s, labels, temperature=0.01, method="permutahedron", k=100)
        )(s)
        return r, value, grad

    r, value, grad = run(scores)
    assert bool(jnp.all(jnp.isfinite(grad))) and bool(jnp.isfinite(value))
    # The projection onto the permutahedron keeps the sum of the ranks.
    assert abs(float(jnp.sum(r.astype(jnp.float64))) - n * (n + 1) / 2) < 1e-4 * n * n
    assert float(jnp.min(r)) >= 1 and float(jnp.max(r)) <= n


# --------------------------------------------------------------------------
# 6. Permutahedron against a numpy reference
# --------------------------------------------------------------------------


def reference_permutahedron_ranks(scores, temperature):
    """Blondel et al.'s r_eps_Q: project -s/T onto P(n, ..., 1) by sort + PAV."""
    z = -np.asarray(scores, np.float64) / temperature
    n = z.size
    order = np.argsort(-z, kind="stable")
    y = z[order] - np.arange(n, 0, -1)
    # Pool adjacent violators for a non-increasing fit.
    sums, counts = [], []
    for value in y:
        sums.append(value)
        counts.append(1)
        while len(sums) > 1 and sums[-2] / counts[-2] < sums[-1] / counts[-1]:
            tail_sum, tail_count = sums.pop(), counts.pop()
            sums[-1] += tail_sum
            counts[-1] += tail_count
    fit = np.repeat([s / c for s, c in zip(sums, counts, strict=True)], counts)
    out = np.empty(n)
    out[order] = z[order] - fit
    return out


def test_permutahedron_matches_numpy_reference():
    rng = np.random.default_rng(7)
    for n in (1, 6, 30):
        for temperature in (0.05, 0.5, 5.0):
            scores = rng.normal(size=n)
            got = smooth.ranks(jnp.asarray(scores), temperature=temperature, method="permutahedron")
            want = reference_permutahedron_ranks(scores, temperature)
            np.testing.assert_allclose(got, want, atol=1e-9, err_msg=f"n={n} T={temperature}")
    # Ties, and many merges (a large temperature pools everything).
    scores = np.array([0.3, 0.3, 0.1, 0.3, 0.9, 0.1])  # n = 6 again: no new compilation
    for temperature in (0.01, 1.0, 100.0):
        got = smooth.ranks(jnp.asarray(scores), temperature=temperature, method="permutahedron")
        want = reference_permutahedron_ranks(scores, temperature)
        np.testing.assert_allclose(got, want, atol=1e-9)
    scores = rng.normal(size=10_000)
    got = smooth.ranks(jnp.asarray(scores), temperature=0.001, method="permutahedron")
    np.testing.assert_allclose(got, reference_permutahedron_ranks(scores, 0.001), atol=1e-6)


def test_permutahedron_custom_vjp():
    rng = np.random.default_rng(8)
    scores = jnp.asarray(rng.normal(size=(3, 12)))
    weights = jnp.asarray(rng.normal(size=(3, 12)))
    for temperature in (0.1, 10.0):

        def f(s, temperature=temperature):
            return smooth.ranks(s, temperature=temperature, method="permutahedron") * weights

        check_grads(f, (scores,), order=1, modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-6)
    # The Jacobian against the reference by central differences, one column.
    s = np.asarray(scores[0])
    jac = jax.jacrev(lambda s: smooth.ranks(s, temperature=1.0, method="permutahedron"))(
        jnp.asarray(s)
    )
    h = 1e-6
    column = (
        reference_permutahedron_ranks(s + h * np.eye(12)[4], 1.0)
        - reference_permutahedron_ranks(s - h * np.eye(12)[4], 1.0)
    ) / (2 * h)
    np.testing.assert_allclose(jac[:, 4], column, atol=1e-6)


# --------------------------------------------------------------------------
# 7. Agreement with Rax
# --------------------------------------------------------------------------


def test_sigmoid_method_agrees_with_rax_approx_ndcg():
    rax = rax_compat.import_rax()
    rng = np.random.default_rng(9)
    scores = jnp.asarray(rng.normal(size=(4, 7)))
    labels = graded(rng, (4, 7)).at[3].set(0.0)
    where = jnp.ones((4, 7), bool).at[1, 5:].set(False)
    linear = {"gain": "linear"}, {"gain_fn": lambda y: y}
    exp2 = {"gain": "exp2"}, {}  # rax's default gain is 2^y - 1
    for temperature in (0.5,):
        for ours, theirs in (linear, exp2):
            for mask in (None, where):
                # approx_t12n returns the negated metric, to be used as a loss.
                approx_ndcg = rax.approx_t12n(rax.ndcg_metric, temperature=temperature)
                want = -approx_ndcg(scores, labels, where=mask, reduce_fn=None, **theirs)
                got = smooth.ndcg(
                    scores, labels, temperature=temperature, method="sigmoid", where=mask, **ours
                )
                np.testing.assert_allclose(got, want, atol=1e-10)
                approx_dcg = rax.approx_t12n(rax.dcg_metric, temperature=temperature)
                want = -approx_dcg(scores, labels, where=mask, reduce_fn=None, **theirs)
                got = smooth.dcg(
                    scores, labels, temperature=temperature, method="sigmoid", where=mask, **ours
                )
                np.testing.assert_allclose(got, want, atol=1e-10)
        step = lambda x, t=temperature: jax.nn.sigmoid(x / t)  # noqa: E731
        want = rax.utils.approx_ranks(scores, where=where, step_fn=step)
        got = smooth.ranks(scores, temperature=temperature, where=where)
        np.testing.assert_allclose(jnp.where(where, got, 0), jnp.where(where, want, 0), atol=1e-10)


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


def test_options_are_checked_with_the_shared_messages():
    s, y = jnp.array([0.1, 0.2]), jnp.array([0.0, 1.0])
    with pytest.raises(InvalidParameterError) as info:
        smooth.dcg(s, y, temperature=0)
    assert str(info.value) == (
        "The 'temperature' parameter of dcg must be a float in the range (0.0, inf). Got 0 instead."
    )
    with pytest.raises(InvalidParameterError) as info:
        smooth.ranks(s, method="sinkhorn")
    assert str(info.value) == (
        "The 'method' parameter of ranks must be a str among {'neuralsort', "
        "'permutahedron', 'sigmoid', 'softsort'}. Got 'sinkhorn' instead."
    )
    for bad in (-1.0, float("nan"), float("inf"), True, "1"):
        with pytest.raises(InvalidParameterError):
            smooth.ndcg(s, y, temperature=bad)
    with pytest.raises(InvalidParameterError, match="'k' parameter of ndcg"):
        smooth.ndcg(s, y, k=0)
    with pytest.raises(InvalidParameterError, match="'log_base' parameter of dcg"):
        smooth.dcg(s, y, log_base=0.0)
    with pytest.raises(ValueError, match="should not be used on negative labels"):
        smooth.ndcg(s, -y)
    with pytest.raises(TypeError):
        smooth.dcg(s, y, 1.0)  # options are keyword-only
    # log_base 1 makes every discount 0: value and gradient 0, not NaN.
    assert float(smooth.dcg(s, y, log_base=1.0)) == 0.0
    assert bool(jnp.all(jax.grad(smooth.dcg)(s, y, log_base=1.0) == 0))


def _dense_sigmoid_ranks(s, valid, temperature):
    n = s.shape[-1]
    pair = valid[..., None, :] & valid[..., :, None] & ~jnp.eye(n, dtype=bool)
    above = jax.nn.sigmoid((s[..., None, :] - s[..., :, None]) / temperature)
    return 1 + jnp.sum(jnp.where(pair, above, 0), axis=-1)


@pytest.mark.parametrize("n", tiers.params([129, 700], default=(700,)))
@pytest.mark.parametrize("budget", [1 << 12, 1 << 30])
def test_sigmoid_ranks_in_blocks_equal_the_dense_form(n, budget, monkeypatch):
    # The sigmoid ranks sum over column blocks (lodestar._pairs) sized by a
    # budget: with a small one the 700 items run in blocks of 8 columns, the
    # last one padded; with a large one in one block. Value and gradients
    # (scores and temperature) must equal the dense pairwise form, padding
    # and ties included, and so must the forward-mode derivative.
    monkeypatch.setattr(_pairs, "BUDGET", budget)
    assert (_pairs.block_width((3,), n) < n) == (budget < 3 * n * n)
    rng = np.random.default_rng(n)
    scores = jnp.asarray(np.round(rng.standard_normal((3, n)), 1))
    where = jnp.asarray(rng.random((3, n)) < 0.8)
    cotangent = jnp.asarray(rng.standard_normal((3, n)))

    def objective(ranks_fn):
        def f(s, t):
            r = ranks_fn(jnp.where(where, s, 0), t)
            return jnp.sum(jnp.where(where, cotangent * r, 0))

        return f

    # Called unjitted, so that the patched budget is traced.
    blocked = objective(lambda s, t: _soft_ranks.soft_ranks(s, where, t, "sigmoid"))
    dense = objective(lambda s, t: _dense_sigmoid_ranks(s, where, t))
    t = jnp.asarray(0.7)
    np.testing.assert_allclose(blocked(scores, t), dense(scores, t), rtol=1e-12)
    for got, want in zip(
        jax.grad(blocked, argnums=(0, 1))(scores, t),
        jax.grad(dense, argnums=(0, 1))(scores, t),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    direction = (jnp.asarray(rng.standard_normal((3, n))), jnp.asarray(0.3))
    np.testing.assert_allclose(
        jax.jvp(blocked, (scores, t), direction)[1],
        jax.jvp(dense, (scores, t), direction)[1],
        rtol=1e-11,
    )


def test_long_sigmoid_ranks_never_hold_the_pairs_in_memory():
    # 32 lists of 10,000 items: the pairs alone would take 12.8 GB in float32.
    # Compiled, not run; the blocks keep value and gradient near 0.1 GiB.
    batch, n = 32, 10_000
    scores = jax.ShapeDtypeStruct((batch, n), jnp.float32)
    compiled = (
        jax.jit(jax.value_and_grad(lambda s: jnp.sum(smooth.ranks(s)))).lower(scores).compile()
    )
    assert compiled.memory_analysis().temp_size_in_bytes < 2**29


# --------------------------------------------------------------------------
# Refused values under jit, tiny temperatures, gain overflow, extreme bases
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", SWEPT_METHODS)
def test_one_nan_score_makes_the_whole_list_nan_under_jit_and_vmap(method):
    scores = jnp.array([[0.1, jnp.nan, 0.5, 0.3], [0.1, 0.9, 0.5, 0.3]])
    where = jnp.array([[True, True, True, False], [True] * 4])

    def ranks(s, w):
        return smooth.ranks(s, where=w, method=method, temperature=0.1)

    for got in (jax.jit(ranks)(scores, where), jax.vmap(ranks)(scores, where)):
        assert bool(jnp.all(jnp.isnan(got[0, :3]))), got
        assert float(got[0, 3]) == 0.0  # padding keeps rank 0
        np.testing.assert_allclose(got[1], ranks(scores[1], where[1]), atol=1e-12)
    # An infinite score too: a soft rank depends on the score values.
    got = jax.jit(ranks)(scores.at[0, 1].set(jnp.inf), where)
    assert bool(jnp.all(jnp.isnan(got[0, :3])))
    grad = jax.grad(lambda s: jnp.nansum(jax.jit(ranks)(s, where) * jnp.arange(4.0)))(scores)
    assert bool(jnp.all(jnp.isnan(grad[0, :3]))) and float(grad[0, 3]) == 0.0
    assert bool(jnp.all(jnp.isfinite(grad[1])))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_temperature_below_the_smallest_normal_is_refused(method, dtype):
    tiny = np.finfo(dtype).tiny
    scores = jnp.array([0.1, 0.9, 0.5, 0.5], dtype)
    labels = jnp.array([1.0, 0.0, 2.0, 1.0], dtype)
    for name, call in [
        ("ranks", lambda t: smooth.ranks(scores, temperature=t, method=method)),
        ("ndcg", lambda t: smooth.ndcg(scores, labels, temperature=t, method=method)),
        (
            "reciprocal_rank",
            lambda t: jax.jit(
                lambda s: smooth.reciprocal_rank(s, labels, temperature=t, method=method)
            )(scores),
        ),
    ]:
        with pytest.raises(InvalidParameterError) as info:
            call(float(tiny) / 4)
        assert str(info.value) == (
            f"The 'temperature' parameter of {name} must be a float in the range "
            f"[{tiny!s}, inf) when computing in {np.dtype(dtype).name}: a smaller one is "
            f"flushed to zero. For the hard-rank limit use lodestar.metrics. "
            f"Got {float(tiny) / 4!r} instead."
        )


@pytest.mark.parametrize("method", SIGMOID_ONLY)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("scale", [1.0, 1e6])
def test_the_smallest_normal_temperature_gives_the_hard_ranks(method, dtype, scale):
    # Scores far above the temperature (s / T overflows) must still rank:
    # ties averaged, values and gradients finite.
    tiny = float(np.finfo(dtype).tiny)
    scores = jnp.array([0.1, 0.9, 0.5, 0.5], dtype) * scale
    labels = jnp.array([1.0, 0.0, 2.0, 1.0], dtype)
    got = smooth.ranks(scores, temperature=tiny, method=method)
    np.testing.assert_array_equal(got, [4.0, 1.0, 2.5, 2.5])
    value, grad = jax.value_and_grad(smooth.ndcg)(
        scores, labels, temperature=tiny, method=method, k=2
    )
    assert np.isfinite(float(value)) and bool(jnp.all(jnp.isfinite(grad)))


def test_exp2_gains_that_overflow_are_refused_and_nan_under_jit():
    scores = jnp.array([[0.1, 0.9, 0.5], [0.1, 0.9, 0.5]], jnp.float32)
    labels = jnp.array([[200.0, 0.0, 1.0], [2.0, 0.0, 1.0]], jnp.float32)
    for function in (smooth.dcg, smooth.ndcg):
        with pytest.raises(ValueError, match=r"too large for gain='exp2' in float32"):
            function(scores, labels, gain="exp2")
        got = jax.jit(lambda s, y, f=function: f(s, y, gain="exp2"))(scores, labels)
        assert bool(jnp.isnan(got[0])) and bool(jnp.isfinite(got[1]))
        assert bool(
            jnp.all(jnp.isfinite(function(scores, labels.at[0, 0].set(127.0), gain="exp2")))
        )


@pytest.mark.parametrize("log_base", [1e-300, 1e300, 1e-30, 1 + 1e-12])
def test_extreme_log_bases_are_computed_in_float32_as_in_float64(log_base):
    scores = np.array([[0.1, 0.9, 0.5]])
    labels = np.array([[1.0, 0.0, 2.0]])
    expected = smooth.dcg(scores, labels, log_base=log_base, temperature=0.01)
    got = smooth.dcg(
        scores.astype(np.float32), labels.astype(np.float32), log_base=log_base, temperature=0.01
    )
    assert bool(jnp.all(jnp.isfinite(expected)))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    exact = metrics.dcg(scores, labels, log_base=log_base)
    np.testing.assert_allclose(expected, exact, rtol=1e-6)
