"""The public array functions declare their shared parameters alike, and pass each one on.

Every exact measure, smooth metric and loss writes its signature out in full,
so that ``help()``, the API pages, editors and type checkers show each option
with its type and default (decision 0028). The price is one declaration
repeated in some forty places, and a body that passes each parameter on by
name. These tests keep the copies one: a parameter of one name is declared
alike everywhere, and every parameter a function declares reaches a check that
names both the parameter and the function. A wrapper that forgot to pass one
on, or that was copied with another function's name, fails here.
"""

import collections
import inspect
import re

import jax.numpy as jnp
import pytest

from lodestar import _registry, losses, smooth

# The transformations of lodestar.losses (``*_t12n``) take functions, not
# arrays; tests/test_t12n.py holds their refusals.
TRANSFORMATIONS = {name for name in losses.__all__ if name.endswith("_t12n")}
FUNCTIONS = {measure.function.__name__: measure.function for measure in _registry.MEASURES.values()}
for _module in (smooth, losses):
    FUNCTIONS.update(
        {
            f"{_module.__name__.rsplit('.', 1)[-1]}.{name}": getattr(_module, name)
            for name in _module.__all__
            if name not in TRANSFORMATIONS
            # Classes (losses.LambdaWeight) are made by the functions listed.
            if inspect.isfunction(getattr(_module, name))
        }
    )

# Parameters whose declarations differ on purpose, by family of functions.
DIFFERENT_BY_FAMILY = {
    # The exact and smooth measures take trec_eval's and scikit-learn's linear
    # gains by default; the losses take their papers' and Rax's 2^label - 1.
    "gain": lambda name: "losses" if name.startswith("losses.") else "measures",
}
# Parameters that share a name but not a meaning.
DIFFERENT_MEANINGS = {
    # err's max_label is the grade scale, required; rank_biased_precision's is
    # an optional per-list bound on the labels.
    "max_label",
    # interpolated_precision takes the recall levels asked for, required;
    # eleven_point_average's are the eleven levels, by default.
    "recall",
}


def _parameters(function):
    return inspect.signature(function).parameters


SHARED = sorted(
    name
    for name, count in collections.Counter(
        parameter for function in FUNCTIONS.values() for parameter in _parameters(function)
    ).items()
    if count > 1 and name not in DIFFERENT_MEANINGS
)


def test_the_functions_and_their_shared_parameters_are_found():
    measures = {measure.function for measure in _registry.MEASURES.values()}
    classes = [name for name in losses.__all__ if inspect.isclass(getattr(losses, name))]
    assert classes == ["LambdaWeight"]
    assert len(FUNCTIONS) == len(measures) + len(smooth.__all__) + len(losses.__all__) - len(
        TRANSFORMATIONS
    ) - len(classes)
    assert {"scores", "where", "segments", "max_segments", "max_segment_size", "k"} <= set(SHARED)


@pytest.mark.parametrize("parameter", SHARED)
def test_a_shared_parameter_is_declared_alike_everywhere(parameter):
    family = DIFFERENT_BY_FAMILY.get(parameter, lambda name: "all")
    declarations = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, function in FUNCTIONS.items():
        declared = _parameters(function).get(parameter)
        if declared is not None:
            key = (str(declared.annotation), repr(declared.default), declared.kind.name)
            declarations[family(name)][key].append(name)
    for group, kinds in declarations.items():
        assert len(kinds) == 1, (
            f"{parameter} is declared {len(kinds)} ways in {group}: {dict(kinds)}"
        )


