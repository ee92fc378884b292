r"""Smooth (differentiable) ranking metrics: soft ranks, DCG, NDCG, RR, precision, recall, AP, ERR.

The exact metrics of :mod:`lodestar.metrics` are piecewise constant in the
scores, so their gradient is zero. Every function here replaces the hard rank
of each item by a **soft rank**, a smooth function of the scores controlled by
a ``temperature`` :math:`T > 0` (in the units of the scores), and converges to
the exact metric on tie-free scores as :math:`T \to 0`.

Every function works along the **last axis**: ``scores`` and ``labels`` have
shape ``(..., n)``; :func:`ranks` returns ``(..., n)`` and the metrics return
``(...)``, one value per list.

>>> import jax
>>> import jax.numpy as jnp
>>> from lodestar import smooth
>>> scores = jnp.array([0.3, 2.0, 1.0])
>>> labels = jnp.array([1.0, 0.0, 2.0])
>>> smooth.ranks(scores, temperature=0.01).tolist()
[3.0, 1.0, 2.0]
>>> print(f"{smooth.ndcg(scores, labels, temperature=0.01):.4f}")
0.6697
>>> jax.grad(smooth.ndcg)(scores, labels).shape
(3,)

**Methods.** ``method`` selects the soft rank:

* ``"sigmoid"`` (default): the ApproxNDCG rank of Qin, Liu & Li (2010),
  :math:`r_i = 1 + \sum_{j \ne i} \sigma((s_j - s_i) / T)`. :math:`O(n^2)`
  time and memory.
* ``"neuralsort"``: the relaxed permutation matrix of Grover et al. (2019).
  :math:`O(n^2)`.
* ``"softsort"``: the relaxed permutation matrix of Prillo & Eisenschlos
  (2020). :math:`O(n^2)`.
* ``"permutahedron"``: the projection onto the permutahedron of Blondel et al.
  (2020), by isotonic regression. :math:`O(n \log n)` time, :math:`O(n)`
  memory, with a closed-form backward pass.

**Cut-off** ``k``. The soft metrics weight each item by a soft indicator of
being in the top ``k``, :math:`c_i = \sigma((s_i - t_k) / T)`, where the
threshold :math:`t_k` is the midpoint of the ``k``-th and ``(k+1)``-th largest
real scores (as Qin et al. 2010 and Rax place it); with ``k`` at or past the
number of real items, :math:`c_i = 1`. As :math:`T \to 0`, :math:`c_i` tends
to 1 for the top ``k`` items and to 0 for the others, so the soft DCG@k tends
to the exact DCG@k.

**Measures declared once.** :func:`precision`, :func:`recall`,
:func:`average_precision` and :func:`err` are their exact measures'
declarations in the registry, a utility of each item's rank summed over the
items (``lodestar._rank_sums``), evaluated on soft ranks: the rank is the
soft rank of ``method``, the cut-off the soft one above, and the items
ranked above an item are weighted by :math:`\sigma((s_j - s_i) / T)`.

**Padding.** ``where`` is a boolean mask; ``False`` marks padding, which takes
no part: real items score and differentiate exactly as without it, padding
gets a zero gradient (and a soft rank of 0), and a list with no real item
scores 0.

**Packed lists.** ``segments`` (integers, ``(..., n)``) packs several lists
into one row, as in :mod:`lodestar.metrics`: :func:`ranks` then ranks each
item within its own list, and the metrics return ``(..., max_segments)``, one
value per list, with the values and gradients of each list padded on its own.

>>> packed = jnp.array([0.3, 2.0, 1.0, 5.0, 4.0])
>>> smooth.ranks(packed, temperature=0.01, segments=jnp.array([0, 0, 0, 1, 1])).tolist()
[3.0, 1.0, 2.0, 1.0, 2.0]

**Numerics.** Half-precision inputs are computed in float32, as in
:mod:`lodestar.metrics`. Values and gradients stay finite for tied scores,
scores of :math:`\pm 10^6`, one-item and fully padded lists, and every
temperature from the smallest normal number of the compute dtype
(:math:`1.2 \times 10^{-38}` in float32, :math:`2.2 \times 10^{-308}` in
float64) up, where the soft ranks are the hard ones; a smaller temperature
would be flushed to zero and is refused. Options are checked when the function
is traced; NaN and infinity in real items raise on concrete arrays, as in
:mod:`lodestar.metrics`, and so do ``gain="exp2"`` labels whose gains overflow
(below 128 in float32, 1024 in float64).

**Bad values under jit.** Traced values cannot be refused, so a list holding
a NaN or infinite score or label (or a negative label in :func:`ndcg`, or
overflowing exp2 gains) gives NaN: its value, every real item's soft rank,
and the gradient with respect to its real scores. Other lists are unaffected.
Unlike the exact metrics, an infinite score gives NaN, since a soft rank is a
function of the score values. See decision 0003.

References:
  Qin, Liu & Li, "A general approximation framework for direct optimization of
  information retrieval measures", Information Retrieval 13(4), 2010.
  https://doi.org/10.1007/s10791-009-9124-x

  Grover, Wang, Zweig & Ermon, "Stochastic optimization of sorting networks via
  continuous relaxations", ICLR 2019. https://arxiv.org/abs/1903.08850

  Prillo & Eisenschlos, "SoftSort: a continuous relaxation for the argsort
  operator", ICML 2020. https://arxiv.org/abs/2006.16038

  Blondel, Teboul, Berthet & Djolonga, "Fast differentiable sorting and
  ranking", ICML 2020. https://arxiv.org/abs/2002.08871
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _docs, _gains, _host, _lists, _rank_sums, _registry, _soft_ranks, _validation

__all__ = [
    "average_precision",
    "dcg",
    "err",
    "ndcg",
    "precision",
    "ranks",
    "recall",
    "reciprocal_rank",
]

METHODS = _soft_ranks.METHODS


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


def _check_options(temperature, method, *, caller):
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    method = _validation.check_option(method, name="method", options=METHODS, caller=caller)
    return temperature, method


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("method",))
def _ranks_kernel(scores, where, temperature, *, method):
    """Soft ranks; see :func:`ranks`. Inputs already validated."""
    valid = _lists.valid(scores, where)
    dtype = _lists.compute_dtype(scores)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape, dtype)
    s = jnp.where(valid, scores.astype(dtype), 0)
    r = _soft_ranks.soft_ranks(s, valid, jnp.asarray(temperature, dtype), method)
    # A non-finite score gives every real item of its list NaN, whatever the method.
    return _lists.nan_rule(
        r, scores, jnp.zeros(scores.shape, jnp.int8), where, s, options=(temperature,)
    )


# ``k`` travels as an array (the list length when None), so one compilation
# serves every k; ``cut`` says statically whether a k was given at all.
_STATIC = ("method", "cut", "gain")


def _cutoff(k, n):
    return n if k is None else min(k, n)


@functools.partial(jax.jit, static_argnames=(*_STATIC, "zero_discount"))
def _dcg_kernel(
    scores, labels, where, temperature, log_base, k, *, method, cut, gain, zero_discount
):
    """Per-list smooth DCG; see :func:`dcg`. Inputs already validated."""
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    if zero_discount:
        # log_base 1 makes every discount 1 / inf = 0, whose gradient is 0 * inf.
        value = jnp.zeros(scores.shape[:-1], dtype)
    else:
        gains = jnp.where(valid, _gains.apply_gain(gain, y), 0)
        temperature = jnp.asarray(temperature, dtype)
        value = _soft_ranks.soft_dcg(
            s, gains, valid, temperature, log_base, k, method=method, cut=cut
        )
    return _lists.nan_rule(value, scores, labels, where, s, gain=gain, options=(temperature,))


# Its ideal ranking can sort on the host (decision 0026).
@_host.one_program_at_a_time
@functools.partial(jax.jit, static_argnames=_STATIC)
def _ndcg_kernel(scores, labels, where, temperature, k, *, method, cut, gain):
    """Per-list smooth NDCG; see :func:`ndcg`. Inputs already validated."""
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    n = scores.shape[-1]
    if n == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    gains = jnp.where(valid, _gains.apply_gain(gain, y), 0)
    temperature = jnp.asarray(temperature, dtype)
    # The gains are divided by the ideal before the sum, not the sum after
    # (lodestar._gains.shares): gains near the exp2 limit still train.
    share = _gains.shares(gains, _gains.ideal_dcg(gains, valid, k=k))
    value = _soft_ranks.soft_dcg(s, share, valid, temperature, 2.0, k, method=method, cut=cut)
    return _lists.nan_rule(
        value,
        scores,
        labels,
        where,
        s,
        nonnegative_labels=True,
        gain=gain,
        options=(temperature,),
    )


@functools.partial(jax.jit, static_argnames=("method",))
def _reciprocal_rank_kernel(scores, labels, where, temperature, *, method):
    """Per-list smooth reciprocal rank; see :func:`reciprocal_rank`. Inputs validated."""
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    temperature = jnp.asarray(temperature, dtype)
    relevant = valid & (y != 0)
    r = _soft_ranks.soft_ranks(s, valid, temperature, method)
    first = jnp.where(
        relevant, jnp.exp(_soft_ranks.masked_log_softmax(s, relevant, -1, temperature)), 0
    )
    value = jnp.sum(first / jnp.where(valid, r, 1), axis=-1)
    return _lists.nan_rule(value, scores, labels, where, s, options=(temperature,))


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


@_docs.shared
def ranks(
    scores: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch n"]:
    r"""Soft 1-based ranks: a differentiable relaxation of the descending rank.

    The hard rank of item :math:`i` is its 1-based position when the real
    items are sorted by descending score. With :math:`m` real items, each
    method gives a smooth :math:`r_i \in [1, m]`:

    .. math::

        \text{sigmoid:}\quad r_i = 1 + \sum_{j \ne i} \sigma\!\left(\frac{s_j - s_i}{T}\right)

        \text{neuralsort, softsort:}\quad
            r_i = \frac{\sum_{p=1}^m p\, \hat P_{pi}}{\sum_{p=1}^m \hat P_{pi}},\quad
            \hat P_{p\cdot} = \operatorname{softmax}\!\left(\frac{(m + 1 - 2p)\, s
                - A_s \mathbf 1}{T}\right) \text{ or }
            \operatorname{softmax}\!\left(-\frac{|s_{[p]} - s|}{T}\right)

        \text{permutahedron:}\quad r = \operatorname*{arg\,min}_{y \in
            \mathcal P(m, m-1, \dots, 1)} \left\lVert y + \frac{s}{T} \right\rVert^2

    where :math:`A_s = (|s_i - s_j|)_{ij}`, :math:`s_{[p]}` is the
    :math:`p`-th largest score and :math:`\mathcal P(w)` is the permutahedron
    (the convex hull of the permutations of :math:`w`). The relaxed
    permutation matrix :math:`\hat P` of NeuralSort and SoftSort is only
    row-stochastic, so its transpose applied to the positions is normalised by
    the column sums, which keeps :math:`r_i` a mean position. The permutahedron
    projection is the "quadratic" soft rank :math:`r_{\varepsilon Q}` of
    Blondel et al. with :math:`\varepsilon = T`, computed by sorting and
    isotonic regression (pool adjacent violators) in :math:`O(n \log n)` with
    a closed-form backward pass.

    As :math:`T \to 0` every method tends to the hard ranks on tie-free
    scores. Tied scores get equal soft ranks (sigmoid, softsort,
    permutahedron average them).

    Args:
      {{scores, temperature}}
      method: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``.
      where: ``(..., n)`` boolean mask; False marks padding, which gets rank 0.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        each item is then ranked within its own list. See *Packed lists* in
        the module docstring.
      {{segment_limits}}

    Returns:
      ``(..., n)`` soft ranks, floating (half precision widened to float32).
      Under ``jit``, every real item of a list holding a NaN or infinite
      score gets NaN, whatever the method.

    Raises:
      InvalidParameterError: ``temperature`` is not a float in (0, inf), or
        is below the smallest normal number of the compute dtype;
        ``method`` is unknown.
      ValueError: ``scores`` is a scalar; ``where`` is not a boolean array of the
        same shape; on concrete inputs, a real item holds NaN or infinity.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import smooth
      >>> scores = jnp.array([0.1, 0.9, 0.5])
      >>> smooth.ranks(scores, temperature=1e-3, method="permutahedron").tolist()
      [3.0, 1.0, 2.0]
      >>> smooth.ranks(jnp.array([1.0, 1.0]), method="permutahedron").tolist()
      [1.5, 1.5]

    References:
      Qin, Liu & Li, Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x

      Grover et al., ICLR 2019. https://arxiv.org/abs/1903.08850

      Prillo & Eisenschlos, ICML 2020. https://arxiv.org/abs/2006.16038

      Blondel et al., ICML 2020. https://arxiv.org/abs/2002.08871
    """
    temperature, method = _check_options(temperature, method, caller="ranks")
    lists = _lists.prepare(
        scores,
        jnp.zeros(jnp.shape(scores), jnp.int8),
        where,
        caller="ranks",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    return lists.per_item(_ranks_kernel(lists.scores, lists.where, temperature, method=method))


@_docs.shared
def dcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    log_base: float = 2.0,
    gain: str | Callable = "linear",
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth discounted cumulative gain of each list.

    .. math::

        \widetilde{\mathrm{DCG}}\mathrm{@k} = \sum_i
            \frac{g(\ell_i)}{\log_b(r_i + 1)}\, c_i,\qquad
        c_i = \sigma\!\left(\frac{s_i - t_k}{T}\right)

    where :math:`r_i` is the soft rank of :func:`ranks`, the discount is the
    exact metric's (``lodestar._gains.discount_at``), and :math:`t_k` is
    the midpoint of the ``k``-th and ``(k+1)``-th largest real scores
    (:math:`c_i = 1` when ``k`` is None or at least the number of real items).
    On tie-free scores it tends to :func:`lodestar.metrics.dcg` as
    :math:`T \to 0`.

    Args:
      {{scores}}
      labels: ``(..., n)`` graded relevance of each item.
      {{temperature}}
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`.
      k: Soft cut-off at the top ``k`` positions; None scores the whole list.
      log_base: Base :math:`b` of the discount, in (0, inf).
      gain: ``"linear"``, ``"exp2"`` (:math:`2^\ell - 1`) or a callable.
      {{where, packed}}

    Returns:
      ``(...)`` smooth DCG of each list; 0 for a list with no real item; under
      ``jit``, NaN for a list with a value refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` or ``log_base`` is not in (0, inf),
        ``temperature`` is below the smallest normal number of the compute
        dtype, or ``log_base`` outside the normal numbers JAX passes it as
        (float32 without ``jax_enable_x64``);
        ``method`` or ``gain`` is unknown; ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or ``gain="exp2"`` gains overflow.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([3.0, 2.0, 1.0])
      >>> print(f"{metrics.dcg(scores, labels):.4f}")
      4.7619
      >>> print(f"{smooth.dcg(scores, labels, temperature=0.01):.4f}")
      4.7619

    References:
      Qin, Liu & Li, Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x

      Järvelin & Kekäläinen, ACM TOIS 20(4), 2002.
      https://doi.org/10.1145/582415.582418
    """
    temperature, method = _check_options(temperature, method, caller="dcg")
    k = _validation.check_k(k, caller="dcg")
    log_base = _validation.check_log_base(log_base, caller="dcg")
    gain = _validation.check_gain(gain, caller="dcg")
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller="dcg",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
        temperature=temperature,
    )
    value = _dcg_kernel(
        lists.scores,
        lists.labels,
        lists.where,
        temperature,
        log_base,
        _cutoff(k, lists.scores.shape[-1]),
        method=method,
        cut=k is not None,
        gain=gain,
        zero_discount=log_base == 1.0,
    )
    return lists.per_list(value)


