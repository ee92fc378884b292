"""Tests of the measures declared as rank sums and their smooth versions.

``lodestar._rank_sums`` declares each of DCG, precision, recall, average
precision, ERR, RBP and R-precision once, as a utility of an item's rank;
``lodestar.smooth`` evaluates the declaration on soft ranks. Smooth hits, like
smooth reciprocal rank, reads the first relevant item through softmax weights
instead (tests 6). Tolerances (float64, x64 on via
conftest):

* The declarations at hard ranks (the rank engine with ties broken by index)
  equal the registry's exact formulas with ``ignore_ties=True``: 1e-12
  absolute, on tied and padded lists, with and without ``k`` and
  ``num_relevant``.
* Convergence: on tie-free scores (gaps >= 0.1), with padding, with and
  without ``k``, every method: the error against lodestar.metrics never grows
  along T = 0.1, 0.01, 0.001 (slack 1e-12) and is below 1e-9 at T = 0.001.
* Gradients: finite everywhere, not all zero for any measure and method
  (precision and recall with ``k``: without it they do not depend on the
  scores); against finite differences (check_grads, order 1, reverse, T = 0.5,
  eps 1e-6) to 1e-5.
* Padding: values and real items' gradients equal the unpadded list's to
  1e-12; padding's gradients are exactly 0.
* Rax (approx_t12n at the same temperature): 1e-10 where the definitions
  coincide (see test_rax_*).
* The smooth DCG of lodestar.smooth equals its declaration on soft ranks to
  1e-12.
* The blocked pairwise sum (from 512 items) equals the dense one to 1e-12 in
  value and 1e-11 in gradient, and its value and gradient at 8 x 2,048 hold
  under a quarter of the (8, 2048, 2048) pairs in temporaries.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rax_compat
import tiers
from jax.test_util import check_grads

from lodestar import InvalidParameterError, _pairs, _rank_sums, _registry, metrics, smooth
from lodestar.smooth._rank_sum_measures import CUT_AT_NORMALISER

METHODS = smooth.METHODS
NEW = ("precision", "recall", "average_precision", "err")
DECLARED = [key for key, measure in _registry.MEASURES.items() if measure.rank_sum is not None]
MAX_LABEL = 3.0


def tie_free(rng, shape, gap=0.1):
    """Scores whose distinct values are at least ``gap`` apart within each list."""
    n = shape[-1]
    base = np.arange(n, dtype=np.float64) * gap * 1.5
    rows = [
        rng.permutation(base) + rng.uniform(0, gap * 0.5, n)
        for _ in range(int(np.prod(shape[:-1])))
    ]
    return jnp.asarray(np.reshape(rows, shape), jnp.float64)


def batch(seed, shape=(4, 7)):
    """Tie-free scores, grades 0..3 and a padding mask.

    Every list holds a relevant and a non-relevant item but the last, which
    holds none relevant; with four lists, the second is padded (two items).
    """
    rng = np.random.default_rng(seed)
    scores = tie_free(rng, shape)
    labels = rng.integers(0, 4, shape).astype(np.float64)
    labels[..., 0] = 1.0
    labels[..., 1] = 0.0
    labels[..., -1, :] = 0.0
    where = np.ones(shape, bool)
    if shape[0] == 4:
        where[1, [2, 5]] = False
    return scores, jnp.asarray(labels), jnp.asarray(where)


def call(name, scores, labels, **options):
    fn = getattr(smooth, name)
    if name == "err":
        options["max_label"] = MAX_LABEL
    return fn(scores, labels, **options)


def exact(name, scores, labels, **options):
    fn = getattr(metrics, name)
    if name == "err":
        options["max_label"] = MAX_LABEL
    return fn(scores, labels, **options)


# --------------------------------------------------------------------------
# 1. The declarations are the exact measures at hard ranks
# --------------------------------------------------------------------------


def _options(measure):
    return {
        o.name: o.example if o.default is _registry.REQUIRED else o.default for o in measure.options
    }


def _hard_value(key, scores, labels, where, k, num_relevant, options):
    """The declaration of ``key`` on the rank engine's ranks, ties broken by index."""

    @jax.jit
    def run(scores, labels, where, k, num_relevant):
        valid = where
        y = jnp.where(valid, labels, 0)
        items = _rank_sums.Items(y, valid, options, num_relevant, k)
        measure = _registry.MEASURES[key].rank_sum
        cut = k
        if key in CUT_AT_NORMALISER:  # R-precision: cut each list at its own c
            total = measure.normaliser(items)
            cut = (total if k is None else jnp.minimum(total, k))[..., None]
        view = _rank_sums.HardView(scores, valid, cut, y.dtype)
        return _rank_sums.evaluate_rank_sum(measure, items, view)

    return run(scores, labels, where, k, num_relevant)


