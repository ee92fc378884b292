"""Measure names on the command line: lodestar's and trec_eval's, read against the registry.

Three spellings, all case-insensitive, each reported under the name asked for:

* lodestar's: a registry key or one of its names, with an optional cut-off
  after ``@``: ``ndcg@10``, ``P@5``, ``mrr``, ``map``.
* trec_eval's, with parameters after a dot: ``P.5,10`` (reported as ``P_5``
  and ``P_10``, parameters sorted as trec_eval sorts them), ``ndcg_cut.10``;
  or as trec_eval prints them: ``P_10``, ``ndcg_cut_10``, ``recip_rank``.
* a trec_eval family name alone means the family at trec_eval's default
  parameters, as in trec_eval: ``P`` is ``P_5`` … ``P_1000`` and ``ndcg_cut``
  is ``ndcg_cut_5`` … ``ndcg_cut_1000``. A name whose family takes no
  parameter (``map``, ``ndcg``, ``recip_rank``) is the measure itself.

trec_eval's parameters (meas_init.c) come in three shapes, and each is
reported as trec_eval reports it:

* a list of cut-offs or levels, one measure each, sorted: ``P.5,10`` gives
  ``P_5`` and ``P_10``; a real-valued level prints with two decimals
  (``Rprec_mult.0.2`` gives ``Rprec_mult_0.20``, ``iprec_at_recall..1`` gives
  ``iprec_at_recall_0.10``); a cut-off is read as trec_eval reads a long, so
  ``ndcg_cut.23.4`` is ``ndcg_cut_23``;
* one value made of every parameter, reported under the parameters as
  written: ``11pt_avg..25,.5,.75`` (the recall levels averaged),
  ``utility.2,-1,0,0`` (the four coefficients), ``set_F.0.5`` (beta);
* ``name=value`` pairs, likewise as written: ``ndcg.1=3,2=9`` and
  ``G.1=3.5`` (a gain per relevance level, a
  :class:`~lodestar.metrics.GainTable`), ``rbp.p=0.8``.

Three names are lines of the report rather than measures: ``runid`` (the
run's name), ``num_q`` (the number of queries, always reported) and
``relstring`` (the first N documents' judgments as characters, per query;
``relstring.20`` for N = 20). ``all_trec`` is every measure of trec_eval's
``-m all_trec``, ``official`` trec_eval's default set, and ``qrels_jg`` its
measures averaged over judgment groups (``map_avgjg``, ``P_avgjg``,
``Rprec_mult_avgjg``), which need ``-R qrels_jg``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from lodestar import _parameters, _registry
from lodestar._trec import families as _families


class Request(NamedTuple):
    """One value to compute per query, or one line of the report.

    Attributes:
      name: The name it is reported under.
      measure: The registry entry; None for the report's own lines
        (``runid``, ``num_q``, ``relstring``).
      k: The cut-off, or None.
      options: The measure's options set by the name, as sorted pairs.
      family: The trec_eval family it was asked for under, which places it
        in trec_eval's order (:data:`TREC_ORDER`); None for lodestar's names.
    """

    name: str
    measure: _registry.Measure | None
    k: int | None = None
    options: tuple[tuple[str, Any], ...] = ()
    family: str | None = None


REPORT_LINES = ("runid", "num_q", "relstring")
"""Names that are lines of the report, not measures."""

RELSTRING_LENGTH = 10
"""How many documents ``relstring`` shows by default (m_relstring.c)."""

TREC_ORDER = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj",
)
"""trec_eval's measures in the order it reports them (its measure table, m_*.c).

``-m all_trec`` is all of them. With ``--trec-eval`` the report follows this
order whatever the order of ``-m``, as trec_eval's does.
"""

OFFICIAL = TREC_ORDER[: TREC_ORDER.index("P") + 1]
"""trec_eval's default measures (``-m official``, and no ``-m`` at all in trec_eval)."""

JUDGMENT_GROUP_ORDER = tuple(
    family.name
    for key_families in _families.FAMILIES.values()
    for family in key_families
    if family.judgment_groups
)
"""trec_eval's measures averaged over judgment groups (``-R qrels_jg``), from the families.

In the table's order, which is trec_eval's: ``map_avgjg``, ``P_avgjg``, ``Rprec_mult_avgjg``.
"""

GROUPS = {
    "all_trec": TREC_ORDER,
    "official": OFFICIAL,
    "qrels_jg": ("runid", "num_q", *JUDGMENT_GROUP_ORDER),
}


def _lodestar_names() -> dict[str, _registry.Measure]:
    names = {}
    for measure in _registry.MEASURES.values():
        for name in (measure.key, *measure.names):
            names[name.lower()] = measure
    return names


def _trec_families() -> dict[str, tuple[_registry.Measure, _families.TrecFamily]]:
    return {
        family.name.lower(): (_registry.MEASURES[key], family)
        for key, key_families in _families.FAMILIES.items()
        for family in key_families
    }


