"""Pairwise losses: a sum over the list's ordered pairs, in column blocks."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _pairs, _validation
from lodestar.losses import _common, _lambdaweights
from lodestar.losses._lambdaweights import LambdaWeight


def _pairwise_sum(pair_loss, s, y, valid, w, lambdaweight, *, every_pair=False):
    """Sum ``pair_loss(s_i - s_j, y_i - y_j) * w_i * lambda_ij`` over pairs, in blocks.

    The pairs are those with ``y_i > y_j``, or with ``every_pair`` every ordered
    pair of distinct real items; ``lambda_ij`` is 1 without a ``lambdaweight``.
    """
    items = (s, y, valid, w)
    if lambdaweight is not None:
        extra, pair_weight = _lambdaweights.pair_weights(lambdaweight, s, y, valid)
        items = (*items, *extra)

    def term(rows, columns, distinct):
        (s_i, y_i, valid_i, w_i, *weight_i), (s_j, y_j, valid_j, _, *weight_j) = rows, columns
        pair = valid_i & valid_j & (distinct if every_pair else y_i > y_j)
        value = pair_loss(s_i - s_j, y_i - y_j) * w_i
        if lambdaweight is not None:
            value = value * pair_weight(weight_i, weight_j)
        return jnp.where(pair, value, 0)

    return _pairs.pair_sum(term, items, over="pairs")


@_common.loss_kernel(nonnegative_labels=False, static_argnames=("gain",))
def _pairwise_logistic_kernel(s, y, valid, w, temperature, lambdaweight, *, gain):
    def logistic(difference, _):
        return jax.nn.softplus(-difference / temperature)

    return _pairwise_sum(logistic, s, y, valid, w, lambdaweight)


@_common.loss_kernel(nonnegative_labels=False, static_argnames=("gain",))
def _pairwise_hinge_kernel(s, y, valid, w, margin, lambdaweight, *, gain):
    def hinge(difference, _):
        return jax.nn.relu(margin - difference)

    return _pairwise_sum(hinge, s, y, valid, w, lambdaweight)


@_common.loss_kernel(nonnegative_labels=False, static_argnames=("gain",))
def _pairwise_soft_zero_one_kernel(s, y, valid, w, temperature, lambdaweight, *, gain):
    def soft_zero_one(difference, _):
        return jax.nn.sigmoid(-difference / temperature)

    return _pairwise_sum(soft_zero_one, s, y, valid, w, lambdaweight)


@_common.loss_kernel(nonnegative_labels=False, static_argnames=("gain",))
def _pairwise_mse_kernel(s, y, valid, w, lambdaweight, *, gain):
    def squared_error(score_difference, label_difference):
        return jnp.square(label_difference - score_difference)

    return _pairwise_sum(squared_error, s, y, valid, w, lambdaweight, every_pair=True)


@_common.loss_kernel(nonnegative_labels=False, static_argnames=("squared", "gain"))
def _pairwise_qr_kernel(s, y, valid, w, tau, lambdaweight, *, squared, gain):
    def quantile(score_difference, label_difference):
        under = jax.nn.relu(label_difference - score_difference)
        over = jax.nn.relu(score_difference - label_difference)
        if squared:
            under, over = jnp.square(under), jnp.square(over)
        return tau * under + (1 - tau) * over

    return _pairwise_sum(quantile, s, y, valid, w, lambdaweight)


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
    lambdaweight: LambdaWeight | Callable | None = None,
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
      lambdaweight: None, or a :class:`LambdaWeight` that weights each pair
        (:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
        :func:`labeldiff_lambdaweight`, or a sum of them); one of those
        functions itself means it with its defaults. Its weights carry no
        gradient with respect to the scores.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``temperature`` is not a
        float in (0, inf), or is below the smallest normal number of the
        compute dtype (1.2e-38 in float32); ``lambdaweight`` is not None, a
        LambdaWeight or a lambda-weight function.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative or non-finite weight, or, with a lambda weight that takes
        gains, a negative label or exp2 gains that overflow the dtype.

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
    lambdaweight = _lambdaweights.check_lambdaweight(lambdaweight, caller=caller)
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=lambdaweight is not None and lambdaweight.gain is not None,
        gain=None if lambdaweight is None else lambdaweight.gain,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    return _pairwise_logistic_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        temperature,
        lambdaweight,
        reduction=reduction,
        gain=None if lambdaweight is None else lambdaweight.gain,
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
    lambdaweight: LambdaWeight | Callable | None = None,
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
      lambdaweight: None, or a :class:`LambdaWeight` that weights each pair
        (:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
        :func:`labeldiff_lambdaweight`, or a sum of them); one of those
        functions itself means it with its defaults. Its weights carry no
        gradient with respect to the scores.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``margin`` is not a
        float in [0, inf); ``lambdaweight`` is not None, a LambdaWeight or a
        lambda-weight function.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative or non-finite weight, or, with a lambda weight that takes
        gains, a negative label or exp2 gains that overflow the dtype.

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
    lambdaweight = _lambdaweights.check_lambdaweight(lambdaweight, caller=caller)
    margin = _validation.check_traceable_float(margin, name="margin", caller=caller, closed=True)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=lambdaweight is not None and lambdaweight.gain is not None,
        gain=None if lambdaweight is None else lambdaweight.gain,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    return _pairwise_hinge_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        margin,
        lambdaweight,
        reduction=reduction,
        gain=None if lambdaweight is None else lambdaweight.gain,
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
    lambdaweight: LambdaWeight | Callable | None = None,
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
      lambdaweight: None, or a :class:`LambdaWeight` that weights each pair
        (:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
        :func:`labeldiff_lambdaweight`, or a sum of them); one of those
        functions itself means it with its defaults. Its weights carry no
        gradient with respect to the scores.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``temperature`` is not a
        float in (0, inf), or is below the smallest normal number of the
        compute dtype (1.2e-38 in float32); ``lambdaweight`` is not None, a
        LambdaWeight or a lambda-weight function.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative or non-finite weight, or, with a lambda weight that takes
        gains, a negative label or exp2 gains that overflow the dtype.

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
    lambdaweight = _lambdaweights.check_lambdaweight(lambdaweight, caller=caller)
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=lambdaweight is not None and lambdaweight.gain is not None,
        gain=None if lambdaweight is None else lambdaweight.gain,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    return _pairwise_soft_zero_one_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        temperature,
        lambdaweight,
        reduction=reduction,
        gain=None if lambdaweight is None else lambdaweight.gain,
    )


def pairwise_mse_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    lambdaweight: LambdaWeight | Callable | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise squared error: score differences regressed on label differences.

    .. math::

        \ell(s, y) = \sum_{i \ne j} \left((y_i - y_j) - (s_i - s_j)\right)^2

    over the **ordered** pairs of distinct real items, so each unordered pair
    counts twice, and pairs of equal labels take part (they pull the two
    scores together); a per-item weight weights the pairs ``(i, j)`` of its
    item ``i``. It is blind to a shift of all the scores, unlike
    :func:`pointwise_mse_loss`. The sum runs over blocks of pairs, in memory
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
      lambdaweight: None, or a :class:`LambdaWeight` that weights each pair
        (:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
        :func:`labeldiff_lambdaweight`, or a sum of them); one of those
        functions itself means it with its defaults. Its weights carry no
        gradient with respect to the scores.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``lambdaweight`` is not
        None, a LambdaWeight or a lambda-weight function.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative or non-finite weight, or, with a lambda weight that takes
        gains, a negative label or exp2 gains that overflow the dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([1.0, 0.0, 0.0])
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> print(f"{losses.pairwise_mse_loss(scores, labels):.4f}")  # 2 * (0 + 1 + 1)
      4.0000

    Remarks:
      Per list this is :func:`rax.pairwise_mse_loss` with
      ``reduce_fn=jnp.sum``.

    References:
      Qin, Zhuang, Chen, Yan, Jagerman, Hui, Wang, Bendersky & Najork, "Are
      neural rankers still outperformed by gradient boosted decision trees?",
      ICLR 2021. https://openreview.net/forum?id=Ut1vF_q_vC
    """
    caller = "pairwise_mse_loss"
    lambdaweight = _lambdaweights.check_lambdaweight(lambdaweight, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=lambdaweight is not None and lambdaweight.gain is not None,
        gain=None if lambdaweight is None else lambdaweight.gain,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    return _pairwise_mse_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        lambdaweight,
        reduction=reduction,
        gain=None if lambdaweight is None else lambdaweight.gain,
    )


