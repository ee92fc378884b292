"""The registry of exact measures: each one declared once, and everything else iterates.

A measure is a function of :mod:`lodestar.metrics` plus what the rest of the
project needs to know about it: its formula (so that ``lodestar evaluate`` can
evaluate many measures on one ranking), the labels it reads, its options, its
names on the command line and in trec_eval, the per-list context it accepts
under trec_eval's definitions, how its values are averaged over queries, and
the name of its brute-force oracle in ``tests/oracles.py``.

The command line's name grammar and evaluation, ``lodestar bench``, the
documentation's measure table and the invariance tests (jit, vmap, padding,
segments, streaming, sharding, dtypes) all read :data:`MEASURES`. Adding a
measure is one function in :mod:`lodestar.metrics` and one entry here; see
``docs/development.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal

from lodestar import metrics
from lodestar.metrics import (
    _average_precision,
    _dcg,
    _err,
    _first_relevant,
    _interpolated,
    _ndcg_averages,
    _precision,
)
from lodestar.metrics._kernel import Formula

REQUIRED = object()
"""The default of an option that every call must give (ERR's ``max_label``)."""


@dataclasses.dataclass(frozen=True)
class Option:
    """A keyword option of a measure, beyond ``k`` and the shared ones.

    Attributes:
      name: The keyword.
      default: Its default, or :data:`REQUIRED`.
      example: A valid value, for tests and benchmarks.
    """

    name: str
    default: Any
    example: Any


@dataclasses.dataclass(frozen=True)
class TrecFamily:
    """A trec_eval measure name that this measure answers to.

    Attributes:
      name: trec_eval's name, e.g. ``"ndcg_cut"`` or ``"recip_rank"``.
      parameter: The option its parameters set (``"k"`` for ``P.5,10``), or
        None if it takes none.
      defaults: The parameters trec_eval uses when the name is given bare
        (``P`` means ``P.5,10,15,20,30,100,200,500,1000``); empty if bare
        means the measure without parameters.
      combined: Whether the parameters together are one value of the option,
        reported under one name (``11pt_avg.0.2,0.5,0.8``: the recall levels
        to average; ``ndcg.1=3,2=9``: a :class:`~lodestar.metrics.GainTable`,
        read with :meth:`~lodestar.metrics.GainTable.parse`), rather than
        one measure per parameter (``P.5,10``).
      value_format: How a parameter appears in the reported name after
        ``_``: ``P_5``, and ``iprec_at_recall_0.10`` with ``"{:.2f}"``
        (trec_eval's ``%3.2f`` for real-valued cut-offs).
    """

    name: str
    parameter: str | None = None
    defaults: tuple = ()
    combined: bool = False
    value_format: str = "{}"


# trec_eval's default cut-offs for P, recall, ndcg_cut, map_cut, relative_P, ...
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


@dataclasses.dataclass(frozen=True)
class Measure:
    """One exact measure and everything the project needs to know about it.

    Attributes:
      key: The registry key; also the canonical command-line name.
      function: The public function in :mod:`lodestar.metrics`.
      formula: Its arithmetic over the rank engine (for multi-measure
        evaluation).
      labels: ``"graded"`` (gains from the label's value) or ``"binary"``
        (relevant or not, at trec_eval's relevance level on the command line).
      summary: One line for the documentation's measure table.
      cutoff: Whether it takes ``k``.
      names: Other command-line names in lodestar's style (``mrr`` for
        reciprocal rank), each usable with ``@k`` when ``cutoff``.
      trec: The trec_eval names it answers to.
      context: Per-list inputs it takes under trec_eval's definitions:
        ``num_relevant`` (relevant judged documents, retrieved or not),
        ``ideal_labels`` (every judged document's label, for NDCG's ideal),
        ``judged`` (which retrieved documents were judged).
      options: Its other keyword options.
      nonnegative_labels: Whether it refuses negative labels.
      aggregate: How per-query values become the ``all`` value: ``"mean"``,
        ``"geometric"`` (trec_eval's ``gm_`` measures) or ``"sum"`` (counts).
      integer: Whether trec_eval prints its values as integers.
      oracle: The name of its brute-force reference on one explicit order in
        ``tests/oracles.py``.
    """

    key: str
    function: Callable
    formula: Formula
    labels: Literal["graded", "binary"]
    summary: str
    cutoff: bool = True
    names: tuple[str, ...] = ()
    trec: tuple[TrecFamily, ...] = ()
    context: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    nonnegative_labels: bool = True
    aggregate: Literal["mean", "geometric", "sum"] = "mean"
    integer: bool = False
    oracle: str = ""

    @property
    def required_options(self) -> dict[str, Any]:
        """Example values of the options every call must give."""
        return {o.name: o.example for o in self.options if o.default is REQUIRED}


MEASURES: Mapping[str, Measure] = {
    m.key: m
    for m in (
        Measure(
            "ndcg",
            metrics.ndcg,
            _dcg.NDCG,
            "graded",
            "DCG over the ideal DCG, linear gain",
            trec=(
                TrecFamily("ndcg", "gain", combined=True),
                TrecFamily("ndcg_cut", "k", TREC_CUTOFFS),
            ),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="ndcg_of_order",
        ),
        Measure(
            "dcg",
            metrics.dcg,
            _dcg.DCG,
            "graded",
            "discounted cumulative gain, linear gain",
            options=(Option("gain", "linear", "exp2"), Option("log_base", 2.0, 3.0)),
            nonnegative_labels=False,
            oracle="dcg_of_order",
        ),
        Measure(
            "mrr",
            metrics.reciprocal_rank,
            _first_relevant.RECIPROCAL_RANK,
            "binary",
            "reciprocal rank of the first relevant document",
            names=("rr", "reciprocal_rank"),
            trec=(TrecFamily("recip_rank"),),
            nonnegative_labels=False,
            oracle="rr_of_order",
        ),
        Measure(
            "map",
            metrics.average_precision,
            _average_precision.AVERAGE_PRECISION,
            "binary",
            "average precision (its mean is MAP)",
            names=("ap", "average_precision"),
            trec=(TrecFamily("map"), TrecFamily("map_cut", "k", TREC_CUTOFFS)),
            context=("num_relevant",),
            oracle="ap_of_order",
        ),
        Measure(
            "P",
            metrics.precision,
            _precision.PRECISION,
            "binary",
            "precision: relevant documents in the top k, over k",
            names=("precision",),
            trec=(TrecFamily("P", "k", TREC_CUTOFFS),),
            oracle="precision_of_order",
        ),
        Measure(
            "recall",
            metrics.recall,
            _precision.RECALL,
            "binary",
            "relevant documents in the top k over all relevant documents",
            trec=(TrecFamily("recall", "k", TREC_CUTOFFS),),
            context=("num_relevant",),
            oracle="recall_of_order",
        ),
        Measure(
            "hits",
            metrics.hits,
            _first_relevant.HITS,
            "binary",
            "1 if a relevant document is in the top k, else 0",
            trec=(TrecFamily("success", "k", (1, 5, 10)),),
            oracle="hits_of_order",
        ),
        Measure(
            "err",
            metrics.err,
            _err.ERR,
            "graded",
            "expected reciprocal rank of Chapelle et al.",
            options=(Option("max_label", REQUIRED, 3.0),),
            oracle="err_of_order",
        ),
        # Interpolated precision and the NDCG family of trec_eval (decision 0017).
        Measure(
            "iprec_at_recall",
            metrics.interpolated_precision,
            _interpolated.INTERPOLATED_PRECISION,
            "binary",
            "interpolated precision at a recall level (one value per level)",
            trec=(
                TrecFamily(
                    "iprec_at_recall",
                    "recall",
                    _interpolated.ELEVEN_POINTS,
                    value_format="{:.2f}",
                ),
            ),
            context=("num_relevant",),
            options=(Option("recall", REQUIRED, 0.3),),
            oracle="iprec_of_order",
        ),
        Measure(
            "11pt_avg",
            metrics.eleven_point_average,
            _interpolated.ELEVEN_POINT_AVERAGE,
            "binary",
            "interpolated precision averaged over the recall levels 0, 0.1, ..., 1",
            names=("eleven_point_average",),
            trec=(TrecFamily("11pt_avg", "recall", combined=True),),
            context=("num_relevant",),
            options=(Option("recall", _interpolated.ELEVEN_POINTS, (0.2, 0.5, 0.8)),),
            oracle="eleven_pt_of_order",
        ),
        Measure(
            "ndcg_rel",
            metrics.ndcg_at_relevant,
            _ndcg_averages.NDCG_AT_RELEVANT,
            "graded",
            "NDCG averaged at the ranks of the positive-gain documents",
            names=("ndcg_at_relevant",),
            trec=(TrecFamily("ndcg_rel", "gain", combined=True),),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="ndcg_rel_of_order",
        ),
        Measure(
            "Rndcg",
            metrics.ndcg_at_gain_levels,
            _ndcg_averages.NDCG_AT_GAIN_LEVELS,
            "graded",
            "NDCG averaged where the ideal ranking's gain changes",
            names=("ndcg_at_gain_levels",),
            trec=(TrecFamily("Rndcg", "gain", combined=True),),
            context=("ideal_labels", "judged", "num_relevant"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="rndcg_of_order",
        ),
    )
}
"""Every exact measure, by key."""


def by_function() -> dict[Callable, Measure]:
    """The registry keyed by public function (a function may serve several keys: the first)."""
    found: dict[Callable, Measure] = {}
    for measure in MEASURES.values():
        found.setdefault(measure.function, measure)
    return found
