r"""Significance tests for comparing retrieval systems on the same queries.

"Is run B really better than run A?" Every test here works on **per-query
scores**, one value per query for each run, over the same queries in the same
order, however they were computed (``lodestar evaluate``, trec_eval, or
anything else):

* :func:`paired_t_test`: Student's paired t-test, with Cohen's d_z;
* :func:`randomization_test`: Fisher's paired randomization (sign-flip) test
  on the mean difference, exact when every sign flip can be enumerated;
* :func:`bootstrap_test`: the paired bootstrap test (studentised, shift
  method) and a percentile confidence interval for the mean difference;
* :func:`holm` and :func:`bonferroni`: family-wise corrections of p-values;
* :func:`compare_scores`: every pair of several runs on several measures,
  corrected per measure, as a :class:`Comparison` that renders the
  superscript table of papers (plain text, Markdown or LaTeX).

>>> import numpy as np
>>> from lodestar import stats
>>> a = np.array([0.61, 0.42, 0.75, 0.33, 0.58, 0.49, 0.66, 0.71])
>>> b = np.array([0.55, 0.40, 0.62, 0.35, 0.51, 0.41, 0.60, 0.63])
>>> result = stats.paired_t_test(a, b)
>>> print(f"t = {float(result.statistic):.3f}, p = {float(result.p_value):.4f}")
t = 3.822, p = 0.0065

**Shapes.** ``a`` and ``b`` have shape ``(..., n)``: ``n`` queries along the
last axis, and any leading axes are separate comparisons (pairs of runs,
measures) tested at once. The randomization and bootstrap tests draw one set
of sign flips or resamples for the whole batch, and it depends only on the
seed and ``n``, so a pair's p-value is the same whether it is tested alone or
with others.

**Precision.** Every test computes in float64 and returns float64 whatever
``jax_enable_x64`` says, because p-values near a threshold, p-values far
below float32's range and exactly tied statistics need it (decision 0014
records the measurements). Eager calls return NumPy float64 values (int64
counts), scalars for a single comparison, so a p-value of 1e-230 is not
rounded to 0 on the way out. The functions are pure and work under
:func:`jax.jit`, with ``permutations`` and ``samples`` static, and then
return JAX float64 arrays: they need x64 on while they are traced (globally,
or ``with jax.enable_x64(True):`` around the jitted call), and say so rather
than compile in float32. Values are checked on concrete inputs only, as
everywhere in lodestar.

**Degenerate inputs.** When every difference ``a - b`` of a comparison is 0,
no test has evidence of a difference: the statistic and effect size are 0
and the p-value is 1 (scipy's ``ttest_rel`` gives NaN there). When every
difference is the same non-zero value, the standard deviation is exactly 0:
t and d_z are infinite and the t-test's p-value is 0, as scipy gives when its
variance rounds to 0.

``docs/decisions/0014-significance-tests.md`` records the conventions.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import textwrap
from collections.abc import Mapping
from fractions import Fraction
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import _docs, _validation
from lodestar._validation import InvalidParameterError

__all__ = [
    "BootstrapResult",
    "Comparison",
    "RandomizationResult",
    "TTestResult",
    "bonferroni",
    "bootstrap_test",
    "compare_scores",
    "holm",
    "paired_t_test",
    "randomization_test",
]

_EPS = float(np.finfo(np.float64).eps)  # 2**-52
# Each chunk of sign flips or resamples is a float64 (rows, n) matrix of at
# most this many bytes, and at most _MAX_CHUNK_ROWS rows.
_CHUNK_BYTES = 64 * 2**20
_MAX_CHUNK_ROWS = 4096
_MAX_SEED = 2**32 - 1
_TESTS = ("t", "randomization", "bootstrap")
_CORRECTIONS = ("holm", "bonferroni", "none")
_STYLES = ("table", "markdown", "latex")


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


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #


def _check_int(value, *, name: str, caller: str, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]``; refuse bools, floats and the rest."""
    if not _validation.is_int(value) or value < low or (high is not None and value > high):
        upper = "inf)" if high is None else f"{high}]"
        raise InvalidParameterError(
            f"The '{name}' parameter of {caller} must be an int in the range "
            f"[{low}, {upper}. Got {value!r} instead."
        )
    return int(value)


def _check_seed(seed, *, caller: str):
    """An int in ``[0, 2**32 - 1]``, or an integer JAX array of shape () (traced seeds)."""
    if isinstance(seed, jax.Array) and seed.shape == () and jnp.issubdtype(seed.dtype, jnp.integer):
        return seed
    return _check_int(seed, name="seed", caller=caller, low=0, high=_MAX_SEED)


def _check_unit_interval(value, *, name: str, caller: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        # numbers.Real's stub orders it with < and <= only; NaN fails the first test.
        or not value < 1.0
        or value <= 0.0
    ):
        raise InvalidParameterError(
            f"The '{name}' parameter of {caller} must be a float in the range "
            f"(0.0, 1.0). Got {value!r} instead."
        )
    return float(value)


def _dtype_of(x):
    dtype = getattr(x, "dtype", None)
    return np.asarray(x).dtype if dtype is None else dtype


def _check_numeric(x, *, name: str, caller: str) -> None:
    dtype = _dtype_of(x)
    if not (
        jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)
    ) or jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"{caller} expects real-valued numeric {name}; got dtype {dtype}.")


def _check_pair(a, b, *, caller: str):
    """Validate ``(a, b)`` and return them as float64 JAX arrays (call under x64).

    Raises:
      ValueError: non-numeric input, a scalar, different shapes, fewer than 2
        queries, or (on concrete inputs) NaN or infinity.
    """
    _check_numeric(a, name="a", caller=caller)
    _check_numeric(b, name="b", caller=caller)
    a = jnp.asarray(a).astype(jnp.float64)
    b = jnp.asarray(b).astype(jnp.float64)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"{caller} expects a and b of shape (..., n), one value per query along "
            f"the last axis; got a scalar."
        )
    if a.shape != b.shape:
        raise ValueError(
            f"{caller} expects a and b of the same shape (the same queries in the "
            f"same order); got a {a.shape} and b {b.shape}."
        )
    if a.shape[-1] < 2:
        raise ValueError(
            f"{caller} needs at least 2 queries (the last axis of a and b); got {a.shape[-1]}."
        )
    for name, x in (("a", a), ("b", b)):
        nan_message = _validation.nonfinite_message(name, nan=True, dtype=x.dtype)
        inf_message = _validation.nonfinite_message(name, nan=False, dtype=np.dtype(x.dtype))
        if _validation.is_concrete(x):
            if bool(jnp.any(jnp.isnan(x))):
                raise ValueError(nan_message)
            if bool(jnp.any(jnp.isinf(x))):
                raise ValueError(inf_message)
        else:
            _validation.traced_check(jnp.logical_not(jnp.any(jnp.isnan(x))), nan_message)
            _validation.traced_check(jnp.logical_not(jnp.any(jnp.isinf(x))), inf_message)
    return a, b


