"""Counts over the retrieved set, and the unjudged share: trec_eval's bookkeeping measures.

``num_retrieved``, ``num_relevant``, ``num_relevant_retrieved`` and
``num_nonrelevant_judged_retrieved`` are trec_eval's ``num_ret``, ``num_rel``,
``num_rel_ret`` and ``num_nonrel_judged_ret``; ``unjudged`` is its ``unj``.
The retrieved set is the first ``k`` positions (trec_eval's ``-M``), so a
count of the items of some kind in it is, under ties, the expected number of
them in the first ``k``: a block mean of the indicator ``1[p < k]``, exact
(decision 0015).
"""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _validation
from lodestar.metrics import _kernel, _precision


def retrieved_count(lists: _kernel.RankedLists, k):
    """``min(real items, k)``: the size of the retrieved set, in ``dtype``."""
    real = jnp.sum(lists.valid, axis=-1)
    return jnp.minimum(real, k).astype(lists.dtype)


def _num_retrieved(lists: _kernel.RankedLists, k):
    return retrieved_count(lists, k)


def _num_relevant(lists: _kernel.RankedLists, k):
    return lists.relevant_total(lists.relevant())


def _num_relevant_retrieved(lists: _kernel.RankedLists, k):
    return _precision.relevant_in_top(lists, lists.relevant(), k)


def _num_nonrelevant_judged_retrieved(lists: _kernel.RankedLists, k):
    nonrelevant = lists.judged() & ~lists.relevant()
    return _precision.relevant_in_top(lists, nonrelevant, k)


def _unjudged(lists: _kernel.RankedLists, k, *, cutoff):
    unjudged = lists.valid & ~lists.judged()
    found = _precision.relevant_in_top(lists, unjudged, k)
    return _kernel.ratio_or_zero(found, _precision.slots(lists, cutoff))


NUM_RETRIEVED = _kernel.Formula(
    "num_retrieved", _num_retrieved, labels="binary", nonnegative_labels=True
)
NUM_RELEVANT = _kernel.Formula(
    "num_relevant", _num_relevant, labels="binary", nonnegative_labels=True
)
NUM_RELEVANT_RETRIEVED = _kernel.Formula(
    "num_relevant_retrieved", _num_relevant_retrieved, labels="binary", nonnegative_labels=True
)
NUM_NONRELEVANT_JUDGED_RETRIEVED = _kernel.Formula(
    "num_nonrelevant_judged_retrieved",
    _num_nonrelevant_judged_retrieved,
    labels="binary",
    nonnegative_labels=True,
    tie_key="judged_nonrelevant",
)
UNJUDGED = _kernel.Formula(
    "unjudged",
    _unjudged,
    with_cutoff=_precision.requested_cutoff,
    labels="binary",
    nonnegative_labels=True,
    tie_key="unjudged",
    mapped_options=("k", "cutoff"),
)