def _known() -> str:
    lodestar = sorted({m.key for m in _registry.MEASURES.values()}, key=str.lower)
    return ", ".join(lodestar)


def unknown(text: str) -> ValueError:
    """The refusal of a name that is not a measure."""
    return ValueError(
        f"unknown measure {text!r}; expected one of {_known()}, optionally with a cut-off "
        "such as ndcg@10, or a trec_eval name such as ndcg_cut.10, P_10 or recip_rank "
        "(all_trec and official name trec_eval's sets)"
    )


# Whole numbers in ASCII digits, as trec_eval's C parser reads them (int()
# would also take other scripts' digits and underscores).
_DIGITS = re.compile(r"[0-9]+")


def _cutoff(text: str, token: str) -> int:
    if not _DIGITS.fullmatch(token):
        raise ValueError(f"measure {text!r}: the cut-off {token!r} is not a whole number")
    if _parameters.past_largest(token):
        raise ValueError(
            f"measure {text!r}: the cut-off is past {_parameters.LARGEST_WHOLE_NUMBER} "
            "(2**63 - 1), the largest a cut-off can be"
        )
    k = int(token)
    if k < 1:
        raise ValueError(f"measure {text!r} has cut-off {k}; a cut-off must be at least 1")
    return k


def _trec_cutoff(text: str, token: str) -> int:
    """A cut-off as trec_eval reads one: a number, its fraction dropped."""
    if not re.fullmatch(r"[0-9]+(\.[0-9]*)?", token):
        raise ValueError(f"measure {text!r}: the cut-off {token!r} is not a number")
    return _cutoff(text, token.partition(".")[0])


def _real(text: str, token: str) -> float:
    value = float(token) if _parameters.REAL_NUMBER.fullmatch(token) else math.nan
    if not math.isfinite(value):
        raise ValueError(f"measure {text!r}: the parameter {token!r} is not a finite number")
    return value


def _level(text: str, token: str) -> float:
    value = _real(text, token)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"measure {text!r}: the recall level {token!r} is not in [0, 1]")
    return value


def _combined_option(text: str, parameter: str, parameters: str) -> Any:
    """The one option value a combined parameter string stands for."""
    if parameter == "gain":
        from lodestar._gains import GainTable  # JAX is imported only to evaluate

        try:
            return GainTable.parse(parameters)
        except ValueError as error:
            raise ValueError(f"measure {text!r}: {error}") from None
    values = parameters.split(",")
    if parameter == "recall":
        return tuple(_level(text, v) for v in values)
    if parameter == "coefficients":
        if len(values) != 4:
            raise ValueError(
                f"measure {text!r} takes four coefficients (relevant retrieved, non-relevant "
                "retrieved, relevant not retrieved, non-relevant not retrieved); "
                f"got {parameters!r}"
            )
        return tuple(_real(text, v) for v in values)
    name, equals, value = parameters.partition("=")
    if equals and name != parameter or len(values) != 1:
        raise ValueError(f"measure {text!r} takes one parameter, {parameter}; got {parameters!r}")
    return _real(text, value if equals else parameters)


def _in_interval(text: str, measure: _registry.Measure, parameter: str, value: Any) -> Any:
    """``value`` if it lies in the range the measure's function accepts for it."""
    option = next((o for o in measure.options if o.name == parameter), None)
    if option is None or option.interval is None:
        return value
    low, high, closed = option.interval
    above = value >= low if closed in ("left", "both") else value > low
    below = value <= high if closed in ("right", "both") else value < high
    if above and below:
        return value
    # The refusal is worded by _validation, which imports JAX: only on a refusal,
    # so that parsing stays free of it (decision 0027).
    from lodestar import _validation

    try:
        _validation.check_float_in_range(
            value, name=parameter, caller=measure.key, low=low, high=high, closed=closed
        )
    except _validation.InvalidParameterError as error:
        raise ValueError(f"measure {text!r}: {error}") from None
    raise AssertionError(f"{value} is outside {option.interval} yet accepted")


def _with_parameters(text, measure, family, parameters: str) -> list[Request]:
    if family.parameter is None:
        raise ValueError(f"measure {family.name!r} takes no parameters; got {text!r}")
    if family.parameter == "k":
        ks = sorted({_trec_cutoff(text, p) for p in parameters.split(",")})
        return [_at(measure, family, k) for k in ks]
    if family.combined or family.parameter not in ("multiple", "recall"):
        value = _combined_option(text, family.parameter, parameters)
        value = _in_interval(text, measure, family.parameter, value)
        return [
            Request(
                f"{family.name}_{parameters}",
                measure,
                options=((family.parameter, value),),
                family=family.name,
            )
        ]
    read = _level if family.parameter == "recall" else _real
    values = sorted(
        {
            _in_interval(text, measure, family.parameter, read(text, p))
            for p in parameters.split(",")
        }
    )
    return [_at(measure, family, value) for value in values]


