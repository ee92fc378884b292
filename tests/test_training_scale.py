"""What a training loop passes in: long lists, traced options, forward mode, item weights.

Tolerances: float64 comparisons against an independent form (the dense
pairs, Rax, eager calls, the unweighted loss) use ``rtol=1e-10, atol=1e-12``;
forward-mode derivatives are compared with the reverse-mode gradient in
float64 to ``1e-9`` relative. Memory bars are XLA's temporaries of the
compiled value and gradient, compiled without running.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import children
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax_compat
import tiers

from lodestar import _pairs, losses, metrics, smooth
from lodestar._validation import InvalidParameterError
from lodestar.losses import _neural_ndcg

F64 = jnp.float64
TIGHT = {"rtol": 1e-10, "atol": 1e-12}
GiB = 2**30
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# The ``*_t12n`` transformations make losses; they are not losses themselves.
LOSSES = {name: getattr(losses, name) for name in losses.__all__ if name.endswith("_loss")}
# Each loss's float options that may be traced, with a valid and an invalid value.
TRACEABLE = {
    "pairwise_logistic_loss": {"temperature": (0.5, -1.0)},
    "pairwise_soft_zero_one_loss": {"temperature": (0.5, 0.0)},
    "pairwise_hinge_loss": {"margin": (0.5, -0.1)},
    "poly1_softmax_loss": {"epsilon": (2.0, -1.5)},
    "lambda_loss": {"temperature": (0.5, jnp.nan), "mu": (3.0, -1.0)},
    "approx_ndcg_loss": {"temperature": (0.5, 0.0)},
    "neural_ndcg_loss": {"temperature": (0.5, jnp.inf)},
}
SMOOTH = {
    name: getattr(smooth, name)
    for name in smooth.__all__
    if name not in ("ranks",) and callable(getattr(smooth, name))
}


def _lists(seed=0, shape=(3, 6), dtype=F64):
    rng = np.random.default_rng(seed)
    scores = jnp.asarray(rng.normal(size=shape), dtype)
    labels = jnp.asarray(rng.integers(0, 4, size=shape), dtype)
    return scores, labels


# --------------------------------------------------------------------------
# Memory at 32 x 10,000
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    tiers.params(list(LOSSES), default=("lambda_loss",)),
)
def test_every_loss_at_32_by_10000_fits_in_2_gib(name):
    # The pairs of 32 lists of 10,000 items are 12.8 GB in float32; Rax's
    # pairwise losses need 36-83 GiB here. NeuralNDCG's matrix alone would be
    # 12.8 GB: past _NEURAL_DENSE_LIMIT its products are blocked (decision 0029).
    shape = jax.ShapeDtypeStruct((32, 10_000), jnp.float32)
    compiled = jax.jit(jax.value_and_grad(LOSSES[name])).lower(shape, shape).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < 2 * GiB


# Every kind of weight: dcg is in the sum.
LAMBDAWEIGHTS = {
    "labeldiff": losses.labeldiff_lambdaweight(),
    "dcg2": losses.dcg2_lambdaweight(normalize=True, topn=10),
    "dcg_plus_mu_dcg2": losses.dcg_lambdaweight(normalize=True, topn=10)
    + 10.0 * losses.dcg2_lambdaweight(normalize=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("weight", list(LAMBDAWEIGHTS))
def test_every_lambda_weight_at_32_by_10000_fits_in_2_gib(weight):
    # The weights are per-item values combined inside the pair blocks, so a
    # weighted pairwise loss keeps the unweighted one's memory (decision 0044).
    shape = jax.ShapeDtypeStruct((32, 10_000), jnp.float32)

    def loss(scores, labels):
        return losses.pairwise_logistic_loss(scores, labels, lambdaweight=LAMBDAWEIGHTS[weight])

    compiled = jax.jit(jax.value_and_grad(loss)).lower(shape, shape).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < 2 * GiB


# The metric-to-loss transformations, Gumbel sampling over one included.
TRANSFORMED = {
    "approx_t12n": lambda s, y: losses.approx_t12n(metrics.ndcg)(s, y),
    "bound_t12n": lambda s, y: losses.bound_t12n(metrics.ndcg)(s, y),
    "gumbel_t12n": lambda s, y: losses.gumbel_t12n(losses.approx_t12n(metrics.ndcg))(
        s, y, key=jax.random.key(0)
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TRANSFORMED))
def test_every_transformation_at_32_by_10000_fits_in_2_gib(name):
    # Gumbel sampling's gradient recomputes each sample from its noise: held
    # for all 8 samples at once, its intermediates took 3.1 GiB here.
    shape = jax.ShapeDtypeStruct((32, 10_000), jnp.float32)
    compiled = jax.jit(jax.value_and_grad(TRANSFORMED[name])).lower(shape, shape).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < 2 * GiB


@pytest.mark.slow
def test_neural_ndcg_sinkhorn_steps_keep_vectors_not_matrices():
    shape = jax.ShapeDtypeStruct((16, 1_000), jnp.float32)

    def temporaries(iterations):
        def loss(s, y):
            return losses.neural_ndcg_loss(s, y, sinkhorn_iterations=iterations)

        compiled = jax.jit(jax.value_and_grad(loss)).lower(shape, shape).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    few, many = temporaries(5), temporaries(200)
    assert many < 1 * GiB
    # Reverse mode keeps at most four (16, 1,000) vectors per step (the two
    # scalings and the two products): 256 kB, where one (16, 1,000, 1,000)
    # matrix per step would be 64 MB.
    vector = 16 * 1_000 * 4
    assert (many - few) / 195 <= 4 * vector


BLOCKED_NEURAL_OPTIONS = {
    "defaults": {},
    "cold, k": {"temperature": 0.05, "k": 5},
    "no scaling": {"temperature": 3.0, "sinkhorn_iterations": 0},
    "linear gain": {"temperature": 0.3, "sinkhorn_iterations": 7, "gain": "linear"},
}


@pytest.mark.parametrize("case", tiers.params(list(BLOCKED_NEURAL_OPTIONS), default=()))
def test_blocked_neural_ndcg_equals_the_held_matrix(case):
    options = BLOCKED_NEURAL_OPTIONS[case]
    # Ties, padding and a list with one real item: every row and column case.
    scores, labels = _lists(29, shape=(3, 17))
    scores = scores.at[0, :6].set(0.25)
    where = jnp.ones((3, 17), bool).at[1, 9:].set(False).at[2, 1:].set(False)

    def loss(s):
        return losses.neural_ndcg_loss(s, labels, where=where, reduction="none", **options)

    def summed(s):
        return jnp.sum(loss(s))

    tangent = jnp.asarray(np.random.default_rng(30).normal(size=scores.shape), F64)
    held = loss(scores), jax.grad(summed)(scores), jax.jvp(summed, (scores,), (tangent,))[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_neural_ndcg, "_NEURAL_DENSE_LIMIT", 0)
        patch.setattr(_pairs, "BUDGET", 3 * 17 * 4)
        jax.clear_caches()
        blocked = loss(scores), jax.grad(summed)(scores), jax.jvp(summed, (scores,), (tangent,))[1]
    jax.clear_caches()
    for a, b in zip(held, blocked, strict=True):
        np.testing.assert_allclose(b, a, **TIGHT)


# --------------------------------------------------------------------------
# The blocks equal the dense pairs, in every mode of differentiation
# --------------------------------------------------------------------------


def _dense_logistic(s, y, where):
    pair = where[..., :, None] & where[..., None, :] & (y[..., :, None] > y[..., None, :])
    return jnp.sum(jnp.where(pair, jax.nn.softplus(-(s[..., :, None] - s[..., None, :])), 0))


@pytest.mark.parametrize("budget", [1 << 10, 1 << 30])
def test_pair_sum_in_blocks_equals_the_dense_pairs(budget, monkeypatch):
    monkeypatch.setattr(_pairs, "BUDGET", budget)
    rng = np.random.default_rng(5)
    scores = jnp.asarray(rng.normal(size=(2, 37)), F64)
    labels = jnp.asarray(rng.integers(0, 3, size=(2, 37)), F64)
    where = jnp.asarray(rng.random((2, 37)) < 0.85)
    assert (_pairs.block_width((2,), 37) < 37) == (budget < 2 * 37 * 37)

    def term(rows, columns, distinct):
        (s_i, y_i, v_i), (s_j, y_j, v_j) = rows, columns
        pair = v_i & v_j & (y_i > y_j)
        return jnp.where(pair, jax.nn.softplus(-(s_i - s_j)), 0)

    def blocked(s):
        return jnp.sum(_pairs.pair_sum(term, (s, labels, where), over="pairs"))

    def dense(s):
        return _dense_logistic(s, labels, where)

    np.testing.assert_allclose(blocked(scores), dense(scores), **TIGHT)
    np.testing.assert_allclose(jax.grad(blocked)(scores), jax.grad(dense)(scores), **TIGHT)
    direction = jnp.asarray(rng.normal(size=scores.shape), F64)
    hvp = [jax.jvp(jax.grad(f), (scores,), (direction,))[1] for f in (blocked, dense)]
    np.testing.assert_allclose(*hvp, **TIGHT)


# --------------------------------------------------------------------------
# Forward mode: jvp, jacfwd and Hessian-vector products at every n
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [511, 512, 600])
def test_jvp_of_approx_ndcg_equals_the_gradient_at_every_length(n):
    scores, labels = _lists(n, shape=(2, n))
    direction = jnp.asarray(np.random.default_rng(n + 1).normal(size=scores.shape), F64)

    def loss(s):
        return losses.approx_ndcg_loss(s, labels, temperature=0.3)

    tangent = jax.jvp(loss, (scores,), (direction,))[1]
    np.testing.assert_allclose(tangent, jnp.sum(jax.grad(loss)(scores) * direction), rtol=1e-9)


def _listmle_in_numpy(scores, labels, valid):
    """ListMLE's per-list value and gradient, by the definition, in O(n²) float64."""
    values, gradient = [], np.zeros_like(scores)
    for row in range(scores.shape[0]):
        real = np.flatnonzero(valid[row])
        order = real[np.argsort(-labels[row, real], kind="stable")]
        x = scores[row, order]
        suffix = np.logaddexp.accumulate(x[::-1])[::-1]  # log Σ_{q ≥ p} exp(x_q)
        values.append(np.sum(suffix - x))
        # d/dx_q: Σ_{p ≤ q} exp(x_q - suffix_p) - 1.
        earlier = np.tril(np.ones((len(x), len(x)), bool))
        share = np.where(earlier, np.exp(np.minimum(x[:, None] - suffix[None, :], 0)), 0)
        gradient[row, order] = share.sum(axis=1) - 1
    return np.array(values), gradient


