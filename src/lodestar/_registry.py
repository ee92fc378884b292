"""The registry of exact measures: each one declared once, and everything else iterates.

A measure is a function of :mod:`lodestar.metrics` plus what the rest of the
project needs to know about it: its formula (so that ``lodestar evaluate`` can
evaluate many measures on one ranking), the labels it reads, its options, its
names on the command line, the per-list context it accepts under trec_eval's
definitions, and how its values are averaged over queries. Which trec_eval
names each one answers to is a table of its own
(:data:`lodestar._trec.families.FAMILIES`), and each one's brute-force oracle
is the tests' (``tests/oracles.py``'s ``ORACLES``).

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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from lodestar._rank_sums import RankSum
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
      interval: For a real-valued option, ``(low, high, closed)`` as
        :func:`lodestar._validation.check_float_in_range` takes them: the
        range the command line checks a trec_eval parameter against. The
        function checks the same range itself; a test holds the two equal.
    """

    name: str
    default: Any
    example: Any
    interval: tuple[float, float, str] | None = None


# trec_eval's default recall levels of iprec_at_recall and 11pt_avg.
ELEVEN_POINTS = tuple(i / 10 for i in range(11))

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

    The function is named by its place in :mod:`lodestar.metrics`
    (``"_dcg.ndcg"``) and imported when first asked for, so that reading
    measure names imports no JAX. The function carries its formula
    (:attr:`formula`), and what the arithmetic reads (the label kind and
    sign, the tie key) is the formula's own
    (:class:`lodestar.metrics._kernel.Formula`), read through :attr:`labels`,
    :attr:`nonnegative_labels` and :attr:`tie_key`.

    Attributes:
      key: The registry key; also the canonical command-line name.
      function_path: The public function, as ``"<private module>.<name>"``
        under :mod:`lodestar.metrics`; :attr:`function` imports it.
      summary: One line for the documentation's measure table.
      cutoff: Whether it takes ``k``.
      names: Other command-line names in lodestar's style (``mrr`` for
        reciprocal rank), each usable with ``@k`` when ``cutoff``.
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
      rank_sum_path: Its declaration as a sum over items of a utility of
        each item's rank (:class:`lodestar._rank_sums.RankSum`), likewise
        under :mod:`lodestar.metrics` (or a full ``"lodestar...."`` path, for
        a declaration only :mod:`lodestar.smooth` reads), or None if it is
        not one; :attr:`rank_sum` imports it. :mod:`lodestar.smooth`
        evaluates it on soft ranks.
    """

    key: str
    function_path: str
    summary: str
    cutoff: bool = True
    names: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    aggregate: Literal["mean", "geometric", "sum"] = "mean"
    rank_sum_path: str | None = None

    @functools.cached_property
    def function(self) -> Callable:
        """The public function in :mod:`lodestar.metrics`."""
        return _resolve(self.function_path)

    @property
    def formula(self) -> Formula:
        """The formula the function evaluates, which the command line evaluates with others.

        The function carries it (:func:`lodestar.metrics._kernel.computes`).
        """
        return self.function.formula

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
    def counts(self) -> bool:
        """Whether it counts documents: summed over queries, and printed as an integer."""
        return self.aggregate == "sum"

    @property
    def required_options(self) -> dict[str, Any]:
        """Example values of the options every call must give."""
        return {o.name: o.example for o in self.options if o.default is REQUIRED}


def _resolve(path: str):
    module, _, name = path.rpartition(".")
    # A rank sum that only the smooth functions read is declared beside them
    # and named from the package: "lodestar.smooth._rank_sum_measures.X".
    package = "" if module.startswith("lodestar.") else "lodestar.metrics."
    return getattr(importlib.import_module(f"{package}{module}"), name)


MEASURES: Mapping[str, Measure] = {
    m.key: m
    for m in (
        Measure(
            key="ndcg",
            function_path="_dcg.ndcg",
            summary="DCG over the ideal DCG; linear gain",
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
        ),
        Measure(
            key="dcg",
            function_path="_dcg.dcg",
            summary="discounted cumulative gain; linear gain, log base 2",
            options=(Option("gain", "linear", "exp2"), Option("log_base", 2.0, 3.0)),
            rank_sum_path="_dcg.DCG_SUM",
        ),
        Measure(
            key="mrr",
            function_path="_first_relevant.reciprocal_rank",
            summary="reciprocal rank of the first relevant document",
            names=("rr", "reciprocal_rank"),
        ),
        Measure(
            key="map",
            function_path="_average_precision.average_precision",
            summary="average precision (its mean is MAP)",
            names=("ap", "average_precision"),
            context=("num_relevant",),
            rank_sum_path="_average_precision.AVERAGE_PRECISION_SUM",
        ),
        Measure(
            key="P",
            function_path="_precision.precision",
            summary="relevant documents in the top k, over k, even when fewer were retrieved",
            names=("precision",),
            rank_sum_path="_precision.PRECISION_SUM",
        ),
        Measure(
            key="recall",
            function_path="_precision.recall",
            summary="relevant documents in the top k, over R (all relevant documents)",
            context=("num_relevant",),
            rank_sum_path="_precision.RECALL_SUM",
        ),
        Measure(
            key="hits",
            function_path="_first_relevant.hits",
            summary="1 if a relevant document is in the top k, else 0",
        ),
        Measure(
            key="err",
            function_path="_err.err",
            summary="expected reciprocal rank (Chapelle et al.)",
            options=(Option("max_label", REQUIRED, 3.0),),
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
            summary="documents retrieved (at most k)",
            names=("num_retrieved",),
            aggregate="sum",
        ),
        # trec_eval's all line for num_rel with -c counts every qrels line
        # with a relevance above 0 in the whole file, whatever -l says (its
        # te_calc_avg_num_rel); the sum of the per-query num_relevant is that
        # number for -l 1. The function returns num_relevant even for an
        # empty list, so a query missing from the run still adds its count.
        Measure(
            key="num_rel",
            function_path="_counts.num_relevant",
            summary="R, the relevant documents, retrieved or not",
            names=("num_relevant",),
            context=("num_relevant", "judged"),
            aggregate="sum",
        ),
        Measure(
            key="num_rel_ret",
            function_path="_counts.num_relevant_retrieved",
            summary="relevant documents retrieved",
            names=("num_relevant_retrieved",),
            context=("judged",),
            aggregate="sum",
        ),
        Measure(
            key="num_nonrel_judged_ret",
            function_path="_counts.num_nonrelevant_judged_retrieved",
            summary="judged non-relevant documents retrieved",
            names=("num_nonrelevant_judged_retrieved",),
            context=("judged",),
            aggregate="sum",
        ),
        Measure(
            key="Rprec",
            function_path="_r_precision.r_precision",
            summary="precision at R; `Rprec_mult.x` at the cut-off `(long) (x R + 0.9)`",
            names=("r_precision",),
            context=("num_relevant",),
            options=(Option("multiple", 1.0, 0.6, (0.0, math.inf, "neither")),),
            rank_sum_path="lodestar.smooth._rank_sum_measures.R_PRECISION_SUM",
        ),
        Measure(
            key="relative_P",
            function_path="_r_precision.relative_precision",
            summary="relevant documents in the top k, over min(k, R)",
            names=("relative_precision",),
            context=("num_relevant",),
        ),
        # The set measures' k is trec_eval's -M: the retrieved set's size.
        Measure(
            key="set_P",
            function_path="_set.set_precision",
            summary="relevant retrieved over retrieved",
            names=("set_precision",),
        ),
        Measure(
            key="set_recall",
            function_path="_set.set_recall",
            summary="relevant retrieved over R",
            context=("num_relevant",),
        ),
        Measure(
            key="set_relative_P",
            function_path="_set.set_relative_precision",
            summary="relevant retrieved over min(retrieved, R)",
            names=("set_relative_precision",),
            context=("num_relevant",),
        ),
        Measure(
            key="set_map",
            function_path="_set.set_average_precision",
            summary="set precision times set recall (unranked AP)",
            names=("set_average_precision",),
            context=("num_relevant",),
        ),
        Measure(
            key="set_F",
            function_path="_set.set_f",
            summary=(
                "(1 + x) P R / (x P + R) of set precision P and set recall R; "
                "trec_eval's x is the square of van Rijsbergen's β"
            ),
            names=("set_f",),
            context=("num_relevant",),
            options=(Option("beta", 1.0, 0.5, (0.0, math.inf, "left")),),
        ),
        # num_documents is trec_eval's -N, which the command line passes as 0
        # when absent, as trec_eval does.
        Measure(
            key="utility",
            function_path="_set.utility",
            summary="aX + b(K − X) + c(R − X) + d(N + X − K − R), X relevant of K retrieved",
            context=("num_relevant",),
            options=(
                Option("coefficients", (1.0, -1.0, 0.0, 0.0), (2.0, -1.0, -0.5, 0.0)),
                Option("num_documents", None, 1000),
            ),
        ),
        Measure(
            key="unj",
            function_path="_counts.unjudged",
            summary="unjudged documents in the top k, over k",
            names=("unjudged",),
            context=("judged",),
        ),
        Measure(
            key="rbp",
            function_path="_rbp.rank_biased_precision",
            summary="rank-biased precision (Moffat & Zobel)",
            names=("rank_biased_precision",),
            context=("max_label",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
            rank_sum_path="lodestar.smooth._rank_sum_measures.RANK_BIASED_PRECISION_SUM",
        ),
        Measure(
            key="rbp_resid",
            function_path="_rbp.rank_biased_precision_residual",
            summary="the most the unjudged documents could add to RBP",
            names=("rank_biased_precision_residual",),
            context=("judged",),
            options=(Option("p", 0.9, 0.5, (0.0, 1.0, "neither")),),
        ),
        # Per query gm_map is average precision; trec_eval prints no -q line
        # for it, and its all line is exp(mean(log(max(AP, MIN_GEO_MEAN))))
        # over the evaluated queries (with -c: over every qrels query, a
        # missing one counting MIN_GEO_MEAN). See MIN_GEO_MEAN.
        Measure(
            key="gm_map",
            function_path="_average_precision.average_precision",
            summary="average precision, averaged geometrically over the queries",
            context=("num_relevant",),
            aggregate="geometric",
        ),
        Measure(
            key="bpref",
            function_path="_bpref.bpref",
            summary="the share of judged non-relevant documents each relevant one outranks",
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
        ),
        # trec_eval's gm_bpref: per query ln(max(bpref, 1e-5)); its `all` line
        # is exp of the mean of those logs, a query of the qrels missing from
        # the run (with -c) adding ln(1e-5); no per-query line is printed.
        Measure(
            key="gm_bpref",
            function_path="_bpref.bpref",
            summary="bpref, averaged geometrically over the queries (each floored at 1e-5)",
            context=("num_relevant", "num_judged_nonrelevant", "judged"),
            aggregate="geometric",
        ),
        Measure(
            key="infAP",
            function_path="_infap.inferred_average_precision",
            summary="inferred average precision over a judged sample of the pool",
            names=("infap", "inferred_average_precision"),
            context=("num_relevant", "judged", "pooled"),
        ),
        Measure(
            key="binG",
            function_path="_normalized_gain.binary_normalized_gain",
            summary="mean over relevant documents of 1 / log2(2 + non-relevant above)",
            names=("binary_normalized_gain",),
            context=("num_relevant", "judged"),
        ),
        Measure(
            key="G",
            function_path="_normalized_gain.normalized_gain",
            summary="gain over log2(2 + ideal cost - gain so far), over the ideal's total",
            names=("normalized_gain",),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
        ),
        # Interpolated precision and the NDCG family of trec_eval (decision 0017).
        Measure(
            key="iprec_at_recall",
            function_path="_interpolated.interpolated_precision",
            summary="interpolated precision at a recall level (one value per level)",
            context=("num_relevant",),
            options=(Option("recall", REQUIRED, 0.3),),
        ),
        Measure(
            key="11pt_avg",
            function_path="_interpolated.eleven_point_average",
            summary="interpolated precision averaged over the recall levels",
            names=("eleven_point_average",),
            context=("num_relevant",),
            options=(Option("recall", ELEVEN_POINTS, (0.2, 0.5, 0.8)),),
        ),
        Measure(
            key="ndcg_rel",
            function_path="_ndcg_averages.ndcg_at_relevant",
            summary="NDCG averaged at the ranks of the positive-gain documents",
            names=("ndcg_at_relevant",),
            context=("ideal_labels", "judged"),
            options=(Option("gain", "linear", "exp2"),),
        ),
        Measure(
            key="Rndcg",
            function_path="_ndcg_averages.ndcg_at_gain_levels",
            summary="NDCG averaged where the ideal ranking's gain changes",
            names=("ndcg_at_gain_levels",),
            context=("ideal_labels", "judged", "num_relevant"),
            options=(Option("gain", "linear", "exp2"),),
        ),
    )
}
"""Every exact measure, by key."""
