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

**Weights.** ``weights`` of shape ``(...)`` (the batch shape, ``()`` for a
single list) are **per-list**: each list's loss is multiplied by its weight
before the reduction. ``weights`` of the scores' shape ``(..., n)`` are
**per-item**, as in Rax: a pointwise loss weights each item's term, the
softmax losses weight each item's label in the target distribution, ListMLE
each position's term by the weight of the item placed there, a pairwise loss
(LambdaLoss included) each pair ``y_i > y_j`` by the weight of the more
relevant item ``i``, and ApproxNDCG and NeuralNDCG each item's gain (and the
ideal DCG is that of the weighted gains). With packed lists, per-list weights
have shape ``(..., max_segments)``; when that equals ``(..., n)`` the weights
are per item. Weights must be finite and non-negative (checked on concrete
arrays).

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
Under ``jit``, ``max_segments`` is needed only for ``"none"``, whose shape it
sets: with ``"mean"`` or ``"sum"`` the traced ids may be any integers (query
ids, as in Rax), and each row is laid out as up to ``n`` lists of
``max_segment_size`` slots, ``n`` by default; give ``max_segment_size`` (room
for the longest list) to keep a long row's layout small.

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

**Hyperparameters under jit.** ``temperature``, ``mu``, ``margin`` and
``epsilon`` may be traced, so that one compiled step anneals them. Concrete
values are checked eagerly; a traced value outside its range makes the loss
NaN (with a NaN gradient), never a plausible number.

>>> step = jax.jit(lambda s, y, t: losses.approx_ndcg_loss(s, y, temperature=t))
>>> print(f"{step(scores, labels, 0.5):.4f}", step(scores, labels, -1.0))
-0.7627 nan

**Long lists.** The pairwise losses, LambdaLoss and ApproxNDCG sum over the
pairs of a list in column blocks, with each block recomputed on the way back,
so their value and gradient take memory linear in the list length (0.1 GiB of
temporaries at 32 lists of 10,000 items, where the pairs would take 36 GiB).
NeuralNDCG relaxes the permutation itself, an (n, n) matrix per list, and its
Sinkhorn steps scale that one matrix by two vectors; past 2**26 (list,
position, item) entries the matrix is never held and its products are
recomputed in blocks too (0.55 GiB at 32 x 10,000, at n² exponentials per
product: a GPU's work). None uses a custom derivative rule: ``grad``,
``jvp``, ``jacfwd`` and Hessian-vector products all work (decision 0029).

**Rank-aware losses.** :func:`lambda_loss` takes its current ranks from the
exact rank engine of :mod:`lodestar.metrics` (ties broken by descending index,
ranks carry no gradient); :func:`approx_ndcg_loss` is
``-lodestar.smooth.ndcg(..., method="sigmoid")``; :func:`neural_ndcg_loss`
relaxes the sorting permutation itself. All three default to the exponential
gain :math:`2^\ell - 1` of the papers that define them, unlike the linear
default of :mod:`lodestar.metrics`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _docs, _gains, _host, _lists, _pairs, _ranking, _soft_ranks, _validation

__all__ = [
    "approx_ndcg_loss",
    "lambda_loss",
    "listmle_loss",
    "neural_ndcg_loss",
    "pairwise_hinge_loss",
    "pairwise_logistic_loss",
    "pairwise_soft_zero_one_loss",
    "pointwise_mse_loss",
    "pointwise_sigmoid_loss",
    "poly1_softmax_loss",
    "softmax_loss",
]

REDUCTIONS = ("mean", "sum", "none")

_LN2 = math.log(2.0)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_nonnegative_int(value, *, name: str, caller: str) -> int:
    return _validation.check_int(value, name=name, caller=caller, low=0)


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
    """Validate; lay packed lists out (``packing``: the segment options), one per block.

    Returns ``(scores, labels, where, list_weights, item_weights, reduction)``;
    ``weights`` are per list or per item by their shape (see the module
    docstring), and the other of the two is None.
    """
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
        one_result=reduction != "none",
        **packing,
    )
    shape = lists.scores.shape
    item_shape = shape if lists.item is None else (*shape[:-2], lists.n)
    list_weights, item_weights = _lists.check_weights(
        weights, shape[:-1], caller=caller, item_shape=item_shape
    )
    if item_weights is not None:
        item_weights = lists.layout(item_weights)
    return (
        lists.scores,
        lists.labels,
        lists.where,
        lists.list_weights(list_weights),
        item_weights,
        reduction,
    )


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