# The declarations of lodestar.metrics, beside their exact formulas, in the
# default tier; RBP's and R-precision's, which only the smooth functions read,
# in the slow tier (the default tier's convergence test holds them to the
# exact values too).
@pytest.mark.parametrize(
    "key", tiers.params(DECLARED, default=("dcg", "map", "P", "recall", "err"))
)
def test_declarations_at_hard_ranks_are_the_exact_measures(key):
    measure = _registry.MEASURES[key]
    rng = np.random.default_rng(len(key))
    shape = (6, 8)
    # Few distinct scores: most lists hold ties, which both break by index.
    scores = jnp.asarray(rng.choice([0.0, 0.5, 1.0, -2.0], shape))
    labels = jnp.asarray(rng.integers(0, 4, shape).astype(np.float64))
    where = jnp.asarray(rng.random(shape) < 0.8).at[:, 0].set(True).at[5].set(False)
    options = _options(measure)
    takes_num_relevant = "num_relevant" in measure.context
    own = jnp.sum(where & (labels != 0), axis=-1)
    for k in (None, 3, 10):
        for num_relevant in (None, own + 2) if takes_num_relevant and k == 3 else (None,):
            extra = {} if num_relevant is None else {"num_relevant": num_relevant}
            want = measure.function(
                scores, labels, where=where, k=k, ignore_ties=True, **extra, **options
            )
            got = _hard_value(key, scores, labels, where, k, num_relevant, options)
            np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{key} k={k}")


# --------------------------------------------------------------------------
# 2. Convergence to the exact measures, and gradients, every method
# --------------------------------------------------------------------------

TEMPERATURES = (0.5, 0.1, 0.01, 0.001)
CUTOFFS = (None, 3, 9)  # 9 is past the lists' end


# Every smooth measure reads the scores and the temperature through s / T
# alone (the soft ranks, the cut-off's midpoint and the sigmoid weights), so
# the sweeps over temperatures pass s / T at T = 1: one program per method
# serves them all.


def _values(method):
    """One program per method: every new measure at every cut-off, at T = 1."""

    @jax.jit
    def run(scores, labels, where):
        options = {"temperature": 1.0, "method": method, "where": where}
        return {
            f"{name} k={k}": call(name, scores, labels, k=k, **options)
            for name in NEW
            for k in CUTOFFS
        }

    return run


@pytest.mark.parametrize("method", METHODS)
def test_converges_to_the_exact_measures(method):
    scores, labels, where = batch(0)
    run = _values(method)
    values = [run(scores / t, labels, where) for t in TEMPERATURES]
    for name in NEW:
        for k in CUTOFFS:
            want = exact(name, scores, labels, k=k, where=where)
            key = f"{name} k={k}"
            errors = np.array([float(jnp.max(jnp.abs(v[key] - want))) for v in values])
            label = f"{key} {method}: errors {errors}"
            assert np.all(np.diff(errors[1:]) <= 1e-12), label
            assert errors[-1] < 1e-9, label
            if k == 3:
                # Far from exact at T = 0.5: the checks above can fail.
                assert errors[0] > 1e-2, label


# Each method's gradient program costs about 2 s of compilation: the sigmoid
# and permutahedron (the two most different) in the default tier.
@pytest.mark.parametrize("method", tiers.params(METHODS, default=("sigmoid", "permutahedron")))
def test_gradients_are_finite_and_not_zero(method):
    scores, labels, where = batch(0)

    def total(s, name):
        # Without k, precision and recall do not depend on the scores.
        options = {"temperature": 1.0, "method": method, "k": 3, "where": where}
        return jnp.sum(call(name, s, labels, **options))

    @jax.jit
    def run(scores):
        return {name: jax.grad(total)(scores, name) for name in NEW}

    for temperature in (0.5, 1e-3):
        for name, grad in run(scores / temperature).items():
            grad = np.asarray(grad)
            assert np.all(np.isfinite(grad)), (name, grad)
            assert np.all(grad[~np.asarray(where)] == 0), (name, grad)
            if temperature == 0.5:
                # Every list with a relevant item moves, the one without does not.
                moving = np.abs(grad).sum(axis=-1)
                assert np.all(moving[:3] > 1e-6) and moving[3] == 0, (name, moving)


