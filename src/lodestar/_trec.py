"""TREC qrels and runs: reading, joining and bucketing into padded batches.

A **qrels** file holds one judgment per line, ``qid iter docno rel``; a **run**
holds one retrieved document per line, ``qid Q0 docno rank score tag``. Both
may be gzip-compressed (recognised by the magic bytes, whatever the name).
Fields are separated by ASCII whitespace. Blank lines, and lines whose first
non-blank character is ``#``, are skipped, as trec_eval does.

Reading is strict: a line with the wrong number of fields, a relevance that is
not an integer, a score that is not a finite number, or a document listed twice
for one query (in either file) is refused with the file, the 1-based line and
what was expected. trec_eval refuses duplicates too (``form_res_rels.c``:
"duplicate docs"); it reads a malformed number as 0 (``atof``/``atol``) where
lodestar refuses it.

The reader splits each line once with :meth:`bytes.split`, which also checks
its field count, and parses the numbers in bulk with :class:`float` and
:class:`int`. Decision 0007 records the measurements behind that choice.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

_GZIP_MAGIC = b"\x1f\x8b"
QRELS_FIELDS = ("qid", "iter", "docno", "rel")
RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "tag")


@dataclass(frozen=True)
class TrecFile:
    """The lines of a qrels or run file, one entry per non-blank line.

    Attributes:
      path: The file name, for messages.
      query_ids: Every distinct query id, in order of first appearance.
      query: int64 ``(lines,)`` index into ``query_ids`` of each line.
      docnos: The document id of each line.
      values: ``(lines,)`` the relevance (int64, qrels) or score (float64, run).
      lines: int64 ``(lines,)`` 1-based line numbers in the file.
    """

    path: str
    query_ids: list[bytes]
    query: np.ndarray
    docnos: list[bytes]
    values: np.ndarray
    lines: np.ndarray


def show(token: bytes) -> str:
    """A token as it appears in messages and output."""
    return token.decode("utf-8", "backslashreplace")


def _read_bytes(path: str | os.PathLike) -> bytes:
    with open(path, "rb") as file:
        data = file.read()
    if data.startswith(_GZIP_MAGIC):
        data = gzip.decompress(data)
    return data


def _refuse(path: str, line: int, message: str) -> ValueError:
    return ValueError(f"{path}:{line}: {message}")


def _expected(fields: tuple[str, ...]) -> str:
    return f"{len(fields)} fields ({' '.join(fields)})"


def _split(path: str, data: bytes, fields: tuple[str, ...], value_field: int):
    """Split every non-blank, non-comment line into ``fields``.

    One :meth:`bytes.split` per line checks the field count for free; it
    measured faster than splitting whole chunks and counting each line's
    fields with NumPy (decision 0007).

    Returns:
      The qid, docno and value tokens, and the int64 line number of each.
    """
    width = len(fields)
    qids, docnos, values, skipped = [], [], [], []
    comments = b"#" in data
    lines = data.split(b"\n")
    for number, line in enumerate(lines, 1):
        tokens = line.split()
        if len(tokens) == width and not (comments and tokens[0].startswith(b"#")):
            # Straight into flat lists of bytes: a list per line would be
            # tracked by the cyclic garbage collector, several times slower.
            qids.append(tokens[0])
            docnos.append(tokens[2])
            values.append(tokens[value_field])
        elif tokens and not tokens[0].startswith(b"#"):
            count = len(tokens)
            raise _refuse(
                path,
                number,
                f"expected {_expected(fields)}, got {count} field" + ("s" if count != 1 else ""),
            )
        else:
            skipped.append(number)
    numbers = np.arange(1, len(lines) + 1)
    if skipped:
        numbers = np.delete(numbers, np.array(skipped) - 1)
    return qids, docnos, values, numbers


def _numbers(path: str, tokens: list[bytes], lines: np.ndarray, *, kind: type, what: str):
    """Parse ``tokens`` as ``kind`` (int or float) in bulk; word the first failure.

    Python's ``int`` and ``float`` also accept ``1_000``, which C's ``atol`` and
    ``atof`` (and so trec_eval) read as 1, so digit separators are refused.
    """
    dtype = np.int64 if kind is int else np.float64
    try:
        if b"_" in b" ".join(tokens):
            raise ValueError
        values = np.fromiter(map(kind, tokens), dtype, len(tokens))
    except (ValueError, OverflowError):
        values = None
    finite = values is not None and (kind is int or bool(np.isfinite(values).all()))
    if finite:
        return values
    for token, line in zip(tokens, lines, strict=True):
        try:
            number = kind(token) if b"_" not in token else None
        except (ValueError, OverflowError):
            number = None
        if number is None or (kind is float and not np.isfinite(number)):
            raise _refuse(path, int(line), f"expected {what}, got {show(token)!r}")
        if kind is int and abs(number) >= 2**63:
            raise _refuse(path, int(line), f"relevance {show(token)} is out of range")
    raise AssertionError("unreachable: bulk parse failed but no token did")  # pragma: no cover


def _index_queries(tokens: list[bytes]) -> tuple[list[bytes], np.ndarray]:
    query_ids = list(dict.fromkeys(tokens))
    index = dict(zip(query_ids, range(len(query_ids)), strict=True))
    return query_ids, np.fromiter(map(index.__getitem__, tokens), np.int64, len(tokens))


def _read(path, fields, value_field, *, kind, what) -> TrecFile:
    name = os.fspath(path)
    data = _read_bytes(path)
    qids, docnos, value_tokens, lines = _split(name, data, fields, value_field)
    del data
    values = _numbers(name, value_tokens, lines, kind=kind, what=what)
    query_ids, query = _index_queries(qids)
    return TrecFile(name, query_ids, query, docnos, values, lines)


def read_qrels(path: str | os.PathLike) -> TrecFile:
    """Read a qrels file: ``qid iter docno rel`` per line; ``rel`` an integer."""
    return _read(path, QRELS_FIELDS, 3, kind=int, what="an integer relevance (field 4)")


def read_run(path: str | os.PathLike) -> TrecFile:
    """Read a run: ``qid Q0 docno rank score tag`` per line; ``score`` finite.

    The rank column is not read: documents are ranked by score, as trec_eval
    ranks them.
    """
    return _read(path, RUN_FIELDS, 4, kind=float, what="a finite number as the score (field 5)")


# --------------------------------------------------------------------------
# Joining a run with its qrels
# --------------------------------------------------------------------------


def _refuse_duplicate(file: TrecFile, first: int, second: int) -> ValueError:
    first, second = sorted((first, second), key=lambda i: file.lines[i])
    return _refuse(
        file.path,
        int(file.lines[second]),
        f"document {show(file.docnos[second])!r} appears twice for query "
        f"{show(file.query_ids[file.query[second]])!r} (first on line "
        f"{file.lines[first]}); each document may be listed once per query",
    )


def check_unique_documents(file: TrecFile) -> None:
    """Refuse a document listed twice for one query.

    Documents are compared by a 64-bit key of (query, hash of the docno); the
    rare equal keys are then compared as bytes, so a hash collision is never
    mistaken for a duplicate.
    """
    if len(file.docnos) < 2:
        return
    hashes = np.fromiter(map(hash, file.docnos), np.int64, len(file.docnos))
    if len(file.query_ids) < 2**23:
        # One int64 key, the query above 40 bits of the hash, sorts several
        # times faster than two keys; equal keys are compared exactly below.
        keys = (file.query << 40) | (hashes & (2**40 - 1))
        order = np.argsort(keys)
        same = np.diff(keys[order]) == 0
    else:  # pragma: no cover - more than eight million queries
        order = np.lexsort((hashes, file.query))
        same = (np.diff(hashes[order]) == 0) & (np.diff(file.query[order]) == 0)
    for at in np.flatnonzero(same):
        first, second = int(order[at]), int(order[at + 1])
        if file.docnos[first] == file.docnos[second]:
            raise _refuse_duplicate(file, first, second)
    # A docno repeated three times with a colliding hash between two of its
    # copies is still caught: equal docnos have equal hashes, so every copy
    # sits in one run of equal keys and some adjacent pair of them is equal.


@dataclass(frozen=True)
class Lists:
    """Ragged per-query lists in compressed-row form.

    Attributes:
      offsets: int64 ``(queries + 1,)``; query ``q`` owns items
        ``offsets[q]:offsets[q + 1]``.
      scores: float64 ``(items,)``.
      labels: int64 ``(items,)``.
    """

    offsets: np.ndarray
    scores: np.ndarray
    labels: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Items per query."""
        return np.diff(self.offsets)


