r"""Streaming evaluation: mergeable metric state for data that does not fit one batch.

An accumulator is a pair of a static description (which metric, which
options) and a **state**, a pytree of arrays. The description's methods are
pure functions of the state, in the style of ``optax`` and ``clu.metrics``:

* ``init()``: the empty state;
* ``update(state, scores, labels, *, where=None, weights=None)``: add one
  batch of lists;
* ``merge(a, b)``: the state of the two halves together;
* ``merge_across(state, axis_name)``: merge the states of every device along
  a mapped axis, inside :func:`jax.shard_map` (a ``psum`` of the states);
* ``compute(state)``: the mean.

>>> import jax.numpy as jnp
>>> from lodestar import metrics, streaming
>>> mrr = streaming.mean(metrics.reciprocal_rank)
>>> state = mrr.init()
>>> scores = jnp.array([[0.9, 0.5, 0.1], [0.9, 0.5, 0.1]])
>>> state = mrr.update(state, scores, jnp.array([[0, 1, 0], [0, 0, 0]]))
>>> state = mrr.update(state, scores[:1], jnp.array([[1, 0, 0]]))
>>> int(state.count), round(float(mrr.compute(state)), 4)  # (1/2 + 0 + 1) / 3
(3, 0.5)

**What is counted.** Every list with at least one real item (``where``) is
one query. A query with no relevant item contributes its metric value, 0 for
reciprocal rank, and stays in the mean. A list that is all padding is not a
query: it is left out, so a final batch padded with empty lists gives the
mean of the real ones. With ``weights`` (one non-negative weight per list)
the mean is ``sum(w * value) / sum(w)``, as ``numpy.average`` computes it;
``count`` still counts queries.

**Exactness.** The state holds *compensated* sums: each sum is a pair
``(value, error)`` whose exact sum is the running total to within a few units
in the last place of the compensation term. A batch is summed as a pairwise
tree of error-free additions (Knuth's TwoSum), and merging two states is one
more step of the same tree. The mean of any split into batches therefore
agrees with the mean of the whole set: to 1e-12 relative in float64, and in
float32 to within 4 units in the last place of the exact mean of the same
per-list values. With ``jax_enable_x64`` on, the state is float64 whatever
the metric's dtype. Decision 0010 records the choice.

**Transformations.** States are :class:`typing.NamedTuple` pytrees of fixed
shape and dtype, so ``update`` works under :func:`jax.jit`, as the body of
:func:`jax.lax.scan`, and inside :func:`jax.shard_map`. There, each device
updates its own state and ``merge_across`` combines them in device order by
the same tree, so the number of devices changes the mean only as much as
XLA's per-list values change between programs (an ulp of a list's value).
``docs/scaling.md`` shows each pattern.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Num

from lodestar import _lists, _native

__all__ = ["Collection", "CompensatedSum", "Mean", "MeanState", "collection", "mean"]


class CompensatedSum(NamedTuple):
    """A running sum kept as ``value + error``, the error being the lost round-off.

    Attributes:
      value: ``()`` the sum rounded to the state's dtype.
      error: ``()`` the accumulated rounding errors of ``value``.
    """

    value: jax.Array
    error: jax.Array


class MeanState(NamedTuple):
    """The state of a :class:`Mean`: a pytree of scalars.

    Attributes:
      total: The compensated sum of ``weight * value`` over the counted lists.
      weight: The compensated sum of the counted lists' weights (their number
        when no weights are given).
      count: The number of counted lists (queries), an integer.
    """

    total: CompensatedSum
    weight: CompensatedSum
    count: jax.Array


def _two_sum(a, b):
    """``a + b`` rounded, and its exact rounding error (Knuth's TwoSum, no branch)."""
    total = a + b
    b_virtual = total - a
    error = (a - (total - b_virtual)) + (b - b_virtual)
    return total, error


def _merge_sums(a: CompensatedSum, b: CompensatedSum) -> CompensatedSum:
    """One step of the pairwise tree; also how two states merge."""
    value, error = _two_sum(a.value, b.value)
    return CompensatedSum(value, (a.error + b.error) + error)


def _tree_sum(parts: CompensatedSum) -> CompensatedSum:
    """Sum 1-D compensated parts as a pairwise tree over adjacent pairs.

    The parts are padded with zeros to a power of two; adding a zero is exact.
    Pairing adjacent entries makes the sum of a block of ``2^j`` aligned
    entries a node of the tree, so summing per-device blocks and then merging
    the devices' sums in order repeats the very same additions.
    """
    size = parts.value.shape[0]
    width = 1 << max(size - 1, 0).bit_length()
    value, error = (jnp.pad(x, (0, width - size)) for x in parts)
    while value.shape[0] > 1:
        merged = _merge_sums(
            CompensatedSum(value[0::2], error[0::2]), CompensatedSum(value[1::2], error[1::2])
        )
        value, error = merged
    return CompensatedSum(value[0], error[0])


def _sum(values: jax.Array) -> CompensatedSum:
    flat = values.reshape(-1)
    if any(jax.typeof(flat).sharding.spec):
        # Explicitly sharded lists: the tree's strided halves cannot stay
        # sharded once they are shorter than the mesh, so gather the per-list
        # terms (one scalar per list) first. The additions are unchanged.
        flat = jax.sharding.reshard(flat, jax.sharding.PartitionSpec(None))
    return _tree_sum(CompensatedSum(flat, jnp.zeros_like(flat)))


def _state_dtype():
    """float64 when ``jax_enable_x64`` is on, else float32."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _gather_in_order(x: jax.Array, axis_name) -> jax.Array:
    """Every device's ``x`` along ``axis_name``, in axis order, exactly.

    Each device places its value in its own slot of a zero vector and the
    vectors are summed with ``psum``; every slot receives one value and zeros,
    so the sum is exact and identical on every device.
    """
    slots = jnp.zeros((lax.axis_size(axis_name),), x.dtype)
    return lax.psum(slots.at[lax.axis_index(axis_name)].set(x), axis_name)


_PROBE = jax.ShapeDtypeStruct((1, 2), jnp.float32)


@dataclasses.dataclass(frozen=True)
class Mean:
    """The (weighted) mean of a per-list metric over a stream of batches.

    Build one with :func:`mean`. It holds no arrays and can be closed over by
    jitted functions; the state travels separately.

    Attributes:
      metric: A function ``(scores, labels, *, where, **options) -> (...)``
        returning one value per list, such as :func:`lodestar.metrics.ndcg`.
      options: The metric's keyword options, as sorted ``(name, value)`` pairs.
    """

    metric: Callable[..., jax.Array]
    options: tuple[tuple[str, Any], ...] = ()

    def init(self) -> MeanState:
        """The empty state: no lists, a mean of NaN."""
        zero = jnp.zeros((), _state_dtype())
        return MeanState(CompensatedSum(zero, zero), CompensatedSum(zero, zero), jnp.zeros((), int))

    def update(
        self,
        state: MeanState,
        scores: Num[Array, "*batch n"],
        labels: Num[Array, "*batch n"],
        *,
        where: Bool[Array, "*batch n"] | None = None,
        weights: Num[Array, "*batch"] | None = None,
    ) -> MeanState:
        """Add one batch of lists to ``state``.

        Args:
          state: The state so far, from :meth:`init` or an earlier update.
          scores: ``(..., n)`` scores, as the metric takes them.
          labels: ``(..., n)`` labels.
          where: ``(..., n)`` boolean mask; False marks padding. A list with no
            real item is not counted.
          weights: ``(...)`` non-negative per-list weights, or None for 1.

        Returns:
          The state with the batch's lists added.

        Raises:
          ValueError: the metric returns other than one value per list;
            ``weights`` has the wrong shape or, on concrete arrays, holds a
            negative or non-finite value; and whatever the metric raises.
        """
        values = self.metric(scores, labels, where=where, **dict(self.options))
        batch_shape = jnp.shape(scores)[:-1]
        if values.shape != batch_shape:
            raise ValueError(
                f"streaming.mean needs a metric that returns one value per list, shape "
                f"{batch_shape}; {_name(self.metric)} returned shape {values.shape}."
            )
        weights, _ = _lists.check_weights(weights, batch_shape, caller="streaming.Mean.update")
        dtype = state.total.value.dtype
        counted = jnp.ones(batch_shape, bool) if where is None else jnp.any(where, axis=-1)
        weight = jnp.ones(batch_shape, dtype) if weights is None else weights.astype(dtype)
        weight = jnp.where(counted, weight, 0)
        total = jnp.where(counted, weight * values.astype(dtype), 0)
        batch = MeanState(_sum(total), _sum(weight), jnp.sum(counted, dtype=state.count.dtype))
        return self.merge(state, batch)

    def merge(self, a: MeanState, b: MeanState) -> MeanState:
        """The state of the lists of ``a`` and ``b`` together."""
        return MeanState(
            _merge_sums(a.total, b.total), _merge_sums(a.weight, b.weight), a.count + b.count
        )

    def merge_across(self, state: MeanState, axis_name) -> MeanState:
        """Merge the states of every device along ``axis_name``; call inside ``shard_map``.

        The result is the same on every device (replicated). The devices'
        states are gathered exactly (a ``psum`` of one-hot slots) and merged
        in axis order by the same pairwise tree as :meth:`update`, so the
        result does not depend on how XLA orders the reduction. A plain
        ``jax.lax.psum`` of the state is also a valid merge, only less exact.

        Args:
          state: This device's state.
          axis_name: The mapped axis name, or a tuple of them.

        Returns:
          The merged state.
        """

        def across(sum_: CompensatedSum) -> CompensatedSum:
            gathered = CompensatedSum(*(_gather_in_order(x, axis_name) for x in sum_))
            return _tree_sum(gathered)

        return MeanState(
            across(state.total), across(state.weight), lax.psum(state.count, axis_name)
        )

    def compute(self, state: MeanState) -> Float[Array, ""]:
        """The weighted mean of the counted lists; NaN if their weights sum to 0."""
        total = state.total.value + state.total.error
        weight = state.weight.value + state.weight.error
        return jnp.where(weight != 0, total / jnp.where(weight != 0, weight, 1), jnp.nan)


def _name(metric) -> str:
    return getattr(metric, "__qualname__", None) or getattr(metric, "__name__", repr(metric))


def mean(metric: Callable[..., jax.Array], **options) -> Mean:
    """An accumulator for the mean of ``metric`` over every list it is given.

    Args:
      metric: A per-list function ``(scores, labels, *, where, **options)``,
        such as any function of :mod:`lodestar.metrics`.
      **options: Keyword options passed to ``metric`` on every update, such as
        ``k=10`` or ``gain="exp2"``.

    Returns:
      A :class:`Mean` with ``init``, ``update``, ``merge``, ``merge_across``
      and ``compute``.

    Raises:
      TypeError: ``metric`` is not callable.
      InvalidParameterError: an option is invalid for ``metric``; checked
        here, once, by tracing ``metric`` on a tiny input.

    Example:
      NDCG@2 over two batches equals NDCG@2 over their union:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, streaming
      >>> ndcg2 = streaming.mean(metrics.ndcg, k=2)
      >>> scores = jnp.array([[0.9, 0.5, 0.1], [0.1, 0.5, 0.9], [0.5, 0.5, 0.5]])
      >>> labels = jnp.array([[2.0, 1.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
      >>> state = ndcg2.update(ndcg2.init(), scores[:1], labels[:1])
      >>> state = ndcg2.update(state, scores[1:], labels[1:])
      >>> whole = metrics.ndcg(scores, labels, k=2).mean()
      >>> bool(jnp.isclose(ndcg2.compute(state), whole, rtol=1e-6))
      True

    References:
      Knuth, *The Art of Computer Programming*, vol. 2, 4.2.2 (TwoSum).
      Higham, "The accuracy of floating point summation", SIAM J. Sci.
      Comput. 14(4), 1993. https://doi.org/10.1137/0914050
    """
    if not callable(metric):
        raise TypeError(f"streaming.mean expects a callable metric; got {metric!r}.")
    # Trace once on a tiny input so that bad options raise here, not mid-stream;
    # without starting JAX's backend, since an accumulator may be built before
    # jax.distributed.initialize.
    with _native.shapes_only():
        jax.eval_shape(functools.partial(metric, **options), _PROBE, _PROBE)
    return Mean(metric, tuple(sorted(options.items())))


@dataclasses.dataclass(frozen=True)
class Collection:
    """Several accumulators updated together; states and results are dicts.

    Build one with :func:`collection`.

    Attributes:
      members: The accumulators, as ``(name, accumulator)`` pairs.
    """

    members: tuple[tuple[str, Mean], ...]

    def init(self) -> dict[str, MeanState]:
        """Every member's empty state, by name."""
        return {name: member.init() for name, member in self.members}

    def update(self, state, scores, labels, *, where=None, weights=None):
        """Add one batch to every member; arguments as :meth:`Mean.update`."""
        return {
            name: member.update(state[name], scores, labels, where=where, weights=weights)
            for name, member in self.members
        }

    def merge(self, a, b):
        """Merge two collection states member by member."""
        return {name: member.merge(a[name], b[name]) for name, member in self.members}

    def merge_across(self, state, axis_name):
        """:meth:`Mean.merge_across` for every member."""
        return {name: member.merge_across(state[name], axis_name) for name, member in self.members}

    def compute(self, state) -> dict[str, jax.Array]:
        """Every member's mean, by name."""
        return {name: member.compute(state[name]) for name, member in self.members}


def collection(members: Mapping[str, Mean]) -> Collection:
    """Several accumulators fed the same batches, like ``clu.metrics.Collection``.

    Args:
      members: Accumulators by name, e.g. ``{"ndcg@10": mean(metrics.ndcg, k=10)}``.

    Returns:
      A :class:`Collection` whose states and results are dicts by name.

    Raises:
      TypeError: a member is not a :class:`Mean`.

    Example:
      >>> import jax.numpy as jnp
      >>> from lodestar import metrics, streaming
      >>> evaluation = streaming.collection({
      ...     "ndcg@2": streaming.mean(metrics.ndcg, k=2),
      ...     "mrr": streaming.mean(metrics.reciprocal_rank),
      ... })
      >>> scores = jnp.array([[0.9, 0.5, 0.1], [0.1, 0.5, 0.9]])
      >>> labels = jnp.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
      >>> state = evaluation.update(evaluation.init(), scores, labels)
      >>> {name: round(float(v), 4) for name, v in evaluation.compute(state).items()}
      {'ndcg@2': 0.3155, 'mrr': 0.25}
    """
    for name, member in members.items():
        if not isinstance(member, Mean):
            raise TypeError(
                f"streaming.collection expects accumulators from streaming.mean; "
                f"{name!r} is {member!r}."
            )
    return Collection(tuple(members.items()))
