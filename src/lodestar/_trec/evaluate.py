"""Evaluating every requested measure of a joined run, batch by batch, in one kernel.

Each batch of lists goes through one jitted kernel
(:func:`lodestar.metrics._kernel.evaluate_formulas`) that ranks it once and
evaluates every requested measure's formula on that ranking. What a measure
reads depends on the definitions:

* **lodestar's** (the default): the retrieved list is the whole world.
  Graded measures read the relevance, binary ones whether it reaches the
  relevance level; the ideal of NDCG ranks the retrieved list, AP and recall
  divide by the relevant documents retrieved. Negative relevance is refused.
* **trec_eval's** (``--trec-eval``): each measure also gets the per-query
  context it declares in the registry, computed from the whole qrels: the
  number of relevant judged documents (``num_relevant``) and of judged
  non-relevant ones (``num_judged_nonrelevant``, for bpref), the judged
  pool's labels for the ideal rankings of NDCG, G, ndcg_rel and Rndcg
  (``ideal_labels``), the largest judged grade (``max_label``, RBP's scale),
  which retrieved documents were judged (``judged``) and which were in the
  pool at all (``pooled``, infAP's sample). A negative judgment means "in
  the pool, not judged": never relevant, gain 0.

An unjudged document is never relevant under either.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from lodestar import _interrupt, _registry, _shapes
from lodestar._trec import batches as _batches
from lodestar._trec.join import Joined, RaggedLists
from lodestar._trec.names import Request
from lodestar._trec.read import TrecFile, refuse


class Definitions(NamedTuple):
    """How the measures are defined and the lists cut.

    Attributes:
      trec_eval: trec_eval's definitions (see the module docstring).
      relevance_level: A document is relevant to the binary measures when its
        judgment is at least this (trec_eval's ``-l``).
      ignore_ties: Rank tied scores one way (by descending docno, with the
        lists of ``join(..., docno_order=True)``) instead of averaging.
      max_documents: Only the first this many documents of each ranking
        count (trec_eval's ``-M``), or None.
      err_max_label: ERR's top grade, or None for the largest relevance in
        the whole qrels file.
      judged_only: Drop every retrieved document that is not judged (in the
        qrels with a relevance of at least 0) before ranking (trec_eval's
        ``-J``).
      num_documents: The number of documents in the collection, for
        utility's fourth coefficient (trec_eval's ``-N``; 0 if not given, as
        in trec_eval).
    """

    trec_eval: bool = False
    relevance_level: int = 1
    ignore_ties: bool = False
    max_documents: int | None = None
    err_max_label: float | None = None
    judged_only: bool = False
    num_documents: int | None = None


def check_relevance_level(level: int) -> None:
    """Refuse a negative relevance level.

    Raises:
      ValueError: ``level`` is below 0.
    """
    if level < 0:
        raise ValueError(
            f"relevance level {level} is negative; a level of 0 counts every judged "
            "document as relevant, and no level can count an unjudged one"
        )


def check_relevance(qrels: TrecFile, definitions: Definitions) -> None:
    """Refuse negative relevance under lodestar's definitions, and a negative level.

    Raises:
      ValueError: as described, naming the file and line.
    """
    check_relevance_level(definitions.relevance_level)
    if definitions.trec_eval or not (qrels.values < 0).any():
        return
    at = int(np.argmax(qrels.values < 0))
    raise refuse(
        qrels.path,
        qrels.line(at),
        f"relevance {qrels.values[at]} is negative; lodestar's measures take relevance at "
        "face value and refuse it. Pass --trec-eval to read negative judgments as not "
        "judged (never relevant, gain 0), as trec_eval does",
    )


def _measure(request: Request) -> _registry.Measure:
    """The registry entry of a request that is a measure.

    The report's own lines (``runid``, ``num_q``, ``relstring``) have none; the
    callers keep them away from evaluation and aggregation.
    """
    assert request.measure is not None, f"{request.name} is a line of the report, not a measure"
    return request.measure


def _options(request: Request, definitions: Definitions, max_grade: int) -> dict:
    options = {o.name: o.default for o in _measure(request).options}
    options.update(request.options)
    if "max_label" in options:
        ceiling = definitions.err_max_label
        options["max_label"] = float(max(max_grade, 1) if ceiling is None else ceiling)
    if "num_documents" in options and definitions.num_documents is not None:
        options["num_documents"] = definitions.num_documents
    return options


def _cutoff(request: Request, definitions: Definitions) -> int | None:
    cuts = [c for c in (request.k, definitions.max_documents) if c is not None]
    return min(cuts) if cuts else None


class _QueryContext(NamedTuple):
    """What the measures read of each query besides its ranked documents.

    Attributes:
      item_names: The per-document context the measures read (``judged``,
        ``pooled``), under trec_eval's definitions.
      per_list: Per-query arrays (``num_relevant``, ...), by context name.
      pool: Each query's judged positive gains in descending order (NDCG's
        ideal under trec_eval's definitions), or None.
      judged_pool: Each query's judged grades in descending order, for the
        other ideals, or None.
      needs_ideal: Some measure ranks an ideal list.
    """

    item_names: frozenset[str]
    per_list: dict[str, np.ndarray]
    pool: RaggedLists | None
    judged_pool: RaggedLists | None
    needs_ideal: bool


def _query_context(
    judgments: RaggedLists, requests: Sequence[Request], definitions: Definitions
) -> _QueryContext:
    level = definitions.relevance_level
    wanted = set()
    if definitions.trec_eval:
        wanted = {name for request in requests for name in _measure(request).context}
    grade = judgments.items["grade"]
    per_list = {}
    if "num_relevant" in wanted:
        per_list["num_relevant"] = judgments.totals(grade >= level)
    if "num_judged_nonrelevant" in wanted:
        per_list["num_judged_nonrelevant"] = judgments.totals((grade >= 0) & (grade < level))
    if "max_label" in wanted:
        # A negative judgment is read as unjudged, gain 0 (trec_eval), so a
        # query judged only negatively has a largest gain of 0, not below it.
        per_list["max_label"] = np.maximum(judgments.maxima(grade, 0), 0).astype(np.float64)
    # The ideal's linear gains, sorted here so that the kernel needs no sort:
    # under trec_eval's definitions the judged documents' (those of gain 0
    # change nothing), else the retrieved list's. Every measure with an ideal
    # reads them for linear gains (`_dcg.sorted_ideal_gains`); one with a gain
    # per level ranks the judged pool's labels itself.
    ideal = [r for r in requests if "ideal_labels" in _measure(r).context]
    needs_ideal = bool(ideal)
    pool = judged_pool = None
    if needs_ideal and definitions.trec_eval:
        pool = _descending_per_query(judgments, grade, grade > 0)
        if any(dict(r.options).get("gain", "linear") != "linear" for r in ideal):
            judged_pool = _descending_per_query(judgments, grade, grade >= 0)
    item_names = frozenset(wanted & {"judged", "pooled"})
    return _QueryContext(item_names, per_list, pool, judged_pool, needs_ideal)


def _labelled(batch: _batches.Batch, level: int) -> _batches.Batch:
    """The padded batch with its labels (0 unless judged) and relevance in place of its grades.

    Made a batch at a time rather than for every retrieved document at once:
    a run of ten million lines would hold 90 MB more through its evaluation.
    Padding (grade 0, not judged) gets label 0 and is not relevant.
    """
    items = dict(batch.items)
    grade, judged = items.pop("grade"), items["judged"]
    labels = grade.astype(np.float64)
    np.maximum(labels, 0, out=labels)
    labels[~judged] = 0
    items.update(label=labels, relevant=judged & (grade >= level))
    return batch._replace(items=items)


def _kernel_requests(requests: Sequence[Request], definitions: Definitions, max_grade: int):
    """Per request, ``(formula, static options)`` and ``(cut-off, traced options)``.

    Resolving a formula imports ``lodestar.metrics``, and with it JAX: the
    command line calls this only after its loader thread has imported them.
    """
    kernel_requests, traced = [], []
    for request in requests:
        formula = _measure(request).formula
        # Options that follow the cut-off (precision's divisor) take the
        # requested one: trec_eval's P_1000 divides by 1000 under -M100 too.
        options = formula.options(request.k, _options(request, definitions, max_grade))
        static = tuple(sorted((n, options.pop(n)) for n in formula.static))
        kernel_requests.append((formula, static))
        traced.append((_cutoff(request, definitions), options))
    return tuple(kernel_requests), traced


def _request_key(formula, static, options: dict, without=()) -> tuple:
    """A request's formula, static options and traced options (less ``without``), hashable."""
    return formula, static, tuple(sorted((o, v) for o, v in options.items() if o not in without))


def _mapped_groups(kernel_requests, traced) -> tuple[tuple[int, ...], ...]:
    """Requests of one formula that differ only in its mapped option.

    They are ``evaluate_formulas``'s ``mapped``: iprec_at_recall's eleven
    levels then run in one loop, one level's tie lattice alive at a time,
    rather than as eleven programs whose scratch memory XLA keeps at once
    (140 MB a batch at TREC depth).
    """
    groups: dict = {}
    for i, ((formula, static), (k, options)) in enumerate(
        zip(kernel_requests, traced, strict=True)
    ):
        names, chosen = formula.mapped_options, {**options, "k": k}
        # A mapped option is stacked into an array: it must be a number.
        if names and all(isinstance(chosen[n], (int, float)) for n in names):
            groups.setdefault(_request_key(formula, static, chosen, names), []).append(i)
    return tuple(tuple(group) for group in groups.values() if len(group) > 1)


def _shared_means(kernel_requests, traced) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The requests whose value is the mean of other requests' (``evaluate_formulas``'s ``means``).

    11pt_avg is the mean of iprec_at_recall at its levels; asked for beside
    every one of them (``-m all_trec``), it reads their values instead of
    ranking each level again, which under tie averaging took half of the
    kernel's time.
    """
    index = {}
    for i, ((formula, static), (k, options)) in enumerate(
        zip(kernel_requests, traced, strict=True)
    ):
        index.setdefault(_request_key(formula, static, {**options, "k": k}), i)
    means = []
    for j, ((formula, static), (k, options)) in enumerate(
        zip(kernel_requests, traced, strict=True)
    ):
        if formula.mean_of is None:
            continue
        inner, name = formula.mean_of
        terms = [
            index.get(_request_key(inner, static, {**options, "k": k, name: v}))
            for v in options[name]
        ]
        if terms and None not in terms:
            means.append((j, tuple(terms)))
    return tuple(means)


def _batch_arrays(
    bucket, batch, context: _QueryContext, *, definitions: Definitions, uses_order: bool
):
    """The kernel's arrays for one padded batch: labels, mask, context and tie blocks."""
    from lodestar import _host_ranking

    rows = len(batch.queries)
    ignore_ties = definitions.ignore_ties
    batch_context = {"relevant": batch.items["relevant"]}
    if definitions.trec_eval and ignore_ties:
        # trec_eval's order of arithmetic (RankedLists.in_trec_eval_order);
        # the caller then asks for the rank order too.
        batch_context["trec_order"] = np.ones(bucket.rows, bool)
    batch_context.update({name: batch.items[name] for name in context.item_names})
    for name, values in context.per_list.items():
        padded = np.zeros(bucket.rows)
        padded[:rows] = values[batch.queries]
        batch_context[name] = padded
    if context.judged_pool is not None:
        ideal = _padded_pool(context.judged_pool, batch.queries, bucket.rows)
        batch_context["ideal_labels"] = ideal.items["gain"]
        batch_context["ideal_where"] = ideal.where
    if context.pool is not None:
        pool = _padded_pool(context.pool, batch.queries, bucket.rows)
        batch_context["sorted_ideal_gains"] = pool.items["gain"]
    elif context.needs_ideal:
        batch_context["sorted_ideal_gains"] = -np.sort(-batch.items["label"], axis=-1)
    arrays = {"labels": batch.items["label"], "where": batch.where, "context": batch_context}
    # Ranked here, outside the jitted kernel, once per batch: the kernel then
    # takes the counts as data and serves every measure (decision 0018).
    above, tied = _host_ranking.host_tie_blocks(batch.items["score"], batch.where, ignore_ties)
    arrays["blocks"] = (above, tied)
    if uses_order:
        arrays["order"] = _host_ranking.host_rank_order(above, batch.where)
    return arrays


