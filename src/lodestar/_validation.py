"""Parameter and value validation shared by every public function.

Two kinds of check live here, and the message text of both lives here once:

* **Static checks** look only at Python values and array shapes and dtypes
  (``k``, ``log_base``, ``gain``, shapes). They run at trace time, so they raise
  under ``jax.jit`` exactly as they do eagerly.
* **Value checks** look at array contents (NaN, infinity, negative labels).
  On concrete arrays they raise :class:`ValueError` immediately. On traced
  arrays they are off by default, because any
  :func:`jax.experimental.checkify.debug_check` in a jitted function moves
  every call of it onto JAX's slower, effectful dispatch path (about 0.1 ms per
  call, measured). Inside :func:`value_checks_under_jit` they become
  ``debug_check`` calls, which raise under
  :func:`jax.experimental.checkify.checkify`. Without them the kernels turn a
  list with bad values into NaN, never into a plausible number.

The message forms follow scikit-learn's ``validate_params`` and
``check_array`` so that the drop-ins in :mod:`lodestar.sklearn` can raise the
very same text. See ``docs/decisions/0003-validation-under-jit.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from collections.abc import Callable
from typing import Any, Literal, overload

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

# A JAX user context (jax.make_user_context, public since JAX 0.7.2) rather
# than a module global: its value is part of jit's tracing, lowering and
# compilation cache keys, so turning it on retraces functions that were traced
# without the checks instead of silently reusing them. Decisions 0003 and 0021.
_CHECKS_UNDER_JIT = jax.make_user_context(default_value=False)


def value_checks_under_jit(enabled: bool = True):
    """Context manager: value checks on traced inputs, reachable through checkify.

    On concrete inputs lodestar always checks values (NaN, infinity, negative
    labels where refused) and raises :class:`ValueError`. Under ``jax.jit`` the
    values are not known at trace time, so by default a list with bad values
    gives NaN instead. Inside this context the same checks are registered as
    :func:`jax.experimental.checkify.debug_check` calls, so that a function
    wrapped in :func:`jax.experimental.checkify.checkify` reports them with the
    eager message. They are off by default because a ``debug_check`` makes
    every call of the jitted function dispatch through JAX's effectful path,
    about 0.1 ms slower per call. The setting is part of the jit cache key, so
    functions traced outside the context are traced again inside it. It is a
    context manager only: JAX offers no public way to register a
    ``jax.config`` option, so there is no ``jax.config.update`` spelling.

    Args:
      enabled: Whether traced calls register the checks inside the context.

    Returns:
      A context manager.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jax.experimental import checkify
      >>> import lodestar
      >>> scores = jnp.array([[0.5, jnp.nan, 0.1]])
      >>> labels = jnp.array([[1.0, 0.0, 2.0]])
      >>> checked = jax.jit(checkify.checkify(lodestar.metrics.ndcg))
      >>> with lodestar.value_checks_under_jit():
      ...     error, value = checked(scores, labels)
      >>> error.get()
      'Input scores contains NaN. (`check` failed)'
      >>> error, value = checked(scores, labels)  # outside: no check, NaN value
      >>> print(error.get(), value)
      None [nan]

    References:
      JAX documentation, "The checkify transformation".
    """
    return _CHECKS_UNDER_JIT(bool(enabled))


def traced_check(ok: jax.Array, message: str) -> None:
    """Register ``checkify.debug_check(ok, message)`` if value checks under jit are on.

    Every value check on traced arrays goes through here, so that the switch
    :func:`value_checks_under_jit` governs all of them.
    """
    if _CHECKS_UNDER_JIT.value:
        checkify.debug_check(ok, message)


def refuse_if(failed: jax.Array | np.ndarray | np.bool_, message: str) -> None:
    """Raise ``ValueError(message)`` if ``failed`` holds; on a traced flag, :func:`traced_check`.

    A concrete input inside someone else's trace still gives a traced flag.
    """
    if is_concrete(failed):
        if bool(failed):
            raise ValueError(message)
    else:
        traced_check(jnp.logical_not(failed), message)


class InvalidParameterError(ValueError, TypeError):
    """A parameter has the wrong type or a value outside its valid range.

    Mirrors ``sklearn.utils._param_validation.InvalidParameterError``: it
    inherits from both :class:`ValueError` and :class:`TypeError`, so code that
    catches either keeps working.
    """


def is_int(value) -> bool:
    """Whether ``value`` is an integer and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class Interval:
    """A number parameter's range, as scikit-learn's ``Interval`` declares one.

    Every refusal of a number outside its range is worded by
    :meth:`refusal`, in scikit-learn's words: "The 'k' parameter of ndcg must
    be an int in the range [1, inf). Got 0 instead."

    Attributes:
      kind: ``int`` (any integer but a bool) or ``float`` (any real number
        but a bool; NaN is in no range).
      low: The lower bound (``-math.inf`` for none).
      high: The upper bound (``math.inf`` for none).
      closed: Which bounds belong to the range: ``"neither"``, ``"left"``,
        ``"right"`` or ``"both"``.
      high_name: A name shown with the upper bound, as ``[1, list_size=10]``.
    """

    kind: type
    low: float
    high: float = math.inf
    closed: Literal["neither", "left", "right", "both"] = "left"
    high_name: str | None = None

    def holds(self, value) -> bool:
        """Whether ``value`` is a number of this kind within the range."""
        if self.kind is int:
            if not is_int(value):
                return False
        elif isinstance(value, bool) or not isinstance(value, numbers.Real):
            return False
        # An int compares with the float bounds exactly, however large.
        number: Any = value if self.kind is int else float(value)
        left_closed = self.closed in ("left", "both")
        right_closed = self.closed in ("right", "both")
        above = number >= self.low if left_closed else number > self.low
        below = number <= self.high if right_closed else number < self.high
        return bool(above and below)

    def text(self) -> str:
        """``an int in the range [1, inf)``, ``a float in the range (0.0, 1.0)``."""
        opening = "[" if self.closed in ("left", "both") else "("
        closing = "]" if self.closed in ("right", "both") else ")"
        low, high = self._bound(self.low), self._bound(self.high)
        if self.high_name is not None:
            high = f"{self.high_name}={high}"
        article = "an int" if self.kind is int else "a float"
        return f"{article} in the range {opening}{low}, {high}{closing}"

    def _bound(self, value: float) -> str:
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return str(int(value)) if self.kind is int else repr(float(value))

    def refusal(
        self, value, *, name: str, caller: str, none: bool = False, also: str = ""
    ) -> InvalidParameterError:
        """The error for ``value``; ``none`` adds "or None", ``also`` what else is taken."""
        accepted = self.text() + (" or None" if none else "") + (f" {also}" if also else "")
        return InvalidParameterError(
            f"The '{name}' parameter of {caller} must be {accepted}. Got {value!r} instead."
        )

    def check(self, value, *, name: str, caller: str, none: bool = False, also: str = "") -> Any:
        """Return ``value`` as an int or float (by ``kind``) in the range, or None where ``none``.

        Raises:
          InvalidParameterError: anything else, worded by :meth:`refusal`.
        """
        if value is None and none:
            return None
        if value is None or not self.holds(value):
            raise self.refusal(value, name=name, caller=caller, none=none, also=also)
        return int(value) if self.kind is int else float(value)


