"""Pointwise losses: each item's score against its own label."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar.losses import _common


@_common.loss_kernel(nonnegative_labels=False)
def _pointwise_mse_kernel(s, y, valid, w):
    return jnp.sum(jnp.where(valid, w * jnp.square(s - y), 0), axis=-1)


@_common.loss_kernel(nonnegative_labels=False)
def _pointwise_sigmoid_kernel(s, y, valid, w):
    # Sigmoid cross-entropy with targets clipped into [0, 1], written so that
    # no score overflows: max(s, 0) - s y + log(1 + exp(-|s|)).
    target = jnp.clip(y, 0, 1)
    loss = jax.nn.relu(s) - s * target + jnp.log1p(jnp.exp(-jnp.abs(s)))
    return jnp.sum(jnp.where(valid, w * loss, 0), axis=-1)


def pointwise_mse_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pointwise squared error, summed over the items of each list.

    .. math::

        \ell(s, y) = \sum_i (y_i - s_i)^2

    over the real items: a regression of the scores on the labels.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance labels (any real values).
      where: ``(..., n)`` boolean mask; False marks padding.
      weights: ``(...)`` per-list weights, or ``(..., n)`` per-item weights
        as in Rax (see the module docstring).
      reduction: ``"mean"`` (over lists with a real item), ``"sum"`` or
        ``"none"``.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        each list is then one list of the reduction (see *Packed lists* in the
        module docstring).
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> print(f"{losses.pointwise_mse_loss(jnp.array([1.0, 0.5]), jnp.array([2.0, 0.0])):.4f}")
      1.2500

    Remarks:
      Per list this is :func:`rax.pointwise_mse_loss` with
      ``reduce_fn=jnp.sum``. Rax's default ``reduce_fn=jnp.mean`` averages
      over the items of the batch instead.

    References:
      Cossock & Zhang, "Subset ranking using regression", COLT 2006.
      https://doi.org/10.1007/11776420_44
    """
    caller = "pointwise_mse_loss"
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=False,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    return _pointwise_mse_kernel(scores, labels, where, weights, item_weights, reduction=reduction)


def pointwise_sigmoid_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pointwise sigmoid cross-entropy, summed over the items of each list.

    Each label, clipped into [0, 1], is the target probability that its item
    is relevant, and :math:`\sigma(s_i)` the predicted one:

    .. math::

        \ell(s, y) = -\sum_i \left( \bar y_i \log \sigma(s_i)
            + (1 - \bar y_i) \log (1 - \sigma(s_i)) \right),
        \qquad \bar y_i = \min(\max(y_i, 0), 1)

    computed as :math:`\max(s_i, 0) - s_i \bar y_i + \log(1 + e^{-|s_i|})`, so
    that scores of any size stay finite.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance labels; values outside [0, 1] are clipped.
      where: ``(..., n)`` boolean mask; False marks padding.
      weights: ``(...)`` per-list weights, or ``(..., n)`` per-item weights
        as in Rax (see the module docstring).
      reduction: ``"mean"`` (over lists with a real item), ``"sum"`` or
        ``"none"``.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        each list is then one list of the reduction (see *Packed lists* in the
        module docstring).
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores, labels = jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0])
      >>> print(f"{losses.pointwise_sigmoid_loss(scores, labels):.4f}")  # 2 log 2
      1.3863

    Remarks:
      Per list this is :func:`rax.pointwise_sigmoid_loss` with
      ``reduce_fn=jnp.sum``, which clips the labels likewise.

    References:
      Nallapati, "Discriminative models for information retrieval", SIGIR
      2004. https://doi.org/10.1145/1008992.1009006
    """
    caller = "pointwise_sigmoid_loss"
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=False,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    return _pointwise_sigmoid_kernel(
        scores, labels, where, weights, item_weights, reduction=reduction
    )