@dataclass(frozen=True)
class Joined:
    """A run joined with its qrels, one list per evaluated query.

    Attributes:
      query_ids: The evaluated queries, sorted by id in byte order (trec_eval's
        order).
      retrieved: The run's documents per query, labelled from the qrels
        (unjudged: 0). With ``docno_order`` the tied documents of a query sit
        in ascending docno order.
      judged: Every qrels label per query, retrieved or not.
      missing_from_run: Queries of the qrels with no line in the run.
      missing_from_qrels: Queries of the run with no line in the qrels.
    """

    query_ids: list[bytes]
    retrieved: Lists
    judged: Lists
    missing_from_run: list[bytes]
    missing_from_qrels: list[bytes]


def _offsets(query: np.ndarray, n_queries: int) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(np.bincount(query, minlength=n_queries))))


def _docno_order_within_ties(order, query, scores, docnos) -> np.ndarray:
    """Reorder ``order`` (sorted by query, then score) so ties go by docno.

    Only documents that tie with another in their query are touched, so the
    Python-level sort runs over the ties alone.
    """
    sorted_query, sorted_scores = query[order], scores[order]
    same = (sorted_query[1:] == sorted_query[:-1]) & (sorted_scores[1:] == sorted_scores[:-1])
    if not same.any():
        return order
    tied = np.zeros(len(order), bool)
    tied[1:] |= same
    tied[:-1] |= same
    block = np.cumsum(np.concatenate(([True], ~same)))  # block id per sorted slot
    slots = np.flatnonzero(tied)
    items = order[slots]
    # Slots of one block are contiguous, so sorting the tied items by
    # (block, docno) and writing them back into the same slots keeps every
    # block in place.
    ranked = sorted(range(len(slots)), key=lambda i: (block[slots[i]], docnos[items[i]]))
    order = order.copy()
    order[slots] = items[ranked]
    return order


