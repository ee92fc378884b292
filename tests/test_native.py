"""lodestar's compiled CPU kernels (``lodestar._native``, decision 0043) and their fallback.

* Each kernel against a NumPy oracle (tests/oracles.py) and against the XLA
  route it replaces, over every dtype the engine accepts, with padding, NaN,
  signed zeros, infinities, integer extremes, float64 values that only
  float64 tells apart, heavy ties, one-item and empty lists, several batch
  axes and ``vmap``. Counts and indices must be equal; values bitwise (as
  ``==`` sees them: -0.0 and 0.0 are one value).
* ``LODESTAR_KERNELS``: ``xla`` ranks with XLA's sort and the same values,
  silently; an unknown value says so once and falls back. In the test
  environment the kernels must be built and loaded.
* Many Python threads running jitted steps that hold the kernels finish
  (slow tier, tests/native_threads_check.py).
* ``lodestar.export``: a program holding the kernels exports with a
  symbolic batch, serializes, and gives identical values in a fresh process;
  it lowers for CPU and CUDA at once; plain ``jax.export.export`` refuses it.

NaN scores: every route ranks them somewhere, but a list holding one is NaN
for every metric (decision 0003), so only the kernels' own documented order
is checked (NumPy's: NaN ranks first, all NaNs one block), not agreement
with XLA's.

Subnormal scores: the kernels order floats by their bits, so they tell a
subnormal from 0.0 as NumPy (the command line's fallback) and trec_eval do.
XLA:CPU's threads treat subnormals as zero, and the engine's
:func:`_ranking.rankable` merges them into 0.0 before any route, so within a
metric every route agrees; the kernels are compared with XLA on those scores.
"""

import functools
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import tiers
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lodestar
from lodestar import _gains, _native, _ranking, _registry, metrics

TESTS = Path(__file__).resolve().parent
SRC = str(TESTS.parent / "src")
# A child imports this checkout's lodestar, and tests/children.py for the
# suite's compilation cache.
CHILD_PATH = os.pathsep.join([SRC, str(TESTS)])

INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
DTYPES = [*FLOATS, *INTEGERS, np.bool_]

# The kernels' own cases: the small-k selection buffer (k <= 64) and the
# partial sort above it, insertion-sorted short rows (n <= 24) and std::sort;
# averaged ties of whole rows counted pairwise up to COUNTED_MAX items, sorted
# past it.
SHORT_K, LONG_K = 3, 66
COUNTED_MAX = importlib.import_module("lodestar._kernels").COUNTED_ROW_MAX


def _pool(dtype):
    """Values that stress an order-preserving key: extremes, zeros, neighbours, ties."""
    if dtype == np.bool_:
        return np.array([False, True])
    if np.issubdtype(dtype, np.floating):
        info = np.finfo(dtype)
        values = [info.min, info.max, -np.inf, np.inf, 0.0, -0.0, 1.0, -1.5, info.tiny]
        values += [-info.tiny, info.smallest_subnormal, 1.0, 1.0, 0.0]
        if dtype == np.float64:
            # Distinct only beyond float32's resolution: must not tie.
            values += [1.0 + 2.0**-40, 1.0 - 2.0**-40]
        return np.array(values, dtype)
    info = np.iinfo(dtype)
    values = [info.min, info.max, 0, 1, 1, info.max - 1, info.min + 1]
    return np.array(values + ([-1, -1] if info.min < 0 else [2, 2]), dtype)


def _lists(dtype, shape, seed):
    """Tied scores of ``dtype`` and a padding mask: a row of padding only, a row without."""
    rng = np.random.default_rng(seed)
    scores = rng.choice(_pool(dtype), size=shape)
    valid = rng.random(shape) < 0.8
    valid.reshape(-1, shape[-1])[0] = False
    valid.reshape(-1, shape[-1])[-1] = True
    return scores, valid


def _kernels(scores, valid, label):
    """Every kernel's output, named by ``label`` and kernel."""
    n = scores.shape[-1]
    out = {}
    for ignore_ties in (False, True):
        out[f"{label} blocks {ignore_ties}"] = _native.tie_blocks(
            scores, valid, ignore_ties=ignore_ties
        )
    out[f"{label} order"] = _native.stable_argsort(scores)
    for k in {min(SHORT_K, n), min(LONG_K, n)}:
        out[f"{label} largest {k}"] = _native.largest(scores, k)
        if k < n:
            out[f"{label} top blocks {k}"] = _native.top_tie_blocks(scores, valid, k=k)
    if jnp.issubdtype(scores.dtype, jnp.floating):
        out[f"{label} gains"] = _native.descending_gains(scores, valid)
    return out


