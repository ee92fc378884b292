"""What every loss shares: validation, the padded layout, reductions, the kernel wrapper."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _gains, _lists, _validation

REDUCTIONS = ("mean", "sum", "none")


def check_nonnegative_int(value, *, name: str, caller: str) -> int:
    return _validation.check_int(value, name=name, caller=caller, low=0)


def check_key(key, *, caller: str):
    """None, one typed key (``jax.random.key``) or one raw key (``PRNGKey``: two uint32).

    A static property, so it raises under ``jit`` too; one key serves the whole
    batch, as ``jax.random.uniform(key, scores.shape)`` draws per item.
    """
    if key is None:
        return None
    dtype, shape = getattr(key, "dtype", None), getattr(key, "shape", None)
    typed = dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)
    if (typed and shape == ()) or (not typed and dtype == jnp.uint32 and shape == (2,)):
        return key
    got = repr(key) if dtype is None else f"an array of dtype {dtype} and shape {shape}"
    raise _validation.InvalidParameterError(
        f"The 'key' parameter of {caller} must be one jax.random.key, one "
        f"jax.random.PRNGKey or None. Got {got} instead."
    )


def prepare(
    scores,
    labels,
    where,
    weights,
    reduction,
    *,
    caller,
    nonnegative_labels,
    gain=None,
    temperature=None,
    **packing,
):
    """Validate; lay packed lists out (``packing``: the segment options), one per block.

    Returns ``(scores, labels, where, list_weights, item_weights, reduction)``;
    ``weights`` are per list or per item by their shape (see the module
    docstring), and the other of the two is None.
    """
    reduction = _validation.check_option(
        reduction, name="reduction", options=REDUCTIONS, caller=caller
    )
    lists = _lists.prepare(
        scores,
        labels,
        where,
        caller=caller,
        nonnegative_labels=nonnegative_labels,
        gain=gain,
        temperature=temperature,
        one_result=reduction != "none",
        **packing,
    )
    shape = lists.scores.shape
    item_shape = shape if lists.item is None else (*shape[:-2], lists.n)
    list_weights, item_weights = _lists.check_weights(
        weights, shape[:-1], caller=caller, item_shape=item_shape
    )
    if item_weights is not None:
        item_weights = lists.layout(item_weights)
    return (
        lists.scores,
        lists.labels,
        lists.where,
        lists.list_weights(list_weights),
        item_weights,
        reduction,
    )


def reduce_lists(values, valid, weights, reduction):
    """Weight the per-list ``values`` and reduce them; see the module docstring.

    ``valid`` is the mask of real items, one row per list; only ``"mean"``
    reads it, to count the lists with a real item.
    """
    if weights is not None:
        values = values * weights.astype(values.dtype)
    if reduction == "none":
        return values
    total = jnp.sum(values)
    if reduction == "sum":
        return total
    count = jnp.sum(jnp.any(valid, axis=-1))
    return jnp.where(count > 0, total / jnp.maximum(count, 1).astype(total.dtype), 0)


def masked_logsumexp(x, mask, axis):
    """``log sum exp(x)`` over the entries where ``mask`` holds, keepdims; 0 if none.

    ``x`` must be finite everywhere (masked entries included), so that no NaN
    can reach a gradient; the masked entries get a zero gradient.
    """
    peak = jnp.max(jnp.where(mask, x, -jnp.inf), axis=axis, keepdims=True)
    peak = lax.stop_gradient(jnp.where(jnp.isfinite(peak), peak, 0))
    shifted = jnp.where(mask, x - peak, 0)
    total = jnp.sum(jnp.where(mask, jnp.exp(shifted), 0), axis=axis, keepdims=True)
    some = total > 0
    return jnp.where(some, jnp.log(jnp.where(some, total, 1)) + peak, 0)


def _empty(scores, dtype):
    return jnp.zeros(scores.shape[:-1], dtype)


def loss_kernel(*, nonnegative_labels: bool, static_argnames: tuple[str, ...] = ()):
    """Make a loss kernel of ``per_list(s, y, valid, w, *options, **static)``.

    ``per_list`` gets the floating scores ``s`` and labels ``y`` (0 on
    padding), the mask ``valid`` of real items, the per-item weights ``w``
    (1 without them, 0 on padding), the traced ``options`` and the ``static``
    options named in ``static_argnames``, and returns the per-list losses.
    The kernel, jitted, takes validated ``(scores, labels, where, weights,
    item_weights, *options, reduction, **static)``; an option may be a pytree
    (a lambda weight, whose leaves are its scales); it gives lists of no item
    position a loss of 0, applies the NaN rule of traced inputs to the others
    (with the ``gain`` option, if any) and reduces.
    """

    def make(per_list):
        def kernel(scores, labels, where, weights, item_weights, *options, reduction, **static):
            valid = _lists.valid(scores, where)
            s, y, dtype = _lists.floating(scores, labels, valid)
            if scores.shape[-1] == 0:
                return reduce_lists(_empty(scores, dtype), valid, weights, reduction)
            w = jnp.ones_like(s) if item_weights is None else item_weights.astype(dtype)
            w = jnp.where(valid, w, 0)
            value = per_list(s, y, valid, w, *options, **static)
            value = _lists.nan_rule(
                value,
                scores,
                labels,
                where,
                s,
                # A gain (of the loss, or of its lambda weights) needs non-negative labels.
                nonnegative_labels=nonnegative_labels or static.get("gain") is not None,
                gain=static.get("gain"),
                options=[o for o in jax.tree.leaves(options) if isinstance(o, jax.Array)],
            )
            return reduce_lists(value, valid, weights, reduction)

        kernel.__name__ = kernel.__qualname__ = per_list.__name__
        return jax.jit(kernel, static_argnames=("reduction", *static_argnames))

    return make


def normalised_gains(y, valid, w, gain, k):
    """Each real item's gain, times its weight, over the list's ideal DCG@k (0 if none)."""
    gains = jnp.where(valid, _gains.apply_gain(gain, y) * w, 0)
    return _gains.shares(gains, _gains.ideal_dcg(gains, valid, k=k))


def label_distribution(y, valid, w):
    """The weighted labels over their sum: the target distribution of a list (0 if none)."""
    weighted = jnp.where(valid, y * w, 0)
    total = jnp.sum(weighted, axis=-1, keepdims=True)
    return weighted / jnp.where(total > 0, total, 1)
