"""Invariance tests over every exact measure of the registry (``lodestar._registry``).

A measure that joins ``MEASURES`` inherits every test here: the all-orders
oracle (tests/oracles.py's ORACLES, by registry key), the descending-index
order, padding anywhere, empty and padding-only lists, jit, vmap, batching,
packed lists, integer, boolean and half-precision scores, float32 against
float64, a zero gradient in the scores, the NaN rule under ``jit``, and the
per-list context (``num_relevant``, ``ideal_labels``) it declares.

Tolerances: float64 (x64 is on via conftest) ``rtol = atol = 1e-12``: only
round-off separates the two sides. float32 against float64 on 50-item lists:
``rtol = 2e-6, atol = 1e-6`` (a few float32 ulps summed over the list).
Half-precision inputs are ranked and computed in float32: against float32
inputs holding the same values, ``rtol = 1e-6``.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import strategies
import tiers
from hypothesis import given
from hypothesis import strategies as st

from lodestar import _registry

TOL = dict(rtol=1e-12, atol=1e-12)
KEYS = list(_registry.MEASURES)


def measure(key):
    return _registry.MEASURES[key]


def metric(key):
    """The public function with its required options filled in."""
    entry = measure(key)
    return functools.partial(entry.function, **entry.required_options)


def oracle(key):
    """The brute-force reference on one explicit order, with the same options."""
    entry = measure(key)
    return functools.partial(oracles.ORACLES[key], **entry.required_options)


def test_every_measure_has_its_oracle():
    # The oracles are the tests' data, kept beside them; a measure without
    # one would silently skip every test of this module that reads it.
    assert list(oracles.ORACLES) == KEYS


def cutoffs(key, n):
    return [None, *range(1, n + 3)] if measure(key).cutoff else [None]


def cut(key, k):
    """``k`` as a keyword, for measures that take it."""
    return {"k": k} if measure(key).cutoff else {}


def per_row(reference, scores, labels, **options):
    """``reference`` (``oracles.tie_average`` or ``ignoring_ties``) on each row's list."""
    return [reference(s, y, **options) for s, y in zip(scores, labels, strict=True)]


# --- exactness: every order of the ties -------------------------------------------------


@pytest.mark.parametrize("key", tiers.measure_params())
@given(batch=strategies.tied_batches())
def test_tie_average_is_the_mean_over_every_order(key, batch):
    scores, labels = batch
    for k in cutoffs(key, scores.shape[-1]):
        average = functools.partial(oracles.tie_average, oracle(key), **cut(key, k))
        got = metric(key)(scores, labels, **cut(key, k))
        np.testing.assert_allclose(got, per_row(average, scores, labels), **TOL)


@pytest.mark.parametrize("key", tiers.measure_params())
@given(batch=strategies.tied_batches())
def test_ignore_ties_ranks_ties_by_descending_index(key, batch):
    scores, labels = batch
    for k in cutoffs(key, scores.shape[-1]):
        ordered = functools.partial(oracles.ignoring_ties, oracle(key), **cut(key, k))
        got = metric(key)(scores, labels, ignore_ties=True, **cut(key, k))
        np.testing.assert_allclose(got, per_row(ordered, scores, labels), **TOL)


@pytest.mark.parametrize(
    "key", tiers.measure_params(k for k in KEYS if "num_relevant" in measure(k).context)
)
@given(
    batch=strategies.tied_batches(),
    extra=st.lists(st.integers(0, 3), min_size=strategies.BATCH, max_size=strategies.BATCH),
)
def test_num_relevant_counts_relevant_items_outside_the_list(key, batch, extra):
    scores, labels = batch
    totals = np.count_nonzero(labels, axis=-1) + np.array(extra)
    for k in cutoffs(key, scores.shape[-1]):
        expected = [
            oracles.tie_average(oracle(key), s, y, num_relevant=total, **cut(key, k))
            for s, y, total in zip(scores, labels, totals, strict=True)
        ]
        got = metric(key)(scores, labels, num_relevant=totals.astype(np.float64), **cut(key, k))
        np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.parametrize("key", tiers.engine_params())
