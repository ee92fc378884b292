"""What every smooth measure shares: its options' checks and the cut-off as a traced weight."""

from __future__ import annotations

from lodestar import _soft_ranks, _validation

METHODS = _soft_ranks.METHODS


def check_options(temperature, method, *, caller):
    temperature = _validation.check_temperature_option(temperature, caller=caller)
    method = _validation.check_option(method, name="method", options=METHODS, caller=caller)
    return temperature, method


# ``k`` travels as an array (the list length when None), so one compilation
# serves every k; ``cut`` says statically whether a k was given at all.
STATIC = ("method", "cut", "gain")


def cutoff(k, n):
    return n if k is None else min(k, n)