def test_listmle_on_lists_of_three_block_levels_matches_the_definition():
    # 1,100 items with padding take three levels of ListMLE's blocked suffix
    # log-sum-exp (8-item blocks, then 138 heads, then 18); scores spread over
    # 1,000 would overflow a plain cumulative sum of exponentials in float64.
    rng = np.random.default_rng(11)
    shape = (2, 1_100)
    scores = rng.normal(size=shape) * np.array([[1.0], [200.0]])
    labels = rng.integers(0, 5, size=shape).astype(np.float64)
    valid = np.ones(shape, bool)
    valid[1, 1_037:] = False
    direction = jnp.asarray(rng.normal(size=shape))
    value, gradient = _listmle_in_numpy(scores, labels, valid)

    def loss(s):
        return losses.listmle_loss(s, labels, where=valid, reduction="sum")

    @jax.jit
    def derivatives(s):
        hessian_times = jax.jvp(jax.grad(loss), (s,), (direction,))[1]
        step = 1e-6
        difference = jax.grad(loss)(s + step * direction) - jax.grad(loss)(s - step * direction)
        return jax.value_and_grad(loss)(s), hessian_times, difference / (2 * step)

    (ours, grad), hessian_times, difference = derivatives(jnp.asarray(scores))
    np.testing.assert_allclose(ours, value.sum(), rtol=1e-12)
    np.testing.assert_allclose(grad, gradient, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(hessian_times, difference, rtol=1e-5, atol=1e-8)
    assert np.all(np.asarray(hessian_times)[~valid] == 0)


@pytest.mark.slow
def test_listmle_derivatives_compile_within_8x_of_softmax_loss():
    # benchmarks/bench_smooth.py's forward-mode rows at 1 x 1,000, in a child
    # without a persistent compilation cache (a cached program loads in
    # milliseconds). Summed over jvp and jvp of grad, labels closed over and
    # passed, ListMLE took 15-18x softmax_loss's CPU seconds when JAX
    # differentiated lax.cumlogsumexp, and 3.4-4x since (decision 0029); 8x
    # is wide of both on a busy machine.
    code = (
        "import json, sys, bench_smooth; json.dump(bench_smooth.forward_mode_rows("
        "((1, 1000),), names=('softmax_loss', 'listmle_loss')), sys.stdout)"
    )
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([children.SRC, str(BENCHMARKS)]),
        "JAX_ENABLE_COMPILATION_CACHE": "false",
    }
    child = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    rows = {row["loss"]: row for row in json.loads(child.stdout)}
    columns = ("jvp_closed_s", "jvp_argument_s", "hvp_closed_s", "hvp_argument_s")
    listmle, softmax = (
        sum(rows[name][c] for c in columns) for name in ("listmle_loss", "softmax_loss")
    )
    assert listmle < 8 * softmax, rows


