"""Which registry measures the default test tier sweeps, and which only the slow tier.

The invariance sweeps (tests/test_measures.py, tests/test_streaming.py) compile
a program per measure, shape and option, so over all 33 measures they take
most of the suite's time. The default tier sweeps one measure of every module
of :mod:`lodestar.metrics` (and the measures the first release had); the slow
tier (``pytest -m slow``, which ``.ci/run`` runs too) sweeps every other one.
A new measure is in the slow tier until it is listed here.
"""

import pytest

from lodestar import _registry

DEFAULT_TIER = (
    # _dcg, _first_relevant, _average_precision, _precision, _err
    "ndcg",
    "dcg",
    "mrr",
    "map",
    "P",
    "recall",
    "hits",
    "err",
    # one measure of every other module
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


def measure_params(keys=None):
    """``keys`` (every registry key by default) as pytest params, slow outside the default tier."""
    keys = list(_registry.MEASURES) if keys is None else list(keys)
    return [
        pytest.param(key, id=key, marks=() if key in DEFAULT_TIER else pytest.mark.slow)
        for key in keys
    ]
