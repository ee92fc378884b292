"""Precision and recall: the expected number of relevant items in the first ``k``."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _rank_sums
from lodestar.metrics import _kernel


def relevant_in_top(lists: _kernel.RankedLists, relevant, k):
    """Expected number of ``relevant`` items in the first ``k`` positions.

    Item ``i`` lands there with probability ``|[a, a + t) ∩ [0, k)| / t``: the
    block mean of the indicator ``1[p < k]``, whose prefix sums are ``min(p, k)``.
    """
    table = jnp.minimum(jnp.arange(lists.n + 1), k).astype(lists.dtype)
    return lists.ranking.weighted_sum(relevant.astype(lists.dtype), table)


def requested_cutoff(k: int | None) -> dict[str, float | None]:
    """The ``with_cutoff`` of a measure over the ``k`` positions asked for (see :func:`slots`)."""
    return {"cutoff": None if k is None else float(k)}


def slots(lists: _kernel.RankedLists, cutoff):
    """The positions a measure divides by: the requested ``k``, past a short list's end too.

    Without a cut-off, the real items of each list. ``cutoff`` comes from
    :func:`requested_cutoff`, since the ``k`` a formula sees is clipped to the
    list length.
    """
    if cutoff is None:
        return jnp.sum(lists.valid, axis=-1).astype(lists.dtype)
    return jnp.asarray(cutoff, lists.dtype)


def _precision(lists: _kernel.RankedLists, k, *, cutoff):
    found = relevant_in_top(lists, lists.relevant(), k)
    return _kernel.ratio_or_zero(found, slots(lists, cutoff))


def _recall(lists: _kernel.RankedLists, k):
    relevant = lists.relevant()
    found = relevant_in_top(lists, relevant, k)
    return _kernel.ratio_or_zero(found, lists.relevant_total(relevant))


PRECISION = _kernel.Formula(
    "precision",
    _precision,
    with_cutoff=requested_cutoff,
    labels="binary",
    nonnegative_labels=True,
    mapped_options=("k", "cutoff"),
)
RECALL = _kernel.Formula(
    "recall", _recall, labels="binary", nonnegative_labels=True, mapped_options=("k",)
)


def _relevant(items: _rank_sums.Items, view: _rank_sums.RankView):
    return items.relevant().astype(items.dtype)


def _slots(items: _rank_sums.Items):
    # As slots(): the requested k, past a short list's end too; else the real items.
    if items.cutoff is None:
        return jnp.sum(items.valid, axis=-1).astype(items.dtype)
    return jnp.asarray(items.cutoff, items.dtype)


def _relevant_total(items: _rank_sums.Items):
    return items.relevant_total()


# Precision and recall as rank sums: u_i = [relevant i], over k or over R.
PRECISION_SUM = _rank_sums.RankSum("precision", _relevant, _slots)
RECALL_SUM = _rank_sums.RankSum("recall", _relevant, _relevant_total)


@_kernel.computes(PRECISION)
def precision(
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
    r"""Precision at ``k``: the share of the first ``k`` positions holding a relevant item.

    Any non-zero label is relevant. The denominator is ``k`` itself, even when
    the list has fewer than ``k`` real items: the missing positions count as
    non-relevant, as in trec_eval's ``P_k`` and ranx's ``precision@k``. With
    ``k=None`` it is the number of real items, so the value is the share of the
    list that is relevant. With ties, by linearity,

    .. math::

        \mathbb{E}[\mathrm{P@k}] = \frac{1}{k} \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i},

    where item :math:`i`'s tie block spans the 0-based positions
    :math:`[a_i, a_i + t_i)`.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions; also the denominator. None scores the whole
        list over its number of real items.
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
      ``(...)`` precision of each list, in [0, 1]. 0 for a list with no real
      items; NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      The relevant item ties with another for positions 2 and 3, so half of it
      is expected in the top 2:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(f"{metrics.precision(scores, labels, k=2):.2f}")
      0.75
      >>> print(f"{metrics.precision(scores, labels, k=10):.2f}")  # 2 relevant / 10
      0.20

    Remarks:
      Rax and TF-Ranking divide by ``min(k, number of real items)`` instead, so
      a short list can reach 1 there; their value is lodestar's times
      ``k / min(k, n_real)``.
      Precision at a fixed ``k`` averages poorly over queries with very
      different numbers of relevant items; :func:`recall` and
      :func:`average_precision` normalise by that number.

    References:
      Manning, Raghavan & Schütze, *Introduction to Information Retrieval*,
      ch. 8, 2008. https://nlp.stanford.edu/IR-book/

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        PRECISION,
        scores,
        labels,
        caller="precision",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_kernel.computes(RECALL)
def recall(
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
    r"""Recall at ``k``: the share of the list's relevant items within the first ``k``.

    Any non-zero label is relevant. The denominator :math:`R` is the number of
    relevant real items **in the list**, unless ``num_relevant`` gives it: pass
    the number of relevant documents in the qrels, retrieved or not, to get
    trec_eval's ``recall_k``. With ties,

    .. math::

        \mathbb{E}[\mathrm{R@k}] = \frac{1}{R} \sum_{i\,:\,\ell_i \ne 0}
            \frac{|[a_i, a_i + t_i) \cap [0, k)|}{t_i}.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions. None, or a ``k`` past ``n``, looks at the
        whole list (recall 1 whenever an item is relevant).
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
      ``(...)`` recall of each list, in [0, 1]. A list with no relevant item
      scores 0; it is never dropped. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      Of two relevant items, one is first and one ties for positions 2 and 3:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([1, 0, 2, 0])
      >>> print(f"{metrics.recall(scores, labels, k=2):.2f}")
      0.75

    Remarks:
      Recall at ``k`` rewards a list for holding few relevant items: a list
      with one relevant item ranked first scores 1 at every ``k``. Report it
      beside :func:`precision`, or use :func:`average_precision`.

    References:
      Manning, Raghavan & Schütze, *Introduction to Information Retrieval*,
      ch. 8, 2008. https://nlp.stanford.edu/IR-book/

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        RECALL,
        scores,
        labels,
        caller="recall",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        num_relevant=num_relevant,
    )