@pytest.mark.parametrize("method", smooth.METHODS)
def test_jacfwd_of_soft_ranks_equals_jacrev(method):
    scores = jnp.asarray(np.random.default_rng(3).normal(size=7), F64)

    def ranks(s):
        return smooth.ranks(s, temperature=0.4, method=method)

    forward, reverse = jax.jacfwd(ranks)(scores), jax.jacrev(ranks)(scores)
    np.testing.assert_allclose(forward, reverse, **TIGHT)
    assert float(jnp.max(jnp.abs(forward))) > 0


@pytest.mark.parametrize("name", tiers.params(list(LOSSES), default=("lambda_loss",)))
def test_hessian_vector_products_of_every_loss(name):
    # Forward over reverse against reverse over reverse: each derivative is
    # taken by a different route through JAX.
    scores, labels = _lists(7)
    direction = jnp.asarray(np.random.default_rng(8).normal(size=scores.shape), F64)

    def loss(s):
        return LOSSES[name](s, labels)

    forward_over_reverse = jax.jvp(jax.grad(loss), (scores,), (direction,))[1]
    reverse_over_reverse = jax.grad(lambda s: jnp.sum(jax.grad(loss)(s) * direction))(scores)
    np.testing.assert_allclose(forward_over_reverse, reverse_over_reverse, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------
# Traced options
# --------------------------------------------------------------------------


CASES = [(name, option) for name, options in TRACEABLE.items() for option in options]


@pytest.mark.parametrize("name, option", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_traced_options_compile_once_equal_eager_and_give_nan_when_invalid(name, option):
    loss = LOSSES[name]
    scores, labels = _lists(11)
    valid, invalid = TRACEABLE[name][option]
    step = jax.jit(lambda s, y, value: loss(s, y, **{option: value}))
    np.testing.assert_allclose(step(scores, labels, valid), loss(scores, labels, **{option: valid}))
    other = valid * 1.5
    np.testing.assert_allclose(step(scores, labels, other), loss(scores, labels, **{option: other}))
    # One compiled program for every value: the option is an argument, not a constant.
    assert step._cache_size() == 1
    value, grad = jax.jit(jax.value_and_grad(lambda s, t: loss(s, labels, **{option: t})))(
        scores, invalid
    )
    assert bool(jnp.isnan(value)) and bool(jnp.all(jnp.isnan(grad)))
    # The same value given concretely is refused, naming the option.
    with pytest.raises(InvalidParameterError, match=f"'{option}' parameter of {name}"):
        loss(scores, labels, **{option: invalid})


def test_a_traced_option_must_be_a_real_scalar():
    scores, labels = _lists(12)
    with pytest.raises(InvalidParameterError) as info:
        jax.jit(lambda s, t: losses.approx_ndcg_loss(s, labels, temperature=t))(scores, jnp.ones(2))
    dtype = jnp.ones(2).dtype
    assert str(info.value) == (
        "The 'temperature' parameter of approx_ndcg_loss must be a float in the range "
        f"(0.0, inf). Got a traced array of dtype {dtype} and shape (2,) instead: a traced "
        "option must be a real scalar."
    )


# One function per kernel in the default tier: the soft ranks, DCG, NDCG,
# reciprocal rank, hits, and precision for the rank sums' shared kernel; the
# other rank sums in the slow tier.
@pytest.mark.parametrize(
    "name",
    tiers.params(
        ["ranks", *SMOOTH],
        default=("ranks", "dcg", "ndcg", "reciprocal_rank", "hits", "precision"),
    ),
)
def test_smooth_functions_take_a_traced_temperature(name):
    function = getattr(smooth, name)
    scores, labels = _lists(13)
    args = (scores,) if name == "ranks" else (scores, labels)

    required = {"max_label": 3.0} if name == "err" else {}

    def at(t):
        return function(*args, temperature=t, **required)

    traced = jax.jit(at)
    np.testing.assert_allclose(traced(0.3), at(0.3), **TIGHT)
    assert bool(jnp.all(jnp.isnan(traced(-0.3))))
    grad = jax.grad(lambda t: jnp.sum(at(t)))(0.3)
    assert np.isfinite(float(grad))


def test_annealing_inside_one_jitted_scan():
    scores, labels = _lists(14)

    def anneal(s, temperatures):
        def step(s, t):
            value, grad = jax.value_and_grad(losses.approx_ndcg_loss)(s, labels, temperature=t)
            return s - 0.5 * grad, value

        return jax.lax.scan(step, s, temperatures)

    final, values = jax.jit(anneal)(scores, jnp.geomspace(1.0, 0.05, 20))
    assert values.shape == (20,) and bool(jnp.all(jnp.isfinite(values)))
    assert float(losses.approx_ndcg_loss(final, labels, temperature=0.05)) < float(values[0])


# --------------------------------------------------------------------------
# The exp2 limit: a label that is accepted trains
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lambda_loss", "approx_ndcg_loss", "neural_ndcg_loss"])
def test_labels_at_the_exp2_limit_train_like_float64(name):
    # 2^127 - 1 is the largest exp2 gain float32 holds; 1 / IDCG is then below
    # the smallest normal number, which XLA flushes to zero.
    scores = jnp.array([[1.0, 2.0, 3.0]], jnp.float32)
    labels = jnp.array([[127.0, 1.0, 0.0]], jnp.float32)
    loss = LOSSES[name]
    value, grad = jax.value_and_grad(loss)(scores, labels)
    with jax.enable_x64(True):
        want_value, want_grad = jax.value_and_grad(loss)(scores.astype(F64), labels.astype(F64))
    assert float(jnp.max(jnp.abs(grad))) > 1e-3
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------
# Per-item weights
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(LOSSES))
def test_unit_item_weights_change_nothing_and_scaled_ones_scale(name):
    loss = LOSSES[name]
    scores, labels = _lists(15)
    plain = loss(scores, labels, reduction="none")
    np.testing.assert_allclose(
        loss(scores, labels, weights=jnp.ones(scores.shape), reduction="none"), plain, **TIGHT
    )
    if name in ("softmax_loss", "poly1_softmax_loss", "approx_ndcg_loss", "neural_ndcg_loss"):
        return  # weights enter a normalised distribution or ratio: a common factor cancels
    np.testing.assert_allclose(
        loss(scores, labels, weights=jnp.full(scores.shape, 2.5), reduction="none"),
        2.5 * plain,
        **TIGHT,
    )


@pytest.mark.parametrize(
    "name",
    ["pointwise_mse_loss", "pointwise_sigmoid_loss", "softmax_loss", "poly1_softmax_loss"],
)
def test_a_zero_item_weight_drops_that_items_term(name):
    # For these losses an item's weight scales its own term (or its label), so
    # weight 0 on an item with label 0 is the item masked out of the targets.
    loss = LOSSES[name]
    scores, labels = _lists(16)
    weights = jnp.ones(scores.shape).at[:, 2].set(0.0)
    labels = labels.at[:, 2].set(0.0)
    if name.startswith("pointwise"):
        where = jnp.ones(scores.shape, bool).at[:, 2].set(False)
        np.testing.assert_allclose(
            loss(scores, labels, weights=weights, reduction="none"),
            loss(scores, labels, where=where, reduction="none"),
            **TIGHT,
        )
    else:
        np.testing.assert_allclose(
            loss(scores, labels, weights=weights, reduction="none"),
            loss(scores, labels, reduction="none"),
            **TIGHT,
        )


def test_item_weights_follow_packed_lists():
    scores, labels = _lists(17, shape=(6,))
    weights = jnp.array([1.0, 2.0, 0.5, 3.0, 1.0, 0.0])
    segments = jnp.array([0, 0, 0, 1, 1, 1])
    packed = losses.pairwise_logistic_loss(
        scores, labels, weights=weights, segments=segments, reduction="none"
    )
    one_by_one = [
        losses.pairwise_logistic_loss(scores[a:b], labels[a:b], weights=weights[a:b])
        for a, b in ((0, 3), (3, 6))
    ]
    np.testing.assert_allclose(packed, jnp.stack(one_by_one), **TIGHT)


@pytest.mark.parametrize(
    "name",
    tiers.params(list(LOSSES), default=("softmax_loss",)),
)
def test_a_scalar_loss_under_jit_takes_query_ids_without_max_segments(name):
    # Rax's habit: the ids are the dataset's query ids, any integers, in any order.
    loss = LOSSES[name]
    scores, labels = _lists(23, shape=(2, 7))
    query_ids = jnp.array([[1007, 1007, 5, -3, 5, 1007, -3], [9, 9, 9, 9, 2, 2, 2]])
    dense = jnp.array([[2, 2, 1, 0, 1, 2, 0], [1, 1, 1, 1, 0, 0, 0]])
    where = jnp.array([[True] * 6 + [False], [True] * 7])

    def traced(s, g):
        return loss(s, labels, where=where, segments=g)

    eager = jax.value_and_grad(
        lambda s: loss(s, labels, where=where, segments=dense, max_segments=3)
    )(scores)
    value, grad = jax.jit(jax.value_and_grad(traced))(scores, query_ids)
    np.testing.assert_allclose(value, eager[0], **TIGHT)
    np.testing.assert_allclose(grad, eager[1], **TIGHT)


def test_a_loss_per_list_under_jit_still_needs_max_segments():
    scores, labels = _lists(23, shape=(1, 4))
    run = jax.jit(lambda s, g: losses.softmax_loss(s, labels, segments=g, reduction="none"))
    with pytest.raises(ValueError, match="needs max_segments when the segment ids are traced"):
        run(scores, jnp.zeros((1, 4), int))


# --------------------------------------------------------------------------
# Rax's losses
# --------------------------------------------------------------------------


@pytest.fixture
def rax():
    return rax_compat.import_rax()


RAX_SAME = {
    "pointwise_mse_loss": "pointwise_mse_loss",
    "pointwise_sigmoid_loss": "pointwise_sigmoid_loss",
    "pairwise_hinge_loss": "pairwise_hinge_loss",
    "pairwise_soft_zero_one_loss": "pairwise_soft_zero_one_loss",
    "pairwise_logistic_loss": "pairwise_logistic_loss",
}


@pytest.mark.parametrize("name", list(RAX_SAME))
@pytest.mark.parametrize("weighted", [False, True])
def test_new_losses_match_rax_with_sum_reduction(rax, name, weighted):
    rng = np.random.default_rng(18)
    scores = jnp.asarray(rng.normal(size=(3, 6)), F64)
    labels = jnp.asarray(rng.integers(0, 3, size=(3, 6)) / 2, F64)
    where = jnp.asarray(rng.random((3, 6)) < 0.8)
    weights = jnp.asarray(rng.random((3, 6)) * 2, F64) if weighted else None
    ours = LOSSES[name](scores, labels, where=where, weights=weights, reduction="sum")
    theirs = getattr(rax, RAX_SAME[name])(
        scores, labels, where=where, weights=weights, reduce_fn=jnp.sum
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_poly1_softmax_matches_rax_on_normalised_labels(rax):
    rng = np.random.default_rng(19)
    scores = jnp.asarray(rng.normal(size=(3, 6)), F64)
    labels = jnp.asarray(rng.random((3, 6)), F64)
    labels = labels / jnp.sum(labels, axis=-1, keepdims=True)
    for epsilon in (1.0, -0.5, 3.0):
        ours = losses.poly1_softmax_loss(scores, labels, epsilon=epsilon, reduction="none")
        theirs = rax.poly1_softmax_loss(scores, labels, epsilon=epsilon, reduce_fn=None)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


@pytest.mark.parametrize("smoothing", [None, 1e-20])
def test_gumbel_sampling_is_a_broadcast_away_from_rax_gumbel_t12n(rax, smoothing):
    # Decision 0032: every loss takes any leading batch shape, so the recipe in
    # docs/smooth.md (what losses.gumbel_t12n does) is Rax's transform.
    rng = np.random.default_rng(21)
    scores = jnp.asarray(rng.normal(size=(3, 6)), F64)
    labels = jnp.asarray(rng.integers(0, 3, size=(3, 6)), F64)
    where = jnp.asarray(rng.random((3, 6)) < 0.8).at[:, 0].set(True)
    key, samples, beta = jax.random.PRNGKey(7), 8, 0.5

    noise = jax.random.gumbel(key, (samples, *scores.shape), scores.dtype)
    sampled = scores + beta * noise
    if smoothing is not None:
        sampled = jnp.log(jax.nn.softmax(jnp.where(where, sampled, -jnp.inf)) + smoothing)
    ours = losses.softmax_loss(
        sampled,
        jnp.broadcast_to(labels, sampled.shape),
        where=jnp.broadcast_to(where, sampled.shape),
        reduction="sum",
    )
    gumbel_softmax = rax.gumbel_t12n(
        rax.softmax_loss, samples=samples, beta=beta, smoothing_factor=smoothing
    )
    theirs = gumbel_softmax(
        scores,
        labels,
        key=key,
        where=where,
        label_fn=rax.utils.normalize_probabilities,
        reduce_fn=jnp.sum,
    )
    np.testing.assert_allclose(ours, theirs, **TIGHT)
