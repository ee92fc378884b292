"""Expected reciprocal rank: Chapelle et al.'s cascade, exact over tie orders."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax
from jaxtyping import Array, Bool, Float, Int, Num

from lodestar import _rank_sums, _validation
from lodestar.metrics import _kernel


def _expected_cascade(stop, ranking, k, *, length, dtype):
    """Expected ERR@k from per-item stop probabilities, exact over tie orders.

    In rank order a block of ``m`` tied items starting at ``a`` is reached with
    probability ``reach(a)``, the product of ``1 - R`` over every item above it.
    Inside the block, the expected stop probability at offset ``u`` is
    ``s_u = (1/m) sum_i R_i ebar_u(B - i)``, where ``ebar_u`` is the mean over
    ``u``-subsets of the product of ``1 - R``. Adding the block's items one at a
    time (j = 1 .. m) updates the running means ``e_u`` (the ``ebar_u`` of the
    items added so far) and ``s_u`` by convex combinations:

        e_u <- ((j - u) e_u + u x e_{u-1}) / j
        s_u <- ((j - 1 - u) s_u + u x s_{u-1} + R e_u) / j

    for the j-th item's ``(R, x = 1 - R)``. Offset ``u`` of a block lives at
    rank ``a + u``, so one ``(..., length)`` array holds every block at once,
    and the loop runs as many times as the largest block starting before ``k``.
    """
    n = stop.shape[-1]
    valid, blocks = ranking.valid, ranking.blocks
    # Rank order, blocks contiguous; the order inside a block does not matter,
    # the running means being symmetric in the block's items.
    order = ranking.rank_order()

    def ranked(x):
        return jnp.take_along_axis(x, order, axis=-1)

    stop_ranked = ranked(jnp.where(valid, stop, 0))
    go_on = 1 - stop_ranked
    start = ranked(blocks.above)[..., :length]
    size = ranked(blocks.tied)[..., :length]
    real = ranked(valid)[..., :length]
    rank = jnp.arange(length)
    offset = (rank - start).astype(dtype)
    reach = _kernel.cumulative_product(
        jnp.concatenate([jnp.ones_like(go_on[..., :1]), go_on[..., :-1]], -1)
    )
    reach_block = jnp.take_along_axis(reach, jnp.minimum(start, n - 1), axis=-1)

    def previous_offset(x):
        return jnp.concatenate([jnp.zeros_like(x[..., :1]), x[..., :-1]], axis=-1)

    def add_item(j, state):
        none_stopped, stops_at = state
        item = jnp.minimum(start + j - 1, n - 1)
        # One gather per step: x is 1 - r, as go_on is 1 - stop_ranked.
        r = jnp.take_along_axis(stop_ranked, item, axis=-1, mode="promise_in_bounds")
        x = 1 - r
        count = j.astype(dtype)
        new_stops_at = (
            (count - 1 - offset) * stops_at
            + offset * x * previous_offset(stops_at)
            + r * none_stopped
        ) / count
        new_none_stopped = (
            (count - offset) * none_stopped + offset * x * previous_offset(none_stopped)
        ) / count
        joins = j <= size
        return (
            jnp.where(joins, new_none_stopped, none_stopped),
            jnp.where(joins, new_stops_at, stops_at),
        )

    steps = jnp.max(jnp.where(real & (start < k), size, 0), initial=0)
    # Typed like the labels' terms (sharded, and varying inside a shard_map),
    # which the block counts from a host sort need not be.
    no_stop = jnp.zeros_like(reach_block)
    initial = ((offset == 0).astype(dtype) + no_stop, no_stop)
    _, stops_at = lax.fori_loop(1, steps + 1, add_item, initial)
    weight = jnp.where(real & (rank < k), reach_block / (rank + 1).astype(dtype), 0)
    return jnp.sum(weight * stops_at, axis=-1)


def stop_probability(grades, max_label):
    """Chapelle et al.'s stop probability ``(2^g - 1) / 2^max_label`` of each grade.

    Computed as ``2^(g - max) - 2^-max``: no overflow for any ``max_label``.
    Shared by the exact ERR and its declaration as a rank sum.
    """
    ceiling = jnp.asarray(max_label, grades.dtype)
    return jnp.exp2(grades - ceiling) - jnp.exp2(-ceiling)


def _err(lists: _kernel.RankedLists, k, *, max_label):
    dtype = lists.dtype
    if lists.n == 0:
        return jnp.zeros(lists.labels.shape[:-1], dtype)
    grades = lists.labels.astype(dtype)
    ceiling = jnp.asarray(max_label, dtype)
    stop = stop_probability(grades, ceiling)
    k_static = lists.ranking.k
    length = lists.n if k_static is None else min(k_static, lists.n)
    value = _expected_cascade(stop, lists.ranking, k, length=length, dtype=dtype)
    # A grade above max_label would be a stop probability above 1.
    return jnp.where(jnp.any(lists.valid & (grades > ceiling), axis=-1), jnp.nan, value)


ERR = _kernel.Formula("err", _err, uses_order=True, labels="graded", nonnegative_labels=True)


def _err_utility(items: _rank_sums.Items, view: _rank_sums.RankView):
    # R_i / r_i times the chance of reaching item i, prod (1 - R_j) over the
    # items above, as exp of a sum of logs over them. The log is floored so
    # that a stop probability of 1 (2^-max_label below the smallest normal
    # number) stays finite; a refused grade gives NaN through `refused`.
    stop = jnp.clip(stop_probability(items.labels, items.options["max_label"]), 0, 1)
    go_on = jnp.maximum(jnp.log1p(-stop), jnp.log(jnp.finfo(items.dtype).tiny))
    return stop * jnp.exp(view.above(go_on)) / view.rank


def _err_refused(items: _rank_sums.Items):
    return jnp.any(items.valid & (items.labels > items.options["max_label"]), axis=-1)


# ERR as a rank sum: u_i = R_i / r_i * prod over the items j above i of (1 - R_j).
ERR_SUM = _rank_sums.RankSum("err", _err_utility, refused=_err_refused)


@_kernel.computes(ERR)
def err(
    scores: Num[Array, "*batch n"],
    labels: Num[Array, "*batch n"],
    *,
    max_label: float,
    k: int | None = None,
    ignore_ties: bool = False,
    where: Bool[Array, "*batch n"] | None = None,
    segments: Int[Array, "*batch n"] | None = None,
    max_segments: int | None = None,
    max_segment_size: int | None = None,
) -> Float[Array, "*batch"] | Float[Array, "*batch segments"]:
    r"""Expected reciprocal rank (Chapelle et al., 2009), averaged over tied scores.

    A user reads down the list and stops at an item of grade :math:`g` with
    probability :math:`R(g) = (2^g - 1) / 2^{g_{\max}}`; ERR is the expected
    reciprocal of the rank where they stop:

    .. math::

        \mathrm{ERR@k} = \sum_{p=1}^{\min(k, n)} \frac{1}{p}\, R_{\pi(p)}
            \prod_{q < p} \bigl(1 - R_{\pi(q)}\bigr).

    With ties, a block :math:`B` of :math:`m` items starting at 0-based position
    :math:`a` is reached with probability :math:`\prod_{j\ \mathrm{above}\ B}
    (1 - R_j)`. The user stops at its offset :math:`u` with probability

    .. math::

        s_u = \frac{1}{m} \sum_{i \in B} R_i\,
              \bar e_u\bigl(\{1 - R_j\}_{j \in B \setminus i}\bigr),

    where :math:`\bar e_u` is the mean, over the :math:`u`-subsets, of the
    product of their values (the :math:`u` items placed before :math:`i` are a
    uniformly random subset of its block-mates). The block adds
    :math:`\sum_{u < \min(m, k - a)} s_u / (a + u + 1)`. The means are built
    item by item as convex combinations (decision 0006), in O(m^2) per block,
    so a tie-free list costs one pass. No closed form exists: the product does
    not factor over items.

    Args:
      scores: ``(..., n)`` scores the ranking is made from; higher ranks first.
      labels: ``(..., n)`` grades :math:`g`, in ``[0, max_label]``.
      max_label: :math:`g_{\max}`, the top grade of the judgement scale (4
        for the 0–4 scale of the TREC Web track and of Chapelle et al.), in
        (0, inf). Required: the maximum of each list would make a list's
        value depend on what it retrieved, and the maximum of a batch on the
        other lists.
      k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,
        scores the whole list.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders.
      where: ``(..., n)`` boolean mask; False marks padding.
      segments: ``(..., n)`` integer ids of the lists packed into each row;
        the result is then ``(..., max_segments)``, one value per list. See
        *Packed lists* in the module docstring.
      max_segments: Lists per row (ids ``0 .. max_segments - 1``); required
        when ``segments`` is traced, else 1 + the largest id.
      max_segment_size: Room for the longest list; by default the longest
        list rounded up to a power of two, or ``n`` when ``segments`` is traced.

    Returns:
      ``(...)`` ERR of each list, in [0, 1). 0 for a list with no item of
      positive grade. NaN for a list with a NaN score, or with a grade above
      ``max_label`` under ``jit`` (refused on concrete inputs).

    Raises:
      InvalidParameterError: ``k`` is not None and not an int >= 1;
        ``max_label`` is not a real number in (0, inf).
      ValueError: ``scores`` and ``labels`` differ in shape or are scalars;
        ``where`` is not a boolean array of the same shape; on concrete inputs,
        a real item holds NaN or infinity, a negative label, or a label above
        ``max_label``.

    Example:
      Grades 4 and 2 on a 0–4 scale: the user stops at rank 1 with probability
      15/16, else reaches rank 2 and stops there with probability 3/16:

      >>> import jax.numpy as jnp
      >>> from lodestar import metrics
      >>> scores = jnp.array([0.9, 0.5])
      >>> print(f"{metrics.err(scores, jnp.array([4, 2]), max_label=4):.6f}")
      0.943359
      >>> print(f"{15 / 16 + (1 / 16) * (3 / 16) / 2:.6f}")
      0.943359

    Remarks:
      ERR is not differentiable in the labels under reverse mode: its tie
      expectation is a :func:`jax.lax.while_loop` (forward mode works). Its
      gradient in the scores is zero like every exact metric's. ``gdeval``,
      the TREC Web track's reference, uses ``max_label=4`` and ranks ties in
      its own order.

    References:
      Chapelle, Metzler, Zhang & Grinspan, "Expected reciprocal rank for graded
      relevance", CIKM 2009. https://doi.org/10.1145/1645953.1646033

      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    k = _validation.check_k(k, caller="err")
    max_label = _validation.check_positive_float(max_label, name="max_label", caller="err")
    scores, labels, where = _validation.check_lists(scores, labels, where, caller="err")
    _validation.check_labels_at_most(labels, where, max_label, name="max_label", caller="err")
    return _kernel.evaluate_formula(
        ERR,
        scores,
        labels,
        caller="err",
        k=k,
        ignore_ties=ignore_ties,
        where=where,
        segments=segments,
        max_segments=max_segments,
        max_segment_size=max_segment_size,
        options={"max_label": max_label},
    )