def check_k(k, *, caller: str) -> int | None:
    """Return ``k`` as a Python int, or None; refuse anything else.

    Args:
      k: The cut-off. ``None`` or an integer >= 1.
      caller: The public function's name, used in the message.

    Returns:
      ``None`` or ``int(k)``.

    Raises:
      InvalidParameterError: ``k`` is not None and not an integer >= 1.
    """
    if k is None:
        return None
    if not is_int(k) or k < 1:
        raise InvalidParameterError(
            f"The 'k' parameter of {caller} must be an int in the range "
            f"[1, inf) or None. Got {k!r} instead."
        )
    return int(k)


def traced_float_dtype() -> np.dtype:
    """The dtype a Python float takes on its way into a jitted function.

    float64 with ``jax_enable_x64`` (globally or in a :func:`jax.enable_x64`
    context), float32 without.
    """
    return np.dtype(jax.dtypes.canonicalize_dtype(np.float64))


def check_log_base(log_base, *, caller: str) -> float:
    """Return ``log_base`` as a float in (0, inf) that the kernels can carry.

    A base below 1 is accepted (the discounts turn negative) and a base of
    exactly 1 is accepted (every discount is 0), as in scikit-learn. The base
    reaches the jitted kernels as a traced float of :func:`traced_float_dtype`,
    where its logarithm is taken, so it must be a normal number of that dtype:
    without ``jax_enable_x64`` a base such as ``1e300`` would arrive as
    infinity, and a subnormal base such as ``1e-320`` is flushed to zero by
    XLA. Every base in ``[1.2e-38, 3.4e38]`` is carried (all normal float64
    bases under ``jax_enable_x64``), and its logarithm, at most 745 in
    magnitude, keeps every discount finite.

    Raises:
      InvalidParameterError: ``log_base`` is not a real number in (0, inf):
        zero, negative, NaN, infinite, a bool, or not a number at all; or it
        lies outside the normal numbers of :func:`traced_float_dtype`.
    """
    value = check_positive_float(log_base, name="log_base", caller=caller)
    dtype = traced_float_dtype()
    info = np.finfo(dtype)
    if not float(info.tiny) <= value <= float(info.max):
        why = (
            "the normal float64 numbers; a smaller base is flushed to zero"
            if dtype == np.float64
            else "the normal float32 numbers, since jax_enable_x64 is off"
        )
        raise InvalidParameterError(
            f"The 'log_base' parameter of {caller} must be a float in the range "
            f"[{info.tiny!s}, {info.max!s}] ({why}). Got {log_base!r} instead."
        )
    return value


