"""Streaming accumulators (lodestar.streaming) against evaluating everything at once.

Tolerances:
- float64 (x64 on): the streaming mean over any split into batches equals
  ``numpy.average`` of the all-at-once per-list values to rtol 1e-12.
- float32, accumulator alone: the streaming mean equals the exact mean
  (``math.fsum``) of the very per-list values it was fed to 4 units in the last
  place (rtol 4 * 2**-24), whatever the split.
- float32, end to end: against the all-at-once values, rtol 1e-6. XLA:CPU's
  reduction order depends on the batch shape, so one list's value can move by
  an ulp or two between a batch of 3 and a batch of 40.
Every measure of the registry (``lodestar._registry``) is covered; a new
measure joins without new code.
"""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tiers
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lodestar import InvalidParameterError, _registry, metrics, streaming

# Every function of the registry once (gm_map and map share one, and so do
# bpref and gm_bpref).
ENTRIES = list({m.function_path: m for m in _registry.MEASURES.values()}.values())
# Each measure's key, slow outside the default tier's sweep (tests/tiers.py).
METRICS = [
    pytest.param(m.function, id=p.id, marks=p.marks)
    for m, p in zip(ENTRIES, tiers.measure_params(m.key for m in ENTRIES), strict=True)
]
# Options a metric requires (no default); every other option keeps its default.
REQUIRED_OPTIONS = {m.function.__name__: m.required_options for m in ENTRIES}
REQUIRED_OPTIONS["err"] = {"max_label": 2}
TAKES_CUTOFF = {m.function.__name__ for m in ENTRIES if m.cutoff}
CUTOFFS = [None, 3]
F32_ULP = 2.0**-24


# Every batch is padded to this many lists, as a training loop's batches are:
# one shape per list length, so the examples compile little.
ROWS = 24


def padded(array, fill):
    """``array``'s lists followed by lists of ``fill``, :data:`ROWS` in all."""
    if array is None:
        return None
    extra = np.full((ROWS - len(array), *array.shape[1:]), fill, array.dtype)
    return np.concatenate([array, extra])


@st.composite
def stream(draw):
    """Lists with ties, padding, all-padding lists, weights, and a split into batches."""
    rows = draw(st.integers(1, ROWS))
    n = draw(st.sampled_from([5, 8]))  # few shapes: each one compiles
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 4, (rows, n)).astype(np.float64)  # many ties
    labels = rng.integers(0, 3, (rows, n)).astype(np.float64)
    where = rng.random((rows, n)) < 0.85
    where[rng.random(rows) < 0.15] = False  # some lists are all padding
    weights = rng.random(rows) * 3 if draw(st.booleans()) else None
    cuts = sorted(draw(st.lists(st.integers(0, rows), max_size=5)))
    bounds = [0, *cuts, rows]
    return scores, labels, where, weights, list(zip(bounds[:-1], bounds[1:], strict=True))


def _stream_mean(accumulator, scores, labels, where, weights, batches):
    state = accumulator.init()
    for start, stop in batches:
        # Lists of padding alone do not count: they fill the batch to its shape.
        state = accumulator.update(
            state,
            padded(scores[start:stop], 0),
            padded(labels[start:stop], 0),
            where=padded(where[start:stop], False),
            weights=None if weights is None else padded(weights[start:stop], 1),
        )
    return state


def all_at_once(metric, scores, labels, where, **options):
    """``metric``'s per-list values, evaluated in one padded batch."""
    values = metric(padded(scores, 0), padded(labels, 0), where=padded(where, False), **options)
    return np.asarray(values)[: len(scores)]


def _options(metric, k=None):
    cut = {"k": k} if metric.__name__ in TAKES_CUTOFF else {}
    return {**REQUIRED_OPTIONS.get(metric.__name__, {}), **cut}


def _reference_mean(values, where, weights):
    counted = where.any(-1)
    w = np.ones(len(values)) if weights is None else weights
    return np.average(np.asarray(values, np.float64)[counted], weights=w[counted])


@pytest.mark.parametrize("k", CUTOFFS)
@pytest.mark.parametrize("metric", METRICS)
@settings(max_examples=10)
@given(data=stream())
def test_any_split_gives_the_all_at_once_mean_float64(metric, k, data):
    scores, labels, where, weights, batches = data
    if not where.any() or (weights is not None and weights[where.any(-1)].sum() == 0):
        return
    accumulator = streaming.mean(metric, **_options(metric, k=k))
    state = _stream_mean(accumulator, scores, labels, where, weights, batches)
    whole = all_at_once(metric, scores, labels, where, **_options(metric, k=k))
    assert state.total.value.dtype == jnp.float64
    np.testing.assert_allclose(
        float(accumulator.compute(state)), _reference_mean(whole, where, weights), rtol=1e-12
    )
    assert int(state.count) == int(where.any(-1).sum())


