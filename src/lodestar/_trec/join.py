"""Joining a run with its qrels: each retrieved document labelled, both grouped by query.

Everything here is vectorised over the records: identifiers are the integer
codes of :mod:`.read`, a retrieved document's judgment is found by a sorted
search of (query, docno) keys, and the lists are grouped by one argsort. No
Python runs per line or per query.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow.compute as pc

from lodestar._trec import read as _read
from lodestar._trec.read import TrecFile, refuse, show


class RaggedLists(NamedTuple):
    """Ragged per-query lists in compressed-row form.

    Attributes:
      offsets: int64 ``(queries + 1,)``; query ``q`` owns items
        ``offsets[q]:offsets[q + 1]``.
      items: Per-item arrays by name, each ``(items,)``.
    """

    offsets: np.ndarray
    items: dict[str, np.ndarray]

    @property
    def lengths(self) -> np.ndarray:
        """Items per query."""
        return np.diff(self.offsets)

    def totals(self, values: np.ndarray) -> np.ndarray:
        """Per query, the sum of a per-item array."""
        running = np.concatenate(([0], np.cumsum(values, dtype=np.float64)))
        return running[self.offsets[1:]] - running[self.offsets[:-1]]

    def select(self, keep: np.ndarray) -> RaggedLists:
        """The items where ``keep`` holds, each query keeping its own in their order."""
        query = np.repeat(np.arange(len(self.lengths)), self.lengths)
        counts = np.bincount(query[keep], minlength=len(self.lengths))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return RaggedLists(offsets, {name: values[keep] for name, values in self.items.items()})

    def maxima(self, values: np.ndarray, initial) -> np.ndarray:
        """Per query, the largest of a per-item array (``initial`` for an empty list)."""
        result = np.full(len(self.offsets) - 1, initial, dtype=values.dtype)
        filled = self.lengths > 0
        if filled.any():
            result[filled] = np.maximum.reduceat(values, self.offsets[:-1][filled])
        return result


class Joined(NamedTuple):
    """A run joined with its qrels, one list per evaluated query.

    Attributes:
      query_ids: The evaluated queries, in byte order (trec_eval's order).
      retrieved: The run's documents per query. Items: ``score`` (float64),
        ``grade`` (int64: the qrels relevance, 0 if not in the qrels),
        ``judged`` (in the qrels with a relevance of at least 0), ``pooled``
        (in the qrels at all). With ``docno_order``, each query's tied
        documents (one score) sit in ascending docno byte order, so that
        ranking ties by descending index ranks them by descending docno, as
        trec_eval does.
      judgments: Every qrels line of each evaluated query, retrieved or not.
        Items: ``grade`` (int64).
      missing_from_run: Queries of the qrels with no line in the run.
      missing_from_qrels: Queries of the run with no line in the qrels.
      runid: The run's name.
    """

    query_ids: list[bytes]
    retrieved: RaggedLists
    judgments: RaggedLists
    missing_from_run: list[bytes]
    missing_from_qrels: list[bytes]
    runid: bytes | None


def _refuse_duplicate(file: TrecFile, first: int, second: int) -> ValueError:
    first_line, second_line = sorted((file.line(first), file.line(second)))
    docno = file.docnos[int(file.docno[second])].as_py()
    return refuse(
        file.path,
        second_line,
        f"document {show(docno)!r} appears twice for query "
        f"{show(file.query_ids[file.query[second]])!r} (first on line {first_line}); "
        "each document may be listed once per query",
    )


def check_unique_documents(file: TrecFile) -> None:
    """Refuse a document listed twice for one query (trec_eval refuses it too)."""
    if len(file) < 2:
        return
    keys = file.query.astype(np.int64)
    keys *= max(len(file.docnos), 1)
    keys += file.docno
    # A sort finds whether any key repeats; only a refusal needs the argsort
    # that says where. Query codes and docno codes both count up in order of
    # first appearance, so a run grouped by query arrives with its keys
    # nearly sorted, which the stable sort (a merge of sorted runs) passes
    # through in about a millisecond per million lines where a quicksort
    # takes 80; on shuffled lines it is a fifth slower (decision 0040).
    ordered = np.sort(keys, kind="stable")
    if not (ordered[1:] == ordered[:-1]).any():
        return
    del ordered
    order = np.argsort(keys, kind="stable")
    same = np.flatnonzero(np.diff(keys[order]) == 0)
    if len(same):
        # Report the duplicate that appears first in the file.
        pairs = [(int(order[i]), int(order[i + 1])) for i in same]
        first, second = min(pairs, key=lambda pair: max(pair))
        raise _refuse_duplicate(file, first, second)


def _evaluated_codes(file: TrecFile, position: dict[bytes, int]) -> np.ndarray:
    """Each record's evaluated-query index, or -1 for a query that is not evaluated."""
    per_query = np.array([position.get(q, -1) for q in file.query_ids], np.int32)
    return per_query[file.query] if len(file) else np.zeros(0, np.int32)


def _group(query: np.ndarray, count: int, key: np.ndarray | None = None):
    """Offsets and the order that groups records by evaluated query (dropping -1)."""
    kept = query >= 0
    every = bool(kept.all())
    keep = None if every else np.flatnonzero(kept)
    kept_query = query if every else query[keep]
    if key is None:
        order = np.argsort(kept_query, kind="stable")
    else:
        composite = kept_query.astype(np.int64)
        composite *= int(key.max(initial=0)) + 1
        composite += key if every else key[keep]
        # The keys are unique (duplicates were refused), so every sort gives
        # this order, and the stable one is faster here: 57 against 91 ms on
        # 1.5 million lines grouped by query.
        order = np.argsort(composite, kind="stable")
        del composite
    if keep is not None:
        order = keep[order]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(kept_query, minlength=count))))
    return offsets.astype(np.int64), order