def _kernels_and_xla(scores, valid):
    """In one program: the kernels on ``scores`` ("native") and on the engine's
    :func:`_ranking.rankable` scores ("ranked"), and XLA's counterparts of the
    latter ("xla").
    """
    ranked = _ranking.rankable(scores)
    n = scores.shape[-1]
    out = {**_kernels(scores, valid, "native"), **_kernels(ranked, valid, "ranked")}
    for ignore_ties in (False, True):
        out[f"xla blocks {ignore_ties}"] = tuple(_ranking.xla_sort(ranked, valid, ignore_ties))
    out["xla order"] = jnp.argsort(ranked, axis=-1, stable=True)
    for k in {min(SHORT_K, n), min(LONG_K, n)}:
        top = jax.lax.top_k(ranked, k)[0]
        out[f"xla largest {k}"] = (top, jnp.sum(ranked == top[..., k - 1 :], axis=-1))
        if k < n:
            out[f"xla top blocks {k}"] = tuple(_ranking._topk(ranked, valid, k, False))
    if jnp.issubdtype(scores.dtype, jnp.floating):
        out["xla gains"] = _gains._xla_sorted_values(ranked, valid)
    return out


def _flushed(values):
    """``values`` with subnormals as 0.0: the sorted gains compare floats on XLA's threads."""
    values = np.asarray(values)
    if not np.issubdtype(values.dtype, np.floating):
        return values
    return np.where(np.abs(values) < np.finfo(values.dtype).tiny, 0, values)


def _check_against_numpy(found, scores, valid):
    n = scores.shape[-1]
    for ignore_ties in (False, True):
        want = oracles.engine_blocks(scores, valid, ignore_ties)
        for got, expected in zip(found[f"native blocks {ignore_ties}"], want, strict=True):
            np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(found["native order"], np.argsort(scores, -1, kind="stable"))
    for k in {min(SHORT_K, n), min(LONG_K, n)}:
        top, count = found[f"native largest {k}"]
        want_top, want_count = oracles.largest(scores, k)
        assert top.dtype == scores.dtype
        np.testing.assert_array_equal(top, want_top)
        np.testing.assert_array_equal(count, want_count)
        if k < n:
            # Exact for the blocks starting before k; every other real item
            # below the top (k, 1), padding (n, 1).
            above, tied = oracles.engine_blocks(scores, valid, ignore_ties=False)
            below = valid & (above >= k)
            want = (np.where(below, k, above), np.where(below, 1, tied))
            for got, expected in zip(found[f"native top blocks {k}"], want, strict=True):
                np.testing.assert_array_equal(got, expected)
    if "native gains" in found:
        assert found["native gains"].dtype == scores.dtype
        np.testing.assert_array_equal(
            _flushed(found["native gains"]), oracles.descending_gains(_flushed(scores), valid)
        )


def _check_against_xla(found):
    for name in found:
        if name.startswith("ranked"):
            got, want = found[name], found[name.replace("ranked", "xla")]
            for got_part, want_part in zip(
                jax.tree.leaves(got), jax.tree.leaves(want), strict=True
            ):
                np.testing.assert_array_equal(got_part, want_part, name)


# XLA's sorts compile slowly: its route is compared on these dtypes, which
# take every kind of key (32 and 64 bits, float, signed, unsigned, bool); the
# kernels alone, which compile in no time, on every dtype.
XLA_COMPARED = (np.float32, np.float64, np.int8, np.uint64, np.bool_)


@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
def test_every_kernel_agrees_with_numpy_and_with_xla(dtype):
    # Four batch shapes in one program: two batch axes of 70 items (std::sort,
    # both selection paths), 11 items (insertion sort), one item, and rows
    # too long for counting their blocks pairwise.
    shapes = [(2, 3, 70), (5, 11), (4, 1), (2, COUNTED_MAX + 1)]
    cases = [_lists(dtype, shape, seed) for seed, shape in enumerate(shapes)]
    with_xla = dtype in XLA_COMPARED
    program = _kernels_and_xla if with_xla else functools.partial(_kernels, label="native")
    found = jax.jit(lambda cases: [program(s, v) for s, v in cases])(cases)
    for (scores, valid), outputs in zip(cases, found, strict=True):
        _check_against_numpy(outputs, scores, valid)
        if with_xla:
            _check_against_xla(outputs)


