"""The documentation site's examples run, and its API-coverage rule holds.

The site itself is built by ``.ci/run`` (``sphinx-build -W -n``), which needs
the docs extra. These checks need only the test extra, so they fail under
``pytest`` before the slower build does:

* every Python block on a page under ``docs/`` is a doctest, and every ``>>>``
  example runs and prints what the page says (float32, the default without
  x64, as in the README);
* the rule ``docs/_ext/api_coverage.py`` enforces during the build holds for
  the package as it stands, and the rule does catch an omission;
* the scan ``docs/_ext/offline_check.py`` runs on the built site finds remote
  scripts, stylesheets and fonts (a ``slow`` test builds the site and scans
  it, where Sphinx is installed);
* the benchmarks page's plots and tables are those
  ``benchmarks/plot_results.py`` makes from ``benchmarks/results/``.
"""

import doctest
import re
import sys
from pathlib import Path

import jax
import pytest
import tiers

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import api_coverage  # noqa: E402  (found through the path above)

# Generated API stubs only hold directives, and the notebooks are run by
# tests/test_notebooks.py.
NOT_PAGES = {"_build", "generated", "notebooks"}
PAGES = sorted(
    path for path in DOCS.rglob("*.md") if not NOT_PAGES & set(path.relative_to(DOCS).parts)
)
PAGES_WITH_EXAMPLES = [
    path for path in PAGES if doctest.DocTestParser().get_examples(path.read_text())
]


def test_the_getting_started_page_has_examples():
    assert DOCS / "index.md" in PAGES_WITH_EXAMPLES


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_python_blocks_are_doctests(path):
    """A Python block that is not a doctest would go untested, and could rot."""
    blocks = re.findall(r"^```(?:python|py)\n(.*?)^```", path.read_text(), re.MULTILINE | re.DOTALL)
    for block in blocks:
        assert block.lstrip().startswith(">>>"), f"{path.name}: a Python block is not a doctest"


# The scaling guide's examples (threads, meshes, long lists) compile programs
# no other test needs: they run in the slow tier.
@pytest.mark.parametrize(
    "path",
    tiers.params(
        PAGES_WITH_EXAMPLES,
        default=[p for p in PAGES_WITH_EXAMPLES if p.name != "scaling.md"],
        ids=[str(p.relative_to(DOCS)) for p in PAGES_WITH_EXAMPLES],
    ),
)
def test_page_examples(path):
    with jax.enable_x64(False):
        failures, tried = doctest.testfile(
            str(path), module_relative=False, optionflags=doctest.ELLIPSIS
        )
    assert tried > 0
    assert failures == 0


def everything_exported():
    """Every name the coverage rule expects to find documented."""
    names = set()
    for module in api_coverage.public_modules(api_coverage.PACKAGE):
        names.add(module.__name__)
        names.update(f"{module.__name__}.{name}" for name in api_coverage.exported_names(module))
    return names


def test_every_public_name_meets_the_coverage_rule():
    assert api_coverage.problems(everything_exported()) == []


def test_the_coverage_rule_catches_an_undocumented_name():
    documented = everything_exported() - {"lodestar.metrics.ndcg", "lodestar.smooth"}
    assert sorted(api_coverage.problems(documented)) == [
        "lodestar.metrics.ndcg is in __all__ but not in the API reference",
        "module lodestar.smooth has no page in the API reference",
    ]


def test_the_coverage_rule_names_each_missing_section():
    def undocumented_sections(scores):
        """A summary line and nothing else."""

    def complete(scores):
        """Summary.

        Args:
          scores: Scores.

        Returns:
          The scores.

        Example:
          >>> complete(1)
          1
        """
        return scores

    assert api_coverage.missing_sections(undocumented_sections) == [
        "Args",
        "Returns",
        "Example (with a doctest)",
    ]
    assert api_coverage.missing_sections(complete) == []


# -- The site loads nothing from the network ------------------------------------
# docs/_ext/offline_check.py scans the built site at the end of every build;
# these tests check the scan, and that the configuration it guards is in place.

import offline_check  # noqa: E402  (found through the path above)


def test_the_offline_check_finds_remote_scripts_stylesheets_and_fonts():
    page = """
    <link rel="stylesheet" href="_static/pygments.css">
    <link rel="stylesheet" href="https://cdn.example.org/theme.css">
    <link rel="canonical" href="https://example.org/index.html">
    <script src="_static/mathjax/tex-chtml.js"></script>
    <script defer="defer" src="https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js"></script>
    <script src='//cdn.example.org/protocol-relative.js'></script>
    <img src="https://example.org/logo.png" alt="">
    <a href="https://doi.org/10.1145/582415.582418">a reference a reader follows</a>
    <style>@import url("https://fonts.example.org/css?family=Roboto");</style>
    """
    assert offline_check.remote_resources(page) == [
        "https://cdn.example.org/theme.css",
        "https://cdn.jsdelivr.net/npm/mathjax@4/tex-mml-chtml.js",
        "//cdn.example.org/protocol-relative.js",
        "https://example.org/logo.png",
        "https://fonts.example.org/css?family=Roboto",
    ]
    stylesheet = "body { font: x; } @font-face { src: url(https://fonts.example.org/a.woff2); }"
    assert offline_check.remote_resources(stylesheet) == ["https://fonts.example.org/a.woff2"]


