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


def descending_gains(values, valid):
    """Real values high to low, then a 0 per padding slot, then the real NaNs, per list."""
    rows = []
    n = values.shape[-1]
    for row, real in zip(values.reshape(-1, n), valid.reshape(-1, n), strict=True):
        kept = row[real]
        nan = np.isnan(kept)
        rows.append(
            np.concatenate(
                [np.sort(kept[~nan])[::-1], np.zeros((~real).sum(), row.dtype), kept[nan]]
            )
        )
    return np.array(rows).reshape(values.shape)


def engine_blocks(scores, valid, ignore_ties):
    """The engine's ``(above, tied)`` of any dtype, from NumPy's sort order.

    NumPy sorts NaN last (after +inf) and -0.0 equal to 0.0; a descending
    ranking is that order reversed, so every NaN ranks first, in one block.
    Padding gets ``above = n`` and ``tied = 1``.
    """
    n = scores.shape[-1]
    above = np.full(scores.shape, n, np.int32)
    tied = np.ones(scores.shape, np.int32)
    for row in np.ndindex(scores.shape[:-1]):
        real = np.flatnonzero(valid[row])
        s = scores[row][real]
        if ignore_ties:
            # Ascending, ties by ascending index, reversed: ties by descending index.
            order = np.argsort(s, kind="stable")[::-1]
            above[row + (real[order],)] = np.arange(len(real))
        else:
            ordered = np.sort(s)
            low = np.searchsorted(ordered, s, side="left")
            high = np.searchsorted(ordered, s, side="right")
            above[row + (real,)] = len(s) - high
            tied[row + (real,)] = high - low
    return above, tied


def largest(values, k):
    """Each row's ``k`` largest values (NaN first) and how many values equal the k-th (0 at NaN)."""
    top = np.flip(np.sort(values, axis=-1), axis=-1)[..., :k]
    return top, np.sum(values == top[..., k - 1 :], axis=-1)


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


# --- counts, set measures, R-precision, utility, unjudged and RBP (decision 0015) --------
#
# Each reads like its trec_eval m_*.c: the retrieved list is the order cut at k
# (trec_eval's -M), a relevant item has a non-zero label and was judged, and
# ``judged`` (per item index, or None for all) marks the items in the qrels.


def _ranked(labels, order, k, judged=None):
    """(label, judged) of each retrieved item, in rank order."""
    retrieved = order if k is None else order[:k]
    return [(labels[i], True if judged is None else bool(judged[i])) for i in retrieved]


def _num_rel(labels, judged, num_relevant):
    if num_relevant is not None:
        return num_relevant
    return sum(1 for i, x in enumerate(labels) if x != 0 and (judged is None or judged[i]))


def num_ret_of_order(labels, order, *, k=None):
    return float(len(_ranked(labels, order, k)))


def num_rel_of_order(labels, order, *, k=None, num_relevant=None, judged=None):
    return float(_num_rel(labels, judged, num_relevant))


def num_rel_ret_of_order(labels, order, *, k=None, judged=None):
    return float(sum(1 for label, seen in _ranked(labels, order, k, judged) if seen and label != 0))


def num_nonrel_judged_ret_of_order(labels, order, *, k=None, judged=None):
    return float(sum(1 for label, seen in _ranked(labels, order, k, judged) if seen and label == 0))


def rprec_mult_of_order(labels, order, *, k=None, multiple=1.0, num_relevant=None):
    """m_Rprec_mult.c: precision at (long) (multiple * R + 0.9), walked from the end."""
    ranked = [label != 0 for label, _ in _ranked(labels, order, k)]
    num_rel = _num_rel(labels, None, num_relevant)
    num_ret, num_rel_ret = len(ranked), sum(ranked)
    cutoff = int(multiple * num_rel + 0.9)
    if cutoff > num_ret:
        return num_rel_ret / cutoff
    rel_so_far = num_rel_ret
    for i in range(num_ret, 0, -1):
        if rel_so_far == 0:
            break
        if i == cutoff:
            return rel_so_far / i
        if ranked[i - 1]:
            rel_so_far -= 1
    return 0.0


def rprec_of_order(labels, order, *, k=None, num_relevant=None):
    """m_Rprec.c: relevant in the first min(num_ret, R) over R."""
    ranked = [label != 0 for label, _ in _ranked(labels, order, k)]
    num_rel = _num_rel(labels, None, num_relevant)
    look = min(len(ranked), num_rel)
    return 0.0 if look == 0 else sum(ranked[:look]) / num_rel


def relative_precision_of_order(labels, order, *, k=None, num_relevant=None):
    """m_rel_P.c: relevant in the first k over min(k, R); k=None: the list length."""
    num_rel = _num_rel(labels, None, num_relevant)
    cutoff = len(order) if k is None else k
    if num_rel == 0 or cutoff == 0:
        return 0.0
    rel_so_far = sum(1 for label, _ in _ranked(labels, order, cutoff) if label != 0)
    return rel_so_far / min(cutoff, num_rel)


