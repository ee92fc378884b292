r"""Differentiable ranking losses for training scoring models.

Every loss here ranks along the **last axis**: ``scores`` and ``labels`` have
shape ``(..., n)`` and every leading axis is a batch axis, one list per index.
Each loss is first computed per list, then reduced:

>>> import jax
>>> import jax.numpy as jnp
>>> from lodestar import losses
>>> scores = jnp.array([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]])
>>> labels = jnp.array([[2.0, 1.0, 0.0], [2.0, 1.0, 0.0]])
>>> print(jnp.round(losses.softmax_loss(scores, labels, reduction="none"), 4))
[0.7409 2.0743]
>>> jax.grad(losses.softmax_loss)(scores, labels).shape
(2, 3)

**Signature.** Every loss is called as ``fn(scores, labels, *, where=None,
weights=None, reduction="mean", ...)``, with its own options keyword-only.
Higher scores rank first; higher labels are more relevant.

**Padding.** ``where`` is a boolean mask of shape ``(..., n)``; ``False`` marks
padding, which takes no part in the loss: a padded list has exactly the loss
and the real-item gradients of the unpadded list, and padding gets a zero
gradient. A list with no real item has a loss of 0 (never NaN) and a zero
gradient.

**Weights.** ``weights`` are **per-list** weights of shape ``(...)`` (the
batch shape, ``()`` for a single list): each list's loss is multiplied by its
weight before the reduction. Per-item weights are not accepted. Weights must be
finite and non-negative (checked on concrete arrays).

**Reduction.** ``reduction="none"`` returns the ``(...)`` weighted per-list
losses; ``"sum"`` returns their sum (so the ``"none"`` values always sum to
the ``"sum"``); ``"mean"`` divides that sum by the number of lists with at
least one real item (0 if there is none). With weights, ``"mean"`` is thus
``sum(w * loss) / count`` and not ``sum(w * loss) / sum(w)``; divide the
``"sum"`` by ``sum(w)`` yourself if you want the latter.

**Packed lists.** ``segments`` (integers, ``(..., n)``) packs several lists
into one row, as in :mod:`lodestar.metrics`: every list of every row is then
one list of the reduction. ``"none"`` returns ``(..., max_segments)``, one loss
per list (0 for an id with no real item); ``"mean"`` averages over the lists
with a real item; ``weights`` has shape ``(..., max_segments)``, one weight per
list. Each list's loss and gradients are those of the list padded on its own.

>>> segments = jnp.array([[0, 0, 0], [0, 1, 1]])
>>> per_list = losses.pairwise_logistic_loss(scores, labels, segments=segments, reduction="none")
>>> print(jnp.round(per_list, 4))  # row 0 holds one list, row 1 two
[[0.7535 0.    ]
 [0.     1.3133]]

**Numerics.** Values and gradients stay finite for tied scores, all-zero
labels, one-item and fully padded lists, and scores of :math:`\pm 10^6`.
Half-precision inputs are computed, and returned, in float32, as in
:mod:`lodestar.metrics`. Options and shapes are checked when the function is
traced; NaN and infinity in real items (and negative labels, where gains or
label distributions need them non-negative, and ``gain="exp2"`` labels whose
gains overflow the dtype: below 128 in float32, 1024 in float64) raise
:class:`ValueError` on concrete arrays. A ``temperature`` below the smallest
normal number of the dtype (1.2e-38 in float32) is refused, under ``jit``
too; from there up values and gradients are never NaN.

**Bad values under jit.** Traced values cannot be refused, so a list holding
one (a NaN or infinite score or label, a refused negative label, overflowing
exp2 gains) gets a per-list loss of NaN, and so does the reduced loss; with
``reduction="none"`` only that list is NaN. The gradient is NaN for that
list's real items (0 for its padding), so that an optimiser sees the NaN;
every other list keeps its value and gradient. See decision 0003.

>>> bad = labels.at[0, 1].set(jnp.nan)
>>> per_list = jax.jit(lambda s, y: losses.softmax_loss(s, y, reduction="none"))
>>> print(jnp.round(per_list(scores, bad), 4))
[   nan 2.0743]

**Rank-aware losses.** :func:`lambda_loss` takes its current ranks from the
exact rank engine of :mod:`lodestar.metrics` (ties broken by descending index,
ranks carry no gradient); :func:`approx_ndcg_loss` is
``-lodestar.smooth.ndcg(..., method="sigmoid")``; :func:`neural_ndcg_loss`
relaxes the sorting permutation itself. All three default to the exponential
gain :math:`2^\ell - 1` of the papers that define them, unlike the linear
default of :mod:`lodestar.metrics`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _docs, _gains, _host, _lists, _ranking, _soft_ranks, _validation, smooth

__all__ = [
    "approx_ndcg_loss",
    "lambda_loss",
    "listmle_loss",
    "neural_ndcg_loss",
    "pairwise_logistic_loss",
    "softmax_loss",
]

REDUCTIONS = ("mean", "sum", "none")

_LN2 = math.log(2.0)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_nonnegative_float(value, *, name: str, caller: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (0.0 <= float(value) < math.inf)
    ):
        raise _validation.InvalidParameterError(
            f"The '{name}' parameter of {caller} must be a float in the range "
            f"[0.0, inf). Got {value!r} instead."
        )
    return float(value)


def _check_nonnegative_int(value, *, name: str, caller: str) -> int:
    if not _validation.is_int(value) or value < 0:
        raise _validation.InvalidParameterError(
            f"The '{name}' parameter of {caller} must be an int in the range "
            f"[0, inf). Got {value!r} instead."
        )
    return int(value)


def _check_key(key, *, caller: str):
    """None, one typed key (``jax.random.key``) or one raw key (``PRNGKey``: two uint32).

    A static property, so it raises under ``jit`` too; one key serves the whole
    batch, as ``jax.random.uniform(key, scores.shape)`` draws per item.
    """
    if key is None:
        return None
    dtype, shape = getattr(key, "dtype", None), getattr(key, "shape", None)
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)
    if (typed and shape == ()) or (not typed and dtype == jnp.uint32 and shape == (2,)):
        return key
    got = repr(key) if dtype is None else f"an array of dtype {dtype} and shape {shape}"
    raise _validation.InvalidParameterError(
        f"The 'key' parameter of {caller} must be one jax.random.key, one "
        f"jax.random.PRNGKey or None. Got {got} instead."
    )


def _prepare(
    scores,
    labels,
    where,
    weights,
    reduction,
    *,
    caller,
    nonnegative_labels,
    gain=None,
    temperature=None,
    **packing,
):
    """Validate; lay packed lists out (``packing``: the segment options), one per block."""
    reduction = _validation.check_option(
        reduction, name="reduction", options=REDUCTIONS, caller=caller
    )
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=nonnegative_labels,
        gain=gain,
        temperature=temperature,
        **packing,
    )
    weights = _lists.check_weights(weights, lists.scores.shape[:-1], caller=caller)
    return lists.scores, lists.labels, lists.where, lists.list_weights(weights), reduction


# --------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------


def _reduce(values, valid, weights, reduction):
    """Weight the per-list ``values`` and reduce them; see the module docstring."""
    if weights is not None:
        values = values * weights.astype(values.dtype)
    if reduction == "none":
        return values
    total = jnp.sum(values)
    if reduction == "sum":
        return total
    count = jnp.sum(jnp.any(valid, axis=-1))
    return jnp.where(count > 0, total / jnp.maximum(count, 1).astype(total.dtype), 0)


def _masked_logsumexp(x, mask, axis):
    """``log sum exp(x)`` over the entries where ``mask`` holds, keepdims; 0 if none.

    ``x`` must be finite everywhere (masked entries included), so that no NaN
    can reach a gradient; the masked entries get a zero gradient.
    """
    peak = jnp.max(jnp.where(mask, x, -jnp.inf), axis=axis, keepdims=True)
    peak = lax.stop_gradient(jnp.where(jnp.isfinite(peak), peak, 0))
    shifted = jnp.where(mask, x - peak, 0)
    total = jnp.sum(jnp.where(mask, jnp.exp(shifted), 0), axis=axis, keepdims=True)
    some = total > 0
    return jnp.where(some, jnp.log(jnp.where(some, total, 1)) + peak, 0)


def _pairs(x):
    """``x[..., i] - x[..., j]`` at ``[..., i, j]``."""
    return x[..., :, None] - x[..., None, :]


def _real_pairs(valid):
    return valid[..., :, None] & valid[..., None, :]


def _empty(scores, dtype):
    return jnp.zeros(scores.shape[:-1], dtype)


def _loss_kernel(*, nonnegative_labels: bool, static_argnames: tuple[str, ...] = ()):
    """Make a loss kernel of ``per_list(s, y, valid, *options, **static)``.

    ``per_list`` gets the floating scores ``s`` and labels ``y`` (0 on
    padding), the mask ``valid`` of real items, the traced ``options`` and the
    ``static`` options named in ``static_argnames``, and returns the per-list
    losses. The kernel, jitted, takes validated ``(scores, labels, where,
    weights, *options, reduction, **static)``; it gives lists of no item
    position a loss of 0, applies the NaN rule of traced inputs to the others
    (with the ``gain`` option, if any) and reduces.
    """

    def make(per_list):
        def kernel(scores, labels, where, weights, *options, reduction, **static):
            valid = _lists.valid(scores, where)
            s, y, dtype = _lists.floating(scores, labels, valid)
            if scores.shape[-1] == 0:
                return _reduce(_empty(scores, dtype), valid, weights, reduction)
            value = per_list(s, y, valid, *options, **static)
            value = _lists.nan_rule(
                value,
                scores,
                labels,
                where,
                s,
                nonnegative_labels=nonnegative_labels,
                gain=static.get("gain"),
            )
            return _reduce(value, valid, weights, reduction)

        kernel.__name__ = kernel.__qualname__ = per_list.__name__
        return _host.one_program_at_a_time(
            jax.jit(kernel, static_argnames=("reduction", *static_argnames))
        )

    return make


# --------------------------------------------------------------------------
# Kernels (inputs already validated)
# --------------------------------------------------------------------------


@_loss_kernel(nonnegative_labels=True)
def _softmax_kernel(s, y, valid):
    log_softmax = s - _masked_logsumexp(s, valid, -1)
    total = jnp.sum(y, axis=-1, keepdims=True)
    p = y / jnp.where(total > 0, total, 1)
    return -jnp.sum(jnp.where(valid, p * log_softmax, 0), axis=-1)


@_loss_kernel(nonnegative_labels=False)
def _listmle_kernel(s, y, valid, key):
    axis = s.ndim - 1
    index = lax.broadcasted_iota(jnp.int32, s.shape, axis)
    # Real items first, then descending labels; lax.sort is stable, so tied
    # labels keep their order of appearance unless a random key breaks them.
    keys = [jnp.logical_not(valid).astype(jnp.int8), -y]
    if key is not None:
        keys.append(jax.random.uniform(key, s.shape))
    *_, order = lax.sort((*keys, index), dimension=axis, num_keys=len(keys))
    s_sorted = jnp.take_along_axis(s, order, axis=-1)
    valid_sorted = jnp.take_along_axis(valid, order, axis=-1)
    # Padding sits last, so -inf there leaves every real suffix sum unchanged.
    lse = lax.cumlogsumexp(jnp.where(valid_sorted, s_sorted, -jnp.inf), axis=axis, reverse=True)
    return jnp.sum(jnp.where(valid_sorted, lse - s_sorted, 0), axis=-1)


@_loss_kernel(nonnegative_labels=False)
def _pairwise_logistic_kernel(s, y, valid, temperature):
    pair = _real_pairs(valid) & (_pairs(y) > 0)
    pair_loss = jax.nn.softplus(-_pairs(s) / jnp.asarray(temperature, s.dtype))
    return jnp.sum(jnp.where(pair, pair_loss, 0), axis=(-2, -1))


def _item_discounts(s, valid, k):
    """Current 1-based ranks (ties by descending index) and DCG@k discounts per item."""
    n = s.shape[-1]
    blocks = _ranking.tie_blocks(s, valid, ignore_ties=True)
    position = jnp.minimum(blocks.above, n - 1)
    per_position = jnp.diff(_gains.discount_table(n, k=k, log_base=2.0, dtype=s.dtype))
    discount = jnp.where(valid, _ranking.at_positions(per_position, position), 0)
    return (position + 1).astype(s.dtype), discount


@_loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain"))
def _lambda_kernel(s, y, valid, temperature, mu, *, k, gain):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    gains = jnp.where(valid, _gains.apply_gain(gain, y), 0)
    ideal = _gains.ideal_dcg(gains, valid, k=cutoff)
    normalised = gains / jnp.where(ideal > 0, ideal, 1)[..., None]
    rank, discount = _item_discounts(s, valid, cutoff)
    # LambdaRank's |Delta NDCG| factor and NDCG-Loss2's rank-distance factor.
    rho = jnp.abs(_pairs(discount))
    distance = jnp.abs(_pairs(rank))
    apart = distance > 0
    d = jnp.where(apart, distance, 1)
    delta = jnp.where(
        apart, jnp.abs(_gains.discount_at(d, 2.0) - _gains.discount_at(d + 1, 2.0)), 0
    )
    if k is not None:
        # Pairs ranked wholly below k cannot change NDCG@k.
        delta = jnp.where(jnp.minimum(rank[..., :, None], rank[..., None, :]) <= k, delta, 0)
    lambdas = lax.stop_gradient((rho + mu * delta) * jnp.abs(_pairs(normalised)))
    pair = _real_pairs(valid) & (_pairs(y) > 0)
    pair_loss = jax.nn.softplus(-_pairs(s) / jnp.asarray(temperature, s.dtype)) / _LN2
    return jnp.sum(jnp.where(pair, lambdas * pair_loss, 0), axis=(-2, -1))


_reduce_jit = jax.jit(_reduce, static_argnames=("reduction",))


def _approx_ndcg(scores, labels, where, weights, temperature, *, reduction, k, gain):
    # Not jitted itself: smooth.ndcg checks its Python options and jits its kernel.
    value = -smooth.ndcg(
        scores, labels, temperature=temperature, method="sigmoid", k=k, gain=gain, where=where
    )
    return _reduce_jit(value, _lists.valid(scores, where), weights, reduction=reduction)


def _neuralsort_log_permutation(s, valid, temperature, iterations):
    """Log of the NeuralSort relaxed permutation matrix, Sinkhorn-scaled.

    ``[..., p, i]`` is the log-probability that item ``i`` sits at position
    ``p + 1``. Rows past the number ``m`` of real items and columns of padding
    are masked out (the returned mask says which entries are real).
    """
    n = s.shape[-1]
    m = jnp.sum(valid, axis=-1, keepdims=True)
    used = jnp.arange(n) < m
    mask = used[..., :, None] & valid[..., None, :]
    # Each row's maximum is subtracted before the division by the temperature,
    # so that a small one cannot overflow the logits (inf - inf); what still
    # underflows to -inf is raised to a floor that exp() takes to 0, which
    # keeps the Sinkhorn steps finite and gives those entries a zero gradient.
    logits = _soft_ranks.neuralsort_logits(s, valid)
    log_p = _soft_ranks.masked_log_softmax(logits, mask, -1, temperature)
    log_p = jnp.where(mask, jnp.maximum(log_p, jnp.finfo(s.dtype).min / 4), 0)

    def scale_once(_, log_p):
        # Columns, then rows (as allRank), in log space; the result is row-stochastic.
        log_p = jnp.where(mask, log_p - _masked_logsumexp(log_p, mask, -2), 0)
        return jnp.where(mask, log_p - _masked_logsumexp(log_p, mask, -1), 0)

    log_p = lax.fori_loop(0, iterations, scale_once, log_p)
    return log_p, mask


@_loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain", "iterations"))
def _neural_ndcg_kernel(s, y, valid, temperature, *, k, gain, iterations):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    gains = jnp.where(valid, _gains.apply_gain(gain, y), 0)
    log_p, mask = _neuralsort_log_permutation(
        s, valid, jnp.asarray(temperature, s.dtype), iterations
    )
    p = jnp.where(mask, jnp.exp(log_p), 0)
    sorted_gains = jnp.sum(p * gains[..., None, :], axis=-1)  # (..., positions)
    discount = jnp.diff(_gains.discount_table(n, k=cutoff, log_base=2.0, dtype=s.dtype))
    dcg = jnp.sum(sorted_gains * discount, axis=-1)
    ideal = _gains.ideal_dcg(gains, valid, k=cutoff)
    nonzero = ideal != 0
    return -jnp.where(nonzero, dcg / jnp.where(nonzero, ideal, 1), 0)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


@_docs.shared
def softmax_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Softmax cross-entropy (ListNet) loss.

    The cross-entropy between the labels normalised to a distribution and the
    softmax of the scores, over the real items of each list:

    .. math::

        \ell(s, y) = -\sum_i \frac{y_i}{\sum_j y_j}
            \log \frac{e^{s_i}}{\sum_j e^{s_j}}

    A list whose labels sum to 0 has no target distribution and a loss of 0.

    Args:
      {{scores, loss_labels, loss_batch}}

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, or a negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([2.0, 1.0, 3.0])
      >>> labels = jnp.array([1.0, 0.0, 0.0])
      >>> print(f"{losses.softmax_loss(scores, labels):.4f}")
      1.4076

    Remarks:
      :func:`rax.softmax_loss` uses the labels as they are by default (its
      ``label_fn`` is the identity), which is this loss multiplied by
      :math:`\sum_j y_j`; with ``label_fn=rax.utils.normalize_probabilities``
      the two agree on lists whose labels do not sum to 0.

    References:
      Cao, Qin, Liu, Tsai & Li, "Learning to rank: from pairwise approach to
      listwise approach", ICML 2007. https://doi.org/10.1145/1273496.1273513

      Bruch, Wang, Bendersky & Najork, "An analysis of the softmax cross
      entropy loss for learning-to-rank with binary relevance", ICTIR 2019.
      https://doi.org/10.1145/3341981.3344221
    """
    caller = "softmax_loss"
    scores, labels, where, weights, reduction = _prepare(
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
    )
    return _softmax_kernel(scores, labels, where, weights, reduction=reduction)


