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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from lodestar import _registry


class Request(NamedTuple):
    """One value to compute per query.

    Attributes:
      name: The name it is reported under.
      measure: The registry entry.
      k: The cut-off, or None.
      options: The measure's options set by the name, as sorted pairs.
    """

    name: str
    measure: _registry.Measure
    k: int | None = None
    options: tuple[tuple[str, Any], ...] = ()


def _lodestar_names() -> dict[str, _registry.Measure]:
    names = {}
    for measure in _registry.MEASURES.values():
        for name in (measure.key, *measure.names):
            names[name.lower()] = measure
    return names


def _trec_families() -> dict[str, tuple[_registry.Measure, _registry.TrecFamily]]:
    return {
        family.name.lower(): (measure, family)
        for measure in _registry.MEASURES.values()
        for family in measure.trec
    }


def _known() -> str:
    lodestar = sorted({m.key for m in _registry.MEASURES.values()}, key=str.lower)
    return ", ".join(lodestar)


def unknown(text: str) -> ValueError:
    """The refusal of a name that is not a measure."""
    return ValueError(
        f"unknown measure {text!r}; expected one of {_known()}, optionally with a cut-off "
        "such as ndcg@10, or a trec_eval name such as ndcg_cut.10, P_10 or recip_rank"
    )


def _cutoff(text: str, token: str) -> int:
    if not re.fullmatch(r"\d+", token):
        raise ValueError(f"measure {text!r}: the cut-off {token!r} is not a whole number")
    k = int(token)
    if k < 1:
        raise ValueError(f"measure {text!r} has cut-off {k}; a cut-off must be at least 1")
    return k


def parse(text: str) -> list[Request]:
    """The requests one ``-m`` name stands for.

    Raises:
      ValueError: the name is unknown, or a cut-off is not a whole number
        of at least 1.
    """
    lodestar, families = _lodestar_names(), _trec_families()
    if "@" in text:
        name, _, k = text.partition("@")
        measure = lodestar.get(name.lower())
        if measure is None:
            raise unknown(text)
        if not measure.cutoff:
            raise ValueError(f"measure {name!r} takes no cut-off; got {text!r}")
        return [Request(text, measure, _cutoff(text, k))]
    if "." in text:
        name, _, parameters = text.partition(".")
        entry = families.get(name.lower())
        if entry is None:
            raise unknown(text)
        measure, family = entry
        if family.parameter != "k":
            raise ValueError(f"measure {name!r} takes no parameters; got {text!r}")
        ks = sorted({_cutoff(text, p) for p in parameters.split(",")})
        return [Request(f"{family.name}_{k}", measure, k) for k in ks]
    lowered = text.lower()
    if lowered in families:
        measure, family = families[lowered]
        if family.defaults:
            return [Request(f"{family.name}_{k}", measure, k) for k in family.defaults]
        return [Request(text, measure)]
    if lowered in lodestar:
        return [Request(text, lodestar[lowered])]
    match = re.fullmatch(r"(.+)_(\d+)", text)
    if match and match[1].lower() in families:
        measure, family = families[match[1].lower()]
        if family.parameter == "k":
            return [Request(text, measure, _cutoff(text, match[2]))]
    raise unknown(text)


def parse_all(texts: Sequence[str]) -> list[Request]:
    """The requests of every name in order, each reported name once (the first wins)."""
    requests: dict[str, Request] = {}
    for text in texts:
        for request in parse(text):
            requests.setdefault(request.name, request)
    return list(requests.values())
