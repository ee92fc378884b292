"""Smooth DCG and NDCG: gains weighted by the discount of each item's soft rank."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _lists, _soft_ranks, _validation
from lodestar.smooth import _common


@functools.partial(jax.jit, static_argnames=(*_common.STATIC, "zero_discount"))
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


@functools.partial(jax.jit, static_argnames=_common.STATIC)
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
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance of each item.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`.
      k: Soft cut-off at the top ``k`` positions; None scores the whole list.
      log_base: Base :math:`b` of the discount, in (0, inf).
      gain: ``"linear"``, ``"exp2"`` (:math:`2^\ell - 1`) or a callable.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
    temperature, method = _common.check_options(temperature, method, caller="dcg")
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
        _common.cutoff(k, lists.scores.shape[-1]),
        method=method,
        cut=k is not None,
        gain=gain,
        zero_discount=log_base == 1.0,
    )
    return lists.per_list(value)


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
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank; see :func:`ranks`.
      k: Soft cut-off at the top ``k`` positions (see :func:`dcg`); the ideal
        is cut exactly at ``k``. None scores the whole list.
      gain: ``"linear"``, ``"exp2"`` (:math:`2^\ell - 1`) or a callable.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
    temperature, method = _common.check_options(temperature, method, caller="ndcg")
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
        _common.cutoff(k, lists.scores.shape[-1]),
        method=method,
        cut=k is not None,
        gain=gain,
    )
    return lists.per_list(value)