def pairwise_qr_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    tau: float = 0.5,
    squared: bool = False,
    lambdaweight: LambdaWeight | Callable | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise quantile regression: the pinball loss of score differences.

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j}
            \tau \max\left(0, \Delta y_{ij} - \Delta s_{ij}\right)
            + (1 - \tau) \max\left(0, \Delta s_{ij} - \Delta y_{ij}\right)

    with :math:`\Delta y_{ij} = y_i - y_j` and :math:`\Delta s_{ij} = s_i -
    s_j`, over pairs of real items: the score difference is fitted to the
    :math:`\tau`-quantile of the label difference. ``squared`` squares each of
    the two hinges. Pairs with equal labels take no part.

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
      tau: :math:`\tau`, the quantile, a float in (0, 1]; 0.5 is median
        regression. It is static (a Python float), as in Rax.
      squared: Square each hinge.
      lambdaweight: None, or a :class:`LambdaWeight` that weights each pair
        (:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
        :func:`labeldiff_lambdaweight`, or a sum of them); one of those
        functions itself means it with its defaults. Its weights carry no
        gradient with respect to the scores.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``tau`` is not a float
        in (0, 1]; ``squared`` is not a bool; ``lambdaweight`` is not None, a
        LambdaWeight or a lambda-weight function.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative or non-finite weight, or, with a lambda weight that takes
        gains, a negative label or exp2 gains that overflow the dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([3.0, 0.0])
      >>> labels = jnp.array([1.0, 0.0])
      >>> print(f"{losses.pairwise_qr_loss(scores, labels, tau=0.2):.4f}")  # 0.8 * (3 - 1)
      1.6000

    Remarks:
      Per list this is :func:`rax.pairwise_qr_loss` with ``reduce_fn=jnp.sum``.
      Rax's docstring writes the sum over every pair but its code, like
      lodestar, keeps the pairs with :math:`y_i > y_j` only.

    References:
      Koenker & Bassett, "Regression quantiles", Econometrica 46(1), 1978.
      https://doi.org/10.2307/1913643
    """
    caller = "pairwise_qr_loss"
    tau = _validation.check_float_in_range(
        tau, name="tau", caller=caller, low=0.0, high=1.0, closed="right"
    )
    squared = _validation.check_bool(squared, name="squared", caller=caller)
    lambdaweight = _lambdaweights.check_lambdaweight(lambdaweight, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=lambdaweight is not None and lambdaweight.gain is not None,
        gain=None if lambdaweight is None else lambdaweight.gain,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
    return _pairwise_qr_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        tau,
        lambdaweight,
        reduction=reduction,
        squared=squared,
        gain=None if lambdaweight is None else lambdaweight.gain,
    )