def check_temperature(temperature: float | jax.Array, dtype, *, caller: str) -> None:
    """Refuse a temperature below the smallest normal number of the compute ``dtype``.

    ``temperature`` has passed :func:`check_temperature_option`; a traced one
    was guarded there and is not checked here. XLA flushes
    subnormal numbers to zero, so a temperature below ``finfo(dtype).tiny``
    (1.2e-38 in float32, 2.2e-308 in float64) would divide by zero and give
    NaN soft ranks. That small a temperature is the hard-rank limit, which the
    exact metrics compute. A static check: it raises under ``jit`` too.

    Raises:
      InvalidParameterError: ``temperature`` is below ``finfo(dtype).tiny``.
    """
    info = np.finfo(dtype)
    if isinstance(temperature, jax.core.Tracer):
        return
    if temperature < float(info.tiny):
        raise InvalidParameterError(
            f"The 'temperature' parameter of {caller} must be a float in the range "
            f"[{info.tiny!s}, inf) when computing in {np.dtype(dtype).name}: a smaller one "
            f"is flushed to zero. For the hard-rank limit use lodestar.metrics. "
            f"Got {temperature!r} instead."
        )


def check_positive_float(value, *, name: str, caller: str) -> float:
    """Return ``value`` as a float in (0, inf); refuse anything else.

    Raises:
      InvalidParameterError: ``value`` is not a real number in (0, inf): zero,
        negative, NaN, infinite, a bool, or not a number at all.
    """
    return Interval(float, 0.0, math.inf, "neither").check(value, name=name, caller=caller)


def check_traceable_float(
    value, *, name: str, caller: str, low: float = 0.0, closed: bool = False
) -> float | jax.Array:
    """A float option of a differentiated function, which may be traced.

    A training step anneals a temperature or a margin inside ``jit``, so these
    options may be tracers. What is static is still checked under ``jit``: a
    traced value must be a real scalar. A concrete value (a Python number or a
    concrete array) is checked eagerly and returned as a float, as
    :func:`check_positive_float` does. A traced value cannot be refused, so it
    is returned with NaN in place of a value outside the range, which turns
    every result computed from it into NaN (decision 0003): NaN, never a
    plausible number.

    Args:
      value: The option.
      name: Its keyword, for the message.
      caller: The public function's name, for the message.
      low: The lower end of the range; the upper end is inf, excluded.
      closed: Whether ``low`` itself is accepted: ``[low, inf)``, else
        ``(low, inf)``.

    Raises:
      InvalidParameterError: a concrete value outside the range, NaN, a bool
        or not a number; a traced value that is not a real scalar.
    """
    bracket = "[" if closed else "("
    message = (
        f"The '{name}' parameter of {caller} must be a float in the range "
        f"{bracket}{float(low)}, inf)."
    )
    if isinstance(value, jax.core.Tracer):
        dtype = value.dtype
        real = jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)
        if value.shape != () or not real:
            raise InvalidParameterError(
                f"{message} Got a traced array of dtype {dtype} and shape {value.shape} "
                f"instead: a traced option must be a real scalar."
            )
        value = value.astype(_floating_dtype(dtype))
        inside = (value >= low) if closed else (value > low)
        return jnp.where(inside & (value < jnp.inf), value, jnp.nan)
    if isinstance(value, jax.Array | np.ndarray | np.generic) and not isinstance(value, np.bool_):
        if value.shape == () and value.dtype != bool:
            value = value.item()
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not (low <= float(value) if closed else low < float(value))
        or not float(value) < math.inf
    ):
        raise InvalidParameterError(f"{message} Got {value!r} instead.")
    return float(value)


