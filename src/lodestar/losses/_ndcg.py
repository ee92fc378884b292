"""Losses that optimise NDCG: LambdaLoss on the current ranks, ApproxNDCG on sigmoid ranks."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _pairs, _soft_ranks, _validation
from lodestar.losses import _common, _lambdaweights

_LN2 = math.log(2.0)


@_common.loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain"))
def _lambda_kernel(s, y, valid, w, temperature, mu, *, k, gain):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    normalised = _common.normalised_gains(y, valid, jnp.ones_like(w), gain, cutoff)
    rank, discount = _lambdaweights.item_discounts(s, valid, cutoff)
    rank, discount = lax.stop_gradient(rank), lax.stop_gradient(discount)

    def term(rows, columns, distinct):
        (s_i, y_i, valid_i, w_i, r_i, d_i, g_i) = rows
        (s_j, y_j, valid_j, _, r_j, d_j, g_j) = columns
        # LambdaRank's |Delta NDCG| factor and NDCG-Loss2's rank-distance factor.
        rho = jnp.abs(d_i - d_j)
        distance = jnp.abs(r_i - r_j)
        apart = distance > 0
        d = jnp.where(apart, distance, 1)
        delta = jnp.where(
            apart, jnp.abs(_gains.discount_at(d, 2.0) - _gains.discount_at(d + 1, 2.0)), 0
        )
        if k is not None:
            # Pairs ranked wholly below k cannot change NDCG@k.
            delta = jnp.where(jnp.minimum(r_i, r_j) <= k, delta, 0)
        # rho and delta come from the stopped ranks; the gains are held fixed
        # too. Only mu, an option a training step may learn, has a derivative.
        lambdas = (rho + mu * delta) * lax.stop_gradient(jnp.abs(g_i - g_j))
        pair_loss = jax.nn.softplus(-(s_i - s_j) / temperature) / _LN2
        pair = valid_i & valid_j & (y_i > y_j)
        return jnp.where(pair, lambdas * pair_loss * w_i, 0)

    items = (s, y, valid, w, rank, discount, normalised)
    return _pairs.pair_sum(term, items, over="pairs")


@_common.loss_kernel(nonnegative_labels=True, static_argnames=("k", "cut", "gain"))
def _approx_ndcg_kernel(s, y, valid, w, temperature, k, *, cut, gain):
    share = _common.normalised_gains(y, valid, w, gain, k)
    return -_soft_ranks.soft_dcg(s, share, valid, temperature, 2.0, k, method="sigmoid", cut=cut)


def lambda_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    k: int | None = None,
    mu: float | Float[Array, ""] = 10.0,
    temperature: float | Float[Array, ""] = 1.0,
    gain: str | Callable = "exp2",
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""LambdaLoss with the NDCG-Loss2++ weights.

    With :math:`r_i` the current rank of item :math:`i` (1-based, by
    descending score), :math:`D(r) = 1 / \log_2(r + 1)` the DCG discount and
    :math:`G_i = g(y_i) / \mathrm{IDCG@k}` the normalised gain:

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j}
            \left(\rho_{ij} + \mu\,\delta_{ij}\right) \left|G_i - G_j\right|
            \log_2\left(1 + e^{-(s_i - s_j) / T}\right),

        \rho_{ij} = \left|D_k(r_i) - D_k(r_j)\right|, \qquad
        \delta_{ij} = \left|D(|r_i - r_j|) - D(|r_i - r_j| + 1)\right|,

    where :math:`D_k` is :math:`D` set to 0 past rank ``k``. The
    :math:`\rho` term is LambdaRank's :math:`|\Delta \mathrm{NDCG@k}|`; the
    :math:`\delta` term is NDCG-Loss2's. With ``k``, pairs whose items both rank
    past ``k`` get no :math:`\delta` term either, since they cannot change
    NDCG@k.

    The ranks come from the exact rank engine of :mod:`lodestar.metrics`
    (``ignore_ties=True``: tied scores are ranked by descending index) and carry
    no gradient; the gradient flows through the logistic pair terms only.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` non-negative relevance labels.
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
      k: Optimise NDCG@k; None for the whole list.
      mu: :math:`\mu \ge 0`, the weight of the NDCG-Loss2 term. 0 gives the
        LambdaRank weights alone. The default 10 is allRank's.
      temperature: :math:`T` in (0, inf) of the logistic pair term.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in the paper),
        ``"linear"`` or a callable applied to the labels.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``. A list without a relevant item has a loss of 0.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``mu`` is not a float in [0, inf);
        ``temperature`` is not a float in (0, inf), or is below the smallest
        normal number of the compute dtype (1.2e-38 in float32).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, a negative or non-finite weight, or, with
        ``gain="exp2"``, labels whose gains overflow the dtype (a label of
        128 or more in float32, 1024 in float64).

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> print(f"{losses.lambda_loss(jnp.array([3.0, 2.0, 1.0]), labels):.4f}")
      1.7601
      >>> print(f"{losses.lambda_loss(jnp.array([1.0, 2.0, 3.0]), labels):.4f}")
      10.6938

    Remarks:
      The pair terms are in bits (:math:`\log_2`), as in the paper. In Rax's
      terms, per list this loss times :math:`n \ln 2` equals
      ``rax.pairwise_logistic_loss`` with ``reduce_fn=jnp.sum`` and
      ``lambdaweight_fn=rax.dcg_lambdaweight`` (``normalize=True``) plus
      :math:`\mu` times the same with ``rax.dcg2_lambdaweight``, for
      ``k=None`` and tie-free scores (Rax breaks score ties by ascending index
      and scales its lambdaweights by the list size :math:`n`).

    References:
      Wang, Li, Golbandi, Bendersky & Najork, "The LambdaLoss framework for
      ranking metric optimization", CIKM 2018.
      https://doi.org/10.1145/3269206.3271784

      Burges, "From RankNet to LambdaRank to LambdaMART: an overview",
      Microsoft Research Technical Report MSR-TR-2010-82, 2010.
    """
    caller = "lambda_loss"
    k = _validation.check_k(k, caller=caller)
    mu = _validation.check_traceable_float(mu, name="mu", caller=caller, closed=True)
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=True,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
        temperature=temperature,
    )
    return _lambda_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        temperature,
        mu,
        reduction=reduction,
        k=k,
        gain=gain,
    )


