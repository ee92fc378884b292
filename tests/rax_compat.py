"""Import Rax 0.4.0, the reference for the smooth metrics and losses, on current JAX.

Rax 0.4.0's transformations (``approx_t12n`` and friends) decorate with
``jax.util.wraps``, which newer JAX removed. ``benchmarks/_common.py``, which
runs Rax in the benchmarks, owns the one stand-in for it: it copies a function's
name and docstring only, and is installed only when ``jax.util`` is absent. If
Rax is not installed, the comparisons are skipped with an explicit reason,
never passed silently.
"""

import pytest
from _common import install_jax_util_shim


def import_rax():
    install_jax_util_shim()
    return pytest.importorskip("rax", reason="rax is not installed: no comparison with Rax")