def check_temperature_option(value, *, caller: str) -> float | jax.Array:
    """``temperature`` of a smooth function or a loss: in (0, inf), possibly traced.

    :func:`check_traceable_float`, and a traced temperature below the
    smallest normal number of its dtype is NaN too, as a concrete one is
    refused by :func:`check_temperature` (XLA flushes it to zero).
    """
    value = check_traceable_float(value, name="temperature", caller=caller)
    if isinstance(value, jax.core.Tracer):
        tiny = float(np.finfo(value.dtype).tiny)
        value = jnp.where(value >= tiny, value, jnp.nan)
    return value


def _floating_dtype(dtype):
    """``dtype`` if floating, else JAX's default float (a traced integer option)."""
    if jnp.issubdtype(dtype, jnp.floating):
        return dtype
    return jnp.result_type(float)


def check_option(value, *, name: str, options: tuple[str, ...], caller: str) -> str:
    """Return ``value`` if it is one of the strings ``options``; refuse anything else.

    Raises:
      InvalidParameterError: ``value`` is not a str among ``options``.
    """
    if isinstance(value, str) and value in options:
        return value
    listed = ", ".join(repr(option) for option in sorted(options))
    raise InvalidParameterError(
        f"The '{name}' parameter of {caller} must be a str among {{{listed}}}. "
        f"Got {value!r} instead."
    )


def check_bool(value, *, name: str, caller: str) -> bool:
    """Return ``value`` as a bool; refuse non-booleans (1, "yes", None)."""
    if not isinstance(value, bool | np.bool_):
        raise InvalidParameterError(
            f"The '{name}' parameter of {caller} must be an instance of 'bool' or an "
            f"instance of 'numpy.bool'. Got {value!r} instead."
        )
    return bool(value)


GAINS = ("linear", "exp2")


def check_gain(gain, *, caller: str) -> str | Callable:
    """Return ``gain`` if it is ``"linear"``, ``"exp2"`` or a callable."""
    if callable(gain) or (isinstance(gain, str) and gain in GAINS):
        return gain
    raise InvalidParameterError(
        f"The 'gain' parameter of {caller} must be a str among "
        f"{{'linear', 'exp2'}} or a callable. Got {gain!r} instead."
    )


def check_lists(scores, labels, where, *, caller: str):
    """Check the static shapes and dtypes of ``(scores, labels, where)``.

    Args:
      scores: Array of shape ``(..., n)``.
      labels: Array of the same shape.
      where: None, or a boolean array of the same shape.
      caller: The public function's name, used in messages.

    Returns:
      ``(scores, labels, where)`` as JAX arrays; ``where`` stays None if it was.

    Raises:
      ValueError: an input is 0-dimensional, the shapes differ, an input is
        not numeric, or ``where`` is not boolean.
    """
    scores = as_numeric_array(scores, name="scores", caller=caller)
    labels = as_numeric_array(labels, name="labels", caller=caller)
    if scores.ndim == 0:
        raise ValueError(
            f"{caller} expects scores of shape (..., n) with at least one dimension; got a scalar."
        )
    if scores.shape != labels.shape:
        raise ValueError(
            f"{caller} expects scores and labels of the same shape; got scores "
            f"{scores.shape} and labels {labels.shape}."
        )
    where = check_item_mask(where, scores, name="where", caller=caller)
    return scores, labels, where


def dtype_of(x) -> np.dtype:
    """The dtype of an array, or of what ``numpy.asarray`` makes of an array-like."""
    dtype = getattr(x, "dtype", None)
    return np.dtype(np.asarray(x).dtype if dtype is None else dtype)


