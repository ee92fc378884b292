"""Sphinx extension: the ``measure-table`` directive, a table of every exact measure.

The rows come from ``lodestar._registry.MEASURES``, where each measure is
declared once, so a measure added there appears on the site without an edit
to ``docs/``. Use it in a MyST page as::

    ```{measure-table}
    ```

The table is built from docutils nodes, so it reads the same from MyST and
reStructuredText.
"""

from __future__ import annotations

import importlib

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

HEADER = ("command line", "function", "labels", "what it computes", "trec_eval names")


def command_line_names(measure) -> list[str]:
    """The measure's names on the command line, with ``@k`` where it takes a cut-off."""
    names = [measure.key, *getattr(measure, "names", ())]
    if getattr(measure, "cutoff", True):
        return [spelling for name in names for spelling in (name, f"{name}@k")]
    return names


def trec_names(measure) -> list[str]:
    """trec_eval's names for the measure (``P.k`` for a family with a cut-off)."""
    return [
        family.name if family.parameter is None else f"{family.name}.{family.parameter}"
        for family in getattr(measure, "trec", ())
    ]


def function_name(measure) -> str:
    """The name of the measure's function in :mod:`lodestar.metrics`."""
    return measure.function_path.rpartition(".")[2]


def _literals(words: list[str]) -> list[nodes.Node]:
    if not words:
        return [nodes.Text("\u2014")]
    cell: list[nodes.Node] = []
    for index, word in enumerate(words):
        if index:
            cell.append(nodes.Text(", "))
        cell.append(nodes.literal(word, word))
    return cell


def _function(name: str, exported: set[str], docname: str) -> list[nodes.Node]:
    if name not in exported:
        return [nodes.literal(name, name)]
    target = f"lodestar.metrics.{name}"
    reference = addnodes.pending_xref(
        "",
        refdomain="py",
        reftype="func",
        reftarget=target,
        refexplicit=False,
        refwarn=True,
        refdoc=docname,
    )
    reference += nodes.literal(f"{name}()", f"{name}()", classes=["xref", "py", "py-func"])
    return [reference]


def _row(cells: list[list[nodes.Node]]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += nodes.paragraph("", "", *cell)
        row += entry
    return row


def _table(body: list[list[list[nodes.Node]]]) -> nodes.table:
    table = nodes.table(classes=["lodestar-measures"])
    group = nodes.tgroup(cols=len(HEADER))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in HEADER]
    head = nodes.thead()
    head += _row([[nodes.Text(title)] for title in HEADER])
    rows = nodes.tbody()
    rows += [_row(cells) for cells in body]
    group += [head, rows]
    return table


class MeasureTable(SphinxDirective):
    """Every measure of the registry, as a table."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        """Build the table from the registry."""
        registry = importlib.import_module("lodestar._registry")
        metrics = importlib.import_module("lodestar.metrics")
        exported = set(metrics.__all__)
        body = [
            [
                _literals(command_line_names(measure)),
                _function(function_name(measure), exported, self.env.docname),
                [nodes.Text(measure.labels)],
                [nodes.Text(measure.summary)],
                _literals(trec_names(measure)),
            ]
            for measure in registry.MEASURES.values()
        ]
        return [_table(body)]


def setup(app):
    """Register the directive."""
    app.add_directive("measure-table", MeasureTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
