"""Sphinx extension: the ``measure-table`` directive, a table of every exact measure.

The rows come from ``lodestar._registry.MEASURES``, where each measure is
declared once, so a measure added there appears on the site without an edit
to ``docs/``. Use it in a MyST page as::

    ```{measure-table}
    ```

for the front page's table (the Python function of each measure), or with
``:layout: command-line`` for the command-line page's, which spells out the
trec_eval names with the parameters a bare family stands for (from
``lodestar._trec.families``). The table is built from docutils nodes, so it
reads the same from MyST and reStructuredText.
"""

from __future__ import annotations

import importlib
import re

from docutils import nodes
from docutils.parsers.rst import directives
from measure_rows import command_line_names, command_line_row, function_name, trec_names
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective

HEADER = ("command line", "function", "labels", "what it computes", "trec_eval names")
COMMAND_LINE_HEADER = (
    "key",
    "other lodestar names",
    "trec_eval names (a bare family means)",
    "labels",
    "what it computes",
)


def _marked(text: str) -> list[nodes.Node]:
    """Text whose backquoted spans are literals and whose ``*C*`` is emphasis."""
    if not text:
        return [nodes.Text("\u2014")]
    cell: list[nodes.Node] = []
    for index, piece in enumerate(re.split(r"`([^`]*)`", text)):
        if index % 2:
            cell.append(nodes.literal(piece, piece))
            continue
        for part_index, part in enumerate(re.split(r"\*([^*]+)\*", piece)):
            if part_index % 2:
                cell.append(nodes.emphasis(part, part))
            elif part:
                cell.append(nodes.Text(part))
    return cell


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


def _table(header, body: list[list[list[nodes.Node]]]) -> nodes.table:
    table = nodes.table(classes=["lodestar-measures"])
    group = nodes.tgroup(cols=len(header))
    table += group
    group += [nodes.colspec(colwidth=1) for _ in header]
    head = nodes.thead()
    head += _row([[nodes.Text(title)] for title in header])
    rows = nodes.tbody()
    rows += [_row(cells) for cells in body]
    group += [head, rows]
    return table


class MeasureTable(SphinxDirective):
    """Every measure of the registry, as a table."""

    has_content = False
    option_spec = {"layout": lambda text: directives.choice(text, ("python", "command-line"))}

    def run(self) -> list[nodes.Node]:
        """Build the table from the registry."""
        registry = importlib.import_module("lodestar._registry")
        if self.options.get("layout") == "command-line":
            rows = [command_line_row(measure) for measure in registry.MEASURES.values()]
            return [_table(COMMAND_LINE_HEADER, [[_marked(c) for c in row] for row in rows])]
        metrics = importlib.import_module("lodestar.metrics")
        exported = set(metrics.__all__)
        body = [
            [
                _literals(command_line_names(measure)),
                _function(function_name(measure), exported, self.env.docname),
                [nodes.Text(measure.labels)],
                _marked(measure.summary),
                _literals(trec_names(measure)),
            ]
            for measure in registry.MEASURES.values()
        ]
        return [_table(HEADER, body)]


def setup(app):
    """Register the directive."""
    app.add_directive("measure-table", MeasureTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
