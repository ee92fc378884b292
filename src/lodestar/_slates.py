"""Slates: which documents of a long query a training file keeps (``load_svmlight``).

allRank trains on slates of a fixed length, cut from longer queries; lodestar's
reader cuts them when it reads a file (``long_lists=``, decision 0031).
Imports no JAX.
"""

from __future__ import annotations

import numpy as np


def kept_lines(
    starts: np.ndarray,
    lengths: np.ndarray,
    query: np.ndarray,
    position: np.ndarray,
    labels: np.ndarray,
    max_list_size: int,
    long_lists: str,
    seed: int,
) -> np.ndarray:
    """Which document lines a query longer than ``max_list_size`` keeps: a bool per line.

    Queries are ``lengths`` lines from ``starts``; each line's ``query`` and
    ``position`` in it are given.

    ``"truncate"`` keeps its first ``max_list_size``. ``"sample"`` draws
    ``max_list_size`` without replacement, uniformly among the subsets that
    hold a relevant document (label above 0) if the query has any: the
    number of relevant ones kept is drawn from the hypergeometric
    distribution given that it is at least 1, then which ones, and which of
    the rest, uniformly. That is the distribution allRank's slates reach by
    drawing again until a relevant document is in, without its unbounded
    loop when relevant documents are rare.
    """
    if long_lists == "truncate":
        return position < max_list_size
    kept = lengths[query] <= max_list_size
    rng = np.random.default_rng(seed)
    for start, length in zip(
        starts[lengths > max_list_size], lengths[lengths > max_list_size], strict=True
    ):
        relevant = labels[start : start + length] > 0
        chosen_relevant = _relevant_count(rng, int(relevant.sum()), int(length), max_list_size)
        for group, count in (
            (relevant, chosen_relevant),
            (~relevant, max_list_size - chosen_relevant),
        ):
            kept[start + rng.choice(np.flatnonzero(group), count, replace=False)] = True
    return kept


def _relevant_count(rng: np.random.Generator, relevant: int, length: int, size: int) -> int:
    """How many of ``relevant`` documents in ``length`` a uniform ``size``-subset holds.

    Drawn given that it holds at least one when ``relevant`` > 0: the
    hypergeometric probabilities of the counts from that least one up, built
    from the ratio of each to the one before.
    """
    others = length - relevant
    low, high = max(1 if relevant else 0, size - others), min(relevant, size)
    counts = np.arange(low, high)
    log_ratios = (
        np.log(relevant - counts)
        + np.log(size - counts)
        - np.log(counts + 1)
        - np.log(others - size + counts + 1)
    )
    log_weights = np.concatenate([[0.0], np.cumsum(log_ratios)])
    weights = np.exp(log_weights - log_weights.max())
    return low + int(rng.choice(len(weights), p=weights / weights.sum()))


def positions_among(kept: np.ndarray, starts: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each kept line's position among the kept lines of its query (others: unused)."""
    before = np.cumsum(kept) - kept  # kept lines before each line
    return before - before[starts][query]
