"""Evaluating and comparing runs from Python: files, dicts, DataFrames or Arrow tables.

:func:`evaluate` scores a run against its qrels and :func:`compare` tests
several runs against each other, with the same reader, join and kernels as
``lodestar evaluate``, so the numbers are the command line's, bitwise. A run
or qrels can be:

* a path to a TREC file (plain or gzip);
* nested dicts, as pytrec_eval and ranx take them: ``{qid: {docno: score}}``
  for a run and ``{qid: {docno: relevance}}`` for qrels;
* a pandas DataFrame or a pyarrow Table with columns ``q_id`` and ``doc_id``,
  and ``score`` (a run) or ``relevance`` (qrels; ``score`` is accepted too),
  as ranx names them.

Ids may be ``str``, ``bytes`` or integers. The conventions are the command
line's (``docs/cli.md``): only queries in both the qrels and the run are
evaluated, unless ``complete`` evaluates every qrels query (one missing from
the run scores 0); unjudged documents are not relevant; a query with no
relevant document scores 0 and stays in the mean; tied scores are averaged
over every order unless ``ignore_ties``.

>>> import lodestar
>>> qrels = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1}}
>>> run = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.8}, "q2": {"d1": 0.1, "d4": 0.5}}
>>> result = lodestar.evaluate(qrels, run, ["mrr", "P@2"])
>>> result.mean
{'mrr': 0.75, 'P@2': 0.625}
>>> result.per_query["q2"]
{'mrr': 0.5, 'P@2': 0.5}
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from lodestar import _parameters
from lodestar._trec import evaluate as _evaluate
from lodestar._trec import groups as _groups
from lodestar._trec import join as _join
from lodestar._trec import names as _names
from lodestar._trec import read as _read

# What the command line takes from the TREC layer, named here once: it
# imports no module of lodestar._trec, only this application layer.
from lodestar._trec.evaluate import Definitions as Definitions
from lodestar._trec.evaluate import aggregate as aggregate
from lodestar._trec.evaluate import check_relevance_level as check_relevance_level
from lodestar._trec.evaluate import has_tie_range as has_tie_range
from lodestar._trec.evaluate import relstrings as relstrings
from lodestar._trec.join import Joined as Joined
from lodestar._trec.names import Request as Request
from lodestar._trec.names import in_trec_order as in_trec_order
from lodestar._trec.names import names_relstring as names_relstring
from lodestar._trec.names import parse as parse
from lodestar._trec.read import TrecFile as TrecFile
from lodestar._trec.read import read_run as read_run
from lodestar._trec.read import show as show

LARGEST_WHOLE_NUMBER = _parameters.LARGEST_WHOLE_NUMBER
"""The largest cut-off, gain level or ``-N`` (trec_eval's C long: 2**63 - 1)."""

__all__ = ["Evaluation", "compare", "evaluate", "use_compilation_cache"]

DEFAULT_MEASURES = ("ndcg@10", "ndcg", "mrr", "map", "P@10", "recall@100")


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The values of one run: per query, and over the queries.

    Attributes:
      query_ids: The evaluated queries, in byte order of their ids (the
        command line's order). Ids that are not valid UTF-8 keep their other
        bytes as lone surrogates (``str.encode("utf-8", "surrogateescape")``
        gives the bytes back).
      values: Per measure name, the per-query values, float64
        ``(queries,)`` in ``query_ids`` order.
      mean: Per measure name, the value over the queries as trec_eval
        computes its ``all`` line: the mean, or the sum for counts
        (``num_ret``), or the geometric mean for ``gm_map``.
      options: The options the run was evaluated with.
      missing_from_run: Queries of the qrels with no document in the run.
      missing_from_qrels: Queries of the run with no judgment.
      tie_low: With ``tie_range``, per measure name, the per-query values
        with every tie broken to the measure's lowest (for a measure of
        relevance, relevant-last); else None. Measures that no order of the
        ties is known to take to their extremes (``G``, ``infAP``) are left
        out.
      tie_high: Likewise, the highest (relevant-first).
    """

    query_ids: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    mean: dict[str, float]
    options: dict[str, Any]
    missing_from_run: tuple[str, ...] = ()
    missing_from_qrels: tuple[str, ...] = ()
    tie_low: Mapping[str, np.ndarray] | None = None
    tie_high: Mapping[str, np.ndarray] | None = None
    aggregates: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def tie_range(self) -> dict[str, tuple[float, float]] | None:
        """Per measure, ``(low, high)`` over the queries, or None.

        Ties are broken per query, independently, so the range of the value
        over the queries is the pair of the values of the two tie-breaks.
        ``G`` and ``infAP`` have none (see ``tie_low``).
        """
        if self.tie_low is None or self.tie_high is None:
            return None
        return {
            name: (
                self.aggregates[name](self.tie_low[name]),
                self.aggregates[name](self.tie_high[name]),
            )
            for name in self.tie_low
        }

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{query: {measure: value}}``."""
        return {
            qid: {name: float(values[i]) for name, values in self.values.items()}
            for i, qid in enumerate(self.query_ids)
        }

    def to_pandas(self):
        """The per-query values as a pandas DataFrame: one row per query, one column per measure.

        Raises:
          ImportError: pandas is not installed.
        """
        import pandas as pd

        frame = pd.DataFrame({name: np.asarray(v) for name, v in self.values.items()})
        frame.index = pd.Index(list(self.query_ids), name="q_id")
        return frame


def _text(qid: bytes) -> str:
    return qid.decode("utf-8", "surrogateescape")


def _columns(table, *, qrels: bool, name: str, groups: bool = False):
    """(qids, docnos, values) of a DataFrame or Arrow table with ranx's column names.

    With ``groups`` the table names each judgment's group in a ``group``
    column, and each query id is the pair ``qid jg``.
    """
    columns = list(table.column_names) if hasattr(table, "column_names") else list(table.columns)
    wanted = ("relevance", "score") if qrels else ("score",)
    value = next((c for c in wanted if c in columns), None)
    needed = ("q_id", "doc_id", "group") if groups else ("q_id", "doc_id")
    if any(c not in columns for c in needed) or value is None:
        raise ValueError(
            f"{name} needs columns {', '.join(needed)} and {' or '.join(wanted)}; got {columns}"
        )
    if hasattr(table, "column_names"):  # pyarrow
        qids, docnos, values, *group = (
            table.column(c).to_pylist() for c in (*needed[:2], value, *needed[2:])
        )
    else:
        qids, docnos, values, *group = (
            table[c].tolist() for c in (*needed[:2], value, *needed[2:])
        )
    if groups:
        qids = [_group_pair(q, g) for q, g in zip(qids, group[0], strict=True)]
    return qids, docnos, values


def _group_pair(qid, group) -> bytes:
    """A judgment group's query as the qrels_jg reader names it: ``qid jg``."""
    parts = [_read.identifier(x, what="query ids and judgment groups") for x in (qid, group)]
    if any(part.split() != [part] for part in parts):
        raise ValueError(
            f"qrels: a query id or judgment group holds whitespace or is empty: {qid!r}, {group!r}"
        )
    return b" ".join(parts)


STANDARD_INPUT_TWICE = (
    "'-' is given more than once, but standard input can be read only once; "
    "give the other files as paths"
)


def check_standard_input_once(sources) -> None:
    """Refuse ``-`` (standard input) among ``sources`` more than once.

    Read twice, the second file would be empty and the report would say that
    no query is in both, which hides the mistake.

    Raises:
      ValueError: ``-`` is more than one of ``sources``.
    """
    paths = [os.fsdecode(s) for s in sources if isinstance(s, str | bytes | os.PathLike)]
    if paths.count("-") > 1:
        raise ValueError(STANDARD_INPUT_TWICE)


def _load(
    source, *, qrels: bool, judgment_groups: bool = False, name: str | None = None
) -> _read.TrecFile:
    """A qrels or run from a path, nested dicts, a DataFrame or an Arrow table.

    With ``judgment_groups`` the qrels name each judgment's group: a qrels_jg
    file, ``{qid: {group: {docno: relevance}}}``, or a table with a ``group``
    column. ``name`` names an in-memory source in messages (``run2``: one of
    :func:`compare`'s runs); by default ``qrels`` or ``run``.
    """
    kind = "qrels" if qrels else "run"
    label = kind if name is None else name
    groups = judgment_groups and qrels
    if isinstance(source, bytes):
        source = os.fsdecode(source)  # a path in the file system's encoding
    if isinstance(source, str | os.PathLike):
        return _read.read_qrels(source, judgment_groups=groups) if qrels else _read.read_run(source)
    if isinstance(source, Mapping):
        qids, docnos, values = [], [], []
        for qid, documents in source.items():
            judged = documents.items() if groups and isinstance(documents, Mapping) else None
            inner = [(qid, documents)] if judged is None else judged
            for group, documents in inner:
                if not isinstance(documents, Mapping):
                    shape = "a dict of groups, each a dict" if groups else "a dict"
                    raise TypeError(
                        f"a {kind} dict maps each query id to {shape} of document ids; "
                        f"query {qid!r} maps to {type(documents).__name__}"
                    )
                query = _group_pair(qid, group) if groups else qid
                for docno, value in documents.items():
                    qids.append(query)
                    docnos.append(docno)
                    values.append(value)
        return _read.from_records(label, qids, docnos, values, qrels=qrels)
    if hasattr(source, "column_names") or hasattr(source, "columns"):
        qids, docnos, values = _columns(source, qrels=qrels, name=label, groups=groups)
        return _read.from_records(label, list(qids), list(docnos), list(values), qrels=qrels)
    raise TypeError(
        f"{kind} must be a path, a dict, a pandas DataFrame or a pyarrow Table; "
        f"got {type(source).__name__}"
    )


class Evaluated(NamedTuple):
    """What :func:`run_joined` gives the command line and :func:`evaluate`.

    Attributes:
      joined: The :class:`~lodestar._trec.join.Joined` lists, named by query
        (by ``qid jg`` pair under judgment groups: the lists stay per pair).
      values: The per-query values per request name.
      extremes: With ``tie_range``, the pair ``(low, high)`` of per-query
        values of the measures that have a range; else None.
      withheld: Why no range is given although ``tie_range`` asked for one,
        or None.
    """

    joined: _join.Joined
    values: dict[str, np.ndarray]
    extremes: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None
    withheld: str | None = None


NO_RANGE_OVER_GROUPS = (
    "no tie range is given under judgment groups when a query has more than one: one "
    "order of the ties need not give every group its smallest or largest value"
)


def read_qrels(
    path, *, definitions: Definitions, judgment_groups: bool = False, progress=None
) -> TrecFile:
    """A qrels file, refused at once if a relevance does not suit ``definitions``.

    With ``judgment_groups`` the second field names the group;
    ``progress`` is :func:`lodestar._trec.read.read_run`'s.
    """
    qrels = _read.read_qrels(path, judgment_groups=judgment_groups, progress=progress)
    _evaluate.check_relevance(qrels, definitions)
    return qrels


def measure_requests(requests: Sequence[Request]) -> list[Request]:
    """The requests that name measures: not ``runid``, ``num_q`` or ``relstring``."""
    return _names.measures(requests)


def parse_measures(names, *, judgment_groups: bool, option: str, sets: str) -> list[Request]:
    """The requests named, checked against the qrels' format (:func:`check_measures_and_groups`).

    Raises:
      ValueError: an unknown or malformed name, or a measure that does not
        suit the qrels' format.
    """
    requests = _names.parse_all(names)
    check_measures_and_groups(requests, judgment_groups=judgment_groups, option=option, sets=sets)
    return requests


def check_measures_and_groups(requests, *, judgment_groups: bool, option: str, sets: str):
    """Refuse a measure that does not suit the qrels' format.

    Under judgment groups only the measures averaged over them are evaluated;
    without them those measures have nothing to average. ``option`` names
    the switch (``-R qrels_jg``, ``judgment_groups=True``) and ``sets`` the
    set of all three (``-m qrels_jg``).

    Raises:
      ValueError: as described, naming the measure.
    """
    for request in requests:
        averaged = _names.over_judgment_groups(request)
        if judgment_groups and not averaged and request.family not in ("runid", "num_q"):
            raise ValueError(
                f"{option} evaluates the measures averaged over judgment groups "
                f"(map_avgjg, P_avgjg, Rprec_mult_avgjg, or {sets}); {request.name} is not one"
            )
        if averaged and not judgment_groups:
            raise ValueError(
                f"{request.name} averages over judgment groups: give {option}, with qrels "
                "that name each judgment's group (a qrels_jg file's second field)"
            )


def _refuse_first(file: _read.TrecFile, offending, describe) -> None:
    """Refuse the first record where ``offending`` holds, naming its line."""
    if offending.any():
        at = int(np.argmax(offending))
        raise _read.refuse(file.path, file.line(at), describe(file.values[at]))


def _check_err_ceiling(qrels: _read.TrecFile, requests, ceiling: float | None) -> None:
    """Refuse an ERR top grade below a relevance of the qrels, naming its line.

    ERR's stopping probability of a grade above the top one would exceed 1.
    """
    if ceiling is None or not any(
        r.measure is not None and r.measure.key == "err" for r in requests
    ):
        return
    _refuse_first(
        qrels,
        qrels.values > ceiling,
        lambda value: (
            f"relevance {value} is above ERR's top grade {ceiling:g} "
            "(--err-max-label); give a top grade at least as large as every relevance"
        ),
    )


def _check_single_precision(run: _read.TrecFile) -> None:
    """Refuse a score that float32 cannot hold, naming its line."""
    _refuse_first(
        run,
        np.abs(run.values) > np.finfo(np.float32).max,
        lambda value: (
            f"score {float(value)!r} does not fit in single precision "
            "(--single-precision rounds scores to float32, whose largest value is about 3.4e38)"
        ),
    )


def run_joined(
    qrels_file: _read.TrecFile,
    run_file: _read.TrecFile,
    requests: Sequence[_names.Request],
    definitions: _evaluate.Definitions,
    *,
    complete: bool,
    judgment_groups: bool = False,
    single_precision: bool = False,
    tie_range: bool = False,
    docno_rank: bool = False,
    progress=None,
    ready=None,
) -> Evaluated:
    """Check, join and evaluate: every step the command line and :func:`evaluate` share.

    With ``judgment_groups`` (qrels read with their groups) the run is
    evaluated against each group's judgments and each query's values are the
    mean over its groups. ``docno_rank`` is
    :func:`lodestar._trec.join.join`'s; ``progress`` and ``ready`` are
    :func:`lodestar._trec.evaluate.evaluate`'s.

    Raises:
      ValueError: the input is refused (a relevance above ERR's top grade, a
        score past float32 with ``single_precision``), or no query is
        evaluated.
    """
    requests = _names.measures(requests)
    _check_err_ceiling(qrels_file, requests, definitions.err_max_label)
    if single_precision:
        _check_single_precision(run_file)
    if judgment_groups:
        run_file = _groups.expand_run(run_file, qrels_file)
    _evaluate.check_relevance(qrels_file, definitions)
    joined = _join.join(
        qrels_file,
        run_file,
        complete=complete,
        docno_order=definitions.ignore_ties,
        single_precision=single_precision,
        docno_rank=docno_rank,
    )
    if not joined.query_ids:
        raise ValueError(
            f"no query is in both the qrels and the run {run_file.path!r}, so there is "
            "nothing to evaluate"
        )
    if definitions.judged_only:
        joined = _evaluate.judged_only(joined)
    max_grade = int(qrels_file.values.max(initial=0))
    values = _evaluate.evaluate_queries(
        joined, requests, definitions, max_grade=max_grade, progress=progress, ready=ready
    )
    extremes = None
    if tie_range:
        extremes = _evaluate.evaluate_tie_range(joined, requests, definitions, max_grade=max_grade)
    if not judgment_groups:
        return Evaluated(joined, values, extremes)
    pairs = joined
    joined, values = _groups.average_over_groups(pairs, values)
    if extremes is not None and _groups.shares_a_query(pairs):
        # Each group's extremes come from its own order of the ties; their
        # mean bounds the query's range but need not reach it.
        return Evaluated(joined, values, None, NO_RANGE_OVER_GROUPS)
    if extremes is not None:
        low, high = (_groups.average_over_groups(pairs, e)[1] for e in extremes)
        extremes = (low, high)
    return Evaluated(joined, values, extremes)


def _check_switches(caller: str, **values) -> dict[str, bool]:
    """Each on/off keyword as a bool, refused in scikit-learn's words if it is not one."""
    from lodestar import _validation

    return {
        name: _validation.check_bool(value, name=name, caller=caller)
        for name, value in values.items()
    }


def _check_cut(relevance_level, max_documents, *, caller: str) -> tuple[int, int | None]:
    """``relevance_level`` (an int >= 0) and ``max_documents`` (an int >= 1 or None)."""
    from lodestar import _validation

    return (
        _validation.check_int(relevance_level, name="relevance_level", caller=caller, low=0),
        _validation.check_int_or_none(max_documents, name="max_documents", caller=caller, low=1),
    )


def _requests(measures, *, judgment_groups: bool = False) -> list[_names.Request]:
    """The measures asked for (None: the command line's default set, or ``qrels_jg``).

    ``runid`` and ``num_q`` (from ``all_trec``) are the result's own, and the
    ``relstring`` line that ``all_trec`` holds is the command line's report,
    left out; ``relstring`` asked for by name is refused.
    """
    if measures is None:
        measures = ("qrels_jg",) if judgment_groups else DEFAULT_MEASURES
    if isinstance(measures, str):
        measures = [measures]
    if not isinstance(measures, Sequence) or not all(isinstance(m, str) for m in measures):
        raise TypeError(
            f"measures must be a measure name or a sequence of them, such as "
            f"['ndcg@10', 'map']; got {measures!r}"
        )
    measures = list(measures)
    if _names.names_relstring(measures):
        raise ValueError(
            "relstring is a line of the command line's report, not a measure; "
            "lodestar.evaluate has no value for it"
        )
    requests = _names.parse_all(measures)
    check_measures_and_groups(
        requests, judgment_groups=judgment_groups, option="judgment_groups=True", sets="'qrels_jg'"
    )
    return _names.measures(requests)


def evaluate(
    qrels,
    run,
    measures: str | Sequence[str] | None = None,
    *,
    complete: bool = False,
    ignore_ties: bool = False,
    trec_eval: bool = False,
    relevance_level: int = 1,
    max_documents: int | None = None,
    judged_only: bool = False,
    judgment_groups: bool = False,
    num_documents: int | None = None,
    err_max_label: float | None = None,
    single_precision: bool = False,
    tie_range: bool = False,
) -> Evaluation:
    """Score a run against its qrels: the command line's ``lodestar evaluate``, in Python.

    Args:
      qrels: The judgments: a path, ``{qid: {docno: relevance}}``, or a
        DataFrame or Arrow table (``q_id``, ``doc_id``, ``relevance``).
      run: The ranking: a path, ``{qid: {docno: score}}``, or a DataFrame or
        Arrow table (``q_id``, ``doc_id``, ``score``).
      measures: Measure names as the command line takes them (``"ndcg@10"``,
        ``"map"``, trec_eval's ``"P.5,10"`` or ``"ndcg_cut_10"``). None: the
        command line's default six (NDCG@10, NDCG, reciprocal rank, MAP,
        P@10, recall@100), or ``"qrels_jg"`` with ``judgment_groups``.
      complete: Evaluate every qrels query; one missing from the run scores 0
        (trec_eval's ``-c``).
      ignore_ties: Rank tied scores by descending document id, as trec_eval
        does, instead of averaging over every order.
      trec_eval: trec_eval's definitions (NDCG's ideal over every judged
        document, AP and recall over every relevant one, negative judgments
        read as unjudged); see ``docs/cli.md``.
      relevance_level: A document is relevant to the binary measures when its
        judgment is at least this (trec_eval's ``-l``).
      max_documents: Only the first this many documents of each ranking count
        (trec_eval's ``-M``).
      judged_only: Drop every unjudged retrieved document before ranking
        (trec_eval's ``-J``); not with ``max_documents``.
      judgment_groups: The qrels name each judgment's group (trec_eval's
        ``-R qrels_jg``): a qrels_jg file (the group in the second field),
        ``{qid: {group: {docno: relevance}}}``, or a table with a ``group``
        column. Only the measures averaged over a query's groups
        (``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``) are evaluated;
        each group judges the ranking on its own.
      num_documents: The number of documents in the collection, for
        ``utility`` (trec_eval's ``-N``).
      err_max_label: ERR's top grade; None takes the largest relevance in
        the qrels.
      single_precision: Round scores to float32 first, as trec_eval up to
        9.0.8 and pytrec_eval do.
      tie_range: Also evaluate with every tie broken to each measure's lowest
        and highest value (relevant-last and relevant-first for a measure of
        relevance; :func:`lodestar.metrics.tie_range`): how far ties can move
        each value. ``G`` and ``infAP`` get no range, and neither does any
        measure under ``judgment_groups`` when a query has two or more groups
        (a warning says why).

    Returns:
      An :class:`Evaluation`: ``.mean``, ``.per_query``, ``.to_pandas()``,
      and ``.tie_range`` with ``tie_range``.

    Raises:
      ValueError: an unknown measure; a malformed record (the message names
        the file and line, or for a dict or table the query and document:
        a relevance that is not an integer in int64's range, a score that is
        not finite); no query to evaluate; ``-`` (standard input) given as
        both files.
      TypeError: a source of another kind, or ids that are not str, bytes
        or int; ``measures`` not a name or a sequence of names.
      InvalidParameterError: ``relevance_level`` not an int >= 0,
        ``max_documents`` not None and not an int >= 1, ``num_documents``
        not None and not an int in ``[0, 2**63 - 1]``, ``err_max_label`` not None and not a
        float in (0, inf), or a switch that is not a bool.
      OSError: a file cannot be read.

    Example:
      >>> import lodestar
      >>> result = lodestar.evaluate(
      ...     {"q1": {"a": 1, "b": 0}}, {"q1": {"a": 0.5, "b": 0.5}}, ["mrr", "map"]
      ... )
      >>> result.mean  # a and b tie: 1/1 and 1/2 are equally likely
      {'mrr': 0.75, 'map': 0.75}

    References:
      Voorhees & Harman (eds.), *TREC: Experiment and Evaluation in
      Information Retrieval*, MIT Press, 2005.
    """
    from lodestar import _validation

    caller = "evaluate"
    switches = _check_switches(
        caller,
        complete=complete,
        ignore_ties=ignore_ties,
        trec_eval=trec_eval,
        judged_only=judged_only,
        judgment_groups=judgment_groups,
        single_precision=single_precision,
        tie_range=tie_range,
    )
    requests = _requests(measures, judgment_groups=switches["judgment_groups"])
    relevance_level, max_documents = _check_cut(relevance_level, max_documents, caller=caller)
    # trec_eval's -N is a C long, and utility's kernel reads it as int64.
    num_documents = _validation.Interval(int, 0, _parameters.LARGEST_WHOLE_NUMBER, "both").check(
        num_documents, name="num_documents", caller=caller, none=True
    )
    if err_max_label is not None:
        err_max_label = _validation.check_positive_float(
            err_max_label, name="err_max_label", caller=caller
        )
    if switches["judged_only"] and max_documents is not None:
        # trec_eval cuts at -M, then drops the unjudged; over tied scores the
        # cut's expectation and the drop do not commute.
        raise ValueError(
            "judged_only and max_documents together are not supported; give one of them"
        )
    definitions = _evaluate.Definitions(
        trec_eval=switches["trec_eval"],
        relevance_level=relevance_level,
        ignore_ties=switches["ignore_ties"],
        max_documents=max_documents,
        err_max_label=err_max_label,
        judged_only=switches["judged_only"],
        num_documents=num_documents,
    )
    check_standard_input_once([qrels, run])
    qrels_file = _load(qrels, qrels=True, judgment_groups=switches["judgment_groups"])
    run_file = _load(run, qrels=False)
    joined, values, extremes, withheld = run_joined(
        qrels_file,
        run_file,
        requests,
        definitions,
        complete=switches["complete"],
        judgment_groups=switches["judgment_groups"],
        single_precision=switches["single_precision"],
        tie_range=switches["tie_range"],
    )
    if withheld is not None:
        warnings.warn(withheld, UserWarning, stacklevel=2)
    tie_low, tie_high = extremes if extremes is not None else (None, None)
    return Evaluation(
        query_ids=tuple(_text(q) for q in joined.query_ids),
        values={r.name: values[r.name] for r in requests},
        mean={
            r.name: _evaluate.aggregate(r, values[r.name], trec_eval=definitions.trec_eval)
            for r in requests
        },
        options={
            "measures": [r.name for r in requests],
            **switches,
            "relevance_level": relevance_level,
            "max_documents": max_documents,
            "num_documents": num_documents,
            "err_max_label": err_max_label,
        },
        missing_from_run=tuple(_text(q) for q in joined.missing_from_run),
        missing_from_qrels=tuple(_text(q) for q in joined.missing_from_qrels),
        tie_low=tie_low,
        tie_high=tie_high,
        aggregates={
            r.name: functools.partial(_evaluate.aggregate, r, trec_eval=definitions.trec_eval)
            for r in requests
        },
    )


def compare(
    qrels,
    runs: Mapping[str, Any] | Sequence[Any],
    measures: str | Sequence[str] = ("ndcg@10", "map"),
    *,
    test: str = "t",
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = 100_000,
    samples: int = 10_000,
    seed: int = 0,
    complete: bool = False,
    ignore_ties: bool = False,
    trec_eval: bool = False,
    relevance_level: int = 1,
):
    """Evaluate several runs on the same queries and test every pair.

    Each run is evaluated as :func:`evaluate` does, then
    :func:`lodestar.stats.compare_scores` tests every pair of runs on every
    measure, paired over the queries, with a correction across the pairs of
    each measure. The queries are those every run was evaluated on: with
    ``complete`` every qrels query (a query missing from a run scores 0);
    otherwise the queries in the qrels and in every run.

    Args:
      qrels: The judgments, as :func:`evaluate` takes them.
      runs: ``{name: run}``, or a sequence of runs (named by their path, or
        ``run1``, ``run2``, ...); each as :func:`evaluate` takes it.
      measures: Measure names, as :func:`evaluate` takes them.
      test: ``"t"``, ``"randomization"`` or ``"bootstrap"``.
      alpha: The significance level.
      correction: ``"holm"``, ``"bonferroni"`` or ``"none"``.
      permutations: Sign flips of the randomization test.
      samples: Resamples of the bootstrap test.
      seed: The seed of the randomization and bootstrap tests.
      complete: As in :func:`evaluate`.
      ignore_ties: As in :func:`evaluate`.
      trec_eval: As in :func:`evaluate`.
      relevance_level: As in :func:`evaluate`.

    Returns:
      A :class:`lodestar.stats.Comparison`; its ``queries`` is the number of
      queries tested.

    Raises:
      ValueError: fewer than 2 runs, fewer than 2 common queries, or as
        :func:`evaluate` and :func:`lodestar.stats.compare_scores` raise.

    Example:
      >>> import lodestar
      >>> qrels = {f"q{i}": {"a": 1, "b": 0} for i in range(6)}
      >>> good = {f"q{i}": {"a": 0.9, "b": 0.1} for i in range(6)}
      >>> bad = {f"q{i}": {"a": 0.1, "b": 0.9} for i in range(6)}
      >>> comparison = lodestar.compare(qrels, {"good": good, "bad": bad}, ["mrr"])
      >>> comparison.better_than("good", "mrr")
      ('bad',)

    References:
      Smucker, Allan & Carterette, "A comparison of statistical significance
      tests for information retrieval evaluation", CIKM 2007.
      https://doi.org/10.1145/1321440.1321528
    """
    caller = "compare"
    switches = _check_switches(
        caller, complete=complete, ignore_ties=ignore_ties, trec_eval=trec_eval
    )
    requests = _requests(measures)
    relevance_level, _ = _check_cut(relevance_level, None, caller=caller)
    if not isinstance(runs, Mapping):
        runs = {
            (os.fspath(run) if isinstance(run, str | os.PathLike) else f"run{i + 1}"): run
            for i, run in enumerate(runs)
        }
    if len(runs) < 2:
        raise ValueError(f"compare needs at least 2 runs; got {len(runs)}")
    definitions = _evaluate.Definitions(
        trec_eval=switches["trec_eval"],
        relevance_level=relevance_level,
        ignore_ties=switches["ignore_ties"],
    )
    check_standard_input_once([qrels, *runs.values()])
    qrels_file = _load(qrels, qrels=True)
    run_files = {name: _load(run, qrels=False, name=name) for name, run in runs.items()}
    return compare_joined(
        qrels_file,
        run_files,
        requests,
        definitions,
        complete=switches["complete"],
        test=test,
        alpha=alpha,
        correction=correction,
        permutations=permutations,
        samples=samples,
        seed=seed,
    ).comparison


class Compared(NamedTuple):
    """What :func:`compare_joined` gives the command line and :func:`compare`.

    Attributes:
      comparison: The :class:`lodestar.stats.Comparison`.
      scores: Per run name, per request name, the per-query values that were
        tested, in ``queries`` order.
      queries: The queries tested: those evaluated in every run, in byte order.
    """

    comparison: Any
    scores: dict[str, dict[str, np.ndarray]]
    queries: list[bytes]


def compare_joined(
    qrels_file: _read.TrecFile,
    run_files: Mapping[str, _read.TrecFile],
    requests: Sequence[_names.Request],
    definitions: _evaluate.Definitions,
    *,
    complete: bool,
    test: str,
    alpha: float,
    correction: str,
    permutations: int,
    samples: int,
    seed: int,
    progress=None,
    ready=None,
) -> Compared:
    """Evaluate every run and test every pair: the steps the command line and :func:`compare` share.

    ``progress`` (with a ``begin(stage)`` method) is told of each stage,
    ``evaluating NAME`` and ``testing (TEST)``, and follows each evaluation's
    batches; ``ready(stage)`` gives the evaluation's ``ready`` hook
    (:func:`run_joined`).

    Raises:
      ValueError: fewer than 2 queries are evaluated in every run, or as
        :func:`run_joined` and :func:`lodestar.stats.compare_scores` raise.
    """
    requests = _names.measures(requests)
    evaluated = {}
    for name, run_file in run_files.items():
        stage = f"evaluating {name}"
        if progress is not None:
            progress.begin(stage)
        joined, values, *_ = run_joined(
            qrels_file,
            run_file,
            requests,
            definitions,
            complete=complete,
            progress=progress,
            ready=None if ready is None else ready(stage),
        )
        evaluated[name] = (joined.query_ids, values)
    queries = sorted(set.intersection(*(set(ids) for ids, _ in evaluated.values())))
    if len(queries) < 2:
        raise ValueError(
            f"compare needs at least 2 queries evaluated in every run; got {len(queries)}"
        )
    scores = {}
    for name, (ids, values) in evaluated.items():
        position = {q: i for i, q in enumerate(ids)}
        rows = np.array([position[q] for q in queries])
        scores[name] = {r.name: np.asarray(values[r.name])[rows] for r in requests}
    if progress is not None:
        progress.begin(f"testing ({test})")
    from lodestar import stats  # JAX: only once the command line's loader is done

    comparison = stats.compare_scores(
        scores,
        test=test,
        alpha=alpha,
        correction=correction,
        permutations=permutations,
        samples=samples,
        seed=seed,
    )
    return Compared(comparison, scores, queries)


CACHE_VARIABLE = "LODESTAR_COMPILATION_CACHE"
SIZE_VARIABLE = "LODESTAR_COMPILATION_CACHE_SIZE"
_SIZE = re.compile(r"\s*([0-9]+)\s*([kmg]?)i?b?\s*", re.IGNORECASE)


def cache_size_limit() -> int:
    """The cache's size limit in bytes: ``$LODESTAR_COMPILATION_CACHE_SIZE``, else 256 MiB.

    The setting is a number of bytes, or a number followed by K, M or G
    (powers of 1,024). One that cannot be read is not guessed at: the
    default is used, and a :class:`RuntimeWarning` (the program's note) says so.
    """
    from lodestar import _executables

    setting = os.environ.get(SIZE_VARIABLE, "")
    if not setting:
        return _executables.DEFAULT_MAX_BYTES
    matched = _SIZE.fullmatch(setting)
    if matched is not None and int(matched[1]) > 0:
        return int(matched[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[matched[2].lower()]
    _executables.note(
        f"{SIZE_VARIABLE}={setting!r} is not a size such as 512M or 2G; "
        f"keeping at most {_executables.DEFAULT_MAX_BYTES >> 20}M"
    )
    return _executables.DEFAULT_MAX_BYTES


def default_cache_directory() -> str | None:
    """The command line's cache: ``$LODESTAR_COMPILATION_CACHE``, or the user's cache directory.

    ``$XDG_CACHE_HOME/lodestar/jax``, else ``~/.cache/lodestar/jax``; None
    when ``LODESTAR_COMPILATION_CACHE=0`` turns the cache off.
    """
    setting = os.environ.get(CACHE_VARIABLE, "")
    if setting == "0":
        return None
    if setting:
        return setting
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lodestar", "jax")


def use_compilation_cache(
    directory: str | os.PathLike | None = None, *, max_size: int | None = None
) -> str | None:
    """Keep the compiled kernels on disk, so that a new process evaluates without compiling.

    Most of a first :func:`evaluate` or :func:`compare` in a fresh process is
    XLA compiling its kernels (seconds for ``all_trec`` or a significance
    test). ``lodestar evaluate`` and ``lodestar compare`` keep them in JAX's
    persistent compilation cache for their own process; a library must not
    change a user's JAX configuration unasked, so from Python the cache is
    this opt-in. It sets JAX's ``jax_compilation_cache_dir`` for the whole
    process (every program JAX compiles from then on is kept, lodestar's and
    others'), with no minimum compile time or size, as the command line does;
    and it keeps the evaluation's own lowered programs in its subdirectory
    ``lodestar-kernels``, so that a new process does not even trace them.

    A compiled program runs when it is loaded, so the directory must belong
    to the user and be writable by no one else (as ssh and GnuPG require of
    their files): a directory that others can write (a shared ``/tmp`` folder,
    a group's cache) is not used, and a :class:`RuntimeWarning` says why and
    how to fix it. A new directory is made readable by its owner alone.

    Args:
      directory: Where to keep the programs. None takes the command line's:
        ``$LODESTAR_COMPILATION_CACHE``, else ``$XDG_CACHE_HOME/lodestar/jax``
        or ``~/.cache/lodestar/jax``, and none at all with
        ``LODESTAR_COMPILATION_CACHE=0``.
      max_size: The most bytes each of the two stores (JAX's cache and
        lodestar's programs) may hold; past it, the least recently used
        entries are removed. None takes ``$LODESTAR_COMPILATION_CACHE_SIZE``
        (bytes, or a number with K, M or G), else 256 MiB.

    Returns:
      The directory in use, or None if there is none, it cannot be created or
      written (JAX would warn at every compilation), or it is not trusted:
      JAX's configuration is then left as it was.

    Raises:
      ValueError: If ``max_size`` is not a positive number of bytes.

    Example:
      At the top of a script that evaluates or compares runs::

          import lodestar

          lodestar.use_compilation_cache()
          lodestar.compare("qrels.txt", ["bm25.run", "dense.run"])

      A directory that cannot be created is not used, and JAX's
      configuration stays as it was:

      >>> import lodestar
      >>> print(lodestar.use_compilation_cache("/dev/null/cache"))
      None
    """
    if max_size is not None and (
        isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 0
    ):
        raise ValueError(f"max_size must be a positive number of bytes, got {max_size!r}.")
    used, _ = open_compilation_cache(directory, max_size=max_size)
    return used


def open_compilation_cache(
    directory: str | os.PathLike | None, *, max_size: int | None
) -> tuple[str | None, bool]:
    """The work of :func:`use_compilation_cache`: ``(directory in use or None, whether untrusted)``.

    An untrusted directory is refused with a note (:data:`lodestar._executables.note`)
    that says why; one that cannot be created or written is refused without
    one (the program notes it only where the user named it).
    """
    import jax

    from lodestar import _executables

    if max_size is None:
        max_size = cache_size_limit()
    directory = default_cache_directory() if directory is None else os.fspath(directory)
    if directory is None:
        return None, False
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        writable = os.access(directory, os.W_OK | os.X_OK)
    except OSError:
        writable = False
    if not writable:
        return None, False
    refusal = _executables.untrusted(directory)
    if refusal is not None:
        _executables.note(f"not using the compilation cache: {refusal}")
        return None, True
    jax.config.update("jax_compilation_cache_dir", directory)
    # lodestar's kernels compile in well under JAX's default threshold of a second.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # JAX prunes its cache under a file lock from the filelock package (a
    # dependency of lodestar's; without it JAX would fail at the first compilation).
    if importlib.util.find_spec("filelock") is not None:
        jax.config.update("jax_compilation_cache_max_size", max_size)
    _executables.keep_in(directory, max_bytes=max_size)
    return directory, False
