"""The one preparation every public function shares: validate, lay out, pick a dtype.

:mod:`lodestar.metrics`, :mod:`lodestar.smooth`, :mod:`lodestar.losses` and
:mod:`lodestar.streaming` open the same way: check the options and shapes that
are static (they raise under ``jit`` too), check the values on concrete arrays
(decision 0003), lay packed lists out one per block (decision 0009), and
compute in the promoted floating dtype. That sequence lives here once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _gains, _segments, _validation


def prepare(
    scores,
    labels,
    where,
    *,
    caller: str,
    nonnegative_labels: bool = False,
    segments=None,
    max_segments=None,
    max_segment_size=None,
    gain=None,
    temperature: float | jax.Array | None = None,
    one_result: bool = False,
) -> _segments.LaidOutLists:
    """Validate ``(scores, labels, where)`` and lay packed lists out for a kernel.

    Args:
      scores: ``(..., n)`` array-like.
      labels: ``(..., n)`` array-like.
      where: ``(..., n)`` boolean mask, or None.
      caller: The public function's name, used in every message.
      nonnegative_labels: Refuse negative labels in real items.
      segments: ``(..., n)`` integer list ids, or None.
      max_segments: See :func:`lodestar._segments.split`.
      max_segment_size: See :func:`lodestar._segments.split`.
      gain: The gain the labels go through, if any: with ``"exp2"``, a list
        whose gains overflow the compute dtype is refused (checked on each
        list once laid out, after the other value checks).
      temperature: The smooth functions' temperature, if any, already checked
        by :func:`lodestar._validation.check_temperature_option`: a concrete
        one below the smallest normal number of the compute dtype is
        refused, under ``jit`` too (a traced one was guarded there).
      one_result: Whether every list is reduced to one number; see
        :func:`lodestar._segments.split`.

    Returns:
      The :class:`lodestar._segments.LaidOutLists` to hand a kernel.

    Raises:
      ValueError: a static check fails, or on concrete arrays a value check.
      InvalidParameterError: ``temperature`` is too small for the compute dtype.
    """
    scores, labels, where = _validation.check_lists(scores, labels, where, caller=caller)
    _validation.check_values(
        scores, labels, where, caller=caller, nonnegative_labels=nonnegative_labels
    )
    lists = _segments.split(
        scores,
        labels,
        where,
        segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        caller=caller,
        one_result=one_result,
    )
    dtype = compute_dtype(scores, labels)
    _gains.check_gains(lists.labels, lists.where, gain, dtype, caller=caller)
    if temperature is not None:
        _validation.check_temperature(temperature, dtype, caller=caller)
    return lists


def gain_overflows(gain, scores: jax.Array, labels: jax.Array, where: jax.Array | None):
    """Per list, whether ``gain="exp2"`` overflows the compute dtype; None for other gains.

    ``scores``, ``labels`` and ``where`` are laid out one list per row (see
    :func:`prepare`); the result feeds the NaN rule of decision 0003.
    """
    return _gains.gain_overflows(gain, labels, where, compute_dtype(scores, labels))


def compute_dtype(*arrays: jax.Array):
    """The floating dtype a function computes and returns in.

    Floating inputs promote among themselves; integer and boolean inputs do
    not widen them. With no floating input the default float dtype is used.
    Half-precision results are widened to float32.
    """
    return _validation.compute_dtype(*(a.dtype for a in arrays))


def valid(scores: jax.Array, where: jax.Array | None) -> jax.Array:
    """The mask of real items: ``where``, or all True."""
    return jnp.ones_like(scores, dtype=bool) if where is None else where


def floating(scores: jax.Array, labels: jax.Array, valid: jax.Array):
    """``(scores, labels, dtype)``: both in the compute dtype, zero on padding."""
    dtype = compute_dtype(scores, labels)
    s = jnp.where(valid, scores.astype(dtype), 0)
    y = jnp.where(valid, labels.astype(dtype), 0)
    return s, y, dtype


def nan_rule(
    value,
    scores,
    labels,
    where,
    s,
    *,
    nonnegative_labels: bool = False,
    gain=None,
    options=(),
):
    """``value``, NaN with a NaN gradient for each list holding a value the checks refuse.

    The rule of the differentiated functions, :mod:`lodestar.smooth` and
    :mod:`lodestar.losses`. Concrete inputs were refused before the kernel, so
    this acts on traced ones only (decision 0003): a non-finite score or label,
    a negative label where refused, or exp2 gains that overflow. Unlike the
    exact metrics, an infinite score gives NaN too: a soft rank or a loss is a
    function of the score values, not only of their order. ``value`` holds one
    value per list or one per item; ``s`` the floating scores it was computed
    from. ``options`` are the traced float options (a temperature, a margin):
    one that :func:`lodestar._validation.check_traceable_float` turned NaN,
    being out of its range, turns every list NaN, gradient included, even
    where the arithmetic would hide it (a hinge's zero slope).
    """
    bad = _validation.invalid_lists(
        scores,
        labels,
        where,
        nonnegative_labels=nonnegative_labels,
        finite_scores=True,
        overflow=gain_overflows(gain, scores, labels, where),
    )
    for option in options:
        option = jnp.asarray(option)
        if jnp.issubdtype(option.dtype, jnp.floating):
            bad = bad | jnp.isnan(option)
    return _validation.nan_with_nan_gradient(value, bad, s, valid(scores, where))


def check_weights(weights, batch_shape, *, caller: str, item_shape=None):
    """``weights`` as ``(per_list, per_item)`` arrays, one of them None (both without weights).

    ``batch_shape`` is the shape of one weight per list; ``item_shape``, when
    given, the shape of one weight per item (the scores' shape). The two never
    coincide without packed lists (they differ in rank); with packed lists
    they coincide when a row holds as many lists as items, and then the
    weights are per item, as in Rax.

    Raises:
      ValueError: ``weights`` is not real-valued, has another shape, or on
        concrete arrays holds NaN, infinity or a negative value.
    """
    if weights is None:
        return None, None
    dtype = getattr(weights, "dtype", None)
    if dtype is None:
        dtype = np.asarray(weights).dtype
    if not jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"{caller} expects real-valued numeric weights; got dtype {dtype}.")
    weights = jnp.asarray(weights)
    per_item = item_shape is not None and weights.shape == tuple(item_shape)
    if not per_item and weights.shape != tuple(batch_shape):
        items = "" if item_shape is None else f" or per-item weights of shape {tuple(item_shape)}"
        raise ValueError(
            f"{caller} expects per-list weights of shape {tuple(batch_shape)} (the scores' "
            f"shape without its last axis){items}; got weights {weights.shape}."
        )
    if _validation.is_concrete(weights):
        values = np.asarray(weights, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError(
                _validation.nonfinite_message(
                    "weights", nan=bool(np.isnan(values).any()), dtype=dtype
                )
            )
        if np.any(values < 0):
            raise ValueError(f"{caller} should not be used with negative weights.")
    return (None, weights) if per_item else (weights, None)