def _empty(scores, dtype):
    return jnp.zeros(scores.shape[:-1], dtype)


def _loss_kernel(*, nonnegative_labels: bool, static_argnames: tuple[str, ...] = ()):
    """Make a loss kernel of ``per_list(s, y, valid, w, *options, **static)``.

    ``per_list`` gets the floating scores ``s`` and labels ``y`` (0 on
    padding), the mask ``valid`` of real items, the per-item weights ``w``
    (1 without them, 0 on padding), the traced ``options`` and the ``static``
    options named in ``static_argnames``, and returns the per-list losses.
    The kernel, jitted, takes validated ``(scores, labels, where, weights,
    item_weights, *options, reduction, **static)``; it gives lists of no item
    position a loss of 0, applies the NaN rule of traced inputs to the others
    (with the ``gain`` option, if any) and reduces.
    """

    def make(per_list):
        def kernel(scores, labels, where, weights, item_weights, *options, reduction, **static):
            valid = _lists.valid(scores, where)
            s, y, dtype = _lists.floating(scores, labels, valid)
            if scores.shape[-1] == 0:
                return _reduce(_empty(scores, dtype), valid, weights, reduction)
            w = jnp.ones_like(s) if item_weights is None else item_weights.astype(dtype)
            w = jnp.where(valid, w, 0)
            value = per_list(s, y, valid, w, *options, **static)
            value = _lists.nan_rule(
                value,
                scores,
                labels,
                where,
                s,
                nonnegative_labels=nonnegative_labels,
                gain=static.get("gain"),
                options=[o for o in options if isinstance(o, jax.Array)],
            )
            return _reduce(value, valid, weights, reduction)

        kernel.__name__ = kernel.__qualname__ = per_list.__name__
        return _host.one_program_at_a_time(
            jax.jit(kernel, static_argnames=("reduction", *static_argnames))
        )

    return make


def _normalised_gains(y, valid, w, gain, k):
    """Each real item's gain, times its weight, over the list's ideal DCG@k (0 if none)."""
    gains = jnp.where(valid, _gains.apply_gain(gain, y) * w, 0)
    return _gains.shares(gains, _gains.ideal_dcg(gains, valid, k=k))


# --------------------------------------------------------------------------
# Kernels (inputs already validated)
# --------------------------------------------------------------------------


def _label_distribution(y, valid, w):
    """The weighted labels over their sum: the target distribution of a list (0 if none)."""
    weighted = jnp.where(valid, y * w, 0)
    total = jnp.sum(weighted, axis=-1, keepdims=True)
    return weighted / jnp.where(total > 0, total, 1)


@_loss_kernel(nonnegative_labels=True)
def _softmax_kernel(s, y, valid, w):
    log_softmax = s - _masked_logsumexp(s, valid, -1)
    p = _label_distribution(y, valid, w)
    return -jnp.sum(jnp.where(valid, p * log_softmax, 0), axis=-1)


@_loss_kernel(nonnegative_labels=True)
def _poly1_softmax_kernel(s, y, valid, w, epsilon):
    log_softmax = s - _masked_logsumexp(s, valid, -1)
    p = _label_distribution(y, valid, w)
    cross_entropy = -jnp.sum(jnp.where(valid, p * log_softmax, 0), axis=-1)
    # pt, the softmax probability of the target distribution; a list without
    # one (labels summing to 0) has no pt term, as it has no cross-entropy.
    pt = jnp.sum(jnp.where(valid, p * jnp.exp(log_softmax), 0), axis=-1)
    some = jnp.any(p > 0, axis=-1)
    return cross_entropy + jnp.where(some, epsilon * (1 - pt), 0)