def _weighted_sum_oracle(scores, values, valid, table):
    """``sum_i values[i] * mean(table over i's block)`` per list, from the NumPy oracle's blocks."""
    above, tied = oracles.engine_blocks(scores, valid, ignore_ties=False)
    cumulative = np.concatenate([[0.0], np.cumsum(table)])
    n = scores.shape[-1]
    start, stop = np.minimum(above, n), np.minimum(above + tied, n)
    means = (cumulative[stop] - cumulative[start]) / tied
    return np.sum(np.where(valid, values * means, 0), axis=-1)


@pytest.mark.parametrize("n", [70, COUNTED_MAX + 1])
@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
def test_the_weighted_sum_kernel_averages_ties_as_the_oracle_does(dtype, n):
    # One pass per row: with a cut-off the k largest keys in a buffer (k <= 64)
    # or a partial sort (k > 64), the k-th value's run counted over the row;
    # without one, the blocks of the items with a non-zero value counted
    # pairwise (n <= 256) or the real items sorted. Every key kind, padding,
    # ties, and values of 0.
    scores, valid = _lists(dtype, (6, n), seed=3)
    rng = np.random.default_rng(4)
    for value_dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        values = rng.random(scores.shape).astype(value_dtype)
        values[rng.random(scores.shape) < 0.3] = 0
        discounts = 1 / np.log2(np.arange(2, n + 2))
        for k in (0, 1, SHORT_K, 10, LONG_K, n - 1, n):
            table = np.where(np.arange(n) < (k or n), discounts, 0).astype(value_dtype)
            cumulative = np.concatenate([[0], np.cumsum(table)]).astype(value_dtype)
            found = _native.weighted_sum(scores, values, valid, cumulative, k)
            assert found.dtype == value_dtype
            want = _weighted_sum_oracle(scores, values.astype(np.float64), valid, table)
            np.testing.assert_allclose(found, want, rtol=rtol, atol=rtol, err_msg=f"k={k}")


def _block_totals_oracle(values, above):
    """Per item, ``values`` summed over the blocks above its own and over its own, in float64."""
    n = values.shape[-1]
    bins = np.minimum(above, n)
    within = np.zeros(values.shape[:-1] + (n + 1,))
    for row in np.ndindex(values.shape[:-1]):
        np.add.at(within[row], bins[row], values[row])
    earlier = np.cumsum(within, axis=-1) - within
    return np.take_along_axis(earlier, bins, -1), np.take_along_axis(within, bins, -1)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64], ids=lambda d: d.__name__)
def test_the_block_totals_kernel_sums_each_block_and_the_blocks_above(dtype, route):
    # The blocks of tied scores with padding (its block is named n, after
    # every real one), as the engine counts them; whole-number values, so that
    # every order of adding them gives the same sums. Through the engine's
    # block_totals on both routes, and the kernel itself against XLA's.
    scores, valid = _lists(np.float32, (2, 3, 70), seed=5)
    above, tied = oracles.engine_blocks(scores, valid, ignore_ties=False)
    values = np.random.default_rng(6).integers(-3, 4, scores.shape).astype(dtype)
    want = _block_totals_oracle(values, above)
    blocks = _ranking.TieBlocks(jnp.asarray(above), jnp.asarray(tied))
    found = jax.jit(_ranking.block_totals)(values, blocks)
    pairs = [found]
    if route == "native":
        pairs.append(jax.jit(_native.block_totals)(values, above))
        pairs.append(jax.jit(_ranking._xla_block_totals)(values, above))
    for pair in pairs:
        for got, expected in zip(pair, want, strict=True):
            assert got.dtype == dtype
            np.testing.assert_array_equal(got, expected.astype(dtype))
    if dtype != np.int32:
        # A NaN value is NaN in its own block's total and in the totals above
        # every block below it, and in no block above it (XLA's route, which
        # subtracts a block from a running total, also in its own block's
        # total above).
        values[0, 0, 5] = np.nan
        above_nan, within_nan = jax.jit(_ranking.block_totals)(values, blocks)
        row, a = above[0, 0], above[0, 0, 5]
        np.testing.assert_array_equal(np.isnan(within_nan[0, 0]), row == a)
        assert np.all(np.isnan(above_nan[0, 0][row > a]))
        assert not np.any(np.isnan(above_nan[0, 0][row < a]))
        if route == "native":
            assert not np.any(np.isnan(above_nan[0, 0][row == a]))


