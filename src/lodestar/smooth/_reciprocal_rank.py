"""Smooth reciprocal rank and hits: the first relevant item, relaxed.

Both read "the highest-scored relevant item" through the same Gibbs weights
:math:`q_i`, a softmax over the relevant items' scores at the temperature.
They are not declared as rank sums (``lodestar._rank_sums``): there, "no
relevant item above :math:`i`" would be a function of the soft count of
relevant items above it, which is at least 1/2 for every one of a block of
tied relevant items, so a list whose relevant items tie (every list of a model
that starts at constant scores) would score near 0 with a gradient near 0.
The weights :math:`q_i` share the first place among tied items instead.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _lists, _soft_ranks, _validation
from lodestar.smooth import _common


@functools.partial(jax.jit, static_argnames=("method",))
def _reciprocal_rank_kernel(scores, labels, where, temperature, *, method):
    """Per-list smooth reciprocal rank; see :func:`reciprocal_rank`. Inputs validated."""
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    temperature = jnp.asarray(temperature, dtype)
    r = _soft_ranks.soft_ranks(s, valid, temperature, method)
    value = jnp.sum(_first_relevant(s, y, valid, temperature) / jnp.where(valid, r, 1), axis=-1)
    return _lists.nan_rule(value, scores, labels, where, s, options=(temperature,))


def _first_relevant(s, y, valid, temperature):
    """:math:`q_i`: the softmax of the relevant real items' scores at ``temperature``, else 0."""
    relevant = valid & (y != 0)
    return jnp.where(
        relevant, jnp.exp(_soft_ranks.masked_log_softmax(s, relevant, -1, temperature)), 0
    )


@functools.partial(jax.jit, static_argnames=("cut",))
def _hits_kernel(scores, labels, where, temperature, k, *, cut):
    """Per-list smooth hits; see :func:`hits`. Inputs validated."""
    valid = _lists.valid(scores, where)
    s, y, dtype = _lists.floating(scores, labels, valid)
    if scores.shape[-1] == 0:
        return jnp.zeros(scores.shape[:-1], dtype)
    temperature = jnp.asarray(temperature, dtype)
    inside = _soft_ranks.top_k_weight(s, valid, temperature, k, cut=cut)
    value = jnp.sum(_first_relevant(s, y, valid, temperature) * inside, axis=-1)
    return _lists.nan_rule(
        value, scores, labels, where, s, nonnegative_labels=True, options=(temperature,)
    )


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
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance; any non-zero value is relevant.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank; see :func:`ranks`.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

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
    temperature, method = _common.check_options(temperature, method, caller="reciprocal_rank")
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


def hits(
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
    r"""Smooth hits at ``k``: the soft chance that the first relevant item is within ``k``.

    .. math::

        \widetilde{\mathrm{hits}}\mathrm{@k} = \sum_{i \in R} q_i\, c_i,\qquad
        q_i = \frac{\exp(s_i / T)}{\sum_{j \in R} \exp(s_j / T)}

    where :math:`R` is the set of relevant (non-zero label) real items,
    :math:`q_i` the weights of :func:`reciprocal_rank` (the Gibbs relaxation
    of "item :math:`i` is the highest-scored relevant item") and :math:`c_i`
    the soft cut-off of :func:`dcg`. The exact value is :math:`c_{i^*}` for
    :math:`i^* = \arg\max_{i \in R} s_i` with the hard cut-off; on tie-free
    scores :math:`q \to e_{i^*}` and :math:`c_i \to [\text{rank}_i \le k]` as
    :math:`T \to 0`, so the value tends to :func:`lodestar.metrics.hits`.
    Without ``k`` (or with one at or past the list's real items) it is 1 for
    a list with a relevant item, whatever the scores. Hits reads no rank but
    the cut-off, so ``method`` changes nothing.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      temperature: :math:`T` in (0, inf), in the units of the scores.
      method: The soft rank: ``"sigmoid"``, ``"neuralsort"``, ``"softsort"`` or
        ``"permutahedron"``; see :func:`ranks`. Hits does not read it.
      k: The number of positions, with a soft cut-off. None scores the whole
        list.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` smooth hits of each list, in [0, 1]; 0 for a list with no
      relevant or no real item; under ``jit``, NaN for a list with a value
      refused on concrete inputs.

    Raises:
      InvalidParameterError: ``temperature`` is not in (0, inf) or is below the
        smallest normal number of the compute dtype; ``method`` is unknown;
        ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      >>> import jax
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, smooth
      >>> scores = jnp.array([0.9, 0.5, 0.3, 0.1])
      >>> labels = jnp.array([0, 0, 1, 1])
      >>> print(f"{metrics.hits(scores, labels, k=2):.4f}")
      0.0000
      >>> print(f"{smooth.hits(scores, labels, k=2, temperature=0.01):.4f}")
      0.0000
      >>> print(f"{smooth.hits(scores, labels, k=3, temperature=0.01):.4f}")
      1.0000
      >>> grad = jax.grad(smooth.hits)(scores, labels, k=2, temperature=0.1)
      >>> bool(grad[2] > 0 > grad[1])  # raise the relevant third above the second
      True

    References:
      Qin, Liu & Li, "A general approximation framework for direct
      optimization of information retrieval measures", Information Retrieval
      13(4), 2010. https://doi.org/10.1007/s10791-009-9124-x
    """
    caller = "hits"
    temperature, method = _common.check_options(temperature, method, caller=caller)
    k = _validation.check_k(k, caller=caller)
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=True,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        temperature=temperature,
    )
    n = lists.scores.shape[-1]
    value = _hits_kernel(
        lists.scores,
        lists.labels,
        lists.where,
        temperature,
        _common.cutoff(k, n),
        cut=k is not None,
    )
    return lists.per_list(value)
