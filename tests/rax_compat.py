"""Import Rax 0.4.0, the reference for the smooth metrics and losses, on current JAX.

Rax 0.4.0's transformations (``approx_t12n`` and friends) decorate with
``jax.util.wraps``, which newer JAX removed. That helper only copied a
function's name and docstring, so :func:`functools.wraps` stands in for it: the
shim touches nothing but the metadata of the wrappers Rax returns. It is
installed only when ``jax.util`` is absent. If Rax is not installed, the
comparisons are skipped with an explicit reason, never passed silently.
"""

import functools
import types

import jax
import pytest


def _wraps(wrapped, namestr=None, docstr=None, **kwargs):
    del namestr, docstr, kwargs  # metadata only; functools.wraps copies it
    return functools.wraps(wrapped)


def import_rax():
    if not hasattr(jax, "util"):
        jax.util = types.SimpleNamespace(wraps=_wraps)
    return pytest.importorskip("rax", reason="rax is not installed: no comparison with Rax")