def join(
    qrels: TrecFile,
    run: TrecFile,
    *,
    complete: bool = False,
    docno_order: bool = False,
    single_precision: bool = False,
) -> Joined:
    """Label the run from the qrels and group both by evaluated query.

    Args:
      qrels: From :func:`read_qrels`.
      run: From :func:`read_run`.
      complete: Evaluate every qrels query; those missing from the run get an
        empty list. Otherwise only queries in both files are evaluated.
      docno_order: Arrange tied documents by ascending docno, so that ranking
        ties by descending index ranks them by descending docno, trec_eval's
        order.
      single_precision: Round scores to float32 first, as trec_eval up to
        9.0.8 and pytrec_eval store them.

    Returns:
      A :class:`Joined`.

    Raises:
      ValueError: a document appears twice for one query in either file.
    """
    check_unique_documents(qrels)
    check_unique_documents(run)
    run_queries = set(run.query_ids)
    judged_queries = set(qrels.query_ids)
    evaluated = sorted(judged_queries if complete else judged_queries & run_queries)
    position = {qid: i for i, qid in enumerate(evaluated)}
    missing = len(evaluated)

    def evaluated_index(file: TrecFile) -> np.ndarray:
        per_query = np.array([position.get(q, missing) for q in file.query_ids], np.int64)
        return per_query[file.query] if len(file.query) else np.zeros(0, np.int64)

    qrels_query = evaluated_index(qrels)
    run_query = evaluated_index(run)

    # Labels for the run: the docno's id among the qrels docnos, then the
    # (query, docno id) pair looked up among the sorted qrels pairs.
    docno_ids = dict(zip(qrels.docnos, range(len(qrels.docnos)), strict=True))
    n_docnos = max(len(qrels.docnos), 1)
    qrels_key = qrels_query * n_docnos + np.fromiter(
        map(docno_ids.__getitem__, qrels.docnos), np.int64, len(qrels.docnos)
    )
    qrels_sorted = np.argsort(qrels_key)
    run_docno = np.fromiter(
        map(docno_ids.get, run.docnos, itertools.repeat(-1)), np.int64, len(run.docnos)
    )
    run_key = run_query * n_docnos + run_docno
    found = np.searchsorted(qrels_key[qrels_sorted], run_key)
    found = np.minimum(found, max(len(qrels_key) - 1, 0))
    judged = (
        (run_docno >= 0) & (qrels_key[qrels_sorted[found]] == run_key)
        if len(qrels_key)
        else np.zeros(len(run_key), bool)
    )
    run_labels = np.where(judged, qrels.values[qrels_sorted[found]] if len(qrels_key) else 0, 0)

    scores = run.values.astype(np.float32).astype(np.float64) if single_precision else run.values
    keep = run_query < missing
    if docno_order:
        order = np.lexsort((scores, run_query))
        order = _docno_order_within_ties(order, run_query, scores, run.docnos)
    else:
        order = np.argsort(run_query, kind="stable")
    order = order[keep[order]]
    retrieved = Lists(
        _offsets(run_query[keep], missing), scores[order], run_labels[order].astype(np.int64)
    )
    qrels_keep = qrels_query < missing
    qrels_order = np.argsort(qrels_query, kind="stable")
    qrels_order = qrels_order[qrels_keep[qrels_order]]
    judged_lists = Lists(
        _offsets(qrels_query[qrels_keep], missing),
        np.zeros(len(qrels_order)),
        qrels.values[qrels_order],
    )
    return Joined(
        evaluated,
        retrieved,
        judged_lists,
        sorted(judged_queries - run_queries),
        sorted(run_queries - judged_queries),
    )


