"""trec_eval's names for lodestar's measures: one table, read by the name grammar and the docs.

The registry (:mod:`lodestar._registry`) declares what a measure is; this
table says which of trec_eval's measure families (its ``m_*.c`` files) each
one answers to, with the parameters trec_eval gives a bare family and how a
parameter prints in the reported name. :mod:`.names` reads names against it,
and the documentation's measure tables show it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from lodestar._registry import ELEVEN_POINTS


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


TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
"""trec_eval's default cut-offs for P, recall, ndcg_cut, map_cut, relative_P, ..."""

RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
"""trec_eval's default multiples of R for Rprec_mult and Rprec_mult_avgjg."""

FAMILIES: Mapping[str, tuple[TrecFamily, ...]] = {
    "ndcg": (
        TrecFamily("ndcg", "gain", combined=True),
        TrecFamily("ndcg_cut", "k", TREC_CUTOFFS),
    ),
    "mrr": (TrecFamily("recip_rank"),),
    "map": (
        TrecFamily("map"),
        TrecFamily("map_cut", "k", TREC_CUTOFFS),
        TrecFamily("map_avgjg", judgment_groups=True),
    ),
    "P": (
        TrecFamily("P", "k", TREC_CUTOFFS),
        TrecFamily("P_avgjg", "k", TREC_CUTOFFS, judgment_groups=True),
    ),
    "recall": (TrecFamily("recall", "k", TREC_CUTOFFS),),
    "hits": (TrecFamily("success", "k", (1, 5, 10)),),
    "num_ret": (TrecFamily("num_ret"),),
    "num_rel": (TrecFamily("num_rel"),),
    "num_rel_ret": (TrecFamily("num_rel_ret"),),
    "num_nonrel_judged_ret": (TrecFamily("num_nonrel_judged_ret"),),
    "Rprec": (
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
    "relative_P": (TrecFamily("relative_P", "k", TREC_CUTOFFS),),
    "set_P": (TrecFamily("set_P"),),
    "set_recall": (TrecFamily("set_recall"),),
    "set_relative_P": (TrecFamily("set_relative_P"),),
    "set_map": (TrecFamily("set_map"),),
    "set_F": (TrecFamily("set_F", "beta"),),
    "utility": (TrecFamily("utility", "coefficients"),),
    "unj": (TrecFamily("unj", "k", (5, 10, 20)),),
    "rbp": (TrecFamily("rbp", "p"),),
    "rbp_resid": (TrecFamily("rbp_resid", "p"),),
    "gm_map": (TrecFamily("gm_map"),),
    "bpref": (TrecFamily("bpref"),),
    "gm_bpref": (TrecFamily("gm_bpref"),),
    "infAP": (TrecFamily("infAP"),),
    "binG": (TrecFamily("binG"),),
    "G": (TrecFamily("G", "gain"),),
    "iprec_at_recall": (
        TrecFamily(
            "iprec_at_recall",
            "recall",
            ELEVEN_POINTS,
            value_format="{:.2f}",
        ),
    ),
    "11pt_avg": (TrecFamily("11pt_avg", "recall", combined=True),),
    "ndcg_rel": (TrecFamily("ndcg_rel", "gain", combined=True),),
    "Rndcg": (TrecFamily("Rndcg", "gain", combined=True),),
}
"""The trec_eval families of each registry key, in trec_eval's order within a key.

A key missing here (``dcg``, ``err``) has no trec_eval name. Notes on single
families:

* ``Rprec`` is ``r_precision`` at ``multiple=1`` (trec_eval's cut-off
  ``(long) (R + 0.9)`` is R); ``Rprec_mult.x`` is ``r_precision(multiple=x)``,
  printed as ``Rprec_mult_%3.2f``.
* Bare ``set_F`` is beta = 1.0 and prints as ``set_F``; ``set_F.x`` prints
  ``set_F_x`` with x as written on the command line.
* ``utility.a,b,c,d`` gives all four coefficients as one value (one measure,
  printed ``utility_a,b,c,d``).
* ``rbp.p=x`` and ``rbp_resid.p=x`` set p by name (trec_eval's name=value
  pairs, printed ``rbp_p=x``); bare ``rbp`` is p = 0.9. trec_eval reads no
  other pair for ``rbp_resid``, and integer-named pairs for ``rbp`` set gains
  per level, which lodestar does not take.
* ``G.1=3.5,2=9`` takes ``level=gain`` pairs, which become a ``gain``
  callable on the labels (levels not named keep gain = level); bare ``G`` is
  the relevance level as the gain.
"""