def compute_dtype(*dtypes):
    """The floating dtype a function computes and returns in, from its inputs' dtypes.

    Floating inputs promote among themselves; integer and boolean inputs do
    not widen them. With no floating input the default float dtype is used.
    Half-precision results are widened to float32.
    """
    floating = [d for d in dtypes if jnp.issubdtype(d, jnp.floating)]
    dtype = jnp.result_type(*floating) if floating else jax.dtypes.canonicalize_dtype(float)
    if jnp.finfo(dtype).bits < 32:
        dtype = jnp.dtype(jnp.float32)
    return dtype


def as_numeric_array(x, *, name: str, caller: str) -> jax.Array:
    """``x`` as a JAX array, refused unless it is real numbers or booleans."""
    dtype = dtype_of(x)
    if not (
        jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)
    ) or jnp.issubdtype(dtype, jnp.complexfloating):
        raise ValueError(f"{caller} expects real-valued numeric {name}; got dtype {dtype}.")
    if not isinstance(x, jax.Array):
        check_integers_fit(x, dtype, name=name, caller=caller)
    return jnp.asarray(x)


def check_integers_fit(x, dtype: np.dtype, *, name: str, caller: str) -> None:
    """Refuse host integers that JAX's narrower integer dtype would wrap around.

    Without ``jax_enable_x64`` JAX holds int64 as int32 and uint64 as uint32,
    and converts by wrapping: a score of 2**31 would rank as -2**31. Integers
    that fit convert exactly, and are accepted.
    """
    if not jnp.issubdtype(dtype, jnp.integer):
        return
    held = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
    if held == dtype:
        return
    values = np.asarray(x)
    if values.size == 0:
        return
    low, high = values.min(), values.max()
    bounds = np.iinfo(held)
    if low < bounds.min or high > bounds.max:
        outside = low if low < bounds.min else high
        raise ValueError(
            f"{caller} got {name} of dtype {dtype} holding {outside}, outside the range "
            f"of {held} that JAX holds them in without jax_enable_x64 (it would wrap "
            f"around). Turn jax_enable_x64 on, or pass {name} as floats."
        )


def is_concrete(*arrays) -> bool:
    """Whether none of ``arrays`` is a tracer (None counts as concrete)."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


def nonfinite_message(name: str, *, nan: bool, dtype) -> str:
    """The message scikit-learn's ``check_array`` uses for NaN or infinity."""
    if nan:
        return f"Input {name} contains NaN."
    return f"Input {name} contains infinity or a value too large for {dtype!r}."


def _value_checks(scores, labels, *, caller, nonnegative_labels):
    """The value checks that apply, as ``(name, message)`` pairs (static)."""
    checks = []
    for name, x in (("scores", scores), ("labels", labels)):
        if jnp.issubdtype(x.dtype, jnp.inexact):
            checks.append((f"{name}-nan", nonfinite_message(name, nan=True, dtype=x.dtype)))
            checks.append(
                (f"{name}-inf", nonfinite_message(name, nan=False, dtype=np.dtype(x.dtype)))
            )
    if nonnegative_labels:
        checks.append(("labels-negative", f"{caller} should not be used on negative labels."))
    return checks


def _failure_flags(xp, scores, labels, where, names):
    """Per check in ``names``, whether a real item fails it; ``xp`` is NumPy or jax.numpy."""
    valid = xp.ones(scores.shape, bool) if where is None else where
    tests = {
        "scores-nan": lambda: xp.isnan(scores),
        "scores-inf": lambda: xp.isinf(scores),
        "labels-nan": lambda: xp.isnan(labels),
        "labels-inf": lambda: xp.isinf(labels),
        "labels-negative": lambda: labels < 0,
    }
    return xp.stack([xp.any(valid & tests[name]()) for name in names])


_failures = jax.jit(functools.partial(_failure_flags, jnp), static_argnames=("names",))


def _in_host_memory(*arrays, one_device: bool = False) -> bool:
    """Whether every array (None aside) is a NumPy array or lives on CPU devices only.

    With ``one_device``, a JAX array must also live on a single device.
    """
    return all(
        a is None
        or isinstance(a, np.ndarray)
        or (
            all(device.platform == "cpu" for device in a.devices())
            and not (one_device and len(a.devices()) > 1)
        )
        for a in arrays
    )


