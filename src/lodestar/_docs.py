"""Docstring text that many public functions share, written once.

A public docstring names a shared entry with a marker line such as
``{{where}}`` in its ``Args:`` section, and :func:`shared` replaces the marker
with the entry's text at the marker's indentation, continuation lines indented
two more spaces as Google style wants. What stays in each docstring is what
is particular to the function: its definition, refusals, example, remarks and
references.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

ARGS = {
    "scores": "scores: ``(..., n)`` scores the ranking is made from; higher ranks first.",
    "ignore_ties": (
        "ignore_ties: Rank tied scores by descending index instead of averaging\nover their orders."
    ),
    "where": "where: ``(..., n)`` boolean mask; False marks padding.",
    "packed": (
        "segments: ``(..., n)`` integer ids of the lists packed into each row;\n"
        "the result is then ``(..., max_segments)``, one value per list. See\n"
        "*Packed lists* in the module docstring.\n"
        "max_segments: Lists per row (ids ``0 .. max_segments - 1``); required\n"
        "when ``segments`` is traced, else 1 + the largest id.\n"
        "max_segment_size: Room for the longest list; by default the longest\n"
        "list rounded up to a power of two, or ``n`` when ``segments`` is traced."
    ),
    "num_relevant": (
        "num_relevant: ``(...)`` the number of relevant items of each list,\n"
        "retrieved or not (trec_eval's ``num_rel``), or None to count the\n"
        "relevant real items of the list. It must be at least that count."
    ),
    "judged": (
        "judged: ``(..., n)`` boolean mask of the items that were judged, or\n"
        "None if every real item was. An unjudged item is not relevant."
    ),
    "num_judged_nonrelevant": (
        "num_judged_nonrelevant: ``(...)`` the number of judged non-relevant\n"
        "items of each list, retrieved or not (trec_eval's judged documents\n"
        "below the relevance level), or None to count the judged real items\n"
        "of the list labelled 0. It must be at least that count."
    ),
    "pooled": (
        "pooled: ``(..., n)`` boolean mask of the items in the judgement pool,\n"
        "judged or not (trec_eval: in the qrels at all), or None for the\n"
        "judged items. A judged item always counts as pooled."
    ),
    # The NDCG family beyond ndcg (decision 0017).
    "judged_gain": (
        "judged: ``(..., n)`` boolean mask of the items that were judged, or\n"
        "None if every real item was. An unjudged item gains 0 whatever its\n"
        "label, which matters when level 0 has a gain."
    ),
    "ideal_pool": (
        "ideal_labels: ``(..., m)`` labels of every judged item of each list,\n"
        "retrieved or not, for the ideal ranking; None uses the list's own\n"
        "judged items. Not with ``segments``.\n"
        "ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks\n"
        "padding."
    ),
}

_MARKER = re.compile(r"^(?P<indent>[ \t]*)\{\{(?P<name>\w+)\}\}[ \t]*$", re.MULTILINE)

F = TypeVar("F", bound=Callable)


def _render(match: re.Match) -> str:
    indent = match["indent"]
    entries = ARGS[match["name"]].split("\n")
    lines = []
    for line in entries:
        # A line that starts a new argument ("name: text") sits at the marker's
        # indentation; its continuation lines are indented two more spaces.
        starts_argument = re.match(r"^\w+: ", line) is not None
        lines.append(indent + ("" if starts_argument else "  ") + line)
    return "\n".join(lines)


def expand(docstring: str) -> str:
    """``docstring`` with every ``{{name}}`` marker line replaced by its shared text."""
    return _MARKER.sub(_render, docstring)


def shared(function: F) -> F:
    """Decorator: expand the shared-argument markers of ``function``'s docstring."""
    if function.__doc__:
        function.__doc__ = expand(function.__doc__)
    return function