@_loss_kernel(nonnegative_labels=False)
def _listmle_kernel(s, y, valid, w, key):
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
    w_sorted = jnp.take_along_axis(w, order, axis=-1)
    # Padding sits last, so -inf there leaves every real suffix sum unchanged.
    lse = lax.cumlogsumexp(jnp.where(valid_sorted, s_sorted, -jnp.inf), axis=axis, reverse=True)
    return jnp.sum(jnp.where(valid_sorted, w_sorted * (lse - s_sorted), 0), axis=-1)


@_loss_kernel(nonnegative_labels=False)
def _pointwise_mse_kernel(s, y, valid, w):
    return jnp.sum(jnp.where(valid, w * jnp.square(s - y), 0), axis=-1)


@_loss_kernel(nonnegative_labels=False)
def _pointwise_sigmoid_kernel(s, y, valid, w):
    # Sigmoid cross-entropy with targets clipped into [0, 1], written so that
    # no score overflows: max(s, 0) - s y + log(1 + exp(-|s|)).
    target = jnp.clip(y, 0, 1)
    loss = jax.nn.relu(s) - s * target + jnp.log1p(jnp.exp(-jnp.abs(s)))
    return jnp.sum(jnp.where(valid, w * loss, 0), axis=-1)


def _pairwise_sum(pair_loss, s, y, valid, w):
    """Sum ``pair_loss(s_i - s_j) * w_i`` over the pairs with ``y_i > y_j``, in blocks."""

    def term(rows, columns, distinct):
        (s_i, y_i, valid_i, w_i), (s_j, y_j, valid_j, _) = rows, columns
        pair = valid_i & valid_j & (y_i > y_j)
        return jnp.where(pair, pair_loss(s_i - s_j) * w_i, 0)

    return _pairs.pair_sum(term, (s, y, valid, w), over="pairs")


@_loss_kernel(nonnegative_labels=False)
def _pairwise_logistic_kernel(s, y, valid, w, temperature):
    def logistic(difference):
        return jax.nn.softplus(-difference / temperature)

    return _pairwise_sum(logistic, s, y, valid, w)


@_loss_kernel(nonnegative_labels=False)
def _pairwise_hinge_kernel(s, y, valid, w, margin):
    def hinge(difference):
        return jax.nn.relu(margin - difference)

    return _pairwise_sum(hinge, s, y, valid, w)


@_loss_kernel(nonnegative_labels=False)
def _pairwise_soft_zero_one_kernel(s, y, valid, w, temperature):
    def soft_zero_one(difference):
        return jax.nn.sigmoid(-difference / temperature)

    return _pairwise_sum(soft_zero_one, s, y, valid, w)


def _item_discounts(s, valid, k):
    """Current 1-based ranks (ties by descending index) and DCG@k discounts per item."""
    n = s.shape[-1]
    blocks = _ranking.tie_blocks(s, valid, ignore_ties=True)
    position = jnp.minimum(blocks.above, n - 1)
    per_position = jnp.diff(_gains.discount_table(n, k=k, log_base=2.0, dtype=s.dtype))
    discount = jnp.where(valid, _ranking.at_positions(per_position, position), 0)
    return (position + 1).astype(s.dtype), discount


@_loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain"))
def _lambda_kernel(s, y, valid, w, temperature, mu, *, k, gain):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    normalised = _normalised_gains(y, valid, jnp.ones_like(w), gain, cutoff)
    rank, discount = _item_discounts(s, valid, cutoff)
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
        lambdas = lax.stop_gradient((rho + mu * delta) * jnp.abs(g_i - g_j))
        pair_loss = jax.nn.softplus(-(s_i - s_j) / temperature) / _LN2
        pair = valid_i & valid_j & (y_i > y_j)
        return jnp.where(pair, lambdas * pair_loss * w_i, 0)

    items = (s, y, valid, w, rank, discount, normalised)
    return _pairs.pair_sum(term, items, over="pairs")


@_loss_kernel(nonnegative_labels=True, static_argnames=("k", "cut", "gain"))
def _approx_ndcg_kernel(s, y, valid, w, temperature, k, *, cut, gain):
    share = _normalised_gains(y, valid, w, gain, k)
    return -_soft_ranks.soft_dcg(s, share, valid, temperature, 2.0, k, method="sigmoid", cut=cut)