@_docs.shared
def listmle_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    key: jax.Array | None = None,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""ListMLE loss: the Plackett-Luce negative log-likelihood of the ideal order.

    Let :math:`\pi` order the real items by descending label. The loss is the
    negative log-probability of :math:`\pi` under the Plackett-Luce model with
    item weights :math:`e^{s_i}`:

    .. math::

        \ell(s, y) = -\sum_{p=1}^{m} \left( s_{\pi(p)}
            - \log \sum_{q=p}^{m} e^{s_{\pi(q)}} \right)

    computed with a reversed cumulative log-sum-exp, so scores of any size stay
    finite.

    Args:
      {{scores}}
      labels: ``(..., n)`` relevance labels (any real values; only their order
        matters).
      {{loss_batch}}
      key: Optional :func:`jax.random.key` (or ``PRNGKey``) breaking ties
        between equal labels uniformly at random. Without it tied labels keep
        their order of appearance (a stable sort), as in :func:`rax.listmle_loss`;
        the loss then depends on the order of tied items.

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``key`` is not None, one
        typed key or one raw ``PRNGKey``.
      {{loss_value_error}}

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> print(f"{losses.listmle_loss(jnp.array([3.0, 2.0, 1.0]), labels):.4f}")
      0.7209
      >>> print(f"{losses.listmle_loss(jnp.array([1.0, 2.0, 3.0]), labels):.4f}")
      3.7209

    References:
      Xia, Liu, Wang, Zhang & Li, "Listwise approach to learning to rank:
      theory and algorithm", ICML 2008. https://doi.org/10.1145/1390156.1390306
    """
    caller = "listmle_loss"
    key = _check_key(key, caller=caller)
    scores, labels, where, weights, reduction = _prepare(
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
    return _listmle_kernel(scores, labels, where, weights, key, reduction=reduction)


@_docs.shared
def pairwise_logistic_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    temperature: float = 1.0,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Pairwise logistic (RankNet) loss, summed over the pairs of each list.

    .. math::

        \ell(s, y) = \sum_{i, j:\, y_i > y_j}
            \log\left(1 + e^{-(s_i - s_j) / T}\right)

    over pairs of real items; :math:`T` is ``temperature`` (RankNet's
    :math:`\sigma = 1 / T`). Pairs with equal labels take no part. Each list's
    value is the **sum** over its pairs, not the mean.

    Args:
      {{scores}}
      labels: ``(..., n)`` relevance labels (any real values).
      {{loss_batch}}
      temperature: :math:`T` in (0, inf).

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``temperature`` is not a
        float in (0, inf), or is below the smallest normal number of the
        compute dtype (1.2e-38 in float32).
      {{loss_value_error}}

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
    temperature = _validation.check_positive_float(temperature, name="temperature", caller=caller)
    scores, labels, where, weights, reduction = _prepare(
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
        scores, labels, where, weights, temperature, reduction=reduction
    )


@_docs.shared
def lambda_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    k: int | None = None,
    mu: float = 10.0,
    temperature: float = 1.0,
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
      {{scores, loss_labels, loss_batch}}
      k: Optimise NDCG@k; None for the whole list.
      mu: :math:`\mu \ge 0`, the weight of the NDCG-Loss2 term. 0 gives the
        LambdaRank weights alone. The default 10 is allRank's.
      temperature: :math:`T` in (0, inf) of the logistic pair term.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in the paper),
        ``"linear"`` or a callable applied to the labels.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``. A list without a relevant item has a loss of 0.
      {{loss_nan_under_jit}}

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``mu`` is not a float in [0, inf);
        ``temperature`` is not a float in (0, inf), or is below the smallest
        normal number of the compute dtype (1.2e-38 in float32).
      {{loss_value_error_gain}}

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
    mu = _check_nonnegative_float(mu, name="mu", caller=caller)
    temperature = _validation.check_positive_float(temperature, name="temperature", caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, reduction = _prepare(
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
        scores, labels, where, weights, temperature, mu, reduction=reduction, k=k, gain=gain
    )


@_docs.shared
def approx_ndcg_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    temperature: float = 1.0,
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
      {{scores, loss_labels, loss_batch, temperature}}
      k: Optimise NDCG@k (a soft cut-off); None for the whole list.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in the paper and in
        Rax), ``"linear"`` or a callable applied to the labels.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses, in
      [-1, 0], for ``"none"``. A list without a relevant item has a loss of 0.
      {{loss_nan_under_jit}}

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``temperature`` is not a float in (0, inf),
        or is below the smallest normal number of the compute dtype (1.2e-38
        in float32).
      {{loss_value_error_gain}}

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
    temperature = _validation.check_positive_float(temperature, name="temperature", caller=caller)
    k = _validation.check_k(k, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, reduction = _prepare(
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
    return _approx_ndcg(
        scores, labels, where, weights, temperature, reduction=reduction, k=k, gain=gain
    )


@_docs.shared
def neural_ndcg_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    temperature: float = 1.0,
    k: int | None = None,
    gain: str | Callable = "exp2",
    sinkhorn_iterations: int = 50,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""NeuralNDCG loss: minus NDCG of the gains sorted by a relaxed permutation.

    NeuralSort relaxes the permutation sorting the ``m`` real scores in
    descending order to a row-stochastic matrix

    .. math::

        \hat P_{p i} = \operatorname{softmax}_i \left(
            \frac{(m + 1 - 2p)\, s_i - \sum_j |s_i - s_j|}{T} \right),

    which Sinkhorn scaling (alternately normalising columns and rows, in log
    space) makes approximately doubly stochastic. The gains it sorts give the
    loss

    .. math::

        \ell(s, y) = -\frac{1}{\mathrm{IDCG@k}} \sum_{p=1}^{\min(k, m)}
            \frac{(\hat P\, g(y))_p}{\log_2(p + 1)}.

    Padding takes no row and no column of :math:`\hat P`.

    Args:
      {{scores, loss_labels, loss_batch, temperature}}
      k: Optimise NDCG@k: only the first ``k`` positions count; None for all.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in the paper),
        ``"linear"`` or a callable applied to the labels.
      sinkhorn_iterations: Number of Sinkhorn column-and-row scalings, an int
        >= 0 (0 keeps NeuralSort's row-stochastic matrix). The default, 50, is
        allRank's iteration cap.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses,
      about [-1, 0], for ``"none"``. A list without a relevant item has a loss
      of 0.
      {{loss_nan_under_jit}}

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``temperature`` is not a float in (0, inf),
        or is below the smallest normal number of the compute dtype (1.2e-38
        in float32); ``sinkhorn_iterations`` is not an int >= 0.
      {{loss_value_error_gain}}

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> labels = jnp.array([2.0, 1.0, 0.0])
      >>> loss = losses.neural_ndcg_loss(jnp.array([3.0, 2.0, 1.0]), labels, temperature=0.1)
      >>> print(f"{loss:.4f}")
      -1.0000
      >>> loss = losses.neural_ndcg_loss(jnp.array([1.0, 2.0, 3.0]), labels, temperature=0.1)
      >>> print(f"{loss:.4f}")  # NDCG of the reversed ranking
      -0.5869

    References:
      Pobrotyn & Białobrzeski, "NeuralNDCG: direct optimisation of a ranking
      metric via differentiable relaxation of sorting", 2021.
      https://arxiv.org/abs/2102.07831

      Grover, Wang, Zweig & Ermon, "Stochastic optimization of sorting networks
      via continuous relaxations", ICLR 2019. https://arxiv.org/abs/1903.08850
    """
    caller = "neural_ndcg_loss"
    temperature = _validation.check_positive_float(temperature, name="temperature", caller=caller)
    k = _validation.check_k(k, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    iterations = _check_nonnegative_int(
        sinkhorn_iterations, name="sinkhorn_iterations", caller=caller
    )
    scores, labels, where, weights, reduction = _prepare(
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
    return _neural_ndcg_kernel(
        scores,
        labels,
        where,
        weights,
        temperature,
        reduction=reduction,
        k=k,
        gain=gain,
        iterations=iterations,
    )