def _order_ties_by_docno(
    order: np.ndarray, offsets: np.ndarray, scores: np.ndarray, run: TrecFile
) -> bool:
    """Arrange each query's tied documents by ascending docno, in place; False if it cannot.

    ``order`` groups the run by query in file order, and ``scores`` are the
    grouped scores. Runs are written in rank order, so each query's scores
    usually run down (or up) the file and its ties sit side by side: then
    only the documents that share a score with a neighbour need their docnos
    compared, a few thousand where a full sort ranks every docno of the run
    (0.2 s for 1.5 million distinct docnos). Where the queries' scores do
    not all run one way (a shuffled run), this returns False, having
    changed nothing, and the caller ranks every docno. Decision 0040.
    """
    if len(scores) < 2:
        return True
    step = np.diff(scores)
    inside = np.ones(len(step), bool)  # steps between two documents of one query
    firsts = offsets[(offsets > 0) & (offsets < len(scores))]
    inside[firsts - 1] = False
    if not ((step[inside] <= 0).all() or (step[inside] >= 0).all()):
        return False
    same = inside & (step == 0)  # -0.0 == 0.0: the two tie, as in the ranking
    if not same.any():
        return True
    with_previous = np.concatenate(([False], same))
    starts = np.concatenate((same, [False])) & ~with_previous  # each tied block's first
    tied = np.flatnonzero(with_previous | starts)
    block = np.cumsum(starts[tied])
    codes = run.docno[order[tied]]
    # pyarrow.compute makes its functions at import, where pyright cannot see them.
    sort_indices = pc.sort_indices  # pyright: ignore[reportAttributeAccessIssue]
    if len(run.docnos) <= 2 * len(tied):
        # Most documents tie (scores with two decimals): rank the run's
        # distinct docnos once and read each tied document's rank, rather
        # than gather and sort a docno per tied document (0.73 s of 0.75 on
        # 1.5 million tied documents holding 16,000 distinct docnos).
        ranks = np.empty(len(run.docnos), np.int64)
        ranks[_read.numpy_of(sort_indices(run.docnos))] = np.arange(len(run.docnos))
        docno_rank = ranks[codes]
    else:
        by_docno = _read.numpy_of(sort_indices(run.docnos.take(codes)))
        docno_rank = np.empty(len(tied), np.int64)
        docno_rank[by_docno] = np.arange(len(tied))
    # The keys ascend block by block: timsort finds the runs, 3 times faster
    # than a quicksort here (and the keys are unique, so either gives this order).
    arranged = np.argsort(block * max(len(run.docnos), len(tied)) + docno_rank, kind="stable")
    order[tied] = order[tied[arranged]]
    return True