@jax.custom_jvp
def _inverse(total):
    """``1 / total``, and 0 where ``total`` is 0 (an empty row or column)."""
    some = total > 0
    return jnp.where(some, 1 / jnp.where(some, total, 1), 0)


@_inverse.defjvp
def _inverse_jvp(primals, tangents):
    # Written in the result alone (d(1/t) = -(1/t)^2 dt), so that reverse mode
    # through the Sinkhorn loop keeps one vector per scaling and step.
    (total,), (dtotal,) = primals, tangents
    inverse = _inverse(total)
    return inverse, -inverse * inverse * dtotal


def _sinkhorn(products, iterations):
    """Scalings ``(u, v)`` that make ``diag(u) P diag(v)`` approximately doubly stochastic.

    Alternately normalising columns then rows (as allRank) only ever scales
    each row and each column of ``P``, so the loop carries the two scaling
    vectors, O(n), instead of the (n, n) matrix, and each step is two
    products with the fixed ``P``: ``v = 1 / Pᵀu``, then ``u = 1 / Pv``.
    Reverse mode keeps a few vectors per step, and the derivative is that of
    the unrolled loop, exactly (decision 0029). A row or column of ``P`` with
    no mass (padding) keeps a scaling of 0, with a zero gradient.

    Args:
      products: The :class:`_NeuralSort` form of ``P``.
      iterations: Column-and-row normalisations, a static int >= 1.
    """

    @functools.partial(jax.checkpoint, policy=products.saved)
    def scale_once(scalings, _):
        u, v = scalings
        v = _inverse(checkpoint_name(products.transposed_times(u), "neuralsort_product"))
        u = _inverse(checkpoint_name(products.times(v), "neuralsort_product"))
        return (u, v), None

    ones = jnp.ones(products.shape, products.dtype)
    (u, v), _ = lax.scan(scale_once, (ones, ones), length=iterations)
    return u, v


class _DenseNeuralSort:
    """NeuralSort's matrix ``P[..., p, i]`` held whole: the fast form for short lists.

    ``P[..., p, i]`` is the probability that item ``i`` sits at position
    ``p + 1``; rows past the ``m`` real items and columns of padding are 0.
    """

    def __init__(self, s, valid, temperature):
        n = s.shape[-1]
        used = jnp.arange(n) < jnp.sum(valid, axis=-1, keepdims=True)
        mask = used[..., :, None] & valid[..., None, :]
        # Each row's maximum is subtracted before the division by the
        # temperature, so that a small one cannot overflow the logits.
        logits = _soft_ranks.neuralsort_logits(s, valid)
        log_p = _soft_ranks.masked_log_softmax(logits, mask, -1, temperature)
        self.p = jnp.where(mask, jnp.exp(log_p), 0)
        self.shape, self.dtype = s.shape, s.dtype

    # Reverse mode through the Sinkhorn loop keeps what a step computes.
    saved = staticmethod(jax.checkpoint_policies.everything_saveable)

    # Full float32 products: a GPU's default TF32 matmul would leave the
    # scaling ~1e-3 from doubly stochastic, far from what 50 steps reach.
    def times(self, x):
        return jnp.einsum("...pi,...i->...p", self.p, x, precision=lax.Precision.HIGHEST)

    def transposed_times(self, x):
        return jnp.einsum("...pi,...p->...i", self.p, x, precision=lax.Precision.HIGHEST)