def _set_counts(labels, order, k, num_relevant):
    ranked = _ranked(labels, order, k)
    num_rel_ret = sum(1 for label, _ in ranked if label != 0)
    return len(ranked), _num_rel(labels, None, num_relevant), num_rel_ret


def set_p_of_order(labels, order, *, k=None):
    num_ret, _, num_rel_ret = _set_counts(labels, order, k, None)
    return num_rel_ret / num_ret if num_ret else 0.0


def set_recall_of_order(labels, order, *, k=None, num_relevant=None):
    _, num_rel, num_rel_ret = _set_counts(labels, order, k, num_relevant)
    return num_rel_ret / num_rel if num_rel else 0.0


def set_relative_p_of_order(labels, order, *, k=None, num_relevant=None):
    num_ret, num_rel, num_rel_ret = _set_counts(labels, order, k, num_relevant)
    return num_rel_ret / min(num_ret, num_rel) if num_ret and num_rel else 0.0


def set_map_of_order(labels, order, *, k=None, num_relevant=None):
    num_ret, num_rel, num_rel_ret = _set_counts(labels, order, k, num_relevant)
    if not (num_ret and num_rel):
        return 0.0
    return (num_rel_ret * num_rel_ret) / (num_ret * num_rel)


def set_f_of_order(labels, order, *, k=None, beta=1.0, num_relevant=None):
    num_ret, num_rel, num_rel_ret = _set_counts(labels, order, k, num_relevant)
    if not num_rel_ret:
        return 0.0
    precision, recall = num_rel_ret / num_ret, num_rel_ret / num_rel
    return (beta + 1) * precision * recall / (beta * precision + recall)


def utility_of_order(
    labels,
    order,
    *,
    k=None,
    coefficients=(1.0, -1.0, 0.0, 0.0),
    num_documents=None,
    num_relevant=None,
):
    """m_utility.c; a list with no real item scores 0 (lodestar's rule, and trec_eval's -c)."""
    if not order:
        return 0.0
    num_ret, num_rel, num_rel_ret = _set_counts(labels, order, k, num_relevant)
    collection = 0 if num_documents is None else num_documents
    p1, p2, p3, p4 = coefficients
    return (
        p1 * num_rel_ret
        + p2 * (num_ret - num_rel_ret)
        + p3 * (num_rel - num_rel_ret)
        + p4 * (collection + num_rel_ret - num_ret - num_rel)
    )


def unj_of_order(labels, order, *, k=None, judged=None):
    """m_unjudged.c: unjudged in the first k over k; k=None: the list length."""
    cutoff = len(order) if k is None else k
    unjudged = sum(1 for _, seen in _ranked(labels, order, cutoff, judged) if not seen)
    return unjudged / cutoff if cutoff else 0.0


def rbp_of_order(labels, order, *, k=None, p=0.9, max_label=None):
    """m_rbp.c with the relevance level as the gain, rescaled by the top level above 1."""
    top = max((float(x) for x in labels), default=0.0) if max_label is None else max_label
    scale = top if top > 1 else 1.0
    total, weight = 0.0, 1.0
    for label, _ in _ranked(labels, order, k):
        gain = float(label) / scale
        if gain != 0:
            total += gain * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid_of_order(labels, order, *, k=None, p=0.9, judged=None):
    """m_rbp_resid.c: p^num_ret plus the unjudged items' weight, 0 if none is unjudged."""
    unjudged, total, weight = 0, 0.0, 1.0
    for _, seen in _ranked(labels, order, k, judged):
        if not seen:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1 - p) * total if unjudged else 0.0


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


ORACLES = {
    "ndcg": ndcg_of_order,
    "dcg": dcg_of_order,
    "mrr": rr_of_order,
    "map": ap_of_order,
    "P": precision_of_order,
    "recall": recall_of_order,
    "hits": hits_of_order,
    "err": err_of_order,
    "num_ret": num_ret_of_order,
    "num_rel": num_rel_of_order,
    "num_rel_ret": num_rel_ret_of_order,
    "num_nonrel_judged_ret": num_nonrel_judged_ret_of_order,
    "Rprec": rprec_mult_of_order,
    "relative_P": relative_precision_of_order,
    "set_P": set_p_of_order,
    "set_recall": set_recall_of_order,
    "set_relative_P": set_relative_p_of_order,
    "set_map": set_map_of_order,
    "set_F": set_f_of_order,
    "utility": utility_of_order,
    "unj": unj_of_order,
    "rbp": rbp_of_order,
    "rbp_resid": rbp_resid_of_order,
    "gm_map": ap_of_order,
    "bpref": bpref_of_order,
    "gm_bpref": bpref_of_order,
    "infAP": infap_of_order,
    "binG": bing_of_order,
    "G": g_of_order,
    "iprec_at_recall": iprec_of_order,
    "11pt_avg": eleven_pt_of_order,
    "ndcg_rel": ndcg_rel_of_order,
    "Rndcg": rndcg_of_order,
}
"""Each registry key's brute-force reference on one explicit order.

A test holds its keys equal to ``lodestar._registry.MEASURES``'s, so a new
measure cannot go without its oracle.
"""