# --------------------------------------------------------------------------
# Padded batches
# --------------------------------------------------------------------------

# Every batch holds about this many items (rows times padded width), so memory
# stays bounded and one compiled kernel serves every full batch of a width.
BATCH_ITEMS = 1 << 20
MIN_WIDTH = 8


def bucket_width(length: int) -> int:
    """The padded width of a list: the next power of two, at least ``MIN_WIDTH``."""
    return max(MIN_WIDTH, 1 << max(length - 1, 0).bit_length())


@dataclass(frozen=True)
class Batch:
    """Lists of one bucket, padded to a common width.

    Attributes:
      queries: int64 ``(rows,)`` the evaluated query of each real row.
      scores: float64 ``(rows_padded, width)``.
      labels: int64 ``(rows_padded, width)``.
      where: bool ``(rows_padded, width)``; False marks padding (and whole
        padding rows past ``len(queries)``).
    """

    queries: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    where: np.ndarray


def _buckets(lengths: np.ndarray, batch_items: int) -> list[tuple[int, np.ndarray]]:
    """``(width, queries)`` groups: lists by :func:`bucket_width`, narrow ones merged up.

    A bucket is merged into the next wider one while both together still fit
    in one batch: padding a few short lists costs less than compiling one
    more shape, and a long list never pads a full batch of short ones.
    """
    widths = np.array([bucket_width(int(n)) for n in lengths], np.int64)
    groups, carried = [], np.zeros(0, np.int64)
    distinct = np.unique(widths)
    for index, width in enumerate(distinct):
        queries = np.concatenate((carried, np.flatnonzero(widths == width)))
        wider = int(distinct[index + 1]) if index + 1 < len(distinct) else None
        merged = (
            wider is not None
            and (len(queries) + int((widths == wider).sum())) * wider <= batch_items
        )
        if merged:
            carried = queries
        else:
            groups.append((int(width), np.sort(queries)))
            carried = np.zeros(0, np.int64)
    return groups