# Utility's values cancel here (a mean of 0.039 from terms near 1): the
# float32 weights and products the accumulator saw moved the mean by 1.9e-6
# of itself from the float64 one, which a tolerance relative to the mean
# alone took for an error of the accumulator.
_CANCELLING = (
    np.array(
        [[3, 2, 0, 1, 3], [2, 1, 2, 1, 0], [2, 2, 3, 0, 2], [0, 1, 3, 3, 0], [0, 2, 2, 2, 1]], float
    ),
    np.array(
        [[2, 0, 1, 0, 1], [0, 0, 0, 1, 0], [1, 1, 2, 0, 1], [2, 0, 2, 2, 2], [0, 1, 0, 2, 0]], float
    ),
    np.array(
        [[1, 1, 1, 0, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 0, 1], [1, 1, 1, 1, 1]], bool
    ),
    np.array([1.0683993, 1.78590945, 1.28767916, 2.24512526, 1.03166247]),
    [(0, 5)],
)


@pytest.mark.parametrize("metric", METRICS)
@settings(max_examples=10)
@given(data=stream())
@example(data=_CANCELLING)
def test_float32_accumulator_is_within_four_ulp_of_the_exact_mean(metric, data):
    scores, labels, where, weights, batches = data
    if not where.any():
        return
    with jax.enable_x64(False):
        options = _options(metric)
        accumulator = streaming.mean(metric, **options)
        s32, y32 = scores.astype(np.float32), labels.astype(np.float32)
        w32 = None if weights is None else weights.astype(np.float32)
        state = _stream_mean(accumulator, s32, y32, where, w32, batches)
        mean = float(accumulator.compute(state))
        assert state.total.value.dtype == jnp.float32
        # The exact weighted mean of the float32 values the accumulator saw.
        numerator, denominator = [], []
        for start, stop in batches:
            values = all_at_once(
                metric, s32[start:stop], y32[start:stop], where[start:stop], **options
            )
            counted = where[start:stop].any(-1)
            w = np.ones(stop - start, np.float32) if w32 is None else w32[start:stop]
            numerator += [float(x) for x in (w * values)[counted]]  # float32 products
            denominator += [float(x) for x in w[counted]]
        if math.fsum(denominator) == 0:
            assert math.isnan(mean)
            return
        exact = math.fsum(numerator) / math.fsum(denominator)
        assert abs(mean - exact) <= 4 * F32_ULP * abs(exact)
        # The whole batch at once, in float64 and weighted by the float32
        # weights the accumulator saw. Each float32 product is off by half an
        # ulp of its own size, which a mean of cancelling values (utility's)
        # magnifies: the tolerance is relative to the mean of the magnitudes.
        whole = np.asarray(all_at_once(metric, s32, y32, where, **options), np.float64)
        seen = None if w32 is None else w32.astype(np.float64)
        magnitude = _reference_mean(np.abs(whole), where, seen)
        reference = _reference_mean(whole, where, seen)
        np.testing.assert_allclose(mean, reference, rtol=1e-6, atol=1e-6 * magnitude)


def test_compensated_sum_is_exact_where_a_plain_float32_sum_drifts():
    values = np.random.default_rng(0).random(100_003).astype(np.float32)
    with jax.enable_x64(False):
        total = jax.jit(streaming._sum)(jnp.asarray(values))
        naive = np.float32(0)
        for chunk in np.array_split(values, 100):  # a running float32 total over batches
            naive = np.float32(naive + chunk.sum(dtype=np.float32))
    exact = Fraction(0)
    for x in values:
        exact += Fraction(float(x))
    compensated = Fraction(float(total.value)) + Fraction(float(total.error))
    assert abs(float(compensated - exact)) <= F32_ULP**2 * float(exact)
    assert abs(float(Fraction(float(naive)) - exact)) > 16 * F32_ULP**2 * float(exact)


def test_two_sum_is_error_free_under_jit():
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 8, 1000)).astype(np.float32)
    b = (rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 8, 1000)).astype(np.float32)
    total, error = jax.jit(streaming._two_sum)(a, b)
    for x, y, s, e in zip(a, b, np.asarray(total), np.asarray(error), strict=True):
        assert Fraction(float(s)) + Fraction(float(e)) == Fraction(float(x)) + Fraction(float(y))


def test_a_query_without_relevant_items_counts_zero_and_all_padding_lists_do_not_count():
    mrr = streaming.mean(metrics.reciprocal_rank)
    scores = jnp.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1]])
    labels = jnp.array([[1, 0], [0, 0], [1, 0]])
    where = jnp.array([[True, True], [True, True], [False, False]])
    state = mrr.update(mrr.init(), scores, labels, where=where)
    assert int(state.count) == 2
    assert float(mrr.compute(state)) == 0.5


