"""How much ties can move a measure: its value with every tie broken against, and for, the list."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Num

from lodestar import _docs, _validation

_PER_ITEM_OPTIONS = ("judged", "pooled")


def _label_kind(metric: Callable) -> str:
    """``"binary"`` or ``"graded"``: how the registry says ``metric`` reads labels."""
    from lodestar import _registry

    for measure in _registry.MEASURES.values():
        if measure.function is metric:
            return measure.labels
    return "graded"


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


@_docs.shared
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

    * **pessimistic**: within every block of tied scores, the least relevant
      items first (relevant-last);
    * **optimistic**: the most relevant items first (relevant-first).

    Relevance is the label's value for the measures that read graded labels
    (DCG, NDCG, ERR, ...) and whether the label is non-zero for the binary
    ones, as the registry declares; an item that ``judged`` marks unjudged
    counts as least relevant. Among items equally relevant, ties keep the
    descending-index order of ``ignore_ties=True``.

    For every measure that is a sum of non-negative gains weighted by
    non-increasing positional weights (DCG with a base above 1, NDCG,
    precision, recall, hits, reciprocal rank, average precision, ERR, RBP,
    R-precision, the counts and set measures at a cut-off), relevant-first
    and relevant-last are the best and worst orders, so the pair is the
    exact maximum and minimum over all tie orders (for a count of what is
    not relevant, such as ``num_nonrelevant_judged_retrieved``, the other way
    round: the pessimistic value is then the larger);
    ``tests/test_tie_range.py`` checks it against every order for lists of up
    to 7 items, for every measure the registry marks ``tie_extremes``. For a measure
    that is not monotone in relevance this way, the pair is the value at
    those two orders, not necessarily its extremes, and the tie average may
    lie outside it: trec_eval's normalized gain ``G`` discounts by the gain
    collected so far, and labels tied as 1, 1, 3, 2 score 0.689 against
    0.704 relevant-last.

    Args:
      metric: A function of :mod:`lodestar.metrics`.
      {{scores}}
      labels: ``(..., n)`` labels, as ``metric`` takes them.
      {{where}}
      **options: ``metric``'s other options (``k``, ``judged``, ...);
        per-item arrays among them are reordered with the items.

    Returns:
      ``(pessimistic, optimistic)``, each shaped as ``metric``'s result.

    Raises:
      ValueError: ``scores`` and ``labels`` differ in shape, ``options``
        holds ``ignore_ties`` (the range is its own tie-break) or
        ``segments`` (pack lists after, not before); and whatever ``metric``
        raises.

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
    values = labels.astype(jnp.float32) if labels.dtype == jnp.bool_ else labels
    key = values if _label_kind(metric) == "graded" else (values != 0).astype(jnp.float32)
    key = key.astype(jnp.promote_types(key.dtype, jnp.float32))
    if options.get("judged") is not None:
        key = jnp.where(jnp.asarray(options["judged"]), key, -jnp.inf)

    def ranked(descending: bool):
        order = tie_order(key, descending=descending)

        def take(x):
            return None if x is None else jnp.take_along_axis(jnp.asarray(x), order, axis=-1)

        moved = {
            name: take(value) if name in _PER_ITEM_OPTIONS else value
            for name, value in options.items()
        }
        return metric(take(scores), take(labels), where=take(where), ignore_ties=True, **moved)

    # Ascending relevance: the most relevant item sits last, and ranks first.
    return ranked(descending=True), ranked(descending=False)
