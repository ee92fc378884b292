"""``lodestar.stats``: significance tests, corrections and the comparison report.

References, each independent of the code under test:

* the t-test against ``scipy.stats.ttest_rel`` (statistic and p-value to
  1e-12 relative) and the t tail against ``scipy.stats.t.sf``;
* the exact randomization test against a brute-force enumeration in plain
  Python for n <= 16: ``math.fsum`` on continuous data, and integer
  arithmetic on data quantised to tenths, where many sign flips tie the
  observed statistic exactly (and float sums without the tolerance miss
  some of them);
* the Monte Carlo p-value within a binomial bound of the exact one (n = 20)
  and of ranx's Fisher randomization test;
* the bootstrap against a NumPy re-computation from the same resamples, and
  against the t-test where both are accurate;
* Holm and Bonferroni against worked examples (the values statsmodels'
  ``multipletests`` gives) and against Holm's step-down procedure run
  directly;
* the report's tables and note, pinned verbatim on a small example.
"""

import dataclasses
import inspect
import itertools
import json
import math
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from children import interruptible_children

from lodestar import InvalidParameterError, stats
from lodestar.stats import _student_t, _tests

scipy_stats = pytest.importorskip("scipy.stats")

RNG = np.random.default_rng(20240614)


def runs_pair(n, shift=0.02, rng=RNG, noise=0.1):
    """Two correlated runs of per-query scores in [0, 1]."""
    base = rng.beta(2, 5, n)
    a = np.clip(base + noise * rng.standard_normal(n), 0, 1)
    b = np.clip(base + shift + noise * rng.standard_normal(n), 0, 1)
    return a, b


# --------------------------------------------------------------------------- #
# Paired t-test
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("n", [2, 3, 5, 8, 50, 300, 5000])
@pytest.mark.parametrize("shift", [0.0, 0.01, 0.1, 0.5])
def test_t_test_agrees_with_scipy(n, shift):
    rng = np.random.default_rng(n * 1000 + int(shift * 100))
    a, b = runs_pair(n, shift, rng)
    ours = stats.paired_t_test(a, b)
    theirs = scipy_stats.ttest_rel(a, b)
    t = float(ours.statistic)
    # t near 0 is a difference of nearly equal sums: compare it absolutely there.
    assert abs(t - theirs.statistic) <= 1e-12 * max(1.0, abs(theirs.statistic))
    np.testing.assert_allclose(float(ours.p_value), theirs.pvalue, rtol=1e-12, atol=0)
    assert ours.degrees_of_freedom == n - 1 == theirs.df
    d = a - b
    np.testing.assert_allclose(float(ours.mean_difference), d.mean(), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(float(ours.effect_size), t / math.sqrt(n), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(
        float(ours.effect_size), d.mean() / d.std(ddof=1), rtol=1e-12, atol=1e-14
    )


def test_t_test_batch_is_each_row_alone():
    a = RNG.random((3, 4, 30))
    b = a + 0.05 * RNG.standard_normal((3, 4, 30))
    batch = stats.paired_t_test(a, b)
    assert batch.statistic.shape == batch.p_value.shape == (3, 4)
    theirs = scipy_stats.ttest_rel(a, b, axis=-1)
    np.testing.assert_allclose(batch.p_value, theirs.pvalue, rtol=1e-12)
    np.testing.assert_allclose(batch.statistic, theirs.statistic, rtol=1e-12)
    alone = stats.paired_t_test(a[1, 2], b[1, 2])
    assert float(alone.p_value) == float(batch.p_value[1, 2])


def test_t_tail_agrees_with_scipy_across_degrees_of_freedom():
    rng = np.random.default_rng(7)
    t = np.concatenate([rng.uniform(0, 12, 300), [0.0, 1e-9, 2.5, 40.0]])
    for df in (1, 2, 3, 4, 7, 15, 29, 30, 31, 100, 999, 10_000, 1_000_000):
        ours = np.asarray(_student_t.t_two_sided(jnp.asarray(t), df))
        theirs = 2 * scipy_stats.t.sf(t, df)
        if df == 1:  # Cauchy: scipy's 1 at t = 1e-9 is 6e-10 too high
            theirs = 2 / np.pi * np.arctan2(1.0, t)
        keep = theirs > 1e-280
        np.testing.assert_allclose(ours[keep], theirs[keep], rtol=1e-12, err_msg=f"df={df}")
    limits = _student_t.t_two_sided(jnp.array([0.0, np.inf, -np.inf, np.nan]), 5)
    np.testing.assert_array_equal(limits, [1.0, 0.0, 0.0, np.nan])


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 30, 100, 10_000])
@pytest.mark.parametrize("p", [0.5, 0.1, 0.05, 0.01, 1e-3, 1e-8])
def test_critical_values_invert_the_two_sided_tail(df, p):
    c = _student_t.two_sided_critical_value(p, df)
    with jax.enable_x64(True):
        np.testing.assert_allclose(float(_student_t.t_two_sided(c, df)), p, rtol=1e-12)