def approx_ndcg_loss(
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
    k: int | None = None,
    gain: str | Callable = "exp2",
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""ApproxNDCG loss: minus NDCG with sigmoid soft ranks.

    Each hard rank is replaced by the soft rank
    :math:`\hat r_i = 1 + \sum_{j \ne i} \sigma((s_j - s_i) / T)`:

    .. math::

        \ell(s, y) = -\frac{1}{\mathrm{IDCG@k}}
            \sum_i \frac{g(y_i)}{\log_2(1 + \hat r_i)}

    This is exactly ``-lodestar.smooth.ndcg(scores, labels, method="sigmoid",
    ...)``; see :func:`lodestar.smooth.ndcg` for the soft cut-off at ``k``.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` non-negative relevance labels.
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
      temperature: :math:`T` in (0, inf), in the units of the scores.
      k: Optimise NDCG@k (a soft cut-off); None for the whole list.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in the paper and in
        Rax), ``"linear"`` or a callable applied to the labels.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses, in
      [-1, 0], for ``"none"``. A list without a relevant item has a loss of 0.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``temperature`` is not a float in (0, inf),
        or is below the smallest normal number of the compute dtype (1.2e-38
        in float32).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, a negative or non-finite weight, or, with
        ``gain="exp2"``, labels whose gains overflow the dtype (a label of
        128 or more in float32, 1024 in float64).

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> loss = losses.approx_ndcg_loss(jnp.array([3.0, 2.0, 1.0]), labels, temperature=0.1)
      >>> print(f"{loss:.4f}")
      -1.0000

    Remarks:
      Without ``k`` this is ``rax.approx_t12n(rax.ndcg_metric,
      temperature=T)`` per list.

    References:
      Qin, Liu & Li, "A general approximation framework for direct optimization
      of information retrieval measures", Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x
    """
    caller = "approx_ndcg_loss"
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    k = _validation.check_k(k, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _common.prepare(
        scores,
        labels,
        where,
        weights,
        reduction,
        caller=caller,
        nonnegative_labels=True,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
        temperature=temperature,
    )
    n = scores.shape[-1]
    return _approx_ndcg_kernel(
        scores,
        labels,
        where,
        weights,
        item_weights,
        temperature,
        n if k is None else min(k, n),
        reduction=reduction,
        cut=k is not None,
        gain=gain,
    )