def _check_traceable(*inputs, caller: str) -> None:
    """Refuse traced inputs when x64 is off: a traced result could not be float64."""
    if not _validation.is_concrete(*inputs) and not jax.config.read("jax_enable_x64"):
        raise RuntimeError(
            f"{caller} computes and returns float64, which JAX holds (and lowers its "
            f"random draws in) only with x64 on: under jax.jit or vmap, turn "
            f"jax_enable_x64 on (globally, or with jax.enable_x64(True) around the call)."
        )


def _results(arrays):
    """Concrete results as NumPy float64 and int64, whatever ``jax_enable_x64`` says.

    A p-value of 1e-300 or one 5e-8 from a threshold must survive the return
    (decision 0014); a JAX array made float64 inside ``jax.enable_x64`` would
    be float64 in a program that cannot hold it. Traced results (x64 is then
    on) are returned as they are.
    """
    return tuple(np.asarray(x)[()] if _validation.is_concrete(x) else x for x in arrays)


def _nan_where_nonfinite(value, a, b):
    """NaN for each comparison whose inputs hold NaN or infinity (traced inputs only)."""
    bad = jnp.any(~jnp.isfinite(a) | ~jnp.isfinite(b), axis=-1)
    return jnp.where(bad, jnp.nan, value)


# --------------------------------------------------------------------------- #
# Student's t distribution, in float64
# --------------------------------------------------------------------------- #


def _exact_log_beta_half(a: float) -> float:
    """``log B(a, 1/2)`` for a half-integer ``a`` below 10, by exact recurrence.

    ``B(a + 1, 1/2) = B(a, 1/2) a / (a + 1/2)`` from ``B(1/2, 1/2) = pi`` and
    ``B(1, 1/2) = 2``: at most ten roundings.
    """
    value, start = (math.pi, 0.5) if a != int(a) else (2.0, 1.0)
    while start < a:
        value *= start / (start + 0.5)
        start += 1.0
    return math.log(value)


# log B(df / 2, 1/2) for df = 1, ..., 19.
_LOG_BETA_HALF = np.array([_exact_log_beta_half(df / 2) for df in range(1, 20)])


def _log1p_small(z):
    """``log(1 + z)`` for ``|z| <= 1/4`` to a few ulp.

    XLA's float64 ``log1p`` on CPU is off by up to about 240 ulp (measured
    against mpmath), which the factor ``df / 2`` multiplying it in the t tail
    would turn into a relative error of 1e-12 and more. This is the series
    ``2 atanh(w) = 2 (w + w^3/3 + ...)`` with ``w = z / (2 + z)``, ``|w| <= 1/7``,
    summed to 14 terms (the next is below 1e-24 of the first): about 3 ulp.
    """
    w = z / (2.0 + z)
    w2 = w * w
    total = jnp.zeros_like(w)
    for k in range(13, -1, -1):
        total = total * w2 + 2.0 / (2 * k + 1)
    return w * total


def _log_beta_half(df):
    """``log B(df / 2, 1/2)`` for a positive integer ``df`` (traced), to a few ulp.

    Below ``df = 20`` from a table built by exact recurrence; from there on
    by the difference of Stirling's series for ``lgamma(a + 1/2) - lgamma(a)``,
    which keeps its absolute error at a few ulp where subtracting two large
    ``lgamma`` values would not.
    """
    table = jnp.asarray(_LOG_BETA_HALF)[jnp.clip(jnp.round(df).astype(jnp.int32) - 1, 0, 18)]
    a = jnp.maximum(df / 2.0, 10.0)

    def series(z):  # lgamma's Stirling series beyond (z - 1/2) log z - z + log(2 pi) / 2
        w = 1.0 / (z * z)
        coefficients = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
        return sum(c * w**k for k, c in enumerate(coefficients)) / z

    difference = a * _log1p_small(0.5 / a) - 0.5 + 0.5 * jnp.log(a) + (series(a + 0.5) - series(a))
    return jnp.where(df < 20, table, 0.5 * math.log(math.pi) - difference)


_TINY = 1e-300
_MAX_ITERATIONS = 20_000


def _beta_continued_fraction(a: float | jax.Array, b: float, x):
    """The continued fraction of ``I_x(a, b)`` (modified Lentz), elementwise.

    ``I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * cf``; it converges quickly
    for ``x < (a + 1) / (a + b + 2)``.
    """

    def guard(v):
        return jnp.where(jnp.abs(v) < _TINY, _TINY, v)

    c = jnp.ones_like(x)
    d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    done = jnp.isnan(x) | (x == 0)

    def step(c, d, coefficient):
        d = 1.0 / guard(1.0 + coefficient * d)
        c = guard(1.0 + coefficient / c)
        return c, d, c * d

    def body(state):
        m, c, d, h, done = state
        even = m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m))
        c1, d1, delta1 = step(c, d, even)
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))
        c2, d2, delta2 = step(c1, d1, odd)
        keep = done
        h = jnp.where(keep, h, h * delta1 * delta2)
        done = done | (jnp.abs(delta2 - 1.0) < _EPS)
        return m + 1.0, jnp.where(keep, c, c2), jnp.where(keep, d, d2), h, done

    def cond(state):
        return (state[0] < _MAX_ITERATIONS) & ~jnp.all(state[4])

    return lax.while_loop(cond, body, (jnp.float64(1.0), c, d, d, done))[3]


