"""Pairwise losses: a sum over the list's ordered pairs, in column blocks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _pairs, _validation
from lodestar.losses import _common


def _pairwise_sum(pair_loss, s, y, valid, w):
    """Sum ``pair_loss(s_i - s_j) * w_i`` over the pairs with ``y_i > y_j``, in blocks."""

    def term(rows, columns, distinct):
        (s_i, y_i, valid_i, w_i), (s_j, y_j, valid_j, _) = rows, columns
        pair = valid_i & valid_j & (y_i > y_j)
        return jnp.where(pair, pair_loss(s_i - s_j) * w_i, 0)

    return _pairs.pair_sum(term, (s, y, valid, w), over="pairs")


@_common.loss_kernel(nonnegative_labels=False)
def _pairwise_logistic_kernel(s, y, valid, w, temperature):
    def logistic(difference):
        return jax.nn.softplus(-difference / temperature)

    return _pairwise_sum(logistic, s, y, valid, w)


@_common.loss_kernel(nonnegative_labels=False)
def _pairwise_hinge_kernel(s, y, valid, w, margin):
    def hinge(difference):
        return jax.nn.relu(margin - difference)

    return _pairwise_sum(hinge, s, y, valid, w)


@_common.loss_kernel(nonnegative_labels=False)
def _pairwise_soft_zero_one_kernel(s, y, valid, w, temperature):
    def soft_zero_one(difference):
        return jax.nn.sigmoid(-difference / temperature)

    return _pairwise_sum(soft_zero_one, s, y, valid, w)


def pairwise_logistic_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    temperature: float | Float[Array, ""] = 1.0,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise logistic (RankNet) loss, summed over the pairs of each list.

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j}
            \log\left(1 + e^{-(s_i - s_j) / T}\right)

    over pairs of real items; :math:`T` is ``temperature`` (RankNet's
    :math:`\sigma = 1 / T`). Pairs with equal labels take no part. Each list's
    value is the **sum** over its pairs, not the mean.

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
      temperature: :math:`T` in (0, inf).

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``temperature`` is not a
        float in (0, inf), or is below the smallest normal number of the
        compute dtype (1.2e-38 in float32).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([0.0, 0.0])
      >>> labels = jnp.array([1.0, 0.0])
      >>> print(f"{losses.pairwise_logistic_loss(scores, labels):.4f}")  # log 2
      0.6931

    Remarks:
      Per list this is :func:`rax.pairwise_logistic_loss` with
      ``reduce_fn=jnp.sum``, and ``reduction="sum"`` equals it on a batch.
      Rax's default ``reduce_fn=jnp.mean`` instead averages over every valid
      pair of the batch.

    References:
      Burges, Shaked, Renshaw, Lazier, Deeds, Hamilton & Hullender, "Learning
      to rank using gradient descent", ICML 2005.
      https://doi.org/10.1145/1102351.1102363
    """
    caller = "pairwise_logistic_loss"
    temperature = _validation.check_temperature_option(temperature, caller=caller)
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
        temperature=temperature,
    )
    return _pairwise_logistic_kernel(
        scores, labels, where, weights, item_weights, temperature, reduction=reduction
    )


def pairwise_hinge_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    margin: float | Float[Array, ""] = 1.0,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise hinge loss, summed over the pairs of each list.

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j} \max\left(0, m - (s_i - s_j)\right)

    over pairs of real items, with margin :math:`m`: the RankSVM objective
    without its regulariser. The sum runs over blocks of pairs, in memory
    linear in the list length.

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
      margin: :math:`m`, a float in [0, inf).

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``margin`` is not a
        float in [0, inf).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([0.5, 0.0, 2.0])
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> print(f"{losses.pairwise_hinge_loss(scores, labels):.4f}")  # 0.5 + 2.5 + 3
      6.0000

    Remarks:
      Per list this is :func:`rax.pairwise_hinge_loss` with
      ``reduce_fn=jnp.sum`` (Rax's margin is fixed at 1).

    References:
      Joachims, "Optimizing search engines using clickthrough data", KDD 2002.
      https://doi.org/10.1145/775047.775067
    """
    caller = "pairwise_hinge_loss"
    margin = _validation.check_traceable_float(margin, name="margin", caller=caller, closed=True)
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
    return _pairwise_hinge_kernel(
        scores, labels, where, weights, item_weights, margin, reduction=reduction
    )


def pairwise_soft_zero_one_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    temperature: float | Float[Array, ""] = 1.0,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise soft zero-one loss: a smooth count of the misordered pairs.

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j} \sigma\left(-(s_i - s_j) / T\right)

    over pairs of real items. As :math:`T \to 0` it counts the misordered
    pairs (a tie counts one half), so it is bounded where the logistic and
    hinge losses are not.

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
      temperature: :math:`T` in (0, inf).

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``temperature`` is not a
        float in (0, inf), or is below the smallest normal number of the
        compute dtype (1.2e-38 in float32).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([0.0, 1.0, 5.0])
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> print(f"{losses.pairwise_soft_zero_one_loss(scores, labels, temperature=1e-3):.4f}")
      3.0000

    Remarks:
      Per list this is :func:`rax.pairwise_soft_zero_one_loss` with
      ``reduce_fn=jnp.sum`` at ``temperature=1``.

    References:
      Burges, Shaked, Renshaw, Lazier, Deeds, Hamilton & Hullender, "Learning
      to rank using gradient descent", ICML 2005.
      https://doi.org/10.1145/1102351.1102363
    """
    caller = "pairwise_soft_zero_one_loss"
    temperature = _validation.check_temperature_option(temperature, caller=caller)
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
        temperature=temperature,
    )
    return _pairwise_soft_zero_one_kernel(
        scores, labels, where, weights, item_weights, temperature, reduction=reduction
    )
