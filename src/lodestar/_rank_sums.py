r"""Measures declared as a sum over items of a utility of each item's rank.

Many measures are, on a tie-free ranking,

.. math::

    \frac{1}{N} \sum_i c_i\, u_i,

where :math:`u_i` is the *utility* of item :math:`i` at its rank (its gain
times a discount, its relevance over its rank, its stop probability times the
chance of reaching it ...), :math:`c_i` whether it is within the first ``k``
positions, and :math:`N` a per-list normaliser (``k``, the number of relevant
items, the ideal DCG) or 1. A :class:`RankSum` declares :math:`u` and
:math:`N` once, and reads the ranking only through a :class:`RankView`:

* ``rank``: the 1-based rank :math:`r_i` of each item;
* ``among(mask)``: the rank of each item of ``mask`` among ``mask``'s items
  alone, that is 1 plus the number of them ranked above it;
* ``above(values)``: the sum of ``values`` over the items ranked above each
  item;
* ``cut``: :math:`c_i`.

Two views read the same declaration:

* :class:`SoftView`, the smooth one of :mod:`lodestar.smooth`: soft ranks of
  any method of :mod:`lodestar._soft_ranks` (``among`` ranks the subset with
  the same method), the soft cut-off of ``top_k_weight``, and for ``above``
  the pairwise sigmoid :math:`\sum_{j \ne i} v_j \sigma((s_j - s_i) / T)`
  (Qin, Liu & Li 2010) whatever the method, as the soft cut-off is;
* :class:`HardView`, the rank engine at one order (ties broken by descending
  index, as ``ignore_ties=True``): there the declaration is the exact measure
  at that order, which the tests hold to the measure's exact formula in the
  registry.

The registry names each measure's declaration (``Measure.rank_sum``), so a
smooth function is the declaration evaluated on a :class:`SoftView`
(decision 0030).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from lodestar import _pairs, _ranking, _soft_ranks


class Items(NamedTuple):
    """What a declaration reads of the lists besides their ranking.

    Attributes:
      labels: ``(..., n)`` labels in the compute dtype, 0 on padding.
      valid: ``(..., n)`` boolean mask of real items.
      options: The measure's options by name (``gain``, ``log_base``,
        ``max_label``); static or traced.
      num_relevant: ``(...)`` relevant items of each list, retrieved or not,
        or None to count the list's own.
      cutoff: The requested cut-off (not clipped to the list length), or None
        without one.
    """

    labels: jax.Array
    valid: jax.Array
    options: Mapping[str, Any] = {}
    num_relevant: jax.Array | None = None
    cutoff: jax.Array | None = None

    @property
    def dtype(self):
        """The compute dtype."""
        return self.labels.dtype

    def relevant(self) -> jax.Array:
        """The real items with a non-zero label."""
        return self.valid & (self.labels != 0)

    def relevant_total(self) -> jax.Array:
        """``num_relevant`` if given, else the relevant items of the list, in ``dtype``."""
        if self.num_relevant is not None:
            return self.num_relevant.astype(self.dtype)
        return jnp.sum(self.relevant(), axis=-1).astype(self.dtype)


class RankView(Protocol):
    """The ranking as a declaration reads it; see the module docstring."""

    rank: jax.Array
    cut: jax.Array

    def among(self, mask: jax.Array) -> jax.Array: ...

    def above(self, values: jax.Array) -> jax.Array: ...


@dataclasses.dataclass(frozen=True)
class RankSum:
    r"""A measure :math:`\frac{1}{N} \sum_i c_i u_i`; see the module docstring.

    Attributes:
      name: The measure's name.
      utility: ``utility(items, view) -> (..., n)``: each item's utility at its
        rank (any value on padding, which is masked out).
      normaliser: ``normaliser(items) -> (...)``, or None for 1. A list whose
        normaliser is 0 scores 0.
      refused: ``refused(items) -> (...)``: the lists holding a label the
        measure refuses beyond the shared checks (ERR's grade above
        ``max_label``), which give NaN; None if there is none.
    """

    name: str
    utility: Callable[[Items, RankView], jax.Array]
    normaliser: Callable[[Items], jax.Array] | None = None
    refused: Callable[[Items], jax.Array] | None = None


def evaluate_rank_sum(measure: RankSum, items: Items, view: RankView) -> jax.Array:
    """The measure's value for each list, ``(...)``, on ``view``'s ranking.

    NaN for the lists :attr:`RankSum.refused` flags (the caller gives their
    gradient, if any, the rule it applies).
    """
    utility = measure.utility(items, view)
    value = jnp.sum(jnp.where(items.valid, view.cut * utility, 0), axis=-1)
    if measure.normaliser is not None:
        total = measure.normaliser(items)
        nonzero = total != 0
        value = jnp.where(nonzero, value / jnp.where(nonzero, total, 1), 0)
    if measure.refused is not None:
        value = jnp.where(measure.refused(items), jnp.nan, value)
    return value


class SoftView:
    """Soft ranks at ``temperature``, by ``method``; see the module docstring.

    Args:
      s: ``(..., n)`` floating scores, zero on padding.
      valid: ``(..., n)`` boolean mask of real items.
      temperature: :math:`T`, a positive scalar of the scores' dtype (traced or not).
      method: A method of :data:`lodestar._soft_ranks.METHODS`.
      k: The cut-off clipped to the list length (traced).
      cut: Whether a cut-off was asked for (static).
    """

    def __init__(self, s, valid, temperature, method: str, k, *, cut: bool):
        self.s, self.valid, self.temperature, self.method = s, valid, temperature, method
        ranks = _soft_ranks.soft_ranks(s, valid, temperature, method)
        # Padding is masked out of every sum; rank 1 keeps its utility finite.
        self.rank = jnp.where(valid, ranks, 1)
        self.cut = _soft_ranks.top_k_weight(s, valid, temperature, k, cut=cut)

    def among(self, mask):
        """Soft ranks among ``mask``'s items alone, by the same method; 1 outside."""
        mask = self.valid & mask
        ranks = _soft_ranks.soft_ranks(
            jnp.where(mask, self.s, 0), mask, self.temperature, self.method
        )
        return jnp.where(mask, ranks, 1)

    def above(self, values):
        """:func:`sigmoid_sum_above` of ``values``."""
        return sigmoid_sum_above(self.s, self.valid, self.temperature, values)


