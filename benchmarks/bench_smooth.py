"""Wall-clock cost of lodestar's differentiable losses against Rax (value and gradient).

What is measured
----------------
For each batch shape ``(B, n)`` (default 10,000 x 100 and 100 x 1,000) the
script draws float32 scores from a standard normal (no ties) and integer labels
0..4 stored as float32, then times, in this one process, :func:`jax.jit` of
:func:`jax.value_and_grad` (gradient with respect to the scores) of:

======================  ==========================================  ==============================
row                     lodestar                                    rax
======================  ==========================================  ==============================
``approx_ndcg``         ``losses.approx_ndcg_loss(s, y)``           ``rax.approx_t12n(
                                                                    rax.ndcg_metric)(s, y)``
``softmax``             ``losses.softmax_loss(s, y)``               ``rax.softmax_loss(s, y,
                                                                    label_fn=normalize_...)``
``pairwise_logistic``   ``losses.pairwise_logistic_loss(s, y)``     ``rax.pairwise_logistic_loss``
``lambda``              ``losses.lambda_loss(s, y)``                ``rax.pairwise_logistic_loss(
                                                                    lambdaweight_fn=
                                                                    rax.dcg_lambdaweight)``
``lambda_full``         ``losses.lambda_loss(s, y)`` (same)         the exact Rax equivalent:
                                                                    ``dcg_lambdaweight`` +
                                                                    ``10 * dcg2_lambdaweight``,
                                                                    both ``normalize=True``
======================  ==========================================  ==============================

Both sides run with their defaults otherwise: temperature 1, gain
``2**label - 1`` for the NDCG-based losses (the default of both), mean
reduction. ``approx_t12n`` returns the negated metric, i.e. the loss, as
lodestar does. The ``lambda`` row is the Rax call people usually reach for; it
computes only LambdaRank's ``|Delta DCG|`` weight (unnormalised), while
``lodestar.losses.lambda_loss`` computes ``rho + mu * delta`` on NDCG-normalised
gains (LambdaLoss' NDCG-Loss2++), which is what ``lambda_full`` reproduces in
Rax with two pairwise passes. The reductions differ (Rax averages over pairs,
lodestar sums pairs and averages over lists), so values are recorded in
``--json`` but not compared; the tests check agreement of the per-list values.

Also timed (no Rax equivalent, the Rax cell is ``-``): value and gradient of
``sum(c * lodestar.smooth.ranks(s, method="permutahedron"))`` for a fixed
random cotangent ``c``, at n = 10,000 for a batch of 1 and of 16 (the
projection runs pool-adjacent-violators in a ``lax.while_loop``, vmapped over
the batch).

Each function is compiled and run once (warm-up; its time is recorded as
``first_call_ms`` in ``--json``), then timed ``--reps`` times with
:func:`jax.block_until_ready`; the median is reported. Inputs are placed on the
device before timing. The ratio ``rax/lodestar`` > 1 means lodestar is faster.
On a shared machine absolute times move by tens of percent between runs; read
the ratios, and re-run a suspicious row with ``--only``.

Rax
---
Rax 0.4.0, the latest release, which the test extra pins
(``pip install rax==0.4.0``). Its plain losses run under the installed jax, but
its transformations (``rax.approx_t12n``) decorate with ``jax.util.wraps``, which recent jax
removed, and fail with ``AttributeError: module 'jax' has no attribute
'util'``. Exactly as ``tests/test_smooth.py`` does, this script therefore sets
``jax.util = types.SimpleNamespace(wraps=...)`` *only when* ``jax.util`` is
missing, before importing rax; the stand-in ``wraps(wrapped, namestr, docstr)``
copies the name and docstring, which is all Rax asks of it (it changes no
computation). The header says whether the shim was installed. Each Rax function
is run once on a tiny batch before timing; if that fails, the reason is printed
and that row's Rax cell shows ``-``. If Rax is not installed the header says
``rax: not installed`` and the script runs without it.

Usage
-----
::

    python benchmarks/bench_smooth.py                  # full run, several minutes
    python benchmarks/bench_smooth.py --quick          # CI smoke test, seconds
    python benchmarks/bench_smooth.py --reps 9 --json results/smooth.json
    python benchmarks/bench_smooth.py --only lambda,softmax   # re-run some rows
    python benchmarks/bench_smooth.py --no-rax         # skip Rax even if present

``XLA_FLAGS`` is left as the environment sets it (normally unset); the header
prints it.
"""

from __future__ import annotations

