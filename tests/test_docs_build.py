"""The documentation site's examples run, and its API-coverage rule holds.

The site itself is built by ``.ci/run`` (``sphinx-build -W -n``), which needs
the docs extra. These checks need only the test extra, so they fail under
``pytest`` before the slower build does:

* every Python block on a page under ``docs/`` is a doctest, and every ``>>>``
  example runs and prints what the page says (float32, the default without
  x64, as in the README);
* the rule ``docs/_ext/api_coverage.py`` enforces during the build holds for
  the package as it stands, and the rule does catch an omission.
"""

import doctest
import re
import sys
from pathlib import Path

import jax
import pytest

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


@pytest.mark.parametrize("path", PAGES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(DOCS)))
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
