"""Slow, obviously correct references for the exact metrics.

``tie_average`` enumerates every order that breaks the ties in the scores
(itertools, so lists of at most 7 items) and averages a metric evaluated on
each explicit order. ``descending_index_order`` is the documented
``ignore_ties=True`` order. Nothing here shares code with ``lodestar``.
"""

import itertools
import math

import numpy as np


def tie_orders(scores):
    """Every order of the item indices consistent with descending scores."""
    blocks = {}
    for index, score in enumerate(scores):
        blocks.setdefault(float(score), []).append(index)
    ordered = [blocks[s] for s in sorted(blocks, reverse=True)]
    for parts in itertools.product(*(itertools.permutations(b) for b in ordered)):
        yield [i for part in parts for i in part]


def descending_index_order(scores):
    """Descending score; among equal scores, the larger index first."""
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), -i))


def dcg_of_order(labels, order, *, k=None, log_base=2.0, gain=lambda x: x):
    total = 0.0
    for position, index in enumerate(order):
        if k is not None and position >= k:
            break
        total += gain(float(labels[index])) / (math.log(position + 2) / math.log(log_base))
    return total


def ideal_dcg(labels, *, k=None, gain=lambda x: x):
    gains = sorted((gain(float(x)) for x in labels), reverse=True)
    return dcg_of_order(gains, range(len(gains)), k=k, gain=lambda x: x)


def ndcg_of_order(labels, order, *, k=None, gain=lambda x: x):
    ideal = ideal_dcg(labels, k=k, gain=gain)
    return 0.0 if ideal == 0 else dcg_of_order(labels, order, k=k, gain=gain) / ideal


def rr_of_order(labels, order, *, k=None):
    for position, index in enumerate(order):
        if k is not None and position >= k:
            return 0.0
        if labels[index] != 0:
            return 1.0 / (position + 1)
    return 0.0


def tie_average(metric, scores, labels, **options):
    """Mean of ``metric(labels, order, **options)`` over every tie-breaking order."""
    values = [metric(labels, order, **options) for order in tie_orders(scores)]
    return float(np.mean(values))


def ignoring_ties(metric, scores, labels, **options):
    return metric(labels, descending_index_order(scores), **options)


def counts(scores):
    """Reference ``(above, tied)`` per item."""
    scores = [float(s) for s in scores]
    above = [sum(t > s for t in scores) for s in scores]
    tied = [sum(t == s for t in scores) for s in scores]
    return np.array(above), np.array(tied)


# --- precision, recall, hits, average precision and ERR on one explicit order ----------


def _relevant_flags(labels, order, k):
    top = order if k is None else order[:k]
    return [labels[i] != 0 for i in top]


def precision_of_order(labels, order, *, k=None):
    """Relevant items in the first k positions over k (over the list length for k=None)."""
    found = sum(_relevant_flags(labels, order, k))
    slots = len(order) if k is None else k
    return 0.0 if slots == 0 else found / slots


def recall_of_order(labels, order, *, k=None, num_relevant=None):
    total = sum(x != 0 for x in labels) if num_relevant is None else num_relevant
    return 0.0 if total == 0 else sum(_relevant_flags(labels, order, k)) / total


def hits_of_order(labels, order, *, k=None):
    return float(any(_relevant_flags(labels, order, k)))


def ap_of_order(labels, order, *, k=None, num_relevant=None):
    """Sum of precision at each relevant rank within k, over all relevant items."""
    total = sum(x != 0 for x in labels) if num_relevant is None else num_relevant
    found, summed = 0, 0.0
    for position, flag in enumerate(_relevant_flags(labels, order, k)):
        if flag:
            found += 1
            summed += found / (position + 1)
    return 0.0 if total == 0 else summed / total


def err_of_order(labels, order, *, k=None, max_label):
    """Chapelle et al.'s cascade: stop at grade g with probability (2^g - 1) / 2^max."""
    value, reach = 0.0, 1.0
    for position, index in enumerate(order if k is None else order[:k]):
        stop = (2.0 ** float(labels[index]) - 1) / 2.0**max_label
        value += reach * stop / (position + 1)
        reach *= 1 - stop
    return value
