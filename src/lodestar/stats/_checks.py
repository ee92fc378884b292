"""The argument checks that the tests, corrections and report of :mod:`lodestar.stats` share."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _validation

MAX_SEED = 2**32 - 1


def check_int(value, *, name: str, caller: str, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]``; refuse bools, floats and the rest."""
    interval = (
        _validation.Interval(int, low)
        if high is None
        else _validation.Interval(int, low, high, "both")
    )
    return interval.check(value, name=name, caller=caller)


def check_seed(seed, *, caller: str):
    """An int in ``[0, 2**32 - 1]``, or an integer JAX array of shape () (traced seeds)."""
    if isinstance(seed, jax.Array) and seed.shape == () and jnp.issubdtype(seed.dtype, jnp.integer):
        return seed
    return check_int(seed, name="seed", caller=caller, low=0, high=MAX_SEED)


def check_unit_interval(value, *, name: str, caller: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    return _validation.Interval(float, 0.0, 1.0, "neither").check(value, name=name, caller=caller)


def dtype_of(x):
    dtype = getattr(x, "dtype", None)
    return np.asarray(x).dtype if dtype is None else dtype


def check_numeric(x, *, name: str, caller: str) -> None:
    dtype = dtype_of(x)
    if not (
        jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)
    ) or jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"{caller} expects real-valued numeric {name}; got dtype {dtype}.")


def check_pair(a, b, *, caller: str):
    """Validate ``(a, b)`` and return them as float64 JAX arrays (call under x64).

    Raises:
      ValueError: non-numeric input, a scalar, different shapes, fewer than 2
        queries, or (on concrete inputs) NaN or infinity.
    """
    check_numeric(a, name="a", caller=caller)
    check_numeric(b, name="b", caller=caller)
    a = jnp.asarray(a).astype(jnp.float64)
    b = jnp.asarray(b).astype(jnp.float64)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"{caller} expects a and b of shape (..., n), one value per query along "
            f"the last axis; got a scalar."
        )
    if a.shape != b.shape:
        raise ValueError(
            f"{caller} expects a and b of the same shape (the same queries in the "
            f"same order); got a {a.shape} and b {b.shape}."
        )
    if a.shape[-1] < 2:
        raise ValueError(
            f"{caller} needs at least 2 queries (the last axis of a and b); got {a.shape[-1]}."
        )
    for name, x in (("a", a), ("b", b)):
        nan_message = _validation.nonfinite_message(name, nan=True, dtype=x.dtype)
        inf_message = _validation.nonfinite_message(name, nan=False, dtype=np.dtype(x.dtype))
        if _validation.is_concrete(x):
            if bool(jnp.any(jnp.isnan(x))):
                raise ValueError(nan_message)
            if bool(jnp.any(jnp.isinf(x))):
                raise ValueError(inf_message)
        else:
            _validation.traced_check(jnp.logical_not(jnp.any(jnp.isnan(x))), nan_message)
            _validation.traced_check(jnp.logical_not(jnp.any(jnp.isinf(x))), inf_message)
    return a, b


def check_traceable(*inputs, caller: str) -> None:
    """Refuse traced inputs when x64 is off: a traced result could not be float64."""
    if not _validation.is_concrete(*inputs) and not jax.config.read("jax_enable_x64"):
        raise RuntimeError(
            f"{caller} computes and returns float64, which JAX holds (and lowers its "
            f"random draws in) only with x64 on: under jax.jit or vmap, turn "
            f"jax_enable_x64 on (globally, or with jax.enable_x64(True) around the call)."
        )


def host_results(arrays):
    """Concrete results as NumPy float64 and int64, whatever ``jax_enable_x64`` says.

    A p-value of 1e-300 or one 5e-8 from a threshold must survive the return
    (decision 0014); a JAX array made float64 inside ``jax.enable_x64`` would
    be float64 in a program that cannot hold it. Traced results (x64 is then
    on) are returned as they are.
    """
    return tuple(np.asarray(x)[()] if _validation.is_concrete(x) else x for x in arrays)