import functools
import sys
import time

import _common as common
import jax
import jax.numpy as jnp
import numpy as np

from lodestar import losses, smooth

FULL_SHAPES = ((10_000, 100), (100, 1_000))
QUICK_SHAPES = ((64, 16), (8, 64))
FULL_RANK_SHAPES = ((1, 10_000), (16, 10_000))
QUICK_RANK_SHAPES = ((1, 256), (4, 256))
LOSSES = ("approx_ndcg", "softmax", "pairwise_logistic", "lambda", "lambda_full")
RANKS = "ranks_permutahedron"
MU = 10.0  # lodestar.losses.lambda_loss's default mu


# --------------------------------------------------------------------------- #
# Environment
# --------------------------------------------------------------------------- #


def load_rax(disabled: bool):
    """Import Rax (with the shim where needed); return ``(module or None, status)``."""
    shimmed = False if disabled else common.install_jax_util_shim()
    rax, failure = common.import_rax(disabled)
    if rax is None:
        return None, failure
    shim = "jax.util.wraps shim installed" if shimmed else "no shim needed"
    return rax, f"{common.version('rax')} ({shim})"


def header(rax_status: str) -> dict:
    info = common.machine_info(rax=rax_status)
    common.print_header(
        "lodestar smooth-loss benchmark: jax.jit(jax.value_and_grad(loss)), float32",
        info,
        [f"rax: {rax_status}"],
    )
    return info


# --------------------------------------------------------------------------- #
# Cases
# --------------------------------------------------------------------------- #


def make_batch(rng, batch: int, n: int):
    scores = rng.standard_normal((batch, n)).astype(np.float32)
    labels = rng.integers(0, 5, size=(batch, n)).astype(np.float32)
    return scores, labels


def value_and_grad(loss):
    return jax.jit(jax.value_and_grad(loss))


def lodestar_fns():
    return {
        "approx_ndcg": value_and_grad(lambda s, y: losses.approx_ndcg_loss(s, y)),
        "softmax": value_and_grad(lambda s, y: losses.softmax_loss(s, y)),
        "pairwise_logistic": value_and_grad(lambda s, y: losses.pairwise_logistic_loss(s, y)),
        "lambda": value_and_grad(lambda s, y: losses.lambda_loss(s, y, mu=MU)),
        "lambda_full": value_and_grad(lambda s, y: losses.lambda_loss(s, y, mu=MU)),
    }


def rax_fns(rax) -> tuple[dict, dict]:
    """Rax's value-and-gradient functions that pass a tiny trial; and why others failed."""
    if rax is None:
        return {}, {}
    dcg = functools.partial(rax.dcg_lambdaweight, normalize=True)
    dcg2 = functools.partial(rax.dcg2_lambdaweight, normalize=True)

    def lambda_full(s, y):
        return rax.pairwise_logistic_loss(s, y, lambdaweight_fn=dcg) + MU * (
            rax.pairwise_logistic_loss(s, y, lambdaweight_fn=dcg2)
        )

    builders = {
        "approx_ndcg": lambda: rax.approx_t12n(rax.ndcg_metric),
        "softmax": lambda: functools.partial(
            rax.softmax_loss, label_fn=rax.utils.normalize_probabilities
        ),
        "pairwise_logistic": lambda: rax.pairwise_logistic_loss,
        "lambda": lambda: functools.partial(
            rax.pairwise_logistic_loss, lambdaweight_fn=rax.dcg_lambdaweight
        ),
        "lambda_full": lambda: lambda_full,
    }
    trial = make_batch(np.random.default_rng(2), 2, 5)
    fns, failures = {}, {}
    for name, build in builders.items():
        try:
            fn = value_and_grad(build())
            value, grad = fn(*trial)
            if not (np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grad)))):
                raise FloatingPointError(f"non-finite value {float(value)} or gradient")
            fns[name] = fn
        except Exception as error:  # noqa: BLE001 - reported, never hidden
            failures[name] = f"{type(error).__name__}: {error}"
    return fns, failures


def ranks_fn():
    def loss(s, c):
        return jnp.sum(c * smooth.ranks(s, method="permutahedron"))

    return value_and_grad(loss)