def test_the_offline_check_scans_every_page_and_stylesheet(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "index.html").write_text('<script src="_static/local.js"></script>')
    (tmp_path / "api.html").write_text('<script src="https://cdn.example.org/x.js"></script>')
    (tmp_path / "_static" / "site.css").write_text("@import 'https://cdn.example.org/y.css';")
    assert offline_check.site_problems(tmp_path) == [
        "_static/site.css: https://cdn.example.org/y.css",
        "api.html: https://cdn.example.org/x.js",
    ]


def test_the_site_bundles_mathjax_and_runs_the_offline_check():
    conf = (DOCS / "conf.py").read_text()
    assert '"sphinx-mathjax-offline"' in conf
    assert '"offline_check"' in conf
    assert "mathjax_path" not in conf, "the offline package sets mathjax_path to its own copy"


@pytest.mark.slow
def test_the_built_site_loads_nothing_from_the_network(tmp_path):
    """Build the site without executing the notebooks, and scan it."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_nb")
    import subprocess

    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-D", "nb_execution_mode=off"]
        + [str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "html" / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert offline_check.site_problems(tmp_path / "html") == []


# -- The benchmark page's plots and tables come from the committed results ------

BENCHMARKS = DOCS.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import plot_results  # noqa: E402  (found through the path above)


@pytest.mark.parametrize("name", sorted(plot_results.plot_data()))
def test_each_benchmark_plot_shows_the_committed_results(name):
    """A PNG records a digest of its numbers; it must match the JSON it names."""
    from PIL import Image

    path = DOCS / "_static" / "benchmarks" / name
    assert path.is_file(), f"run python benchmarks/plot_results.py to draw {name}"
    with Image.open(path) as image:
        recorded = image.text.get(plot_results.DIGEST_KEY)
    expected = plot_results.digest(plot_results.plot_data()[name])
    assert recorded == expected, f"{name} is stale: rerun python benchmarks/plot_results.py"


def test_the_benchmark_plot_script_draws_every_plot(tmp_path):
    assert plot_results.main(["--out", str(tmp_path)]) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(plot_results.plot_data())


@pytest.mark.parametrize("name", sorted(plot_results.tables()))
def test_each_benchmark_table_on_the_page_comes_from_the_results(name):
    page = (DOCS / "benchmarks.md").read_text()
    assert plot_results.tables()[name] in page, (
        f"the {name} table of docs/benchmarks.md differs from "
        "python benchmarks/plot_results.py --tables"
    )


def test_the_benchmark_page_names_its_results_files():
    page = (DOCS / "benchmarks.md").read_text()
    for source in plot_results.SOURCES.values():
        assert f"benchmarks/results/{source}" in page
        assert (BENCHMARKS / "results" / source).is_file()


def test_the_decision_index_lists_every_record_in_order():
    # The site shows the records through this index alone (a hidden glob
    # toctree), so a record missing from its table is hard to find.
    records = sorted(path.name for path in (DOCS / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md"))
    index = (DOCS / "decisions" / "README.md").read_text()
    rows = re.findall(r"^\| (\d{4}) \| \[.+?\]\((\d{4}-[^)]+\.md)\) \|$", index, re.MULTILINE)
    assert [name for _, name in rows] == records
    assert all(name.startswith(number) for number, name in rows)


def test_the_development_guide_lists_every_module_of_the_package():
    # "What may each module touch?" is answered by the layer list; a module
    # missing from it is a module a newcomer cannot place.
    guide = (DOCS / "development.md").read_text()
    layers = re.search(r"^lodestar/\n(.*?)^```", guide, re.MULTILINE | re.DOTALL)
    assert layers, "no layer list"
    listed = set(re.findall(r"^  (\S+)", layers[1], re.MULTILINE))
    package = DOCS.parent / "src" / "lodestar"
    modules = {path.name for path in package.glob("*.py")}
    modules |= {f"{path.name}/" for path in package.iterdir() if (path / "__init__.py").exists()}
    assert modules == listed


def _layer_list() -> list[str]:
    guide = (DOCS / "development.md").read_text()
    layers = re.search(r"^lodestar/\n(.*?)^```", guide, re.MULTILINE | re.DOTALL)
    assert layers, "no layer list"
    return re.findall(r"^  (\S+)", layers[1], re.MULTILINE)


def _imports(path, package):
    """``(line, module)`` of every ``lodestar`` import that runs, lazy ones included."""
    import ast

    tree = ast.parse(path.read_text())
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    here = ".".join(("lodestar", *path.relative_to(package).parts[:-1]))
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = here.rsplit(".", node.level - 1)[0] + (f".{base}" if base else "")
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)


def _unit(parts, package) -> str | None:
    """The layer-list entry a dotted name under ``lodestar`` belongs to."""
    if len(parts) < 2 or parts[0] != "lodestar":
        return None
    if (package / parts[1]).is_dir():
        return f"{parts[1]}/"
    return f"{parts[1]}.py" if (package / f"{parts[1]}.py").is_file() else None


def test_every_import_of_the_package_runs_down_the_layer_list():
    # The layer list is the design: an import that runs back up it is a
    # circle waiting to happen (_gains and _validation imported each other;
    # metrics.tie_range reached up into the registry).
    package = DOCS.parent / "src" / "lodestar"
    order = {entry: index for index, entry in enumerate(_layer_list())}
    upward = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        source = f"{parts[0]}/" if len(parts) > 1 else parts[0]
        for line, name in _imports(path, package):
            target = _unit(name.split("."), package)
            if target is None or target == source:
                continue
            if order[target] <= order[source]:
                upward.append(f"{path.relative_to(package)}:{line} imports {name}")
    assert not upward, "imports that run up the layer list:\n" + "\n".join(upward)


def test_no_package_of_lodestar_imports_its_own_modules_in_a_circle():
    import graphlib

    package = DOCS.parent / "src" / "lodestar"
    for directory in sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()):
        modules = {path.stem for path in directory.glob("*.py")}
        graph = {module: set() for module in modules}
        for path in directory.glob("*.py"):
            for _, name in _imports(path, package):
                parts = name.split(".")
                if parts[:2] == ["lodestar", directory.name] and len(parts) > 2:
                    if parts[2] in modules and parts[2] != path.stem and path.stem != "__init__":
                        graph[path.stem].add(parts[2])
        graphlib.TopologicalSorter(graph).prepare()  # raises CycleError on a circle


def test_no_module_of_the_package_is_over_a_thousand_lines():
    # A module past 1,000 lines holds more than one concept; split it into a
    # package of private modules, as metrics/, losses/ and smooth/ are.
    package = DOCS.parent / "src" / "lodestar"
    long = {
        str(path.relative_to(package)): count
        for path in package.rglob("*.py")
        if (count := len(path.read_text().splitlines())) > 1000
    }
    assert not long, long


def test_validation_imports_no_other_module_of_the_package():
    # The layer list's rule: every module may word its refusals through
    # _validation, so it imports none of them (it imported _gains, which
    # imports it back, for the exp2 gain checks that now live in _gains).
    import ast

    tree = ast.parse((DOCS.parent / "src" / "lodestar" / "_validation.py").read_text())
    imported = {
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not {name for name in imported if name.startswith("lodestar")}, imported


def test_a_number_out_of_its_range_is_refused_in_one_wording():
    # The layer list's rule "only _validation.py words a refusal that more
    # than one function makes": every range of an int or a float is declared
    # as a _validation.Interval, whose refusal words the message (six modules
    # wrote "must be an int in the range [...]" themselves).
    package = DOCS.parent / "src" / "lodestar"
    worded = re.compile(r"must be (an int|a float) in the range")
    elsewhere = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.name != "_validation.py" and worded.search(path.read_text())
    ]
    assert not elsewhere, f"modules that word a range refusal themselves: {elsewhere}"


def test_the_command_line_pages_measure_table_is_generated_from_the_registry():
    # docs/cli.md's table is the measure-table directive's command-line
    # layout: its names, trec_eval families and label kinds are read from the
    # registry and the families table, so it cannot drift from them.
    import measure_rows

    from lodestar import _registry
    from lodestar._trec import families

    page = (DOCS / "cli.md").read_text()
    section = page[page.index("### The measures") : page.index("## Conventions")]
    assert "```{measure-table}\n:layout: command-line\n```" in section
    assert not re.search(r"^\| `", section, re.MULTILINE), "a hand-written measure row"
    rows = {m.key: measure_rows.command_line_row(m) for m in _registry.MEASURES.values()}
    assert rows["P"] == (
        "`P`",
        "`precision`",
        "`P` (*C*); `P_avgjg` (*C*) under `-R qrels_jg`",
        "binary",
        "relevant documents in the top k, over k, even when fewer were retrieved",
    )
    assert rows["num_rel"][3] == "binary, count"
    assert rows["rbp"][2] == "`rbp` (p = 0.9); `rbp.p=x`"
    assert rows["utility"][2] == "`utility` (1, \u22121, 0, 0); `utility.a,b,c,d`"
    assert rows["iprec_at_recall"][1:3] == (
        "none: give the level, `iprec_at_recall.0.3`",
        "`iprec_at_recall` (0.00, 0.10, \u2026, 1.00)",
    )
    for key, key_families in families.FAMILIES.items():
        for family in key_families:
            assert f"`{family.name}`" in rows[key][2], (key, family.name)


def test_the_trec_eval_families_name_registry_keys_in_order():
    # trec_eval's report order among the judgment-group measures is the
    # table's; a key that is not the registry's would be a dead row.
    from lodestar import _registry
    from lodestar._trec import families

    keys = list(families.FAMILIES)
    assert keys == [key for key in _registry.MEASURES if key in families.FAMILIES]
    names = [family.name for fs in families.FAMILIES.values() for family in fs]
    assert len(names) == len(set(names)), "a trec_eval name given to two measures"
