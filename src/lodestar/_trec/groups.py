"""Judgment groups (trec_eval's ``-R qrels_jg``): each group judges the run on its own.

A ``qrels_jg`` file names a judgment group (a user, an assessor) in the field
that plain qrels use for the iteration (``get_qrels_jg.c``). trec_eval's
``map_avgjg``, ``P_avgjg`` and ``Rprec_mult_avgjg`` (``m_*_avgjg.c``) evaluate
the run's ranking of a query against each of its groups' judgments, with that
group's relevant documents alone, and report the mean over the query's groups.

Here the qrels are read with each record's query as the pair ``qid jg``
(:func:`lodestar._trec.read.read_qrels` with ``judgment_groups``), the run's
records of a query are repeated under each of its pairs
(:func:`expand_run`), everything else evaluates the pairs as queries, and
:func:`average_over_groups` takes each query's mean over its pairs. Ties are
averaged (or, with ``--ignore-ties``, broken as trec_eval breaks them) within
each pair, as within any query.
"""

from __future__ import annotations

import numpy as np

from lodestar._files import read_bytes
from lodestar._trec.join import Joined, check_unique_documents
from lodestar._trec.read import TrecFile, content_lines


def query_of(pair: bytes) -> bytes:
    """The query of a ``qid jg`` pair (a query id holds no whitespace)."""
    return pair.partition(b" ")[0]


def expand_run(run: TrecFile, qrels: TrecFile) -> TrecFile:
    """The run with each query's records repeated under every judgment group of that query.

    A query of the run that no group judged keeps its id, and is reported as
    missing from the qrels as usual.

    Raises:
      ValueError: a document appears twice for one query of the run.
    """
    # Refused here, so that the message names the run's own query.
    check_unique_documents(run)
    pairs_of: dict[bytes, list[bytes]] = {}
    for pair in qrels.query_ids:
        pairs_of.setdefault(query_of(pair), []).append(pair)
    query_ids, source = [], []
    for code, qid in enumerate(run.query_ids):
        for pair in pairs_of.get(qid, [qid]):
            query_ids.append(pair)
            source.append(code)
    source_query = np.array(source, np.int64)
    order = np.argsort(run.query, kind="stable")
    counts = np.bincount(run.query, minlength=len(run.query_ids))
    starts = np.cumsum(counts) - counts
    lengths = counts[source_query]
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    records = order[np.repeat(starts[source_query], lengths) + within]
    if run.lines is not None:
        lines = run.lines[records]
    else:
        data = run.data
        if data is None:
            data = read_bytes(run.path, dash_is_stdin=True, refuse_nul=True)
        lines = content_lines(data)[records]
    return TrecFile(
        run.path,
        np.repeat(np.arange(len(query_ids), dtype=np.int32), lengths),
        query_ids,
        run.docno[records],
        run.docnos,
        run.values[records],
        run.runid,
        lines,
        None,
    )


def shares_a_query(joined: Joined) -> bool:
    """Whether two judgment groups of ``joined`` (pairs ``qid jg``) judge one query."""
    queries = [query_of(pair) for pair in joined.query_ids]
    return len(set(queries)) < len(queries)


def average_over_groups(
    joined: Joined, values: dict[str, np.ndarray]
) -> tuple[Joined, dict[str, np.ndarray]]:
    """Each query's mean over its judgment groups, and ``joined`` named by query.

    ``values`` hold one value per pair of ``joined.query_ids`` (in byte
    order, so a query's pairs are adjacent); the result holds one per query,
    in byte order. The per-item lists of ``joined`` stay per pair.
    """
    queries = [query_of(pair) for pair in joined.query_ids]
    distinct = sorted(set(queries))
    position = {qid: i for i, qid in enumerate(distinct)}
    index = np.array([position[qid] for qid in queries], np.int64)
    groups = np.bincount(index, minlength=len(distinct))
    averaged = {
        name: np.bincount(index, weights=value, minlength=len(distinct)) / groups
        for name, value in values.items()
    }
    joined = joined._replace(
        query_ids=distinct,
        missing_from_run=sorted({query_of(q) for q in joined.missing_from_run} - set(distinct)),
        missing_from_qrels=sorted({query_of(q) for q in joined.missing_from_qrels}),
    )
    return joined, averaged
