"""Gain functions and positional discount tables.

Positions are 0-based throughout the implementation: the item ranked first sits
at position 0 and receives the discount ``1 / log_b(0 + 2) = 1`` for ``b = 2``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np


def apply_gain(gain: str | Callable, labels: jax.Array) -> jax.Array:
    """Map labels to gains: ``"linear"`` is the label, ``"exp2"`` is 2^label - 1.

    A callable is applied elementwise to the labels and must return an array of
    the same shape.

    Raises:
      ValueError: a callable gain returned an array of another shape.
    """
    if gain == "linear":
        return labels
    if gain == "exp2":
        # exp2 - 1 rather than expm1(label * ln 2): exact for integer grades,
        # which is what every other implementation of 2^rel - 1 produces.
        return jnp.exp2(labels) - 1
    gains = jnp.asarray(gain(labels), dtype=labels.dtype)
    if gains.shape != labels.shape:
        raise ValueError(
            f"A callable gain must return an array of the labels' shape "
            f"{labels.shape}; it returned shape {gains.shape}."
        )
    return gains


def discounts(n: int, *, k: int | None, log_base: float) -> np.ndarray:
    """The DCG discount of each position, ``1 / log_b(p + 2)``, zero from ``k`` on.

    Computed in float64 NumPy at trace time with scikit-learn's order of
    operations, ``1 / (log(p + 2) / log(b))``, so that the exact paths agree
    with ``sklearn.metrics.dcg_score`` to round-off. A base of 1 makes every
    discount 0 (``1 / inf``) without a warning.

    Args:
      n: The list length.
      k: Positions ``p >= k`` get discount 0; None keeps all.
      log_base: The logarithm base, in (0, inf).

    Returns:
      A float64 array of shape ``(n,)``.
    """
    with np.errstate(divide="ignore"):
        table = 1 / (np.log(np.arange(n) + 2) / np.log(log_base))
    if k is not None:
        table[k:] = 0
    return table


def reciprocal_discounts(n: int, *, k: int | None) -> np.ndarray:
    """The reciprocal-rank weight of each position, ``1 / (p + 1)``, zero from ``k``."""
    table = 1 / (np.arange(n) + 1.0)
    if k is not None:
        table[k:] = 0
    return table


def cumulative(table: np.ndarray) -> np.ndarray:
    """``W[p] = sum(table[:p])`` for ``p = 0 .. n``: shape ``(n + 1,)``.

    The mean of ``table`` over positions ``[a, a + t)`` is then
    ``(W[a + t] - W[a]) / t``, which is how tie blocks are averaged.
    """
    return np.concatenate([[0.0], np.cumsum(table)])