def _tied_graded_lists(dtype, shape, seed):
    """Scores with one decimal (blocks of about n/11), real-valued gains, padding, unjudged items.

    The first list ties every item: 40 items with six distinct non-zero
    gains, whose subset sums outgrow the 16 that G keeps exactly.
    """
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(shape), 1).astype(dtype)
    scores.reshape(-1, shape[-1])[0] = 0.5
    labels = rng.choice([0.0, 0.0, 1.0, 2.0, 3.0, 0.25, 4.75], shape).astype(dtype)
    where = rng.random(shape) < 0.9
    where.reshape(-1, shape[-1])[0] = True
    judged = rng.random(shape) < 0.85
    return scores, labels, where, judged


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_the_normalized_gain_kernel_equals_xla_position_by_position(dtype):
    # The kernel takes each row's blocks in turn; XLA's route every position
    # of the batch at once, building laws of subset sums only for lists that
    # mix gains in a block. Both pool the same sums past `atoms`, so their
    # terms, pooled spreads and costs agree to round-off, at every cut-off
    # (one per row) and number of atoms.
    scores, labels, where, _ = _tied_graded_lists(dtype, (2, 20, 40), seed=31)
    above, tied = oracles.engine_blocks(scores, where, ignore_ties=False)
    gains = np.where(where, labels, 0).astype(dtype)
    ideal = -np.sort(-gains, axis=-1)
    ideal[..., -3:] = 0  # an ideal shorter than the lists
    k = np.random.default_rng(32).choice([1, 3, 7, 40, 41], (2, 20)).astype(np.int32)
    operands = (gains, above, tied, where, ideal, k)
    tolerance = {"rtol": 1e-12, "atol": 1e-13} if dtype == np.float64 else {"rtol": 2e-6}
    pooled_any = False
    for atoms in (1, 3, 16):
        native = jax.jit(functools.partial(_native.gain_sums, atoms=atoms))(*operands)
        xla = jax.jit(functools.partial(_gain_sums_of_xla, atoms=atoms))(*operands)
        for got, expected in zip(native, xla, strict=True):
            assert got.dtype == dtype and got.shape == (2, 20)
            np.testing.assert_allclose(got, expected, **tolerance)
        pooled_any = pooled_any or bool(np.any(np.asarray(native[1]) > 0))
    assert pooled_any  # the bound's spread was exercised, not only exact laws
    batched = jax.vmap(functools.partial(_native.gain_sums, atoms=16))(*operands)
    whole = jax.jit(functools.partial(_native.gain_sums, atoms=16))(*operands)
    for got, expected in zip(batched, whole, strict=True):
        np.testing.assert_array_equal(got, expected)


def _gain_sums_of_xla(*operands, atoms):
    from lodestar.metrics import _normalized_gain

    return _normalized_gain._xla_gain_sums(*operands, order=None, atoms=atoms)


def test_the_normalized_gain_kernel_gives_nan_for_blocks_it_cannot_lay_out():
    # Counts that no ranking gives (a block running past the list, two sizes
    # for one block, more items than its size) are never read out of place:
    # that row is NaN, the others are computed.
    gains = np.ones((4, 5), np.float32)
    valid = np.ones((4, 5), bool)
    above = np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 3], [0, 0, 2, 3, 4], [0, 0, 0, 3, 4]])
    tied = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 9], [2, 3, 1, 1, 1], [2, 2, 2, 1, 1]])
    k = np.full(4, 5, np.int32)
    found, pooled, cost = jax.jit(functools.partial(_native.gain_sums, atoms=16))(
        gains, above.astype(np.int32), tied.astype(np.int32), valid, gains, k
    )
    np.testing.assert_array_equal(np.isnan(found), [False, True, True, True])
    np.testing.assert_array_equal(np.isnan(pooled), [False, True, True, True])
    np.testing.assert_array_equal(cost, np.full(4, 5.0))
    assert float(found[0]) == pytest.approx(5.0)  # every term 1/log2(2 + p - p)


