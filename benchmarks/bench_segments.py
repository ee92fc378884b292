"""Packed lists (``segments=``) against the padded form, the alternatives and Rax.

What is measured
----------------
Rows of ``n`` items each pack ``S`` lists of varied lengths (lognormal shares
of the row, every list at least one item, the last few items padding). On a
batch of ``B`` such rows, in this one process, the script times jitted
``ndcg`` (float32 scores with ties, integer labels 0..4) computed in these ways:

=================  ==============================================================
row                what runs
=================  ==============================================================
``padded``         ``metrics.ndcg`` on the lists padded by hand to ``(B, S, L)``
                   (``L`` = the longest list rounded up to a power of two): the
                   baseline packing must match
``packed``         ``metrics.ndcg(..., segments=, max_segments=S,
                   max_segment_size=L)``: the layout (one stable argsort by id,
                   gathers) and then the same kernel (decision 0009, option b)
``packed_n``       the same without ``max_segment_size``, as under ``jit`` with
                   no size given: blocks of ``n`` items
``unpack``         option (a): the row broadcast to ``(B, S, n)`` with
                   ``where = segments == s``, then the plain kernel
``same_segment``   a lower bound for option (c), a segment-aware engine: only
                   its first step, counting the same-list items scored higher
                   than each item (``n**2`` comparisons per row, in slices of 32
                   columns as the engine does)
``layout``         the layout alone (``_segments._compact``)
``rax``            ``rax.ndcg_metric(..., segments=, reduce_fn=None)``: Rax's
                   pairwise segment masks
=================  ==============================================================

and, for training, ``jax.value_and_grad`` of ``losses.approx_ndcg_loss``
packed against padded (``approx_packed`` / ``approx_padded``).

Ratios are against ``padded`` (``x`` > 1: slower than padding by hand). Each
function is compiled and run once, then timed ``--reps`` times with
:func:`jax.block_until_ready`; the median is reported. Absolute times on a
shared machine are noise; read the ratios. ``packed`` and ``padded`` are also
checked to agree bitwise.

Usage::

    python benchmarks/bench_segments.py            # B=16, n=1024, S in 8, 32, 64
    python benchmarks/bench_segments.py --quick    # tiny, for CI
    python benchmarks/bench_segments.py --no-rax --json out.json
"""

from __future__ import annotations

import _common as common
import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _segments, losses, metrics


def make_rows(rng, batch, n, lists):
    """Packed rows: ``(scores, labels, where, segments)`` and the padded form."""
    segments = np.zeros((batch, n), np.int32)
    where = np.zeros((batch, n), bool)
    real = n - n // 16  # the row's tail is padding
    for row in range(batch):
        shares = rng.lognormal(0.0, 0.8, lists)
        sizes = 1 + np.floor(shares / shares.sum() * (real - lists)).astype(int)
        ids = np.repeat(np.arange(lists), sizes)
        segments[row, : ids.size] = rng.permutation(ids)
        where[row, : ids.size] = True
    segments[~where] = -1
    scores = np.round(rng.normal(size=(batch, n)), 1).astype(np.float32)  # ties
    labels = rng.integers(0, 5, (batch, n)).astype(np.float32)
    longest = max(
        int(np.sum(where[r] & (segments[r] == s))) for r in range(batch) for s in range(lists)
    )
    size = min(1 << (longest - 1).bit_length(), n)
    padded = [np.zeros((batch, lists, size), np.float32) for _ in range(2)]
    padded_where = np.zeros((batch, lists, size), bool)
    for row in range(batch):
        for s in range(lists):
            members = np.flatnonzero(where[row] & (segments[row] == s))
            padded[0][row, s, : members.size] = scores[row, members]
            padded[1][row, s, : members.size] = labels[row, members]
            padded_where[row, s, : members.size] = True
    packed = tuple(map(jnp.asarray, (scores, labels, where, segments)))
    return packed, tuple(map(jnp.asarray, (*padded, padded_where))), size


