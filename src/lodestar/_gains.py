"""Gain functions and positional discount tables.

Positions are 0-based throughout the implementation: the item ranked first sits
at position 0 and receives the discount ``1 / log_b(0 + 2) = 1`` for ``b = 2``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import re
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from lodestar import _native, _parameters, _ranking, _validation


def apply_gain(gain: str | Callable, labels: jax.Array) -> jax.Array:
    """Map labels to gains: ``"linear"`` is the label, ``"exp2"`` is 2^label - 1.

    A callable is applied elementwise to the labels and must return an array of
    the same shape.

    Raises:
      ValueError: a callable gain returned an array of another shape, or ``gain``
        is a string other than the two names.
    """
    if gain == "linear":
        return labels
    if gain == "exp2":
        return _exact_exp2(labels) - 1
    if isinstance(gain, str):
        # check_gain admits no other name; a string here is a caller that skipped it.
        raise ValueError(f"Unknown gain {gain!r}: expected 'linear', 'exp2' or a callable.")
    gains = jnp.asarray(gain(labels), dtype=labels.dtype)
    if gains.shape != labels.shape:
        raise ValueError(
            f"A callable gain must return an array of the labels' shape "
            f"{labels.shape}; it returned shape {gains.shape}."
        )
    return gains


def _exact_exp2(labels: jax.Array) -> jax.Array:
    """``2 ** labels``, exact for integer labels.

    XLA's float64 ``exp2`` is off by an ulp or more at some integers (3, 4 and 6
    to 9 among others), while every other implementation of ``2^rel - 1``
    produces exact powers of two. Splitting off the integer part and scaling
    by it with ``ldexp`` keeps those exact and leaves ``exp2`` only the
    fraction, where ``exp2(0) == 1``. Non-finite labels pass through ``exp2``.
    """
    finite = jnp.isfinite(labels)
    whole = jnp.floor(jnp.where(finite, labels, 0))
    split = jnp.ldexp(jnp.exp2(labels - whole), whole.astype(jnp.int32))
    return jnp.where(finite, split, jnp.exp2(labels))


@functools.partial(jax.jit, static_argnames=("dtype",))
def exp2_overflows(labels: jax.Array, valid: jax.Array, dtype) -> jax.Array:
    """Per list: whether ``2 ** label`` summed over the real items overflows ``dtype``.

    The exp2 gains ``2 ** label - 1`` of such a list, or its (ideal) DCG, would
    be infinite. NaN and infinite labels are ignored here (the value checks
    refuse them on their own).

    Args:
      labels: ``(..., n)`` labels, any numeric dtype.
      valid: ``(..., n)`` mask of real items.
      dtype: The floating dtype the gains are computed in.

    Returns:
      ``(...)`` booleans.
    """
    y = labels.astype(dtype)
    counted = valid & jnp.isfinite(y)
    powers = jnp.where(counted, _exact_exp2(jnp.where(counted, y, 0)), 0)
    return ~jnp.isfinite(jnp.sum(powers, axis=-1))


def discount_table(n: int, *, k, log_base, dtype) -> jax.Array:
    """Prefix sums ``W`` of the DCG discounts ``1 / log_b(p + 2)``, zero from ``k`` on.

    ``W[p]`` is the sum of the discounts of positions ``0 .. p - 1``, so
    ``W`` has shape ``(n + 1,)`` and the mean discount over the positions
    ``[a, a + t)`` of a tie block is ``(W[a + t] - W[a]) / t``.

    The discount keeps scikit-learn's order of operations,
    ``1 / (log(p + 2) / log(b))``, so the exact paths agree with
    ``sklearn.metrics.dcg_score`` to round-off. A base of 1 makes every
    discount ``1 / inf = 0``.

    Args:
      n: The list length (static).
      k: Positions ``p >= k`` get discount 0; a Python int or a traced scalar.
      log_base: The logarithm base in (0, inf); a Python float or a traced scalar.
      dtype: The floating dtype of the table.

    Returns:
      A ``(n + 1,)`` array of ``dtype``.
    """
    position = jnp.arange(n)
    discount = discount_at(position.astype(dtype) + 1, log_base)
    discount = jnp.where(position < k, discount, 0)
    return jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(discount)])


def discount_at(rank: jax.Array, log_base) -> jax.Array:
    """The DCG discount ``1 / log_b(rank + 1)`` at a 1-based rank.

    The one place the discount formula lives: :func:`discount_table` evaluates
    it at the integer ranks ``1 .. n``, and :mod:`lodestar.smooth` at soft
    (fractional) ranks. The order of operations is scikit-learn's,
    ``1 / (log(rank + 1) / log(b))``.

    ``log(b)`` is taken in the base's own dtype (float64 under
    ``jax_enable_x64``, even when the ranks are float32) and only then cast to
    the ranks' dtype: a base such as ``1e300`` or ``1e-300`` has no float32
    value, but its logarithm (about 690.8 in magnitude) does, and every
    discount stays finite. Bases that even their own dtype cannot carry are
    refused by :func:`lodestar._validation.check_log_base`. With a float64
    rank this is exactly scikit-learn's arithmetic.

    Args:
      rank: 1-based ranks, integer-valued or not, of a floating dtype.
      log_base: The logarithm base in (0, inf); a Python float or a traced scalar.

    Returns:
      The discounts, of ``rank``'s shape and dtype.
    """
    log_of_base = jnp.log(jnp.asarray(log_base)).astype(rank.dtype)
    return 1 / (jnp.log(rank + 1) / log_of_base)


def descending_gains(values: jax.Array, valid: jax.Array) -> jax.Array:
    """Each list's real values in descending order, then a 0 per padding slot.

    The ideal DCG's gains in order: one sort, where :func:`_ranking.descending_order`
    takes an argsort and a gather, with the same value at every position
    (decision 0041). Differentiated, the tangents are gathered by that
    argsort. Integers are ordered as float32, as the argsort orders them.
    """
    if not jnp.issubdtype(values.dtype, jnp.floating):
        values = values.astype(jnp.float32)
    return _sorted_values(values, valid)


@jax.custom_jvp
def _sorted_values(values: jax.Array, valid: jax.Array) -> jax.Array:
    # The kernel sorts float32 and float64; half floats take XLA's sort.
    if _native.applies() and values.dtype in (jnp.float32, jnp.float64):
        return _native.on_cpu(_native.descending_gains, _xla_sorted_values, values, valid)
    return _xla_sorted_values(values, valid)


def _xla_sorted_values(values: jax.Array, valid: jax.Array) -> jax.Array:
    ordered = -jnp.sort(jnp.where(valid, -values, jnp.inf), axis=-1)
    start = jnp.sum(valid & ~jnp.isnan(values), axis=-1, keepdims=True)
    stop = start + jnp.sum(~valid, axis=-1, keepdims=True)
    position = lax.broadcasted_iota(jnp.int32, values.shape, values.ndim - 1)
    return jnp.where((position >= start) & (position < stop), 0, ordered)


@_sorted_values.defjvp
def _sorted_values_jvp(primals, tangents):
    values, valid = primals
    order = _ranking.descending_order(values, valid)
    values_dot = jnp.take_along_axis(jnp.where(valid, tangents[0], 0), order, axis=-1)
    return _sorted_values(values, valid), values_dot


def ideal_candidates(gains: jax.Array, valid: jax.Array) -> jax.Array:
    """The gains an ideal ranking orders, padding at -inf so that it comes last."""
    return jnp.where(valid, gains, -jnp.inf)


def ideal_dcg(gains, valid, *, k, rank_k=None) -> jax.Array:
    """DCG of each list ranked by its own gains (base 2), padding excluded.

    Equal gains are interchangeable, so any order of them gives the exact
    ideal. Which route is cheapest depends on the shape (decision 0004).

    Args:
      gains: ``(..., n)`` gains, zero (or anything) on padding.
      valid: ``(..., n)`` boolean mask of real items.
      k: Positions from ``k`` on count for nothing; a Python int or traced.
      rank_k: A static cut-off: only the ``rank_k`` largest gains are
        looked at. None looks at every gain.

    Returns:
      ``(...)`` ideal DCG, in the gains' dtype.
    """
    n = gains.shape[-1]
    table = discount_table(n, k=k, log_base=2.0, dtype=gains.dtype)
    if rank_k is not None:
        # Only the k largest gains matter: their values and a dot product.
        top_gains = _ranking.largest_values(ideal_candidates(gains, valid), rank_k)
        top = jnp.where(top_gains == -jnp.inf, 0, top_gains)
        return jnp.sum(top * jnp.diff(table)[:rank_k], axis=-1)
    if n >= _ranking.ORDER_BY_SORT_MIN_N:
        ordered = descending_gains(gains, valid)
        return jnp.sum(ordered * jnp.diff(table), axis=-1)
    return _ranking.block_weighted_sum(gains, gains, valid, table)


@dataclasses.dataclass(frozen=True, init=False)
class GainTable:
    """The gain of each relevance level, as trec_eval's ``ndcg.1=3.5,2=9``: a ``gain=``.

    Levels listed get the gain given; every other label keeps its own value as
    its gain, as in trec_eval's gain_init.c, where a relevance level that the
    parameters leave out gains the level itself. Gains may be zero or
    negative, and level 0 may be given a gain. The table is hashable, so it
    can be passed to a jitted function as a static argument, and callable:
    ``table(labels)`` returns the gains.

    NDCG's ideal ranks the items by their gains and stops at the first gain
    that is not positive (trec_eval's m_ndcg.c), so a negative gain lowers a
    ranking's DCG but never its ideal. An unjudged item gains 0 whatever its
    label: give the measures a ``judged`` mask when level 0 has a gain.

    Args:
      gains: A mapping from relevance levels (whole numbers in
        ``[0, 2**63 - 1]``, the range of a relevance) to their gains (finite
        real numbers).

    Raises:
      InvalidParameterError: ``gains`` is not such a mapping.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> table = metrics.GainTable({1: 3.5, 2: 9.0})
      >>> table(jnp.array([0.0, 1.0, 2.0, 3.0])).tolist()
      [0.0, 3.5, 9.0, 3.0]
    """

    levels: tuple[int, ...]
    gains: tuple[float, ...]

    def __init__(self, gains: Mapping[int, float]):
        def refuse():
            return _validation.InvalidParameterError(
                "The 'gains' parameter of GainTable must be a mapping of whole-number "
                f"levels in [0, {_parameters.LARGEST_WHOLE_NUMBER}] to finite float gains. "
                f"Got {gains!r} instead."
            )

        if not isinstance(gains, Mapping):
            raise refuse()
        pairs = {}
        for level, gain in gains.items():
            whole = _validation.is_int(level) or (
                isinstance(level, float) and math.isfinite(level) and level == int(level)
            )
            number = isinstance(gain, numbers.Real) and not isinstance(gain, bool)
            in_range = whole and 0 <= level <= _parameters.LARGEST_WHOLE_NUMBER
            if not in_range or not number or not math.isfinite(float(gain)):
                raise refuse()
            pairs[int(level)] = float(gain)
        ordered = sorted(pairs.items())
        object.__setattr__(self, "levels", tuple(level for level, _ in ordered))
        object.__setattr__(self, "gains", tuple(gain for _, gain in ordered))

    @classmethod
    def parse(cls, text: str) -> GainTable:
        """Read trec_eval's parameter notation ``level=gain,level=gain``.

        ``GainTable.parse("1=3.5,2=9")`` is ``GainTable({1: 3.5, 2: 9.0})``, what
        trec_eval's ``-m ndcg.1=3.5,2=9`` sets (meas_init.c's
        ``get_param_pairs`` and gain_init.c).

        Raises:
          InvalidParameterError: a pair is not ``level=gain`` with a
            whole-number level in ``[0, 2**63 - 1]`` (as trec_eval reads a
            long) and a finite gain, or a level appears twice.
        """
        gains = {}
        for pair in text.split(","):
            level, equals, gain = pair.partition("=")
            parsed_level = parsed_gain = None
            # ASCII digits only, as trec_eval's C parser reads them (int() and
            # float() would take other scripts' digits and underscores too).
            # A level past int64 is refused, as a cut-off is: trec_eval would read it
            # as 2**63 - 1, and int() refuses more than 4,300 digits.
            if (
                re.fullmatch(r"[0-9]+", level)
                and not _parameters.past_largest(level)
                and _parameters.REAL_NUMBER.fullmatch(gain)
            ):
                parsed_level, parsed_gain = int(level), float(gain)
            if not equals or parsed_level is None or parsed_level in gains:
                raise _validation.InvalidParameterError(
                    "GainTable.parse expects comma-separated level=gain pairs with each "
                    f"level a whole number up to {_parameters.LARGEST_WHOLE_NUMBER} given once, "
                    f"such as '1=3.5,2=9'. Got {text!r} instead."
                )
            gains[parsed_level] = parsed_gain
        return cls(gains)

    def __call__(self, labels) -> jax.Array:
        """The gain of each label: the table's for a listed level, else the label."""
        labels = jnp.asarray(labels)
        if not jnp.issubdtype(labels.dtype, jnp.floating):
            labels = labels.astype(jnp.result_type(float))
        gains = labels
        for level, gain in zip(self.levels, self.gains, strict=True):
            # As a float: a level past the labels' integers matches none of them.
            at_level = labels == jnp.asarray(float(level), labels.dtype)
            gains = jnp.where(at_level, jnp.asarray(gain, labels.dtype), gains)
        return gains

    def __repr__(self) -> str:
        return f"GainTable({dict(zip(self.levels, self.gains, strict=True))!r})"