def test_forward_derivatives_in_the_labels_are_xla_s_on_the_kernels_route(monkeypatch):
    # Totals over tie blocks (NDCG at relevant positions) and G's kernel carry
    # XLA's route as their derivative rule: jvp in the labels gives the same
    # values and tangents on both routes. (Their loops have traced lengths,
    # which reverse mode refuses on every route.)
    rng = np.random.default_rng(34)
    scores = np.round(rng.random((6, 30)), 1)
    labels = rng.integers(0, 4, (6, 30)).astype(np.float64)
    tangent = rng.random((6, 30))
    functions = (metrics.ndcg_at_relevant, metrics.normalized_gain)
    results = {}
    for native in (True, False):
        jax.clear_caches()
        monkeypatch.setattr(_native, "applies", lambda native=native: native)
        results[native] = [
            jax.jvp(lambda y, f=f: f(scores, y), (labels,), (tangent,)) for f in functions
        ]
    jax.clear_caches()
    for (value, derivative), (expected_value, expected) in zip(*results.values(), strict=True):
        assert np.abs(np.asarray(expected)).max() > 1e-3  # the labels move the value
        np.testing.assert_allclose(value, expected_value, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(derivative, expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.__name__)
def test_normalized_gain_is_the_same_on_both_routes(monkeypatch, dtype):
    # Through the metric, with judged items, an ideal of its own and
    # ignore_ties: the kernels' route against XLA's (a new trace for each).
    scores, labels, where, judged = _tied_graded_lists(dtype, (30, 40), seed=33)
    ideal_labels = np.concatenate([labels, np.full((30, 5), 2.0, dtype)], axis=-1)
    calls = [
        dict(k=k, ignore_ties=ignore_ties, judged=judged, **extra)
        for k in (None, 1, 10)
        for ignore_ties in (False, True)
        for extra in ({}, {"ideal_labels": ideal_labels})
    ]
    results = {}
    for native in (True, False):
        jax.clear_caches()
        monkeypatch.setattr(_native, "applies", lambda native=native: native)
        results[native] = [
            np.asarray(metrics.normalized_gain(scores, labels, where=where, **call))
            for call in calls
        ]
    jax.clear_caches()
    tolerance = {"rtol": 1e-12, "atol": 1e-14} if dtype == np.float64 else {"rtol": 2e-6}
    for got, expected in zip(results[True], results[False], strict=True):
        np.testing.assert_allclose(got, expected, **tolerance)


def _ideal_oracle(values, valid, table):
    """Each row's real values, negative ones as 0, largest first, weighted by ``table``."""
    positive = np.where(valid, np.maximum(values, 0), -np.inf)
    ordered = -np.sort(-positive, axis=-1)  # NaN last in the sort, first here
    ordered = np.where(np.isneginf(ordered), 0, ordered)
    return np.sum(ordered * table, axis=-1)


def _ideal_values(kind, shape, rng):
    if kind == "graded":  # counted into a histogram
        return rng.integers(0, 5, shape).astype(np.float64)
    if kind == "exp2 gains":  # 2^label - 1: still counted
        return 2.0 ** rng.integers(0, 6, shape) - 1
    if kind == "negative":  # counted: a negative gain is 0 in the ideal
        return rng.integers(-3, 4, shape).astype(np.float64)
    if kind == "large":  # 64 and above: ranked, not counted
        return rng.integers(0, 70, shape).astype(np.float64)
    if kind == "fractions":
        return np.round(rng.normal(size=shape), 1)
    values = rng.integers(0, 5, shape).astype(np.float64)
    values[1, 3] = np.nan  # one NaN sends its row to the ranked route
    return values


@pytest.mark.parametrize(
    "kind", ["graded", "exp2 gains", "negative", "large", "fractions", "with NaN"]
)
@pytest.mark.parametrize("score_dtype", [np.float32, np.float64, np.int8], ids=lambda d: d.__name__)
def test_the_fused_ideal_is_the_dcg_of_the_values_ranked_by_themselves(kind, score_dtype):
    # The kernel that ranks a row for its DCG also gives the ideal's: counted
    # when every real value is a small whole number, else ranked. Rows of
    # lengths that do and do not fill the vector steps, with padding.
    rng = np.random.default_rng(8)
    for n in (70, 7):
        scores, valid = _lists(score_dtype, (6, n), seed=5)
        values = _ideal_values(kind, (6, n), rng)
        discounts = 1 / np.log2(np.arange(2, n + 2))
        for value_dtype, rtol in ((np.float64, 1e-13), (np.float32, 1e-6)):
            for k in (0, 1, SHORT_K, 10, n - 1, n):
                table = np.where(np.arange(n) < (k or n), discounts, 0).astype(value_dtype)
                cumulative = np.concatenate([[0], np.cumsum(table)]).astype(value_dtype)
                typed = values.astype(value_dtype)
                found, ideal = _native.weighted_sum_and_ideal(scores, typed, valid, cumulative, k)
                assert found.dtype == ideal.dtype == value_dtype
                alone = _native.weighted_sum(scores, typed, valid, cumulative, k)
                np.testing.assert_array_equal(found, alone)
                want = _ideal_oracle(values, valid, table.astype(np.float64))
                np.testing.assert_allclose(ideal, want, rtol=rtol, atol=rtol, err_msg=f"{n=} {k=}")
                assert np.isnan(ideal).any() == (kind == "with NaN")


@pytest.mark.parametrize(
    "dtype", tiers.params(FLOATS, default=(np.float64,), ids=["float32", "float64"])
)
def test_kernels_rank_nan_as_numpy_sorts_it(dtype):
    # NaN of either sign: last in the ascending argsort, first and one block
    # in the descending counts and selection (with a k-th count of 0), after
    # the padding's zeros in the sorted gains.
    # Rows whose blocks are counted pairwise, and rows sorted.
    for n in (30, COUNTED_MAX + 10):
        scores, valid = _lists(dtype, (6, n), seed=4)
        nan = np.random.default_rng(4).random(scores.shape) < 0.2
        scores[nan] = np.where(np.arange(nan.sum()) % 2, np.nan, -np.nan)
        scores[1, :SHORT_K] = np.nan  # the k-th largest is NaN
        found = jax.jit(_kernels_and_xla)(scores, valid)
        _check_against_numpy(found, scores, valid)
        assert found[f"native largest {SHORT_K}"][1][1] == 0


_drawn_lists_program = jax.jit(_kernels_and_xla)


@settings(max_examples=5)
@given(
    hnp.arrays(
        np.float64,
        (3, 40),
        elements=st.sampled_from([0.0, -0.0, 0.25, 1.0, 1.0 + 2.0**-40, -np.inf, np.inf]),
    ),
    hnp.arrays(np.bool_, (3, 40)),
)
def test_tie_blocks_and_order_agree_on_drawn_lists(scores, valid):
    # One shape, so that the examples share one compiled program.
    found = _drawn_lists_program(scores, valid)
    _check_against_numpy(found, scores, valid)
    _check_against_xla(found)


def test_kernels_under_vmap_equal_the_batched_call():
    scores, valid = _lists(np.float32, (3, 4, 50), seed=9)
    batched = jax.jit(_kernels_and_xla)(scores, valid)
    mapped = jax.jit(jax.vmap(jax.vmap(_kernels_and_xla)))(scores, valid)
    for got, want in zip(jax.tree.leaves(mapped), jax.tree.leaves(batched), strict=True):
        np.testing.assert_array_equal(got, want)
    # A mask shared by the batch (vmap over the scores only) broadcasts.
    shared = jax.jit(jax.vmap(lambda s: _native.tie_blocks(s, valid[0, 0], ignore_ties=False)))
    want = oracles.engine_blocks(scores[:, 0], np.broadcast_to(valid[0, 0], (3, 50)), False)
    for got, expected in zip(shared(scores[:, 0]), want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_rows_shared_over_xla_threads_count_as_one_thread_would():
    # 40 x 600 items make two blocks of rows (csrc/kernels.cc, kItemsPerBlock),
    # one of them run on a thread of XLA's pool: each thread must compare as
    # the calling thread does, subnormals included.
    scores, valid = _lists(np.float32, (40, 600), seed=13)
    for ignore_ties in (False, True):
        got = jax.jit(functools.partial(_native.tie_blocks, ignore_ties=ignore_ties))(scores, valid)
        want = oracles.engine_blocks(scores, valid, ignore_ties)
        for got_part, want_part in zip(got, want, strict=True):
            np.testing.assert_array_equal(got_part, want_part)


def test_empty_lists_and_batches():
    # The engine never ranks an empty list (tie_blocks returns early); the
    # kernels that are reached with one, and an empty batch, return nothing.
    for shape in [(2, 0), (0, 5)]:
        scores = np.zeros(shape, np.float32)
        valid = np.ones(shape, bool)
        above, tied = jax.jit(functools.partial(_native.tie_blocks, ignore_ties=False))(
            scores, valid
        )
        assert above.shape == tied.shape == shape
        assert jax.jit(_native.stable_argsort)(scores).shape == shape
        assert jax.jit(_native.descending_gains)(scores, valid).shape == shape


def test_metrics_of_empty_lists_are_zero(route):
    for k in (None, 5):
        for metric in (metrics.ndcg, metrics.average_precision):
            got = metric(np.zeros((3, 0)), np.zeros((3, 0)), k=k)
            np.testing.assert_array_equal(got, np.zeros(3))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16], ids=["float16", "bfloat16"])