def _check_required(text: str, measure: _registry.Measure) -> None:
    """Refuse a lodestar name for a measure whose option has no default (the recall level)."""
    missing = [
        o
        for o in measure.options
        if o.default is _registry.REQUIRED and o.name != "max_label"  # ERR's: from the qrels
    ]
    if missing:
        trec = _families.FAMILIES.get(measure.key)
        family = trec[0].name if trec else measure.key
        raise ValueError(
            f"measure {text!r} needs its {missing[0].name}: give it in trec_eval's form, "
            f"such as {family}.{missing[0].example}"
        )


def _at(measure, family, value) -> Request:
    """The request for one parameter value of a family, named as trec_eval names it."""
    name = f"{family.name}_{family.value_format.format(value)}"
    if family.parameter == "k":
        return Request(name, measure, value, family=family.name)
    return Request(name, measure, options=((family.parameter, value),), family=family.name)


def _report_line(text: str, name: str, parameters: str | None) -> list[Request]:
    if name != "relstring":
        if parameters is not None:
            raise ValueError(f"{name!r} takes no parameters; got {text!r}")
        return [Request(name, None, family=name)]
    if parameters is None:
        return [Request("relstring", None, RELSTRING_LENGTH, family=name)]
    length = _trec_cutoff(text, parameters)
    return [Request(f"relstring_{length}", None, length, family=name)]


def parse(text: str) -> list[Request]:
    """The requests one ``-m`` name stands for.

    Raises:
      ValueError: the name is unknown, or a parameter is not one the
        measure takes.
    """
    lowered = text.lower()
    if lowered in GROUPS:
        return [request for name in GROUPS[lowered] for request in parse(name)]
    lodestar, families = _lodestar_names(), _trec_families()
    if "@" in text:
        name, _, k = text.partition("@")
        measure = lodestar.get(name.lower())
        if measure is None:
            raise unknown(text)
        if not measure.cutoff:
            raise ValueError(f"measure {name!r} takes no cut-off; got {text!r}")
        _check_required(text, measure)
        return [Request(text, measure, _cutoff(text, k))]
    name, dot, parameters = text.partition(".")
    if name.lower() in REPORT_LINES:
        return _report_line(text, name.lower(), parameters if dot else None)
    if dot and name.lower() in families:
        return _with_parameters(text, *families[name.lower()], parameters)
    if lowered in families:
        measure, family = families[lowered]
        if family.defaults:
            return [_at(measure, family, value) for value in family.defaults]
        return [Request(family.name, measure, family=family.name)]
    if lowered in lodestar:
        _check_required(text, lodestar[lowered])
        return [Request(text, lodestar[lowered])]
    match = re.fullmatch(r"(.+)_(\d+(?:\.\d+)?)", text)
    if match and match[1].lower() in families:
        measure, family = families[match[1].lower()]
        if family.parameter == "k" and "." not in match[2]:
            request = _at(measure, family, _cutoff(text, match[2]))
            return [request._replace(name=text)]
        if family.parameter in ("multiple", "recall") and not family.combined:
            read = _level if family.parameter == "recall" else _real
            return [_at(measure, family, read(text, match[2]))._replace(name=text)]
    raise unknown(text)


def parse_all(texts: Sequence[str]) -> list[Request]:
    """The requests of every name in order, each reported name once (the first wins).

    ``relstring`` is one line: a later length replaces an earlier one, so
    ``-m all_trec -m relstring.20`` shows 20 documents, as in trec_eval.
    """
    requests: dict[str, Request] = {}
    for text in texts:
        for request in parse(text):
            if request.family == "relstring":
                requests = {n: r for n, r in requests.items() if r.family != "relstring"}
            requests.setdefault(request.name, request)
    return list(requests.values())


def names_relstring(texts: Sequence[str]) -> bool:
    """Whether ``relstring`` is named itself, not only held by a set such as ``all_trec``."""
    named = [text for text in texts if str(text).lower() not in GROUPS]
    return any(request.family == "relstring" for request in parse_all(named))


def over_judgment_groups(request: Request) -> bool:
    """Whether the request is a measure averaged over judgment groups (``map_avgjg``, ...)."""
    return request.family in JUDGMENT_GROUP_ORDER


def measures(requests: Sequence[Request]) -> list[Request]:
    """The requests that are measures, without the report's own lines."""
    return [r for r in requests if r.measure is not None]


def in_trec_order(requests: Sequence[Request]) -> list[Request]:
    """``requests`` in the order trec_eval reports them; lodestar's names keep theirs, last."""
    position = {name: i for i, name in enumerate(TREC_ORDER + JUDGMENT_GROUP_ORDER)}

    def key(indexed):
        index, request = indexed
        return (position.get(request.family, len(position)), index)

    return [request for _, request in sorted(enumerate(requests), key=key)]