def run(shapes, rank_shapes, reps: int, rax_loss_fns: dict, only, seed: int) -> list:
    rng = np.random.default_rng(seed)
    lo_fns = lodestar_fns()
    results = []

    def record(batch, n, name, lo_fn, rx_fn, args):
        t_lo, first_lo, (lo_value, _) = common.time_jax(lo_fn, args, reps)
        row = {
            "batch": batch,
            "n": n,
            "loss": name,
            "lodestar_ms": 1e3 * t_lo,
            "lodestar_first_call_ms": 1e3 * first_lo,
            "lodestar_value": float(lo_value),
            "rax_ms": None,
        }
        if rx_fn is not None:
            t_rx, first_rx, (rx_value, _) = common.time_jax(rx_fn, args, reps)
            row.update(
                rax_ms=1e3 * t_rx, rax_first_call_ms=1e3 * first_rx, rax_value=float(rx_value)
            )
        results.append(row)
        rax_cell = "-" if row["rax_ms"] is None else f"{row['rax_ms']:.2f} ms"
        print(
            f"  done {batch}x{n} {name:20s} lodestar {row['lodestar_ms']:.2f} ms, rax {rax_cell}",
            file=sys.stderr,
            flush=True,
        )

    for batch, n in shapes:
        scores_np, labels_np = make_batch(rng, batch, n)
        args = (jax.device_put(scores_np), jax.device_put(labels_np))
        for name in LOSSES:
            if only and name not in only:
                continue
            record(batch, n, name, lo_fns[name], rax_loss_fns.get(name), args)
        del args
    if not only or RANKS in only:
        fn = ranks_fn()
        for batch, n in rank_shapes:
            scores_np = rng.standard_normal((batch, n)).astype(np.float32)
            cotangent = rng.standard_normal((batch, n)).astype(np.float32)
            args = (jax.device_put(scores_np), jax.device_put(cotangent))
            record(batch, n, RANKS, fn, None, args)
    return results


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def print_table(results, rax_status: str, failures: dict) -> None:
    head = f"{'shape':>10} {'loss':20} | {'lodestar ms':>11} {'rax ms':>10} | {'rax/lodestar':>12}"
    print()
    print("value_and_grad, median ms. rax/lodestar > 1 means lodestar is faster.")
    print(head)
    print("-" * len(head))
    for shape, r in common.rows_by_shape(results, "-" * len(head)):
        print(
            f"{shape:>10} {r['loss']:20} | {common.fmt_ms(r['lodestar_ms']):>11} "
            f"{common.fmt_ms(r['rax_ms']):>10} | "
            f"{common.fmt_ratio(r['rax_ms'], r['lodestar_ms']):>12}"
        )
    print()
    print("Rax counterparts: approx_ndcg = approx_t12n(ndcg_metric); softmax = softmax_loss")
    print("(label_fn=normalize_probabilities); pairwise_logistic = pairwise_logistic_loss;")
    print("lambda = pairwise_logistic_loss(lambdaweight_fn=dcg_lambdaweight) (LambdaRank weight")
    print("only); lambda_full = dcg_lambdaweight + 10 * dcg2_lambdaweight, normalize=True, the")
    print("exact equivalent of lodestar's lambda_loss (two pairwise passes in Rax).")
    print(f"{RANKS}: smooth.ranks(method='permutahedron'); Rax has none. rax: {rax_status}")
    for name, why in failures.items():
        print(f"rax {name} unavailable: {why}")


def main(argv=None) -> int:
    parser = common.base_parser(__doc__.split("\n")[0], "tiny shapes, 1 repetition (CI smoke test)")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax even if installed")
    parser.add_argument(
        "--only",
        metavar="ROWS",
        help=f"comma-separated rows to run, among {', '.join((*LOSSES, RANKS))}",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    reps = common.default_reps(args)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    rank_shapes = QUICK_RANK_SHAPES if args.quick else FULL_RANK_SHAPES
    only = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = only - {*LOSSES, RANKS}
        if unknown:
            parser.error(f"unknown rows {sorted(unknown)}; choose among {(*LOSSES, RANKS)}")

    wall = time.perf_counter()
    rax, rax_status = load_rax(args.no_rax)
    info = header(rax_status)
    common.warm_up_process(0.2 if args.quick else 1.0)
    rax_loss_fns, failures = rax_fns(rax)
    results = run(shapes, rank_shapes, reps, rax_loss_fns, only, args.seed)
    print_table(results, rax_status, failures)
    wall = time.perf_counter() - wall
    print(f"\nshapes={list(shapes)} ranks={list(rank_shapes)} reps={reps} wall={wall:.1f}s")
    common.save_json(
        args.json, info, reps, args.quick, results=results, rax_failures=failures, wall_s=wall
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