def test_half_precision_scores_and_labels_rank_as_float32(dtype):
    # rankable() turns half floats into float32 before any kernel; the gains
    # of half-float labels are float32 too (half-float gains on XLA's route:
    # tests/test_oracle.py). 600 items take the native sort
    # (over 512), the sorted ideal gains (33 or more) and, with k, the top-k
    # selection.
    rng = np.random.default_rng(12)
    scores = jnp.asarray(rng.choice([0.5, 1.0, 1.0, 2.0, -0.0, 0.0], (4, 600)), dtype)
    labels = jnp.asarray(rng.integers(0, 4, (4, 600)), dtype)
    for k in (None, 10):
        got = metrics.ndcg(scores, labels, k=k)
        want = metrics.ndcg(scores.astype(jnp.float32), labels.astype(jnp.float32), k=k)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_kernels_are_loaded_in_the_test_environment():
    # CI builds the extension: an unbuilt or unloadable one must fail here,
    # not pass every other test on the fallback.
    if os.environ.get(_native.ENVIRONMENT, "").strip().lower() == "xla":
        pytest.skip(f"{_native.ENVIRONMENT}=xla chooses XLA's sort")
    assert _native.refusal() is None
    assert _native.loaded()
    assert _native.applies()


def test_without_a_cpu_backend_the_kernels_are_unused_without_a_note(monkeypatch):
    # JAX_PLATFORMS=cuda leaves no CPU to run them on: nothing is refused, so
    # nothing is said (a note there would blame kernels that never apply).
    def local_devices(*args, backend=None, **kwargs):
        if backend == "cpu":
            raise RuntimeError("Unknown backend cpu")
        return jax.devices()

    notes = []
    monkeypatch.setattr(_native, "_state", None)
    monkeypatch.setattr(_native, "note", notes.append)
    monkeypatch.setattr(jax, "local_devices", local_devices)
    assert not _native.loaded()
    assert _native.refusal() is None
    assert notes == []