def evaluate_queries(
    joined: Joined,
    requests: Sequence[Request],
    definitions: Definitions,
    *,
    max_grade: int,
    batch_items: int = _batches.BATCH_ITEMS,
    progress: Callable[[int, int], None] | None = None,
    ready: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """Each request's value for every evaluated query, in ``joined.query_ids`` order.

    Args:
      joined: From :func:`~lodestar._trec.join.join`.
      requests: From :func:`~lodestar._trec.names.parse_all`.
      definitions: Which definitions, how ties are treated, the cut.
      max_grade: The largest relevance in the whole qrels (ERR's default top
        grade).
      batch_items: Items (rows times padded width) per padded batch.
      progress: Called as ``progress(done, total)`` with the number of
        batches done and in all, before the first batch and after each one.
      ready: Called once the first batch is padded, before JAX is imported:
        the command line waits there for the thread that loads JAX, so that
        the NumPy work before it overlaps the loading.

    Returns:
      float64 ``(queries,)`` per request name. A query with no relevant
      document, or (with ``complete``) no retrieved one, scores 0.
    """
    requests = list(requests)
    context = _query_context(joined.judgments, requests, definitions)
    results = {r.name: np.zeros(len(joined.query_ids)) for r in requests}
    names = ("score", "grade", "judged", "pooled")
    plan = _batches.plan(joined.retrieved.lengths, batch_items=batch_items)
    total, done = sum(bucket.batches for bucket in plan), 0
    level = definitions.relevance_level
    padded_batches = (
        (bucket, _labelled(batch, level))
        for bucket in plan
        for batch in _batches.batches(joined.retrieved, bucket, names)
    )
    first = next(padded_batches, None)
    if ready is not None:
        ready()
    if progress is not None:
        progress(done, total)
    kernel_requests, traced = _kernel_requests(requests, definitions, max_grade)
    # In trec_eval's order the formulas add their terms in rank order.
    trec_order = definitions.trec_eval and definitions.ignore_ties
    uses_order = trec_order or any(formula.uses_order for formula, _ in kernel_requests)
    mapped = _mapped_groups(kernel_requests, traced)
    means = _shared_means(kernel_requests, traced)
    import jax

    from lodestar.metrics import _kernel

    def collect(queries: np.ndarray, values) -> None:
        nonlocal done
        _interrupt.raise_if_interrupted()
        for request, value in zip(requests, values, strict=True):
            results[request.name][queries] = np.asarray(value)[: len(queries)]
        done += 1
        if progress is not None:
            progress(done, total)

    in_flight = None
    with jax.enable_x64(True):
        for bucket, batch in itertools.chain([first] if first else [], padded_batches):
            arrays = _batch_arrays(
                bucket, batch, context, definitions=definitions, uses_order=uses_order
            )
            # A cut-off past the batch's width cuts nothing, and clipped it fits
            # the kernel's integers (a measure that divides by the requested k
            # reads it from its options; see Formula.with_cutoff).
            options = tuple(
                {"k": bucket.width if k is None else min(k, bucket.width), **extra}
                for k, extra in traced
            )
            values = _kernel.evaluate_formulas(
                batch.items["score"],
                arrays,
                options,
                requests=kernel_requests,
                rank_k=None,
                ignore_ties=definitions.ignore_ties,
                mapped=mapped,
                means=means,
                store=True,
            )
            # The previous batch's values are read once this one is
            # dispatched, so that padding the next batch overlaps the kernel.
            if in_flight is not None:
                collect(*in_flight)
            in_flight = (batch.queries, values)
        if in_flight is not None:
            collect(*in_flight)
    _check_finite(results, joined.query_ids)
    return results


def _check_finite(results: dict[str, np.ndarray], query_ids: Sequence[bytes]) -> None:
    """Refuse a value that is not a finite number: never print NaN for a valid file.

    Every measure is finite on finite gains and parameters; what is not comes
    from gains or parameters whose sums overflow float64
    (``utility.1e308,...``), or whose sums for G pass 2**53, where float64
    rounds away the costs G discounts by (``G.1=1e154``): refused rather than
    printed.
    """
    for name, values in results.items():
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            query = query_ids[bad[0]].decode("utf-8", "backslashreplace")
            raise ValueError(
                f"{name} is not a finite number for query {query!r}: its gains or "
                f"parameters are too large for float64 (their sums overflow "
                f"{np.finfo(np.float64).max:.1e}, or for G pass 2**53, where the rounding "
                f"outgrows its costs); give smaller ones."
            )


def _descending_per_query(
    judgments: RaggedLists, grades: np.ndarray, keep: np.ndarray
) -> RaggedLists:
    """Per query, the grades that ``keep`` selects, in descending order."""
    kept = RaggedLists(judgments.offsets, {"gain": grades.astype(np.float64)}).select(keep)
    query = np.repeat(np.arange(len(kept.lengths)), kept.lengths)
    order = np.lexsort((-kept.items["gain"], query))
    return RaggedLists(kept.offsets, {"gain": kept.items["gain"][order]})


def _padded_pool(pool: RaggedLists, queries: np.ndarray, rows: int):
    """The pools of a batch's queries, zero-padded to a bucketed width."""
    width = _shapes.bucket(int(pool.lengths[queries].max(initial=0)), 8)
    return _batches.pad(pool, queries, rows, width, ("gain",))


def judged_only(joined: Joined) -> Joined:
    """``joined`` without the retrieved documents that were not judged (trec_eval's ``-J``).

    Each query keeps its judged documents in their order, so that ties among
    them break as before.
    """
    retrieved = joined.retrieved
    return joined._replace(retrieved=retrieved.select(retrieved.items["judged"]))


def aggregate(request: Request, values: np.ndarray, *, trec_eval: bool = False) -> float:
    """The ``all`` value of a request's per-query values, as trec_eval computes it.

    Args:
      request: The measure's request; its registry entry says whether the
        values are summed, averaged or averaged geometrically.
      values: float64 ``(queries,)`` in the order of the report.
      trec_eval: Add the values one query after the other, in the report's
        order, and take logarithms and exponentials with the C library's
        functions, as trec_eval does (``meas_acc.c``, ``meas_avg.c``):
        NumPy's pairwise sum and its own ``log`` round apart from it, which
        can change the fourth decimal of a mean that falls half-way
        (0.0072 against 0.0073 for ``P_1000``). Otherwise NumPy's sum.
    """
    how = _measure(request).aggregate
    if trec_eval:
        if how == "geometric":
            # trec_eval's MIN_GEO_MEAN floor keeps a query scoring 0 from zeroing the mean.
            values = np.array([math.log(max(value, 1e-5)) for value in values.tolist()])
        # `accumulate` adds in order, one value at a time, as trec_eval's loop.
        with np.errstate(over="ignore"):
            total = float(np.add.accumulate(values)[-1]) if len(values) else 0.0
        if how == "sum":
            return total
        mean = total / len(values) if len(values) else 0.0
        if how == "geometric":
            return math.exp(mean) if len(values) else mean
        return mean if math.isfinite(mean) else _mean_of_shares(values)
    if how == "sum":
        return float(values.sum())
    if how == "geometric":
        # trec_eval's MIN_GEO_MEAN floor keeps a query scoring 0 from zeroing the mean.
        return float(np.exp(np.mean(np.log(np.maximum(values, 1e-5))))) if len(values) else 0.0
    if not len(values):
        return 0.0
    with np.errstate(over="ignore"):
        mean = float(values.mean())
    return mean if np.isfinite(mean) else _mean_of_shares(values)


def _mean_of_shares(values: np.ndarray) -> float:
    """The mean of finite ``values`` whose sum overflowed (``utility.1e308,...``).

    Their mean is finite, and summing the shares cannot overflow (trec_eval
    itself would print ``inf``).
    """
    return float(np.sum(values / len(values)))


def tie_broken(joined: Joined, *, tie_key: str, highest_first: bool, level: int) -> Joined:
    """``joined`` with each query's documents arranged so that ranking ties by index breaks them.

    Ranking tied scores by descending index (``ignore_ties``) puts the item
    placed last first; placing each query's documents by ascending key
    (highest first) or descending key (highest last), stably, makes that
    tie-break give a measure's largest or smallest value
    (:func:`lodestar.metrics.tie_range`), the key being what raises the
    measure (the registry's ``tie_key``):

    - ``"relevance"``: whether the document is relevant at ``level`` (judged,
      grade at least ``level``), then its label (its grade, 0 if negative or
      unjudged). The binary measures read the first, the graded ones the
      second, and the order is extreme for both. (By label alone, ``-l 0``
      put a judged non-relevant document, which is relevant there, among the
      unjudged ones.)
    - ``"unjudged"``: whether the document is unjudged.
    - ``"judged_nonrelevant"``: whether it is judged and not relevant at
      ``level``.
    """
    retrieved = joined.retrieved
    items = retrieved.items
    judged = items["judged"]
    relevant = judged & (items["grade"] >= level)
    if tie_key == "relevance":
        keys = (np.where(judged, np.maximum(items["grade"], 0), 0), relevant.astype(np.int64))
    elif tie_key == "unjudged":
        keys = ((~judged).astype(np.int64),)
    else:
        assert tie_key == "judged_nonrelevant", tie_key
        keys = ((judged & ~relevant).astype(np.int64),)
    query = np.repeat(np.arange(len(retrieved.lengths)), retrieved.lengths)
    sign = 1 if highest_first else -1
    order = np.lexsort((*(sign * key for key in keys), query))
    moved = RaggedLists(retrieved.offsets, {name: values[order] for name, values in items.items()})
    return joined._replace(retrieved=moved)


def has_tie_range(request: Request) -> bool:
    """Whether ``--tie-range`` gives the request's exact range (its measure has a tie key)."""
    return request.measure is not None and request.measure.tie_key is not None


def evaluate_tie_range(joined: Joined, requests, definitions: Definitions, *, max_grade: int):
    """Each request's smallest and largest per-query values over the orders of the ties.

    Requests are evaluated in groups that share a tie key, each at its two
    orders; a request without one (:func:`has_tie_range`) is left out.

    Returns:
      ``(low, high)``: two dicts of per-query values, as :func:`evaluate_queries`
      returns, without the requests that have no range.
    """
    ordered = definitions._replace(ignore_ties=True)
    groups: dict[str, list[Request]] = {}
    for request in requests:
        tie_key = request.measure.tie_key if request.measure is not None else None
        if tie_key is not None:
            groups.setdefault(tie_key, []).append(request)
    low: dict[str, np.ndarray] = {}
    high: dict[str, np.ndarray] = {}
    for tie_key, group in groups.items():
        for highest_first, values in ((False, low), (True, high)):
            arranged = tie_broken(
                joined,
                tie_key=tie_key,
                highest_first=highest_first,
                level=definitions.relevance_level,
            )
            values.update(evaluate_queries(arranged, group, ordered, max_grade=max_grade))
    return low, high


def relstrings(joined: Joined, length: int) -> list[bytes]:
    """Per query, trec_eval's ``relstring``: the first ``length`` documents' judgments.

    One character per document in trec_eval's order (score, then docno,
    descending), as m_relstring.c writes it: the grade for 0 to 9, ``>``
    above 9, ``-`` for a document not in the qrels and ``.`` for one judged
    negative (in the pool, not judged: form_res_rels.c reads every negative
    judgment so, so trec_eval's ``<`` never appears). ``length`` is already cut
    to ``-M``. The string depends on one order of tied documents, so it is the
    same with and without ``--ignore-ties``.
    """
    from lodestar import _host_ranking

    retrieved = joined.retrieved
    items, strings = retrieved.items, []
    for start, end in zip(retrieved.offsets[:-1], retrieved.offsets[1:], strict=True):
        score, grade = items["score"][start:end], items["grade"][start:end]
        pooled, docno = items["pooled"][start:end], items["docno_rank"][start:end]
        top = _host_ranking.host_trec_order(score, docno)[:length]
        characters = []
        for g, p in zip(grade[top].tolist(), pooled[top].tolist(), strict=True):
            if not p:
                characters.append("-")
            elif g > 9:
                characters.append(">")
            elif g >= 0:
                characters.append(str(g))
            else:
                characters.append(".")
        strings.append("".join(characters).encode())
    return strings