class _BlockedNeuralSort:
    """NeuralSort's matrix never held: its products recomputed in column blocks.

    Entry ``(p, i)`` is ``exp((c_p s_i - A_i - peak_p) / T - log Z_p)``, with
    ``c_p = m + 1 - 2p``, ``A_i = Σ_j |s_i - s_j|`` and ``Z_p`` the row's sum,
    so every product is a :func:`lodestar._pairs.pair_sum` over (position,
    item) pairs, in memory linear in n. ``peak_p`` is row ``p``'s largest
    logit, which NeuralSort puts at the item of rank ``p`` (Grover et al.
    2019): computed there, in the same arithmetic as the entry, it makes that
    entry ``exp(0)`` and keeps every exponent at most 0, however small ``T``.
    Each product costs n² exponentials, where the dense form's costs n²
    multiplications; it is the form for lists whose matrix would not fit.
    """

    def __init__(self, s, valid, temperature):
        n = s.shape[-1]
        m = jnp.sum(valid, axis=-1, keepdims=True)
        self.used = jnp.arange(n) < m
        self.scale = jnp.broadcast_to(m + 1 - 2 * jnp.arange(1, n + 1), s.shape).astype(s.dtype)
        self.s, self.valid, self.temperature = s, valid, temperature
        self.spread = _pairs.pair_sum(_soft_ranks.distance, (s, valid), over="columns")
        order = jnp.argsort(jnp.where(valid, -s, jnp.inf), axis=-1, stable=True)
        ranked = self.scale * jnp.take_along_axis(s, order, axis=-1)
        peak = ranked - jnp.take_along_axis(self.spread, order, axis=-1)
        self.peak = lax.stop_gradient(jnp.where(self.used, peak, 0))
        self.log_z = jnp.zeros(s.shape, s.dtype)
        z = self._sum_over_items(jnp.ones(s.shape, s.dtype))
        self.log_z = jnp.where(self.used, jnp.log(jnp.where(self.used, z, 1)), 0)
        self.shape, self.dtype = s.shape, s.dtype

    # Reverse mode through the Sinkhorn loop keeps a step's vectors (its
    # scalings and products) and recomputes the products' blocks only where
    # their derivative needs them (decision 0029).
    saved = staticmethod(jax.checkpoint_policies.save_only_these_names("neuralsort_product"))

    def _entry(self, position, item):
        """``P[p, i]`` for rows and columns of a block; 0 off the real entries."""
        scale, peak, log_z, used = position
        s, spread, valid = item
        real = used & valid
        exponent = (scale * s - spread - peak) / self.temperature
        # Never above 0 (rounding can lift a near-tie past the peak). Not
        # jnp.minimum, whose derivative at the peak's own 0 would be 1/2.
        exponent = jnp.where(exponent > 0, 0, exponent) - log_z
        return jnp.where(real, jnp.exp(jnp.where(real, exponent, -jnp.inf)), 0)

    def _positions(self):
        return (self.scale, self.peak, self.log_z, self.used)

    def _items(self):
        return (self.s, self.spread, self.valid)

    def _sum_over_items(self, x):
        """``Σ_i P[p, i] x_i`` per position: rows are positions, columns items."""

        def term(rows, columns, _):
            return self._entry(rows[:4], columns[4:7]) * columns[7]

        items = (*self._positions(), *self._items(), x)
        return _pairs.pair_sum(term, items, over="columns")

    def times(self, x):
        return self._sum_over_items(x)

    def transposed_times(self, x):
        """``Σ_p P[p, i] x_p`` per item: rows are items, columns positions."""

        def term(rows, columns, _):
            return self._entry(columns[:4], rows[4:7]) * columns[7]

        items = (*self._positions(), *self._items(), x)
        return _pairs.pair_sum(term, items, over="columns")


# Up to this many (list, position, item) entries NeuralNDCG holds its matrix:
# about six matrix-sized temporaries, 1.5 GiB in float32 at the limit, for
# products that cost multiplications only. Past it the products are
# recomputed in blocks: memory linear in n, at n² exponentials per product.
_NEURAL_DENSE_LIMIT = 1 << 26


@_loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain", "iterations"))
def _neural_ndcg_kernel(s, y, valid, w, temperature, *, k, gain, iterations):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    share = _normalised_gains(y, valid, w, gain, cutoff)
    dense = math.prod(s.shape) * n <= _NEURAL_DENSE_LIMIT
    products = (_DenseNeuralSort if dense else _BlockedNeuralSort)(s, valid, temperature)
    if iterations:
        u, v = _sinkhorn(products, iterations)
    else:
        u = v = jnp.ones(s.shape, s.dtype)
    sorted_share = u * products.times(v * share)  # (..., positions)
    discount = jnp.diff(_gains.discount_table(n, k=cutoff, log_base=2.0, dtype=s.dtype))
    return -jnp.sum(sorted_share * discount, axis=-1)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