def _hypergeometric_series(a: float | jax.Array, y):
    """``sum_k (a + 1/2)_k / (3/2)_k y^k``, elementwise: ``I_y(1/2, a)`` over its prefactor."""

    def body(state):
        k, term, total, done = state
        term = term * (a + 0.5 + k) * y / (1.5 + k)
        new_total = total + term
        done = done | (term <= _EPS * new_total)
        return k + 1.0, term, jnp.where(state[3], total, new_total), done

    def cond(state):
        return (state[0] < _MAX_ITERATIONS) & ~jnp.all(state[3])

    ones = jnp.ones_like(y)
    start = (jnp.float64(0.0), ones, ones, jnp.isnan(y) | (y == 0))
    return lax.while_loop(cond, body, start)[2]


def _series_coefficients(terms: int) -> tuple[float, ...]:
    """``c_n`` of ``(sinh(z/2) / (z/2))**(-1/2) = sum_n c_n z**(2n)``, exactly then rounded.

    The power ``g**alpha`` of ``g(w) = sum_k w**k / (4**k (2k + 1)!)``, with
    ``w = z**2``, by J. C. P. Miller's recurrence, in rational arithmetic.
    """
    g = [Fraction(1, 4**k * math.factorial(2 * k + 1)) for k in range(terms)]
    alpha = Fraction(-1, 2)
    h = [Fraction(1)]
    for n in range(1, terms):
        terms_n = (((alpha + 1) * k - n) * g[k] * h[n - k] for k in range(1, n + 1))
        h.append(sum(terms_n, Fraction(0)) / n)
    return tuple(float(c) for c in h)


_BGRAT = _series_coefficients(20)


def _t_tail_large_df(log_x, df):
    """``I_x(df/2, 1/2)`` for ``df >= 30`` and ``-log x <= 2``: the expansion in ``1 / T``.

    With ``T = df/2 - 1/4`` and ``u = -T log x``, substituting
    ``x = exp(-s / T)`` in the incomplete beta integral gives exactly
    ``I_x(a, 1/2) = sum_n c_n T**(-2n) Gamma(1/2 + 2n, u) / (sqrt(T) B(a, 1/2))``
    (:data:`_BGRAT`; DiDonato & Morris's BGRAT for ``b = 1/2``). The upper
    incomplete gammas start from ``Gamma(1/2, u) = sqrt(pi) erfc(sqrt(u))`` and
    climb by ``Gamma(s + 1, u) = s Gamma(s, u) + u**s exp(-u)``, all terms
    positive. Twenty terms leave less than 1e-19 in the range used. ``x``
    enters only through ``log x``, taken to a few ulp from ``y = 1 - x``, so
    the conditioning near ``x = 1`` that limits the continued fraction does
    not arise.
    """
    t_ = df / 2.0 - 0.25
    u = -t_ * log_x
    log_u = jnp.log(u)
    coefficients = jnp.asarray(_BGRAT)

    def term(n, state):
        gamma, total, scale = state
        s = 2.0 * n - 1.5  # Gamma(s, u) -> Gamma(s + 2, u)
        gamma = s * gamma + jnp.exp(s * log_u - u)
        gamma = (s + 1.0) * gamma + jnp.exp((s + 1.0) * log_u - u)
        scale = scale / (t_ * t_)
        return gamma, total + coefficients[n] * scale * gamma, scale

    gamma = math.sqrt(math.pi) * jax.scipy.special.erfc(jnp.sqrt(u))
    start = (gamma, coefficients[0] * gamma, jnp.ones_like(t_))
    total = lax.fori_loop(1, len(_BGRAT), term, start)[1]
    return total * jnp.exp(-0.5 * jnp.log(t_) - _log_beta_half(df))


@jax.jit
def _t_two_sided(t, df):
    """``P(|T| >= |t|)`` for Student's T with ``df`` degrees of freedom, in float64.

    ``df`` is a positive integer, traced (one compilation serves every
    number of queries). The p-value is ``I_x(df/2, 1/2)`` with
    ``x = df / (df + t^2)`` and ``y = 1 - x = t^2 / (df + t^2)``, each formed
    directly from ``t``; the logarithm of the one near 1 is taken as
    ``log(1 - other)`` to a few ulp, and ``log B(df/2, 1/2)`` to a few ulp.

    * ``df >= 30`` and ``x >= exp(-2)``: the expansion of
      :func:`_t_tail_large_df`, in ``log x`` only.
    * ``df < 30`` and ``t^2 < max(3, 1.25 log df)``: ``1 - I_y(1/2, df/2)``
      from its hypergeometric series, whose terms are all positive (p > 0.08
      there, so the subtraction costs little).
    * Elsewhere (``x`` at most ``(a + 1) / (a + 2.5)``): the continued fraction
      of ``I_x(df/2, 1/2)``.

    Measured against mpmath (40 digits) at the float64 ``t`` given, for
    ``df`` from 1 to 20,000, the relative error is below 2e-13 wherever ``p``
    exceeds 1e-290 (far in the tail the rounding of ``t`` itself dominates,
    for scipy as here); against scipy, it is below 4e-14 for ``p`` above
    1e-20 and ``df`` up to 10**6. XLA's float64 ``betainc`` was off by up to
    100% in the tails of large ``df``, hence this code.
    """
    t = jnp.asarray(t, jnp.float64)
    df = jnp.asarray(df, jnp.float64)
    a = df / 2.0
    t2 = t * t
    x = 1.0 / (1.0 + t2 / df)  # t = +-inf gives 0, t = 0 gives 1
    y = 1.0 / (1.0 + df / t2)  # and the other way round
    log_x = jnp.where(y < 0.25, _log1p_small(-jnp.minimum(y, 0.25)), jnp.log(x))
    log_y = jnp.where(x < 0.25, _log1p_small(-jnp.minimum(x, 0.25)), jnp.log(y))
    log_front = a * log_x + 0.5 * log_y - _log_beta_half(df)
    expansion = (df >= 30) & (log_x >= -2.0)
    central = (df < 30) & (t2 < jnp.maximum(3.0, 1.25 * jnp.log(df)))
    fraction = _beta_continued_fraction(a, 0.5, jnp.where(expansion | central, 0.0, x))
    tail = jnp.exp(log_front) * fraction / a
    near = 1.0 - jnp.exp(log_front) * _hypergeometric_series(a, jnp.where(central, y, 0.0)) / 0.5
    large = _t_tail_large_df(jnp.where(expansion, log_x, -1.0), df)
    p = jnp.where(expansion, large, jnp.where(central, near, tail))
    return jnp.where(jnp.isnan(t), jnp.nan, jnp.clip(p, 0.0, 1.0))


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
    """:func:`_t_two_sided` on ``t`` flattened and padded to a power of two (at least 8).

    The tail is the largest program here; padding lets a few compilations
    serve every batch shape (under an outer ``jit`` it is traced inline).
    """
    flat = t.reshape(-1)
    size = max(8, 1 << max(flat.shape[0] - 1, 0).bit_length())
    padded = jnp.pad(flat, (0, size - flat.shape[0]))
    return _t_two_sided(padded, df)[: flat.shape[0]].reshape(t.shape)


