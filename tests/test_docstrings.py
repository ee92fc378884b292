"""Every public function's docstring, as rendered, documents every parameter.

Shared arguments are written once in ``lodestar/_docs.py`` and inserted at
import, so a linter reading the source cannot see them; this checks the
docstrings users read (``help()`` and the API pages) instead, and that no
marker is left unexpanded.
"""

import inspect
import re
import typing

import pytest

import lodestar
from lodestar import losses, metrics, sklearn, smooth, streaming

MODULES = [metrics, smooth, losses, sklearn, streaming, lodestar.datasets]
FUNCTIONS = [
    (module.__name__, name, getattr(module, name))
    for module in MODULES
    for name in module.__all__
    if inspect.isfunction(getattr(module, name))
]


def documented_arguments(docstring):
    """The names of the entries of the Args section (entries sit two spaces in)."""
    section = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", docstring, re.S | re.M)
    assert section, "no Args section"
    return {
        name.lstrip("*") for name in re.findall(r"^  (\*{0,2}\w+)(?: \(.*?\))?:", section[1], re.M)
    }


@pytest.mark.parametrize("module, name, function", FUNCTIONS, ids=[f[1] for f in FUNCTIONS])
def test_every_parameter_is_documented(module, name, function):
    docstring = inspect.getdoc(function)
    assert "{{" not in docstring, "an unexpanded shared-argument marker"
    parameters = set(inspect.signature(function).parameters)
    missing = parameters - documented_arguments(docstring)
    assert not missing, f"{module}.{name} does not document {sorted(missing)}"


def test_shared_arguments_render_as_google_style_entries():
    doc = inspect.getdoc(metrics.ndcg)
    assert "\n  where: ``(..., n)`` boolean mask; False marks padding.\n" in doc
    assert "\n  max_segments: Lists per row" in doc
    assert "\n    the result is then ``(..., max_segments)``" in doc


@pytest.mark.parametrize("module, name, function", FUNCTIONS, ids=[f[1] for f in FUNCTIONS])
def test_annotations_resolve_at_run_time(module, name, function):
    # The jaxtyping shape annotations are real objects, not names imported only
    # for a type checker: typing.get_type_hints (what documentation tools and
    # runtime checkers such as jaxtyping's own jaxtyped call) must resolve them.
    hints = typing.get_type_hints(function)
    shaped = [hint for hint in hints.values() if "jaxtyping" in repr(hint)]
    if f"{module}.{name}" not in UNSHAPED:
        assert shaped, f"{module}.{name} has no jaxtyping annotation"


# Functions whose arguments are not arrays of a fixed layout: scikit-learn's
# array-likes, files and sizes, and factories of streaming accumulators.
UNSHAPED = {
    "lodestar.sklearn.dcg_score",
    "lodestar.sklearn.ndcg_score",
    "lodestar.sklearn.reciprocal_rank_score",
    "lodestar.streaming.collection",
    "lodestar.streaming.mean",
    "lodestar.datasets.load_svmlight",
    "lodestar.datasets.synthetic_ltr",
}