def test_update_under_jit_and_scan_matches_eager():
    rng = np.random.default_rng(2)
    scores = rng.integers(0, 5, (6, 8, 12)).astype(np.float64)
    labels = rng.integers(0, 3, (6, 8, 12)).astype(np.float64)
    weights = rng.random((6, 8))
    ndcg = streaming.mean(metrics.ndcg, k=5)
    eager = ndcg.init()
    for batch in range(6):
        eager = ndcg.update(eager, scores[batch], labels[batch], weights=weights[batch])

    def step(state, batch):
        s, y, w = batch
        return ndcg.update(state, s, y, weights=w), None

    scanned, _ = jax.jit(lambda xs: jax.lax.scan(step, ndcg.init(), xs))((scores, labels, weights))
    jitted = jax.jit(ndcg.update)(ndcg.init(), scores[0], labels[0], weights=weights[0])
    first = ndcg.update(ndcg.init(), scores[0], labels[0], weights=weights[0])
    # Inside jit and scan XLA fuses the metric differently, so per-list values
    # may move by an ulp; the means agree to float64 round-off.
    assert int(scanned.count) == int(eager.count) == 48
    np.testing.assert_allclose(ndcg.compute(scanned), ndcg.compute(eager), rtol=1e-15)
    np.testing.assert_allclose(ndcg.compute(jitted), ndcg.compute(first), rtol=1e-15)


def test_merge_of_halves_equals_the_whole_tree_for_power_of_two_blocks():
    rng = np.random.default_rng(3)
    scores, labels = rng.random((16, 10)), rng.integers(0, 3, (16, 10)).astype(float)
    dcg = streaming.mean(metrics.dcg)
    whole = dcg.update(dcg.init(), scores, labels)
    halves = dcg.merge(
        dcg.update(dcg.init(), scores[:8], labels[:8]),
        dcg.update(dcg.init(), scores[8:], labels[8:]),
    )
    # Per-list values do not depend on the batch size here (same shape per row).
    per_list = np.asarray(metrics.dcg(scores, labels))
    assert np.array_equal(per_list[:8], np.asarray(metrics.dcg(scores[:8], labels[:8]))), (
        "precondition: the metric gives the same bits on half batches"
    )
    for x, y in zip(jax.tree.leaves(whole), jax.tree.leaves(halves), strict=True):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()
    assert dcg.merge(dcg.init(), whole) == whole


def test_collection_updates_every_member():
    evaluation = streaming.collection(
        {
            "ndcg@3": streaming.mean(metrics.ndcg, k=3),
            "mrr": streaming.mean(metrics.reciprocal_rank),
        }
    )
    rng = np.random.default_rng(4)
    scores, labels = rng.random((5, 6)), rng.integers(0, 2, (5, 6)).astype(float)
    state = evaluation.update(evaluation.init(), scores, labels)
    state = evaluation.merge(state, evaluation.init())
    result = evaluation.compute(state)
    np.testing.assert_allclose(
        result["ndcg@3"], metrics.ndcg(scores, labels, k=3).mean(), rtol=1e-12
    )
    np.testing.assert_allclose(
        result["mrr"], metrics.reciprocal_rank(scores, labels).mean(), rtol=1e-12
    )


def test_empty_and_zero_weight_states_compute_nan():
    dcg = streaming.mean(metrics.dcg)
    assert math.isnan(float(dcg.compute(dcg.init())))
    state = dcg.update(dcg.init(), jnp.ones((2, 3)), jnp.ones((2, 3)), weights=jnp.zeros(2))
    assert int(state.count) == 2 and math.isnan(float(dcg.compute(state)))


def test_a_nan_score_makes_the_mean_nan():
    dcg = streaming.mean(metrics.dcg)
    update = jax.jit(dcg.update)  # under jit the metric returns NaN instead of raising
    state = update(dcg.init(), jnp.array([[jnp.nan, 1.0], [1.0, 2.0]]), jnp.ones((2, 2)))
    assert math.isnan(float(dcg.compute(state)))


def test_refusals():
    with pytest.raises(InvalidParameterError, match="'k' parameter of ndcg"):
        streaming.mean(metrics.ndcg, k=0)
    with pytest.raises(TypeError, match="callable metric"):
        streaming.mean("ndcg")
    with pytest.raises(TypeError, match="accumulators from streaming.mean"):
        streaming.collection({"ndcg": metrics.ndcg})
    summed = streaming.mean(lambda s, y, *, where=None: metrics.dcg(s, y, where=where).sum())
    with pytest.raises(ValueError, match=r"one value per list, shape \(2,\)"):
        summed.update(summed.init(), jnp.ones((2, 3)), jnp.ones((2, 3)))
    dcg = streaming.mean(metrics.dcg)
    with pytest.raises(ValueError, match="negative weights"):
        dcg.update(dcg.init(), jnp.ones((2, 3)), jnp.ones((2, 3)), weights=jnp.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="per-list weights of shape"):
        dcg.update(dcg.init(), jnp.ones((2, 3)), jnp.ones((2, 3)), weights=jnp.ones(3))


def test_building_an_accumulator_starts_no_backend():
    # jax.distributed.initialize must come before JAX starts its backend; a
    # training script builds its accumulators at import (as
    # examples/distributed_training.py does), and their check of the options
    # traces the metric. A fresh process, since this one's backend runs.
    import os
    import subprocess
    import sys
    from pathlib import Path

    child = (
        "from jax._src import xla_bridge\n"
        "from lodestar import metrics, streaming\n"
        "streaming.collection({'ndcg@10': streaming.mean(metrics.ndcg, k=10),\n"
        "    'mrr': streaming.mean(metrics.reciprocal_rank),\n"
        "    'map': streaming.mean(metrics.average_precision)})\n"
        "print(xla_bridge.backends_are_initialized())\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