def _t_kernel(d):
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
    return 2.0 * (n + 1) * _EPS * jnp.sum(jnp.abs(a) + jnp.abs(b), axis=-1)


@functools.partial(jax.jit, static_argnames=("flips", "exact"))
def _sign_flip_counts(a, b, key, *, flips: int, exact: bool):
    """How many of ``flips`` sign vectors give ``|sum(s * d)| >= |sum(d)| - tolerance``.

    ``a`` and ``b`` are ``(pairs, n)``; every pair shares the sign vectors. Row
    ``r`` of the sign matrix is the binary expansion of ``r`` when ``exact``
    (all ``2**n`` rows), else 32 sign bits per draw of ``jax.random.bits``
    from ``fold_in(key, chunk)``. Each chunk is one ``(rows, n) @ (n, pairs)``
    product in float64.
    """
    pairs, n = a.shape
    d = a - b
    threshold = jnp.abs(jnp.sum(d, axis=-1)) - _tie_tolerance(a, b)
    rows = _chunk_rows(n)
    chunks = -(-flips // rows)
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

    def body(chunk, count):
        flipped = jnp.matmul(signs(chunk), d.T, precision=lax.Precision.HIGHEST)
        extreme = jnp.abs(flipped) >= threshold
        valid = chunk * rows + jnp.arange(rows) < flips
        return count + jnp.sum(extreme & valid[:, None], axis=0)

    return lax.fori_loop(0, chunks, body, jnp.zeros(pairs, jnp.int64))


@functools.partial(jax.jit, static_argnames=("samples",))
def _bootstrap_kernel(d, key, quantiles, *, samples: int):
    """``(t_obs, count, mean, interval)`` of the paired bootstrap of ``d``, ``(pairs, n)``.

    Each resample is a row of multinomial counts (how often each query was
    drawn), shared by every pair; ``counts @ [w, w**2]`` gives the mean and
    variance of the resampled centred differences ``w = d - mean(d)``.
    """
    pairs, n = d.shape
    mean, centred, variance = _moments(d)
    observed = _ratio(mean, jnp.sqrt(variance / n))
    basis = jnp.concatenate([centred, centred * centred], axis=0).T  # (n, 2 * pairs)
    rows = _bootstrap_rows(n)
    chunks = -(-samples // rows)

    def body(chunk, state):
        count, means = state
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
        means = lax.dynamic_update_slice(means, mean + shifted, (chunk * rows, 0))
        return count + jnp.sum(extreme, axis=0), means

    start = (jnp.zeros(pairs, jnp.int64), jnp.zeros((chunks * rows, pairs)))
    count, means = lax.fori_loop(0, chunks, body, start)
    interval = jnp.quantile(means[:samples], quantiles, axis=0)
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
    _check_traceable(a, b, caller=caller)
    with jax.enable_x64(True):
        a, b = _check_pair(a, b, caller=caller)
        statistic, p_value, mean, effect = _results(_t_kernel(a - b))
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
    _check_traceable(a, b, seed, caller=caller)
    permutations = _check_int(permutations, name="permutations", caller=caller, low=1)
    seed = _check_seed(seed, caller=caller)
    with jax.enable_x64(True):
        a, b = _check_pair(a, b, caller=caller)
        *arrays, flips, exact = _randomization(a, b, seed, permutations)
        statistic, p_value, mean, count = _results(arrays)
    return RandomizationResult(statistic, p_value, mean, count, flips, exact)


def _randomization(a, b, seed, permutations):
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
      (NumPy's default ``"linear"``, Hyndman & Fan's type 7).

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
        range.
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
    _check_traceable(a, b, seed, caller=caller)
    samples = _check_int(samples, name="samples", caller=caller, low=1)
    seed = _check_seed(seed, caller=caller)
    confidence = _check_unit_interval(confidence, name="confidence", caller=caller)
    with jax.enable_x64(True):
        a, b = _check_pair(a, b, caller=caller)
        statistic, p_value, mean, low, high, count = _results(
            _bootstrap(a, b, seed, samples, confidence)
        )
    return BootstrapResult(statistic, p_value, mean, low, high, count, samples, confidence)


def _bootstrap(a, b, seed, samples, confidence):
    """The test on float64 ``(..., n)`` arrays (under x64); float64 results."""
    batch, n = a.shape[:-1], a.shape[-1]
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


# --------------------------------------------------------------------------- #
# Corrections
# --------------------------------------------------------------------------- #


def _check_p_values(p_values, *, caller: str):
    _check_numeric(p_values, name="p_values", caller=caller)
    p = jnp.asarray(p_values)
    p = p.astype(jnp.result_type(p.dtype, float))
    if p.ndim == 0:
        raise ValueError(f"{caller} expects p_values of shape (..., m); got a scalar.")
    if _validation.is_concrete(p):
        if bool(jnp.any(jnp.isnan(p))):
            raise ValueError("Input p_values contains NaN.")
        if bool(jnp.any((p < 0) | (p > 1))):
            raise ValueError(f"{caller} expects p-values in [0, 1]; got a value outside.")
    return p


@_docs.shared
def bonferroni(p_values):
    """Bonferroni's family-wise correction: ``min(1, m p)`` for ``m`` p-values.

    Args:
      {{p_values}}

    Returns:
      The adjusted p-values, same shape and float dtype. Rejecting where the
      adjusted p-value is at most ``alpha`` controls the family-wise error
      rate at ``alpha``.

    Raises:
      {{p_values_error}}

    Example:
      >>> from lodestar import stats
      >>> [round(float(p), 4) for p in stats.bonferroni([0.01, 0.04, 0.03, 0.005])]
      [0.04, 0.16, 0.12, 0.02]

    References:
      Dunn, "Multiple comparisons among means", JASA 56(293), 1961.
      https://doi.org/10.1080/01621459.1961.10482090
    """
    p = _check_p_values(p_values, caller="bonferroni")
    return _bonferroni(p)


@jax.jit
def _bonferroni(p):
    return jnp.minimum(p * p.shape[-1], 1.0)


@_docs.shared
def holm(p_values):
    """Holm's step-down family-wise correction of ``m`` p-values.

    With the p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of
    ``p_(i)`` is ``max_{j <= i} min(1, (m - j + 1) p_(j))``: the running
    maximum makes the adjusted values monotone in the raw ones, and equal raw
    p-values get equal adjusted ones. It controls the family-wise error rate
    as Bonferroni does and is never less powerful. The values agree with
    ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]`` and R's
    ``p.adjust(p, "holm")``.

    Args:
      {{p_values}}

    Returns:
      The adjusted p-values, same shape and float dtype, in the input's order.

    Raises:
      {{p_values_error}}

    Example:
      >>> from lodestar import stats
      >>> [round(float(p), 4) for p in stats.holm([0.01, 0.04, 0.03, 0.005])]
      [0.03, 0.06, 0.06, 0.02]

    References:
      Holm, "A simple sequentially rejective multiple test procedure",
      Scand. J. Statist. 6(2), 1979. https://www.jstor.org/stable/4615733
    """
    p = _check_p_values(p_values, caller="holm")
    return p if p.shape[-1] == 0 else _holm(p)


@jax.jit
def _holm(p):
    m = p.shape[-1]
    order = jnp.argsort(p, axis=-1, stable=True)
    ranked = jnp.take_along_axis(p, order, axis=-1) * (m - jnp.arange(m))
    adjusted = jnp.minimum(lax.cummax(ranked, axis=ranked.ndim - 1), 1.0)
    inverse = jnp.argsort(order, axis=-1, stable=True)
    return jnp.take_along_axis(adjusted, inverse, axis=-1)


# --------------------------------------------------------------------------- #
# Comparing several runs
# --------------------------------------------------------------------------- #

_SUPERSCRIPTS = dict(
    zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ\U000107a5ʳˢᵗᵘᵛʷˣʸᶻ", strict=True)
)
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_MARKDOWN_SPECIAL = {"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escape(text: str, table: Mapping[str, str]) -> str:
    return "".join(table.get(character, character) for character in text)


def _wrap(note: str) -> str:
    """``note`` in lines of at most 79 characters, never breaking ``p ≤ alpha``."""
    kept = note.replace(" ≤ ", "\0≤\0").replace("adjusted p", "adjusted\0p")
    return textwrap.fill(kept, width=79).replace("\0", " ")


def _readonly(array) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """Every pair of several runs tested on several measures: :func:`compare_scores`.

    Arrays indexed by runs follow the order of ``runs``, and measures that
    of ``measures``. Entry ``[i, j, k]`` of a pairwise array compares run
    ``i`` with run ``j`` on measure ``k``; the diagonal compares a run with
    itself (difference 0, p-value 1, never significant). The arrays are
    read-only NumPy float64 (``significant`` is boolean).

    Attributes:
      runs: The run names, in the order given.
      measures: The measure names, in the order of the first run.
      queries: The number of queries every array covers.
      test: ``"t"``, ``"randomization"`` or ``"bootstrap"``.
      correction: ``"holm"``, ``"bonferroni"`` or ``"none"``.
      alpha: The significance level.
      permutations: The number of sign flips (``2**queries`` when exact) for
        the randomization test, else None.
      exact: Whether the randomization test enumerated every sign flip; None
        for the other tests.
      samples: The number of bootstrap resamples, else None.
      seed: The seed of the randomization (Monte Carlo) or bootstrap test,
        else None.
      means: ``(runs, measures)`` the mean of each run on each measure.
      mean_differences: ``(runs, runs, measures)`` the mean per-query
        difference, run ``i`` minus run ``j``.
      effect_sizes: ``(runs, runs, measures)`` Cohen's d_z of those
        differences (``mean / sd``; 0 when they are all 0, +-inf when all equal).
      p_values: ``(runs, runs, measures)`` two-sided p-values, symmetric.
      adjusted_p_values: ``(runs, runs, measures)`` the p-values corrected over
        the ``runs * (runs - 1) / 2`` pairs of each measure, symmetric.
      significant: ``(runs, runs, measures)`` whether the adjusted p-value is
        at most ``alpha``, symmetric; which run is better is the sign of
        ``mean_differences``.
    """

    runs: tuple[str, ...]
    measures: tuple[str, ...]
    queries: int
    test: str
    correction: str
    alpha: float
    permutations: int | None
    exact: bool | None
    samples: int | None
    seed: int | None
    means: np.ndarray
    mean_differences: np.ndarray
    effect_sizes: np.ndarray
    p_values: np.ndarray
    adjusted_p_values: np.ndarray
    significant: np.ndarray

    @property
    def better(self) -> np.ndarray:
        """``(runs, runs, measures)``: run ``i`` is significantly better than run ``j``."""
        return self.significant & (self.mean_differences > 0)

    def better_than(self, run: str, measure: str) -> tuple[str, ...]:
        """The runs that ``run`` is significantly better than on ``measure``.

        Args:
          run: A run name.
          measure: A measure name.

        Returns:
          Their names, in the order of ``runs``.

        Raises:
          KeyError: an unknown run or measure.

        Example:
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> stats.compare_scores(scores).better_than("dense", "map")
          ('bm25',)
        """
        i = self._index(self.runs, run, "run")
        k = self._index(self.measures, measure, "measure")
        return tuple(name for j, name in enumerate(self.runs) if self.better[i, j, k])

    @staticmethod
    def _index(names, name, kind):
        try:
            return names.index(name)
        except ValueError:
            raise KeyError(f"No {kind} named {name!r}; the {kind}s are {list(names)}.") from None

    @property
    def pairs(self) -> int:
        """How many pairs of runs each measure's correction covers."""
        return len(self.runs) * (len(self.runs) - 1) // 2

    def to_dict(self) -> dict:
        """Everything as plain Python values, ready for ``json.dumps``.

        Returns:
          A dict with the settings (``runs``, ``measures``, ``queries``,
          ``test``, ``correction``, ``alpha``, ``permutations``, ``exact``,
          ``samples``, ``seed``), ``means`` as ``{run: {measure: mean}}``, and
          ``pairs``: one entry per pair of runs (``i < j`` in run order) and
          measure, with ``runs`` (the two names), ``measure``,
          ``mean_difference`` (first minus second), ``effect_size``,
          ``p_value``, ``adjusted_p_value``, ``significant`` and ``better``
          (the significantly better run's name, or None). An infinite effect
          size is written as None, so the result is strict JSON.

        Example:
          >>> import json
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> report = stats.compare_scores(scores).to_dict()
          >>> pair = report["pairs"][0]
          >>> pair["runs"], pair["better"], f"{pair['p_value']:.2e}"
          (['bm25', 'dense'], 'dense', '8.92e-05')
          >>> _ = json.dumps(report, allow_nan=False)
        """

        def number(x):
            x = float(x)
            return x if math.isfinite(x) else None

        pairs = []
        for i in range(len(self.runs)):
            for j in range(i + 1, len(self.runs)):
                for k, measure in enumerate(self.measures):
                    better = None
                    if self.better[i, j, k]:
                        better = self.runs[i]
                    elif self.better[j, i, k]:
                        better = self.runs[j]
                    pairs.append(
                        {
                            "runs": [self.runs[i], self.runs[j]],
                            "measure": measure,
                            "mean_difference": number(self.mean_differences[i, j, k]),
                            "effect_size": number(self.effect_sizes[i, j, k]),
                            "p_value": number(self.p_values[i, j, k]),
                            "adjusted_p_value": number(self.adjusted_p_values[i, j, k]),
                            "significant": bool(self.significant[i, j, k]),
                            "better": better,
                        }
                    )
        return {
            "runs": list(self.runs),
            "measures": list(self.measures),
            "queries": self.queries,
            "test": self.test,
            "correction": self.correction,
            "alpha": self.alpha,
            "permutations": self.permutations,
            "exact": self.exact,
            "samples": self.samples,
            "seed": self.seed,
            "means": {
                run: {m: number(self.means[i, k]) for k, m in enumerate(self.measures)}
                for i, run in enumerate(self.runs)
            },
            "pairs": pairs,
        }

    # ------------------------------------------------------------------ #
    # The report
    # ------------------------------------------------------------------ #

    def _labels(self) -> list[str]:
        if len(self.runs) <= 26:
            return [chr(ord("a") + i) for i in range(len(self.runs))]
        return [str(i + 1) for i in range(len(self.runs))]

    def _marks(self, i: int, k: int) -> list[str]:
        labels = self._labels()
        return [labels[j] for j in range(len(self.runs)) if self.better[i, j, k]]

    def note(self, style: str = "table") -> str:
        """The sentence under the table: what the superscripts mean and how they were tested.

        Args:
          style: ``"table"``, ``"markdown"`` or ``"latex"`` (``p`` and ``≤`` are
            typeset in math mode for LaTeX).

        Returns:
          One sentence naming the test, the correction, alpha and the number of
          queries.

        Raises:
          InvalidParameterError: an unknown ``style``.

        Example:
          >>> from lodestar import stats
          >>> scores = {"a": {"map": [0.2, 0.3, 0.1]}, "b": {"map": [0.5, 0.6, 0.4]}}
          >>> print(stats.compare_scores(scores).note())
          Superscripts mark the runs that a run is significantly better than
          (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 1 pair
          of runs per measure; 3 queries.
        """
        style = _validation.check_option(style, name="style", options=_STYLES, caller="note")
        if self.test == "t":
            test = "two-sided paired t-test"
        elif self.test == "randomization" and self.exact:
            test = f"two-sided paired randomization test over all {self.permutations:,} sign flips"
        elif self.test == "randomization":
            test = (
                f"two-sided paired randomization test, {self.permutations:,} random sign flips "
                f"(seed {self.seed})"
            )
        else:
            test = f"two-sided paired bootstrap test, {self.samples:,} resamples (seed {self.seed})"
        plural = "" if self.pairs == 1 else "s"
        if self.correction == "none":
            correction, p = "no correction for multiple comparisons", "p"
        else:
            name = "Holm" if self.correction == "holm" else "Bonferroni"
            correction = f"{name} correction over {self.pairs} pair{plural} of runs per measure"
            p = "adjusted p"
        threshold = f"{p} ≤ {self.alpha:g}"
        if style == "latex":
            threshold = f"{p.replace('p', '$p')} \\le {self.alpha:g}$"
        return (
            f"Superscripts mark the runs that a run is significantly better than "
            f"({threshold}): {test}, {correction}; {self.queries:,} queries."
        )

    def format(self, style: str = "table", *, digits: int = 4) -> str:
        r"""The table of means, marked with superscripts, and the note under it.

        One row per run, labelled ``a``, ``b``, ... in run order (``1``, ``2``,
        ... beyond 26 runs), one column per measure. Each mean carries the
        labels of the runs it is significantly better than on that measure,
        after the correction: the report convention of ranx and of many IR
        papers. The note under the table names the test, the correction,
        alpha and the number of queries (:meth:`note`).

        * ``"table"``: plain text in aligned columns, the labels as Unicode
          superscript letters (``0.4830ᵃᵇ``); beyond 26 runs, ``^(1,2)``.
        * ``"markdown"``: a GitHub table, ``0.4830<sup>ab</sup>``, and the note
          as a paragraph.
        * ``"latex"``: a ``table`` environment with a booktabs ``tabular``
          (``\usepackage{booktabs}``), ``0.4830$^{ab}$``, and the note as the
          caption. Run and measure names are escaped.

        Args:
          style: ``"table"``, ``"markdown"`` or ``"latex"``.
          digits: Decimal places of the means, an int in [0, 17].

        Returns:
          The report, lines joined by ``"\n"``, without a final newline.

        Raises:
          InvalidParameterError: an unknown ``style`` or a bad ``digits``.

        Example:
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> print(stats.compare_scores(scores).format())
          #  Run    map
          -  -----  -------
          a  bm25   0.2600
          b  dense  0.5800ᵃ
          <BLANKLINE>
          Superscripts mark the runs that a run is significantly better than
          (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 1 pair
          of runs per measure; 5 queries.
        """
        style = _validation.check_option(style, name="style", options=_STYLES, caller="format")
        digits = _check_int(digits, name="digits", caller="format", low=0, high=17)
        labels = self._labels()
        letters = len(self.runs) <= 26
        cells = []
        for i in range(len(self.runs)):
            row = []
            for k in range(len(self.measures)):
                value = f"{self.means[i, k]:.{digits}f}"
                marks = self._marks(i, k)
                joined = "".join(marks) if letters else ",".join(marks)
                if marks and style == "table":
                    value += (
                        "".join(_SUPERSCRIPTS[c] for c in joined) if letters else f"^({joined})"
                    )
                elif marks and style == "markdown":
                    value += f"<sup>{joined}</sup>"
                elif marks:
                    value += f"$^{{{joined}}}$"
                row.append(value)
            cells.append(row)
        if style == "table":
            return self._plain(labels, cells)
        if style == "markdown":
            return self._markdown(labels, cells)
        return self._latex(labels, cells)

    def _plain(self, labels, cells) -> str:
        header = ["#", "Run", *self.measures]
        rows = [[labels[i], run, *cells[i]] for i, run in enumerate(self.runs)]
        widths = [max(len(r[c]) for r in (header, *rows)) for c in range(len(header))]
        rule = ["-" * w for w in widths]

        def line(values):
            return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

        body = [line(header), line(rule), *(line(r) for r in rows)]
        return "\n".join([*body, "", _wrap(self.note("table"))])

    def _markdown(self, labels, cells) -> str:
        header = ["#", "Run", *(_escape(m, _MARKDOWN_SPECIAL) for m in self.measures)]
        lines = ["| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join(["---", "---", *(["---:"] * len(self.measures))]) + "|")
        for i, run in enumerate(self.runs):
            values = [labels[i], _escape(run, _MARKDOWN_SPECIAL), *cells[i]]
            lines.append("| " + " | ".join(values) + " |")
        return "\n".join([*lines, "", self.note("markdown")])

    def _latex(self, labels, cells) -> str:
        measures = [_escape(m, _LATEX_SPECIAL) for m in self.measures]
        lines = [
            "\\begin{table}",
            "\\centering",
            "\\begin{tabular}{ll" + "l" * len(self.measures) + "}",
            "\\toprule",
            " & ".join(["\\#", "Run", *measures]) + " \\\\",
            "\\midrule",
        ]
        for i, run in enumerate(self.runs):
            lines.append(" & ".join([labels[i], _escape(run, _LATEX_SPECIAL), *cells[i]]) + " \\\\")
        lines += [
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{{self.note('latex')}}}",
            "\\end{table}",
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format("table")


def _check_scores(scores) -> tuple[list[str], list[str], np.ndarray]:
    """``(runs, measures, values)`` with ``values`` float64 ``(runs, measures, queries)``."""
    caller = "compare_scores"
    if not isinstance(scores, Mapping):
        raise TypeError(
            f"{caller} expects scores as a mapping {{run: {{measure: per-query values}}}}; "
            f"got {type(scores).__name__}."
        )
    runs = list(scores)
    if len(runs) < 2:
        raise ValueError(f"{caller} needs at least 2 runs to compare; got {len(runs)}.")
    measures = None
    values = []
    first = None  # (run, measure, queries) of the first array, for messages
    for run in runs:
        if not isinstance(run, str):
            raise TypeError(f"{caller} expects run names as str; got {run!r}.")
        per_measure = scores[run]
        if not isinstance(per_measure, Mapping):
            raise TypeError(
                f"The scores of run {run!r} must be a mapping {{measure: per-query values}}; "
                f"got {type(per_measure).__name__}."
            )
        names = list(per_measure)
        if not names:
            raise ValueError(f"Run {run!r} has no measures.")
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"{caller} expects measure names as str; got {name!r}.")
        if measures is None:
            measures = names
        elif set(names) != set(measures):
            raise ValueError(
                f"Run {run!r} has measures {sorted(names)}, but run {runs[0]!r} has "
                f"{sorted(measures)}; every run needs the same measures."
            )
        row = []
        for measure in measures:
            where = f"The scores of run {run!r} on measure {measure!r}"
            raw = per_measure[measure]
            dtype = _dtype_of(raw)
            if not (
                jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)
            ) or jnp.issubdtype(dtype, jnp.complexfloating):
                raise ValueError(f"{where} must be real numbers; got dtype {dtype}.")
            array = np.asarray(raw, dtype=np.float64)
            if array.ndim != 1:
                raise ValueError(
                    f"{where} must be 1-D, one value per query; got shape {array.shape}."
                )
            if first is None:
                first = (run, measure, array.shape[0])
            elif array.shape[0] != first[2]:
                raise ValueError(
                    f"{where} cover {array.shape[0]} queries, but those of run {first[0]!r} "
                    f"on measure {first[1]!r} cover {first[2]}; every array must hold the "
                    f"same queries in the same order."
                )
            if np.isnan(array).any():
                raise ValueError(f"{where} contain NaN.")
            if np.isinf(array).any():
                raise ValueError(f"{where} contain infinity.")
            row.append(array)
        values.append(row)
    # Every run (there are at least 2) has a measure, so both are set.
    assert measures is not None and first is not None
    queries = first[2]
    if queries < 2:
        raise ValueError(f"{caller} needs at least 2 queries; got {queries}.")
    return runs, measures, np.array(values, dtype=np.float64)


def compare_scores(
    scores: Mapping[str, Mapping[str, object]],
    *,
    test: str = "t",
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = 100_000,
    samples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Test every pair of runs on every measure, corrected per measure.

    For each measure, each of the ``k (k - 1) / 2`` pairs of the ``k`` runs is
    tested once with the chosen two-sided test (the p-value of ``(i, j)`` is
    that of ``(j, i)``), and the correction is applied over those pairs: each
    measure is its own family. A run is significantly better than another on
    a measure when the adjusted p-value is at most ``alpha`` and its mean is
    higher. The randomization and bootstrap tests share one set of sign flips
    or resamples across every pair and measure (one matrix product per
    chunk), and a pair's p-value is the one :func:`randomization_test` or
    :func:`bootstrap_test` gives for it alone with the same seed.

    Args:
      scores: ``{run: {measure: per-query values}}``; every run has the same
        measures, and every array is 1-D over the same queries in the same
        order (at least 2). Runs keep the mapping's order; measures, the first
        run's order.
      test: ``"t"`` (:func:`paired_t_test`), ``"randomization"``
        (:func:`randomization_test`) or ``"bootstrap"`` (:func:`bootstrap_test`).
      alpha: The significance level, in (0, 1).
      correction: ``"holm"`` (:func:`holm`), ``"bonferroni"`` (:func:`bonferroni`)
        or ``"none"``.
      permutations: Sign flips for the randomization test, an int >= 1; the
        test is exact when ``2**queries`` is at most this.
      samples: Resamples for the bootstrap test, an int >= 1.
      seed: The seed of the randomization and bootstrap tests, an int in
        ``[0, 2**32 - 1]``.

    Returns:
      A :class:`Comparison`, with :meth:`Comparison.format` for the report and
      :meth:`Comparison.to_dict` for JSON.

    Raises:
      InvalidParameterError: an option outside its range or choices.
      TypeError: ``scores`` is not a mapping of mappings with str names.
      ValueError: fewer than 2 runs or 2 queries, runs with different
        measures, an array that is not 1-D or holds another number of
        queries, or NaN or infinity (the message names the run and measure).

    Example:
      Three runs on two measures over six queries:

      >>> from lodestar import stats
      >>> scores = {
      ...     "bm25":   {"ndcg@10": [0.31, 0.42, 0.25, 0.50, 0.38, 0.29],
      ...                "map":     [0.20, 0.33, 0.18, 0.41, 0.30, 0.22]},
      ...     "dense":  {"ndcg@10": [0.45, 0.51, 0.40, 0.62, 0.49, 0.41],
      ...                "map":     [0.31, 0.38, 0.25, 0.49, 0.37, 0.28]},
      ...     "hybrid": {"ndcg@10": [0.52, 0.58, 0.47, 0.69, 0.55, 0.50],
      ...                "map":     [0.36, 0.41, 0.30, 0.55, 0.40, 0.33]},
      ... }
      >>> print(stats.compare_scores(scores).format(digits=3))
      #  Run     ndcg@10  map
      -  ------  -------  -------
      a  bm25    0.358    0.273
      b  dense   0.480ᵃ   0.347ᵃ
      c  hybrid  0.552ᵃᵇ  0.392ᵃᵇ
      <BLANKLINE>
      Superscripts mark the runs that a run is significantly better than
      (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 3 pairs of
      runs per measure; 6 queries.

    References:
      Smucker, Allan & Carterette, "A comparison of statistical significance
      tests for information retrieval evaluation", CIKM 2007.
      https://doi.org/10.1145/1321440.1321528

      Holm, "A simple sequentially rejective multiple test procedure",
      Scand. J. Statist. 6(2), 1979.

      Bassani, "ranx: A blazing-fast Python library for ranking evaluation and
      comparison", ECIR 2022 (the report's superscript convention).
    """
    caller = "compare_scores"
    test = _validation.check_option(test, name="test", options=_TESTS, caller=caller)
    alpha = _check_unit_interval(alpha, name="alpha", caller=caller)
    correction = _validation.check_option(
        correction, name="correction", options=_CORRECTIONS, caller=caller
    )
    permutations = _check_int(permutations, name="permutations", caller=caller, low=1)
    samples = _check_int(samples, name="samples", caller=caller, low=1)
    seed = _check_int(seed, name="seed", caller=caller, low=0, high=_MAX_SEED)
    runs, measures, values = _check_scores(scores)
    k, n = len(runs), values.shape[-1]
    first, second = np.triu_indices(k, 1)
    # The report records the settings of the test that ran, None for the others'.
    flips = exact = samples_drawn = seed_used = None
    with jax.enable_x64(True):
        a = jnp.asarray(values[first])  # (pairs, measures, queries)
        b = jnp.asarray(values[second])
        _, t_p, mean, effect = _t_kernel(a - b)
        if test == "t":
            p = t_p
        elif test == "randomization":
            _, p, _, _, flips, exact = _randomization(a, b, seed, permutations)
            seed_used = None if exact else seed
        else:
            p = _bootstrap(a, b, seed, samples, 0.95)[1]
            samples_drawn, seed_used = samples, seed
        if correction == "holm":
            adjusted = holm(p.T).T
        elif correction == "bonferroni":
            adjusted = bonferroni(p.T).T
        else:
            adjusted = p
        mean, effect, p, adjusted = (np.asarray(x) for x in (mean, effect, p, adjusted))

    def square(upper, lower_sign, diagonal):
        full = np.full((k, k, len(measures)), diagonal, dtype=upper.dtype)
        full[first, second] = upper
        full[second, first] = upper if lower_sign > 0 else -upper
        return _readonly(full)

    p_values = square(p, 1, 1.0)
    adjusted_p_values = square(adjusted, 1, 1.0)
    return Comparison(
        runs=tuple(runs),
        measures=tuple(measures),
        queries=n,
        test=test,
        correction=correction,
        alpha=alpha,
        permutations=flips,
        exact=exact,
        samples=samples_drawn,
        seed=seed_used,
        means=_readonly(values.mean(axis=-1)),
        mean_differences=square(mean, -1, 0.0),
        effect_sizes=square(effect, -1, 0.0),
        p_values=p_values,
        adjusted_p_values=adjusted_p_values,
        significant=square(adjusted <= alpha, 1, False),
    )