def batches(lists: Lists, *, batch_items: int = BATCH_ITEMS) -> Iterator[Batch]:
    """Cut ``lists`` into padded batches, bucketed by length.

    Lists are grouped by :func:`bucket_width`, so one long list pads only its
    own bucket. Rows are padded to a power of two too (whole padding rows),
    so a stream of buckets compiles a handful of shapes.
    """
    for width, queries in _buckets(lists.lengths, batch_items):
        per_batch = max(1, batch_items // width)
        for start in range(0, len(queries), per_batch):
            chosen = queries[start : start + per_batch]
            rows = min(per_batch, 1 << max(len(chosen) - 1, 0).bit_length())
            yield _pad(lists, chosen, rows, width)


def batch_count(lists: Lists, *, batch_items: int = BATCH_ITEMS) -> int:
    """How many batches :func:`batches` yields."""
    return sum(
        -(-len(queries) // max(1, batch_items // width))
        for width, queries in _buckets(lists.lengths, batch_items)
    )


def _pad(lists: Lists, queries: np.ndarray, rows: int, width: int) -> Batch:
    lengths = lists.lengths[queries]
    row = np.repeat(np.arange(len(queries)), lengths)
    column = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    source = np.repeat(lists.offsets[queries], lengths) + column
    scores = np.zeros((rows, width))
    labels = np.zeros((rows, width), np.int64)
    where = np.zeros((rows, width), bool)
    scores[row, column] = lists.scores[source]
    labels[row, column] = lists.labels[source]
    where[row, column] = True
    return Batch(queries, scores, labels, where)


# --------------------------------------------------------------------------
# Measures
# --------------------------------------------------------------------------

# Every name a measure may be given (lower case), with the kind it means.
# trec_eval's own names are accepted too: recip_rank, ndcg_cut_10, P_10,
# recall_100, map_cut_10, success_10, and the forms with a dot (P.10).
_KINDS = {
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "dcg": "dcg",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "map": "map",
    "ap": "map",
    "map_cut": "map",
    "p": "P",
    "precision": "P",
    "recall": "recall",
    "hits": "hits",
    "success": "hits",
    "err": "err",
}
# The lodestar.metrics function behind each kind.
METRIC_FUNCTIONS = {
    "ndcg": "ndcg",
    "dcg": "dcg",
    "mrr": "reciprocal_rank",
    "map": "average_precision",
    "P": "precision",
    "recall": "recall",
    "hits": "hits",
    "err": "err",
}
_MEASURE_RE = re.compile(r"([A-Za-z_]+?)(?:[@._](\d+))?")


@dataclass(frozen=True)
class Measure:
    """One requested measure: a kind and an optional cut-off.

    Attributes:
      kind: One of ``ndcg``, ``dcg``, ``mrr``, ``map``, ``P``, ``recall``,
        ``hits``, ``err``.
      k: The cut-off, or None for the whole list.
    """

    kind: str
    k: int | None

    @property
    def name(self) -> str:
        """The name the measure is reported under, such as ``ndcg@10``."""
        return self.kind if self.k is None else f"{self.kind}@{self.k}"


def parse_measure(text: str) -> Measure:
    """Read a measure name: ``ndcg@10``, ``map``, ``P@5``, or trec_eval's ``P_5``.

    Raises:
      ValueError: the name is unknown, or its cut-off is below 1.
    """
    match = _MEASURE_RE.fullmatch(text)
    kind = _KINDS.get(match[1].lower()) if match else None
    if kind is None:
        known = ", ".join(sorted(set(METRIC_FUNCTIONS)))
        raise ValueError(
            f"unknown measure {text!r}; expected one of {known}, optionally with a "
            "cut-off such as ndcg@10 (trec_eval's names, such as ndcg_cut_10 and P_10, "
            "work too)"
        )
    k = None if match[2] is None else int(match[2])
    if k == 0:
        raise ValueError(f"measure {text!r} has cut-off 0; a cut-off must be at least 1")
    return Measure(kind, k)


def metric_function(kind: str):
    """The lodestar.metrics function behind a measure kind.

    Raises:
      ValueError: this installation of lodestar does not have it.
    """
    from lodestar import metrics

    function = getattr(metrics, METRIC_FUNCTIONS[kind], None)
    if function is None:
        raise ValueError(
            f"measure {kind!r} needs lodestar.metrics.{METRIC_FUNCTIONS[kind]}, which this "
            "version of lodestar does not have"
        )
    return function


@dataclass(frozen=True)
class Definitions:
    """How the measures are defined: lodestar's own, or trec_eval's.

    Attributes:
      trec_eval: Use trec_eval's definitions: negative relevance counts as
        not relevant with gain 0; NDCG's ideal ranks every judged document of
        the query (``ndcg``: untruncated, ``ndcg@k``: cut at k); AP and recall
        divide by the query's relevant documents in the qrels, retrieved or
        not. Otherwise lodestar's: the ideal ranks the retrieved list, AP and
        recall divide by the relevant documents retrieved, and negative
        relevance is refused.
      relevance_level: A document is relevant, for the binary measures (mrr,
        map, P, recall, hits), when its relevance is at least this
        (trec_eval's ``-l``).
      ignore_ties: Rank tied scores one way (by descending index; with the
        lists from :func:`join` with ``docno_order``, by descending docno)
        instead of averaging over every order.
    """

    trec_eval: bool = False
    relevance_level: int = 1
    ignore_ties: bool = False


def check_relevance(qrels: TrecFile, definitions: Definitions) -> None:
    """Refuse negative relevance under lodestar's definitions."""
    if definitions.trec_eval or not (qrels.values < 0).any():
        return
    at = int(np.argmax(qrels.values < 0))
    raise _refuse(
        qrels.path,
        int(qrels.lines[at]),
        f"relevance {qrels.values[at]} is negative; lodestar's measures take relevance at "
        "face value and refuse it. Pass --trec-eval to read negative judgments as not "
        "relevant (gain 0), as trec_eval does",
    )


def _per_query_totals(lists: Lists, values: np.ndarray) -> np.ndarray:
    totals = np.concatenate(([0], np.cumsum(values)))
    return totals[lists.offsets[1:]] - totals[lists.offsets[:-1]]


def _gains(labels: np.ndarray) -> np.ndarray:
    # trec_eval gives negative judgments gain 0; under lodestar's definitions
    # they were refused before this point, so clipping changes nothing there.
    return np.maximum(labels, 0).astype(np.float64)


def evaluate(
    joined: Joined,
    measures: list[Measure],
    definitions: Definitions,
    *,
    batch_items: int = BATCH_ITEMS,
    progress=None,
) -> dict[str, np.ndarray]:
    """Each measure's value for every evaluated query, in ``joined.query_ids`` order.

    A query with no relevant document, or (with ``complete``) no retrieved
    one, scores 0 on every measure.

    Args:
      joined: From :func:`join`.
      measures: From :func:`parse_measure`.
      definitions: Which definitions, and how ties are treated.
      batch_items: Items (rows times padded width) per padded batch.
      progress: Called with the number of batches done after each one, or None.

    Returns:
      float64 ``(queries,)`` per measure name.
    """
    import jax

    functions = {m.kind: metric_function(m.kind) for m in measures}
    dcg = metric_function("dcg")
    n_queries = len(joined.query_ids)
    level = definitions.relevance_level
    relevant_judged = _per_query_totals(joined.judged, joined.judged.labels >= level)
    max_label = max(1, int(joined.judged.labels.max(initial=0)))
    results = {m.name: np.zeros(n_queries) for m in measures}
    with jax.enable_x64(True):
        ideals = {}
        if definitions.trec_eval:
            for k in {m.k for m in measures if m.kind == "ndcg"}:
                ideals[k] = np.zeros(n_queries)
                for batch in batches(joined.judged, batch_items=batch_items):
                    gains = _gains(batch.labels)
                    value = dcg(gains, gains, k=k, where=batch.where, ignore_ties=True)
                    ideals[k][batch.queries] = np.asarray(value)[: len(batch.queries)]
        for batch in batches(joined.retrieved, batch_items=batch_items):
            rows = len(batch.queries)
            gains = _gains(batch.labels)
            relevant = (batch.labels >= level).astype(np.float64)
            # trec_eval divides AP and recall by the relevant judged documents;
            # lodestar's functions divide by the relevant ones in the list.
            in_list = (relevant * batch.where).sum(axis=-1)[:rows]
            in_qrels = relevant_judged[batch.queries]
            to_qrels = np.divide(in_list, in_qrels, out=np.zeros(rows), where=in_qrels > 0)
            common = dict(ignore_ties=definitions.ignore_ties, where=batch.where)
            for measure in measures:
                function, k = functions[measure.kind], measure.k
                if measure.kind == "err":
                    value = function(batch.scores, gains, k=k, max_label=max_label, **common)
                elif measure.kind in ("ndcg", "dcg"):
                    if measure.kind == "ndcg" and definitions.trec_eval:
                        function = dcg  # divided by the ideal over the qrels below
                    value = function(batch.scores, gains, k=k, **common)
                else:
                    value = function(batch.scores, relevant, k=k, **common)
                value = np.asarray(value)[:rows]
                if definitions.trec_eval and measure.kind == "ndcg":
                    ideal = ideals[k][batch.queries]
                    value = np.divide(value, ideal, out=np.zeros(rows), where=ideal > 0)
                elif definitions.trec_eval and measure.kind in ("map", "recall"):
                    value = value * to_qrels
                results[measure.name][batch.queries] = value
            if progress is not None:
                progress(1)
    return results
