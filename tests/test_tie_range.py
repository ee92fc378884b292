"""``metrics.tie_range``: the values with ties broken against and for each list.

For every measure whose relevant-first and relevant-last orders are its
extreme orders (the best and the worst, or for a count of non-relevant
documents the other way round), the pair must be the exact minimum and maximum of
the measure over every order of the tied items: the brute force of
tests/oracles.py, lists of up to 7 items, 1e-12. The registry marks the
others (``tie_extremes=False``); for them the pair is checked to be the
values at those two orders.
"""

import functools

import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import strategies
import tiers
from hypothesis import example, given

from lodestar import _registry, metrics

TOL = dict(rtol=1e-12, atol=1e-12)


def values_over_orders(key, scores, labels, **options):
    entry = _registry.MEASURES[key]
    oracle = functools.partial(getattr(oracles, entry.oracle), **entry.required_options)
    return [oracle(labels, order, **options) for order in oracles.tie_orders(scores)]


# The default tier: a graded measure, a binary one and a count that is largest
# relevant-last; the slow tier every measure.
@pytest.mark.parametrize(
    "key", tiers.params(_registry.MEASURES, default=("ndcg", "map", "num_nonrel_judged_ret"))
)
@given(batch=strategies.tied_batches())
# Drawn once: a list whose two orders do not bracket G's average.
@example(
    batch=(
        np.array([[-2.0, -2.0, 0.0, -2.0]] + [[0.0] * 4] * 3),
        np.array([[2.0, 3.0, 1.0, 3.0]] + [[0.0] * 4] * 3),
    )
)
def test_the_range_is_the_extremes_over_every_order(key, batch):
    entry = _registry.MEASURES[key]
    scores, labels = batch
    for k in (None, 2, 4) if entry.cutoff else (None,):
        options = {"k": k} if entry.cutoff else {}
        lows, highs = metrics.tie_range(
            entry.function, scores, labels, **entry.required_options, **options
        )
        averages = entry.function(scores, labels, **entry.required_options, **options)
        for row, (low, high, average) in enumerate(zip(lows, highs, averages, strict=True)):
            values = values_over_orders(key, scores[row], labels[row], **options)
            # A count of what is not relevant (num_nonrel_judged_ret) is largest
            # relevant-last: the two orders are the extremes, in either direction.
            low, high = sorted((float(low), float(high)))
            if entry.tie_extremes:
                assert low - 1e-12 <= average <= high + 1e-12
                np.testing.assert_allclose(low, min(values), **TOL)
                np.testing.assert_allclose(high, max(values), **TOL)
            else:
                # The two orders need not be the extremes, so they need not
                # bracket the average either (G: labels [2, 3, 1, 3], the
                # three items of score -2 tied, averages 0.6576 while the
                # two orders give 0.6513 and 0.6548).
                assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12
                assert min(values) - 1e-12 <= average <= max(values) + 1e-12


def test_normalized_gain_is_lowest_at_an_order_other_than_relevant_last():
    # Why the registry marks G tie_extremes=False: its discount reads the gain
    # collected so far, so placing the 3 before the 2 lowers it further.
    scores, labels = np.zeros(4), np.array([1.0, 1.0, 2.0, 3.0])
    low, high = metrics.tie_range(metrics.normalized_gain, scores, labels)
    values = values_over_orders("G", scores, labels)
    np.testing.assert_allclose(low, oracles.g_of_order(labels, np.arange(4)), **TOL)
    np.testing.assert_allclose(min(values), 0.6890665455411094, **TOL)
    assert min(values) < low - 0.01
    np.testing.assert_allclose(high, max(values), **TOL)
    assert not _registry.MEASURES["G"].tie_extremes


def test_a_batch_with_padding_and_per_item_options():
    scores = np.array([[0.5, 0.5, 0.5, 0.1], [0.9, 0.9, 0.2, 0.2]])
    labels = np.array([[0, 1, 0, 1], [1, 0, 1, 0]])
    where = np.array([[True, True, True, False], [True, True, True, True]])
    low, high = metrics.tie_range(metrics.reciprocal_rank, scores, labels, where=where)
    np.testing.assert_allclose(low, [1 / 3, 1 / 2])
    np.testing.assert_allclose(high, [1.0, 1.0])
    judged = np.array([[True, False, True, True], [True, True, True, True]])
    low, high = metrics.tie_range(
        metrics.num_relevant_retrieved, scores, labels, where=where, k=1, judged=judged
    )
    np.testing.assert_allclose(high, [0.0, 1.0])  # the unjudged item 1 is never relevant


def test_refuses_its_own_tie_options():
    with pytest.raises(ValueError, match="takes no ignore_ties"):
        metrics.tie_range(metrics.ndcg, jnp.zeros(3), jnp.ones(3), ignore_ties=True)
    with pytest.raises(ValueError, match="takes no segments"):
        metrics.tie_range(metrics.ndcg, jnp.zeros(3), jnp.ones(3), segments=jnp.zeros(3, int))
