"""The paired t, randomization and bootstrap tests, their kernels and results."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import _interrupt, _validation
from lodestar.stats import _checks, _student_t

# Each chunk of sign flips or resamples is a float64 (rows, n) matrix of at
# most this many bytes, and at most _MAX_CHUNK_ROWS rows.
_CHUNK_BYTES = 64 * 2**20
_MAX_CHUNK_ROWS = 4096

# An eager test runs its chunks a window at a time, one call of about this
# many multiply-adds each (a few tens of milliseconds), and waits for each
# call: Ctrl-C raises KeyboardInterrupt between two calls, so a test of 1e10
# sign flips stops within a fraction of a second. A traced test runs every
# chunk in one loop; both draw the same chunks, so they give the same counts.
_WINDOW_WORK = 2**25

# The bootstrap's interval needs every resampled mean: at most this many
# (samples times comparisons), 1 GiB of float64.
MAX_BOOTSTRAP_MEANS = 2**27


# --------------------------------------------------------------------------- #
# Results
# --------------------------------------------------------------------------- #


# Eager calls give NumPy float64 (int64 for counts), a scalar for one
# comparison; traced calls, which need x64, give JAX float64 arrays.
Float64Result = np.ndarray | np.generic | jax.Array


class TTestResult(NamedTuple):
    """The result of :func:`paired_t_test`; arrays have the batch shape of ``a``.

    Attributes:
      statistic: Student's t, ``mean(d) / (sd(d) / sqrt(n))`` with ``d = a - b``
        and the sample standard deviation (``n - 1`` in the denominator).
      p_value: The two-sided p-value, ``P(|T| >= |t|)`` for ``T`` Student's t
        with ``n - 1`` degrees of freedom.
      degrees_of_freedom: ``n - 1``, an int.
      mean_difference: ``mean(a - b)``.
      effect_size: Cohen's d for paired data, ``d_z = mean(d) / sd(d)``.
    """

    statistic: Float64Result
    p_value: Float64Result
    degrees_of_freedom: int
    mean_difference: Float64Result
    effect_size: Float64Result


class RandomizationResult(NamedTuple):
    """The result of :func:`randomization_test`; arrays have the batch shape of ``a``.

    Attributes:
      statistic: The test statistic, the mean difference ``mean(a - b)``.
      p_value: The two-sided p-value; see :func:`randomization_test` for its
        definition.
      mean_difference: ``mean(a - b)`` (the same as ``statistic``).
      count: How many of the sign flips gave a statistic at least as extreme
        as the observed one, an integer array.
      permutations: How many sign flips were counted: ``2**n`` when exact,
        else the number drawn.
      exact: Whether every one of the ``2**n`` sign flips was enumerated.
    """

    statistic: Float64Result
    p_value: Float64Result
    mean_difference: Float64Result
    count: Float64Result
    permutations: int
    exact: bool


class BootstrapResult(NamedTuple):
    """The result of :func:`bootstrap_test`; arrays have the batch shape of ``a``.

    Attributes:
      statistic: The studentised mean difference, ``mean(d) / (sd(d) / sqrt(n))``
        (Student's t of the observed differences).
      p_value: The two-sided p-value; see :func:`bootstrap_test`.
      mean_difference: ``mean(a - b)``.
      low: The lower end of the percentile confidence interval of the mean
        difference.
      high: Its upper end.
      count: How many resamples were at least as extreme as the observed
        differences, an integer array.
      samples: The number of bootstrap resamples.
      confidence: The confidence level of ``(low, high)``.
    """

    statistic: Float64Result
    p_value: Float64Result
    mean_difference: Float64Result
    low: Float64Result
    high: Float64Result
    count: Float64Result
    samples: int
    confidence: float


def _nan_where_nonfinite(value, a, b):
    """NaN for each comparison whose inputs hold NaN or infinity (traced inputs only)."""
    bad = jnp.any(~jnp.isfinite(a) | ~jnp.isfinite(b), axis=-1)
    return jnp.where(bad, jnp.nan, value)


# --------------------------------------------------------------------------- #
# Kernels (float64; call under jax.enable_x64)
# --------------------------------------------------------------------------- #


def _ratio(numerator, denominator):
    """``numerator / denominator``, with 0 / 0 = 0 and x / 0 = +-inf (a degenerate test)."""
    safe = jnp.where(denominator > 0, denominator, 1.0)
    limit = jnp.where(numerator == 0, 0.0, jnp.sign(numerator) * jnp.inf)
    return jnp.where(denominator > 0, numerator / safe, limit)


def _moments(d):
    """``(mean, centred, variance)`` of ``d`` along the last axis, exact for constants.

    When every value of a row is the same, the mean is that value and the
    centred values and variance are exactly 0 (summing and dividing could
    leave a round-off variance that would make t huge instead of infinite).
    """
    n = d.shape[-1]
    first = d[..., 0]
    constant = jnp.all(d == first[..., None], axis=-1)
    mean = jnp.where(constant, first, jnp.mean(d, axis=-1))
    centred = jnp.where(constant[..., None], 0.0, d - mean[..., None])
    variance = jnp.sum(centred * centred, axis=-1) / (n - 1)
    return mean, centred, variance


@jax.jit
def _t_moments(d):
    """``(t, mean, d_z)`` of the differences ``d``, ``(..., n)``."""
    n = d.shape[-1]
    mean, _, variance = _moments(d)
    return _ratio(mean, jnp.sqrt(variance / n)), mean, _ratio(mean, jnp.sqrt(variance))


def _t_p_value(t, df: int):
    """:func:`_student_t.t_two_sided` on ``t`` flattened and padded to a power of two (at least 8).

    The tail is the largest program here; padding lets a few compilations
    serve every batch shape (under an outer ``jit`` it is traced inline).
    """
    flat = t.reshape(-1)
    size = max(8, 1 << max(flat.shape[0] - 1, 0).bit_length())
    padded = jnp.pad(flat, (0, size - flat.shape[0]))
    return _student_t.t_two_sided(padded, df)[: flat.shape[0]].reshape(t.shape)


def t_kernel(d):
    """``(t, p, mean, d_z)`` of the differences ``d``, ``(..., n)``."""
    statistic, mean, effect = _t_moments(d)
    return statistic, _t_p_value(statistic, d.shape[-1] - 1), mean, effect


def _chunk_rows(n: int) -> int:
    """Rows of a chunk: a float64 ``(rows, n)`` matrix of at most ``_CHUNK_BYTES``."""
    return max(1, min(_MAX_CHUNK_ROWS, _CHUNK_BYTES // (8 * n)))


def _bootstrap_rows(n: int) -> int:
    """Resamples per chunk: an eighth of :func:`_chunk_rows`.

    Drawing the indices (through 64-bit random words) and counting them takes
    about six times the float64 count matrix itself: 49 MiB in all at 10,000
    queries (XLA's memory analysis).
    """
    return max(1, _chunk_rows(n) // 8)


def _tie_tolerance(a, b):
    """How far below ``|T_obs|`` a flipped sum still counts as equal to it.

    ``2 (n + 1) eps sum(|a| + |b|)``: twice the first-order bound on the
    rounding error of both sums in any order, of the differences, and of the
    inputs themselves, so that statistics equal in exact arithmetic count.
    """
    n = a.shape[-1]
    return 2.0 * (n + 1) * _student_t.EPS * jnp.sum(jnp.abs(a) + jnp.abs(b), axis=-1)


def _windows(chunks: int, work_per_chunk: int, traced: bool):
    """``(first, window)`` chunk ranges that cover ``range(chunks)``; one range when traced."""
    if traced:
        return [(0, chunks)]
    window = max(1, min(chunks, _WINDOW_WORK // max(work_per_chunk, 1)))
    return [(first, window) for first in range(0, chunks, window)]


@functools.partial(jax.jit, static_argnames=("window", "flips", "exact"))
def _sign_flip_window(a, b, key, first, *, window: int, flips: int, exact: bool):
    """How many sign vectors of chunks ``[first, first + window)`` are as extreme as ``sum(d)``.

    A sign vector counts when ``|sum(s * d)| >= |sum(d)| - tolerance``. ``a``
    and ``b`` are ``(pairs, n)``; every pair shares the sign vectors. Row
    ``r`` of the sign matrix is the binary expansion of ``r`` when ``exact``
    (all ``2**n`` rows), else 32 sign bits per draw of ``jax.random.bits``
    from ``fold_in(key, chunk)``. Each chunk is one ``(rows, n) @ (n, pairs)``
    product in float64; rows past ``flips`` do not count.
    """
    pairs, n = a.shape
    d = a - b
    threshold = jnp.abs(jnp.sum(d, axis=-1)) - _tie_tolerance(a, b)
    rows = _chunk_rows(n)
    words = -(-n // 32)
    positions = jnp.arange(n, dtype=jnp.int64)
    shifts = jnp.arange(32, dtype=jnp.uint32)

    def signs(chunk):
        if exact:
            index = chunk * rows + jnp.arange(rows, dtype=jnp.int64)
            bits = (index[:, None] >> positions) & 1
        else:
            drawn = jax.random.bits(jax.random.fold_in(key, chunk), (rows, words), jnp.uint32)
            bits = ((drawn[:, :, None] >> shifts) & 1).reshape(rows, words * 32)[:, :n]
        return jnp.where(bits == 1, -1.0, 1.0)

    def body(offset, count):
        chunk = first + offset
        flipped = jnp.matmul(signs(chunk), d.T, precision=lax.Precision.HIGHEST)
        extreme = jnp.abs(flipped) >= threshold
        valid = chunk * rows + jnp.arange(rows) < flips
        return count + jnp.sum(extreme & valid[:, None], axis=0)

    return lax.fori_loop(0, window, body, jnp.zeros(pairs, jnp.int64))


def _sign_flip_counts(a, b, key, *, flips: int, exact: bool):
    """:func:`_sign_flip_window` over every chunk, a window at a time when eager."""
    pairs, n = a.shape
    rows = _chunk_rows(n)
    traced = not _validation.is_concrete(a, key)
    count = jnp.zeros(pairs, jnp.int64)
    for first, window in _windows(-(-flips // rows), rows * n * (pairs + 4), traced):
        _interrupt.raise_if_interrupted()
        count = count + _sign_flip_window(
            a, b, key, jnp.int64(first), window=window, flips=flips, exact=exact
        )
        if not traced:
            count.block_until_ready()
    return count


@functools.partial(jax.jit, static_argnames=("window", "samples"))
def _bootstrap_window(d, key, first, *, window: int, samples: int):
    """``(count, means)`` of the paired bootstrap's chunks ``[first, first + window)``.

    ``d`` is ``(pairs, n)``. Each resample is a row of multinomial counts (how
    often each query was drawn), shared by every pair; ``counts @ [w, w**2]``
    gives the mean and variance of the resampled centred differences
    ``w = d - mean(d)``. ``count`` is how many resamples' ``|t*|`` reach
    ``|t_obs|``; ``means`` are the ``(window * rows, pairs)`` resampled mean
    differences, rows past ``samples`` included.
    """
    pairs, n = d.shape
    mean, centred, variance = _moments(d)
    observed = _ratio(mean, jnp.sqrt(variance / n))
    basis = jnp.concatenate([centred, centred * centred], axis=0).T  # (n, 2 * pairs)
    rows = _bootstrap_rows(n)

    def body(offset, state):
        count, means = state
        chunk = first + offset
        drawn = jax.random.randint(jax.random.fold_in(key, chunk), (rows, n), 0, n, jnp.int32)
        # One flat scatter of int32 positions: a (rows, n, 2) index array would
        # take twice the memory of the counts themselves.
        flat = (drawn + n * jnp.arange(rows, dtype=jnp.int32)[:, None]).reshape(-1)
        counts = jnp.zeros(rows * n).at[flat].add(1.0).reshape(rows, n)
        sums = jnp.matmul(counts, basis, precision=lax.Precision.HIGHEST)
        shifted = sums[:, :pairs] / n
        spread = jnp.maximum(sums[:, pairs:] - n * shifted * shifted, 0.0) / (n - 1)
        statistic = _ratio(shifted, jnp.sqrt(spread / n))
        valid = chunk * rows + jnp.arange(rows) < samples
        extreme = (jnp.abs(statistic) >= jnp.abs(observed)) & valid[:, None]
        means = lax.dynamic_update_slice(means, mean + shifted, (offset * rows, 0))
        return count + jnp.sum(extreme, axis=0), means

    start = (jnp.zeros(pairs, jnp.int64), jnp.zeros((window * rows, pairs)))
    return lax.fori_loop(0, window, body, start)


@functools.partial(jax.jit, static_argnames=("samples",))
def _bootstrap_summary(d, means, quantiles, *, samples: int):
    """``(t_obs, mean, interval)``: t of ``d``, and quantiles of the first ``samples`` means."""
    mean, _, variance = _moments(d)
    observed = _ratio(mean, jnp.sqrt(variance / d.shape[-1]))
    return observed, mean, jnp.quantile(means[:samples], quantiles, axis=0)


def _bootstrap_kernel(d, key, quantiles, *, samples: int):
    """``(t_obs, count, mean, interval)`` of the paired bootstrap of ``d``, ``(pairs, n)``."""
    pairs, n = d.shape
    rows = _bootstrap_rows(n)
    traced = not _validation.is_concrete(d, key)
    count = jnp.zeros(pairs, jnp.int64)
    means = []
    for first, window in _windows(-(-samples // rows), 8 * rows * n * (pairs + 4), traced):
        _interrupt.raise_if_interrupted()
        window_count, window_means = _bootstrap_window(
            d, key, jnp.int64(first), window=window, samples=samples
        )
        count = count + window_count
        means.append(window_means)
        if not traced:
            count.block_until_ready()
    means = means[0] if len(means) == 1 else jnp.concatenate(means)
    observed, mean, interval = _bootstrap_summary(d, means, quantiles, samples=samples)
    return observed, count, mean, interval


def _key(seed):
    """The threefry key of ``seed``, built without reading the x64 setting.

    ``jax.random.key(seed)`` converts the seed with the configuration in force
    when it is lowered, which under an outer ``jax.jit`` without x64 is not the
    one inside :func:`jax.enable_x64`. For a seed below ``2**32`` this is the
    same key: the threefry words ``(0, seed)``.
    """
    words = jnp.stack([jnp.zeros((), jnp.uint32), jnp.asarray(seed).astype(jnp.uint32)])
    return jax.random.wrap_key_data(words, impl="threefry2x32")


# --------------------------------------------------------------------------- #
# The tests
# --------------------------------------------------------------------------- #


def paired_t_test(a, b) -> TTestResult:
    r"""Student's paired t-test of ``a`` against ``b`` over the same queries.

    With ``d = a - b`` over ``n`` queries, ``t = mean(d) / (sd(d) / sqrt(n))``
    with the sample standard deviation, and the p-value is two-sided,
    ``P(|T| >= |t|)`` for Student's T with ``n - 1`` degrees of freedom. The
    effect size is Cohen's d for paired data, ``d_z = mean(d) / sd(d)``
    (``t / sqrt(n)``).

    The statistic and p-value agree with ``scipy.stats.ttest_rel(a, b)`` to
    1e-12 relative. Where every difference is 0 the statistic and effect size
    are 0 and the p-value is 1: no evidence of a difference (scipy gives
    NaN). Where every difference is the same non-zero value, t and d_z are
    +-inf and the p-value is 0.

    Args:
      a: ``(..., n)`` per-query scores of the first run; leading axes are
        separate comparisons.
      b: ``(..., n)`` per-query scores of the second run, for the same queries
        in the same order.

    Returns:
      A :class:`TTestResult` whose arrays have the batch shape ``a.shape[:-1]``.

    Raises:
      ValueError: ``a`` and ``b`` differ in shape, are scalars or not numeric,
        hold fewer than 2 queries, or (on concrete inputs) contain NaN or
        infinity.

    Example:
      Eight queries, the first run ahead on seven of them:

      >>> import numpy as np
      >>> from lodestar import stats
      >>> a = np.array([0.61, 0.42, 0.75, 0.33, 0.58, 0.49, 0.66, 0.71])
      >>> b = np.array([0.55, 0.40, 0.62, 0.35, 0.51, 0.41, 0.60, 0.63])
      >>> r = stats.paired_t_test(a, b)
      >>> r.degrees_of_freedom
      7
      >>> print(f"{float(r.mean_difference):.4f} {float(r.effect_size):.3f}")
      0.0600 1.351

    References:
      Student, "The probable error of a mean", Biometrika 6(1), 1908.

      Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed.,
      1988 (d_z for paired samples, section 2.3).

      Smucker, Allan & Carterette, "A comparison of statistical significance
      tests for information retrieval evaluation", CIKM 2007.
      https://doi.org/10.1145/1321440.1321528
    """
    caller = "paired_t_test"
    _checks.check_traceable(a, b, caller=caller)
    with jax.enable_x64(True):
        a, b = _checks.check_pair(a, b, caller=caller)
        statistic, p_value, mean, effect = _checks.host_results(t_kernel(a - b))
    return TTestResult(statistic, p_value, a.shape[-1] - 1, mean, effect)


def randomization_test(a, b, *, permutations: int = 100_000, seed=0) -> RandomizationResult:
    r"""Fisher's paired randomization test of ``a`` against ``b``, two-sided.

    Under the null hypothesis the two runs are exchangeable on every query,
    so each difference ``d_i = a_i - b_i`` is as likely to have had the other
    sign. The statistic is the mean difference; a sign vector ``s`` gives
    ``T(s) = sum(s_i d_i)``, and it is **at least as extreme** as the
    observed ``T_obs = sum(d_i)`` when ``|T(s)| >= |T_obs| - tau``.

    * **Exact.** When ``2**n <= permutations`` every one of the ``2**n`` sign
      vectors is enumerated (the observed one included) and the p-value is
      ``count / 2**n``, with ``exact=True``.
    * **Monte Carlo.** Otherwise ``permutations`` sign vectors are drawn
      uniformly and independently, and the p-value is
      ``(count + 1) / (permutations + 1)``: the observed sign vector counts
      once, so the p-value is never 0 and the test is valid at every level
      (Phipson & Smyth). Its standard error is about
      ``sqrt(p (1 - p) / permutations)``, 0.0007 at p = 0.05 by default.

    ``tau = 2 (n + 1) eps sum_i (|a_i| + |b_i|)``, with ``eps = 2**-52``, is
    twice the bound on the rounding of both sums, of the differences and of
    the inputs. Sign flips whose statistic equals the observed one exactly,
    which is common with quantised measures such as P@10, therefore count,
    whatever order the sums were taken in; a real gap below ``tau`` (at most
    9e-8 for 10,000 queries of scores in [0, 1]) would count too.

    The sign vectors depend only on ``seed`` and ``n``: the same seed gives the
    same p-values, the first ``m`` draws are the same for any
    ``permutations >= m``, and the leading axes of ``a`` and ``b`` share them.
    Each chunk of sign vectors is at most a 64 MiB float64 matrix, and one
    matrix product with the differences of every comparison in the batch.
    Called eagerly, the test runs its chunks a few tens of milliseconds at a
    time, so that Ctrl-C (``KeyboardInterrupt``) stops it, and its
    computation, within a fraction of a second.

    Args:
      a: ``(..., n)`` per-query scores of the first run; leading axes are
        separate comparisons, tested with the same sign flips.
      b: ``(..., n)`` per-query scores of the second run, same queries and order.
      permutations: The number of random sign vectors, an int >= 1; when
        ``2**n`` is at most this, the exact test is used instead. Static
        under ``jax.jit``.
      seed: The random seed, an int in ``[0, 2**32 - 1]`` (or an integer JAX
        scalar).

    Returns:
      A :class:`RandomizationResult` whose arrays have the batch shape
      ``a.shape[:-1]``.

    Raises:
      ValueError: as :func:`paired_t_test`.
      InvalidParameterError: ``permutations`` or ``seed`` is out of range.
      RuntimeError: traced (under ``jax.jit`` or ``vmap``) with x64 off.

    Example:
      Ten queries, so all 1,024 sign flips are enumerated:

      >>> import numpy as np
      >>> from lodestar import stats
      >>> a = np.array([0.5, 0.7, 0.4, 0.9, 0.6, 0.8, 0.3, 0.7, 0.6, 0.5])
      >>> b = np.array([0.4, 0.5, 0.4, 0.6, 0.5, 0.6, 0.4, 0.5, 0.6, 0.3])
      >>> r = stats.randomization_test(a, b)
      >>> r.exact, r.permutations, int(r.count), round(float(r.p_value), 6)
      (True, 1024, 32, 0.03125)

      Under ``jax.jit``, with ``permutations`` static and x64 on while tracing:

      >>> import jax
      >>> test = jax.jit(stats.randomization_test, static_argnames="permutations")
      >>> with jax.enable_x64(True):
      ...     r = test(a, b, permutations=1_000)
      >>> int(r.count) > 0
      True

    References:
      Fisher, *The Design of Experiments*, 1935, section 21.

      Smucker, Allan & Carterette, "A comparison of statistical significance
      tests for information retrieval evaluation", CIKM 2007.
      https://doi.org/10.1145/1321440.1321528

      Phipson & Smyth, "Permutation p-values should never be zero", Stat. Appl.
      Genet. Mol. Biol. 9(1), 2010. https://doi.org/10.2202/1544-6115.1585
    """
    caller = "randomization_test"
    _checks.check_traceable(a, b, seed, caller=caller)
    permutations = _checks.check_int(permutations, name="permutations", caller=caller, low=1)
    seed = _checks.check_seed(seed, caller=caller)
    with jax.enable_x64(True):
        a, b = _checks.check_pair(a, b, caller=caller)
        *arrays, flips, exact = randomization(a, b, seed, permutations)
        statistic, p_value, mean, count = _checks.host_results(arrays)
    return RandomizationResult(statistic, p_value, mean, count, flips, exact)


def randomization(a, b, seed, permutations):
    """The test on float64 ``(..., n)`` arrays (under x64); float64 results."""
    batch, n = a.shape[:-1], a.shape[-1]
    exact = n < 63 and 2**n <= permutations
    flips = 2**n if exact else permutations
    count = _sign_flip_counts(
        a.reshape(-1, n), b.reshape(-1, n), _key(seed), flips=flips, exact=exact
    ).reshape(batch)
    p_value = count / flips if exact else (count + 1) / (flips + 1)
    p_value = _nan_where_nonfinite(p_value, a, b)
    mean = jnp.mean(a - b, axis=-1)
    return mean, p_value, mean, count, flips, exact


def bootstrap_test(
    a, b, *, samples: int = 10_000, seed=0, confidence: float = 0.95
) -> BootstrapResult:
    r"""The paired bootstrap test of ``a`` against ``b``, and a confidence interval.

    The queries are resampled with replacement ``samples`` times, each
    resample a draw of ``n`` queries out of ``n``; every comparison in the
    batch uses the same resamples.

    * **p-value (studentised, shift method).** The differences are shifted to
      mean 0, ``w_i = d_i - mean(d)``, so that resampling them samples the null
      hypothesis. For each resample ``w*``, ``t* = mean(w*) / (sd(w*) / sqrt(n))``;
      the p-value is ``(count + 1) / (samples + 1)`` where ``count`` is the
      number of resamples with ``|t*| >= |t_obs|`` and ``t_obs`` is Student's t
      of ``d``. This is Sakai's paired bootstrap test, Efron & Tibshirani's
      one-sample test (section 16.4) applied to the differences, except that
      the observed sample counts once, as in :func:`randomization_test`, so the p-value is never 0
      (Sakai's ``count / samples`` is at most ``1 / (samples + 1)`` smaller).
      A resample with ``sd(w*) = 0`` has ``t* = 0`` if its mean is 0, else
      +-inf. Where every difference is 0 the p-value is 1.
    * **Confidence interval (percentile).** The ``(1 - confidence) / 2`` and
      ``(1 + confidence) / 2`` quantiles of the resampled mean differences
      ``mean(d*)``, each interpolated linearly between order statistics
      (NumPy's default ``"linear"``, Hyndman & Fan's type 7). On few queries
      it covers less than its level, as percentile intervals do: about 88%
      for 95% at 10 queries; the t-interval of :func:`compare_scores` with
      ``test="t"`` holds its level there for normal differences.

    Args:
      a: ``(..., n)`` per-query scores of the first run; leading axes are
        separate comparisons, resampled together.
      b: ``(..., n)`` per-query scores of the second run, same queries and order.
      samples: The number of bootstrap resamples, an int >= 1. Static under
        ``jax.jit``.
      seed: The random seed, an int in ``[0, 2**32 - 1]`` (or an integer JAX
        scalar).
      confidence: The level of the interval, in (0, 1).

    Returns:
      A :class:`BootstrapResult` whose arrays have the batch shape
      ``a.shape[:-1]``.

    Raises:
      ValueError: as :func:`paired_t_test`.
      InvalidParameterError: ``samples``, ``seed`` or ``confidence`` is out of
        range. The interval holds every resampled mean, so ``samples`` times
        the comparisons in the batch may be at most ``2**27`` (1 GiB).
      RuntimeError: traced (under ``jax.jit`` or ``vmap``) with x64 off.

    Example:
      >>> import numpy as np
      >>> from lodestar import stats
      >>> a = np.array([0.61, 0.42, 0.75, 0.33, 0.58, 0.49, 0.66, 0.71])
      >>> b = np.array([0.55, 0.40, 0.62, 0.35, 0.51, 0.41, 0.60, 0.63])
      >>> r = stats.bootstrap_test(a, b, samples=2_000, seed=1)
      >>> float(r.low) < float(r.mean_difference) < float(r.high)
      True
      >>> float(r.p_value) < 0.05
      True

    References:
      Sakai, "Evaluating evaluation metrics based on the bootstrap", SIGIR 2006.
      https://doi.org/10.1145/1148170.1148261

      Efron & Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall,
      1993, sections 13.3 (percentile interval) and 16.4.

      Smucker, Allan & Carterette, CIKM 2007.
      https://doi.org/10.1145/1321440.1321528
    """
    caller = "bootstrap_test"
    _checks.check_traceable(a, b, seed, caller=caller)
    samples = _checks.check_int(samples, name="samples", caller=caller, low=1)
    seed = _checks.check_seed(seed, caller=caller)
    confidence = _checks.check_unit_interval(confidence, name="confidence", caller=caller)
    with jax.enable_x64(True):
        a, b = _checks.check_pair(a, b, caller=caller)
        statistic, p_value, mean, low, high, count = _checks.host_results(
            bootstrap(a, b, seed, samples, confidence, caller=caller)
        )
    return BootstrapResult(statistic, p_value, mean, low, high, count, samples, confidence)


def bootstrap(a, b, seed, samples, confidence, *, caller: str):
    """The test on float64 ``(..., n)`` arrays (under x64); float64 results.

    Raises:
      InvalidParameterError: ``samples`` times the comparisons in the batch
        exceeds :data:`MAX_BOOTSTRAP_MEANS`.
    """
    batch, n = a.shape[:-1], a.shape[-1]
    comparisons = math.prod(batch)
    if samples * comparisons > MAX_BOOTSTRAP_MEANS:
        raise _validation.Interval(int, 1, MAX_BOOTSTRAP_MEANS // comparisons, "both").refusal(
            samples,
            name="samples",
            caller=caller,
            also=f"for {comparisons} comparison(s): the confidence interval holds every "
            f"resampled mean, at most {MAX_BOOTSTRAP_MEANS:,} of them (1 GiB)",
        )
    quantiles = jnp.array([(1.0 - confidence) / 2, (1.0 + confidence) / 2])
    observed, count, mean, interval = _bootstrap_kernel(
        (a - b).reshape(-1, n), _key(seed), quantiles, samples=samples
    )
    p_value = _nan_where_nonfinite(((count + 1) / (samples + 1)).reshape(batch), a, b)
    return (
        observed.reshape(batch),
        p_value,
        mean.reshape(batch),
        interval[0].reshape(batch),
        interval[1].reshape(batch),
        count.reshape(batch),
    )
