"""Listwise losses over a softmax or a Plackett-Luce model of the list."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _validation
from lodestar.losses import _common


@_common.loss_kernel(nonnegative_labels=True)
def _softmax_kernel(s, y, valid, w):
    log_softmax = s - _common.masked_logsumexp(s, valid, -1)
    p = _common.label_distribution(y, valid, w)
    return -jnp.sum(jnp.where(valid, p * log_softmax, 0), axis=-1)


@_common.loss_kernel(nonnegative_labels=True)
def _poly1_softmax_kernel(s, y, valid, w, epsilon):
    log_softmax = s - _common.masked_logsumexp(s, valid, -1)
    p = _common.label_distribution(y, valid, w)
    cross_entropy = -jnp.sum(jnp.where(valid, p * log_softmax, 0), axis=-1)
    # pt, the softmax probability of the target distribution; a list without
    # one (labels summing to 0) has no pt term, as it has no cross-entropy.
    pt = jnp.sum(jnp.where(valid, p * jnp.exp(log_softmax), 0), axis=-1)
    some = jnp.any(p > 0, axis=-1)
    return cross_entropy + jnp.where(some, epsilon * (1 - pt), 0)


# Positions per block of :func:`_suffix_logsumexp`: each block holds a (B, B)
# matrix, so its temporaries are B floats per item. A list of at most
# _SUFFIX_WHOLE positions is one block (at most 128 x 128 per list), which
# ends the recursion early: n = 1,000 compiles two levels, not four.
_SUFFIX_BLOCK = 8
_SUFFIX_WHOLE = 128


def _suffix_logsumexp(x, real):
    r"""``log Σ_{q ≥ p} exp(x_q)`` over the real items ``q``, along the last axis.

    The real items come first and the padding last; ``x`` is finite
    everywhere (padding included), and the result is meaningless on padding.
    Blocks of :data:`_SUFFIX_BLOCK` positions take a masked log-sum-exp of
    their own suffixes, and the suffixes from every block's first position
    onwards are the same problem on a list :data:`_SUFFIX_BLOCK` times
    shorter, added with ``logaddexp``: a few array operations per level, each
    as stable as a log-sum-exp, which JAX differentiates to any order. JAX
    differentiates :func:`jax.lax.cumlogsumexp` through a parallel prefix scan
    of ``logaddexp`` calls instead: thousands of operations at n = 1,000,
    seconds to compile for ``jvp`` and for a Hessian-vector product (decision
    0029).
    """
    n = x.shape[-1]
    size = n if n <= _SUFFIX_WHOLE else _SUFFIX_BLOCK
    blocks = -(-n // size)
    padding = [(0, 0)] * (x.ndim - 1) + [(0, blocks * size - n)]
    shape = (*x.shape[:-1], blocks, size)
    x = jnp.pad(x, padding).reshape(shape)
    real = jnp.pad(real, padding).reshape(shape)
    position = jnp.arange(size)
    # pair[..., p, q]: q is a real item at or after p in the block.
    pair = (position[None, :] >= position[:, None]) & real[..., None, :]
    x_pairs = jnp.broadcast_to(x[..., None, :], pair.shape)
    lse = _common.masked_logsumexp(x_pairs, pair, -1)[..., 0]
    if blocks > 1:
        from_heads = _suffix_logsumexp(lse[..., 0], real[..., 0])
        # What follows each block: the items from the next block's first one on.
        after = jnp.concatenate([from_heads[..., 1:], jnp.zeros_like(from_heads[..., :1])], -1)
        follows = jnp.concatenate([real[..., 1:, 0], jnp.zeros_like(real[..., :1, 0])], -1)
        lse = jnp.where(follows[..., None], jnp.logaddexp(lse, after[..., None]), lse)
    return lse.reshape(*shape[:-2], -1)[..., :n]


@_common.loss_kernel(nonnegative_labels=False)
def _listmle_kernel(s, y, valid, w, key):
    axis = s.ndim - 1
    index = lax.broadcasted_iota(jnp.int32, s.shape, axis)
    # Real items first, then descending labels; lax.sort is stable, so tied
    # labels keep their order of appearance unless a random key breaks them.
    # Labels closed over by a jitted step are constants, and XLA would sort
    # them while compiling (seconds at 8 x 1,000 items): the barrier keeps
    # the sort in the program.
    keys = list(lax.optimization_barrier((jnp.logical_not(valid).astype(jnp.int8), -y)))
    if key is not None:
        keys.append(jax.random.uniform(key, s.shape))
    *_, order = lax.sort((*keys, index), dimension=axis, num_keys=len(keys))
    s_sorted = jnp.take_along_axis(s, order, axis=-1)
    valid_sorted = jnp.take_along_axis(valid, order, axis=-1)
    w_sorted = jnp.take_along_axis(w, order, axis=-1)
    # Padding sits last, as _suffix_logsumexp requires.
    lse = _suffix_logsumexp(s_sorted, valid_sorted)
    return jnp.sum(jnp.where(valid_sorted, w_sorted * (lse - s_sorted), 0), axis=-1)


# Items per block of the prefix log-sum-exp: its (..., blocks, block, block)
# triangles hold 32 values per item, recomputed on the way back.
_PREFIX_BLOCK = 32


@jax.checkpoint
def _triangle_logsumexp(x):
    """``log sum exp(x[..., :p + 1])`` for every ``p`` along the last axis, as a masked square."""
    size = x.shape[-1]
    square = jnp.broadcast_to(x[..., None, :], (*x.shape, size))
    return _common.masked_logsumexp(square, jnp.tri(size, dtype=bool), -1)[..., 0]


def _prefix_logsumexp(x):
    """``log sum exp(x[..., :p + 1])`` for every ``p``: blocks, then the same over their totals.

    ``lax.cumlogsumexp`` gives the same values, but on the CPU it is a window
    over the whole prefix (quadratic time), and its parallel-scan form took
    13 s to compile with its gradient at n = 1,000. Here each block of
    :data:`_PREFIX_BLOCK` items is a masked triangle, and the log-sum-exp of
    the blocks before each block is the same function of the blocks' totals:
    linear time and memory, and a program of a few levels whatever n.
    """
    n = x.shape[-1]
    block = min(n, _PREFIX_BLOCK)
    blocks = -(-n // block)
    # Padding after the last item: no prefix of a real item reaches it.
    x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, blocks * block - n)])
    within = _triangle_logsumexp(x.reshape(*x.shape[:-1], blocks, block))
    if blocks > 1:
        before = _prefix_logsumexp(within[..., :-1, -1])[..., None]
        later = jnp.logaddexp(before, within[..., 1:, :])
        within = jnp.concatenate([within[..., :1, :], later], axis=-2)
    return within.reshape(*within.shape[:-2], blocks * block)[..., :n]


@_common.loss_kernel(nonnegative_labels=True, static_argnames=("gain",))
def _unique_softmax_kernel(s, y, valid, w, *, gain):
    axis = s.ndim - 1
    # By ascending label, padding last, each item's softmax runs over itself
    # and a prefix of the order (the smaller labels): one prefix log-sum-exp
    # serves every item, in memory linear in n.
    weighted_gains = jnp.where(valid, _gains.apply_gain(gain, y) * w, 0)
    keys = jnp.where(valid, y, jnp.inf)
    keys, s, weighted_gains = lax.sort((keys, s, weighted_gains), dimension=axis, num_keys=1)
    index = lax.broadcasted_iota(jnp.int32, s.shape, axis)
    first = jnp.concatenate(
        [jnp.ones_like(keys[..., :1], bool), keys[..., 1:] != keys[..., :-1]], axis=-1
    )
    # The sorted position where each item's run of equal labels starts: the
    # run's number among the sorted positions of the runs' first items.
    run = jnp.cumsum(first, axis=axis) - 1
    starts = jnp.sort(jnp.where(first, index, s.shape[-1]), axis=axis)
    start = jnp.take_along_axis(starts, run, axis=axis)
    smaller = jnp.take_along_axis(_prefix_logsumexp(s), jnp.maximum(start - 1, 0), axis=axis)
    some = start > 0
    term = jnp.where(some, jnp.logaddexp(s, jnp.where(some, smaller, 0)) - s, 0)
    return jnp.sum(weighted_gains * term, axis=-1)


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

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

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
    )
    return _softmax_kernel(scores, labels, where, weights, item_weights, reduction=reduction)


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
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance labels (any real values; only their order
        matters).
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
      key: Optional :func:`jax.random.key` (or ``PRNGKey``) breaking ties
        between equal labels uniformly at random. Without it tied labels keep
        their order of appearance (a stable sort), as in :func:`rax.listmle_loss`;
        the loss then depends on the order of tied items.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` is unknown; ``key`` is not None, one
        typed key or one raw ``PRNGKey``.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, or a
        negative or non-finite weight.

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
    key = _common.check_key(key, caller=caller)
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
    return _listmle_kernel(scores, labels, where, weights, item_weights, key, reduction=reduction)


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
      epsilon: :math:`\epsilon`, a float in [-1, inf) (at -1 the first
        polynomial term is removed; the loss must stay bounded below).

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

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
    )
    return _poly1_softmax_kernel(
        scores, labels, where, weights, item_weights, epsilon, reduction=reduction
    )


def unique_softmax_loss(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    weights: Num[Array, "*batch"] | Num[Array, "*batch n"] | None = None,
    reduction: str = "mean",
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
    gain: str | Callable = "exp2",
) -> Float[Array, ""] | Float[Array, "*batch"]:
    r"""Uni-Rank softmax loss: each item against the items of smaller labels.

    .. math::

        \ell(s, y) = -\sum_i g(y_i) \log
            \frac{e^{s_i}}{e^{s_i} + \sum_{j:\, y_j < y_i} e^{s_j}}

    over real items: each item's softmax runs over itself and the items it
    should outrank, never over its equals, so tied labels do not compete. An
    item of the smallest label (and every item with a gain of 0) adds nothing;
    a per-item weight multiplies its item's term.
    Items are sorted by label once and every softmax is a prefix of that
    order: one prefix log-sum-exp, in memory linear in the list length.

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
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in Rax),
        ``"linear"`` or a callable applied to the labels.

    Returns:
      A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for
      ``"none"``. A list without a relevant item has a loss of 0.
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, a negative or non-finite weight, or, with
        ``gain="exp2"``, labels whose gains overflow the dtype (a label of
        128 or more in float32, 1024 in float64).

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores = jnp.array([0.0, 0.0, 0.0])
      >>> labels = jnp.array([1.0, 1.0, 0.0])
      >>> print(f"{losses.unique_softmax_loss(scores, labels):.4f}")  # 2 log 2
      1.3863

    Remarks:
      Per list this is :func:`rax.unique_softmax_loss` with
      ``reduce_fn=jnp.sum``; Rax's ``gain_fn=None`` (no gain) is
      ``gain=jnp.ones_like`` here.

    References:
      Zhu & Klabjan, "Listwise learning to rank by exploring unique ratings",
      WSDM 2020. https://doi.org/10.1145/3336191.3371814
    """
    caller = "unique_softmax_loss"
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
    )
    return _unique_softmax_kernel(
        scores, labels, where, weights, item_weights, reduction=reduction, gain=gain
    )
