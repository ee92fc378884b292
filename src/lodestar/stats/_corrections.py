"""Family-wise corrections of p-values: Holm's and Bonferroni's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _validation
from lodestar.stats import _checks


def _check_p_values(p_values, *, caller: str):
    """``p_values`` checked, as a float64 JAX array (call under x64)."""
    _checks.check_numeric(p_values, name="p_values", caller=caller)
    p = jnp.asarray(p_values).astype(jnp.float64)
    if p.ndim == 0:
        raise ValueError(f"{caller} expects p_values of shape (..., m); got a scalar.")
    if _validation.is_concrete(p):
        if bool(jnp.any(jnp.isnan(p))):
            raise ValueError("Input p_values contains NaN.")
        if bool(jnp.any((p < 0) | (p > 1))):
            raise ValueError(f"{caller} expects p-values in [0, 1]; got a value outside.")
    return p


def bonferroni(p_values):
    """Bonferroni's family-wise correction: ``min(1, m p)`` for ``m`` p-values.

    Args:
      p_values: ``(..., m)`` p-values in [0, 1]; each row along the last axis
        is one family of ``m`` hypotheses.

    Returns:
      The adjusted p-values, same shape, float64 whatever ``jax_enable_x64``
      says (NumPy for a concrete input, as the tests return; see
      :mod:`lodestar.stats`). Rejecting where the adjusted p-value is at
      most ``alpha`` controls the family-wise error rate at ``alpha``.

    Raises:
      ValueError: a scalar, a non-numeric input, or (on concrete inputs) NaN
        or a value outside [0, 1].
      RuntimeError: traced (under :func:`jax.jit`) with x64 off.

    Example:
      >>> from lodestar import stats
      >>> [round(float(p), 4) for p in stats.bonferroni([0.01, 0.04, 0.03, 0.005])]
      [0.04, 0.16, 0.12, 0.02]

    References:
      Dunn, "Multiple comparisons among means", JASA 56(293), 1961.
      https://doi.org/10.1080/01621459.1961.10482090
    """
    caller = "bonferroni"
    _checks.check_traceable(p_values, caller=caller)
    with jax.enable_x64(True):
        p = _check_p_values(p_values, caller=caller)
        (adjusted,) = _checks.host_results([_bonferroni(p)])
    return adjusted


@jax.jit
def _bonferroni(p):
    return jnp.minimum(p * p.shape[-1], 1.0)


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
      p_values: ``(..., m)`` p-values in [0, 1]; each row along the last axis
        is one family of ``m`` hypotheses.

    Returns:
      The adjusted p-values, same shape, in the input's order; float64
      whatever ``jax_enable_x64`` says (NumPy for a concrete input, as the
      tests return; see :mod:`lodestar.stats`).

    Raises:
      ValueError: a scalar, a non-numeric input, or (on concrete inputs) NaN
        or a value outside [0, 1].
      RuntimeError: traced (under :func:`jax.jit`) with x64 off.

    Example:
      >>> from lodestar import stats
      >>> [round(float(p), 4) for p in stats.holm([0.01, 0.04, 0.03, 0.005])]
      [0.03, 0.06, 0.06, 0.02]

    References:
      Holm, "A simple sequentially rejective multiple test procedure",
      Scand. J. Statist. 6(2), 1979. https://www.jstor.org/stable/4615733
    """
    caller = "holm"
    _checks.check_traceable(p_values, caller=caller)
    with jax.enable_x64(True):
        p = _check_p_values(p_values, caller=caller)
        (adjusted,) = _checks.host_results([p if p.shape[-1] == 0 else _holm(p)])
    return adjusted


@jax.jit
def _holm(p):
    m = p.shape[-1]
    order = jnp.argsort(p, axis=-1, stable=True)
    ranked = jnp.take_along_axis(p, order, axis=-1) * (m - jnp.arange(m))
    adjusted = jnp.minimum(lax.cummax(ranked, axis=ranked.ndim - 1), 1.0)
    inverse = jnp.argsort(order, axis=-1, stable=True)
    return jnp.take_along_axis(adjusted, inverse, axis=-1)