def join(
    qrels: TrecFile,
    run: TrecFile,
    *,
    complete: bool = False,
    docno_order: bool = False,
    single_precision: bool = False,
    docno_rank: bool = False,
) -> Joined:
    """Label the run from the qrels and group both by evaluated query.

    Args:
      qrels: From :func:`~lodestar._trec.read.read_qrels`.
      run: From :func:`~lodestar._trec.read.read_run`.
      complete: Evaluate every qrels query; those missing from the run get an
        empty list. Otherwise only queries in both files are evaluated.
      docno_order: Arrange each query's tied documents by ascending docno.
      single_precision: Round scores to float32 first, as trec_eval up to
        9.0.8 and pytrec_eval store them.
      docno_rank: Also give each retrieved document a number that orders
        tied documents of a query as their docnos' byte order does (item
        ``docno_rank``), for trec_eval's order of ties.

    Returns:
      A :class:`Joined`.

    Raises:
      ValueError: a document appears twice for one query in either file.
    """
    check_unique_documents(qrels)
    check_unique_documents(run)
    judged_queries, run_queries = set(qrels.query_ids), set(run.query_ids)
    evaluated = sorted(judged_queries if complete else judged_queries & run_queries)
    position = {qid: i for i, qid in enumerate(evaluated)}
    qrels_query = _evaluated_codes(qrels, position)
    run_query = _evaluated_codes(run, position)

    # Each run docno's code among the qrels' docnos (-1: never judged), then
    # (query, docno) keys looked up in the sorted qrels keys. The hash table
    # is built over the qrels' docnos, the fewer: over a run's 1.5 million
    # distinct docnos it took 276 ms, over its qrels' 150,000 30 ms.
    # (pyarrow.compute makes its functions at import, where pyright cannot
    # see them.)
    index_in = pc.index_in  # pyright: ignore[reportAttributeAccessIssue]
    in_qrels = _read.numpy_of(index_in(run.docnos, value_set=qrels.docnos), null=-1)
    width = max(len(qrels.docnos), 1)
    usable = qrels_query >= 0
    qrels_keys = qrels_query[usable].astype(np.int64) * width + qrels.docno[usable]
    qrels_grades = qrels.values[usable]
    by_key = np.argsort(qrels_keys)
    qrels_keys, qrels_grades = qrels_keys[by_key], qrels_grades[by_key]
    # A run holds millions of records, so its temporaries are made in place
    # and dropped as soon as they are used.
    judged_docno = in_qrels[run.docno] if len(run) else np.zeros(0, np.int32)
    pooled = (run_query >= 0) & (judged_docno >= 0)
    run_keys = run_query.astype(np.int64)
    run_keys *= width
    run_keys += judged_docno
    del judged_docno
    found = np.searchsorted(qrels_keys, run_keys)
    np.minimum(found, max(len(qrels_keys) - 1, 0), out=found)
    if len(qrels_keys):
        pooled &= qrels_keys[found] == run_keys
    del run_keys
    grade = np.where(pooled, qrels_grades[found] if len(qrels_keys) else 0, 0)
    grade = grade.astype(np.int64, copy=False)
    del found

    scores = run.values.astype(np.float32).astype(np.float64) if single_precision else run.values
    # (offsets, order, grouped scores), once each query's tied documents are
    # arranged by docno among their neighbours; otherwise every docno is ranked.
    grouped = None
    if docno_order:
        offsets, order = _group(run_query, len(evaluated))
        grouped_scores = scores[order]  # tied documents share a score: arranging keeps it
        if _order_ties_by_docno(order, offsets, grouped_scores, run):
            grouped = offsets, order, grouped_scores
    ranks = None
    if grouped is None and (docno_order or docno_rank) and len(run.docnos):
        ranks = np.empty(len(run.docnos), np.int32)
        # pyarrow.compute makes its functions at import, where pyright cannot see them.
        by_docno = pc.sort_indices(run.docnos)  # pyright: ignore[reportAttributeAccessIssue]
        ranks[_read.numpy_of(by_docno)] = np.arange(len(run.docnos))
        ranks = ranks[run.docno]
    if grouped is None:
        offsets, order = _group(run_query, len(evaluated), ranks if docno_order else None)
        grouped = offsets, order, scores[order]
    offsets, order, grouped_scores = grouped
    items = {
        "score": grouped_scores,
        "grade": grade[order],
        "judged": (pooled & (grade >= 0))[order],
        "pooled": pooled[order],
    }
    if docno_rank:
        # Without ranks, ties sit in docno order (or there are no documents):
        # their places order them as their docnos do.
        items["docno_rank"] = np.arange(len(order)) if ranks is None else ranks[order]
    retrieved = RaggedLists(offsets, items)
    judgment_offsets, judgment_order = _group(qrels_query, len(evaluated))
    judgments = RaggedLists(judgment_offsets, {"grade": qrels.values[judgment_order]})
    return Joined(
        evaluated,
        retrieved,
        judgments,
        sorted(judged_queries - run_queries),
        sorted(run_queries - judged_queries),
        run.runid,
    )
