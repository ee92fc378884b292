"""The measure tables' rows as text, from the registry: no Sphinx or docutils needed.

``measure_table.py`` (the Sphinx directive) renders these rows, and
``tests/test_docs_build.py`` reads them without building the site.
"""

from __future__ import annotations

import importlib


def command_line_names(measure) -> list[str]:
    """The measure's names on the command line, with ``@k`` where it takes a cut-off."""
    names = [measure.key, *getattr(measure, "names", ())]
    if getattr(measure, "cutoff", True):
        return [spelling for name in names for spelling in (name, f"{name}@k")]
    return names


def trec_names(measure) -> list[str]:
    """trec_eval's names for the measure (``P.k`` for a family with a cut-off)."""
    families = importlib.import_module("lodestar._trec.families").FAMILIES
    return [
        family.name if family.parameter is None else f"{family.name}.{family.parameter}"
        for family in families.get(measure.key, ())
    ]


def function_name(measure) -> str:
    """The name of the measure's function in :mod:`lodestar.metrics`."""
    return measure.function_path.rpartition(".")[2]


def _shown(value) -> str:
    """A parameter value as a reader writes it: ``1`` for 1.0, ``−1`` with a real minus."""
    if isinstance(value, tuple):
        return ", ".join(_shown(v) for v in value)
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text.replace("-", "\u2212")


def _values(family, values) -> str:
    """A family's default parameters, abbreviated past three."""
    cutoffs = importlib.import_module("lodestar._trec.families").TREC_CUTOFFS
    if tuple(values) == cutoffs:
        return "*C*"
    shown = [family.value_format.format(v) for v in values]
    return ", ".join(shown) if len(shown) <= 3 else f"{shown[0]}, {shown[1]}, \u2026, {shown[-1]}"


def _family_text(measure, family) -> str:
    """How one trec_eval family of the measure is written, with what its bare name means."""
    default = {o.name: o.default for o in measure.options}.get(family.parameter)
    name = f"`{family.name}`"
    if family.parameter is None:
        text = name
    elif family.parameter == "gain":
        example = "1=3,2=9" if family.name == "ndcg" else "1=3.5" if family.name == "G" else ""
        text = f"{name}, with a gain table" + (f" `{family.name}.{example}`" if example else "")
    elif family.defaults:
        text = f"{name} ({_values(family, family.defaults)})"
    elif family.combined:
        levels = [f"{v:.1f}" for v in default]
        text = (
            f"{name} (the levels {levels[0]}, {levels[1]}, \u2026, {levels[-1]}); "
            f"`{family.name}.x,y,\u2026`"
        )
    elif family.parameter == "coefficients":
        text = f"{name} ({_shown(default)}); `{family.name}.a,b,c,d`"
    elif family.parameter == "beta":
        text = f"{name} (x = {_shown(default)}); `{family.name}.x`"
    else:
        text = (
            f"{name} ({family.parameter} = {_shown(default)}); `{family.name}.{family.parameter}=x`"
        )
    return text + (" under `-R qrels_jg`" if family.judgment_groups else "")


def command_line_row(measure) -> tuple[str, str, str, str, str]:
    """The command-line page's row for ``measure``, each cell as Markdown-style text."""
    registry = importlib.import_module("lodestar._registry")
    families = importlib.import_module("lodestar._trec.families").FAMILIES.get(measure.key, ())
    required = [
        o for o in measure.options if o.default is registry.REQUIRED and o.name != "max_label"
    ]
    if required:
        names = f"none: give the level, `{families[0].name}.{required[0].example}`"
    else:
        names = ", ".join(f"`{name}`" for name in measure.names)
    trec = "; ".join(_family_text(measure, family) for family in families)
    labels = measure.labels + (", count" if measure.counts else "")
    return f"`{measure.key}`", names, trec, labels, measure.summary