@_docs.shared
def ndcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    gain: str | Callable = "linear",
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth NDCG of each list: smooth DCG over the exact ideal DCG.

    .. math::

        \widetilde{\mathrm{NDCG}}\mathrm{@k} =
            \frac{\widetilde{\mathrm{DCG}}\mathrm{@k}(s)}{\mathrm{DCG@k}(\text{ideal})}

    The numerator is :func:`dcg` with base 2; the denominator is the exact
    ideal DCG of :func:`lodestar.metrics.ndcg` (same ``k``, gain and discount,
    real items only), which does not depend on the scores. A list whose ideal
    is 0 scores 0. On tie-free scores it tends to
    :func:`lodestar.metrics.ndcg` as :math:`T \to 0`.

    Args:
      {{scores, graded_labels, temperature}}
      method: The soft rank; see :func:`ranks`.
      k: Soft cut-off at the top ``k`` positions (see :func:`dcg`); the ideal
        is cut exactly at ``k``. None scores the whole list.
      gain: ``"linear"``, ``"exp2"`` (:math:`2^\ell - 1`) or a callable.
      {{where, packed}}

    Returns:
      ``(...)`` smooth NDCG of each list; 0 with no relevant or no real item.
      Without ``k`` it stays in [0, 1] in practice (not proven for every
      method). With ``k`` it can exceed 1 by a little (up to a few percent at
      moderate temperatures): the soft cut-off lets the items just past ``k``
      contribute, while the ideal is cut exactly.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` or
        ``gain`` is unknown; ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN, infinity or a negative label, or
        ``gain="exp2"`` gains overflow.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import smooth
      >>> scores = jnp.array([0.1, 0.9, 0.5])
      >>> labels = jnp.array([1.0, 0.0, 0.0])
      >>> grad = jax.grad(smooth.ndcg)(scores, labels, temperature=0.5)
      >>> bool(grad[0] > 0 > grad[1])
      True

    References:
      Qin, Liu & Li, Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x
    """
    temperature, method = _check_options(temperature, method, caller="ndcg")
    k = _validation.check_k(k, caller="ndcg")
    gain = _validation.check_gain(gain, caller="ndcg")
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller="ndcg",
        nonnegative_labels=True,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        gain=gain,
        temperature=temperature,
    )
    value = _ndcg_kernel(
        lists.scores,
        lists.labels,
        lists.where,
        temperature,
        _cutoff(k, lists.scores.shape[-1]),
        method=method,
        cut=k is not None,
        gain=gain,
    )
    return lists.per_list(value)


@_docs.shared
def reciprocal_rank(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth reciprocal rank of the first relevant item.

    .. math::

        \widetilde{\mathrm{RR}} = \sum_{i \in R} \frac{q_i}{r_i},\qquad
        q_i = \frac{\exp(s_i / T)}{\sum_{j \in R} \exp(s_j / T)}

    where :math:`R` is the set of relevant (non-zero label) real items,
    :math:`r_i` the soft rank of :func:`ranks` and :math:`q_i` a softmax over
    the relevant items' scores: the Gibbs relaxation of "item :math:`i` is the
    highest-scored relevant item", at the same temperature. The exact value is
    :math:`1 / r_{i^*}` for :math:`i^* = \arg\max_{i \in R} s_i`; on tie-free
    scores, :math:`q \to e_{i^*}` and :math:`r \to` the hard ranks as
    :math:`T \to 0`, so :math:`\widetilde{\mathrm{RR}} \to \mathrm{RR}`.

    Unlike :math:`1 / r_{i^*}` alone, every relevant item receives gradient,
    through :math:`q_i` (raising a lower relevant item towards the top raises
    the value) and through :math:`r_i`. The :math:`q_i` sum to 1, so a single
    relevant item gives exactly :math:`1 / r_i`, and the value stays in
    :math:`[1/m, 1]`. (A product of pairwise sigmoids,
    :math:`\prod_{j \in R \setminus i} \sigma((s_i - s_j)/T)`, was rejected:
    it does not sum to 1 when several relevant items are close.)

    Args:
      {{scores}}
      labels: ``(..., n)`` relevance; any non-zero value is relevant.
      {{temperature}}
      method: The soft rank; see :func:`ranks`.
      {{where, packed}}

    Returns:
      ``(...)`` smooth reciprocal rank of each list, in [0, 1]; 0 for a list
      with no relevant or no real item.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import smooth
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([0.0, 1.0, 1.0])
      >>> print(f"{smooth.reciprocal_rank(scores, labels, temperature=0.01):.4f}")
      0.5000

    References:
      Voorhees, "The TREC-8 question answering track report", TREC 1999.

      Qin, Liu & Li, Information Retrieval 13(4), 2010.
      https://doi.org/10.1007/s10791-009-9124-x
    """
    temperature, method = _check_options(temperature, method, caller="reciprocal_rank")
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller="reciprocal_rank",
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    value = _reciprocal_rank_kernel(
        lists.scores, lists.labels, lists.where, temperature, method=method
    )
    return lists.per_list(value)


# --------------------------------------------------------------------------
# Measures declared as rank sums: precision, recall, average precision, ERR
# --------------------------------------------------------------------------
#
# Each is its registry entry's declaration (lodestar._rank_sums.RankSum, next
# to the exact formula in lodestar.metrics) evaluated on soft ranks: one kernel
# serves them all, and a new declared measure needs only its public function.


@functools.partial(
    jax.jit, static_argnames=("measure", "method", "cut", "static", "nonnegative_labels")
)
def _rank_sum_kernel(
    scores,
    labels,
    where,
    temperature,
    k,
    cutoff,
    num_relevant,
    traced,
    *,
    measure,
    method,
    cut,
    static,
    nonnegative_labels,
):
    """Per-list smooth value of a declared rank sum. Inputs already validated.

    ``k`` is the cut-off clipped to the list length and ``cutoff`` the one
    asked for (both the length when ``cut`` is False); ``traced`` and
    ``static`` are the measure's options.
    """
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    temperature = jnp.asarray(temperature, dtype)
    items = _rank_sums.Items(
        y, valid, {**dict(static), **traced}, num_relevant, cutoff if cut else None
    )
    view = _rank_sums.SoftView(s, valid, temperature, method, k, cut=cut)
    value = _rank_sums.evaluate(measure, items, view)
    # What the concrete checks refuse beyond the shared ones gives NaN, with a
    # NaN gradient: a label the measure refuses, or too small a num_relevant.
    bad = jnp.zeros(value.shape, bool)
    if measure.refused is not None:
        bad = measure.refused(items)
    if num_relevant is not None:
        bad = bad | (num_relevant < jnp.sum(items.relevant(), axis=-1))
    value = _validation.nan_with_nan_gradient(value, bad, s, valid)
    return _lists.nan_rule(
        value,
        scores,
        labels,
        where,
        s,
        nonnegative_labels=nonnegative_labels,
        options=(temperature,),
    )


def _check_num_relevant_covers(num_relevant, lists, *, caller):
    """Refuse a ``num_relevant`` below a list's own relevant items, as the exact measures do."""
    xp = _validation.host_numpy(num_relevant, lists.labels, lists.where)
    labels = xp.asarray(lists.labels)
    real = xp.ones(labels.shape, bool) if lists.where is None else xp.asarray(lists.where)
    own = xp.sum(real & (labels != 0), axis=-1)
    _validation.refuse_if(
        xp.any(xp.asarray(num_relevant) < own),
        f"{caller} got num_relevant below the number of relevant items in a list; "
        f"it counts every relevant item of the list, retrieved or not.",
    )


def _smooth_rank_sum(
    key,
    scores,
    labels,
    *,
    caller,
    temperature,
    method,
    k,
    where,
    segments,
    max_segments,
    max_segment_size,
    num_relevant=None,
    options=None,
):
    """The path of a smooth measure declared as a rank sum: validate, lay out, evaluate."""
    measure = _registry.MEASURES[key]
    rank_sum = measure.rank_sum
    assert rank_sum is not None, f"{key} is not declared as a rank sum"
    temperature, method = _check_options(temperature, method, caller=caller)
    k = _validation.check_k(k, caller=caller)
    num_relevant = _validation.check_num_relevant(
        num_relevant, scores, segments, max_segments, caller=caller
    )
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=measure.nonnegative_labels,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    if num_relevant is not None:
        _check_num_relevant_covers(num_relevant, lists, caller=caller)
    n = lists.scores.shape[-1]
    value = _rank_sum_kernel(
        lists.scores,
        lists.labels,
        lists.where,
        temperature,
        _cutoff(k, n),
        n if k is None else k,
        num_relevant,
        options or {},
        measure=rank_sum,
        method=method,
        cut=k is not None,
        static=(),
        nonnegative_labels=measure.nonnegative_labels,
    )
    return lists.per_list(value)


@_docs.shared
def precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth precision at ``k``: the soft share of the first ``k`` positions that are relevant.

    .. math::

        \widetilde{\mathrm{P}}\mathrm{@k} = \frac{1}{k} \sum_{i\,:\,\ell_i \ne 0} c_i,
        \qquad c_i = \sigma\!\left(\frac{s_i - t_k}{T}\right)

    where :math:`c_i` is the soft cut-off of :func:`dcg` (:math:`t_k` the
    midpoint of the ``k``-th and ``(k+1)``-th largest real scores). The
    denominator is ``k`` itself, as in :func:`lodestar.metrics.precision`,
    even past the end of a short list; without ``k`` it is the number of real
    items, and the value (the share of the list that is relevant) does not
    depend on the scores. Precision reads no rank but whether an item is in
    the top ``k``, so ``method`` changes nothing. On tie-free scores it tends
    to :func:`lodestar.metrics.precision` as :math:`T \to 0`.

    Args:
      {{scores, binary_labels, temperature}}
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. Precision does not read it.
      k: The number of positions, with a soft cut-off; also the denominator.
        None scores the whole list over its number of real items.
      {{where, packed}}

    Returns:
      ``(...)`` smooth precision of each list, in [0, 1]; 0 for a list with no
      real item; under ``jit``, NaN for a list with a value refused on
      concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN, infinity or a negative label.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.precision(scores, labels, k=2):.4f}")
      0.5000
      >>> print(f"{smooth.precision(scores, labels, k=2, temperature=0.01):.4f}")
      0.5000
      >>> grad = jax.grad(smooth.precision)(scores, labels, k=2, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third, lower the second
      True

    Remarks:
      Rax's ``approx_t12n(precision_metric)`` divides by the soft number of
      items retrieved, :math:`\sum_i c_i`, rather than by ``k``, and places
      its soft cut-off at the midpoint of the ``k``-th and ``(k+1)``-th soft
      *ranks* (in rank units) rather than of the scores. With the same cut-off
      the two differ by the factor :math:`\sum_i c_i / k`
      (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    return _smooth_rank_sum(
        "P",
        scores,
        labels,
        caller="precision",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_docs.shared
def recall(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth recall at ``k``: the soft share of the relevant items within the first ``k``.

    .. math::

        \widetilde{\mathrm{R}}\mathrm{@k} = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0} c_i,
        \qquad c_i = \sigma\!\left(\frac{s_i - t_k}{T}\right)

    with the soft cut-off :math:`c_i` of :func:`dcg`, and :math:`R` the number
    of relevant real items in the list, or ``num_relevant``, as in
    :func:`lodestar.metrics.recall`. Without ``k`` the value is 1 whenever an
    item is relevant, whatever the scores. Recall reads no rank, so
    ``method`` changes nothing. On tie-free scores it tends to
    :func:`lodestar.metrics.recall` as :math:`T \to 0`.

    Args:
      {{scores, binary_labels, temperature}}
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. Recall does not read it.
      k: The number of positions, with a soft cut-off. None, or a ``k`` past
        ``n``, looks at the whole list.
      {{num_relevant, where, packed}}

    Returns:
      ``(...)`` smooth recall of each list, in [0, 1]; 0 for a list with no
      relevant or no real item; under ``jit``, NaN for a list with a value
      refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      {{value_error_num_relevant}}

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.recall(scores, labels, k=2):.4f}")
      0.5000
      >>> print(f"{smooth.recall(scores, labels, k=2, temperature=0.01):.4f}")
      0.5000

    Remarks:
      Rax's ``approx_t12n(recall_metric)`` is the same sum over the relevant
      items of the list, but with its soft cut-off at the midpoint of the
      soft *ranks* ``k`` and ``k + 1`` (in rank units) rather than of the
      scores; with the same cut-off the two agree (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    return _smooth_rank_sum(
        "recall",
        scores,
        labels,
        caller="recall",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


@_docs.shared
def average_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth average precision at ``k`` (ApproxAP of Qin, Liu & Li 2010).

    .. math::

        \widetilde{\mathrm{AP}}\mathrm{@k} = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0}
            c_i\, \frac{\rho_i}{r_i}

    where :math:`r_i` is the soft rank of :func:`ranks`, :math:`c_i` the soft
    cut-off of :func:`dcg`, :math:`R` the number of relevant real items (or
    ``num_relevant``), and :math:`\rho_i` the soft rank of item :math:`i`
    among the relevant items alone, by the same method: the soft count of
    relevant items at or above it. With the sigmoid method that is ApproxAP's

    .. math::

        \rho_i = 1 + \sum_{j \ne i,\ \ell_j \ne 0}
            \sigma\!\left(\frac{s_j - s_i}{T}\right).

    The exact AP@k is :math:`\frac{1}{R} \sum_{i\,:\,\ell_i \ne 0,\ p_i \le k}
    \mathrm{P@}p_i` with :math:`\mathrm{P@}p_i = (1 + \#\{\text{relevant
    above } i\}) / p_i`; on tie-free scores the soft ranks tend to the hard
    ones, so the value tends to :func:`lodestar.metrics.average_precision` as
    :math:`T \to 0`.

    Args:
      {{scores, binary_labels, temperature}}
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. It gives both :math:`r_i` and
        :math:`\rho_i`.
      k: Only relevant items within the first ``k`` positions contribute
        (a soft cut-off); the denominator stays :math:`R`. None, or a ``k``
        past ``n``, looks at the whole list.
      {{num_relevant, where, packed}}

    Returns:
      ``(...)`` smooth average precision of each list, in [0, 1]; 0 for a list
      with no relevant or no real item; under ``jit``, NaN for a list with a
      value refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      {{value_error_num_relevant}}

    Example:
      Relevant items at ranks 1 and 3 give (1/1 + 2/3) / 2:

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.average_precision(scores, labels):.4f}")
      0.8333
      >>> print(f"{smooth.average_precision(scores, labels, temperature=0.01):.4f}")
      0.8333
      >>> grad = jax.grad(smooth.average_precision)(scores, labels, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third above the second
      True

    Remarks:
      Rax's ``approx_t12n(ap_metric)`` counts the relevant items at or above
      item :math:`i` by comparing soft ranks, :math:`[r_j \le r_i]`, a step
      that passes no gradient; lodestar's :math:`\rho_i` is smooth, so a
      relevant item also learns from the relevant items around it. The two
      agree when each list holds one relevant item, and, without ``k``, Rax
      takes no cut-off either (``docs/equivalence.md``).

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x

      Buckley & Voorhees, "Evaluating evaluation measure stability", SIGIR
      2000. https://doi.org/10.1145/345508.345543
    """
    return _smooth_rank_sum(
        "map",
        scores,
        labels,
        caller="average_precision",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


@_docs.shared
def err(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    max_label: float,
    temperature: float | Float[Array, ""] = 1.0,
    method: str = "sigmoid",
    k: int | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Smooth expected reciprocal rank (Chapelle et al., 2009).

    The user of ERR reads down the list and stops at an item of grade
    :math:`g` with probability :math:`R(g) = (2^g - 1) / 2^{g_{\max}}`; ERR is
    the expected reciprocal of the rank where they stop. The smooth version
    replaces the rank by the soft rank :math:`r_i` of :func:`ranks` and "the
    items above :math:`i`" by sigmoid weights, in log space:

    .. math::

        \widetilde{\mathrm{ERR}}\mathrm{@k} = \sum_i c_i\, \frac{R_i}{r_i}
            \exp\Bigl(\sum_{j \ne i} \sigma\!\left(\frac{s_j - s_i}{T}\right)
            \log(1 - R_j)\Bigr)

    with the soft cut-off :math:`c_i` of :func:`dcg`. As :math:`T \to 0` on
    tie-free scores, the sigmoid weights tend to 1 for the items above
    :math:`i` and to 0 for those below, the exponential to
    :math:`\prod_{j\ \mathrm{above}\ i} (1 - R_j)`, and the value to
    :func:`lodestar.metrics.err`.

    Args:
      {{scores}}
      labels: ``(..., n)`` grades :math:`g`, in ``[0, max_label]``.
      max_label: :math:`g_{\max}`, the top grade of the judgement scale, in
        (0, inf); required, as in :func:`lodestar.metrics.err`.
      {{temperature}}
      method: The soft rank :math:`r_i`: ``"sigmoid"``, ``"neuralsort"``,
        ``"softsort"`` or ``"permutahedron"``; see :func:`ranks`. The sum over
        the items above is the pairwise sigmoid whatever the method, as the
        soft cut-off is.
      k: Score only the first ``k`` positions, with a soft cut-off. None, or a
        ``k`` past ``n``, scores the whole list.
      {{where, packed}}

    Returns:
      ``(...)`` smooth ERR of each list, in [0, 1); 0 for a list with no item
      of positive grade or no real item; under ``jit``, NaN for a list with a
      value refused on concrete inputs, a grade above ``max_label`` among
      them.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1; ``max_label`` is not a real
        number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, a negative label, or a label above
        ``max_label``.

    Example:
      Grades 4 and 2 on a 0–4 scale: 15/16 + (1/16) (3/16) / 2.

      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5])
      >>> labels = jnp.array([4, 2])
      >>> print(f"{metrics.err(scores, labels, max_label=4):.6f}")
      0.943359
      >>> print(f"{smooth.err(scores, labels, max_label=4, temperature=0.01):.6f}")
      0.943359
      >>> grad = jax.grad(smooth.err)(scores, labels, max_label=4, temperature=0.5)
      >>> bool(grad[0] > 0 > grad[1])
      True

    Remarks:
      The product over the items above is taken in log space and weighted by
      the sigmoid of the score differences, not built from the soft ranks, so
      that tied items reach each other with weight 1/2 and every item above
      :math:`i` passes gradient. Its cost is that of the sigmoid soft ranks,
      O(n^2) time, with memory linear in ``n`` from 512 items on, whatever
      the method. Rax has no ERR.

    References:
      Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
      relevance", CIKM 2009. https://doi.org/10.1145/1645953.1646033

      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    max_label = _validation.check_positive_float(max_label, name="max_label", caller="err")
    scores, labels, where = _validation.check_lists(scores, labels, where, caller="err")
    _validation.check_labels_at_most(labels, where, max_label, name="max_label", caller="err")
    return _smooth_rank_sum(
        "err",
        scores,
        labels,
        caller="err",
        temperature=temperature,
        method=method,
        k=k,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"max_label": max_label},
    )