SCORES = jnp.array([[0.3, 0.2, 0.1, 0.0]])
LABELS = jnp.array([[1.0, 0.0, 2.0, 0.0]])
SHORT_MASK = jnp.ones((1, 3), bool)
TWO_COUNTS = jnp.ones((2,))
# Per parameter: a value every function that takes it must refuse, and what the
# message must say besides the function's name.
REFUSED = {
    "beta": (-1.0, "'beta' parameter"),
    "coefficients": ("x", "'coefficients' parameter"),
    "epsilon": (-2.0, "'epsilon' parameter"),
    "gain": ("cubic", "'gain' parameter"),
    "ideal_labels": (jnp.ones((1, 2, 3)), "expects ideal_labels of shape"),
    "ideal_where": (SHORT_MASK, "got ideal_where without ideal_labels"),
    "ignore_ties": ("yes", "'ignore_ties' parameter"),
    "judged": (SHORT_MASK, "expects `judged` of the same shape as scores"),
    "k": (0, "'k' parameter"),
    "lambdaweight": ("dcg", "'lambdaweight' parameter"),
    "key": ("not a key", "'key' parameter"),
    "log_base": (-1.0, "'log_base' parameter"),
    "margin": (-1.0, "'margin' parameter"),
    "max_label": (-1.0, "'max_label' parameter"),
    "max_segment_size": (0, "'max_segment_size' parameter"),
    "max_segments": (0, "'max_segments' parameter"),
    "method": ("bogus", "'method' parameter"),
    "mu": (-1.0, "'mu' parameter"),
    "multiple": (-1.0, "'multiple' parameter"),
    "normalize": ("yes", "'normalize' parameter"),
    "num_documents": (-1, "'num_documents' parameter"),
    "num_judged_nonrelevant": (TWO_COUNTS, "expects num_judged_nonrelevant of shape"),
    "num_relevant": (TWO_COUNTS, "expects num_relevant of shape"),
    "p": (2.0, "'p' parameter"),
    "pooled": (SHORT_MASK, "expects `pooled` of the same shape as scores"),
    "recall": (2.0, "'recall' parameter"),
    "reduction": ("median", "'reduction' parameter"),
    "segments": (SCORES, "expects integer segment ids"),
    "sinkhorn_iterations": (-1, "'sinkhorn_iterations' parameter"),
    "squared": ("yes", "'squared' parameter"),
    "tau": (0.0, "'tau' parameter"),
    "temperature": (-1.0, "'temperature' parameter"),
    "topn": (0, "'topn' parameter"),
    "weights": (jnp.ones((3,)), "expects per-list weights of shape"),
    "where": (SHORT_MASK, "expects `where` of the same shape as scores"),
}
# Required options, given valid values when another parameter is refused.
REQUIRED = {"max_label": 3.0, "recall": 0.5}
CASES = [
    (name, parameter)
    for name, function in FUNCTIONS.items()
    for parameter in _parameters(function)
    if parameter not in ("scores", "labels")
]


def test_every_refused_value_is_for_a_parameter_that_exists():
    assert set(REFUSED) == {parameter for _, parameter in CASES}


@pytest.mark.parametrize("name, parameter", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_every_parameter_reaches_a_check_that_names_it_and_the_function(name, parameter):
    function = FUNCTIONS[name]
    parameters = _parameters(function)
    if parameter not in REFUSED:
        pytest.fail(f"{name} takes {parameter}: add a value it must refuse to REFUSED")
    value, message = REFUSED[parameter]
    options = {
        option: valid
        for option, valid in REQUIRED.items()
        if option in parameters and parameters[option].default is inspect.Parameter.empty
    }
    if parameter in ("max_segments", "max_segment_size"):
        options["segments"] = jnp.zeros(SCORES.shape, int)
    options[parameter] = value
    # The lambda-weight functions take options only.
    arrays = (
        (SCORES, LABELS) if "labels" in parameters else (SCORES,) if "scores" in parameters else ()
    )
    with pytest.raises(ValueError) as refusal:
        function(*arrays, **options)
    said = str(refusal.value)
    assert message in said, said
    # The message begins with the function's own name: "The 'k' parameter of
    # ndcg must ..." or "ndcg expects ...".
    assert re.match(rf"(The '\w+' parameter of )?{function.__name__} ", said), said