# --- the environment switch, in fresh processes -------------------------------------

# Writes each measure of KEYS on 600-item tied float64 lists,
# with k=10 where a measure takes it, and every warning raised, to ARGV[1].
_SWITCH_CHILD = textwrap.dedent(
    """
    import json, sys, warnings
    import jax
    jax.config.update("jax_enable_x64", True)
    import children
    children.use_the_suite_compilation_cache()
    import numpy as np
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from lodestar import _native, _registry
        rng = np.random.default_rng(0)
        scores = np.round(rng.random((6, 600)), 2)
        labels = rng.integers(0, 3, (6, 600)).astype(np.float64)
        values = {}
        for key in KEYS:
            entry = _registry.MEASURES[key]
            for k in ([None, 10] if entry.cutoff else [None]):
                options = {**entry.required_options, **({} if k is None else {"k": k})}
                values[f"{key}@{k}"] = np.asarray(entry.function(scores, labels, **options)).tolist()
    warned = [f"{w.category.__name__}: {w.message}" for w in caught]
    json.dump({"values": values, "warnings": warned, "loaded": _native.loaded()},
              open(sys.argv[1], "w"))
    """
)


def _switch_values(setting, keys, out):
    env = {**os.environ, "PYTHONPATH": CHILD_PATH, _native.ENVIRONMENT: setting}
    code = _SWITCH_CHILD.replace("KEYS", repr(tuple(keys)))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(out)], env=env, stderr=subprocess.PIPE, text=True
    )


def test_the_environment_switch_chooses_xla_silently_and_refuses_unknown_values(tmp_path):
    # 600 items: the native sort's counts (over 512 items), the ideal's sorted
    # gains and, at k=10, the top-k selection; a graded measure and a count.
    keys = ("ndcg", "num_rel_ret")
    children = {s: _switch_values(s, keys, tmp_path / f"{s}.json") for s in ("xla", "bogus")}
    rng = np.random.default_rng(0)  # the children's lists
    scores = np.round(rng.random((6, 600)), 2)
    labels = rng.integers(0, 3, (6, 600)).astype(np.float64)
    for setting, child in children.items():
        _, stderr = child.communicate(timeout=240)
        assert child.returncode == 0, stderr[-4000:]
        found = json.loads((tmp_path / f"{setting}.json").read_text())
        assert not found["loaded"]
        lodestar_warnings = [w for w in found["warnings"] if "lodestar" in w]
        if setting == "xla":
            assert lodestar_warnings == [], lodestar_warnings
        else:
            assert len(lodestar_warnings) == 1, lodestar_warnings
            assert lodestar_warnings[0].startswith("RuntimeWarning: ")
            assert f"{_native.ENVIRONMENT}='bogus'" in lodestar_warnings[0]
        for name, values in found["values"].items():
            key, k = name.split("@")
            entry = _registry.MEASURES[key]
            options = {**entry.required_options, **({} if k == "None" else {"k": int(k)})}
            want = np.asarray(entry.function(scores, labels, **options))
            if entry.counts:
                np.testing.assert_array_equal(values, want, err_msg=name)
            else:
                np.testing.assert_allclose(values, want, rtol=1e-12, atol=1e-12, err_msg=name)