def host_numpy(*arrays):
    """NumPy for concrete arrays in host memory, else ``jax.numpy``: the module to check them with.

    Eager checks in NumPy compile nothing, where each ``jax.numpy`` call on a
    new shape compiles a small program of its own.
    """
    return np if is_concrete(*arrays) and _in_host_memory(*arrays) else jnp


def on_one_cpu_device(*arrays) -> bool:
    """Whether every array (None aside) is a NumPy array or lives on one CPU device."""
    return _in_host_memory(*arrays, one_device=True)


def check_values(
    scores: jax.Array,
    labels: jax.Array,
    where: jax.Array | None,
    *,
    caller: str,
    nonnegative_labels: bool = False,
) -> None:
    """Refuse NaN and infinity (and, for NDCG, negative labels) in real items.

    Padding items (``where == False``) are never inspected: padding may hold
    anything.

    On concrete arrays this raises :class:`ValueError` at once. On traced
    arrays, inside :func:`value_checks_under_jit`, it registers
    ``checkify.debug_check`` calls that raise under
    :func:`jax.experimental.checkify.checkify`; otherwise it does nothing and
    the kernels turn such a list's result into NaN (see the metric docstrings).

    Raises:
      ValueError: on concrete inputs holding NaN or infinity, or negative
        labels when ``nonnegative_labels`` is set.
    """
    checks = _value_checks(scores, labels, caller=caller, nonnegative_labels=nonnegative_labels)
    if not checks:
        return
    names = tuple(name for name, _ in checks)
    if is_concrete(scores, labels, where):
        if _in_host_memory(scores, labels, where):
            # NumPy reads CPU arrays in place, and compiles nothing per shape:
            # a new shape costs one program (the kernel's), not two.
            mask = None if where is None else np.asarray(where)
            failed = _failure_flags(np, np.asarray(scores), np.asarray(labels), mask, names)
        else:
            failed = np.asarray(_failures(scores, labels, where, names))
        for (_, message), bad in zip(checks, failed, strict=True):
            if bad:
                raise ValueError(message)
    elif _CHECKS_UNDER_JIT.value:
        valid = jnp.ones(scores.shape, bool) if where is None else where
        failed = _failures(scores, labels, valid, names)
        for index, (_, message) in enumerate(checks):
            traced_check(jnp.logical_not(failed[index]), message)


def invalid_lists(
    scores: jax.Array,
    labels: jax.Array,
    where: jax.Array | None,
    *,
    nonnegative_labels: bool,
    finite_scores: bool = False,
    overflow: jax.Array | None = None,
) -> jax.Array:
    """Per list, whether it holds a value that the value checks refuse.

    A NaN score (any non-finite score with ``finite_scores``), a NaN or
    infinite label, a negative label where refused, or a list flagged in
    ``overflow`` (see :func:`gain_overflows`). Padding is never inspected.
    Returns a boolean array of the lists' batch shape.
    """
    bad = jnp.zeros(labels.shape, bool)
    if jnp.issubdtype(scores.dtype, jnp.inexact):
        bad = ~jnp.isfinite(scores) if finite_scores else jnp.isnan(scores)
    if jnp.issubdtype(labels.dtype, jnp.inexact):
        bad = bad | ~jnp.isfinite(labels)
    if nonnegative_labels:
        bad = bad | (labels < 0)
    if where is not None:
        bad = bad & where
    bad = jnp.any(bad, axis=-1)
    return bad if overflow is None else bad | overflow


def nan_for_invalid_values(
    value: jax.Array,
    scores: jax.Array,
    labels: jax.Array,
    where: jax.Array | None,
    *,
    nonnegative_labels: bool,
    overflow: jax.Array | None = None,
) -> jax.Array:
    """``value`` with NaN for each list holding a NaN score or a refused label.

    On traced inputs the value checks are off unless
    :func:`value_checks_under_jit` is on. A NaN score leaves a list without a
    ranking, and a NaN or infinite label (or a negative one where refused)
    makes its metric meaningless, yet either would give a plausible number.
    So do labels whose ``gain="exp2"`` gains overflow (``overflow``, from
    :func:`gain_overflows`). An infinite score still ranks (first or last), so
    it is left alone. ``value`` has the lists' batch shape, the arrays one
    more axis.
    """
    bad = invalid_lists(
        scores, labels, where, nonnegative_labels=nonnegative_labels, overflow=overflow
    )
    return jnp.where(bad, jnp.nan, value)


