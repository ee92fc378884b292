"""DCG and NDCG: gains weighted by the mean discount of each item's tie block."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _gains, _rank_sums, _validation
from lodestar.metrics import _kernel


def _dcg(lists: _kernel.RankedLists, k, *, gain, log_base):
    gains = _gains.apply_gain(gain, lists.labels.astype(lists.dtype))
    table = _gains.discount_table(lists.n, k=k, log_base=log_base, dtype=lists.dtype)
    return lists.ranking.weighted_sum(gains, table)


def judged_gains(lists: _kernel.RankedLists, gain) -> jax.Array:
    """Each real item's gain; 0 for padding and for an item the ``judged`` context leaves out."""
    return jnp.where(lists.judged(), _gains.apply_gain(gain, lists.labels.astype(lists.dtype)), 0)


def ideal_pool(lists: _kernel.RankedLists, gain):
    """The gains the ideal ranks and their mask: ``ideal_labels``' if given, else the list's.

    Only positive gains enter the ideal (trec_eval's m_ndcg.c stops at the
    first gain that is not positive), so the others are 0 here.
    """
    context = lists.context
    if "ideal_labels" in context:
        labels = context["ideal_labels"]
        valid = context.get("ideal_where", jnp.ones(labels.shape, bool))
        gains = _gains.apply_gain(gain, labels.astype(lists.dtype))
    else:
        valid, gains = lists.valid, judged_gains(lists, gain)
    return jnp.where(valid, jnp.maximum(gains, 0), 0), valid


def sorted_ideal_gains(lists: _kernel.RankedLists, gain) -> jax.Array:
    """The ideal's positive gains in descending order, zero-padded: ``(..., m)``.

    The command line gives them as the ``sorted_ideal_gains`` context; else they
    are sorted here from :func:`ideal_pool`.
    """
    if "sorted_ideal_gains" in lists.context and gain == "linear":
        return jnp.maximum(lists.context["sorted_ideal_gains"].astype(lists.dtype), 0)
    gains, valid = ideal_pool(lists, gain)
    return _gains.descending_gains(gains, valid)


def _ideal(lists: _kernel.RankedLists, k, gain, gains, cut_ideal=True, ideal_k=None):
    """The ideal DCG: of ``ideal_labels`` if given, else of the list's own gains.

    The command line gives the ideal's linear gains already sorted
    (descending, zero-padded) as ``sorted_ideal_gains``: its kernel then needs
    no sort. Another gain ranks ``ideal_labels`` here.
    A judged pool is cut at the requested cut-off ``ideal_k``, not at the
    list's length (a list shorter than ``k`` keeps the ideal of ``k``, as
    trec_eval's ``ndcg_cut``), and ranked whole without one (``cut_ideal``
    False), as trec_eval's ``ndcg`` ranks it.
    """
    context = lists.context
    presorted = "sorted_ideal_gains" in context and gain == "linear"
    if presorted or "ideal_labels" in context:
        pool = context["sorted_ideal_gains"] if presorted else context["ideal_labels"]
        k = ideal_k if cut_ideal and ideal_k is not None else pool.shape[-1]
    if presorted:
        ordered = context["sorted_ideal_gains"].astype(lists.dtype)
        table = _gains.discount_table(ordered.shape[-1], k=k, log_base=2.0, dtype=lists.dtype)
        return jnp.sum(ordered * jnp.diff(table), axis=-1)
    if "ideal_labels" in context:
        pool, valid = ideal_pool(lists, gain)
        return _gains.ideal_dcg(pool, valid, k=k)
    return _gains.ideal_dcg(gains, lists.valid, k=k, rank_k=lists.ranking.k)


def _ndcg(lists: _kernel.RankedLists, k, *, gain, cut_ideal=True, ideal_k=None):
    gains = judged_gains(lists, gain)
    table = _gains.discount_table(lists.n, k=k, log_base=2.0, dtype=lists.dtype)

    def ideal(gains):
        # The ideal of the list's own items ranks their positive gains only.
        return _ideal(lists, k, gain, jnp.maximum(gains, 0), cut_ideal, ideal_k)

    if "ideal_labels" in lists.context or "sorted_ideal_gains" in lists.context:
        value = lists.ranking.weighted_sum(gains, table)
        return _kernel.ratio_or_zero(value, ideal(gains))
    # The list's own gains, ranked by themselves and weighted by the same
    # table: where the compiled kernels apply, the pass that ranks each list
    # gives its ideal too.
    value, ideal_value = lists.ranking.weighted_sum(gains, table, ideal=ideal)
    return _kernel.ratio_or_zero(value, ideal_value)


