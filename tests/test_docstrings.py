"""Every public function's docstring documents every parameter, and shared text is one text.

Docstrings are written out in full (decision 0036). Where functions share a
parameter or a refusal, ``tests/shared_docs.py`` holds the one wording, and
the tests here hold every copy to it.
"""

import inspect
import re
import typing

import pytest
import shared_docs

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
    parameters = set(inspect.signature(function).parameters)
    # A function of no parameters (labeldiff_lambdaweight) has no Args section.
    missing = parameters - (documented_arguments(docstring) if parameters else set())
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
# array-likes, files and sizes, factories of streaming accumulators, and the
# transformations of lodestar.losses, which take and return functions.
UNSHAPED = {
    "lodestar.losses.bound_t12n",
    "lodestar.losses.gumbel_t12n",
    "lodestar.sklearn.dcg_score",
    "lodestar.sklearn.ndcg_score",
    "lodestar.sklearn.reciprocal_rank_score",
    "lodestar.streaming.collection",
    "lodestar.streaming.mean",
    "lodestar.datasets.load_svmlight",
    "lodestar.datasets.synthetic_ltr",
    # Factories of lambda weights: options only, no arrays.
    "lodestar.losses.dcg_lambdaweight",
    "lodestar.losses.dcg2_lambdaweight",
    "lodestar.losses.labeldiff_lambdaweight",
}


# --- shared text: one wording, every copy held to it --------------------------

SHARING = [
    (name, function)
    for name, function in [(f"{m}.{n}", f) for m, n, f in FUNCTIONS]
    + [(f"lodestar.stats.{n}", getattr(lodestar.stats, n)) for n in lodestar.stats.__all__]
    if inspect.isfunction(function)
]


def _args_entries(docstring: str) -> dict[str, str]:
    """Each Args entry of a docstring, by parameter: its lines as written."""
    section = re.search(r"^Args:\n(.*?)(?=^\S|\Z)", docstring, re.S | re.M)
    entries: dict[str, list[str]] = {}
    current = None
    for line in (section[1] if section else "").rstrip("\n").split("\n"):
        start = re.match(r"^  \**(\w+)(?: \(.*?\))?:", line)
        if start:
            current = start[1]
            entries[current] = []
        if current is not None:
            entries[current].append(line)
    return {name: "\n".join(lines) for name, lines in entries.items()}


def _shared_entries() -> dict[str, list[str]]:
    """Each parameter's shared wordings, as an Args section holds them."""
    variants: dict[str, list[str]] = {}
    for key in shared_docs.ARGS:
        for name, text in _args_entries("Args:\n" + shared_docs.render(key)).items():
            variants.setdefault(name, []).append(text)
    return variants


# A cut-off and the labels mean something of each measure's own (which items
# a cut-off counts, which labels are relevant, what None reads): a function
# takes a shared wording of them or words them itself, in full.
OWN_WORDING = {"k", "labels"}

# Functions whose parameter of a shared name means something else there.
PARTICULAR = {
    ("lodestar.metrics.ndcg", "ideal_labels"),  # NDCG's ideal reads gains, with its own padding
    ("lodestar.metrics.normalized_gain", "ideal_labels"),  # G's ideal cost, likewise
    ("lodestar.metrics.ndcg_at_gain_levels", "num_relevant"),  # Rndcg's R is its own count
    ("lodestar.smooth.ranks", "where"),  # padding ranks last, and gets no rank
    ("lodestar.smooth.ranks", "segments"),  # per-item ranks, not one value per list
    ("lodestar.losses.lambda_loss", "temperature"),  # scales score differences
    ("lodestar.losses.pairwise_logistic_loss", "temperature"),
    ("lodestar.losses.pairwise_soft_zero_one_loss", "temperature"),
    ("lodestar.sklearn.dcg_score", "ignore_ties"),  # scikit-learn's own parameter
    ("lodestar.sklearn.ndcg_score", "ignore_ties"),
    ("lodestar.sklearn.reciprocal_rank_score", "ignore_ties"),
    ("lodestar.stats.compare_scores", "scores"),  # runs' per-query values, not a list's
}


@pytest.mark.parametrize("name, function", SHARING, ids=[s[0] for s in SHARING])
def test_a_parameter_with_a_shared_wording_uses_it(name, function):
    entries = _args_entries(inspect.getdoc(function))
    for parameter, variants in _shared_entries().items():
        if parameter not in entries or (name, parameter) in PARTICULAR:
            continue
        entry = entries[parameter]
        if parameter in OWN_WORDING:
            continue
        assert entry in variants, (
            f"{name} words {parameter!r} differently from tests/shared_docs.py:\n"
            f"{entry}\n-- expected one of --\n" + "\n--\n".join(variants)
        )


def test_the_particular_wordings_are_still_particular():
    # An exception that no longer differs is an exception to delete.
    functions = dict(SHARING)
    variants = _shared_entries()
    for name, parameter in PARTICULAR:
        entry = _args_entries(inspect.getdoc(functions[name]))[parameter]
        assert entry not in variants[parameter], (name, parameter)


# How many public docstrings hold each shared block, whole. A copy edited in
# one function stops counting, and the test names the functions that still
# hold the block; a new function that takes the block raises the count here.
BLOCK_COPIES = {
    "expected_count": 2,
    "invalid_k": 18,
    "invalid_k_gain": 4,
    "loss_nan_under_jit": 14,  # 10 of them inside loss_returns
    "loss_returns": 10,
    "loss_value_error": 3,
    "loss_value_error_gain": 4,
    "loss_value_error_lambdaweight": 5,
    "p_values_error": 2,
    "value_error": 7,
    "value_error_judged": 4,
    "value_error_num_relevant": 11,
}


@pytest.mark.parametrize("key", sorted(shared_docs.BLOCKS))
def test_every_shared_block_is_held_whole_where_it_was(key):
    block = shared_docs.render(key)
    holders = {}
    for name, function in SHARING:
        docstring = inspect.getdoc(function) + "\n"
        if count := docstring.count(block + "\n"):
            holders[name] = count
    assert sum(holders.values()) == BLOCK_COPIES[key], (
        f"shared block {key!r} is held whole by {sorted(holders)}; "
        "a copy was edited, or a new one needs BLOCK_COPIES raised"
    )


def test_every_shared_argument_is_used():
    used = set()
    for _, function in SHARING:
        used |= set(_args_entries(inspect.getdoc(function)).values())
    for key in shared_docs.ARGS:
        entries = _args_entries("Args:\n" + shared_docs.render(key)).values()
        assert set(entries) <= used, f"shared_docs.ARGS[{key!r}] is in no docstring"