def shares(gains: jax.Array, ideal: jax.Array) -> jax.Array:
    """Each gain over its list's ideal DCG, ``(..., n)``; 0 for a list whose ideal is 0.

    The smooth NDCG and the rank-aware losses divide the gains before any sum,
    so that the gain of a label near the exp2 limit (2^127 in float32) never
    meets a cotangent of ``1 / ideal``, below the smallest normal number. XLA
    rewrites a division by a broadcast into a multiplication by the
    reciprocal, which flushes that same ``1 / ideal`` to 0 and every share
    with it; the barrier keeps the divisor a full array, so the division is
    done as written.
    """
    nonzero = ideal > 0
    divisor = jnp.broadcast_to(jnp.where(nonzero, ideal, 1)[..., None], gains.shape)
    return jnp.where(nonzero[..., None], gains / lax.optimization_barrier(divisor), 0)


def exp2_overflow_message(dtype, *, name: str = "labels") -> str:
    """The refusal of labels whose ``gain="exp2"`` gains overflow ``dtype``."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    wider = f", or float64 (labels below {np.finfo(np.float64).maxexp})."
    if dtype == np.float64:
        wider = "."
    return (
        f"Input {name} is too large for gain='exp2' in {dtype.name}: the gains "
        f"2**label - 1 of a list must sum to less than {info.max!s}, the largest "
        f"{dtype.name}, so every label must be below {info.maxexp}. Use smaller labels, "
        f"gain='linear'{wider}"
    )


def gain_overflows(gain, labels: jax.Array, where: jax.Array | None, dtype) -> jax.Array | None:
    r"""Per list, whether its ``gain="exp2"`` gains overflow ``dtype``; None for other gains.

    The gains :math:`2^\ell - 1` of a list's real items, and so its DCG (with
    the base-2 discounts, at most 1) and its ideal DCG, stay finite exactly
    when their sum does: in float32 every label must be below 128, in float64
    below 1024, and fewer may come near that. NaN and infinite labels are left
    to :func:`check_values`.
    """
    if not (isinstance(gain, str) and gain == "exp2"):
        return None
    valid = jnp.ones(labels.shape, bool) if where is None else where
    return exp2_overflows(labels, valid, dtype)


def check_gains(labels, where, gain, dtype, *, caller: str, name: str = "labels") -> None:
    """Refuse labels whose ``gain="exp2"`` gains overflow the compute ``dtype``.

    Eager on concrete arrays, :func:`traced_check` under trace, like
    :func:`check_values`; padding is never inspected. Under ``jit`` without
    the checks, the functions turn such a list's value into NaN.

    Raises:
      ValueError: on concrete inputs, the exp2 gains of a list overflow ``dtype``.
    """
    overflow = gain_overflows(gain, labels, where, dtype)
    if overflow is None:
        return
    _validation.refuse_if(jnp.any(overflow), exp2_overflow_message(dtype, name=name))


def check_ideal(
    ideal_labels, ideal_where, scores, segments, *, caller: str, labels=None, gain=None
):
    """Check NDCG's ``ideal_labels`` and ``ideal_where``; return them as arrays (or None).

    With ``gain="exp2"`` the ideal labels' gains must not overflow the dtype
    the metric computes in (that of ``scores`` and ``labels``). On traced
    arrays the same checks give NaN instead (:func:`nan_for_invalid_ideal`).

    Raises:
      ValueError: ``ideal_labels`` is not numeric, does not share the batch
        shape of ``scores``, or comes with ``segments``; ``ideal_where`` comes
        without ``ideal_labels``, is not boolean or differs in shape; on
        concrete arrays, a real ideal label is NaN, infinite or negative, or
        its ``gain="exp2"`` gains overflow.
    """
    if ideal_labels is None:
        if ideal_where is not None:
            raise ValueError(f"{caller} got ideal_where without ideal_labels.")
        return None, None
    if segments is not None:
        raise ValueError(f"{caller} takes ideal_labels only for unpacked lists (without segments).")
    ideal_labels = _validation.as_numeric_array(ideal_labels, name="ideal_labels", caller=caller)
    batch = jnp.shape(scores)[:-1]
    if ideal_labels.ndim != len(batch) + 1 or ideal_labels.shape[:-1] != batch:
        raise ValueError(
            f"{caller} expects ideal_labels of shape (..., m) with the scores' batch "
            f"shape {batch}; got ideal_labels {ideal_labels.shape}."
        )
    if ideal_where is not None:
        ideal_where = jnp.asarray(ideal_where)
        if ideal_where.dtype != jnp.bool_ or ideal_where.shape != ideal_labels.shape:
            raise ValueError(
                f"{caller} expects ideal_where to be a boolean mask of the shape of "
                f"ideal_labels {ideal_labels.shape}; got {ideal_where.dtype} "
                f"{ideal_where.shape}."
            )
    real = jnp.ones(ideal_labels.shape, bool) if ideal_where is None else ideal_where
    checks = [(f"{caller} should not be used on negative labels.", ideal_labels < 0)]
    if jnp.issubdtype(ideal_labels.dtype, jnp.inexact):
        dtype = np.dtype(ideal_labels.dtype)
        checks = [
            (
                _validation.nonfinite_message("ideal_labels", nan=True, dtype=dtype),
                jnp.isnan(ideal_labels),
            ),
            (
                _validation.nonfinite_message("ideal_labels", nan=False, dtype=dtype),
                jnp.isinf(ideal_labels),
            ),
            *checks,
        ]
    for message, bad in checks:
        _validation.refuse_if(jnp.any(real & bad), message)
    others = [scores] if labels is None else [scores, labels]
    dtype = _validation.compute_dtype(*(_validation.dtype_of(x) for x in others))
    check_gains(ideal_labels, ideal_where, gain, dtype, caller=caller, name="ideal_labels")
    return ideal_labels, ideal_where


def nan_for_invalid_ideal(value, ideal_labels, ideal_where, gain, dtype) -> jax.Array:
    """``value`` with NaN for each list whose ``ideal_labels`` the checks would refuse.

    The traced counterpart of :func:`check_ideal` (decision 0003): a NaN,
    infinite or negative real ideal label, or ideal gains that overflow
    ``dtype``, would make the ideal DCG, and so the NDCG, meaningless.
    """
    bad = _validation.invalid_lists(
        ideal_labels,
        ideal_labels,
        ideal_where,
        nonnegative_labels=True,
        overflow=gain_overflows(gain, ideal_labels, ideal_where, dtype),
    )
    return jnp.where(bad, jnp.nan, value)
