"""NeuralNDCG: NDCG under a relaxed sorting permutation (NeuralSort and Sinkhorn)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.ad_checkpoint import checkpoint_name
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _pairs, _soft_ranks, _validation
from lodestar.losses import _common


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


@_common.loss_kernel(nonnegative_labels=True, static_argnames=("k", "gain", "iterations"))
def _neural_ndcg_kernel(s, y, valid, w, temperature, *, k, gain, iterations):
    n = s.shape[-1]
    cutoff = n if k is None else min(k, n)
    share = _common.normalised_gains(y, valid, w, gain, cutoff)
    dense = math.prod(s.shape) * n <= _NEURAL_DENSE_LIMIT
    products = (_DenseNeuralSort if dense else _BlockedNeuralSort)(s, valid, temperature)
    if iterations:
        u, v = _sinkhorn(products, iterations)
    else:
        u = v = jnp.ones(s.shape, s.dtype)
    sorted_share = u * products.times(v * share)  # (..., positions)
    discount = jnp.diff(_gains.discount_table(n, k=cutoff, log_base=2.0, dtype=s.dtype))
    return -jnp.sum(sorted_share * discount, axis=-1)


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
      Under ``jit``, a list holding a value refused on concrete inputs
      gives NaN (see *Bad values under jit* in the module docstring).

    Raises:
      InvalidParameterError: ``reduction`` or ``gain`` is unknown; ``k`` is not
        None and not an int >= 1; ``temperature`` is not a float in (0, inf),
        or is below the smallest normal number of the compute dtype (1.2e-38
        in float32); ``sinkhorn_iterations`` is not an int >= 0.
      ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or
        ``weights``; on concrete inputs, NaN or infinity in a real item, a
        negative label, a negative or non-finite weight, or, with
        ``gain="exp2"``, labels whose gains overflow the dtype (a label of
        128 or more in float32, 1024 in float64).

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
    iterations = _common.check_nonnegative_int(
        sinkhorn_iterations, name="sinkhorn_iterations", caller=caller
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