class HardView:
    """The rank engine's ranks at one order, ties broken by descending index.

    Args:
      scores: ``(..., n)`` scores.
      valid: ``(..., n)`` boolean mask of real items.
      k: The cut-off: items at ranks past it have :math:`c_i = 0`; None for none.
      dtype: The compute dtype.
    """

    def __init__(self, scores, valid, k, dtype):
        self.valid = valid
        self.blocks = _ranking.tie_blocks(scores, valid, ignore_ties=True)
        self.rank = jnp.where(valid, self.blocks.above + 1, 1).astype(dtype)
        self.cut = jnp.ones_like(self.rank) if k is None else (self.rank <= k).astype(dtype)

    def among(self, mask):
        """1 + the items of ``mask`` ranked above each item."""
        return 1 + self.above((self.valid & mask).astype(self.rank.dtype))

    def above(self, values):
        """The sum of ``values`` over the items ranked above each item."""
        values = jnp.where(self.valid, values, 0)
        return _ranking.block_totals(values, self.blocks)[0]


def sigmoid_sum_above(s, valid, temperature, values):
    r"""Per item, :math:`\sum_{j \ne i} v_j\, \sigma((s_j - s_i) / T)` over the real items.

    The sigmoid relaxation of "the sum of ``values`` over the items ranked above
    item :math:`i`" (Qin, Liu & Li 2010): its row sums with :math:`v = 1` are
    the sigmoid soft ranks minus 1. The one pairwise piece of the rank sums,
    summed in column blocks by :func:`lodestar._pairs.pair_sum`: memory linear
    in the list length, value and gradient alike.

    Args:
      s: ``(..., n)`` floating scores, finite (zero on padding).
      valid: ``(..., n)`` boolean mask of real items.
      temperature: :math:`T`.
      values: ``(..., n)`` the :math:`v_j`, finite.

    Returns:
      ``(..., n)`` sums, in the scores' dtype.
    """

    def above(rows, columns, distinct):
        (s_i, valid_i, _), (s_j, valid_j, v_j) = rows, columns
        pair = distinct & valid_i & valid_j
        return jnp.where(pair, v_j * jax.nn.sigmoid((s_j - s_i) / temperature), 0)

    return _pairs.pair_sum(above, (s, valid, values), over="columns")