def nan_with_nan_gradient(
    value: jax.Array, bad: jax.Array, s: jax.Array, valid: jax.Array
) -> jax.Array:
    """``value`` with NaN for the lists flagged ``bad``, and a NaN gradient for them.

    The rule of the smooth metrics and the losses, which are differentiated: a
    list that the value checks would refuse gives NaN, and so does the
    gradient of that NaN with respect to each of the list's real scores, so
    that an optimiser sees the NaN instead of a zero or a plausible step.
    Padding keeps a zero gradient, and every other list keeps its own value
    and gradient.

    Args:
      value: ``(...)`` one value per list, or ``(..., n)`` one per item (then
        only real items turn NaN; padding keeps its value).
      bad: ``(...)`` boolean, the lists to turn NaN.
      s: ``(..., n)`` the floating scores the value was computed from, finite
        or not; the NaN gradient reaches the inputs through them.
      valid: ``(..., n)`` the mask of real items.
    """
    # The sum is multiplied by NaN only in bad lists: in the others the factor
    # is 0, whose gradient 0 * (cotangent 0) keeps them free of NaN.
    factor = jnp.where(bad, jnp.nan, 0).astype(s.dtype)
    anchor = (jnp.sum(jnp.where(valid, s, 0), axis=-1) * factor).astype(value.dtype)
    if value.ndim == s.ndim:
        return jnp.where(bad[..., None] & valid, anchor[..., None], value)
    return jnp.where(bad, anchor, value)


def check_labels_at_most(
    labels: jax.Array, where: jax.Array | None, bound: float, *, name: str, caller: str
) -> None:
    """Refuse a real label above ``bound`` (a declared maximum grade such as ERR's).

    Eager on concrete arrays, :func:`traced_check` under trace, like
    :func:`check_values`; padding is never inspected. The message names the
    parameter holding the bound (``name``) and the public function (``caller``).

    Raises:
      ValueError: on concrete inputs, a real label exceeds ``bound``.
    """
    message = f"Input labels contains a value greater than {name}={bound!r} in {caller}."
    xp = host_numpy(labels, where)
    valid = xp.ones(labels.shape, bool) if where is None else xp.asarray(where)
    values = xp.asarray(labels)
    # Infinity is left to check_values, whose message names it.
    refuse_if(xp.any(valid & xp.isfinite(values) & (values > bound)), message)


def check_num_relevant(num_relevant, scores, segments, max_segments, *, caller: str):
    """Check a per-list count such as ``num_relevant``; return it as an array (or None).

    :func:`check_list_count` for ``num_relevant``.
    """
    return check_list_count(
        num_relevant, scores, segments, max_segments, name="num_relevant", caller=caller
    )


def check_float_in_range(value, *, name: str, caller: str, low: float, high: float, closed: str):
    """Return ``value`` as a float in an interval; refuse anything else.

    Args:
      value: The parameter's value.
      name: The parameter's name, for the message.
      caller: The public function's name, for the message.
      low: The lower bound (``-math.inf`` for none).
      high: The upper bound (``math.inf`` for none).
      closed: Which bounds belong to the interval: ``"neither"``, ``"left"``,
        ``"right"`` or ``"both"``, as in scikit-learn's ``Interval``.

    Raises:
      InvalidParameterError: ``value`` is a bool, not a real number, NaN, or
        outside the interval, in scikit-learn's words ("The 'p' parameter of
        rank_biased_precision must be a float in the range (0.0, 1.0). Got 2
        instead.").
    """
    interval = Interval(float, low, high, closed)  # type: ignore[arg-type]
    return interval.check(value, name=name, caller=caller)


def check_int_or_none(value, *, name: str, caller: str, low: int):
    """Return ``value`` as an int ``>= low``, or None; refuse anything else.

    Raises:
      InvalidParameterError: ``value`` is not None and not an int (a bool is
        not) of at least ``low``.
    """
    return check_int(value, name=name, caller=caller, low=low, none=True)


@overload
def check_int(value: Any, *, name: str, caller: str, low: int) -> int: ...


@overload
def check_int(value: Any, *, name: str, caller: str, low: int, none: bool) -> int | None: ...