def test_long_lists_take_other_engine_paths_to_the_same_value(key):
    # A tied list of 24 items alone (pairwise counting), and the same items
    # scattered among 600 padding slots with scores of their own (top-k, the
    # host or XLA sort): the engine path is chosen by the padded length, the
    # value only by the real items.
    rng = np.random.default_rng(11)
    short_scores = rng.integers(5, 9, (3, 24)).astype(np.float64)
    short_labels = rng.integers(0, 4, (3, 24)).astype(np.float64)
    slots = np.sort(rng.permutation(624)[:24])
    where = np.zeros((3, 624), bool)
    where[:, slots] = True
    scores = rng.integers(0, 12, (3, 624)).astype(np.float64)
    labels = rng.integers(0, 4, (3, 624)).astype(np.float64)
    scores[:, slots], labels[:, slots] = short_scores, short_labels
    # k = 3 is below the 24 real items, k = 100 above them: the top-k method
    # serves both on the long rows.
    for k in [None, 3, 100] if measure(key).cutoff else [None]:
        for ignore_ties in (False, True):
            options = dict(ignore_ties=ignore_ties, **cut(key, k))
            short = metric(key)(short_scores, short_labels, **options)
            long = metric(key)(scores, labels, where=where, **options)
            np.testing.assert_allclose(long, short, **TOL)


# --- padding, empty lists, batching, jit, vmap ----------------------------------------


@pytest.mark.parametrize("key", tiers.measure_params())
@given(batch=strategies.padded_batches())
def test_padding_anywhere_changes_nothing(key, batch):
    # Against the oracle on the real items alone: padding with scores, NaN
    # and labels of its own (9, -1) changes nothing.
    scores, labels, where, real = batch
    for k in (None, 1, 3, 9) if measure(key).cutoff else (None,):
        for ignore_ties, reference in ((False, oracles.tie_average), (True, oracles.ignoring_ties)):
            expected = [reference(oracle(key), s, y, **cut(key, k)) for s, y in real]
            got = metric(key)(scores, labels, where=where, ignore_ties=ignore_ties, **cut(key, k))
            np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.parametrize("key", tiers.measure_params())
def test_padding_only_lists_and_empty_lists_score_zero(key):
    scores = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    labels = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    where = np.array([[False] * 3, [True, False, True]])
    got = metric(key)(scores, labels, where=where)
    assert got[0] == 0.0
    # The partly padded list scores its real items alone (a count of unjudged
    # or non-relevant items is 0 there, so not "> 0").
    alone = metric(key)(scores[1][where[1]], labels[1][where[1]])
    np.testing.assert_allclose(got[1], alone, **TOL)
    empty = metric(key)(np.zeros((3, 0)), np.zeros((3, 0)))
    np.testing.assert_array_equal(empty, np.zeros(3))


rng = np.random.default_rng(5)
SCORES = np.round(rng.random((4, 3, 50)), 1)
LABELS = (rng.integers(0, 4, (4, 3, 50)) * (rng.random((4, 3, 50)) < 0.4)).astype(np.float64)
WHERE = rng.random((4, 3, 50)) < 0.85


def _jit_cases():
    """Every measure without a cut-off; with k=5, the cut-off measures of the engine sweeps.

    A cut-off is a traced option like any other, so under jit and vmap it is
    swept on one measure of every module (tiers.engine_params) and not on all.
    """
    swept = {param.values[0] for param in tiers.engine_params()}
    for param in tiers.measure_params():
        (key,) = param.values
        yield pytest.param(key, None, id=f"None-{key}", marks=param.marks)
        if measure(key).cutoff and key in swept:
            yield pytest.param(key, 5, id=f"5-{key}", marks=param.marks)


@pytest.mark.parametrize(("key", "k"), list(_jit_cases()))
def test_jit_vmap_and_batching_agree(key, k):
    options = cut(key, k)
    eager = metric(key)(SCORES, LABELS, where=WHERE, **options)
    assert eager.shape == (4, 3)
    jitted = jax.jit(lambda s, y, w: metric(key)(s, y, where=w, **options))(SCORES, LABELS, WHERE)
    np.testing.assert_allclose(jitted, eager, **TOL)
    one = jax.vmap(jax.vmap(lambda s, y, w: metric(key)(s, y, where=w, **options)))
    np.testing.assert_allclose(one(SCORES, LABELS, WHERE), eager, **TOL)
    one_by_one = [
        metric(key)(SCORES[i, j], LABELS[i, j], where=WHERE[i, j], **options)
        for i, j in np.ndindex(4, 3)
    ]
    np.testing.assert_allclose(np.reshape(one_by_one, (4, 3)), eager, **TOL)


