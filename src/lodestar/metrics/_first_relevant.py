"""Reciprocal rank and hits: measures decided by the first block holding a relevant item.

The first block's arithmetic (where the first relevant item of a random
order of the block lands) is shared with RBP's residual, which asks where
the first unjudged item lands.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _ranking
from lodestar.metrics import _kernel


class FirstRelevantBlock(NamedTuple):
    """The tie block holding the highest-ranked relevant item of each list.

    Attributes:
      above: ``(...)`` items above the block; ``n`` if no item is relevant.
      size: ``(...)`` the block's size ``m`` (0 if no item is relevant).
      relevant: ``(...)`` relevant items in the block ``r`` (0 if none).
    """

    above: jax.Array
    size: jax.Array
    relevant: jax.Array


def first_relevant_block(blocks: _ranking.TieBlocks, relevant: jax.Array) -> FirstRelevantBlock:
    """Locate the first block holding a relevant item; ``relevant`` excludes padding."""
    n = relevant.shape[-1]
    above = jnp.min(jnp.where(relevant, blocks.above, n), axis=-1, initial=n)
    in_block = relevant & (blocks.above == above[..., None])
    size = jnp.max(jnp.where(in_block, blocks.tied, 0), axis=-1, initial=0)
    count = jnp.sum(in_block, axis=-1, dtype=jnp.int32)
    return FirstRelevantBlock(above, size, count)


def first_block_holding(ranking: _ranking.Ranking, marked: jax.Array) -> FirstRelevantBlock:
    """:func:`first_relevant_block` of the ``marked`` items (``marked`` excludes padding).

    With averaged ties and no counts formed yet, it comes from the scores
    alone: the block is the run of the largest marked score, so a maximum and
    one pass of counts over the lists give it, and nothing is ranked
    (reciprocal rank and hits need no other count). Otherwise from the counts.
    """
    if ranking.ignore_ties or ranking.counted:
        return first_relevant_block(ranking.blocks, marked)
    scores = _ranking.rankable(ranking.scores)
    n = scores.shape[-1]
    lowest = _ranking.lowest(scores.dtype)
    found = jnp.any(marked, axis=-1)
    top = jnp.max(jnp.where(marked, scores, lowest), axis=-1, keepdims=True, initial=lowest)
    at_top = ranking.valid & (scores == top)
    above = jnp.sum(ranking.valid & (scores > top), axis=-1, dtype=jnp.int32)
    size = jnp.sum(at_top, axis=-1, dtype=jnp.int32)
    count = jnp.sum(at_top & marked, axis=-1, dtype=jnp.int32)
    return FirstRelevantBlock(
        jnp.where(found, above, n), jnp.where(found, size, 0), jnp.where(found, count, 0)
    )


def first_relevant_position_probabilities(block: FirstRelevantBlock, length: int, dtype):
    """P(the first relevant item sits at offset j in its block), j = 1 .. length.

    With ``m`` tied items of which ``r`` are relevant, under a uniformly random
    order ``P(j) = C(m - j, r - 1) / C(m, r)`` for ``j = 1 .. m - r + 1``. It is
    evaluated as ``P(1) = r / m`` and ``P(j + 1) = P(j) (m - j - r + 1) / (m - j)``:
    a running product with no factorials, so no overflow at any ``m``.

    Returns:
      ``(..., length)`` probabilities; all zero where ``r == 0``.
    """
    m = block.size[..., None].astype(dtype)
    r = block.relevant[..., None].astype(dtype)
    j = jnp.arange(1, length, dtype=dtype)
    possible = j <= m - r
    ratio = jnp.where(possible, (m - j - r + 1) / jnp.where(possible, m - j, 1), 0)
    first = jnp.where(r > 0, r / jnp.maximum(m, 1), 0)
    return _kernel.cumulative_product(jnp.concatenate([first, ratio], axis=-1))


def probability_none_relevant_first(
    block: FirstRelevantBlock, slots: jax.Array, length: int, dtype
):
    """P(none of a block's relevant items lands in its first ``slots`` positions).

    With ``m`` tied items of which ``r`` are relevant, ``c = slots`` of the
    block's positions counted, the hypergeometric probability is
    ``C(m - r, c) / C(m, c) = prod_{j < c} (m - r - j) / (m - j)``: a product of
    at most ``length`` factors (a static bound on ``c``), with no factorials. A
    factor reaches exactly 0 once ``c > m - r``, so the probability is exactly 0
    when the block's relevant items cannot all be left out.

    Args:
      block: From :func:`first_relevant_block`.
      slots: ``(...)`` integer ``c`` in ``[0, m]``.
      length: Static upper bound on ``slots``.
      dtype: The floating dtype of the result.

    Returns:
      ``(...)`` probabilities; 1 where ``slots == 0``.
    """
    m = block.size[..., None].astype(dtype)
    r = block.relevant[..., None].astype(dtype)
    j = jnp.arange(length, dtype=dtype)
    counted = j < slots[..., None]
    factor = jnp.maximum(m - r - j, 0) / jnp.where(counted, m - j, 1)
    return jnp.prod(jnp.where(counted, factor, 1), axis=-1)


def _first_relevant(lists: _kernel.RankedLists):
    """The first block holding a relevant item, and how many offsets of it matter."""
    block = first_block_holding(lists.ranking, lists.relevant())
    # Only offsets j with a + j <= k can count, so a static k bounds them.
    k = lists.ranking.k
    return block, lists.n if k is None else min(k, lists.n)


def _reciprocal_rank(lists: _kernel.RankedLists, k):
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], lists.dtype)
    block, length = _first_relevant(lists)
    probabilities = first_relevant_position_probabilities(block, length, lists.dtype)
    rank = block.above[..., None] + jnp.arange(1, length + 1)  # 1-based rank of offset j
    weights = jnp.where(rank <= k, 1 / rank.astype(lists.dtype), 0)
    return jnp.sum(probabilities * weights, axis=-1)


def _hits(lists: _kernel.RankedLists, k):
    block, length = _first_relevant(lists)
    # Only the first block holding a relevant item decides; c of its positions
    # lie within k, and a static k bounds c.
    slots = jnp.clip(k - block.above, 0, block.size)
    return 1 - probability_none_relevant_first(block, slots, length, lists.dtype)


RECIPROCAL_RANK = _kernel.Formula("reciprocal_rank", _reciprocal_rank, labels="binary")
HITS = _kernel.Formula(
    "hits", _hits, labels="binary", nonnegative_labels=True, mapped_options=("k",)
)


@_kernel.computes(RECIPROCAL_RANK)
def reciprocal_rank(
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
    r"""Reciprocal rank of the first relevant item, expected over tied scores.

    Any non-zero label is relevant; 3 counts no more than 1. Without ties the
    value is :math:`1 / p` for the position :math:`p` (1-based) of the first
    relevant item, or 0 if it lies past ``k`` or no item is relevant.

    With ties, let :math:`B` be the first tie block that holds a relevant item,
    :math:`a` the number of items above it, :math:`m = |B|` and :math:`r` the
    relevant items in it. Under a uniformly random order of :math:`B`:

    .. math::

        \mathbb{E}[\mathrm{RR}] = \sum_{j=1}^{m-r+1}
            \frac{\binom{m-j}{r-1}}{\binom{m}{r}} \cdot \frac{1}{a + j},

    with the terms where :math:`a + j > k` dropped.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements; any non-zero value is relevant.
      k: Only a first relevant item within the first ``k`` positions counts.
        None, or a ``k`` past ``n``, looks at the whole list.
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
      ``(...)`` reciprocal rank of each list, in [0, 1]. 1 when a relevant item
      ranks first; 0 when none is relevant or none is within ``k``. A list with
      no relevant item counts 0 rather than being dropped: take the plain mean
      of the result to get MRR. NaN for a list with a NaN score.

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity.

    Example:
      Two queries; the first relevant document is second, then first:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> relevance = jnp.array([[0, 1, 0, 0], [1, 0, 0, 0]])
      >>> scores = jnp.array([[0.9, 0.5, 0.4, 0.1], [0.9, 0.5, 0.4, 0.1]])
      >>> float(metrics.reciprocal_rank(scores, relevance).mean())
      0.75

    Remarks:
      Everything after the first relevant item is invisible to this number,
      which makes it the wrong metric when the reader consumes the whole list.
      Report it beside :func:`ndcg`, not instead of it. Implementations differ
      on lists without a relevant item; dropping them raises the mean and makes
      two runs over different query sets incomparable, so lodestar keeps them
      as 0.

    References:
      Voorhees, "The TREC-8 question answering track report", TREC 1999.

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        RECIPROCAL_RANK,
        scores,
        labels,
        caller="reciprocal_rank",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )


@_kernel.computes(HITS)
def hits(
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
    r"""Hits at ``k``: 1 if a relevant item is among the first ``k``, else 0, expected over ties.

    Any non-zero label is relevant. Under tied scores the value is the
    probability of a hit. Only the first tie block :math:`B` holding a relevant
    item matters: with :math:`a` items above it, :math:`m = |B|`, :math:`r`
    relevant items in it and :math:`c = \min(\max(k - a, 0), m)` of its
    positions within ``k``, the hypergeometric probability that none of the
    :math:`r` lands in those :math:`c` positions gives

    .. math::

        \mathbb{E}[\mathrm{Hits@k}] = 1 - \binom{m - r}{c} \Big/ \binom{m}{c}
            = 1 - \prod_{j=0}^{c-1} \frac{m - r - j}{m - j}.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` relevance judgements, non-negative; any non-zero
        value is relevant.
      k: The number of positions. None, or a ``k`` past ``n``, looks at the
        whole list (1 whenever an item is relevant).
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
      ``(...)`` hits of each list, in [0, 1]; exactly 0 or 1 without ties. A
      list with no relevant item scores 0. NaN for a list with a NaN score.
      The plain mean over lists is the hit rate (trec_eval's ``success_k``).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1.
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, or a negative label.

    Example:
      One relevant item among three tied for the top: a hit at 1 one time in
      three, at 2 two times in three:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.5, 0.5, 0.5, 0.1])
      >>> labels = jnp.array([0, 1, 0, 0])
      >>> print(f"{metrics.hits(scores, labels, k=1):.4f} {metrics.hits(scores, labels, k=2):.4f}")
      0.3333 0.6667

    Remarks:
      ranx's ``hits@k`` is something else: the *number* of relevant items in
      the top ``k`` (lodestar: ``k * precision``). lodestar's ``hits`` is
      ranx's ``hit_rate@k`` and TF-Ranking's ``HitsMetric``.

    References:
      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _kernel.evaluate_formula(
        HITS,
        scores,
        labels,
        caller="hits",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
    )
