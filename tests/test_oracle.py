"""Exact metrics against the all-permutations brute force (n <= 7, every k).

Tolerance: float64, ``rtol=1e-12, atol=1e-12``; the brute force sums the same
discounts in another order, so only round-off separates the two.
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

from lodestar import _gains, _host_ranking, _native, _ranking, metrics

TOL = dict(rtol=1e-12, atol=1e-12)

# The tie average, the descending-index order and padding are checked for
# every registry measure in tests/test_measures.py; here, the options of DCG
# and NDCG that the registry sweep leaves at their defaults.


@given(
    strategies.tied_batches(),
    st.one_of(st.none(), st.integers(1, 9)),
    st.sampled_from([2.0, 10.0, np.e, 0.5]),
)
def test_dcg_is_the_mean_over_tie_breaking_orders_at_every_log_base(batch, k, log_base):
    scores, labels = batch
    expected = [
        oracles.tie_average(oracles.dcg_of_order, s, y, k=k, log_base=log_base)
        for s, y in zip(scores, labels, strict=True)
    ]
    got = metrics.dcg(scores, labels, k=k, log_base=log_base)
    np.testing.assert_allclose(got, expected, **TOL)


@given(strategies.tied_batches(), st.one_of(st.none(), st.integers(1, 9)))
def test_ndcg_with_exp2_gains_is_the_mean_over_tie_breaking_orders(batch, k):
    scores, labels = batch
    expected = [
        oracles.tie_average(oracles.ndcg_of_order, s, y, k=k, gain=lambda x: 2.0**x - 1)
        for s, y in zip(scores, labels, strict=True)
    ]
    got = metrics.ndcg(scores, labels, k=k, gain="exp2")
    np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.parametrize("metric", [metrics.dcg, metrics.ndcg, metrics.reciprocal_rank])
def test_a_list_of_padding_only_scores_zero(metric):
    scores = jnp.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    labels = jnp.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    where = jnp.array([[False] * 3, [True, False, True]])
    got = metric(scores, labels, where=where)
    assert got[0] == 0.0
    assert got[1] > 0.0


# --- the engine itself, every method -------------------------------------------------


def _reference_blocks(scores, valid, ignore_ties):
    above = np.zeros(scores.shape, int)
    tied = np.ones(scores.shape, int)
    for row in np.ndindex(scores.shape[:-1]):
        real = np.flatnonzero(valid[row])
        s = scores[row][real]
        if ignore_ties:
            order = oracles.descending_index_order(s)
            above[row + (real[order],)] = np.arange(len(real))
        else:
            a, t = oracles.counts(s)
            above[row + (real,)] = a
            tied[row + (real,)] = t
    return above, tied


# The methods, and for top-k (which takes the k largest from the compiled
# kernel where it applies, and sums blocks at the k-th value from its count)
# both routes; the others do not ask which applies. The k largest and the
# k-th count on XLA's route are also checked, more cheaply, below.
METHODS_AND_ROUTES = pytest.mark.parametrize(
    "method, route",
    [
        ("pairwise", "native"),
        ("topk", "native"),
        pytest.param("topk", "xla", marks=pytest.mark.slow),
        ("sort", "xla"),
        ("native", "native"),
    ],
    indirect=["route"],
)


@pytest.mark.parametrize(
    "method, route",
    [("pairwise", "native"), ("topk", "native"), ("sort", "xla"), ("native", "native")],
    indirect=["route"],
)
@pytest.mark.parametrize("ignore_ties", [False, True])
@pytest.mark.parametrize(
    "dtype",
    tiers.params(
        [np.float64, np.float32, np.int32, np.uint8],
        default=(np.float64, np.uint8),
        ids=["float64", "float32", "int32", "uint8"],
    ),
)
def test_every_engine_method_meets_the_contract(method, route, ignore_ties, dtype):
    rng = np.random.default_rng(7)
    n = 23
    scores = rng.integers(0, 6, size=(3, 5, n)).astype(dtype)
    valid = rng.random((3, 5, n)) < 0.8
    valid[0, 0] = False  # a row of padding only
    ref_above, ref_tied = _reference_blocks(scores, valid, ignore_ties)
    for k in [3, 9, 22] if method == "topk" else [None]:
        blocks = jax.jit(
            lambda s, v, k=k: _ranking.tie_blocks(s, v, k=k, ignore_ties=ignore_ties, method=method)
        )(scores, valid)
        above, tied = np.asarray(blocks.above), np.asarray(blocks.tied)
        exact = valid & (ref_above < (n if k is None else k))
        np.testing.assert_array_equal(above[exact], ref_above[exact])
        np.testing.assert_array_equal(tied[exact], ref_tied[exact])
        # Items starting at or past k are reported at or past k.
        if k is not None:
            assert np.all(above[valid & ~exact] >= k)
        np.testing.assert_array_equal(above[~valid], n)
        np.testing.assert_array_equal(tied[~valid], 1)


def _reference_weighted_sum(table, scores, values, valid, ignore_ties):
    above, tied = _reference_blocks(scores, valid, ignore_ties)
    n = scores.shape[-1]
    table = np.asarray(table)
    means = (table[np.minimum(above + tied, n)] - table[np.minimum(above, n)]) / tied
    return np.sum(np.where(valid, values * means, 0), axis=-1)


# The methods, and for top-k (which takes the k largest from the compiled
# kernel where it applies, and sums blocks at the k-th value from its count)
# both routes; the others do not ask which applies. The k largest and the
# k-th count on XLA's route are also checked, more cheaply, below.
METHODS_AND_ROUTES = pytest.mark.parametrize(
    "method, route",
    [
        ("pairwise", "native"),
        ("topk", "native"),
        pytest.param("topk", "xla", marks=pytest.mark.slow),
        ("sort", "xla"),
        ("native", "native"),
    ],
    indirect=["route"],
)


@METHODS_AND_ROUTES
@pytest.mark.parametrize("ignore_ties", [False, True])
@pytest.mark.parametrize(
    "dtype",
    tiers.params(
        [np.float64, np.float32, np.int32, np.uint8, np.bool_],
        default=(np.float64,),
        ids=["float64", "float32", "int32", "uint8", "bool"],
    ),
)
def test_block_weighted_sums_are_those_of_exact_counts(method, route, ignore_ties, dtype):
    # Heavy ties, padding (holding high scores), a row of padding only and a
    # row with one real item; the top-k method sums over the top values'
    # blocks and the block at the k-th value instead of forming counts.
    rng = np.random.default_rng(5)
    n = 41
    scores = rng.integers(0, 7, size=(4, 6, n)).astype(dtype)
    scores[1, 2, :] = scores[1, 2, 0]  # one block holds the whole list
    valid = rng.random((4, 6, n)) < 0.8
    valid[0, 0] = False
    valid[0, 1] = np.arange(n) == 3
    scores[2][~valid[2]] = scores.max()
    values = rng.integers(0, 5, size=(4, 6, n)) + rng.random((4, 6, n))
    for k in [1, 3, 9, 40] if method == "topk" else [None, 5]:
        cutoff = n if k is None else k
        discounts = _gains.discount_table(n, k=cutoff, log_base=2.0, dtype=jnp.float64)
        indicator = jnp.minimum(jnp.arange(n + 1), cutoff).astype(jnp.float64)
        # The table is an argument, so both tables share one compiled program.
        weighted_sum = jax.jit(
            functools.partial(
                _ranking.block_weighted_sum, k=k, ignore_ties=ignore_ties, method=method
            )
        )
        for table in (discounts, indicator):
            got = weighted_sum(scores, values, valid, table)
            want = _reference_weighted_sum(table, scores, values, valid, ignore_ties)
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8])
@pytest.mark.parametrize("k", [1, 4, 12])
def test_largest_values_on_both_routes_equal_top_k(monkeypatch, dtype, k):
    rng = np.random.default_rng(2)
    values = rng.integers(0, 9, size=(3, 7, 12)).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        values[0, 0, :3] = [-np.inf, np.inf, np.nan]
        values[0, 1, :4] = [0.0, -0.0, 0.0, -0.0]  # one value, whichever sign
    top = jax.lax.top_k(values, k)[0]
    count = np.sum(values == np.asarray(top)[..., k - 1 :], axis=-1)
    assert count.max() > 1  # ties at the k-th value (none counted at a NaN)
    for native in (True, False):
        # A new jitted function for each route: the route is chosen at trace time.
        monkeypatch.setattr(_native, "applies", lambda native=native: native)
        got, got_count = jax.jit(lambda v: _ranking._largest(v, k, count_kth=True))(values)
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, top)
        np.testing.assert_array_equal(got_count, count)
        batched = jax.vmap(lambda v: _ranking.largest_values(v, k))(values)
        np.testing.assert_array_equal(batched, top)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_descending_gains_put_padding_after_the_real_values(route, dtype):
    # A real -inf sorts with the padding's key and a NaN after it: each must
    # keep its place beside the padding (the argsort it replaces leaves them so).
    rng = np.random.default_rng(5)
    choices = [0.0, -0.0, 1.0, 2.5, -1.0, np.inf, -np.inf, np.nan, 3.0]
    values = rng.choice(choices, size=(4, 6, 70)).astype(dtype)
    valid = rng.random((4, 6, 70)) < rng.random((4, 6, 1))
    valid[0, 0] = True  # a list without padding
    valid[0, 1] = False  # a list of padding only
    want = oracles.descending_gains(values, valid)
    got = jax.jit(_gains.descending_gains)(values, valid)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jax.vmap(_gains.descending_gains)(values, valid), want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ideal_dcg_from_sorted_gains_is_bitwise_the_argsort_gathers(route, dtype):
    # The ideal DCG sorts the gains instead of gathering them by an argsort
    # (decision 0041); every position holds the same value, so the sum is
    # bitwise the same, NaN, infinity, signed zeros and padding included.
    rng = np.random.default_rng(6)
    gains = rng.choice([0.0, -0.0, 1.0, 1 / 3, 7.0, 0.1, np.inf], size=(60, 100)).astype(dtype)
    gains[:20] = np.abs(rng.normal(size=(20, 100)))
    gains[20, 5] = np.nan
    valid = rng.random((60, 100)) < rng.random((60, 1))

    def gathered(gains, valid, k):
        table = _gains.discount_table(100, k=k, log_base=2.0, dtype=gains.dtype)
        order = _ranking.descending_order(gains, valid)
        ordered = jnp.take_along_axis(jnp.where(valid, gains, 0), order, axis=-1)
        return jnp.sum(ordered * jnp.diff(table), axis=-1)

    sorted_route = jax.jit(lambda g, v, k: _gains.ideal_dcg(g, v, k=k))
    for k in (1, 5, 10, 100, 103):
        got = np.asarray(sorted_route(gains, valid, k))
        want = np.asarray(jax.jit(gathered)(gains, valid, k))
        assert np.isnan(got[20]) and np.isinf(got).any()
        # A NaN's sign bit is not a value; every other bit must match.
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        number = ~np.isnan(got)
        np.testing.assert_array_equal(got[number].view(np.uint8), want[number].view(np.uint8))
    # Gains that depend on what is trained keep the gather's gradient.
    finite = np.where(np.isfinite(gains), gains, 2.0)
    got_grad = jax.grad(lambda g: jnp.sum(sorted_route(g, valid, 10)))(finite)
    want_grad = jax.grad(lambda g: jnp.sum(gathered(g, valid, 10)))(finite)
    np.testing.assert_allclose(got_grad, want_grad, rtol=0, atol=0)


@pytest.mark.parametrize("k", [1, 2, 5, 16, 17])
def test_count_of_the_kth_largest_reads_runs_of_every_length(route, k):
    # Runs of the k-th value from none to the whole row, and NaN at the k-th
    # place (counted 0).
    rng = np.random.default_rng(k)
    rows = rng.integers(0, 4, size=(400, 17)).astype(np.float64)
    rows[:50] = rows[:50, :1]
    rows[50:60, :k] = np.nan
    kth = np.sort(rows, axis=-1)[:, ::-1][:, k - 1]  # NaN first, as lax.top_k orders
    want = np.sum(rows == kth[:, None], axis=-1)
    assert want.max() == 17 and want.min() == 0
    _, count = jax.jit(lambda r: _ranking._largest(r, k, count_kth=True))(rows)
    np.testing.assert_array_equal(count, want)


@pytest.mark.parametrize("native", [True, False])
def test_auto_rule_follows_the_measured_thresholds(monkeypatch, native):
    # decision 0012: top-k from the compiled kernel's selection is cheap
    # enough from n >= 3k; with lax.top_k (the descending-index tie-break, or
    # where the kernels do not apply) only for k <= 64 and n > 384 or n >= 16k.
    # Short lists' averaged ties: the kernel counts them (pairwise) where it
    # applies, XLA's pairwise pass elsewhere.
    monkeypatch.setattr(_native, "applies", lambda: native)
    short = "pairwise_or_native" if native else "pairwise"
    averaged = {(100, 10): "topk", (100, 32): "topk", (100, 34): short, (79, 1): short}
    by_index = {(100, 10): "pairwise", (160, 10): "topk", (1000, 64): "topk"}
    for (n, k), method in averaged.items():
        assert _ranking.choose_method(n, k) == (
            method if native else by_index.get((n, k), "pairwise")
        )
    for (n, k), method in by_index.items():
        assert _ranking.choose_method(n, k, ignore_ties=True) == method
    assert _ranking.choose_method(1000, 128, ignore_ties=True) == "sort_or_native"
    assert _ranking.choose_method(1000, 128) == ("topk" if native else "sort_or_native")
    assert _ranking.choose_method(512, None) == short
    assert _ranking.choose_method(512, None, ignore_ties=True) == "pairwise"
    assert _ranking.choose_method(513, None) == "sort_or_native"
    assert _ranking.exploited_cutoff(100, 10) == (10 if native else None)
    assert _ranking.exploited_cutoff(100, 10, ignore_ties=True) is None


@METHODS_AND_ROUTES
def test_engine_methods_agree_under_vmap(method, route):
    rng = np.random.default_rng(3)
    scores = np.round(rng.random((4, 6, 30)), 1)
    valid = rng.random((4, 6, 30)) < 0.9
    expected = _ranking.tie_blocks(scores, valid, k=5, method="pairwise")
    got = jax.vmap(lambda s, v: _ranking.tie_blocks(s, v, k=5, method=method))(scores, valid)
    exact = valid & (np.asarray(expected.above) < 5)
    np.testing.assert_array_equal(np.asarray(got.above)[exact], np.asarray(expected.above)[exact])
    np.testing.assert_array_equal(np.asarray(got.tied)[exact], np.asarray(expected.tied)[exact])


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.int8, np.uint8, np.bool_], ids=lambda d: d.__name__
)
def test_the_first_block_from_the_scores_is_the_first_block_from_the_counts(dtype):
    # Reciprocal rank and hits read the first block holding a relevant item
    # off the scores (a maximum and one pass of counts) where no counts are
    # formed; they must be the engine's block: ties, padding, extremes of
    # the dtype, -0.0 beside 0.0, lists with no relevant or no real item.
    from lodestar.metrics import _first_relevant

    rng = np.random.default_rng(8)
    if dtype == np.bool_:
        scores = rng.random((40, 25)) < 0.5
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        scores = rng.choice([info.min, info.max, 0, 1, 1, 2], size=(40, 25)).astype(dtype)
    else:
        pool = [-np.inf, np.inf, -0.0, 0.0, 0.5, 0.5, 1.0, np.finfo(dtype).max]
        scores = rng.choice(pool, size=(40, 25)).astype(dtype)
    valid = rng.random((40, 25)) < 0.85
    relevant = valid & (rng.random((40, 25)) < 0.15)
    valid[0] = False
    relevant[0] = relevant[1] = False

    def counted_first(scores, valid, relevant):
        ranking = _ranking.Ranking(scores, valid)
        ranking.blocks  # noqa: B018 - forms the counts first
        return _first_relevant.first_block_holding(ranking, relevant)

    def fresh_first(scores, valid, relevant):
        ranking = _ranking.Ranking(scores, valid)
        block = _first_relevant.first_block_holding(ranking, relevant)
        assert not ranking.counted  # the scores' way was taken
        return block

    from_scores = jax.jit(fresh_first)(scores, valid, relevant)
    from_counts = jax.jit(counted_first)(scores, valid, relevant)
    for got, want in zip(from_scores, from_counts, strict=True):
        np.testing.assert_array_equal(got, want)
    assert from_scores.above[0] == 25 and from_scores.size[1] == 0


def test_reciprocal_rank_closed_form_at_large_blocks():
    # 400 tied items, 3 relevant, 5 items above: compare with exact fractions.
    from fractions import Fraction
    from math import comb

    m, r, a = 400, 3, 5
    expected = sum(
        Fraction(comb(m - j, r - 1), comb(m, r)) * Fraction(1, a + j) for j in range(1, m - r + 2)
    )
    scores = np.concatenate([np.full(a, 2.0), np.full(m, 1.0), np.zeros(20)])
    labels = np.zeros(a + m + 20)
    labels[a + np.array([10, 200, 399])] = 1
    labels[-3:] = 1  # relevant items below the block do not matter
    np.testing.assert_allclose(metrics.reciprocal_rank(scores, labels), float(expected), rtol=1e-13)


def _counted_blocks(scores, valid, ignore_ties):
    """(above, tied) by counting, one item at a time: the engine's contract, plainly."""
    rows, n = scores.shape
    above = np.full((rows, n), n, np.int32)
    tied = np.ones((rows, n), np.int32)
    for r in range(rows):
        real = [i for i in range(n) if valid[r, i]]
        for i in real:
            higher = [j for j in real if scores[r, j] > scores[r, i]]
            equal = [j for j in real if scores[r, j] == scores[r, i]]
            if ignore_ties:
                above[r, i] = len(higher) + sum(j > i for j in equal)
            else:
                above[r, i], tied[r, i] = len(higher), len(equal)
    return above, tied


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]
    + [np.int64, np.uint64],
)
@pytest.mark.parametrize("ignore_ties", [False, True])
@pytest.mark.parametrize("kernels", [True, False], ids=["kernels", "numpy"])
def test_host_counts_at_the_limits_of_each_dtype(monkeypatch, kernels, dtype, ignore_ties):
    # The command line's counts come from the compiled kernels, or from NumPy
    # where they are not loaded. NumPy ranks scores of 32 bits or fewer
    # through one sort of packed 64-bit keys (the score's bits in an
    # order-preserving code, then the index), wider ones through argsort; the
    # kernels through such keys too. Each must count as the contract says, at
    # the extremes of the type, where an order-preserving code goes wrong.
    monkeypatch.setattr(_native, "loaded", lambda: kernels)
    info = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype)
    extremes = [info.min, info.max, 0, 1]
    if np.issubdtype(dtype, np.floating):
        extremes += [-np.inf, np.inf, info.tiny, -info.tiny, info.smallest_subnormal, -1.5]
    elif info.min < 0:
        extremes += [-1, info.min + 1]
    rng = np.random.default_rng(5)
    scores = rng.choice(np.array(extremes, dtype), size=(40, 9))
    valid = rng.random((40, 9)) < 0.85
    got = _host_ranking.host_tie_blocks(scores, valid, ignore_ties)
    want = _counted_blocks(scores, valid, ignore_ties)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
