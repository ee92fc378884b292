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


# --- bpref, infAP, binG and G on one explicit order (trec_eval's m_*.c loops) ----------
# ``judged`` and ``pooled`` are per item (by index), as lodestar takes them.
# trec_eval's relevance values: judged items have their label (relevant when
# non-zero), pooled but unjudged items are RELVALUE_UNJUDGED, the others
# RELVALUE_NONPOOL.

INFAP_EPSILON = 0.00001


def _kinds(labels, judged, pooled):
    """Per item: "rel", "nonrel", "unjudged" (in the pool) or "nonpool"."""
    n = len(labels)
    judged = [True] * n if judged is None else [bool(x) for x in judged]
    pooled = (
        judged if pooled is None else [bool(x) or j for x, j in zip(pooled, judged, strict=True)]
    )
    kinds = []
    for i in range(n):
        if judged[i]:
            kinds.append("rel" if labels[i] != 0 else "nonrel")
        else:
            kinds.append("unjudged" if pooled[i] else "nonpool")
    return kinds


def bpref_of_order(
    labels, order, *, k=None, num_relevant=None, num_judged_nonrelevant=None, judged=None
):
    """m_bpref.c: each judged relevant document scores 1 - min(nonrel above, R) / min(N, R)."""
    kinds = _kinds(labels, judged, None)
    num_rel = kinds.count("rel") if num_relevant is None else num_relevant
    num_nonrel = kinds.count("nonrel") if num_judged_nonrelevant is None else num_judged_nonrelevant
    nonrel_so_far, bpref = 0, 0.0
    for index in order if k is None else order[:k]:
        if kinds[index] in ("nonpool", "unjudged"):
            continue
        if kinds[index] == "nonrel":
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            bpref += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel)
        else:
            bpref += 1.0
    return bpref / num_rel if num_rel else 0.0


def infap_of_order(labels, order, *, k=None, num_relevant=None, judged=None, pooled=None):
    """m_infap.c: inferred AP over the judged sample of the pool."""
    kinds = _kinds(labels, judged, pooled)
    num_rel = kinds.count("rel") if num_relevant is None else num_relevant
    nonrel_so_far = rel_so_far = pool_unjudged_so_far = 0
    inf_ap = 0.0
    for j, index in enumerate(order if k is None else order[:k]):
        if kinds[index] == "nonpool":
            continue
        if kinds[index] == "unjudged":
            pool_unjudged_so_far += 1
            continue
        if kinds[index] == "nonrel":
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        if j == 0:
            inf_ap += 1.0
        else:
            judged_above = rel_so_far - 1 + nonrel_so_far
            inf_ap += 1.0 / (j + 1.0) + (j / (j + 1.0)) * (
                (judged_above + pool_unjudged_so_far) / j
            ) * ((rel_so_far - 1 + INFAP_EPSILON) / (judged_above + 2 * INFAP_EPSILON))
    return inf_ap / num_rel if num_rel else 0.0


def bing_of_order(labels, order, *, k=None, num_relevant=None, judged=None):
    """m_binG.c: each relevant document scores 1 / log2(2 + documents above it that are not)."""
    kinds = _kinds(labels, judged, None)
    num_rel = kinds.count("rel") if num_relevant is None else num_relevant
    rel_so_far, total = 0, 0.0
    for i, index in enumerate(order if k is None else order[:k]):
        if kinds[index] == "rel":
            rel_so_far += 1
            total += 1.0 / math.log2(3 + i - rel_so_far)
    return total / num_rel if rel_so_far else 0.0


def g_of_order(labels, order, *, k=None, gain=lambda x: x, judged=None, ideal_labels=None):
    """m_G.c: gain / log2(2 + ideal cost so far - gain so far), over the ideal's total.

    The cost of position i adds the ideal ranking's i-th gain, at least 1; the
    ideal ranks every judged item (``ideal_labels`` if given) by gain. An
    unjudged item's gain is 0.
    """
    n = len(labels)
    judged = [True] * n if judged is None else [bool(x) for x in judged]
    if ideal_labels is None:
        ideal_labels = [labels[i] for i in range(n) if judged[i]]
    ideal = sorted((gain(float(x)) for x in ideal_labels), reverse=True)
    results_g = sum_results = sum_cost = 0.0
    for i, index in enumerate(order if k is None else order[:k]):
        results_gain = gain(float(labels[index])) if judged[index] else 0.0
        sum_results += results_gain
        ideal_gain = ideal[i] if i < len(ideal) else 0.0
        sum_cost += max(ideal_gain, 1.0)
        if results_gain != 0:
            results_g += results_gain / math.log2(2 + sum_cost - sum_results)
    sum_ideal = sum(x for x in ideal if x > 0)
    return results_g / sum_ideal if sum_ideal > 0 else 0.0