# --- many threads ---------------------------------------------------------------------


@pytest.mark.slow
def test_jitted_steps_from_many_threads_finish_with_the_right_values():
    env = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_CHECK_DEADLINE": "90"}
    result = subprocess.run(
        [sys.executable, str(TESTS / "native_threads_check.py"), "8", "50"],
        capture_output=True,
        text=True,
        timeout=200,
        env=env,
    )
    assert result.returncode == 0 and result.stdout.strip() == "OK", (
        result.stdout[-2000:] + result.stderr[-6000:]
    )


# --- export ---------------------------------------------------------------------------

N = 50

# Reads each serialized program (ARGV[1:], each beside a .npz of its
# arguments) in a process that has only imported lodestar.metrics, calls it
# and saves the results next to it.
_EXPORT_CHILD = textwrap.dedent(
    """
    import sys
    import jax
    jax.config.update("jax_enable_x64", True)
    import children
    children.use_the_suite_compilation_cache()
    import numpy as np
    import lodestar.metrics
    for path in sys.argv[1:]:
        with open(path, "rb") as serialized:
            exported = jax.export.deserialize(bytearray(serialized.read()))
        with np.load(path + ".npz") as arrays:
            results = exported.call(arrays["scores"], arrays["labels"])
        np.savez(path + ".out.npz", **{key: np.asarray(v) for key, v in results.items()})
    """
)


def _all_measures(keys):
    """One jitted function returning every measure in ``keys``, with k=10 where taken."""

    def step(scores, labels):
        results = {}
        for key in keys:
            entry = _registry.MEASURES[key]
            options = {**entry.required_options, **({"k": 10} if entry.cutoff else {})}
            results[key] = entry.function(scores, labels, **options)
        return results

    return jax.jit(step)


def _lists_for_export(batch=5):
    rng = np.random.default_rng(21)
    scores = np.round(rng.random((batch, N)), 1)  # ties
    labels = rng.integers(0, 4, (batch, N)).astype(np.float64)
    return scores, labels


def _export_and_compare_in_a_fresh_process(tmp_path, groups):
    (batch,) = jax.export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((batch, N), jnp.float64)
    scores, labels = _lists_for_export()
    paths, in_parent = [], []
    for number, keys in enumerate(groups):
        exported = lodestar.export(_all_measures(keys))(spec, spec)
        assert any(t in exported.mlir_module() for t in _native.TARGETS)
        path = tmp_path / f"program{number}"
        path.write_bytes(exported.serialize())
        np.savez(f"{path}.npz", scores=scores, labels=labels)
        paths.append(str(path))
        in_parent.append(exported.call(scores, labels))
    env = {**os.environ, "PYTHONPATH": CHILD_PATH}
    result = subprocess.run(
        [sys.executable, "-c", _EXPORT_CHILD, *paths],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    for path, parent in zip(paths, in_parent, strict=True):
        with np.load(path + ".out.npz") as child:  # closed here, not by the collector
            assert set(child) == set(parent)
            for key, values in parent.items():
                assert np.array_equal(child[key], np.asarray(values), equal_nan=True), key


def test_export_with_a_symbolic_batch_runs_identically_in_a_fresh_process(tmp_path):
    _export_and_compare_in_a_fresh_process(tmp_path, [("ndcg", "num_rel_ret")])


@pytest.mark.slow
def test_every_measure_exports_and_runs_identically_in_a_fresh_process(tmp_path):
    _export_and_compare_in_a_fresh_process(tmp_path, [list(_registry.MEASURES)])


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(("ndcg",), id="ndcg"),
        pytest.param(tuple(_registry.MEASURES), id="every-measure", marks=pytest.mark.slow),
    ],
)
def test_export_lowers_for_cpu_and_cuda_at_once(keys):
    (batch,) = jax.export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((batch, N), jnp.float32)
    exported = lodestar.export(_all_measures(keys), platforms=("cpu", "cuda"))(spec, spec)
    assert exported.platforms == ("cpu", "cuda")
    assert any(t in exported.mlir_module() for t in _native.TARGETS)


def test_plain_jax_export_refuses_the_kernels_which_is_why_lodestar_export_exists():
    (batch,) = jax.export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((batch, N), jnp.float32)
    step = jax.jit(lambda s, y: metrics.ndcg(s, y, k=10))
    with pytest.raises(ValueError, match="custom calls whose targets have no compatibility"):
        jax.export.export(step)(spec, spec)
