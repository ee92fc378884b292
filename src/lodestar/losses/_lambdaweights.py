"""Lambda weights: per-pair weights of a pairwise loss, made from per-item values.

A lambda weight of a pair ``(i, j)`` is a function of a few values of item
``i`` and of item ``j`` (a gain, a current rank, a discount). Each is computed
once per item, ``(..., n)``, and the pair weight inside the pair sum's column
blocks (:func:`lodestar._pairs.pair_sum`), so that a weighted pairwise loss
keeps the memory of the unweighted one: never an ``(n, n)`` matrix.

A :class:`LambdaWeight` is a sum of scaled terms. The terms (their kind and
options) are static; the scales are the pytree's leaves, so that a traced
``mu`` in ``dcg + mu * dcg2`` keeps its derivative while the terms
themselves carry no gradient (decision 0044).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _gains, _ranking, _validation
from lodestar.losses import _common

_KINDS = ("dcg", "dcg2", "labeldiff")


@dataclasses.dataclass(frozen=True)
class _Term:
    kind: str
    normalize: bool = False
    topn: int | None = None
    gain: str | Callable | None = None


@jax.tree_util.register_pytree_node_class
@dataclasses.dataclass(frozen=True)
class LambdaWeight:
    """A weighting of the pairs of a pairwise loss: a sum of scaled lambda weights.

    Made by :func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight` and
    :func:`labeldiff_lambdaweight`; combined with ``+`` and scaled by a
    non-negative float (which may be traced) with ``*``, so that
    ``dcg_lambdaweight(normalize=True) + mu * dcg2_lambdaweight(normalize=True)``
    is LambdaLoss's NDCG-Loss2++ weighting. It is a pytree whose leaves are the
    scales: pass it to a jitted function as an argument, or close over it.

    Attributes:
      terms: The lambda weights summed, each a kind with its options (static:
        part of the pytree's structure).
      scales: The factor of each term (the pytree's leaves).
    """

    # Any, not the private _Term: the API reference shows this signature.
    terms: tuple[Any, ...]
    scales: tuple[float | jax.Array, ...]

    def __add__(self, other):
        if not isinstance(other, LambdaWeight):
            return NotImplemented
        gains = {term.gain for term in (*self.terms, *other.terms) if term.gain is not None}
        if len(gains) > 1:
            raise _validation.InvalidParameterError(
                "A sum of lambda weights must use one gain. "
                f"Got {sorted(map(repr, gains))} instead."
            )
        return LambdaWeight(self.terms + other.terms, self.scales + other.scales)

    def __mul__(self, factor):
        factor = _validation.check_traceable_float(
            factor, name="factor", caller="LambdaWeight", closed=True
        )
        return LambdaWeight(self.terms, tuple(factor * scale for scale in self.scales))

    __rmul__ = __mul__

    @property
    def gain(self) -> str | Callable | None:
        """The gain of the terms that use one (all the same), or None."""
        return next((term.gain for term in self.terms if term.gain is not None), None)

    def tree_flatten(self):
        return self.scales, self.terms

    @classmethod
    def tree_unflatten(cls, terms, scales):
        return cls(terms, tuple(scales))


def _check_options(normalize, topn, gain, *, caller):
    return _Term(
        kind=caller.removesuffix("_lambdaweight"),
        normalize=_validation.check_bool(normalize, name="normalize", caller=caller),
        topn=_validation.check_int(topn, name="topn", caller=caller, low=1, none=True),
        gain=_validation.check_gain(gain, caller=caller),
    )


def dcg_lambdaweight(
    *, normalize: bool = False, topn: int | None = None, gain: str | Callable = "exp2"
) -> LambdaWeight:
    r"""LambdaRank's lambda weight: the change in DCG when a pair swaps ranks.

    .. math::

        \lambda_{ij} = \left|G_i - G_j\right|
            \left|D_n(r_i) - D_n(r_j)\right|

    with :math:`r_i` the current rank of item :math:`i` (1-based, by
    descending score, ties by descending index; ranks carry no gradient),
    :math:`D(r) = 1 / \log_2(r + 1)`, :math:`D_n` that discount set to 0 past
    rank ``topn``, and :math:`G_i = g(y_i)`, divided by the list's ideal
    DCG@topn when ``normalize`` (then :math:`\lambda_{ij}` is the change in
    NDCG@topn).

    Args:
      normalize: Divide the gains by the ideal DCG@topn (NDCG's weight).
      topn: Rank cut-off of the discounts; None for the whole list.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in Rax),
        ``"linear"`` or a callable applied to the labels.

    Returns:
      The :class:`LambdaWeight`, for the ``lambdaweight`` option of a
      pairwise loss.

    Raises:
      InvalidParameterError: ``normalize`` is not a bool; ``topn`` is not None
        and not an int >= 1; ``gain`` is unknown.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores, labels = jnp.array([1.0, 2.0]), jnp.array([1.0, 0.0])
      >>> weight = losses.dcg_lambdaweight(normalize=True)
      >>> loss = losses.pairwise_logistic_loss(scores, labels, lambdaweight=weight)
      >>> print(f"{loss:.4f}")  # (1 - 1/log2(3)) * log(1 + e)
      0.4847

    Remarks:
      Rax's ``rax.dcg_lambdaweight`` multiplies every weight by the list
      size ``n``, padding included; lodestar does not, so that a padded list
      keeps its loss: per list, Rax's loss is ``n`` times lodestar's. Rax
      also multiplies the gains by the per-item ``weights`` (which already
      weight each pair); lodestar weights each pair once. Rax breaks score
      ties by ascending index.

    References:
      Burges, Ragno & Le, "Learning to rank with nonsmooth cost functions",
      NeurIPS 2006.
      https://papers.nips.cc/paper/2971-learning-to-rank-with-nonsmooth-cost-functions
    """
    term = _check_options(normalize, topn, gain, caller="dcg_lambdaweight")
    return LambdaWeight((term,), (1.0,))


def dcg2_lambdaweight(
    *, normalize: bool = False, topn: int | None = None, gain: str | Callable = "exp2"
) -> LambdaWeight:
    r"""LambdaLoss's NDCG-Loss2 lambda weight: a discount of the rank distance.

    .. math::

        \lambda_{ij} = \left|G_i - G_j\right|
            \left|D(|r_i - r_j|) - D(|r_i - r_j| + 1)\right| c_{ij}

    with the ranks, gains and discount of :func:`dcg_lambdaweight`. Without
    ``topn``, :math:`c_{ij} = 1`; with it, a pair whose lower-ranked item is
    past ``topn`` gets :math:`c_{ij} = 1 / (1 - D(\max(r_i, r_j)))`, the
    top-n correction of Jagerman et al., as in Rax.

    Args:
      normalize: Divide the gains by the ideal DCG@topn (NDCG's weight).
      topn: Rank cut-off of the correction above; None for the whole list.
      gain: ``"exp2"`` (:math:`2^\ell - 1`, the default, as in Rax),
        ``"linear"`` or a callable applied to the labels.

    Returns:
      The :class:`LambdaWeight`, for the ``lambdaweight`` option of a
      pairwise loss.

    Raises:
      InvalidParameterError: ``normalize`` is not a bool; ``topn`` is not None
        and not an int >= 1; ``gain`` is unknown.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores, labels = jnp.array([2.0, 1.0, 0.0]), jnp.array([2.0, 1.0, 0.0])
      >>> weight = losses.dcg_lambdaweight(normalize=True) + 10.0 * losses.dcg2_lambdaweight(
      ...     normalize=True
      ... )
      >>> loss = losses.pairwise_logistic_loss(scores, labels, lambdaweight=weight)
      >>> print(f"{loss:.4f}")  # lambda_loss(scores, labels) * ln 2
      1.2200

    Remarks:
      As for :func:`dcg_lambdaweight`, Rax's ``rax.dcg2_lambdaweight`` is
      ``n`` times lodestar's and weights the gains by the item weights too.
      :func:`lambda_loss` is the pairwise logistic loss with this weighting
      (in bits; its ``k`` zeroes the :math:`\delta` term of pairs wholly
      past ``k`` instead of correcting it).

    References:
      Wang, Li, Golbandi, Bendersky & Najork, "The LambdaLoss framework for
      ranking metric optimization", CIKM 2018.
      https://doi.org/10.1145/3269206.3271784

      Jagerman, Qin, Wang, Bendersky & Najork, "On optimizing top-K metrics
      for neural ranking models", SIGIR 2022.
      https://doi.org/10.1145/3477495.3531849
    """
    term = _check_options(normalize, topn, gain, caller="dcg2_lambdaweight")
    return LambdaWeight((term,), (1.0,))


def labeldiff_lambdaweight() -> LambdaWeight:
    r"""The label-difference lambda weight :math:`\lambda_{ij} = |y_i - y_j|`.

    It weights a pair by how far apart its labels are, so that confusing a
    relevant item with an irrelevant one costs more than confusing two
    near-equal ones; it needs no ranks and takes any real labels.

    Returns:
      The :class:`LambdaWeight`, for the ``lambdaweight`` option of a
      pairwise loss.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import losses
      >>> scores, labels = jnp.array([1.2, 0.4, 1.9]), jnp.array([1.0, 2.0, 0.0])
      >>> weight = losses.labeldiff_lambdaweight()
      >>> print(f"{losses.pairwise_logistic_loss(scores, labels, lambdaweight=weight):.4f}")
      5.6771

    Remarks:
      Per list this is ``rax.labeldiff_lambdaweight`` (which has no list-size
      factor) with ``reduce_fn=jnp.sum``.

    References:
      Wang, Li, Golbandi, Bendersky & Najork, "The LambdaLoss framework for
      ranking metric optimization", CIKM 2018.
      https://doi.org/10.1145/3269206.3271784
    """
    return LambdaWeight((_Term("labeldiff"),), (1.0,))


_FACTORIES = (dcg_lambdaweight, dcg2_lambdaweight, labeldiff_lambdaweight)


def check_lambdaweight(lambdaweight, *, caller: str) -> LambdaWeight | None:
    """None, a :class:`LambdaWeight`, or one of its factories called with its defaults.

    A factory passed uncalled (``lambdaweight=losses.dcg_lambdaweight``) is what
    a Rax user writes (``lambdaweight_fn=rax.dcg_lambdaweight``).
    """
    if lambdaweight is None or isinstance(lambdaweight, LambdaWeight):
        return lambdaweight
    if lambdaweight in _FACTORIES:
        return lambdaweight()
    raise _validation.InvalidParameterError(
        f"The 'lambdaweight' parameter of {caller} must be None, a LambdaWeight or one of "
        f"dcg_lambdaweight, dcg2_lambdaweight, labeldiff_lambdaweight. Got {lambdaweight!r} "
        f"instead."
    )


def item_discounts(s, valid, k):
    """Current 1-based ranks (ties by descending index) and DCG@k discounts per item."""
    n = s.shape[-1]
    blocks = _ranking.tie_blocks(s, valid, ignore_ties=True)
    position = jnp.minimum(blocks.above, n - 1)
    per_position = jnp.diff(_gains.discount_table(n, k=k, log_base=2.0, dtype=s.dtype))
    discount = jnp.where(valid, _ranking.at_positions(per_position, position), 0)
    return (position + 1).astype(s.dtype), discount


def pair_weights(lambdaweight: LambdaWeight, s, y, valid):
    """Per-item values of ``lambdaweight``, and the weight of a block of pairs from them.

    Returns ``(items, weight)``: ``items`` is a tuple of ``(..., n)`` arrays
    to pass to :func:`lodestar._pairs.pair_sum` beside the loss's own, and
    ``weight(rows, columns)`` takes the slices of ``items`` of a block (rows
    ``i``, columns ``j``) to the pair weights. Every item value is a
    stop-gradient (ranks have no gradient, and a weight is a constant of the
    pair loss); the scales are not, so that a traced ``mu`` is differentiable.
    """
    n = s.shape[-1]
    rank, _ = item_discounts(s, valid, n)
    items, parts = [lax.stop_gradient(rank)], []
    for term, scale in zip(lambdaweight.terms, lambdaweight.scales, strict=True):
        first = len(items)
        if term.kind == "labeldiff":
            items.append(y)
        else:
            cutoff = n if term.topn is None else min(term.topn, n)
            gains = jnp.where(valid, _gains.apply_gain(term.gain, y), 0)
            if term.normalize:
                gains = _common.normalised_gains(y, valid, jnp.ones_like(s), term.gain, cutoff)
            items.append(gains)
            if term.kind == "dcg":
                items.append(item_discounts(s, valid, cutoff)[1])
        parts.append((term, scale, first))
    items = tuple(lax.stop_gradient(x) for x in items)

    def weight(rows, columns):
        r_i, r_j = rows[0], columns[0]
        total = 0
        for term, scale, first in parts:
            difference = jnp.abs(rows[first] - columns[first])
            if term.kind == "dcg":
                factor = jnp.abs(rows[first + 1] - columns[first + 1])
            elif term.kind == "dcg2":
                distance = jnp.abs(r_i - r_j)
                apart = distance > 0
                d = jnp.where(apart, distance, 1)
                factor = jnp.where(
                    apart, jnp.abs(_gains.discount_at(d, 2.0) - _gains.discount_at(d + 1, 2.0)), 0
                )
                if term.topn is not None:
                    lowest = jnp.maximum(r_i, r_j)
                    past = lowest > term.topn
                    correction = 1 / (1 - _gains.discount_at(jnp.where(past, lowest, 2), 2.0))
                    factor = factor * jnp.where(past, correction, 1)
            else:
                factor = 1
            total = total + scale * difference * factor
        return total

    return items, weight
