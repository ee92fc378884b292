"""R-precision and relative precision: precision at or against R, the relevant count."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _validation
from lodestar.metrics import _kernel, _precision


def expected_in_first(blocks, mask, cut, dtype):
    """Expected number of ``mask`` items in the first ``cut`` positions, ``cut`` per list.

    Item ``i`` lands there with probability ``clip(cut - a_i, 0, t_i) / t_i``;
    a per-list cut-off needs no positional table. ``cut`` is ``(...)`` and at
    most the engine's cut-off, so only blocks starting before it matter.
    """
    size = blocks.tied.astype(dtype)
    inside = jnp.clip(cut[..., None] - blocks.above.astype(dtype), 0, size) / size
    return jnp.sum(jnp.where(mask, inside, 0), axis=-1)


def _two_roundings(product, like):
    """``product`` behind an integer XOR with a data-dependent zero.

    XLA:CPU contracts ``a * b + c`` into a fused multiply-add, which rounds
    once where C (and trec_eval) rounds twice; ``floor`` then differs for
    about one R in a hundred at multiples such as 0.3 or 0.7. The XOR with a
    zero the compiler cannot foresee keeps the product a separate, rounded
    value.
    """
    word = jnp.int64 if product.dtype == jnp.float64 else jnp.int32
    zero = jnp.minimum(like, 0).astype(word)  # ``like`` is a count, never negative
    return lax.bitcast_convert_type(lax.bitcast_convert_type(product, word) ^ zero, product.dtype)


def rank_cutoff(multiple, total):
    """trec_eval's cut-off for a multiple of R: ``(long) (multiple * R + 0.9)``.

    Computed in double precision whenever JAX has it (``jax_enable_x64``),
    whatever the lists' dtype, so that it is trec_eval's own arithmetic.
    """
    wide = jax.dtypes.canonicalize_dtype(jnp.float64)
    total_wide = total.astype(wide)
    product = _two_roundings(jnp.asarray(multiple, wide) * total_wide, total_wide)
    return jnp.floor(product + jnp.asarray(0.9, wide)).astype(total.dtype)


def _r_precision(lists: _kernel.RankedLists, k, *, multiple):
    relevant = lists.relevant()
    cut = rank_cutoff(multiple, lists.relevant_total(relevant))
    seen = jnp.minimum(cut, jnp.asarray(k, lists.dtype))
    found = expected_in_first(lists.ranking.blocks, relevant, seen, lists.dtype)
    return _kernel.ratio_or_zero(found, cut)


def _relative_precision(lists: _kernel.RankedLists, k, *, cutoff):
    relevant = lists.relevant()
    found = _precision.relevant_in_top(lists, relevant, k)
    best = jnp.minimum(_precision.slots(lists, cutoff), lists.relevant_total(relevant))
    return _kernel.ratio_or_zero(found, best)


R_PRECISION = _kernel.Formula(
    "r_precision",
    _r_precision,
    labels="binary",
    nonnegative_labels=True,
    mapped_options=("multiple",),
)
RELATIVE_PRECISION = _kernel.Formula(
    "relative_precision",
    _relative_precision,
    with_cutoff=_precision.requested_cutoff,
    labels="binary",
    nonnegative_labels=True,
    mapped_options=("k", "cutoff"),
)


@_kernel.computes(R_PRECISION)
def r_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    multiple: float = 1.0,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""R-precision: precision at R, the number of relevant items, or at a multiple of it.

    Any non-zero label is relevant. With :math:`R` relevant items (the list's,
    or ``num_relevant``), the cut-off is trec_eval's
    :math:`c = \lfloor \mathrm{multiple} \cdot R + 0.9 \rfloor`, computed in
    floating point with two roundings as trec_eval's C does, and

    .. math::

        \mathrm{Rprec} = \frac{\#\{\text{relevant in the first } \min(c, k)\}}{c}:

    positions past the end of the list (or past ``k``) count as non-relevant.
    ``multiple=1`` gives :math:`c = R`, trec_eval's ``Rprec``, the point where
    precision equals recall; other multiples give ``Rprec_mult``. :math:`c = 0`
    (no relevant item, or a multiple below :math:`0.1 / R`) scores 0. With
    ties the cut-off differs per list, so each item's chance of lying before
    it, :math:`\mathrm{clip}(c - a_i, 0, t_i) / t_i`, is summed directly over
    the relevant items: exact, O(n).

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      multiple: The multiple of :math:`R` to cut at, in (0, inf) (trec_eval's
        ``Rprec_mult`` parameters: 0.2, 0.4, ..., 2.0 by default).
      k: Only the first ``k`` positions are retrieved (trec_eval's ``-M``);
        the denominator stays :math:`c`. None, or a ``k`` past ``n``, looks at
        the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` R-precision of each list, in [0, 1]. 0 for a list with no
      relevant item or no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``multiple`` is not a real number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two relevant items, one first and one tied for positions 2 and 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(metrics.r_precision(scores, labels))
      0.75
      >>> print(metrics.r_precision(scores, labels, multiple=2.0))  # c = 4
      0.5

    Remarks:
      R-precision averages well over queries with very different numbers of
      relevant documents, since each query is cut at its own R. Pass the
      relevant documents of the qrels as ``num_relevant`` to get trec_eval's
      value; the list's own count makes R-precision equal recall at R.
      The cut-off is computed in float64 when ``jax_enable_x64`` is on,
      exactly as trec_eval does; without it, in float32, it can differ only
      where ``multiple * R + 0.9`` lies within float32 rounding of a whole
      number, which never happens for the default multiples (0.2, 0.4, ...,
      2.0) below R = 100,000.

    References:
      Buckley & Voorhees, "Retrieval system evaluation", in *TREC: Experiment
      and Evaluation in Information Retrieval*, MIT Press, 2005.

      trec_eval's ``m_Rprec.c`` and ``m_Rprec_mult.c``.
      https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    multiple = _validation.check_positive_float(multiple, name="multiple", caller="r_precision")
    return _kernel.evaluate_formula(
        R_PRECISION,
        scores,
        labels,
        caller="r_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"multiple": multiple},
        num_relevant=num_relevant,
    )


@_kernel.computes(RELATIVE_PRECISION)
def relative_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Precision at ``k`` over the best precision possible at ``k``: trec_eval's ``relative_P``.

    Any non-zero label is relevant. With :math:`R` relevant items (the list's,
    or ``num_relevant``), at most :math:`\min(k, R)` of the first ``k``
    positions can hold one, so

    .. math::

        \mathrm{relative\_P@k} = \frac{\#\{\text{relevant in the first } k\}}
            {\min(k, R)}:

    precision at ``k`` up to :math:`R`, recall at ``k`` past it. With
    ``k=None``, ``k`` is the number of real items. With ties the numerator is
    the expected count, :math:`\sum_{i\,:\,\ell_i \ne 0}
    |[a_i, a_i + t_i) \cap [0, k)| / t_i`, and the value is exact.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions. None uses the number of real items.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` relative precision of each list, in [0, 1]. 0 for a list with
      no relevant item or no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two relevant items: at ``k=4`` both are found, so the value is 1 where
      precision is 0.5:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(metrics.relative_precision(scores, labels, k=4))
      1.0
      >>> print(metrics.relative_precision(scores, labels, k=2))
      0.75

    Remarks:
      Unlike :func:`precision`, a query with few relevant documents can reach
      1 at any ``k``.

    References:
      trec_eval's ``m_rel_P.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    _validation.check_k(k, caller="relative_precision")
    return _kernel.evaluate_formula(
        RELATIVE_PRECISION,
        scores,
        labels,
        caller="relative_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )
