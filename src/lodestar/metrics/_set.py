"""Set measures: the retrieved set (the first ``k``) judged without its order.

With ``K = min(n, k)`` items retrieved, ``R`` relevant items in all and ``X``
relevant items retrieved, trec_eval's set measures are functions of the
counts: ``set_P = X / K``, ``set_recall = X / R``, ``set_relative_P =
X / min(K, R)``, ``set_F = (1 + b) X / (b R + K)``, ``utility`` linear in
``X``, and ``set_map = X^2 / (K R)``. Only ``X`` depends on the order, and
only when ``k`` cuts a tie block, where it is hypergeometric: every measure
but ``set_map`` is linear in ``X`` and takes its mean, and ``set_map`` takes
``E[X^2] = E[X]^2 + Var[X]``. All are exact (decision 0015).
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _ranking, _validation
from lodestar.metrics import _counts, _kernel, _precision


def relevant_retrieved_moments(lists: _kernel.RankedLists, relevant, k):
    """``(E[X], E[X^2])`` for ``X`` the relevant items in the first ``k``, over tie orders.

    A block of ``m`` items starting at ``a``, ``r`` of them relevant, has
    ``c = clip(k - a, 0, m)`` positions in the first ``k``; its relevant
    items there are hypergeometric, with mean ``c r / m`` and variance
    ``c (m - c) r (m - r) / (m^2 (m - 1))``. Blocks are shuffled
    independently, so the variances add. Each relevant item carries ``1/r`` of
    its block's share: ``c / m`` of the mean and ``c (m - c) (m - r) /
    (m^2 (m - 1))`` of the variance. Only a block that ``k`` cuts has any.
    """
    dtype = lists.dtype
    blocks = lists.ranking.blocks
    _, relevant_in_block = _ranking.block_totals(relevant.astype(jnp.int32), blocks)
    size = blocks.tied.astype(dtype)
    inside = jnp.clip(jnp.asarray(k, dtype) - blocks.above.astype(dtype), 0, size)
    others = size - relevant_in_block.astype(dtype)
    mean = jnp.sum(jnp.where(relevant, inside / size, 0), axis=-1)
    spread = inside * (size - inside) * others / (size * size * jnp.maximum(size - 1, 1))
    variance = jnp.sum(jnp.where(relevant, spread, 0), axis=-1)
    return mean, mean * mean + variance


def _set_precision(lists: _kernel.RankedLists, k):
    found = _precision.relevant_in_top(lists, lists.relevant(), k)
    return _kernel.ratio_or_zero(found, _counts.retrieved_count(lists, k))


def _set_recall(lists: _kernel.RankedLists, k):
    relevant = lists.relevant()
    found = _precision.relevant_in_top(lists, relevant, k)
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


def _set_relative_precision(lists: _kernel.RankedLists, k):
    relevant = lists.relevant()
    found = _precision.relevant_in_top(lists, relevant, k)
    best = jnp.minimum(_counts.retrieved_count(lists, k), lists.relevant_total(relevant))
    return _kernel.ratio_or_zero(found, best)


def _set_average_precision(lists: _kernel.RankedLists, k):
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], lists.dtype)
    relevant = lists.relevant()
    _, square = relevant_retrieved_moments(lists, relevant, k)
    retrieved = _counts.retrieved_count(lists, k)
    return _kernel.ratio_or_zero(square, retrieved * lists.relevant_total(relevant))


def _set_f(lists: _kernel.RankedLists, k, *, beta):
    relevant = lists.relevant()
    found = _precision.relevant_in_top(lists, relevant, k)
    beta = jnp.asarray(beta, lists.dtype)
    retrieved = _counts.retrieved_count(lists, k)
    if lists.in_trec_eval_order:
        # m_set_F.c's own expression, whose roundings the form below skips.
        precision = _kernel.ratio_or_zero(found, retrieved)
        recall = _kernel.ratio_or_zero(found, lists.relevant_total(relevant))
        harmonic = (beta + 1) * precision * recall / (beta * precision + recall)
        return jnp.where(found > 0, harmonic, 0)
    # (1 + b) P R / (b P + R) with P = X / K and R = X / R_total is
    # (1 + b) X / (b R_total + K): linear in X, so its mean is exact.
    return _kernel.ratio_or_zero(
        (1 + beta) * found, beta * lists.relevant_total(relevant) + retrieved
    )


def _utility(lists: _kernel.RankedLists, k, *, coefficients, num_documents):
    relevant = lists.relevant()
    found = _precision.relevant_in_top(lists, relevant, k)
    retrieved = _counts.retrieved_count(lists, k)
    total = lists.relevant_total(relevant)
    collection = jnp.asarray(0 if num_documents is None else num_documents, lists.dtype)
    a, b, c, d = (jnp.asarray(x, lists.dtype) for x in coefficients)
    value = (
        a * found
        + b * (retrieved - found)
        + c * (total - found)
        + d * (collection + found - retrieved - total)
    )
    return jnp.where(jnp.any(lists.valid, axis=-1), value, 0)


SET_PRECISION = _kernel.Formula(
    "set_precision", _set_precision, labels="binary", nonnegative_labels=True
)
SET_RECALL = _kernel.Formula("set_recall", _set_recall, labels="binary", nonnegative_labels=True)
SET_RELATIVE_PRECISION = _kernel.Formula(
    "set_relative_precision", _set_relative_precision, labels="binary", nonnegative_labels=True
)
SET_AVERAGE_PRECISION = _kernel.Formula(
    "set_average_precision", _set_average_precision, labels="binary", nonnegative_labels=True
)
SET_F = _kernel.Formula("set_f", _set_f, labels="binary", nonnegative_labels=True)
UTILITY = _kernel.Formula("utility", _utility, labels="binary", nonnegative_labels=True)


@_kernel.computes(SET_PRECISION)
def set_precision(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Set precision: the share of the retrieved items that are relevant (trec_eval's ``set_P``).

    Any non-zero label is relevant. The retrieved set is the first ``k``
    positions, :math:`K = \min(n, k)` items, so unlike :func:`precision` a
    short list is not filled with non-relevant items:

    .. math::

        \mathrm{set\_P} = \frac{X}{K},\qquad
        \mathbb{E}[X] = \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i}

    for :math:`X` the relevant items retrieved. With ties only :math:`X` is
    random (when ``k`` cuts a tie block), and the value is its exact mean over
    :math:`K`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` set precision of each list, in [0, 1]. 0 for a list with no
      real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      Three items retrieved; at ``k=10`` precision divides by 10, set
      precision by 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> print(f"{metrics.set_precision(scores, labels, k=10):.4f}")
      0.6667
      >>> print(f"{metrics.precision(scores, labels, k=10):.4f}")
      0.2000

    Remarks:
      ``set_P`` with ``-M 50`` is not ``P_50``: the latter fills a short list
      with non-relevant documents.

    References:
      trec_eval's ``m_set_P.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        SET_PRECISION,
        scores,
        labels,
        caller="set_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_kernel.computes(SET_RECALL)
def set_recall(
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
    r"""Set recall: the share of the relevant items that were retrieved (``set_recall``).

    Any non-zero label is relevant. With :math:`X` relevant items among the
    first ``k`` and :math:`R` relevant items in all (the list's, or
    ``num_relevant``), the value is :math:`X / R`, and with ties its exact
    mean :math:`\mathbb{E}[X] / R`. It equals :func:`recall` at the same ``k``.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
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
      ``(...)`` set recall of each list, in [0, 1]. 0 for a list with no
      relevant item; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two of the query's four relevant documents were retrieved:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> print(metrics.set_recall(scores, labels, num_relevant=jnp.array(4)))
      0.5

    Remarks:
      Without ``num_relevant`` and ``k`` the value is 1 whenever an item is
      relevant: the list holds every relevant item it knows of.

    References:
      trec_eval's ``m_set_recall.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        SET_RECALL,
        scores,
        labels,
        caller="set_recall",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


@_kernel.computes(SET_RELATIVE_PRECISION)
def set_relative_precision(
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
    r"""Set precision over the best set precision a set of that size can have.

    trec_eval's ``set_relative_P``. Any non-zero label is relevant. With
    :math:`K = \min(n, k)` items retrieved, :math:`X` of them relevant and
    :math:`R` relevant items in all (the list's, or ``num_relevant``), the
    value is :math:`X / \min(K, R)`, and with ties its exact mean.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
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
      ``(...)`` relative set precision of each list, in [0, 1]. 0 for a list
      with no relevant item or no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two of three retrieved items are relevant, of two relevant in all:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> print(metrics.set_relative_precision(scores, labels))
      1.0

    Remarks:
      ``set_relative_P`` with ``-M 50`` is not ``relative_P_50``: the latter
      divides by ``min(50, R)`` even when fewer than 50 documents were
      retrieved.

    References:
      trec_eval's ``m_set_rel_P.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        SET_RELATIVE_PRECISION,
        scores,
        labels,
        caller="set_relative_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


@_kernel.computes(SET_AVERAGE_PRECISION)
def set_average_precision(
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
    r"""Unranked average precision of the retrieved set: trec_eval's ``set_map``.

    Any non-zero label is relevant. Every retrieved relevant item is credited
    with the set's precision and every missed one with 0, so with
    :math:`K = \min(n, k)` items retrieved, :math:`X` of them relevant, and
    :math:`R` relevant items in all (the list's, or ``num_relevant``),

    .. math::

        \mathrm{set\_map} = \frac{X}{K} \cdot \frac{X}{R} = \frac{X^2}{K R},

    set precision times set recall. With ties :math:`X` is random only when
    ``k`` cuts a tie block, and :math:`\mathbb{E}[X^2] = \mathbb{E}[X]^2 +
    \mathrm{Var}[X]`: a block of :math:`m` items starting at :math:`a`, with
    :math:`r` relevant and :math:`c = \mathrm{clip}(k - a, 0, m)` positions
    retrieved, adds the hypergeometric variance
    :math:`c (m - c)\, r (m - r) / (m^2 (m - 1))`. Exact.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
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
      ``(...)`` set MAP of each list, in [0, 1]. 0 for a list with no relevant
      item or no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Four tied items, two relevant, and the first two retrieved: 0, 1 or 2
      relevant ones with probabilities 1/6, 4/6 and 1/6, so
      :math:`\mathbb{E}[X^2] = 4/6 + 4/6` and the value is (4/3) / (2 · 2):

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> labels = jnp.array([1, 0, 1, 0])
      >>> print(f"{metrics.set_average_precision(jnp.zeros(4), labels, k=2):.4f}")
      0.3333

    Remarks:
      Set precision times set recall is not the mean of a product, so
      ``set_average_precision`` is not ``set_precision * set_recall`` once
      ``k`` cuts a tie block: in the example those give 0.25.

    References:
      trec_eval's ``m_set_map.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        SET_AVERAGE_PRECISION,
        scores,
        labels,
        caller="set_average_precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )


@_kernel.computes(SET_F)
def set_f(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    beta: float = 1.0,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Set F measure: a weighted harmonic mean of set precision and set recall (``set_F``).

    Any non-zero label is relevant. With set precision :math:`P`, set recall
    :math:`R` and trec_eval's weight :math:`\beta`,

    .. math::

        F = \frac{(1 + \beta) P R}{\beta P + R}
          = \frac{(1 + \beta) X}{\beta R_{\mathrm{all}} + K},

    where :math:`X` relevant items are among the :math:`K = \min(n, k)`
    retrieved and :math:`R_{\mathrm{all}}` are relevant in all (the list's,
    or ``num_relevant``). The second form is linear in :math:`X`, so with ties
    the value is its exact mean. A list with :math:`X = 0` scores 0.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      beta: trec_eval's ``set_F`` parameter, the weight of recall against
        precision, in [0, inf): 1 is the balanced F1, 0 is set precision.
        It enters linearly, so it is the *square* of van Rijsbergen's (and
        scikit-learn's) :math:`\beta`.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
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
      ``(...)`` F of each list, in [0, 1]. 0 for a list with no relevant item
      retrieved; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``beta``
        is not a real number in [0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``num_relevant``
        has the wrong shape; on concrete inputs, a real item holds NaN or
        infinity, or a negative label, or ``num_relevant`` is below the list's
        own relevant items or not a whole number.

    Example:
      Two of three retrieved items are relevant, of four relevant in all
      (P = 2/3, R = 1/2):

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> total = jnp.array(4)
      >>> print(f"{metrics.set_f(scores, labels, num_relevant=total):.4f}")
      0.5714
      >>> print(f"{metrics.set_f(scores, labels, beta=4.0, num_relevant=total):.4f}")
      0.5263

    Remarks:
      scikit-learn's ``fbeta_score(beta=b)`` on the same sets is
      ``set_f(beta=b ** 2)``: ``beta=4.0`` above is scikit-learn's F2.

    References:
      van Rijsbergen, *Information Retrieval*, 2nd ed., ch. 7, Butterworths,
      1979. https://www.dcs.gla.ac.uk/Keith/Preface.html

      trec_eval's ``m_set_F.c``. https://github.com/usnistgov/trec_eval
    """
    beta = _validation.check_float_in_range(
        beta, name="beta", caller="set_f", low=0.0, high=float("inf"), closed="left"
    )
    return _kernel.evaluate_formula(
        SET_F,
        scores,
        labels,
        caller="set_f",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
        options={"beta": beta},
    )


@_kernel.computes(UTILITY)
def utility(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    coefficients: tuple[float, float, float, float] = (1.0, -1.0, 0.0, 0.0),
    num_documents: int | None = None,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Set utility: a weighted sum of the retrieval contingency table (trec_eval's ``utility``).

    Any non-zero label is relevant. The first ``k`` positions are retrieved.
    With :math:`X` relevant items among the :math:`K = \min(n, k)` retrieved,
    :math:`R` relevant items in all (the list's, or ``num_relevant``) and
    :math:`N` documents in the collection,

    ==============  ===============  ======================
    \               relevant         non-relevant
    ==============  ===============  ======================
    retrieved       :math:`X`        :math:`K - X`
    not retrieved   :math:`R - X`    :math:`N - K - R + X`
    ==============  ===============  ======================

    and with ``coefficients`` :math:`(c_1, c_2, c_3, c_4)` the value is
    :math:`c_1 X + c_2 (K - X) + c_3 (R - X) + c_4 (N - K - R + X)`: linear in
    :math:`X`, so with ties it is the exact mean. The default (1, -1, 0, 0)
    is the number of relevant minus non-relevant items retrieved.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      coefficients: :math:`(c_1, c_2, c_3, c_4)`, four finite floats, in
        trec_eval's order (``utility.1,-1,0,0``).
      num_documents: :math:`N`, the number of documents in the collection
        (trec_eval's ``-N``), an int >= 0. Needed when :math:`c_4 \ne 0`;
        trec_eval takes 0 when ``-N`` is absent, which makes the last cell
        negative, and ``num_documents=0`` reproduces that.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None retrieves the whole list.
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
      ``(...)`` utility of each list, any real number. 0 for a list with no
      real items, as a query missing from the run counts in trec_eval's
      ``-c`` average; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``coefficients`` is not four finite floats; ``num_documents`` is not
        None and not an int >= 0.
      ValueError: :math:`c_4 \ne 0` and ``num_documents`` is None;
        ``scores`` and ``labels`` differ in shape or are scalars; ``where`` is
        not a boolean array of the same shape; ``num_relevant`` has the wrong
        shape; on concrete inputs, a real item holds NaN or infinity, or a
        negative label, or ``num_relevant`` is below the list's own relevant
        items or not a whole number.

    Example:
      Two relevant and one non-relevant item retrieved; the query has four
      relevant documents in a collection of 100:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 1])
      >>> total = jnp.array(4)
      >>> print(metrics.utility(scores, labels, num_relevant=total))
      1.0
      >>> value = metrics.utility(scores, labels, coefficients=(2, -1, -1, 0.01),
      ...                         num_documents=100, num_relevant=total)
      >>> print(f"{value:.2f}")  # 2·2 - 1 - (4 - 2) + 0.01 · (100 - 3 - 4 + 2)
      1.95

    Remarks:
      Utility is a sum, not a share: its mean over queries is dominated by
      queries with many relevant documents. trec_eval averages it over
      queries all the same, and so does ``lodestar evaluate``.

    References:
      Hull & Robertson, "The TREC-8 filtering track final report", TREC 1999.

      trec_eval's ``m_utility.c``. https://github.com/usnistgov/trec_eval
    """
    coefficients = _validation.check_float_tuple(
        coefficients, length=4, name="coefficients", caller="utility"
    )
    num_documents = _validation.check_int_or_none(
        num_documents, name="num_documents", caller="utility", low=0
    )
    if num_documents is None and coefficients[3] != 0:
        raise ValueError(
            "utility needs num_documents (the collection size, trec_eval's -N) when the "
            "fourth coefficient is not 0; pass num_documents=0 for trec_eval's value "
            "without -N."
        )
    return _kernel.evaluate_formula(
        UTILITY,
        scores,
        labels,
        caller="utility",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
        options={
            "coefficients": coefficients,
            "num_documents": None if num_documents is None else float(num_documents),
        },
    )