@pytest.mark.parametrize("df", [1, 4, 9, 29, 1_000_000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_critical_values_agree_with_scipy(df, confidence):
    ours = _student_t.two_sided_critical_value(1 - confidence, df)
    np.testing.assert_allclose(ours, scipy_stats.t.ppf((1 + confidence) / 2, df), rtol=1e-12)


def test_t_test_all_differences_zero_is_no_evidence():
    a = np.array([0.3, 0.5, 0.1, 0.9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = scipy_stats.ttest_rel(a, a.copy())
    assert math.isnan(theirs.pvalue)  # scipy's answer; lodestar's is documented
    ours = stats.paired_t_test(a, a.copy())
    assert (float(ours.statistic), float(ours.p_value)) == (0.0, 1.0)
    assert (float(ours.mean_difference), float(ours.effect_size)) == (0.0, 0.0)


def test_t_test_constant_nonzero_differences_are_certain():
    a = np.array([3.0, 5.0, 1.0, 9.0])
    for b, sign in ((a - 1.0, 1.0), (a + 0.5, -1.0)):
        with warnings.catch_warnings():  # scipy warns of "catastrophic cancellation"
            warnings.simplefilter("ignore", RuntimeWarning)
            theirs = scipy_stats.ttest_rel(a, b)
        ours = stats.paired_t_test(a, b)
        assert float(ours.statistic) == theirs.statistic == sign * np.inf
        assert float(ours.p_value) == theirs.pvalue == 0.0
        assert float(ours.effect_size) == sign * np.inf
    # 0.1 - 0.0 repeated: the mean rounds away from 0.1, yet the differences
    # are exactly constant, so t is infinite rather than a huge round-off value.
    ours = stats.paired_t_test(np.full(3, 0.1), np.zeros(3))
    assert float(ours.statistic) == np.inf and float(ours.p_value) == 0.0
    assert float(ours.mean_difference) == 0.1


def test_t_test_degenerate_rows_leave_the_others_alone():
    a = np.array([[0.2, 0.4, 0.6], [0.2, 0.4, 0.6], [0.2, 0.4, 0.6]])
    b = np.array([[0.2, 0.4, 0.6], [0.1, 0.3, 0.5], [0.1, 0.5, 0.4]])
    ours = stats.paired_t_test(a, b)
    assert float(ours.p_value[0]) == 1.0
    assert float(ours.statistic[1]) > 0  # constant up to round-off of 0.1
    np.testing.assert_allclose(
        float(ours.p_value[2]), scipy_stats.ttest_rel(a[2], b[2]).pvalue, rtol=1e-12
    )


def test_t_test_returns_float64_without_x64_and_jits_with_it():
    a, b = runs_pair(40)
    reference = scipy_stats.ttest_rel(a, b).pvalue
    with jax.enable_x64(False):
        eager = stats.paired_t_test(a, b)
    assert isinstance(eager.p_value, np.float64)
    np.testing.assert_allclose(eager.p_value, reference, rtol=1e-12)
    jitted = jax.jit(stats.paired_t_test)(a, b)  # x64 is on in the test suite
    assert jitted.p_value.dtype == jnp.float64
    np.testing.assert_allclose(float(jitted.p_value), reference, rtol=1e-12)


def test_a_p_value_below_float32s_range_survives_without_x64():
    # Two runs 0.1 apart but for a little noise: t = 147 at n = 200, and the
    # p-value, 8.5e-205, is far below float32's smallest number (1.4e-45).
    rng = np.random.default_rng(31)
    a = rng.random(200)
    b = a - 0.1 + 0.01 * rng.standard_normal(200)
    reference = scipy_stats.ttest_rel(a, b)
    assert 0 < reference.pvalue < 1e-200
    with jax.enable_x64(False):
        result = stats.paired_t_test(a, b)
    np.testing.assert_allclose(result.p_value, reference.pvalue, rtol=1e-10)
    np.testing.assert_allclose(result.statistic, reference.statistic, rtol=1e-12)


# --------------------------------------------------------------------------- #
# Randomization test: exact enumeration
# --------------------------------------------------------------------------- #


def brute_force_fsum(d):
    """Exact-mode p-value by enumeration in plain Python (correctly rounded sums)."""
    observed = abs(math.fsum(d))
    count = 0
    for signs in itertools.product((1.0, -1.0), repeat=len(d)):
        count += abs(math.fsum(s * x for s, x in zip(signs, d, strict=True))) >= observed
    return count, count / 2 ** len(d)


def brute_force_integers(k):
    """The same over integer differences (tenths, say): exact, ties included."""
    observed = abs(sum(k))
    count = 0
    for signs in itertools.product((1, -1), repeat=len(k)):
        count += abs(sum(s * x for s, x in zip(signs, k, strict=True))) >= observed
    return count, count / 2 ** len(k)


@pytest.mark.parametrize("n", [2, 3, 7, 11, 16])
def test_exact_randomization_matches_enumeration_continuous(n):
    rng = np.random.default_rng(n)
    a, b = runs_pair(n, 0.05, rng)
    result = stats.randomization_test(a, b)
    assert result.exact and result.permutations == 2**n
    count, p = brute_force_fsum(list(a - b))
    assert int(result.count) == count
    np.testing.assert_allclose(float(result.p_value), p, rtol=1e-12, atol=0)


@pytest.mark.parametrize("n", [6, 12, 16])
def test_exact_randomization_counts_exact_ties(n):
    """Scores in tenths (P@10): many sign flips tie the observed statistic."""
    rng = np.random.default_rng(100 + n)
    tenths_a = rng.integers(0, 11, n)
    tenths_b = np.clip(tenths_a + rng.integers(-3, 3, n), 0, 10)
    tenths_b[: n // 3] = tenths_a[: n // 3]  # zero differences: flips that change nothing
    a, b = tenths_a / 10, tenths_b / 10  # as a metric would report them
    count, p = brute_force_integers(list(tenths_a - tenths_b))
    result = stats.randomization_test(a, b)
    assert int(result.count) == count
    np.testing.assert_allclose(float(result.p_value), p, rtol=1e-12, atol=0)
    if n >= 12:  # The data does exercise the tolerance: plain float64 sums miss ties.
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        untolerant = int(np.sum(np.abs(signs @ (a - b)) >= abs(np.sum(a - b))))
        assert untolerant < count


def test_exact_randomization_at_twenty_queries_against_numpy_integers():
    rng = np.random.default_rng(20)
    tenths_a = rng.integers(0, 11, (3, 20))
    tenths_b = np.clip(tenths_a + rng.integers(-2, 3, (3, 20)), 0, 10)
    k = tenths_a - tenths_b
    signs = 1 - 2 * ((np.arange(2**20)[:, None] >> np.arange(20)) & 1)
    expected = np.sum(np.abs(signs @ k.T) >= np.abs(k.sum(axis=1)), axis=0)
    result = stats.randomization_test(tenths_a / 10, tenths_b / 10, permutations=2**20)
    assert result.exact and result.permutations == 2**20
    np.testing.assert_array_equal(result.count, expected)
    np.testing.assert_allclose(result.p_value, expected / 2**20, rtol=1e-12)


def test_randomization_all_zero_differences_is_no_evidence():
    a = np.array([0.3, 0.5, 0.1, 0.9, 0.2])
    assert float(stats.randomization_test(a, a).p_value) == 1.0  # exact
    assert float(stats.randomization_test(a, a, permutations=20).p_value) == 1.0  # Monte Carlo


# --------------------------------------------------------------------------- #
# Randomization test: Monte Carlo
# --------------------------------------------------------------------------- #


def test_monte_carlo_within_binomial_bound_of_exact():
    """n = 20: 2**20 flips enumerated, against 200,000 drawn ones."""
    rng = np.random.default_rng(3)
    a = np.stack([runs_pair(20, s, rng)[0] for s in (0.0, 0.02, 0.05, 0.1)])
    b = np.stack([runs_pair(20, s, rng)[1] for s in (0.0, 0.02, 0.05, 0.1)])
    b = b + np.array([0.0, 0.04, 0.06, 0.1])[:, None]
    exact = stats.randomization_test(a, b, permutations=2**20)
    draws = 200_000
    monte_carlo = stats.randomization_test(a, b, permutations=draws, seed=11)
    assert exact.exact and not monte_carlo.exact and monte_carlo.permutations == draws
    p = np.asarray(exact.p_value)
    assert np.any((p > 0.01) & (p < 0.5)), p  # the bound is tested where it bites
    # (count + 1) / (draws + 1) is within 1/(draws + 1) of count / draws, and
    # count / draws within 5 standard errors of p (a 1 in 1.7 million miss each).
    bound = 5 * np.sqrt(p * (1 - p) / draws) + 1 / (draws + 1)
    assert np.all(np.abs(np.asarray(monte_carlo.p_value) - p) <= bound)
    np.testing.assert_allclose(
        monte_carlo.p_value, (np.asarray(monte_carlo.count) + 1) / (draws + 1), rtol=1e-15
    )


def test_randomization_reproducible_and_shared_across_the_batch():
    a, b = RNG.random((2, 5, 40))
    first = stats.randomization_test(a, b, permutations=3000, seed=5)
    again = stats.randomization_test(a, b, permutations=3000, seed=5)
    np.testing.assert_array_equal(first.count, again.count)
    other = stats.randomization_test(a, b, permutations=3000, seed=6)
    assert not np.array_equal(first.count, other.count)
    for row in range(5):
        alone = stats.randomization_test(a[row], b[row], permutations=3000, seed=5)
        assert int(alone.count) == int(first.count[row])
    swapped = stats.randomization_test(b, a, permutations=3000, seed=5)
    np.testing.assert_array_equal(first.count, swapped.count)


def test_randomization_draws_are_nested():
    """The first m draws do not depend on how many are drawn in all."""
    a, b = RNG.random((2, 40, 30))
    fewer = np.asarray(stats.randomization_test(a, b, permutations=777, seed=2).count)
    more = np.asarray(stats.randomization_test(a, b, permutations=778, seed=2).count)
    assert set(np.unique(more - fewer)) <= {0, 1}


def test_randomization_under_jit_with_x64():
    a, b = runs_pair(30, 0.05)
    eager = stats.randomization_test(a, b, permutations=2000, seed=3)
    test = jax.jit(stats.randomization_test, static_argnames="permutations")
    jitted = test(a, b, permutations=2000, seed=3)  # the seed is traced
    assert int(jitted.count) == int(eager.count)
    assert float(jitted.p_value) == float(eager.p_value)


def test_random_tests_return_float64_without_x64():
    a, b = runs_pair(30, 0.05)
    reference = stats.randomization_test(a, b, permutations=2000)
    booted = stats.bootstrap_test(a, b, samples=500)
    with jax.enable_x64(False):
        result = stats.randomization_test(a, b, permutations=2000)
        boot = stats.bootstrap_test(a, b, samples=500)
    assert isinstance(result.p_value, np.float64) and isinstance(result.count, np.int64)
    assert result.p_value == float(reference.p_value)
    assert isinstance(boot.low, np.float64)
    assert (boot.p_value, boot.low, boot.high) == tuple(
        float(x) for x in (booted.p_value, booted.low, booted.high)
    )


def test_randomization_agrees_with_ranx_within_monte_carlo_error():
    ranx_tests = pytest.importorskip("ranx.statistical_tests")
    rng = np.random.default_rng(8)
    draws = 20_000
    for shift in (0.0, 0.015, 0.03):
        a, b = runs_pair(60, shift, rng)
        ours = float(stats.randomization_test(a, b, permutations=draws, seed=1).p_value)
        theirs, _ = ranx_tests.fisher_randomization_test(a, b, draws, 0.05, 42)
        p = (ours + theirs) / 2
        # Two independent estimates: 5 standard errors of their difference,
        # plus lodestar's +1 (ranx counts count / draws).
        bound = 5 * math.sqrt(max(p * (1 - p), 1e-4) * 2 / draws) + 2 / draws
        assert abs(ours - theirs) <= bound, (shift, ours, theirs)


# --------------------------------------------------------------------------- #
# Bootstrap test
# --------------------------------------------------------------------------- #


def bootstrap_by_hand(d, seed, samples, confidence):
    """The documented definition in NumPy, from the kernel's own resamples."""
    n = d.shape[-1]
    rows = _tests._bootstrap_rows(n)
    key = _tests._key(seed)
    chunks = -(-samples // rows)
    drawn = np.concatenate(
        [
            np.asarray(jax.random.randint(jax.random.fold_in(key, c), (rows, n), 0, n, jnp.int32))
            for c in range(chunks)
        ]
    )[:samples]
    t_obs = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    w = d - d.mean()
    resampled = w[drawn]  # (samples, n)
    t_star = resampled.mean(axis=1) / (resampled.std(axis=1, ddof=1) / math.sqrt(n))
    count = int(np.sum(np.abs(t_star) >= abs(t_obs)))
    means = d[drawn].mean(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return count, (count + 1) / (samples + 1), low, high


def test_bootstrap_matches_its_definition():
    rng = np.random.default_rng(4)
    a, b = runs_pair(30, 0.03, rng)
    for seed, samples, confidence in ((0, 700, 0.95), (9, 5000, 0.9)):
        result = stats.bootstrap_test(a, b, samples=samples, seed=seed, confidence=confidence)
        count, p, low, high = bootstrap_by_hand(a - b, seed, samples, confidence)
        assert int(result.count) == count
        np.testing.assert_allclose(float(result.p_value), p, rtol=1e-12)
        np.testing.assert_allclose([float(result.low), float(result.high)], [low, high], rtol=1e-12)
        assert (result.samples, result.confidence) == (samples, confidence)
        t = scipy_stats.ttest_rel(a, b).statistic
        np.testing.assert_allclose(float(result.statistic), t, rtol=1e-12)


def test_bootstrap_close_to_t_test_on_many_queries():
    rng = np.random.default_rng(5)
    a = np.stack([runs_pair(400, s, rng)[0] for s in (0.005, 0.01, 0.02)])
    b = np.stack([runs_pair(400, s, rng)[1] for s in (0.005, 0.01, 0.02)])
    boot = stats.bootstrap_test(a, b, samples=20_000)
    t = stats.paired_t_test(a, b)
    np.testing.assert_allclose(boot.p_value, t.p_value, atol=0.02)
    d = a - b
    half_width = 1.96 * d.std(axis=1, ddof=1) / math.sqrt(400)
    np.testing.assert_allclose(boot.high - boot.low, 2 * half_width, rtol=0.1)
    assert np.all((boot.low < boot.mean_difference) & (boot.mean_difference < boot.high))


def test_bootstrap_degenerate_and_shared_resamples():
    # Quarters of 1/64: a + 0.25 - a is exactly 0.25. Shape and samples as in the
    # next test, so that both compile the kernel once.
    a = RNG.integers(0, 48, 25) / 64
    zero = stats.bootstrap_test(a, a, samples=900)
    assert float(zero.p_value) == 1.0 and float(zero.low) == float(zero.high) == 0.0
    constant = stats.bootstrap_test(a + 0.25, a, samples=900)
    assert float(constant.p_value) == 1 / 901
    assert float(constant.low) == float(constant.high) == 0.25
    x, y = RNG.random((2, 4, 25))
    batch = stats.bootstrap_test(x, y, samples=900, seed=3)
    alone = stats.bootstrap_test(x[2], y[2], samples=900, seed=3)
    assert int(alone.count) == int(batch.count[2])
    np.testing.assert_allclose(float(alone.high), float(batch.high[2]), rtol=1e-14)


def test_bootstrap_under_jit_with_x64():
    a, b = runs_pair(25, 0.05)
    eager = stats.bootstrap_test(a, b, samples=900, seed=4)
    jitted = jax.jit(stats.bootstrap_test, static_argnames="samples")(a, b, samples=900, seed=4)
    assert float(jitted.p_value) == float(eager.p_value)
    # The interval's ends are quantiles of means from a float64 matrix
    # product, which XLA may sum in another order inside the caller's program:
    # they were seen 1 ulp apart, after other tests had run in the process.
    np.testing.assert_allclose(float(jitted.low), float(eager.low), rtol=1e-14, atol=0)
    np.testing.assert_allclose(float(jitted.high), float(eager.high), rtol=1e-14, atol=0)


def test_bootstrap_refuses_more_means_than_its_interval_can_hold():
    # The interval holds every resampled mean of every comparison: 2**27 of
    # them (1 GiB); --samples 1e11 once ended in an out-of-memory traceback.
    a, b = RNG.random((2, 3, 20))
    message = (
        "The 'samples' parameter of bootstrap_test must be an int in the range "
        "[1, 44739242] for 3 comparison(s): the confidence interval holds every "
        "resampled mean, at most 134,217,728 of them (1 GiB). Got 44739243 instead."
    )
    with pytest.raises(InvalidParameterError) as caught:
        stats.bootstrap_test(a, b, samples=2**27 // 3 + 1)
    assert str(caught.value) == message
    with pytest.raises(InvalidParameterError, match="compare_scores must be an int in the range"):
        stats.compare_scores({"x": {"m": a[0]}, "y": {"m": b[0]}}, test="bootstrap", samples=10**11)


@pytest.mark.parametrize("window_chunks", [1, 2, 3])
def test_eager_windows_draw_what_one_traced_loop_draws(monkeypatch, window_chunks):
    # An eager test runs its chunks a few at a time (for Ctrl-C); under jit it
    # runs them in one loop. 7 sign-flip chunks of 4,096 and 9 bootstrap
    # chunks of 512, in windows that do not divide them.
    a, b = runs_pair(25, 0.01)
    monkeypatch.setattr(_tests, "_WINDOW_WORK", window_chunks * 4096 * 25 * 5)
    eager = stats.randomization_test(a, b, permutations=7 * 4096 - 5, seed=2)
    with jax.enable_x64(True):
        jitted = jax.jit(stats.randomization_test, static_argnames="permutations")(
            a, b, permutations=7 * 4096 - 5, seed=2
        )
    assert int(eager.count) == int(jitted.count)
    eager = stats.bootstrap_test(a, b, samples=9 * 512 - 3, seed=2)
    with jax.enable_x64(True):
        jitted = jax.jit(stats.bootstrap_test, static_argnames="samples")(
            a, b, samples=9 * 512 - 3, seed=2
        )
    assert int(eager.count) == int(jitted.count)
    np.testing.assert_allclose(float(jitted.low), float(eager.low), rtol=1e-14, atol=0)
    np.testing.assert_allclose(float(jitted.high), float(eager.high), rtol=1e-14, atol=0)


_INTERRUPTED_TEST = """
import os, resource, signal, sys, threading, time
import numpy as np
from lodestar import stats

a, b = np.random.default_rng(0).random((2, 3000))
sent = []
threading.Timer(3.0, lambda: (sent.append(time.monotonic()), os.kill(os.getpid(), signal.SIGINT))).start()
try:
    if sys.argv[1] == "randomization":
        stats.randomization_test(a, b, permutations=10**10)
    else:
        stats.bootstrap_test(a, b, samples=100_000_000)
except KeyboardInterrupt:
    latency = time.monotonic() - sent[0]
usage = resource.getrusage(resource.RUSAGE_SELF)
before = usage.ru_utime + usage.ru_stime
time.sleep(1.0)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(latency, usage.ru_utime + usage.ru_stime - before)
"""


@pytest.mark.slow
@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_ctrl_c_stops_a_long_test_and_its_computation(test):
    # 1e10 sign flips of 3,000 queries take hours. Interrupted, the call must
    # raise KeyboardInterrupt within about a second, and leave nothing running
    # (one compiled loop over every chunk kept the cores busy to the end).
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    with interruptible_children():
        done = subprocess.run(
            [sys.executable, "-c", _INTERRUPTED_TEST, test],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    latency, busy = map(float, done.stdout.split())
    assert latency < 1.5, f"KeyboardInterrupt {latency:.2f} s after the signal"
    assert busy < 0.2, f"{busy:.2f} CPU seconds in the second after the interrupt"


def test_every_test_refuses_tracing_without_x64():
    a, b = runs_pair(10)
    message = (
        "randomization_test computes and returns float64, which JAX holds (and lowers its "
        "random draws in) only with x64 on: under jax.jit or vmap, turn "
        "jax_enable_x64 on (globally, or with jax.enable_x64(True) around the call)."
    )
    with jax.enable_x64(False):
        with pytest.raises(RuntimeError) as caught:
            jax.jit(stats.randomization_test)(a, b)
        assert str(caught.value) == message
        for test in (stats.bootstrap_test, stats.paired_t_test):
            with pytest.raises(RuntimeError, match=f"^{test.__name__} computes and returns"):
                jax.jit(test)(a, b)


# --------------------------------------------------------------------------- #
# Refusals of the tests
# --------------------------------------------------------------------------- #

GOOD = np.array([0.1, 0.2, 0.3])


@pytest.mark.parametrize(
    "function", [stats.paired_t_test, stats.randomization_test, stats.bootstrap_test]
)
@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (
            GOOD,
            GOOD[:2],
            "{f} expects a and b of the same shape (the same queries in the same order); got a (3,) and b (2,).",
        ),
        (
            0.5,
            0.5,
            "{f} expects a and b of shape (..., n), one value per query along the last axis; got a scalar.",
        ),
        (GOOD[:1], GOOD[:1], "{f} needs at least 2 queries (the last axis of a and b); got 1."),
        (np.array([0.1, np.nan, 0.3]), GOOD, "Input a contains NaN."),
        (
            GOOD,
            np.array([0.1, np.inf, 0.3]),
            "Input b contains infinity or a value too large for dtype('float64').",
        ),
        (np.array(["a", "b", "c"]), GOOD, "{f} expects real-valued numeric a; got dtype <U1."),
        (GOOD, GOOD + 1j, "{f} expects real-valued numeric b; got dtype complex128."),
    ],
)
def test_tests_refuse_bad_inputs(function, a, b, message):
    with pytest.raises(ValueError) as caught:
        function(a, b)
    assert str(caught.value) == message.format(f=function.__name__)


@pytest.mark.parametrize(
    ("function", "options", "message"),
    [
        (
            stats.randomization_test,
            dict(permutations=0),
            "The 'permutations' parameter of randomization_test must be an int in the range [1, inf). Got 0 instead.",
        ),
        (
            stats.randomization_test,
            dict(permutations=10.0),
            "The 'permutations' parameter of randomization_test must be an int in the range [1, inf). Got 10.0 instead.",
        ),
        (
            stats.randomization_test,
            dict(permutations=True),
            "The 'permutations' parameter of randomization_test must be an int in the range [1, inf). Got True instead.",
        ),
        (
            stats.randomization_test,
            dict(seed=-1),
            "The 'seed' parameter of randomization_test must be an int in the range [0, 4294967295]. Got -1 instead.",
        ),
        (
            stats.randomization_test,
            dict(seed=2**32),
            "The 'seed' parameter of randomization_test must be an int in the range [0, 4294967295]. Got 4294967296 instead.",
        ),
        (
            stats.bootstrap_test,
            dict(samples=0),
            "The 'samples' parameter of bootstrap_test must be an int in the range [1, inf). Got 0 instead.",
        ),
        (
            stats.bootstrap_test,
            dict(seed="0"),
            "The 'seed' parameter of bootstrap_test must be an int in the range [0, 4294967295]. Got '0' instead.",
        ),
        (
            stats.bootstrap_test,
            dict(confidence=1.0),
            "The 'confidence' parameter of bootstrap_test must be a float in the range (0.0, 1.0). Got 1.0 instead.",
        ),
        (
            stats.bootstrap_test,
            dict(confidence=95),
            "The 'confidence' parameter of bootstrap_test must be a float in the range (0.0, 1.0). Got 95 instead.",
        ),
    ],
)
def test_tests_refuse_bad_options(function, options, message):
    with pytest.raises(InvalidParameterError) as caught:
        function(GOOD, GOOD, **options)
    assert str(caught.value) == message


# --------------------------------------------------------------------------- #
# Corrections
# --------------------------------------------------------------------------- #

# (p-values, Holm, Bonferroni). The adjusted values are those of
# statsmodels.stats.multitest.multipletests(p, method="holm" / "bonferroni")
# (statsmodels 0.15) and R's p.adjust; the first is worked by hand in holm's
# docstring, the second has ties and reaches the cap, the third is the
# fifteen p-values of Benjamini & Hochberg's example (1995, section 4).
WORKED = [
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02], [0.04, 0.16, 0.12, 0.02]),
    ([0.2, 0.2, 0.01, 0.5, 0.6], [0.8, 0.8, 0.05, 1.0, 1.0], [1.0, 1.0, 0.05, 1.0, 1.0]),
    (
        [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240]
        + [0.4262, 0.5719, 0.6528, 0.7590, 1.000],
        [0.0015, 0.0056, 0.0247, 0.114, 0.2211, 0.278, 0.278, 0.278, 0.3213] + [1.0] * 6,
        [0.0015, 0.006, 0.0285, 0.1425, 0.3015, 0.417, 0.447, 0.516, 0.6885] + [1.0] * 6,
    ),
]


@pytest.mark.parametrize(("p", "holm", "bonferroni"), WORKED)
def test_corrections_worked_examples(p, holm, bonferroni):
    np.testing.assert_allclose(stats.holm(p), holm, rtol=1e-12)
    np.testing.assert_allclose(stats.bonferroni(p), bonferroni, rtol=1e-12)


def holm_step_down_rejects(p, alpha):
    """Holm (1979) as he states it: reject in order while p_(i) <= alpha / (m - i + 1)."""
    m = len(p)
    rejected = set()
    for i, index in enumerate(sorted(range(m), key=lambda j: p[j])):
        if p[index] > alpha / (m - i):
            break
        rejected.add(index)
    return rejected


def test_holm_adjusted_values_reproduce_the_step_down_procedure():
    rng = np.random.default_rng(9)
    for _ in range(120):
        m = int(rng.integers(1, 12))
        p = rng.choice([rng.random(m) ** 3, np.round(rng.random(m), 2)])  # ties too
        adjusted = np.asarray(stats.holm(p))
        for alpha in (0.01, 0.05, 0.1, 0.2, *rng.random(3)):
            assert set(np.flatnonzero(adjusted <= alpha)) == holm_step_down_rejects(list(p), alpha)
        order = np.argsort(p, kind="stable")
        assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in the raw p-values
        assert np.all((adjusted >= p) & (adjusted <= 1))
        np.testing.assert_allclose(stats.bonferroni(p), np.minimum(1, m * p), rtol=1e-15)


def test_corrections_along_the_last_axis():
    p = RNG.random((3, 6))
    holm = np.asarray(stats.holm(p))
    for row in range(3):
        np.testing.assert_array_equal(holm[row], stats.holm(p[row]))
    assert stats.holm(np.zeros(0)).shape == (0,)
    assert jax.jit(stats.holm)(jnp.asarray(p)).shape == (3, 6)


def test_corrections_near_a_threshold_survive_without_x64():
    # In float32, 3 * 0.0166666667 is 0.05 and passes alpha = 0.05; 1e-60 is 0.
    p = np.array([1e-60, 0.0166666667, 0.04])
    with jax.enable_x64(False):
        bonferroni, holm = stats.bonferroni(p), stats.holm(p)
    assert isinstance(bonferroni, np.ndarray) and bonferroni.dtype == np.float64
    np.testing.assert_allclose(bonferroni, [3e-60, 0.0500000001, 0.12], rtol=1e-15)
    assert bonferroni[1] > 0.05
    np.testing.assert_allclose(holm, [3e-60, 0.0333333334, 0.04], rtol=1e-15)


def _float_results(result) -> list:
    """Every floating-point value a public function of lodestar.stats returns."""
    if dataclasses.is_dataclass(result):
        values = [getattr(result, field.name) for field in dataclasses.fields(result)]
    elif isinstance(result, tuple):
        values = list(result)
    else:
        values = [result]
    return [v for v in values if isinstance(v, float | np.floating | np.ndarray | jax.Array)]


def test_every_public_function_returns_float64_numpy_without_x64():
    a, b = runs_pair(12, 0.05)
    p = np.array([1e-60, 0.0166666667, 0.04])
    scores = {"x": {"map": a}, "y": {"map": b}, "z": {"map": (a + b) / 2}}
    calls = {
        "paired_t_test": lambda: stats.paired_t_test(a, b),
        "randomization_test": lambda: stats.randomization_test(a, b, permutations=200),
        "bootstrap_test": lambda: stats.bootstrap_test(a, b, samples=200),
        "holm": lambda: stats.holm(p),
        "bonferroni": lambda: stats.bonferroni(p),
        "compare_scores": lambda: stats.compare_scores(scores, test="randomization"),
    }
    public = {name for name in stats.__all__ if inspect.isfunction(getattr(stats, name))}
    assert public == set(calls)
    for name, call in calls.items():
        with jax.enable_x64(False):
            values = _float_results(call())
        assert values, name
        for value in values:
            assert not isinstance(value, jax.Array), (name, value)
            assert np.asarray(value).dtype in (np.float64, np.int64, np.bool_), (name, value)


def test_corrections_of_jax_arrays():
    # Concrete: NumPy float64 of the values the array holds. Traced: JAX
    # float64 under x64, and a refusal without it, as the tests do.
    p = jnp.asarray([0.01, 0.04, 0.03], jnp.float32)
    for function in (stats.holm, stats.bonferroni):
        adjusted = function(p)
        assert isinstance(adjusted, np.ndarray) and adjusted.dtype == np.float64
        np.testing.assert_array_equal(adjusted, function(np.asarray(p, np.float64)))
        assert jax.jit(function)(p).dtype == jnp.float64
        with jax.enable_x64(False), pytest.raises(RuntimeError, match="computes and returns"):
            jax.jit(function)(p)


@pytest.mark.parametrize("function", [stats.holm, stats.bonferroni])
@pytest.mark.parametrize(
    ("p", "message"),
    [
        ([0.1, np.nan], "Input p_values contains NaN."),
        ([0.1, 1.5], "{f} expects p-values in [0, 1]; got a value outside."),
        ([-0.1, 0.5], "{f} expects p-values in [0, 1]; got a value outside."),
        (0.5, "{f} expects p_values of shape (..., m); got a scalar."),
        (["a"], "{f} expects real-valued numeric p_values; got dtype <U1."),
    ],
)
def test_corrections_refuse(function, p, message):
    with pytest.raises(ValueError) as caught:
        function(p)
    assert str(caught.value) == message.format(f=function.__name__)


# --------------------------------------------------------------------------- #
# compare_scores and the report
# --------------------------------------------------------------------------- #

SCORES = {
    "bm25": {
        "ndcg@10": [0.31, 0.42, 0.25, 0.50, 0.38, 0.29, 0.44, 0.35],
        "map": [0.20, 0.33, 0.18, 0.41, 0.30, 0.22, 0.35, 0.27],
    },
    "dense": {
        "ndcg@10": [0.45, 0.51, 0.40, 0.62, 0.49, 0.41, 0.47, 0.46],
        "map": [0.31, 0.30, 0.25, 0.38, 0.37, 0.20, 0.29, 0.33],
    },
    "hybrid": {
        "ndcg@10": [0.52, 0.58, 0.47, 0.69, 0.55, 0.50, 0.50, 0.52],
        "map": [0.36, 0.41, 0.30, 0.55, 0.40, 0.33, 0.31, 0.35],
    },
}

TABLE = """\
#  Run     ndcg@10   map
-  ------  --------  --------
a  bm25    0.3675    0.2825
b  dense   0.4762ᵃ   0.3037
c  hybrid  0.5413ᵃᵇ  0.3762ᵃᵇ

Pair   Measure  Difference  95% interval        d_z    t       p        adjusted p
-----  -------  ----------  ------------------  -----  ------  -------  ----------
a − b  ndcg@10  -0.1088     [-0.1395, -0.0780]  -2.95  -8.36   6.9e-05  6.9e-05
a − b  map      -0.0213     [-0.0738, +0.0313]  -0.34  -0.96   0.3711   0.3711
a − c  ndcg@10  -0.1738     [-0.2164, -0.1311]  -3.41  -9.64   2.7e-05  5.4e-05
a − c  map      -0.0938     [-0.1445, -0.0430]  -1.54  -4.37   0.0033   0.0098
b − c  ndcg@10  -0.0650     [-0.0791, -0.0509]  -3.85  -10.88  1.2e-05  3.7e-05
b − c  map      -0.0725     [-0.1200, -0.0250]  -1.28  -3.61   0.0086   0.0172

Superscripts mark the runs that a run is significantly better than
(adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 3 pairs of
runs per measure; 8 queries."""

NOTE = (
    "Superscripts mark the runs that a run is significantly better than "
    "(adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 3 pairs of "
    "runs per measure; 8 queries."
)

MARKDOWN = f"""\
| # | Run | ndcg@10 | map |
|---|---|---:|---:|
| a | bm25 | 0.3675 | 0.2825 |
| b | dense | 0.4762<sup>a</sup> | 0.3037 |
| c | hybrid | 0.5413<sup>ab</sup> | 0.3762<sup>ab</sup> |

| Pair | Measure | Difference | 95% interval | d_z | t | p | adjusted p |
|---|---|---:|---:|---:|---:|---:|---:|
| a − b | ndcg@10 | -0.1088 | [-0.1395, -0.0780] | -2.95 | -8.36 | 6.9e-05 | 6.9e-05 |
| a − b | map | -0.0213 | [-0.0738, +0.0313] | -0.34 | -0.96 | 0.3711 | 0.3711 |
| a − c | ndcg@10 | -0.1738 | [-0.2164, -0.1311] | -3.41 | -9.64 | 2.7e-05 | 5.4e-05 |
| a − c | map | -0.0938 | [-0.1445, -0.0430] | -1.54 | -4.37 | 0.0033 | 0.0098 |
| b − c | ndcg@10 | -0.0650 | [-0.0791, -0.0509] | -3.85 | -10.88 | 1.2e-05 | 3.7e-05 |
| b − c | map | -0.0725 | [-0.1200, -0.0250] | -1.28 | -3.61 | 0.0086 | 0.0172 |

{NOTE}"""

LATEX = r"""\begin{table}
\centering
\begin{tabular}{llll}
\toprule
\# & Run & ndcg@10 & map \\
\midrule
a & bm25 & 0.3675 & 0.2825 \\
b & dense & 0.4762$^{a}$ & 0.3037 \\
c & hybrid & 0.5413$^{ab}$ & 0.3762$^{ab}$ \\
\bottomrule
\end{tabular}
\caption{Superscripts mark the runs that a run is significantly better than (adjusted $p \le 0.05$): two-sided paired t-test, Holm correction over 3 pairs of runs per measure; 8 queries.}
\end{table}"""


def test_report_formats_pinned():
    comparison = stats.compare_scores(SCORES)
    assert comparison.format() == TABLE == str(comparison)
    assert comparison.note() == NOTE
    assert comparison.format("markdown") == MARKDOWN
    assert comparison.format("latex") == LATEX
    assert comparison.better_than("hybrid", "map") == ("bm25", "dense")
    assert comparison.better_than("dense", "map") == ()
    assert comparison.better_than("bm25", "ndcg@10") == ()


def test_report_notes_for_each_test_and_correction():
    randomization = stats.compare_scores(SCORES, test="randomization", correction="bonferroni")
    assert randomization.exact and randomization.permutations == 256 and randomization.seed is None
    assert randomization.note().endswith(
        "(adjusted p ≤ 0.05): two-sided paired randomization test over all 256 sign flips, "
        "Bonferroni correction over 3 pairs of runs per measure; 8 queries."
    )
    drawn = stats.compare_scores(
        SCORES, test="randomization", permutations=100, seed=3, correction="none", alpha=0.1
    )
    assert not drawn.exact and drawn.permutations == 100 and drawn.seed == 3
    assert drawn.note().endswith(
        "(p ≤ 0.1): two-sided paired randomization test, 100 random sign flips (seed 3), "
        "no correction for multiple comparisons; 8 queries."
    )
    boot = stats.compare_scores(SCORES, test="bootstrap", samples=1000, seed=7)
    assert boot.samples == 1000 and boot.seed == 7 and boot.permutations is None
    assert boot.note("latex").endswith(
        "(adjusted $p \\le 0.05$): two-sided paired bootstrap test, 1,000 resamples (seed 7), "
        "Holm correction over 3 pairs of runs per measure; 8 queries."
    )


@pytest.mark.parametrize("test", ["t", "randomization", "bootstrap"])
def test_comparison_agrees_with_the_tests_pair_by_pair(test):
    rng = np.random.default_rng(12)
    names = ["r1", "r2", "r3", "r4"]
    scores = {
        name: {m: np.clip(rng.beta(2, 5, 40) + 0.03 * i, 0, 1) for m in ("p@10", "map")}
        for i, name in enumerate(names)
    }
    comparison = stats.compare_scores(scores, test=test, permutations=5000, samples=2000, seed=4)
    single = {
        "t": stats.paired_t_test,
        "randomization": lambda a, b: stats.randomization_test(a, b, permutations=5000, seed=4),
        "bootstrap": lambda a, b: stats.bootstrap_test(a, b, samples=2000, seed=4),
    }[test]
    for k, measure in enumerate(comparison.measures):
        pair_p = []
        for i, j in itertools.combinations(range(4), 2):
            a, b = scores[names[i]][measure], scores[names[j]][measure]
            p = float(single(a, b).p_value)
            assert comparison.p_values[i, j, k] == comparison.p_values[j, i, k]
            np.testing.assert_allclose(comparison.p_values[i, j, k], p, rtol=1e-14)
            t = stats.paired_t_test(a, b)
            assert comparison.mean_differences[i, j, k] == float(t.mean_difference)
            assert comparison.mean_differences[j, i, k] == -float(t.mean_difference)
            assert comparison.effect_sizes[i, j, k] == float(t.effect_size)
            alone = single(a, b)
            np.testing.assert_allclose(
                comparison.statistics[i, j, k], float(alone.statistic), rtol=1e-14
            )
            assert comparison.statistics[j, i, k] == -comparison.statistics[i, j, k]
            if test == "bootstrap":
                # The same resamples: the interval of the pair tested alone.
                # Its means come from a matrix product as wide as the batch,
                # which XLA may sum in another order: 1.1e-17 apart seen (on
                # 5.4e-4, under JAX 0.8.0), within a few ulp of the scores.
                for end in ("low", "high"):
                    np.testing.assert_allclose(
                        getattr(comparison, end)[i, j, k],
                        float(getattr(alone, end)),
                        rtol=1e-14,
                        atol=1e-16,
                    )
            elif test == "t":
                # Student's t-interval; it holds 0 exactly when p > alpha.
                spread = np.std(a - b, ddof=1) / np.sqrt(len(a))
                half = _student_t.two_sided_critical_value(0.05, len(a) - 1) * spread
                np.testing.assert_allclose(
                    [comparison.low[i, j, k], comparison.high[i, j, k]],
                    [float(t.mean_difference) - half, float(t.mean_difference) + half],
                    rtol=1e-13,
                )
                assert (comparison.low[i, j, k] > 0 or comparison.high[i, j, k] < 0) == (p < 0.05)
            if comparison.low is not None:
                assert comparison.low[j, i, k] == -comparison.high[i, j, k]
                assert comparison.low[i, j, k] <= comparison.mean_differences[i, j, k]
                assert comparison.mean_differences[i, j, k] <= comparison.high[i, j, k]
            else:
                assert test == "randomization" and comparison.confidence is None
            pair_p.append(p)
        adjusted = np.asarray(stats.holm(np.array(pair_p)))
        for (i, j), value in zip(itertools.combinations(range(4), 2), adjusted, strict=True):
            np.testing.assert_allclose(comparison.adjusted_p_values[i, j, k], value, rtol=1e-14)
            assert comparison.significant[i, j, k] == (value <= 0.05)
        assert np.all(np.diag(comparison.p_values[:, :, k]) == 1.0)
        assert not np.any(np.diag(comparison.significant[:, :, k]))
    np.testing.assert_allclose(
        comparison.means, [[np.mean(scores[r][m]) for m in ("p@10", "map")] for r in names]
    )
    assert comparison.queries == 40 and comparison.test == test


def test_to_dict_is_strict_json():
    scores = {
        "a": {"m": [0.25, 0.5, 0.125]},
        "b": {"m": [0.5, 0.75, 0.375]},  # a - b is exactly -0.25 on every query
        "c": {"m": [0.25, 0.5, 0.125]},
    }
    report = stats.compare_scores(scores).to_dict()
    text = json.dumps(report, allow_nan=False)
    assert json.loads(text) == report
    assert report["runs"] == ["a", "b", "c"] and report["measures"] == ["m"]
    assert report["means"]["b"]["m"] == pytest.approx(1.625 / 3)
    a_b, a_c, b_c = report["pairs"]
    assert a_b["runs"] == ["a", "b"] and a_b["effect_size"] is None  # constant: -inf
    assert a_b["p_value"] == 0.0 and a_b["better"] == "b" and a_b["significant"]
    assert a_c["p_value"] == 1.0 and a_c["better"] is None and a_c["effect_size"] == 0.0
    assert b_c["better"] == "b" and b_c["mean_difference"] == 0.25
    assert {k: report[k] for k in ("test", "correction", "alpha", "queries")} == {
        "test": "t",
        "correction": "holm",
        "alpha": 0.05,
        "queries": 3,
    }


def test_report_escapes_names_and_numbers_runs_beyond_26():
    scores = {
        "run_1 & co": {"ndcg_cut_10": [0.1, 0.2, 0.3]},
        "a|b<i>": {"ndcg_cut_10": [0.4, 0.5, 0.7]},
    }
    comparison = stats.compare_scores(scores)
    assert "run\\_1 \\& co & 0.2000 \\\\" in comparison.format("latex")
    assert "ndcg\\_cut\\_10" in comparison.format("latex")
    assert "| b | a\\|b&lt;i&gt; | 0.5333<sup>a</sup> |" in comparison.format("markdown")
    many = {f"run{i:02d}": {"m": [0.01 * i, 0.01 * i + 0.002, 0.01 * i + 0.001]} for i in range(28)}
    table = stats.compare_scores(many, correction="none").format(digits=2)
    assert table.splitlines()[2].startswith("1   run00")
    assert "0.27^(1,2,3," in table  # run27 is better than the others: numbered marks


def test_comparison_arrays_are_read_only():
    comparison = stats.compare_scores(SCORES)
    with pytest.raises(ValueError):
        comparison.p_values[0, 1, 0] = 0.5
    with pytest.raises(AttributeError):
        comparison.alpha = 0.1


BAD_SCORES = [
    (
        [0.1, 0.2],
        TypeError,
        "compare_scores expects scores as a mapping {run: {measure: per-query values}}; got list.",
    ),
    (
        {"a": {"m": [0.1, 0.2]}},
        ValueError,
        "compare_scores needs at least 2 runs to compare; got 1.",
    ),
    (
        {"a": {"m": [0.1, 0.2]}, 3: {"m": [0.1, 0.2]}},
        TypeError,
        "compare_scores expects run names as str; got 3.",
    ),
    (
        {"a": {"m": [0.1, 0.2]}, "b": [0.1, 0.2]},
        TypeError,
        "The scores of run 'b' must be a mapping {measure: per-query values}; got list.",
    ),
    ({"a": {"m": [0.1, 0.2]}, "b": {}}, ValueError, "Run 'b' has no measures."),
    (
        {"a": {"m": [0.1, 0.2]}, "b": {"n": [0.1, 0.2]}},
        ValueError,
        "Run 'b' has measures ['n'], but run 'a' has ['m']; every run needs the same measures.",
    ),
    (
        {"a": {"m": [0.1, 0.2]}, "b": {"m": [0.1, 0.2, 0.3]}},
        ValueError,
        "The scores of run 'b' on measure 'm' cover 3 queries, but those of run 'a' on measure 'm' cover 2; every array must hold the same queries in the same order.",
    ),
    (
        {"a": {"m": [0.1, 0.2], "n": [0.1]}, "b": {"m": [0.1, 0.2], "n": [0.1]}},
        ValueError,
        "The scores of run 'a' on measure 'n' cover 1 queries, but those of run 'a' on measure 'm' cover 2; every array must hold the same queries in the same order.",
    ),
    (
        {"a": {"m": [0.1]}, "b": {"m": [0.2]}},
        ValueError,
        "compare_scores needs at least 2 queries; got 1.",
    ),
    (
        {"a": {"m": [0.1, 0.2]}, "b": {"m": [0.1, float("nan")]}},
        ValueError,
        "The scores of run 'b' on measure 'm' contain NaN.",
    ),
    (
        {"a": {"m": [0.1, float("inf")]}, "b": {"m": [0.1, 0.2]}},
        ValueError,
        "The scores of run 'a' on measure 'm' contain infinity.",
    ),
    (
        {"a": {"m": [[0.1, 0.2]]}, "b": {"m": [[0.1, 0.2]]}},
        ValueError,
        "The scores of run 'a' on measure 'm' must be 1-D, one value per query; got shape (1, 2).",
    ),
    (
        {"a": {"m": ["x", "y"]}, "b": {"m": [0.1, 0.2]}},
        ValueError,
        "The scores of run 'a' on measure 'm' must be real numbers; got dtype <U1.",
    ),
    (
        {"a": {1: [0.1, 0.2]}, "b": {1: [0.1, 0.2]}},
        TypeError,
        "compare_scores expects measure names as str; got 1.",
    ),
]


@pytest.mark.parametrize(("scores", "error", "message"), BAD_SCORES)
def test_compare_scores_refuses_bad_scores(scores, error, message):
    with pytest.raises(error) as caught:
        stats.compare_scores(scores)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            dict(test="x"),
            "The 'test' parameter of compare_scores must be a str among {'bootstrap', 'randomization', 't'}. Got 'x' instead.",
        ),
        (
            dict(correction="fdr"),
            "The 'correction' parameter of compare_scores must be a str among {'bonferroni', 'holm', 'none'}. Got 'fdr' instead.",
        ),
        (
            dict(alpha=0.0),
            "The 'alpha' parameter of compare_scores must be a float in the range (0.0, 1.0). Got 0.0 instead.",
        ),
        (
            dict(alpha=True),
            "The 'alpha' parameter of compare_scores must be a float in the range (0.0, 1.0). Got True instead.",
        ),
        (
            dict(permutations=0),
            "The 'permutations' parameter of compare_scores must be an int in the range [1, inf). Got 0 instead.",
        ),
        (
            dict(samples=-5),
            "The 'samples' parameter of compare_scores must be an int in the range [1, inf). Got -5 instead.",
        ),
        (
            dict(seed=1.5),
            "The 'seed' parameter of compare_scores must be an int in the range [0, 4294967295]. Got 1.5 instead.",
        ),
    ],
)
def test_compare_scores_refuses_bad_options(options, message):
    with pytest.raises(InvalidParameterError) as caught:
        stats.compare_scores(SCORES, **options)
    assert str(caught.value) == message


def test_format_refuses_bad_options():
    comparison = stats.compare_scores(SCORES)
    with pytest.raises(InvalidParameterError) as caught:
        comparison.format("html")
    assert str(caught.value) == (
        "The 'style' parameter of format must be a str among {'latex', 'markdown', 'table'}. "
        "Got 'html' instead."
    )
    with pytest.raises(
        InvalidParameterError,
        match=r"The 'digits' parameter of format must be an int in the range \[0, 17\]. Got -1 instead.",
    ):
        comparison.format(digits=-1)
    with pytest.raises(KeyError, match="No run named 'nope'"):
        comparison.better_than("nope", "map")