def check_int(value: Any, *, name: str, caller: str, low: int, none: bool = False) -> int | None:
    """Return ``value`` as an int ``>= low`` (or None where ``none``); refuse anything else.

    Raises:
      InvalidParameterError: ``value`` is not an int (a bool is not) of at
        least ``low``, in scikit-learn's words.
    """
    return Interval(int, low).check(value, name=name, caller=caller, none=none)


@overload
def check_float_tuple(
    value, *, length: Literal[4], name: str, caller: str
) -> tuple[float, float, float, float]: ...


@overload
def check_float_tuple(value, *, length: int, name: str, caller: str) -> tuple[float, ...]: ...


def check_float_tuple(value, *, length: int, name: str, caller: str) -> tuple[float, ...]:
    """Return ``value`` as a tuple of ``length`` finite floats; refuse anything else.

    Raises:
      InvalidParameterError: ``value`` is not a sequence (a string is not) of
        exactly ``length`` finite real numbers (bools are not).
    """
    ok = isinstance(value, tuple | list | np.ndarray) and len(value) == length
    ok = ok and all(
        isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise InvalidParameterError(
            f"The '{name}' parameter of {caller} must be a tuple of {length} finite floats. "
            f"Got {value!r} instead."
        )
    return tuple(float(v) for v in value)


def _per_list_array(value, scores, segments, max_segments, *, name: str, caller: str, entries: str):
    """``value`` as a numeric array of the result's shape, one entry per list.

    The scores' batch shape, with ``max_segments`` appended for packed lists;
    ``entries`` follows the shape in the refusal, saying what is expected.

    Raises:
      ValueError: it is not real-valued or has another shape.
    """
    value = as_numeric_array(value, name=name, caller=caller)
    batch = tuple(jnp.shape(scores)[:-1])
    if segments is not None:
        batch = (*batch, max_segments)
    if None in batch or value.shape != batch:
        expected = "(..., max_segments), with max_segments given," if segments is not None else ""
        raise ValueError(
            f"{caller} expects {name} of shape {expected or batch} {entries}; "
            f"got {name} {value.shape}."
        )
    return value


def check_list_count(value, scores, segments, max_segments, *, name: str, caller: str):
    """Check a per-list count named ``name`` (``num_relevant``, ``num_judged_nonrelevant`` ...).

    Returns it as an array of the result's shape (see :func:`_per_list_array`),
    or None.

    Raises:
      ValueError: as :func:`_per_list_array`; on concrete arrays, it holds NaN,
        infinity, a negative or a fractional value.
    """
    if value is None:
        return None
    value = _per_list_array(
        value,
        scores,
        segments,
        max_segments,
        name=name,
        caller=caller,
        entries="(one count per list)",
    )
    if is_concrete(value):
        values = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values % 1):
            raise ValueError(f"{caller} expects {name} to hold non-negative whole numbers.")
    return value


def check_item_mask(mask, scores, *, name: str, caller: str):
    """Check a per-item boolean mask such as ``judged``; return it as an array (or None).

    Raises:
      ValueError: ``mask`` is not boolean or not of the scores' shape.
    """
    if mask is None:
        return None
    mask = jnp.asarray(mask)
    if mask.dtype != jnp.bool_:
        raise ValueError(f"{caller} expects `{name}` to be a boolean mask; got dtype {mask.dtype}.")
    if mask.shape != jnp.shape(scores):
        raise ValueError(
            f"{caller} expects `{name}` of the same shape as scores; got "
            f"{name} {mask.shape} and scores {jnp.shape(scores)}."
        )
    return mask


def check_per_list_values(values, scores, segments, max_segments, *, name: str, caller: str):
    """Check a per-list array of non-negative reals (RBP's ``max_label``); return it as an array.

    Its shape is the result's (see :func:`_per_list_array`).

    Raises:
      ValueError: as :func:`_per_list_array`; on concrete arrays, it holds NaN,
        infinity or a negative value.
    """
    values = _per_list_array(
        values,
        scores,
        segments,
        max_segments,
        name=name,
        caller=caller,
        entries="(one value per list) or a float",
    )
    if is_concrete(values):
        found = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(found)) or np.any(found < 0):
            raise ValueError(f"{caller} expects {name} to hold finite non-negative numbers.")
    return values