@pytest.mark.parametrize("key", tiers.measure_params())
def test_packed_lists_score_what_they_score_padded_on_their_own(key):
    segments = np.repeat(np.arange(5), 10)[None].repeat(12, 0)
    scores, labels = SCORES.reshape(12, 50), LABELS.reshape(12, 50)
    for k in (None, 3) if measure(key).cutoff else (None,):
        packed = metric(key)(scores, labels, segments=segments, **cut(key, k))
        alone = metric(key)(scores.reshape(12, 5, 10), labels.reshape(12, 5, 10), **cut(key, k))
        np.testing.assert_allclose(packed, alone, **TOL)


# --- dtypes ----------------------------------------------------------------------------


@pytest.mark.parametrize("key", tiers.measure_params())
def test_float32_in_float32_out(key):
    expected = metric(key)(SCORES, LABELS, where=WHERE)
    got = metric(key)(SCORES.astype(np.float32), LABELS.astype(np.float32), where=WHERE)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("key", tiers.engine_params())
def test_float32_by_default_without_x64(key):
    with jax.enable_x64(False):
        got = metric(key)(SCORES.astype(np.float32), LABELS.astype(np.int32))
        assert got.dtype == jnp.float32
        assert metric(key)(np.arange(5), np.arange(5) % 3).dtype == jnp.float32


@pytest.mark.parametrize("key", tiers.engine_params())
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_half_precision_is_computed_in_float32(key, dtype):
    scores = jnp.asarray(SCORES, dtype)
    got = metric(key)(scores, LABELS.astype(dtype))
    assert got.dtype == jnp.float32
    expected = metric(key)(scores.astype(jnp.float32), LABELS.astype(np.float32))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


# Ranking integers by value is the engine's, whatever the formula: the slow
# tier's measures take the narrowest signed type, the widest unsigned one and
# bool, the default tier's every type.
@pytest.mark.parametrize(
    "key, dtype",
    tiers.crossed(
        tiers.engine_params(),
        [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.bool_],
        slow=lambda key, dtype: dtype in (np.int8, np.uint64, np.bool_),
        name=lambda dtype: np.dtype(dtype).name,
    ),
)
def test_integer_and_boolean_scores_are_ranked_by_value(key, dtype):
    if dtype == np.bool_:
        scores = np.array([False, True, False, True, True, False])
    else:
        info = np.iinfo(dtype)
        # Extremes included: negating these would overflow or wrap around.
        scores = np.array([info.min, info.max, 0, 1, info.max, info.min], dtype)
    labels = np.array([0.0, 3.0, 1.0, 2.0, 3.0, 0.0])
    as_float = np.argsort(np.argsort(scores.astype(np.float64), kind="stable"), kind="stable")
    same = scores[:, None] == scores[None, :]
    as_float = np.array([as_float[np.flatnonzero(row)].min() for row in same], np.float64)
    for k in (None, 3) if measure(key).cutoff else (None,):
        expected = metric(key)(as_float, labels, **cut(key, k))
        np.testing.assert_allclose(metric(key)(scores, labels, **cut(key, k)), expected, **TOL)


# --- gradients and NaN -------------------------------------------------------------------


# Long lists (n = 300) take the engine's other paths, which one measure of
# every module meets in the slow tier.
@pytest.mark.parametrize(
    "key, n",
    tiers.crossed(
        tiers.measure_params(), [6, 300], slow=lambda key, n: n < 300 or key in tiers.ONE_PER_MODULE
    ),
)
def test_grad_with_respect_to_scores_is_zero(key, n):
    scores = jnp.asarray(np.round(rng.random((2, n)), 1))
    labels = jnp.asarray(rng.integers(0, 3, (2, n)).astype(np.float64))

    def total(s):
        return metric(key)(s, labels, **cut(key, 4 if measure(key).cutoff else None)).sum()

    grad = jax.jit(jax.grad(total))(scores)
    np.testing.assert_array_equal(grad, np.zeros_like(scores))


@pytest.mark.parametrize(
    "key, n",
    tiers.crossed(
        tiers.measure_params(), [5, 300], slow=lambda key, n: n < 300 or key in tiers.ONE_PER_MODULE
    ),
)
def test_nan_score_under_jit_gives_nan_for_that_list_only(key, n):
    scores = np.round(rng.random((3, n)), 1)
    labels = rng.integers(0, 3, (3, n)).astype(np.float64)
    labels[:, 0] = 1.0
    scores[1, n // 2] = np.nan
    got = np.asarray(jax.jit(lambda s, y: metric(key)(s, y))(scores, labels))
    assert np.isnan(got[1])
    assert np.all(np.isfinite(got[[0, 2]]))