@_docs.shared
def softmax_loss(
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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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
    return _softmax_kernel(scores, labels, where, weights, item_weights, reduction=reduction)


@_docs.shared
def listmle_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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
    return _listmle_kernel(scores, labels, where, weights, item_weights, key, reduction=reduction)


@_docs.shared
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
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
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
    mu = _validation.check_traceable_float(mu, name="mu", caller=caller, closed=True)
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
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
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    k = _validation.check_k(k, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
def neural_ndcg_loss(
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
    sinkhorn_iterations: int = 50,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""NeuralNDCG loss: minus NDCG of the gains sorted by a relaxed permutation.

    NeuralSort relaxes the permutation sorting the ``m`` real scores in
    descending order to a row-stochastic matrix

    .. math::

        \hat P_{p i} = \operatorname{softmax}_i \left(
            \frac{(m + 1 - 2p)\, s_i - \sum_j |s_i - s_j|}{T} \right),

    which Sinkhorn scaling (alternately normalising columns and rows) makes
    approximately doubly stochastic. The gains it sorts give the
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
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    k = _validation.check_k(k, caller=caller)
    gain = _validation.check_gain(gain, caller=caller)
    iterations = _check_nonnegative_int(
        sinkhorn_iterations, name="sinkhorn_iterations", caller=caller
    )
    scores, labels, where, weights, item_weights, reduction = _prepare(
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
        item_weights,
        temperature,
        reduction=reduction,
        k=k,
        gain=gain,
        iterations=iterations,
    )


@_docs.shared
def poly1_softmax_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    epsilon: float | Float[Array, ""] = 1.0,
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Poly-1 softmax loss: the softmax cross-entropy plus :math:`\epsilon (1 - p_t)`.

    With :math:`q = y / \sum_j y_j` the label distribution and
    :math:`p = \operatorname{softmax}(s)`:

    .. math::

        \ell(s, y) = -\sum_i q_i \log p_i + \epsilon \left(1 - \sum_i q_i p_i\right)

    the leading term of the PolyLoss expansion of the cross-entropy, with its
    coefficient raised by :math:`\epsilon`. A list whose labels sum to 0 has a
    loss of 0.

    Args:
      {{scores, loss_labels, loss_batch}}
      epsilon: :math:`\epsilon`, a float in [-1, inf) (at -1 the first
        polynomial term is removed; the loss must stay bounded below).

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``epsilon`` is not a
        float in [-1, inf).
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, or a negative or non-finite weight.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([2.0, 1.0, 3.0])
      >>> labels = jnp.array([1.0, 0.0, 0.0])
      >>> print(f"{losses.poly1_softmax_loss(scores, labels):.4f}")  # 1.4076 + (1 - 0.2447)
      2.1629

    Remarks:
      :func:`rax.poly1_softmax_loss` normalises the labels in its
      :math:`p_t` term but not in its cross-entropy (its ``softmax_loss``
      default); per list this loss equals Rax's on labels that sum to 1.

    References:
      Leng, Tan, Liu, Cubuk, Shi, Cheng & Anguelov, "PolyLoss: a polynomial
      expansion perspective of classification loss functions", ICLR 2022.
      https://arxiv.org/abs/2204.12511
    """
    caller = "poly1_softmax_loss"
    epsilon = _validation.check_traceable_float(
        epsilon, name="epsilon", caller=caller, low=-1.0, closed=True
    )
    scores, labels, where, weights, item_weights, reduction = _prepare(
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
    return _poly1_softmax_kernel(
        scores, labels, where, weights, item_weights, epsilon, reduction=reduction
    )


@_docs.shared
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
      {{scores}}
      labels: ``(..., n)`` relevance labels (any real values).
      {{loss_batch}}

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown.
      {{loss_value_error}}

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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
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
      {{scores}}
      labels: ``(..., n)`` relevance labels; values outside [0, 1] are clipped.
      {{loss_batch}}

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown.
      {{loss_value_error}}

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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
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
      {{scores}}
      labels: ``(..., n)`` relevance labels (any real values).
      {{loss_batch}}
      margin: :math:`m`, a float in [0, inf).

    Returns:
      {{loss_returns}}

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``margin`` is not a
        float in [0, inf).
      {{loss_value_error}}

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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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


@_docs.shared
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
    scores, labels, where, weights, item_weights, reduction = _prepare(
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
