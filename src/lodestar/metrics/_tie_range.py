"""How much ties can move a measure: its value with every tie broken against, and for, the list."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Num

from lodestar import _validation
from lodestar.metrics import _kernel

_PER_ITEM_OPTIONS = ("judged", "pooled")


def _formula(metric: Callable) -> _kernel.Formula:
    """The formula ``metric`` evaluates: what orders its ties is the formula's.

    ``metric`` is a function of :mod:`lodestar.metrics`, a ``functools.partial``
    of one, or a function that wraps one with ``functools.wraps``.
    """
    function = metric
    while True:
        if isinstance(function, functools.partial):
            function = function.func
        elif hasattr(function, "formula"):
            return function.formula
        elif hasattr(function, "__wrapped__"):
            function = function.__wrapped__
        else:
            raise TypeError(
                "tie_range orders ties by what raises the measure, which a function of "
                "lodestar.metrics declares; pass one of them, or a functools.partial of "
                f"one with your options. Got {metric!r}."
            )


def _tie_key(metric: Callable, labels: jax.Array, judged) -> jax.Array:
    """Per item, how much placing it first raises ``metric``: ties are ordered by it."""
    formula = _formula(metric)
    kind, tie_key = formula.labels, formula.tie_key
    values = labels.astype(jnp.float32) if labels.dtype == jnp.bool_ else labels
    judged = jnp.ones(labels.shape, bool) if judged is None else jnp.asarray(judged, bool)
    if tie_key == "unjudged":
        return (~judged).astype(jnp.float32)
    if tie_key == "judged_nonrelevant":
        return (judged & (values == 0)).astype(jnp.float32)
    key = values if kind == "graded" else (values != 0).astype(jnp.float32)
    key = key.astype(jnp.promote_types(key.dtype, jnp.float32))
    return jnp.where(judged, key, -jnp.inf)


def tie_order(key: jax.Array, *, descending: bool) -> jax.Array:
    """Indices that order each list by ``key``, stably: ascending, or descending.

    With the items laid out in this order, ranking ties by descending index
    (``ignore_ties=True``) breaks every tie by ``key``: the item placed last
    among equal scores ranks first.
    """
    key = jnp.where(jnp.isnan(key), -jnp.inf, key)
    key = -key if descending else key
    axis = key.ndim - 1
    index = lax.broadcasted_iota(jnp.int32, key.shape, axis)
    return lax.sort((key, index), dimension=axis, num_keys=1, is_stable=True)[1]


def tie_range(
    metric: Callable[..., jax.Array],
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    where: Bool[Array, "*batch n"] | None = None,
    **options,
) -> tuple[Float[Array, "*batch"], Float[Array, "*batch"]]:
    r"""The values of ``metric`` with every tie broken against, and for, each list.

    Tied scores leave the ranking to an arbitrary tie-break, and a measure can
    move with it (Cabanac et al., 2010, measured this "tie-breaking bias" in
    TREC runs). lodestar's default averages over every order of the tied
    items; this gives the range around that average:

    * **low**: within every block of tied scores, the items that raise the
      measure least first (for a measure of relevance, relevant-last);
    * **high**: those that raise it most first (relevant-first).

    What raises a measure is declared by its formula (``tie_key``): for most
    measures, relevance, which is the label's value for those that read
    graded labels (DCG, NDCG, ERR, ...) and whether the label is non-zero for
    the binary ones, an item that ``judged`` marks unjudged counting as least
    relevant; for ``unjudged`` and ``rank_biased_precision_residual``, being
    unjudged; for ``num_nonrelevant_judged_retrieved``, being judged and not
    relevant. Among items alike, ties keep the descending-index order of
    ``ignore_ties=True``.

    For every measure that is a sum of non-negative gains weighted by
    non-increasing positional weights (DCG with a base above 1, NDCG,
    precision, recall, hits, reciprocal rank, average precision, ERR, RBP,
    R-precision, the counts and set measures at a cut-off), the two orders
    are the worst and the best, so the pair is the exact minimum and maximum
    over all tie orders; ``tests/test_tie_range.py`` checks it against every
    order for lists of up to 7 items, with and without ``judged``, for every
    measure the registry gives a ``tie_key``. Two measures have none, and for
    them the pair is the value at the two relevance orders, not necessarily
    its extremes, and the tie average may lie outside it: trec_eval's
    normalized gain ``G`` discounts by the gain collected so far (labels
    tied as 1, 1, 3, 2 score 0.689 against 0.704 relevant-last), and
    inferred AP estimates the precision above a relevant item from the
    judged sample above it. ``lodestar evaluate --tie-range`` prints no range
    for them.

    Args:
      metric: A function of :mod:`lodestar.metrics`, a ``functools.partial``
        of one, or a function that wraps one with ``functools.wraps``.
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` labels, as ``metric`` takes them.
      where: ``(..., n)`` boolean mask; False marks padding.
      **options: ``metric``'s other options (``k``, ``judged``, ...);
        per-item arrays among them are reordered with the items.

    Returns:
      ``(low, high)``, each shaped as ``metric``'s result.

    Raises:
      ValueError: ``scores`` and ``labels`` differ in shape, ``options``
        holds ``ignore_ties`` (the range is its own tie-break) or
        ``segments`` (pack lists after, not before); and whatever ``metric``
        raises.
      TypeError: ``metric`` is none of the above, so what orders its ties is
        unknown.

    Example:
      Three documents tie, one of them relevant: it lands first, second or
      third with equal chance, so reciprocal rank is (1 + 1/2 + 1/3) / 3 =
      0.6111 on average over the orders, 1 at best and 1/3 at worst:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores, labels = jnp.array([0.5, 0.5, 0.5]), jnp.array([0, 1, 0])
      >>> low, high = metrics.tie_range(metrics.reciprocal_rank, scores, labels)
      >>> print(f"{low:.4f} {metrics.reciprocal_rank(scores, labels):.4f} {high:.4f}")
      0.3333 0.6111 1.0000

    References:
      Cabanac, Hubert, Boughanem & Chrisment, "Tie-breaking bias: effect of an
      uncontrolled parameter on information retrieval evaluation", CLEF 2010.
      https://doi.org/10.1007/978-3-642-15998-5_13

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    for refused in ("ignore_ties", "segments"):
        if refused in options:
            raise ValueError(
                f"tie_range breaks ties itself and takes no {refused}; "
                + ("omit it." if refused == "ignore_ties" else "pack the lists after.")
            )
    scores, labels, where = _validation.check_lists(scores, labels, where, caller="tie_range")
    key = _tie_key(metric, labels, options.get("judged"))

    def ranked(descending: bool):
        order = tie_order(key, descending=descending)

        def take(x):
            return None if x is None else jnp.take_along_axis(jnp.asarray(x), order, axis=-1)

        moved = {
            name: take(value) if name in _PER_ITEM_OPTIONS else value
            for name, value in options.items()
        }
        return metric(take(scores), take(labels), where=take(where), ignore_ties=True, **moved)

    # Ascending key: the item that raises the value most sits last, and ranks first.
    return ranked(descending=True), ranked(descending=False)
