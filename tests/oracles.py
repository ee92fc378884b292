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


# --- trec_eval's ndcg_rel, Rndcg, iprec_at_recall and 11pt_avg on one explicit order ----
# (decision 0017). Gains: ``gain`` maps a label to its gain; an unjudged item gains
# 0; the ideal takes ``ideal_labels`` (every judged item) or the list's judged items.


def _gains_and_pool(labels, *, gain, ideal_labels, judged):
    gains = [gain(float(x)) if judged is None or judged[i] else 0.0 for i, x in enumerate(labels)]
    if ideal_labels is None:
        pool = [g for i, g in enumerate(gains) if judged is None or judged[i]]
    else:
        pool = [gain(float(x)) for x in ideal_labels]
    return gains, sorted(pool, reverse=True)


def ndcg_rel_of_order(labels, order, *, k=None, gain=lambda x: x, ideal_labels=None, judged=None):
    """m_ndcg_rel.c: NDCG at each positive-gain document, the final NDCG for those missed."""
    gains, pool = _gains_and_pool(labels, gain=gain, ideal_labels=ideal_labels, judged=judged)
    ideal = [g for g in pool if g > 0]
    ranked = list(order if k is None else order[:k])
    results_dcg = ideal_dcg = total = 0.0
    num_rel_ret = 0
    for i, index in enumerate(ranked):
        g = gains[index]
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        if i < len(ideal):
            ideal_dcg += ideal[i] / math.log2(i + 2)
        if g > 0:
            total += results_dcg / ideal_dcg
            num_rel_ret += 1
    for i in range(len(ranked), len(ideal)):
        ideal_dcg += ideal[i] / math.log2(i + 2)
    if ideal:
        total += (len(ideal) - num_rel_ret) * results_dcg / ideal_dcg
    return total / len(ideal) if total > 0 else 0.0


def rndcg_of_order(
    labels,
    order,
    *,
    k=None,
    gain=lambda x: x,
    ideal_labels=None,
    judged=None,
    num_relevant=None,
):
    """m_Rndcg.c: NDCG where the ideal's gain changes, and once more at the end of the run."""
    gains, pool = _gains_and_pool(labels, gain=gain, ideal_labels=ideal_labels, judged=judged)
    if num_relevant is None:
        source = labels if ideal_labels is None else ideal_labels
        num_relevant = sum(
            1
            for i, x in enumerate(source)
            if x != 0 and (ideal_labels is not None or judged is None or judged[i])
        )
    if num_relevant == 0:
        return 0.0

    def ideal_at(i):
        return pool[i] if i < len(pool) else 0.0

    ranked = list(order if k is None else order[:k])
    num_ret = len(ranked)
    results_dcg = ideal_dcg = total = 0.0
    points = 0
    ideal_gain = old = ideal_at(0)
    i = 0
    while i < num_ret and ideal_gain > 0:
        g = gains[ranked[i]]
        ideal_gain = ideal_at(i)
        if old != ideal_gain:
            if ideal_dcg > 0:
                total += results_dcg / ideal_dcg
                points += 1
            old = ideal_gain
        if g != 0:
            results_dcg += g / math.log2(i + 2)
        if ideal_gain > 0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    if i < num_ret:
        while i < num_ret:
            results_dcg += gains[ranked[i]] / math.log2(i + 2)
            i += 1
        if ideal_dcg > 0:
            total += results_dcg / ideal_dcg
            points += 1
    while ideal_gain > 0:
        ideal_gain = ideal_at(i)
        if old != ideal_gain:
            if ideal_dcg > 0:
                total += results_dcg / ideal_dcg
                points += 1
            old = ideal_gain
        if ideal_gain > 0:
            ideal_dcg += ideal_gain / math.log2(i + 2)
        i += 1
    return total / points if points else 0.0


def lround(x):
    """C's lround for x >= 0: halves away from zero."""
    whole = math.floor(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def iprec_of_order(labels, order, *, k=None, recall, num_relevant=None):
    """m_iprec_at_recall.c for one level: the largest precision at or after the level's rank."""
    ranked = list(order if k is None else order[:k])
    rel = [labels[i] != 0 for i in ranked]
    total = sum(x != 0 for x in labels) if num_relevant is None else num_relevant
    cutoff = lround(recall * total)
    num_rel_ret, num_ret = sum(rel), len(ranked)
    if cutoff > num_rel_ret or num_ret == 0:
        return 0.0
    int_precis = num_rel_ret / num_ret
    rel_so_far = num_rel_ret
    for i in range(num_ret, 0, -1):
        if rel_so_far == 0:
            break
        int_precis = max(int_precis, rel_so_far / i)
        if rel[i - 1]:
            if rel_so_far == cutoff:
                return int_precis
            rel_so_far -= 1
    return int_precis


ELEVEN = tuple(i / 10 for i in range(11))


def eleven_pt_of_order(labels, order, *, k=None, recall=ELEVEN, num_relevant=None):
    """m_11pt_avg.c: the mean of the interpolated precisions at the levels."""
    values = [
        iprec_of_order(labels, order, k=k, recall=level, num_relevant=num_relevant)
        for level in recall
    ]
    return sum(values) / len(values)