@pytest.mark.parametrize("method", tiers.params(METHODS, default=("sigmoid",)))
def test_gradients_match_finite_differences(method):
    scores, labels, _ = batch(2, shape=(2, 6))

    @jax.jit
    def every_measure(s):
        return jnp.concatenate(
            [
                call(name, s, labels, temperature=0.5, method=method, k=k)
                for name, k in (
                    ("precision", 3),
                    ("recall", 2),
                    ("average_precision", None),
                    ("average_precision", 4),
                    ("err", None),
                )
            ]
        )

    check_grads(every_measure, (scores,), order=1, modes=["rev"], eps=1e-6, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------
# 4. Padding, NaN under jit, refusals
# --------------------------------------------------------------------------


def test_padding_takes_no_part():
    rng = np.random.default_rng(3)
    scores = tie_free(rng, (2, 5))
    labels = jnp.asarray(rng.integers(0, 4, (2, 5)).astype(np.float64)).at[:, 1].set(2.0)
    slots = np.array([0, 2, 3, 5, 7])  # real items interleaved with padding
    padded_s = jnp.full((2, 9), jnp.nan).at[:, slots].set(scores).at[:, 1].set(1e9)
    padded_y = jnp.full((2, 9), 9.0).at[:, slots].set(labels)
    where = jnp.zeros((2, 9), bool).at[:, slots].set(True)

    def values_and_grads(s, y, w):
        def total(s):
            values = [call(name, s, y, temperature=0.3, k=2, where=w) for name in NEW]
            return sum(jnp.sum(v) * (i + 1) for i, v in enumerate(values)), values

        return jax.grad(total, has_aux=True)(s)

    run = jax.jit(values_and_grads)
    grad, values = run(scores, labels, None)
    grad_p, values_p = run(padded_s, padded_y, where)
    for name, v, v_p in zip(NEW, values, values_p, strict=True):
        np.testing.assert_allclose(v_p, v, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(grad_p[:, slots], grad, atol=1e-12)
    assert bool(jnp.all(jnp.where(where, 0, grad_p) == 0))


def test_a_refused_list_gives_nan_under_jit_and_the_others_do_not():
    scores, labels, where = batch(4)
    nan_score = scores.at[0, 1].set(jnp.nan)
    negative = labels.at[2, 3].set(-1.0)
    over_max = labels.at[2, 4].set(MAX_LABEL + 1)
    num_relevant = jnp.sum(where & (labels != 0), axis=-1).at[1].add(-1)

    def measure(name, s, y, **options):
        value = call(name, s, y, temperature=0.5, k=3, where=where, **options)
        return jnp.sum(jnp.where(jnp.isnan(value), 0, value)), value

    @jax.jit
    def run(s, y, num_relevant):
        out = {}
        for name in NEW:
            (_, value), grad = jax.value_and_grad(measure, argnums=1, has_aux=True)(name, s, y)
            out[name] = (value, grad)
        for name in ("recall", "average_precision"):
            (_, value), grad = jax.value_and_grad(measure, argnums=1, has_aux=True)(
                name, s, y, num_relevant=num_relevant
            )
            out[f"{name} num_relevant"] = (value, grad)
        return out

    cases = [
        (nan_score, labels, 0, NEW),
        (scores, negative, 2, NEW),
        (scores, over_max, 2, ("err",)),
    ]
    for s, y, row, names in cases:
        for name, (value, grad) in run(s, y, num_relevant).items():
            bad = {row} if name.split()[0] in names else set()
            if name.endswith("num_relevant"):
                bad |= {1}
            for list_ in range(4):
                expect_nan = list_ in bad
                assert bool(jnp.isnan(value[list_])) == expect_nan, (name, list_, value)
                real = np.asarray(where[list_])
                row_grad = np.asarray(grad[list_])
                if expect_nan:
                    assert np.all(np.isnan(row_grad[real])), (name, list_, row_grad)
                else:
                    assert np.all(np.isfinite(row_grad)), (name, list_, row_grad)
                assert np.all(row_grad[~real] == 0), (name, list_, row_grad)


def test_refusals_name_the_function():
    s, y = jnp.array([0.3, 0.2, 0.1]), jnp.array([1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match=r"greater than max_label=1.0 in err\."):
        smooth.err(s, y, max_label=1.0)
    with pytest.raises(InvalidParameterError, match="'max_label' parameter of err"):
        smooth.err(s, y, max_label=0.0)
    with pytest.raises(TypeError):
        smooth.err(s, y)  # max_label is required
    for name in ("recall", "average_precision"):
        with pytest.raises(ValueError, match=f"^{name} got num_relevant below"):
            call(name, s, y, num_relevant=jnp.asarray(1))
        # num_relevant at least the list's own: accepted, and the denominator.
        half = call(name, s, y, num_relevant=jnp.asarray(4), temperature=1e-3)
        np.testing.assert_allclose(half * 2, call(name, s, y, temperature=1e-3), rtol=1e-12)
    for name in NEW:
        with pytest.raises(InvalidParameterError, match=f"'temperature' parameter of {name}"):
            call(name, s, y, temperature=0.0)
        with pytest.raises(InvalidParameterError, match=f"'method' parameter of {name}"):
            call(name, s, y, method="sinkhorn")
        with pytest.raises(ValueError, match="should not be used on negative labels"):
            call(name, s, -y)


# Packing is shared machinery (lodestar._segments); tests/test_segments.py
# sweeps these functions too, in the slow tier.
@pytest.mark.slow
def test_packed_lists_equal_the_padded_form():
    scores, labels, where = batch(5, shape=(1, 7))
    segments = jnp.array([[0, 0, 0, 1, 1, 1, 1]])
    for name in NEW:
        packed = call(name, scores, labels, temperature=0.4, k=2, segments=segments)
        first = call(name, scores[:, :3], labels[:, :3], temperature=0.4, k=2)
        second = call(name, scores[:, 3:], labels[:, 3:], temperature=0.4, k=2)
        np.testing.assert_allclose(packed[0], [first[0], second[0]], atol=1e-12, err_msg=name)
    del where


# --------------------------------------------------------------------------
# 5. One declaration: the smooth DCG, and the blocked pairwise sum
# --------------------------------------------------------------------------


@pytest.mark.parametrize("method", tiers.params(METHODS, default=("sigmoid",)))
def test_the_dcg_declaration_on_soft_ranks_is_smooth_dcg(method):
    scores, labels, where = batch(6)

    @jax.jit
    def declared(scores, labels, where):
        s = jnp.where(where, scores, 0)
        y = jnp.where(where, labels, 0)
        t = jnp.float64(0.3)
        view = _rank_sums.SoftView(s, where, t, method, 3, cut=True)
        items = _rank_sums.Items(y, where, {"gain": "exp2", "log_base": 3.0})
        return _rank_sums.evaluate_rank_sum(_registry.MEASURES["dcg"].rank_sum, items, view)

    want = smooth.dcg(
        scores, labels, temperature=0.3, method=method, k=3, where=where, gain="exp2", log_base=3.0
    )
    np.testing.assert_allclose(declared(scores, labels, where), want, atol=1e-12)


@pytest.mark.parametrize("budget", [1 << 12, 1 << 30])
def test_the_blocked_pairwise_sum_equals_the_dense_one(budget, monkeypatch):
    # A small budget runs the 520 items in padded blocks of 8 columns; a large
    # one in a single block (lodestar._pairs).
    monkeypatch.setattr(_pairs, "BUDGET", budget)
    n = 520
    rng = np.random.default_rng(7)
    s = jnp.asarray(np.round(rng.standard_normal((2, n)), 1))
    valid = jnp.asarray(rng.random((2, n)) < 0.8)
    values = jnp.asarray(rng.standard_normal((2, n)))
    cotangent = jnp.asarray(rng.standard_normal((2, n)))

    def dense(s, t):
        pair = valid[..., None, :] & valid[..., :, None] & ~jnp.eye(n, dtype=bool)
        step = jax.nn.sigmoid((s[..., None, :] - s[..., :, None]) / t)
        return jnp.sum(jnp.where(pair, values[..., None, :] * step, 0), axis=-1)

    def blocked(s, t):
        return _rank_sums.sigmoid_sum_above(s, valid, t, values)

    def objective(fn):
        # Not jitted: the patched budget must be traced afresh.
        return jax.value_and_grad(lambda s, t: jnp.sum(cotangent * fn(s, t)), (0, 1))

    t = jnp.float64(0.7)
    (got, got_grads), (want, want_grads) = objective(blocked)(s, t), objective(dense)(s, t)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for g, w in zip(got_grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


def test_the_long_pairwise_sum_never_holds_the_pairs_in_memory():
    batch, n = 32, 10_000
    scores = jax.ShapeDtypeStruct((batch, n), jnp.float32)
    values = jnp.full((batch, n), -0.3, jnp.float32)
    valid = jnp.ones((batch, n), bool)

    def objective(s):
        return jnp.sum(jnp.exp(_rank_sums.sigmoid_sum_above(s, valid, 0.5, values)))

    compiled = jax.jit(jax.value_and_grad(objective)).lower(scores).compile()
    # The pairs would take 12.8 GB; the blocks keep it near 0.1 GiB.
    assert compiled.memory_analysis().temp_size_in_bytes < 2**29


# --------------------------------------------------------------------------
# 6. Agreement with Rax's approx_t12n
# --------------------------------------------------------------------------


def _rax_cutoff(scores, where, temperature, k):
    """Rax's cutoff_fn giving lodestar's soft cut-off (in score units) instead of its own."""
    # lodestar's soft top-k weight: smooth.recall of a list whose items are all
    # relevant, times the number of real items, is the sum of the weights, and
    # per item the weight itself is recall's term; read it from _soft_ranks.
    from lodestar import _soft_ranks

    s = jnp.where(where, scores, 0)
    weight = _soft_ranks.top_k_weight(s, where, jnp.float64(temperature), k, cut=True)

    def cutoff_fn(a, n=None, **_):
        del a, n
        return weight

    return cutoff_fn, weight


def test_rax_approx_ap_agrees_with_one_relevant_item_per_list():
    # Rax counts the relevant items at or above an item with a step of the
    # soft ranks, lodestar with sigmoids; with one relevant item both count 1.
    rax = rax_compat.import_rax()
    rng = np.random.default_rng(9)
    scores = jnp.asarray(rng.normal(size=(4, 7)))
    labels = jnp.zeros((4, 7)).at[jnp.arange(4), jnp.array([0, 3, 6, 2])].set(1.0)
    where = jnp.ones((4, 7), bool).at[1, 5:].set(False)
    for temperature in (0.5,):
        approx_ap = rax.approx_t12n(rax.ap_metric, temperature=temperature)
        want = -approx_ap(scores, labels, where=where, reduce_fn=None)
        got = smooth.average_precision(scores, labels, temperature=temperature, where=where)
        np.testing.assert_allclose(got, want, atol=1e-10)


def test_rax_approx_recall_precision_and_ap_agree_given_the_same_cut_off():
    # The soft cut-offs differ (Rax: soft ranks, lodestar: scores); given
    # lodestar's, Rax's recall and one-relevant AP are lodestar's, and its
    # precision is lodestar's times k over the soft number retrieved.
    rax = rax_compat.import_rax()
    rng = np.random.default_rng(10)
    scores = jnp.asarray(rng.normal(size=(4, 7)))
    labels = jnp.asarray(rng.integers(0, 3, (4, 7)).astype(np.float64))
    where = jnp.ones((4, 7), bool).at[2, 4:].set(False)
    single = jnp.zeros((4, 7)).at[jnp.arange(4), jnp.array([1, 4, 0, 5])].set(1.0)
    temperature, k = 0.5, 3
    cutoff_fn, weight = _rax_cutoff(scores, where, temperature, k)
    opts = {"where": where, "topn": k, "reduce_fn": None, "cutoff_fn": cutoff_fn}
    ours = {"temperature": temperature, "k": k, "where": where}

    want = -rax.approx_t12n(rax.recall_metric, temperature=temperature)(scores, labels, **opts)
    np.testing.assert_allclose(smooth.recall(scores, labels, **ours), want, atol=1e-10)

    want = -rax.approx_t12n(rax.ap_metric, temperature=temperature)(scores, single, **opts)
    np.testing.assert_allclose(smooth.average_precision(scores, single, **ours), want, atol=1e-10)

    want = -rax.approx_t12n(rax.precision_metric, temperature=temperature)(scores, labels, **opts)
    retrieved = jnp.sum(jnp.where(where, weight, 0), axis=-1)
    got = smooth.precision(scores, labels, **ours)
    np.testing.assert_allclose(got * k, want * retrieved, atol=1e-10)


# --------------------------------------------------------------------------
# 6. Hits, RBP and R-precision
# --------------------------------------------------------------------------

LATER = ("hits", "rank_biased_precision", "r_precision")


def test_hits_rbp_and_r_precision_converge_with_finite_gradients():
    # One program for the three measures, their gradients, at every
    # temperature (passed as s / T at T = 1, as in section 2).
    scores, labels, where = batch(6)
    num_relevant = jnp.sum(where & (labels != 0), axis=-1) + jnp.array([1, 0, 0, 2])
    options = {
        "hits": {"k": 2},
        "rank_biased_precision": {"k": 4, "p": 0.8},
        "r_precision": {"num_relevant": num_relevant},
    }

    @jax.jit
    def run(s):
        def each(s, name):
            return call(name, s, labels, temperature=1.0, where=where, **options[name])

        def total(s, name):
            return jnp.sum(each(s, name))

        return {name: (each(s, name), jax.grad(total)(s, name)) for name in LATER}

    runs = [run(scores / t) for t in TEMPERATURES]
    for name in LATER:
        want = exact(name, scores, labels, where=where, **options[name])
        errors = np.array([float(jnp.max(jnp.abs(r[name][0] - want))) for r in runs])
        assert np.all(np.diff(errors[1:]) <= 1e-12) and errors[-1] < 1e-9, (name, errors)
        assert errors[0] > 1e-2, (name, errors)  # far from exact at T = 0.5
        for r in runs:
            grad = np.asarray(r[name][1])
            assert np.all(np.isfinite(grad)) and np.all(grad[~np.asarray(where)] == 0), name
        moving = np.abs(np.asarray(runs[0][name][1])).sum(axis=-1)
        assert np.all(moving[:3] > 1e-6) and moving[3] == 0, (name, moving)


def test_smooth_hits_shares_first_place_among_tied_relevant_items():
    # Three relevant items tied at the top: each is the first relevant item
    # with weight 1/3, so hits@3 is their shared soft cut-off, near 1 once the
    # temperature is below the gap of 1 (a soft count of relevant items above
    # each, 1 for all three, would score them near 0 instead).
    scores, labels = jnp.array([1.0, 1.0, 1.0, 0.0, 0.0]), jnp.array([1.0, 1.0, 1.0, 0.0, 0.0])
    assert smooth.hits(scores, labels, k=3, temperature=0.05) > 0.9999
    np.testing.assert_allclose(metrics.hits(scores, labels, k=3), 1.0)


def test_hits_rbp_and_r_precision_refusals_name_the_function():
    s, y = jnp.array([0.3, 0.2, 0.1]), jnp.array([1.0, 0.0, 2.0])
    for name in LATER:
        with pytest.raises(InvalidParameterError, match=f"'temperature' parameter of {name}"):
            call(name, s, y, temperature=0.0)
        with pytest.raises(ValueError, match="should not be used on negative labels"):
            call(name, s, -y)
    with pytest.raises(InvalidParameterError, match="'p' parameter of rank_biased_precision"):
        smooth.rank_biased_precision(s, y, p=1.0)
    with pytest.raises(ValueError, match="greater than max_label in rank_biased_precision"):
        smooth.rank_biased_precision(s, y, max_label=1.0)
    with pytest.raises(InvalidParameterError, match="'multiple' parameter of r_precision"):
        smooth.r_precision(s, y, multiple=0.0)
    with pytest.raises(ValueError, match="^r_precision got num_relevant below"):
        smooth.r_precision(s, y, num_relevant=jnp.asarray(1))