DCG = _kernel.Formula("dcg", _dcg, static=("gain",), labels="graded")
NDCG = _kernel.Formula(
    "ndcg",
    _ndcg,
    static=("gain", "cut_ideal"),
    # A judged pool is cut at the requested k, or not at all (decision 0017).
    with_cutoff=lambda k: {"cut_ideal": k is not None, "ideal_k": 0 if k is None else k},
    mapped_options=("k", "ideal_k"),
    labels="graded",
    nonnegative_labels=True,
)


def _discounted_gain(items: _rank_sums.Items, view: _rank_sums.RankView):
    gains = _gains.apply_gain(items.options["gain"], items.labels)
    return gains * _gains.discount_at(view.rank, items.options["log_base"])


# DCG as a rank sum: u_i = gain_i / log_b(r_i + 1).
DCG_SUM = _rank_sums.RankSum("dcg", _discounted_gain)


@_kernel.computes(DCG)
def dcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    log_base: float = 2.0,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Discounted cumulative gain of each list, averaged over tied scores.

    .. math::

        \mathrm{DCG@k} = \sum_{p=1}^{\min(k, n)} \frac{g(\ell_{\pi(p)})}{\log_b(p + 1)}

    where :math:`\pi` orders the items by descending score. Items with tied
    scores share the mean of the discounts of the positions their tie block
    occupies (truncated at ``k``), which equals the mean of DCG over every
    order of the tied items.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance of each item.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      log_base: Base :math:`b` of the positional discount, in (0, inf). A base
        below 1 makes the discounts, and so the score, negative; a base of 1
        makes every discount 0.
      gain: ``"linear"`` (the label itself, as in scikit-learn), ``"exp2"``
        (:math:`2^\ell - 1`), or a callable applied to the labels.
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
      ``(...)`` DCG of each list. Unbounded above: it grows with the label
      values, so two lists are comparable only on the same judgement scale;
      use :func:`ndcg` for a number in [0, 1]. A list with no real items
      scores 0; a list with a NaN score scores NaN, and so, under ``jit``,
      does one whose ``gain="exp2"`` gains overflow.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``log_base`` is not in (0, inf), or not a normal number of the dtype
        JAX passes it as (float32 without ``jax_enable_x64``: within
        [1.2e-38, 3.4e38]); ``gain`` is unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or the ``gain="exp2"`` gains of a
        list overflow the dtype (labels of 128 or more in float32, 1024 in
        float64).

    Example:
      Four documents whose scores all tie, scored both ways (the worked
      example of the Lodestar.Metrics ``Dcg.Score`` page):

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> relevance = jnp.array([3.0, 2.0, 1.0, 0.0])
      >>> tied = jnp.full(4, 0.5)
      >>> print(f"{metrics.dcg(tied, relevance):.3f}")
      3.842
      >>> print(f"{metrics.dcg(tied, relevance, ignore_ties=True):.3f}")
      2.923

    Remarks:
      The gains are linear by default. Much of the literature uses
      :math:`2^\ell - 1` instead (``gain="exp2"``), which on the list above
      ranked perfectly gives 9.3927… where the linear gain gives 4.7618…; the
      difference is the definition, not an error on either side. The averaged
      and arbitrary values above differ by almost a third, which is why
      ``ignore_ties`` defaults to False.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, "Computing information retrieval performance measures
      efficiently in the presence of tied scores", ECIR 2008.
      https://doi.org/10.1007/978-3-540-78646-7_38
    """
    # Checked in scikit-learn's order: k, then log_base.
    _validation.check_k(k, caller="dcg")
    log_base = _validation.check_log_base(log_base, caller="dcg")
    gain = _validation.check_gain(gain, caller="dcg")
    return _kernel.evaluate_formula(
        DCG,
        scores,
        labels,
        caller="dcg",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"gain": gain, "log_base": log_base},
    )


@_kernel.computes(NDCG)
def ndcg(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    k: int | None = None,
    gain: str | Callable = "linear",
    ignore_ties: bool = False,
    ideal_labels: Num[Array, "*batch m"] | None = None,
    ideal_where: Bool[Array, "*batch m"] | None = None,
    judged: Bool[Array, "*batch n"] | None = None,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Normalised DCG of each list: DCG divided by the ideal DCG.

    .. math::

        \mathrm{NDCG@k} = \frac{\mathrm{DCG@k}(\text{scores})}
                               {\mathrm{DCG@k}(\text{items sorted by gain})}

    The ideal uses the same ``k``, the same gain and the base-2 discount. By
    default it ranks the list's own real items (padding is excluded); with
    ``ideal_labels`` it ranks those instead, as trec_eval ranks every judged
    document of the query, retrieved or not. Only positive gains enter the
    ideal, as in trec_eval's m_ndcg.c: a negative gain (from a callable or a
    :class:`GainTable`) lowers the DCG, never the ideal. A list whose ideal DCG
    is 0 (no item with a positive gain) scores 0.

    With ``ideal_labels`` holding every judged document's relevance level,
    ``judged`` marking the retrieved documents in the qrels and
    ``gain=GainTable(...)``, this is trec_eval's ``ndcg`` with gain parameters
    (``-m ndcg.1=3,2=9``), and with ``k`` its ``ndcg_cut_k``.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` graded relevance, non-negative.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      gain: ``"linear"`` (the label itself, as in scikit-learn), ``"exp2"``
        (:math:`2^\ell - 1`), a :class:`GainTable` (trec_eval's gains per
        relevance level), or a callable applied to the labels. The ideal
        ranks the items by their gains.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      ideal_labels: ``(..., m)`` labels of every judged item of each list,
        retrieved or not, for the ideal ranking; None uses ``labels``. Not
        with ``segments``.
      ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks
        padding.
      judged: ``(..., n)`` boolean mask of the items that were judged, or
        None if every real item was. An unjudged item gains 0 whatever its
        label, which matters when level 0 has a gain.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` NDCG of each list, in [0, 1] for non-negative gains (with
      ``ideal_labels``, when they hold every retrieved item's label); 0 for a
      list with no relevant or no real item; NaN for a list with a NaN score
      (and, under ``jit``, for one whose labels, ideal labels or exp2 gains
      the checks below refuse).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is
        unknown.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; ``ideal_labels``
        does not share the batch shape, or comes with ``segments``;
        ``ideal_where`` comes without ``ideal_labels`` or differs from it in
        shape; ``judged`` is not a boolean array of the scores' shape; on
        concrete inputs, a real item holds NaN or infinity, or a negative
        label (the ratio would leave [0, 1]), or the ``gain="exp2"`` gains of
        a list (or of its ideal labels) overflow the dtype.

    Example:
      The worked example of the encyclopedia article on DCG: six documents
      ranked in the order given, graded 3, 2, 3, 0, 1, 2, with two more judged
      documents (graded 3 and 2) that the ranking did not retrieve. With the
      judged documents as ``ideal_labels``, the cut at 6 scores the six
      retrieved ones against an ideal that ranks all eight:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> retrieved = jnp.array([3.0, 2.0, 3.0, 0.0, 1.0, 2.0])
      >>> judged = jnp.array([3.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 2.0])
      >>> scores = -jnp.arange(6.0)
      >>> print(f"{metrics.ndcg(scores, retrieved, k=6, ideal_labels=judged):.3f}")
      0.785

    Remarks:
      NDCG does not penalise a bad document whose label is 0, nor a missing
      document: a list graded 1, 1, 1 and a list graded 1, 1, 1, 0 both score
      1. Score a fixed number of positions (``k``) and pad short lists with
      zero-gain items where that matters, or give the judged pool as
      ``ideal_labels``.

    References:
      Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR
      techniques", ACM TOIS 20(4), 2002. https://doi.org/10.1145/582415.582418

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    gain = _validation.check_gain(gain, caller="ndcg")
    ideal_labels, ideal_where = _gains.check_ideal(
        ideal_labels, ideal_where, scores, segments, caller="ndcg", labels=labels, gain=gain
    )
    return _kernel.evaluate_formula(
        NDCG,
        scores,
        labels,
        caller="ndcg",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        judged=judged,
        options={"gain": gain},
        list_context={"ideal_labels": ideal_labels, "ideal_where": ideal_where},
    )