@_kernel.computes(NUM_RETRIEVED)
def num_retrieved(
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
    r"""The number of items retrieved: the real items of each list, at most ``k``.

    trec_eval's ``num_ret``: :math:`\min(n, k)` for a list of :math:`n` real
    items. It depends on neither the scores' order nor the labels, so ties
    change nothing.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; only their
        shape is used.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None counts every real item.
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
      ``(...)`` the count of each list, a whole number in the floating dtype.
      0 for a list with no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(metrics.num_retrieved(scores, labels), metrics.num_retrieved(scores, labels, k=2))
      4.0 2.0

    Remarks:
      trec_eval's ``all`` line sums ``num_ret`` over queries rather than
      averaging it; so does ``lodestar evaluate``.

    References:
      trec_eval's ``m_num_ret.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        NUM_RETRIEVED,
        scores,
        labels,
        caller="num_retrieved",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_kernel.computes(NUM_RELEVANT)
def num_relevant(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    num_relevant: Num[Array, "*batch"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""The number of relevant items of each list, retrieved or not: trec_eval's ``num_rel``.

    Any non-zero label of a judged item is relevant. Without ``num_relevant``
    this counts the relevant real items of the list; with it, it returns
    ``num_relevant`` itself, which is how the command line reports trec_eval's
    ``num_rel`` (the relevant judged documents of the query, retrieved or
    not). It depends on no order, so ties change nothing.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: Accepted for uniformity and ignored: trec_eval's ``-M`` does not
        change ``num_rel``, and relevant items past ``k`` still count.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      num_relevant: ``(...)`` the number of relevant items of each list,
        retrieved or not (trec_eval's ``num_rel``), or None to count the
        relevant real items of the list. It must be at least that count.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` the count of each list, a whole number in the floating dtype.
      ``num_relevant`` where given, even for a list with no real items (a
      query missing from the run still has relevant documents); otherwise 0
      for a list with no real items. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape;
        ``num_relevant`` has the wrong shape; on concrete inputs, a real item
        holds NaN or infinity, or a negative label, or ``num_relevant`` is
        below the list's own relevant items or not a whole number.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(metrics.num_relevant(scores, labels))
      2.0
      >>> print(metrics.num_relevant(scores, labels, num_relevant=jnp.array(5)))
      5.0

    Remarks:
      trec_eval's ``all`` line sums ``num_rel`` over queries. With ``-c`` it
      sums instead every qrels line with a relevance above 0 over the whole
      qrels file, whatever ``-l`` says; ``lodestar evaluate --complete`` sums
      the per-query counts at the chosen relevance level, which is the same
      number unless ``-l`` is above 1.

    References:
      trec_eval's ``m_num_rel.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        NUM_RELEVANT,
        scores,
        labels,
        caller="num_relevant",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
        num_relevant=num_relevant,
    )


@_kernel.computes(NUM_RELEVANT_RETRIEVED)
def num_relevant_retrieved(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""The number of relevant items among the first ``k``, expected over tied scores.

    trec_eval's ``num_rel_ret``. Any non-zero label of a judged item is
    relevant. With ties, by linearity,

    .. math::

        \mathbb{E}[\mathrm{num\_rel\_ret}] = \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i},

    where item :math:`i`'s tie block spans the 0-based positions
    :math:`[a_i, a_i + t_i)`. The value is a whole number unless ``k`` cuts a
    tie block holding relevant and non-relevant items.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None counts over the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` the expected count of each list, in [0, min(n, k)]. 0 for a
      list with no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape; on
        concrete inputs, a real item holds NaN or infinity, or a negative label.

    Example:
      One relevant item ties with a non-relevant one for positions 2 and 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(metrics.num_relevant_retrieved(scores, labels, k=2))
      1.5

    Remarks:
      ``k * precision(scores, labels, k=k)`` gives the same number for lists
      of at least ``k`` items. trec_eval's ``all`` line sums it over queries.

    References:
      trec_eval's ``m_num_rel_ret.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        NUM_RELEVANT_RETRIEVED,
        scores,
        labels,
        caller="num_relevant_retrieved",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
    )


@_kernel.computes(NUM_NONRELEVANT_JUDGED_RETRIEVED)
def num_nonrelevant_judged_retrieved(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""The number of judged non-relevant items among the first ``k``, expected over ties.

    trec_eval's ``num_nonrel_judged_ret``: retrieved items that were judged
    (``judged``) with a label of 0. Unjudged items count in neither this nor
    :func:`num_relevant_retrieved`. With ties, by linearity,

    .. math::

        \mathbb{E}[\mathrm{num\_nonrel\_judged\_ret}] =
            \sum_{i\ \mathrm{judged},\ \ell_i = 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i}.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; a judged item
        labelled 0 is non-relevant.
      k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).
        None counts over the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` the expected count of each list, in [0, min(n, k)]. 0 for a
      list with no real items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape; on
        concrete inputs, a real item holds NaN or infinity, or a negative label.

    Example:
      The third item was never judged:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.4, 0.1])
      >>> labels = jnp.array([1, 0, 0, 0])
      >>> judged = jnp.array([True, True, False, True])
      >>> print(metrics.num_nonrelevant_judged_retrieved(scores, labels, judged=judged))
      2.0

    Remarks:
      ``num_retrieved - num_relevant_retrieved - num_nonrelevant_judged_retrieved``
      is the number of unjudged items retrieved. trec_eval's ``all`` line sums
      it over queries.

    References:
      trec_eval's ``m_num_nonrel_judged_ret.c``. https://github.com/usnistgov/trec_eval
    """
    return _kernel.evaluate_formula(
        NUM_NONRELEVANT_JUDGED_RETRIEVED,
        scores,
        labels,
        caller="num_nonrelevant_judged_retrieved",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
    )


@_kernel.computes(UNJUDGED)
def unjudged(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    ignore_ties: bool = False,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""The share of the first ``k`` positions holding an unjudged item, expected over ties.

    trec_eval's ``unj_k``. Like :func:`precision`, the denominator is ``k``
    itself: positions past the end of a short list count as judged. With
    ``k=None`` it is the number of real items. With ties,

    .. math::

        \mathbb{E}[\mathrm{unj@k}] = \frac{1}{k} \sum_{i\ \mathrm{unjudged}}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i}.

    A high value at a small ``k`` is a warning: the run is poorly covered by
    the judgements, and its other measures count unjudged items as
    non-relevant.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; only their
        shape is used.
      k: The number of positions; also the denominator. None scores the whole
        list over its number of real items.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item is not relevant.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` the share of each list, in [0, 1]. 0 without ``judged`` (every
      real item judged) and for a list with no real items; NaN for a list with
      a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` or ``judged`` is not a boolean array of the same shape; on
        concrete inputs, a real item holds NaN or infinity, or a negative label.

    Example:
      The unjudged item ties with a judged one for positions 2 and 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 0, 0])
      >>> judged = jnp.array([True, False, True, True])
      >>> print(metrics.unjudged(scores, labels, k=2, judged=judged))
      0.25

    Remarks:
      trec_eval's defaults are ``unj_5``, ``unj_10`` and ``unj_20``.

    References:
      trec_eval's ``m_unjudged.c``. https://github.com/usnistgov/trec_eval

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    _validation.check_k(k, caller="unjudged")
    return _kernel.evaluate_formula(
        UNJUDGED,
        scores,
        labels,
        caller="unjudged",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
    )
