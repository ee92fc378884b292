"""Soft ranks: the smooth relaxations of the rank shared by lodestar.smooth and losses.

Each method maps scores ``s`` and a mask of real items to soft 1-based ranks
(0 for padding); see :mod:`lodestar.smooth` for what each one is and cites.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from lodestar import _gains, _pairs

METHODS = ("sigmoid", "neuralsort", "softsort", "permutahedron")


def masked_log_softmax(u, mask, axis, temperature: float | jax.Array = 1):
    """``log softmax(u / T)`` over the entries where ``mask`` holds; 0 elsewhere.

    ``u`` must be finite everywhere (masked entries included), so that no NaN
    can leak into gradients. The maximum over the slice is subtracted *before*
    dividing by ``T``, so that the logits are at most 0 with the maximum exactly
    0 however small ``T`` is (XLA's fused log-softmax on CPU returns inf for
    float32 rows whose maximum is around -1e12). A slice with no entry gives
    all zeros: it is computed as if unmasked, then zeroed.
    """
    some = jnp.any(mask, axis=axis, keepdims=True)
    mask_or_all = mask | ~some
    peak = jnp.max(jnp.where(mask_or_all, u, -jnp.inf), axis=axis, keepdims=True)
    shifted = (u - lax.stop_gradient(peak)) / temperature
    out = jax.nn.log_softmax(shifted, axis=axis, where=mask_or_all)
    return jnp.where(mask, out, 0)


def count(valid):
    return jnp.sum(valid, axis=-1)


def _sigmoid_ranks(s, valid, temperature):
    # r_i = 1 + sum_j sigma((s_j - s_i) / T) over the other real items, summed
    # in column blocks (lodestar._pairs): O(n) memory per list, value and
    # gradient alike, and jvp works at every n.
    def above(rows, columns, distinct):
        (s_i, valid_i), (s_j, valid_j) = rows, columns
        pair = distinct & valid_i & valid_j
        return jnp.where(pair, jax.nn.sigmoid((s_j - s_i) / temperature), 0)

    return 1 + _pairs.pair_sum(above, (s, valid), over="columns")


def _expected_positions(logits, valid, temperature):
    r"""Soft ranks from a relaxed permutation matrix given by its logits.

    ``logits[..., p, i] / temperature`` scores item ``i`` for position ``p + 1``. Each row
    is normalised over the real items (the relaxed permutation matrix
    :math:`\hat P`), then each column over the used positions, and the soft rank
    of item ``i`` is the mean position :math:`\sum_p p \hat P_{pi} / \sum_p
    \hat P_{pi}`: a convex combination of ``1 .. m``, since the columns of
    :math:`\hat P` need not sum to 1.
    """
    n = valid.shape[-1]
    used = jnp.arange(n) < count(valid)[..., None]
    mask = used[..., :, None] & valid[..., None, :]
    log_p = masked_log_softmax(logits, mask, axis=-1, temperature=temperature)
    share = jnp.where(mask, jnp.exp(masked_log_softmax(log_p, mask, axis=-2)), 0)
    position = jnp.arange(1, n + 1, dtype=logits.dtype)
    return jnp.sum(share * position[:, None], axis=-2)


def distance(rows, columns, distinct):
    (s_i, valid_i), (s_j, valid_j) = rows, columns
    return jnp.where(distinct & valid_i & valid_j, jnp.abs(s_i - s_j), 0)


def neuralsort_logits(s, valid):
    """NeuralSort's logits ``[..., p, i]`` for item ``i`` at position ``p + 1``.

    ``(m + 1 - 2p) s_i - sum_j |s_i - s_j|`` over the ``m`` real items (Grover
    et al. 2019), before division by the temperature. Shared by the soft ranks
    here and by :func:`lodestar.losses.neural_ndcg_loss`.
    """
    n = s.shape[-1]
    m = count(valid)[..., None].astype(s.dtype)
    spread = _pairs.pair_sum(distance, (s, valid), over="columns")
    position = jnp.arange(1, n + 1, dtype=s.dtype)
    scale = (m + 1 - 2 * position)[..., :, None]  # (..., n positions, 1)
    return scale * s[..., None, :] - spread[..., None, :]


def _neuralsort_ranks(s, valid, temperature):
    return _expected_positions(neuralsort_logits(s, valid), valid, temperature)


def descending(s, valid):
    """Real scores sorted in descending order, then zeros for padding.

    The sort key alone sees infinities; the values are gathered from the
    finite ``s``, so no infinity enters a gradient.
    """
    order = jnp.argsort(jnp.where(valid, -s, jnp.inf), axis=-1, stable=True)
    ordered = jnp.take_along_axis(s, order, axis=-1)
    return jnp.where(jnp.take_along_axis(valid, order, axis=-1), ordered, 0)


def _softsort_ranks(s, valid, temperature):
    ordered = descending(s, valid)
    logits = -jnp.abs(ordered[..., :, None] - s[..., None, :])
    return _expected_positions(logits, valid, temperature)


def _isotonic_blocks(u_sorted, m, temperature):
    r"""Pool adjacent violators for the permutahedron projection, in O(n).

    With :math:`z = u / T`, solves :math:`\min_{v_1 \ge \dots \ge v_m} \lVert
    v - (z - w) \rVert^2` over the first ``m`` entries of the descending
    ``u_sorted``, with :math:`w = (m, m-1, \dots, 1)`, by a stack of blocks:
    push each entry, and merge the two top blocks while their means violate
    the order. There are at most ``m`` pushes and ``m - 1`` merges, so the
    single ``while_loop`` runs at most ``2m`` O(1) steps.

    A block holding sorted positions ``[a, b)`` is stored by its start ``a``
    and the mean of ``u`` over it; the mean of ``w`` over it is
    ``m - (a + b - 1) / 2`` exactly, so the huge ``z`` of a small temperature
    never absorbs the small ``w``. Two blocks violate the order iff
    ``mean_z1 - mean_z2 < (b2 - a1) / 2``, compared as
    ``2 (mean_u1 - mean_u2) < (b2 - a1) T`` in the scores' own scale: ``z``
    itself is never formed, so scores far larger than the temperature (whose
    ``z`` would overflow) still project.

    Returns:
      ``(block_id, block_start, block_end, u_mean)``, each of shape ``(n,)``, for
      the block of every sorted position (meaningless past ``m``).
    """
    n = u_sorted.shape[0]
    dtype = u_sorted.dtype
    starts = jnp.zeros(n + 1, jnp.int32)
    means = jnp.zeros(n, dtype)

    def violated(i, top, starts, means):
        lo, hi = jnp.maximum(top - 2, 0), jnp.maximum(top - 1, 0)
        gap = means[lo] - means[hi]
        return (top >= 2) & (2 * gap < (i - starts[lo]).astype(dtype) * temperature)

    def cond(state):
        i, top, starts, means = state
        return (i < m) | violated(i, top, starts, means)

    def body(state):
        i, top, starts, means = state
        merge = violated(i, top, starts, means)
        lo, hi = jnp.maximum(top - 2, 0), jnp.maximum(top - 1, 0)
        first = (starts[hi] - starts[lo]).astype(dtype)
        second = (i - starts[hi]).astype(dtype)
        # m1 + (m2 - m1) c2 / (c1 + c2): equal means merge to that mean exactly.
        merged = means[lo] + (means[hi] - means[lo]) * (
            second / jnp.where(merge, first + second, 1)
        )
        slot = jnp.where(merge, lo, top)
        value = jnp.where(merge, merged, u_sorted[jnp.minimum(i, n - 1)])
        means = means.at[slot].set(value, mode="drop")
        starts = starts.at[top].set(jnp.where(merge, starts[top], i), mode="drop")
        i = i + jnp.where(merge, 0, 1)
        top = top + jnp.where(merge, -1, 1)
        return i, top, starts, means

    zero = jnp.zeros((), jnp.int32)
    _, top, starts, means = lax.while_loop(cond, body, (zero, zero, starts, means))
    block = jnp.arange(n)
    marks = jnp.zeros(n, jnp.int32).at[jnp.where(block < top, starts[:n], n)].add(1, mode="drop")
    block_id = jnp.clip(jnp.cumsum(marks) - 1, 0, n - 1)
    ends = jnp.where(block + 1 < top, starts[1:], m)
    return block_id, starts[block_id], ends[block_id], means[block_id]


def _project_forward(u, valid, temperature):
    n = u.shape[0]
    m = count(valid)
    # Real items by descending u (ascending score), padding last.
    order = jnp.argsort(jnp.where(valid, -u, jnp.inf), stable=True)
    u_sorted = u[order]
    block_id, start, end, u_mean = _isotonic_blocks(u_sorted, m, temperature)
    used = jnp.arange(n) < m
    dtype = u.dtype
    w_mean = m.astype(dtype) - (start + end - 1).astype(dtype) / 2
    # Within a block the u lie within about (b - a) T of their mean, so the
    # offset is O(n); a block of one item has an offset of exactly 0.
    offset = jnp.where(used, (u_sorted - u_mean) / temperature, 0)
    out_sorted = jnp.where(used, w_mean + offset, 0)
    out = jnp.zeros(n, dtype).at[order].set(out_sorted)
    size = jnp.maximum(end - start, 1).astype(dtype)
    return out, (order, block_id, size, used, offset, temperature)


@jax.custom_jvp
def _project_permutahedron(u, valid, temperature):
    r"""Euclidean projection of the real entries of ``u / temperature`` onto the permutahedron.

    The permutahedron is that of :math:`(m, m-1, \dots, 1)` for the ``m`` real
    items; padding gets 0. One list (1-D) at a time.
    """
    return _project_forward(u, valid, temperature)[0]


@_project_permutahedron.defjvp
def _project_jvp(primals, tangents):
    # The Jacobian in z = u / T is I minus block-wise averaging (Blondel et
    # al. 2020, Prop. 4); in u it is that over T, and in T minus the offsets
    # (u - mean u) / T over T. The tangent is linear in (du, dT), built of
    # gathers, a segment sum and a scatter, so JAX transposes it for
    # reverse mode: one rule serves grad, jvp, jacfwd and Hessian-vector
    # products.
    u, valid, temperature = primals
    du, _, d_temperature = tangents
    out, (order, block_id, size, used, offset, temperature) = _project_forward(
        u, valid, temperature
    )
    n = u.shape[0]
    du_sorted = jnp.where(used, du[order], 0)
    block_sum = jax.ops.segment_sum(du_sorted, block_id, num_segments=n)
    # A block of one item cannot move: its tangent is exactly 0. Written out,
    # because under jit XLA may round du - du / 1 to a few ulps, which the
    # division by a small T would turn into a gradient (0.003 at T = 1e-6).
    centered = jnp.where(size > 1, du_sorted - block_sum[block_id] / size, 0)
    d_sorted = (centered - offset * d_temperature) / temperature
    d_out = jnp.zeros_like(du).at[order].set(jnp.where(used, d_sorted, 0), unique_indices=True)
    return out, d_out


def _permutahedron_ranks(s, valid, temperature):
    shape = s.shape
    project = jax.vmap(_project_permutahedron, in_axes=(0, 0, None))
    flat = project(-s.reshape(-1, shape[-1]), valid.reshape(-1, shape[-1]), temperature)
    return flat.reshape(shape)


_RANKERS = {
    "sigmoid": _sigmoid_ranks,
    "neuralsort": _neuralsort_ranks,
    "softsort": _softsort_ranks,
    "permutahedron": _permutahedron_ranks,
}


def soft_ranks(s, valid, temperature, method):
    """Soft 1-based ranks of the real items of ``s``; 0 for padding.

    ``s`` is floating and already zero on padding. The result is clipped into
    ``[1, m]`` (``m`` real items), where every method lies in exact
    arithmetic; the clip only removes round-off.
    """
    r = _RANKERS[method](s, valid, temperature)
    m = jnp.maximum(count(valid), 1)[..., None].astype(s.dtype)
    return jnp.where(valid, jnp.clip(r, 1, m), 0)


def _top_k_threshold(s, valid, k):
    """Whether each list is cut (``k`` below its real items), and the midpoint :math:`t_k`.

    ``k`` is one cut-off for every list or ``(...)``, one per list (R-precision's).
    """
    n = s.shape[-1]
    ordered = descending(s, valid)
    k = jnp.broadcast_to(jnp.asarray(k), s.shape[:-1])
    cuts = k < count(valid)

    def at(position):
        index = jnp.clip(position, 0, n - 1).astype(jnp.int32)[..., None]
        return jnp.take_along_axis(ordered, index, axis=-1)[..., 0]

    return cuts, jnp.where(cuts, (at(k - 1) + at(k)) / 2, 0)


def top_k_weight(s, valid, temperature, k, *, cut):
    r"""Soft indicator :math:`\sigma((s_i - t_k) / T)` of being in the top ``k``.

    ``k`` may be traced (one compilation serves every ``k``) and may be one per
    list; ``cut`` (static) is False when no ``k`` was given, which skips the sort.
    """
    if not cut:
        return jnp.ones_like(s)
    cuts, threshold = _top_k_threshold(s, valid, k)
    weight = jax.nn.sigmoid((s - threshold[..., None]) / temperature)
    return jnp.where(cuts[..., None], weight, 1)


def hinge_ranks(s, valid):
    r"""Upper bounds of the 1-based ranks: :math:`1 + \sum_{j \ne i} \max(0, 1 + s_j - s_i)`.

    Each term bounds the indicator :math:`[s_j \ge s_i]` from above, so the
    value bounds every rank the item can take among ties; it is Rax's
    ``bound_t12n`` rank. Not clipped to the list length: the bottom item's
    bound exceeds it, and a clip would take its gradient away. Summed in column
    blocks (:mod:`lodestar._pairs`): memory linear in the list length. 0 for
    padding.
    """

    def above(rows, columns, distinct):
        (s_i, valid_i), (s_j, valid_j) = rows, columns
        pair = distinct & valid_i & valid_j
        return jnp.where(pair, jax.nn.relu(1 + s_j - s_i), 0)

    return jnp.where(valid, 1 + _pairs.pair_sum(above, (s, valid), over="columns"), 0)


def top_k_lower_bound(s, valid, k, *, cut):
    r"""A lower bound of the indicator of being in the top ``k``: :math:`\min(1, s_i - t_k)`.

    With :math:`t_k` the midpoint of :func:`top_k_weight`; Rax's ``bound_t12n``
    cut-off. Items below :math:`t_k` get a negative weight, which keeps it a
    bound of the indicator and of any measure with non-negative gains.
    """
    if not cut:
        return jnp.ones_like(s)
    cuts, threshold = _top_k_threshold(s, valid, k)
    return jnp.where(cuts[..., None], jnp.minimum(1, s - threshold[..., None]), 1)


def soft_dcg(s, gains, valid, temperature, log_base, k, *, method, cut):
    """Smooth DCG@k of each list: the gains over the discounts of the soft ranks.

    Shared by :func:`lodestar.smooth.dcg`, :func:`lodestar.smooth.ndcg` and
    :func:`lodestar.losses.approx_ndcg_loss`; see :func:`top_k_weight` for
    ``k`` and ``cut``.
    """
    # Padding has soft rank 0 and an infinite discount there: evaluate it at 1.
    r = jnp.where(valid, soft_ranks(s, valid, temperature, method), 1)
    weight = _gains.discount_at(r, log_base) * top_k_weight(s, valid, temperature, k, cut=cut)
    return jnp.sum(jnp.where(valid, gains * weight, 0), axis=-1)