def candidates(lists, size, rax):
    """name -> (function, which inputs: "packed" or "padded")."""

    def unpack(s, y, w, g):
        mine = (g[..., None, :] == jnp.arange(lists)[:, None]) & w[..., None, :]
        shape = mine.shape
        return metrics.ndcg(
            jnp.broadcast_to(s[..., None, :], shape),
            jnp.broadcast_to(y[..., None, :], shape),
            where=mine,
        )

    def same_segment(s, y, w, g):
        del y
        n = s.shape[-1]
        above = jnp.zeros(s.shape, jnp.int32)
        for start in range(0, n, 32):
            cols = slice(start, min(start + 32, n))
            hit = (s[..., None, cols] > s[..., :, None]) & (g[..., None, cols] == g[..., :, None])
            above = above + jnp.sum(hit & w[..., None, cols], axis=-1, dtype=jnp.int32)
        return above

    def layout(s, y, w, g):
        return _segments._compact(s, y, w, g, max_segments=lists, max_segment_size=size)

    def approx(s, y, w, **packing):
        return losses.approx_ndcg_loss(s, y, where=w, temperature=0.5, **packing)

    fns = {
        "padded": (lambda s, y, w: metrics.ndcg(s, y, where=w), "padded"),
        "packed": (
            lambda s, y, w, g: metrics.ndcg(
                s, y, where=w, segments=g, max_segments=lists, max_segment_size=size
            ),
            "packed",
        ),
        "packed_n": (
            lambda s, y, w, g: metrics.ndcg(s, y, where=w, segments=g, max_segments=lists),
            "packed",
        ),
        "unpack": (unpack, "packed"),
        "same_segment": (same_segment, "packed"),
        "layout": (layout, "packed"),
        "approx_padded": (jax.value_and_grad(approx), "padded"),
        "approx_packed": (
            jax.value_and_grad(
                lambda s, y, w, g: approx(
                    s, y, w, segments=g, max_segments=lists, max_segment_size=size
                )
            ),
            "packed",
        ),
    }
    if rax is not None:
        fns["rax"] = (
            lambda s, y, w, g: rax.ndcg_metric(s, y, where=w, segments=g, reduce_fn=None),
            "packed",
        )
    return {name: (jax.jit(fn), inputs) for name, (fn, inputs) in fns.items()}


def main() -> None:
    parser = common.base_parser(__doc__.split("\n")[0], "tiny shapes, one rep (CI)")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax even if installed")
    args = parser.parse_args()
    reps = common.default_reps(args)
    rax, failure = common.import_rax(args.no_rax)
    info = common.machine_info(("rax",), rax=failure or common.version("rax"))
    common.print_header(
        "Packed lists: segments= against the padded form, the alternatives and Rax",
        info,
        ratios="the ratios against padded",
    )
    shapes = [(2, 64, 4)] if args.quick else [(16, 1024, 8), (16, 1024, 32), (16, 1024, 64)]
    rng = np.random.default_rng(0)
    common.warm_up_process(0.2 if args.quick else 1.0)
    results = []
    mismatches = []
    print(f"{'B x n':>10} {'S':>4} {'L':>5} {'row':>14} {'ms':>9} {'vs padded':>10}")
    for batch, n, lists in shapes:
        packed, padded, size = make_rows(rng, batch, n, lists)
        timed = {}
        outputs = {}
        for name, (fn, inputs) in candidates(lists, size, rax).items():
            median, first, out = common.time_jax(fn, packed if inputs == "packed" else padded, reps)
            timed[name] = median
            outputs[name] = out
            results.append(
                {
                    "batch": batch,
                    "n": n,
                    "lists": lists,
                    "size": size,
                    "row": name,
                    "ms": median * 1e3,
                    "first_call_ms": first * 1e3,
                }
            )
        for name, median in timed.items():
            base = timed["approx_padded" if name.startswith("approx") else "padded"]
            print(
                f"{f'{batch}x{n}':>10} {lists:>4} {size:>5} {name:>14} "
                f"{common.fmt_ms(median * 1e3):>9} {common.fmt_ratio(median, base):>10}"
            )
        print("-" * 60)
        if not np.array_equal(outputs["packed"], outputs["padded"]):
            mismatches.append(f"{batch}x{n} S={lists}: packed and padded ndcg differ")
    if mismatches:
        common.print_mismatches("MISMATCHES", mismatches)
        raise SystemExit(1)
    common.save_json(args.json, info, reps, args.quick, results=results)


if __name__ == "__main__":
    main()
