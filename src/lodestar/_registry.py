"""The registry of exact measures: each one declared once, and everything else iterates.

A measure is a function of :mod:`lodestar.metrics` plus what the rest of the
project needs to know about it: its formula (so that ``lodestar evaluate`` can
evaluate many measures on one ranking), the labels it reads, its options, its
names on the command line and in trec_eval, the per-list context it accepts
under trec_eval's definitions, how its values are averaged over queries, and
the name of its brute-force oracle in ``tests/oracles.py``.

The command line's name grammar and evaluation, the exact benchmark, the
documentation's measure table and the invariance tests (jit, vmap, padding,
segments, streaming, sharding, dtypes) all read :data:`MEASURES`. Adding a
measure is one function in :mod:`lodestar.metrics` and one entry here; see
``docs/development.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lodestar._rank_sums import RankSum
    from lodestar.metrics._kernel import Formula

# A real number in a measure's parameters, as trec_eval's C parser reads one:
# ASCII digits only (Python's float() also takes other scripts' digits and
# underscores). The command line's parser and GainTable.parse share it.
REAL_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

REQUIRED = object()
"""The default of an option that every call must give (ERR's ``max_label``)."""


@dataclasses.dataclass(frozen=True)
class Option:
    """A keyword option of a measure, beyond ``k`` and the shared ones.

    Attributes:
      name: The keyword.
      default: Its default, or :data:`REQUIRED`.
      example: A valid value, for tests and benchmarks.
      interval: For a real-valued option, ``(low, high, closed)`` as
        :func:`lodestar._validation.check_float_in_range` takes them: the
        range the command line checks a trec_eval parameter against. The
        function checks the same range itself; a test holds the two equal.
    """

    name: str
    default: Any
    example: Any
    interval: tuple[float, float, str] | None = None


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
      judgment_groups: Whether the name is the measure averaged over a
        query's judgment groups (``map_avgjg``, ``P_avgjg``,
        ``Rprec_mult_avgjg``; ``m_*_avgjg.c``), which reads qrels with a
        judgment group in place of the iteration field (``-R qrels_jg``).
    """

    name: str
    parameter: str | None = None
    defaults: tuple = ()
    combined: bool = False
    value_format: str = "{}"
    judgment_groups: bool = False


# trec_eval's default recall levels of iprec_at_recall and 11pt_avg.
ELEVEN_POINTS = tuple(i / 10 for i in range(11))

# trec_eval's default cut-offs for P, recall, ndcg_cut, map_cut, relative_P, ...
TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

# trec_eval's default multiples of R for Rprec_mult and Rprec_mult_avgjg.
RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

MIN_GEO_MEAN = 1e-5
"""The floor of a ``"geometric"`` aggregate (trec_eval's ``MIN_GEO_MEAN``, trec_eval.h).

trec_eval's ``gm_`` measures store ``log(max(value, MIN_GEO_MEAN))`` per query
and print ``exp(sum / queries)`` on the ``all`` line (meas_avg.c's
``te_calc_avg_meas_s_gm``); with ``-c`` every qrels query missing from the
run adds ``log(MIN_GEO_MEAN)`` to the sum and counts in ``queries``. They
print no per-query line with ``-q`` (``te_print_single_meas_empty``).
"""


@dataclasses.dataclass(frozen=True)
class Measure:
    """One exact measure and everything the project needs to know about it.

    The function and formula are named by their place in
    :mod:`lodestar.metrics` (``"_dcg.ndcg"``) and imported when first asked
    for, so that reading measure names imports no JAX.

    Attributes:
      key: The registry key; also the canonical command-line name.
      function_path: The public function, as ``"<private module>.<name>"``
        under :mod:`lodestar.metrics`; :attr:`function` imports it.
      formula_path: Its arithmetic over the rank engine (for multi-measure
        evaluation), likewise; :attr:`formula` imports it.
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
        ``judged`` (which retrieved documents were judged: in the qrels with
        a relevance >= 0), ``max_label`` (RBP's top grade: the largest
        relevance level among the query's judged documents, retrieved or
        not).
      options: Its other keyword options.
      nonnegative_labels: Whether it refuses negative labels.
      aggregate: How per-query values become the ``all`` value: ``"mean"``,
        ``"geometric"`` (trec_eval's ``gm_`` measures, floored at
        :data:`MIN_GEO_MEAN`) or ``"sum"`` (counts).
      integer: Whether trec_eval prints its values as integers.
      oracle: The name of its brute-force reference on one explicit order in
        ``tests/oracles.py``.
      tie_key: What ranking tied items by gives its smallest and largest
        value over every order of the ties, so that
        :func:`lodestar.metrics.tie_range` and ``--tie-range`` are its exact
        range: ``"relevance"`` (the label, or whether it is relevant, as
        ``labels`` says; an unjudged item least), ``"unjudged"`` (whether the
        item is unjudged: the measure reads only that), or
        ``"judged_nonrelevant"`` (a count of judged non-relevant items).
        None where no such key is known (the value at the relevance orders
        is then not its range, and the command line prints none).
      rank_sum_path: Its declaration as a sum over items of a utility of
        each item's rank (:class:`lodestar._rank_sums.RankSum`), likewise
        under :mod:`lodestar.metrics`, or None if it is not one;
        :attr:`rank_sum` imports it. :mod:`lodestar.smooth` evaluates it on
        soft ranks.
    """

    key: str
    function_path: str
    formula_path: str
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
    tie_key: Literal["relevance", "unjudged", "judged_nonrelevant"] | None = "relevance"
    rank_sum_path: str | None = None

    @functools.cached_property
    def function(self) -> Callable:
        """The public function in :mod:`lodestar.metrics`."""
        return _resolve(self.function_path)

    @functools.cached_property
    def formula(self) -> Formula:
        """The formula the command line evaluates."""
        return _resolve(self.formula_path)

    @functools.cached_property
    def rank_sum(self) -> RankSum | None:
        """Its declaration as a rank sum, or None."""
        return None if self.rank_sum_path is None else _resolve(self.rank_sum_path)

    @property
    def required_options(self) -> dict[str, Any]:
        """Example values of the options every call must give."""
        return {o.name: o.example for o in self.options if o.default is REQUIRED}


def _resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(f"lodestar.metrics.{module}"), name)


MEASURES: Mapping[str, Measure] = {
    m.key: m
    for m in (
        Measure(
            "ndcg",
            "_dcg.ndcg",
            "_dcg.NDCG",
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
            "_dcg.dcg",
            "_dcg.DCG",
            "graded",
            "discounted cumulative gain, linear gain",
            options=(Option("gain", "linear", "exp2"), Option("log_base", 2.0, 3.0)),
            nonnegative_labels=False,
            oracle="dcg_of_order",
            rank_sum_path="_dcg.DCG_SUM",
        ),
        Measure(
            "mrr",
            "_first_relevant.reciprocal_rank",
            "_first_relevant.RECIPROCAL_RANK",
            "binary",
            "reciprocal rank of the first relevant document",
            names=("rr", "reciprocal_rank"),
            trec=(TrecFamily("recip_rank"),),
            nonnegative_labels=False,
            oracle="rr_of_order",
        ),
        Measure(
            "map",
            "_average_precision.average_precision",
            "_average_precision.AVERAGE_PRECISION",
            "binary",
            "average precision (its mean is MAP)",
            names=("ap", "average_precision"),
            trec=(
                TrecFamily("map"),
                TrecFamily("map_cut", "k", TREC_CUTOFFS),
                TrecFamily("map_avgjg", judgment_groups=True),
            ),
            context=("num_relevant",),
            oracle="ap_of_order",
            rank_sum_path="_average_precision.AVERAGE_PRECISION_SUM",
        ),
        Measure(
            "P",
            "_precision.precision",
            "_precision.PRECISION",
            "binary",
            "precision: relevant documents in the top k, over k",
            names=("precision",),
            trec=(
                TrecFamily("P", "k", TREC_CUTOFFS),
                TrecFamily("P_avgjg", "k", TREC_CUTOFFS, judgment_groups=True),
            ),
            oracle="precision_of_order",
            rank_sum_path="_precision.PRECISION_SUM",
        ),
        Measure(
            "recall",
            "_precision.recall",
            "_precision.RECALL",
            "binary",
            "relevant documents in the top k over all relevant documents",
            trec=(TrecFamily("recall", "k", TREC_CUTOFFS),),
            context=("num_relevant",),
            oracle="recall_of_order",
            rank_sum_path="_precision.RECALL_SUM",
        ),
        Measure(
            "hits",
            "_first_relevant.hits",
            "_first_relevant.HITS",
            "binary",
            "1 if a relevant document is in the top k, else 0",
            trec=(TrecFamily("success", "k", (1, 5, 10)),),
            oracle="hits_of_order",
        ),
        Measure(
            "err",
            "_err.err",
            "_err.ERR",
            "graded",
            "expected reciprocal rank of Chapelle et al.",
            options=(Option("max_label", REQUIRED, 3.0),),
            oracle="err_of_order",
            rank_sum_path="_err.ERR_SUM",
        ),
        # --- counts, set measures, R-precision, utility, unj, RBP, gm_map (decision 0015) ---
        # The counts print as integers (trec_eval's %ld) and their all line is a
        # sum. With ties and a k that cuts a tie block they are expectations and
        # can be fractional: the command line then prints them with four
        # decimals like the other measures, never truncated, and the all line
        # is the sum of the expectations.
        Measure(
            "num_ret",
            "_counts.num_retrieved",
            "_counts.NUM_RETRIEVED",
            "binary",
            "number of documents retrieved (at most k)",
            names=("num_retrieved",),
            trec=(TrecFamily("num_ret"),),
            aggregate="sum",
            integer=True,
            oracle="num_ret_of_order",
        ),
        # trec_eval's all line for num_rel with -c counts every qrels line
        # with a relevance above 0 in the whole file, whatever -l says (its
        # te_calc_avg_num_rel); the sum of the per-query num_relevant is that
        # number for -l 1. The function returns num_relevant even for an
        # empty list, so a query missing from the run still adds its count.
        Measure(
            "num_rel",
            "_counts.num_relevant",
            "_counts.NUM_RELEVANT",
            "binary",
            "number of relevant documents, retrieved or not",
            names=("num_relevant",),
            trec=(TrecFamily("num_rel"),),
            context=("num_relevant", "judged"),
            aggregate="sum",
            integer=True,
            oracle="num_rel_of_order",
        ),
        Measure(
            "num_rel_ret",
            "_counts.num_relevant_retrieved",
            "_counts.NUM_RELEVANT_RETRIEVED",
            "binary",
            "number of relevant documents retrieved",
            names=("num_relevant_retrieved",),
            trec=(TrecFamily("num_rel_ret"),),
            context=("judged",),
            aggregate="sum",
            integer=True,
            oracle="num_rel_ret_of_order",
        ),
        Measure(
            "num_nonrel_judged_ret",
            "_counts.num_nonrelevant_judged_retrieved",
            "_counts.NUM_NONRELEVANT_JUDGED_RETRIEVED",
            "binary",
            "number of judged non-relevant documents retrieved",
            names=("num_nonrelevant_judged_retrieved",),
            trec=(TrecFamily("num_nonrel_judged_ret"),),
            context=("judged",),
            aggregate="sum",
            integer=True,
            oracle="num_nonrel_judged_ret_of_order",
            tie_key="judged_nonrelevant",
        ),
        # Rprec is r_precision at multiple=1 (the cut-off (long) (R + 0.9) is R);
        # Rprec_mult.x is r_precision(multiple=x), printed as Rprec_mult_%3.2f.
        Measure(
            "Rprec",
            "_r_precision.r_precision",
            "_r_precision.R_PRECISION",
            "binary",
            "precision at R (or a multiple of R), R the relevant documents",
            names=("r_precision",),
            trec=(
                TrecFamily("Rprec"),
                TrecFamily("Rprec_mult", "multiple", RPREC_MULTIPLES, value_format="{:.2f}"),
                TrecFamily(
                    "Rprec_mult_avgjg",
                    "multiple",
                    RPREC_MULTIPLES,
                    value_format="{:.2f}",
                    judgment_groups=True,
                ),
            ),
            context=("num_relevant",),
            options=(Option("multiple", 1.0, 0.6, (0.0, math.inf, "neither")),),
            oracle="rprec_mult_of_order",
        ),
        Measure(
            "relative_P",
            "_r_precision.relative_precision",
            "_r_precision.RELATIVE_PRECISION",
            "binary",
            "relevant documents in the top k over min(k, R)",
            names=("relative_precision",),
            trec=(TrecFamily("relative_P", "k", TREC_CUTOFFS),),
            context=("num_relevant",),
            oracle="relative_precision_of_order",
        ),
        # The set measures' k is trec_eval's -M: the retrieved set's size.
        Measure(
            "set_P",
            "_set.set_precision",
            "_set.SET_PRECISION",
            "binary",
            "relevant retrieved over retrieved",
            names=("set_precision",),
            trec=(TrecFamily("set_P"),),
            oracle="set_p_of_order",
        ),
        Measure(
            "set_recall",
            "_set.set_recall",
            "_set.SET_RECALL",
            "binary",
            "relevant retrieved over relevant",
            trec=(TrecFamily("set_recall"),),
            context=("num_relevant",),
            oracle="set_recall_of_order",
        ),
        Measure(
            "set_relative_P",
            "_set.set_relative_precision",
            "_set.SET_RELATIVE_PRECISION",
            "binary",
            "relevant retrieved over min(retrieved, relevant)",
            names=("set_relative_precision",),
            trec=(TrecFamily("set_relative_P"),),
            context=("num_relevant",),
            oracle="set_relative_p_of_order",
        ),
        Measure(
            "set_map",
            "_set.set_average_precision",
            "_set.SET_AVERAGE_PRECISION",
            "binary",
            "set precision times set recall (unranked AP)",
            names=("set_average_precision",),
            trec=(TrecFamily("set_map"),),
            context=("num_relevant",),
            oracle="set_map_of_order",
        ),
        # Bare set_F is beta = 1.0 and prints as set_F; set_F.x prints set_F_x
        # with x as written on the command line.
        Measure(
            "set_F",
            "_set.set_f",
            "_set.SET_F",
            "binary",
            "weighted harmonic mean of set precision and set recall",
            names=("set_f",),
            trec=(TrecFamily("set_F", "beta"),),
            context=("num_relevant",),
            options=(Option("beta", 1.0, 0.5, (0.0, math.inf, "left")),),
            oracle="set_f_of_order",
        ),
        # utility.a,b,c,d gives all four coefficients as one value (one
        # measure, printed utility_a,b,c,d); num_documents is trec_eval's -N,
        # which the command line passes as 0 when absent, as trec_eval does.
        Measure(
            "utility",
            "_set.utility",
            "_set.UTILITY",
            "binary",
            "weighted sum of the retrieved/relevant contingency table",
            trec=(TrecFamily("utility", "coefficients"),),
            context=("num_relevant",),
            options=(
                Option("coefficients", (1.0, -1.0, 0.0, 0.0), (2.0, -1.0, -0.5, 0.0)),
                Option("num_documents", None, 1000),
            ),
            oracle="utility_of_order",
        ),
        Measure(
            "unj",
            "_counts.unjudged",
            "_counts.UNJUDGED",
            "binary",
            "unjudged documents in the top k, over k",
            names=("unjudged",),
            trec=(TrecFamily("unj", "k", (5, 10, 20)),),
            context=("judged",),
            oracle="unj_of_order",
            tie_key="unjudged",
        ),
        # rbp.p=x and rbp_resid.p=x set p by name (trec_eval's name=value
        # pairs, printed rbp_p=x); bare rbp is p = 0.9. trec_eval reads no other pair for
        # rbp_resid, and integer-named pairs for rbp set gains per level,
        # which lodestar does not take.
        Measure(
            "rbp",
            "_rbp.rank_biased_precision",
            "_rbp.RANK_BIASED_PRECISION",
            "graded",
            "rank-biased precision of Moffat and Zobel",
            names=("rank_biased_precision",),
            trec=(TrecFamily("rbp", "p"),),
            context=("max_label",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
            oracle="rbp_of_order",
        ),
        Measure(
            "rbp_resid",
            "_rbp.rank_biased_precision_residual",
            "_rbp.RANK_BIASED_PRECISION_RESIDUAL",
            "binary",
            "the most unjudged documents could add to RBP",
            names=("rank_biased_precision_residual",),
            trec=(TrecFamily("rbp_resid", "p"),),
            context=("judged",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
            oracle="rbp_resid_of_order",
            # It reads which positions hold unjudged items, not relevance.
            tie_key="unjudged",
        ),
        # Per query gm_map is average precision; trec_eval prints no -q line
        # for it, and its all line is exp(mean(log(max(AP, MIN_GEO_MEAN))))
        # over the evaluated queries (with -c: over every qrels query, a
        # missing one counting MIN_GEO_MEAN). See MIN_GEO_MEAN.
        Measure(
            "gm_map",
            "_average_precision.average_precision",
            "_average_precision.AVERAGE_PRECISION",
            "binary",
            "average precision, averaged geometrically over queries",
            trec=(TrecFamily("gm_map"),),
            context=("num_relevant",),
            aggregate="geometric",
            oracle="ap_of_order",
        ),
        Measure(
            "bpref",
            "_bpref.bpref",
            "_bpref.BPREF",
            "binary",
            "share of judged non-relevant documents each relevant one outranks",
            trec=(TrecFamily("bpref"),),
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
            oracle="bpref_of_order",
        ),
        # trec_eval's gm_bpref: per query ln(max(bpref, 1e-5)); its `all` line
        # is exp of the mean of those logs, a query of the qrels missing from
        # the run (with -c) adding ln(1e-5); no per-query line is printed.
        Measure(
            "gm_bpref",
            "_bpref.bpref",
            "_bpref.BPREF",
            "binary",
            "bpref, geometric mean over queries (each floored at 1e-5)",
            trec=(TrecFamily("gm_bpref"),),
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
            aggregate="geometric",
            oracle="bpref_of_order",
        ),
        Measure(
            "infAP",
            "_infap.inferred_average_precision",
            "_infap.INFERRED_AVERAGE_PRECISION",
            "binary",
            "inferred average precision over a judged sample of the pool",
            names=("infap", "inferred_average_precision"),
            trec=(TrecFamily("infAP"),),
            context=("num_relevant", "judged", "pooled"),
            oracle="infap_of_order",
            # It estimates the precision above a relevant item from the
            # judged sample above it, and neither relevance order is always
            # an extreme: with -l 2 on trec_eval's test files one order of
            # the ties gives 0.3333, below the relevant-last order's 0.375.
            tie_key=None,
        ),
        Measure(
            "binG",
            "_normalized_gain.binary_normalized_gain",
            "_normalized_gain.BINARY_NORMALIZED_GAIN",
            "binary",
            "mean over relevant documents of 1 / log2(2 + non-relevant above)",
            names=("binary_normalized_gain",),
            trec=(TrecFamily("binG"),),
            context=("num_relevant", "judged"),
            oracle="bing_of_order",
        ),
        # trec_eval's G takes `level=gain` pairs (G.1=3.5,2=9): the command line
        # turns them into a `gain` callable on the labels (levels not named keep
        # gain = level); bare G is the relevance level as the gain.
        Measure(
            "G",
            "_normalized_gain.normalized_gain",
            "_normalized_gain.NORMALIZED_GAIN",
            "graded",
            "gain over log2(2 + ideal cost - gain so far), over the ideal's total",
            names=("normalized_gain",),
            trec=(TrecFamily("G", "gain"),),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="g_of_order",
            # Its discount reads the gain collected so far, so a less relevant
            # item placed early can lower it below relevant-last: labels
            # 1, 1, 3, 2 give 0.689 against 0.704 for 1, 1, 2, 3.
            tie_key=None,
        ),
        # Interpolated precision and the NDCG family of trec_eval (decision 0017).
        Measure(
            "iprec_at_recall",
            "_interpolated.interpolated_precision",
            "_interpolated.INTERPOLATED_PRECISION",
            "binary",
            "interpolated precision at a recall level (one value per level)",
            trec=(
                TrecFamily(
                    "iprec_at_recall",
                    "recall",
                    ELEVEN_POINTS,
                    value_format="{:.2f}",
                ),
            ),
            context=("num_relevant",),
            options=(Option("recall", REQUIRED, 0.3),),
            oracle="iprec_of_order",
        ),
        Measure(
            "11pt_avg",
            "_interpolated.eleven_point_average",
            "_interpolated.ELEVEN_POINT_AVERAGE",
            "binary",
            "interpolated precision averaged over the recall levels 0, 0.1, ..., 1",
            names=("eleven_point_average",),
            trec=(TrecFamily("11pt_avg", "recall", combined=True),),
            context=("num_relevant",),
            options=(Option("recall", ELEVEN_POINTS, (0.2, 0.5, 0.8)),),
            oracle="eleven_pt_of_order",
        ),
        Measure(
            "ndcg_rel",
            "_ndcg_averages.ndcg_at_relevant",
            "_ndcg_averages.NDCG_AT_RELEVANT",
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
            "_ndcg_averages.ndcg_at_gain_levels",
            "_ndcg_averages.NDCG_AT_GAIN_LEVELS",
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
