"""Which cases the default test tier runs, and which only the slow tier.

The invariance sweeps (every registry measure through jit, vmap, padding,
packed lists, streaming, sharding, dtypes, tiling, NaN) compile a program per
measure, shape and option; over all 33 measures they are most of the suite's
time. The default tier (the README's ``pytest``, at most five minutes on two
cores) sweeps a core of five measures that between them take every path of
the shared machinery: graded gains and an ideal ranking (``ndcg``), a
relevant-count context (``map``), a static option from the cut-off (``P``),
a required option (``err``'s ``max_label``) and a summed, judged count
(``num_rel_ret``). Every metrics module keeps its own tests in the default
tier as well (tests/test_set_measures.py, tests/test_ndcg_family.py, ...).
The slow tier (``pytest -m slow``, which ``.ci/run`` runs too) sweeps every
other measure; a new measure is swept there without being listed. Sweeps of
what the engine does whatever the formula (engine paths, integer scores,
dtypes, tiling) take two measures in the default tier
(:data:`ENGINE_DEFAULT_TIER`), and the default tier's and one measure of every
module in the slow tier (:data:`ONE_PER_MODULE`).
"""

import pytest

from lodestar import _registry

DEFAULT_TIER = ("ndcg", "map", "P", "err", "num_rel_ret")

# For the sweeps of what the engine and the shared preparation do whatever the
# formula (the engine path a list length picks, integer and boolean scores,
# the compute dtype, tiling large batches), the slow tier takes one measure of
# every module of lodestar.metrics rather than all 33.
ONE_PER_MODULE = (
    "dcg",  # _dcg
    "mrr",  # _first_relevant
    "map",  # _average_precision
    "P",  # _precision
    "err",  # _err
    "num_rel_ret",  # _counts
    "Rprec",  # _r_precision
    "set_F",  # _set
    "rbp",  # _rbp
    "bpref",  # _bpref
    "infAP",  # _infap
    "binG",  # _normalized_gain
    "iprec_at_recall",  # _interpolated
    "ndcg_rel",  # _ndcg_averages
)


def params(values, *, default, ids=None):
    """``values`` as pytest params, marked slow unless listed in ``default``."""
    values = list(values)
    ids = [str(v) for v in values] if ids is None else list(ids)
    return [
        pytest.param(value, id=name, marks=() if value in default else pytest.mark.slow)
        for value, name in zip(values, ids, strict=True)
    ]


def measure_params(keys=None):
    """``keys`` (every registry key by default) as pytest params, slow outside the default tier."""
    return params(_registry.MEASURES if keys is None else keys, default=DEFAULT_TIER)


# What the engine does whatever the formula is swept in the default tier on
# two measures: graded gains with the ideal ranking's own sort (ndcg), and
# binary relevance with a relevant-count context (map).
ENGINE_DEFAULT_TIER = ("ndcg", "map")


def engine_params():
    """Two measures in the default tier; the default tier's and one of every module in the slow."""
    keys = dict.fromkeys((*DEFAULT_TIER, *ONE_PER_MODULE))
    return params(keys, default=ENGINE_DEFAULT_TIER)


def crossed(key_params, values, *, slow, name=str):
    """``(key, value)`` params: every value for a default-tier key, ``slow(key, value)`` ones else.

    ``key_params`` are this module's params (:func:`measure_params`,
    :func:`engine_params`); a pair keeps its key's tier.
    """
    return [
        pytest.param(param.values[0], value, id=f"{param.id}-{name(value)}", marks=param.marks)
        for param in key_params
        for value in values
        if not param.marks or slow(param.values[0], value)
    ]
