"""The test suite's own configuration: how each tier's programs are compiled."""

import os

import pytest
from conftest import CHEAP_COMPILATION, compiles_cheaply
from jax._src.lib import xla_client

# XLA's default, what a user's process compiles with.
USERS_OPTIMIZATION_LEVEL = 3


def _optimization_level() -> int:
    # The options XLA parsed from XLA_FLAGS when this process's backend started.
    return xla_client.CompileOptions().executable_build_options.debug_options.xla_backend_optimization_level


def test_the_default_tier_compiles_without_llvm_optimisations(request):
    if not compiles_cheaply(request.config.option.markexpr):
        pytest.skip("run outside the default tier's marker expression")
    assert _optimization_level() == 0
    assert set(CHEAP_COMPILATION) <= set(os.environ["XLA_FLAGS"].split())


@pytest.mark.slow
def test_the_slow_tier_compiles_as_users_processes_do(request):
    if compiles_cheaply(request.config.option.markexpr):
        pytest.skip("LODESTAR_TEST_CHEAP_COMPILATION=1 asked for cheap compilation")
    assert _optimization_level() == USERS_OPTIMIZATION_LEVEL
