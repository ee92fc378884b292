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


@dataclasses.dataclass(frozen=True, kw_only=True)
class Measure:
    """One exact measure and everything the project needs to know about it.

    The function and formula are named by their place in
    :mod:`lodestar.metrics` (``"_dcg.ndcg"``) and imported when first asked
    for, so that reading measure names imports no JAX. What the arithmetic
    reads (the label kind and sign, the tie key) is the formula's own
    (:class:`lodestar.metrics._kernel.Formula`), read through :attr:`labels`,
    :attr:`nonnegative_labels` and :attr:`tie_key`.

    Attributes:
      key: The registry key; also the canonical command-line name.
      function_path: The public function, as ``"<private module>.<name>"``
        under :mod:`lodestar.metrics`; :attr:`function` imports it.
      formula_path: Its arithmetic over the rank engine (for multi-measure
        evaluation), likewise; :attr:`formula` imports it.
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
      aggregate: How per-query values become the ``all`` value: ``"mean"``,
        ``"geometric"`` (trec_eval's ``gm_`` measures, floored at
        :data:`MIN_GEO_MEAN`) or ``"sum"`` (counts).
      integer: Whether trec_eval prints its values as integers.
      oracle: The name of its brute-force reference on one explicit order in
        ``tests/oracles.py``.
      rank_sum_path: Its declaration as a sum over items of a utility of
        each item's rank (:class:`lodestar._rank_sums.RankSum`), likewise
        under :mod:`lodestar.metrics`, or None if it is not one;
        :attr:`rank_sum` imports it. :mod:`lodestar.smooth` evaluates it on
        soft ranks.
    """

    key: str
    function_path: str
    formula_path: str
    summary: str
    cutoff: bool = True
    names: tuple[str, ...] = ()
    trec: tuple[TrecFamily, ...] = ()
    context: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    aggregate: Literal["mean", "geometric", "sum"] = "mean"
    integer: bool = False
    oracle: str = ""
    rank_sum_path: str | None = None

    @functools.cached_property
    def function(self) -> Callable:
        """The public function in :mod:`lodestar.metrics`."""
        return _resolve(self.function_path)

    @functools.cached_property
    def formula(self) -> Formula:
        """The formula the command line evaluates."""
        return _resolve(self.formula_path)

    @property
    def labels(self) -> str:
        """``"graded"`` (gains from the label's value) or ``"binary"`` (relevant or not)."""
        return self.formula.labels

    @property
    def nonnegative_labels(self) -> bool:
        """Whether it refuses negative labels."""
        return self.formula.nonnegative_labels

    @property
    def tie_key(self) -> str | None:
        """What orders its ties to its extremes (:class:`~lodestar.metrics._kernel.Formula`)."""
        return self.formula.tie_key

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
            key="ndcg",
            function_path="_dcg.ndcg",
            formula_path="_dcg.NDCG",
            summary="DCG over the ideal DCG, linear gain",
            trec=(
                TrecFamily("ndcg", "gain", combined=True),
                TrecFamily("ndcg_cut", "k", TREC_CUTOFFS),
            ),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="ndcg_of_order",
        ),
        Measure(
            key="dcg",
            function_path="_dcg.dcg",
            formula_path="_dcg.DCG",
            summary="discounted cumulative gain, linear gain",
            options=(Option("gain", "linear", "exp2"), Option("log_base", 2.0, 3.0)),
            oracle="dcg_of_order",
            rank_sum_path="_dcg.DCG_SUM",
        ),
        Measure(
            key="mrr",
            function_path="_first_relevant.reciprocal_rank",
            formula_path="_first_relevant.RECIPROCAL_RANK",
            summary="reciprocal rank of the first relevant document",
            names=("rr", "reciprocal_rank"),
            trec=(TrecFamily("recip_rank"),),
            oracle="rr_of_order",
        ),
        Measure(
            key="map",
            function_path="_average_precision.average_precision",
            formula_path="_average_precision.AVERAGE_PRECISION",
            summary="average precision (its mean is MAP)",
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
            key="P",
            function_path="_precision.precision",
            formula_path="_precision.PRECISION",
            summary="precision: relevant documents in the top k, over k",
            names=("precision",),
            trec=(
                TrecFamily("P", "k", TREC_CUTOFFS),
                TrecFamily("P_avgjg", "k", TREC_CUTOFFS, judgment_groups=True),
            ),
            oracle="precision_of_order",
            rank_sum_path="_precision.PRECISION_SUM",
        ),
        Measure(
            key="recall",
            function_path="_precision.recall",
            formula_path="_precision.RECALL",
            summary="relevant documents in the top k over all relevant documents",
            trec=(TrecFamily("recall", "k", TREC_CUTOFFS),),
            context=("num_relevant",),
            oracle="recall_of_order",
            rank_sum_path="_precision.RECALL_SUM",
        ),
        Measure(
            key="hits",
            function_path="_first_relevant.hits",
            formula_path="_first_relevant.HITS",
            summary="1 if a relevant document is in the top k, else 0",
            trec=(TrecFamily("success", "k", (1, 5, 10)),),
            oracle="hits_of_order",
        ),
        Measure(
            key="err",
            function_path="_err.err",
            formula_path="_err.ERR",
            summary="expected reciprocal rank of Chapelle et al.",
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
            key="num_ret",
            function_path="_counts.num_retrieved",
            formula_path="_counts.NUM_RETRIEVED",
            summary="number of documents retrieved (at most k)",
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
            key="num_rel",
            function_path="_counts.num_relevant",
            formula_path="_counts.NUM_RELEVANT",
            summary="number of relevant documents, retrieved or not",
            names=("num_relevant",),
            trec=(TrecFamily("num_rel"),),
            context=("num_relevant", "judged"),
            aggregate="sum",
            integer=True,
            oracle="num_rel_of_order",
        ),
        Measure(
            key="num_rel_ret",
            function_path="_counts.num_relevant_retrieved",
            formula_path="_counts.NUM_RELEVANT_RETRIEVED",
            summary="number of relevant documents retrieved",
            names=("num_relevant_retrieved",),
            trec=(TrecFamily("num_rel_ret"),),
            context=("judged",),
            aggregate="sum",
            integer=True,
            oracle="num_rel_ret_of_order",
        ),
        Measure(
            key="num_nonrel_judged_ret",
            function_path="_counts.num_nonrelevant_judged_retrieved",
            formula_path="_counts.NUM_NONRELEVANT_JUDGED_RETRIEVED",
            summary="number of judged non-relevant documents retrieved",
            names=("num_nonrelevant_judged_retrieved",),
            trec=(TrecFamily("num_nonrel_judged_ret"),),
            context=("judged",),
            aggregate="sum",
            integer=True,
            oracle="num_nonrel_judged_ret_of_order",
        ),
        # Rprec is r_precision at multiple=1 (the cut-off (long) (R + 0.9) is R);
        # Rprec_mult.x is r_precision(multiple=x), printed as Rprec_mult_%3.2f.
        Measure(
            key="Rprec",
            function_path="_r_precision.r_precision",
            formula_path="_r_precision.R_PRECISION",
            summary="precision at R (or a multiple of R), R the relevant documents",
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
            key="relative_P",
            function_path="_r_precision.relative_precision",
            formula_path="_r_precision.RELATIVE_PRECISION",
            summary="relevant documents in the top k over min(k, R)",
            names=("relative_precision",),
            trec=(TrecFamily("relative_P", "k", TREC_CUTOFFS),),
            context=("num_relevant",),
            oracle="relative_precision_of_order",
        ),
        # The set measures' k is trec_eval's -M: the retrieved set's size.
        Measure(
            key="set_P",
            function_path="_set.set_precision",
            formula_path="_set.SET_PRECISION",
            summary="relevant retrieved over retrieved",
            names=("set_precision",),
            trec=(TrecFamily("set_P"),),
            oracle="set_p_of_order",
        ),
        Measure(
            key="set_recall",
            function_path="_set.set_recall",
            formula_path="_set.SET_RECALL",
            summary="relevant retrieved over relevant",
            trec=(TrecFamily("set_recall"),),
            context=("num_relevant",),
            oracle="set_recall_of_order",
        ),
        Measure(
            key="set_relative_P",
            function_path="_set.set_relative_precision",
            formula_path="_set.SET_RELATIVE_PRECISION",
            summary="relevant retrieved over min(retrieved, relevant)",
            names=("set_relative_precision",),
            trec=(TrecFamily("set_relative_P"),),
            context=("num_relevant",),
            oracle="set_relative_p_of_order",
        ),
        Measure(
            key="set_map",
            function_path="_set.set_average_precision",
            formula_path="_set.SET_AVERAGE_PRECISION",
            summary="set precision times set recall (unranked AP)",
            names=("set_average_precision",),
            trec=(TrecFamily("set_map"),),
            context=("num_relevant",),
            oracle="set_map_of_order",
        ),
        # Bare set_F is beta = 1.0 and prints as set_F; set_F.x prints set_F_x
        # with x as written on the command line.
        Measure(
            key="set_F",
            function_path="_set.set_f",
            formula_path="_set.SET_F",
            summary="weighted harmonic mean of set precision and set recall",
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
            key="utility",
            function_path="_set.utility",
            formula_path="_set.UTILITY",
            summary="weighted sum of the retrieved/relevant contingency table",
            trec=(TrecFamily("utility", "coefficients"),),
            context=("num_relevant",),
            options=(
                Option("coefficients", (1.0, -1.0, 0.0, 0.0), (2.0, -1.0, -0.5, 0.0)),
                Option("num_documents", None, 1000),
            ),
            oracle="utility_of_order",
        ),
        Measure(
            key="unj",
            function_path="_counts.unjudged",
            formula_path="_counts.UNJUDGED",
            summary="unjudged documents in the top k, over k",
            names=("unjudged",),
            trec=(TrecFamily("unj", "k", (5, 10, 20)),),
            context=("judged",),
            oracle="unj_of_order",
        ),
        # rbp.p=x and rbp_resid.p=x set p by name (trec_eval's name=value
        # pairs, printed rbp_p=x); bare rbp is p = 0.9. trec_eval reads no other pair for
        # rbp_resid, and integer-named pairs for rbp set gains per level,
        # which lodestar does not take.
        Measure(
            key="rbp",
            function_path="_rbp.rank_biased_precision",
            formula_path="_rbp.RANK_BIASED_PRECISION",
            summary="rank-biased precision of Moffat and Zobel",
            names=("rank_biased_precision",),
            trec=(TrecFamily("rbp", "p"),),
            context=("max_label",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
            oracle="rbp_of_order",
        ),
        Measure(
            key="rbp_resid",
            function_path="_rbp.rank_biased_precision_residual",
            formula_path="_rbp.RANK_BIASED_PRECISION_RESIDUAL",
            summary="the most unjudged documents could add to RBP",
            names=("rank_biased_precision_residual",),
            trec=(TrecFamily("rbp_resid", "p"),),
            context=("judged",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
            oracle="rbp_resid_of_order",
        ),
        # Per query gm_map is average precision; trec_eval prints no -q line
        # for it, and its all line is exp(mean(log(max(AP, MIN_GEO_MEAN))))
        # over the evaluated queries (with -c: over every qrels query, a
        # missing one counting MIN_GEO_MEAN). See MIN_GEO_MEAN.
        Measure(
            key="gm_map",
            function_path="_average_precision.average_precision",
            formula_path="_average_precision.AVERAGE_PRECISION",
            summary="average precision, averaged geometrically over queries",
            trec=(TrecFamily("gm_map"),),
            context=("num_relevant",),
            aggregate="geometric",
            oracle="ap_of_order",
        ),
        Measure(
            key="bpref",
            function_path="_bpref.bpref",
            formula_path="_bpref.BPREF",
            summary="share of judged non-relevant documents each relevant one outranks",
            trec=(TrecFamily("bpref"),),
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
            oracle="bpref_of_order",
        ),
        # trec_eval's gm_bpref: per query ln(max(bpref, 1e-5)); its `all` line
        # is exp of the mean of those logs, a query of the qrels missing from
        # the run (with -c) adding ln(1e-5); no per-query line is printed.
        Measure(
            key="gm_bpref",
            function_path="_bpref.bpref",
            formula_path="_bpref.BPREF",
            summary="bpref, geometric mean over queries (each floored at 1e-5)",
            trec=(TrecFamily("gm_bpref"),),
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
            aggregate="geometric",
            oracle="bpref_of_order",
        ),
        Measure(
            key="infAP",
            function_path="_infap.inferred_average_precision",
            formula_path="_infap.INFERRED_AVERAGE_PRECISION",
            summary="inferred average precision over a judged sample of the pool",
            names=("infap", "inferred_average_precision"),
            trec=(TrecFamily("infAP"),),
            context=("num_relevant", "judged", "pooled"),
            oracle="infap_of_order",
        ),
        Measure(
            key="binG",
            function_path="_normalized_gain.binary_normalized_gain",
            formula_path="_normalized_gain.BINARY_NORMALIZED_GAIN",
            summary="mean over relevant documents of 1 / log2(2 + non-relevant above)",
            names=("binary_normalized_gain",),
            trec=(TrecFamily("binG"),),
            context=("num_relevant", "judged"),
            oracle="bing_of_order",
        ),
        # trec_eval's G takes `level=gain` pairs (G.1=3.5,2=9): the command line
        # turns them into a `gain` callable on the labels (levels not named keep
        # gain = level); bare G is the relevance level as the gain.
        Measure(
            key="G",
            function_path="_normalized_gain.normalized_gain",
            formula_path="_normalized_gain.NORMALIZED_GAIN",
            summary="gain over log2(2 + ideal cost - gain so far), over the ideal's total",
            names=("normalized_gain",),
            trec=(TrecFamily("G", "gain"),),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="g_of_order",
        ),
        # Interpolated precision and the NDCG family of trec_eval (decision 0017).
        Measure(
            key="iprec_at_recall",
            function_path="_interpolated.interpolated_precision",
            formula_path="_interpolated.INTERPOLATED_PRECISION",
            summary="interpolated precision at a recall level (one value per level)",
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
            key="11pt_avg",
            function_path="_interpolated.eleven_point_average",
            formula_path="_interpolated.ELEVEN_POINT_AVERAGE",
            summary="interpolated precision averaged over the recall levels 0, 0.1, ..., 1",
            names=("eleven_point_average",),
            trec=(TrecFamily("11pt_avg", "recall", combined=True),),
            context=("num_relevant",),
            options=(Option("recall", ELEVEN_POINTS, (0.2, 0.5, 0.8)),),
            oracle="eleven_pt_of_order",
        ),
        Measure(
            key="ndcg_rel",
            function_path="_ndcg_averages.ndcg_at_relevant",
            formula_path="_ndcg_averages.NDCG_AT_RELEVANT",
            summary="NDCG averaged at the ranks of the positive-gain documents",
            names=("ndcg_at_relevant",),
            trec=(TrecFamily("ndcg_rel", "gain", combined=True),),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="ndcg_rel_of_order",
        ),
        Measure(
            key="Rndcg",
            function_path="_ndcg_averages.ndcg_at_gain_levels",
            formula_path="_ndcg_averages.NDCG_AT_GAIN_LEVELS",
            summary="NDCG averaged where the ideal ranking's gain changes",
            names=("ndcg_at_gain_levels",),
            trec=(TrecFamily("Rndcg", "gain", combined=True),),
            context=("ideal_labels", "judged", "num_relevant"),
            options=(Option("gain", "linear", "exp2"),),
            oracle="rndcg_of_order",
        ),
    )
}
"""Every exact measure, by key."""
