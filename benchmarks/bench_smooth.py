"""Time and memory of lodestar's differentiable losses against Rax (value and gradient).

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

Losses at training sizes
------------------------
Three more sections cover every loss of ``lodestar.losses`` (``__all__``),
each with its defaults, against its Rax counterpart where Rax has one:

===============================  ==================================================
lodestar                         rax
===============================  ==================================================
``softmax_loss``                 ``softmax_loss(label_fn=normalize_probabilities)``
``poly1_softmax_loss``           ``poly1_softmax_loss``
``listmle_loss``                 ``listmle_loss``
``pointwise_mse_loss``           ``pointwise_mse_loss``
``pointwise_sigmoid_loss``       ``pointwise_sigmoid_loss``
``pairwise_logistic_loss``       ``pairwise_logistic_loss``
``pairwise_hinge_loss``          ``pairwise_hinge_loss``
``pairwise_soft_zero_one_loss``  ``pairwise_soft_zero_one_loss``
``lambda_loss``                  ``lambda_full`` above (NDCG-Loss2++ weights)
``approx_ndcg_loss``             ``approx_t12n(ndcg_metric)``
``neural_ndcg_loss``             none
===============================  ==================================================

1. *Memory*: XLA's temporary bytes of the value and gradient,
   ``jax.jit(jax.value_and_grad(loss)).lower(s, y).compile()
   .memory_analysis().temp_size_in_bytes``, for float32 ``ShapeDtypeStruct``
   scores and labels at 256 x 1,000 and 32 x 10,000. These are compiled,
   **never run**: Rax's pairwise losses need tens of GiB there, and
   NeuralNDCG, which holds an (n, n) matrix per list, over 100 GiB at
   32 x 10,000.
   Reported in GiB (2**30 bytes) with the ratio rax/lodestar; ``--json``
   keeps the argument, output and alias bytes too.
2. *NeuralNDCG's Sinkhorn iterations*: the same temporaries for
   ``neural_ndcg_loss(sinkhorn_iterations=i)`` at 16 x 1,000, i in 0, 5, 50,
   200 (compiled only).
3. *Time at training sizes*: every loss at 201 x 32 (a LETOR-sized batch),
   256 x 1,000 and 16 x 1,000, timed as described above, but compiled ahead of time
   (``compile_s`` in ``--json``) and run only when XLA's temporaries are
   within ``--max-run-gib`` (default 8); a row over it is reported, not run.
   NeuralNDCG is timed only where ``lists * n * n`` is at most 16,000,000
   (201 x 32 and 16 x 1,000, not 256 x 1,000, where one call would take
   about 16 times its 16 x 1,000 time).
   The column ``x lambda_loss`` is each lodestar loss's time over lodestar's
   ``lambda_loss`` time at the same shape, in the same process; lambda_loss is
   timed at each shape whenever any row of this section runs.

4. *Forward-mode compile time*: the seconds of process CPU time (summed over
   XLA's threads, so that a busy machine moves them less than wall time)
   that :func:`jax.jit` takes to lower and compile :func:`jax.jvp` and a
   Hessian-vector product (``jvp`` of ``grad``) of ``softmax_loss``,
   ``poly1_softmax_loss``, ``listmle_loss`` and ``approx_ndcg_loss`` with
   respect to the scores, at 1 x 1,000 and 8 x 1,000, with the labels closed
   over (constants of the program, as in a step that holds its data) and
   passed as arguments. JAX's in-memory caches are cleared before each
   compilation; run it without a persistent compilation cache. The column
   ``x softmax`` is each time over ``softmax_loss``'s at the same shape.

``--quick`` runs all four at tiny shapes (4 x 64 for time and memory, 2 x 64
for the iterations). Each loss is compiled once per shape, for both its
memory and its timed rows.

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
    python benchmarks/bench_smooth.py --only neural_ndcg_loss,sinkhorn
    python benchmarks/bench_smooth.py --no-rax         # skip Rax even if present

``--only`` takes rows of any section: the five rows above, ``ranks_permutahedron``,
the names of lodestar's losses (their training-size time and memory rows),
``sinkhorn`` (the iterations sweep) and ``forward_mode`` (the compile times).
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

from lodestar import losses, metrics, smooth

FULL_SHAPES = ((10_000, 100), (100, 1_000))
QUICK_SHAPES = ((64, 16), (8, 64))
FULL_RANK_SHAPES = ((1, 10_000), (16, 10_000))
QUICK_RANK_SHAPES = ((1, 256), (4, 256))
LOSSES = ("approx_ndcg", "softmax", "pairwise_logistic", "lambda", "lambda_full")
RANKS = "ranks_permutahedron"
MU = 10.0  # lodestar.losses.lambda_loss's default mu

# Losses at training sizes (every loss of lodestar.losses).
TRAINING_SHAPES = ((201, 32), (256, 1_000), (16, 1_000))
QUICK_TRAINING_SHAPES = ((4, 64),)
MEMORY_SHAPES = ((256, 1_000), (32, 10_000))
QUICK_MEMORY_SHAPES = ((4, 64),)
SINKHORN_SHAPE = (16, 1_000)
QUICK_SINKHORN_SHAPE = (2, 64)
SINKHORN_ITERATIONS = (0, 5, 50, 200)
SINKHORN = "sinkhorn"
FORWARD_MODE = "forward_mode"
FORWARD_MODE_LOSSES = ("softmax_loss", "poly1_softmax_loss", "listmle_loss", "approx_ndcg_loss")
FORWARD_MODE_SHAPES = ((1, 1_000), (8, 1_000))
QUICK_FORWARD_MODE_SHAPES = ((1, 64),)
FORWARD_MODE_BAR = "softmax_loss"  # the compile time every forward-mode row is divided by
BAR = "lambda_loss"  # the time every loss is divided by
NEURAL = "neural_ndcg_loss"
NEURAL_MAX_PAIRS = 16_000_000  # NeuralNDCG is timed where lists * n * n is at most this
MAX_RUN_GIB = 8.0
GIB = float(1 << 30)
# The table's order; a loss of lodestar.losses missing here comes last.
LOSS_ORDER = (
    "softmax_loss",
    "poly1_softmax_loss",
    "listmle_loss",
    "pointwise_mse_loss",
    "pointwise_sigmoid_loss",
    "pairwise_logistic_loss",
    "pairwise_hinge_loss",
    "pairwise_soft_zero_one_loss",
    "lambda_loss",
    "approx_ndcg_loss",
    "neural_ndcg_loss",
)
# The transformations of lodestar.losses (``approx_t12n``, ``gumbel_t12n``)
# make losses out of measures and losses; only the ``*_loss`` names are losses.
TRAINING_LOSSES = (
    *(name for name in LOSS_ORDER if name in losses.__all__),
    *(name for name in losses.__all__ if name not in LOSS_ORDER and name.endswith("_loss")),
)

# Losses composed from lodestar's parts, in the memory table only: a pairwise
# loss with each lambda weight (normalized, as Rax's with normalize=True), and
# the metric-to-loss transformations of NDCG. Each row: lodestar's loss and a
# builder of Rax's, or None where Rax has no one function for it.
_GUMBEL_KEY = 0


# The weights' options: the DCG weights normalized (labeldiff has no option).
_WEIGHT_OPTIONS = {
    "labeldiff_lambdaweight": {},
    "dcg_lambdaweight": {"normalize": True},
    "dcg2_lambdaweight": {"normalize": True},
}


def _rax_weighted(name):
    def build(rax):
        weight = functools.partial(getattr(rax, name), **_WEIGHT_OPTIONS[name])
        return functools.partial(rax.pairwise_logistic_loss, lambdaweight_fn=weight)

    return build


def _rax_gumbel(rax):
    transformed = rax.gumbel_t12n(rax.approx_t12n(rax.ndcg_metric))
    return lambda s, y: transformed(s, y, key=jax.random.PRNGKey(_GUMBEL_KEY))


COMPOSED = {
    f"pairwise_logistic_loss + {name}": (
        functools.partial(
            losses.pairwise_logistic_loss,
            lambdaweight=getattr(losses, name)(**_WEIGHT_OPTIONS[name]),
        ),
        _rax_weighted(name),
    )
    for name in _WEIGHT_OPTIONS
}
COMPOSED["approx_t12n(ndcg)"] = (
    losses.approx_t12n(metrics.ndcg),
    lambda rax: rax.approx_t12n(rax.ndcg_metric),
)
COMPOSED["bound_t12n(ndcg)"] = (
    losses.bound_t12n(metrics.ndcg),
    lambda rax: rax.bound_t12n(rax.ndcg_metric),
)
COMPOSED["gumbel_t12n(approx_t12n(ndcg))"] = (
    lambda s, y: losses.gumbel_t12n(losses.approx_t12n(metrics.ndcg))(
        s, y, key=jax.random.key(_GUMBEL_KEY)
    ),
    _rax_gumbel,
)


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


def lodestar_loss(name: str):
    """``lodestar.losses.<name>`` with its defaults (``lambda_loss`` with ``mu=MU``)."""
    if name in COMPOSED:
        return COMPOSED[name][0]
    loss = getattr(losses, name)
    if name == "lambda_loss":
        return functools.partial(loss, mu=MU)
    return loss


def rax_losses(rax) -> tuple[dict, dict]:
    """Rax's losses by row (both sections' names) that pass a tiny trial; why others failed.

    The losses are plain functions of ``(scores, labels)``; the trial runs the
    jitted value and gradient of each on a 2 x 5 batch.
    """
    if rax is None:
        return {}, {}
    dcg = functools.partial(rax.dcg_lambdaweight, normalize=True)
    dcg2 = functools.partial(rax.dcg2_lambdaweight, normalize=True)

    def lambda_full(s, y):
        return rax.pairwise_logistic_loss(s, y, lambdaweight_fn=dcg) + MU * (
            rax.pairwise_logistic_loss(s, y, lambdaweight_fn=dcg2)
        )

    def softmax():
        return functools.partial(rax.softmax_loss, label_fn=rax.utils.normalize_probabilities)

    builders = {
        "approx_ndcg": lambda: rax.approx_t12n(rax.ndcg_metric),
        "softmax": softmax,
        "pairwise_logistic": lambda: rax.pairwise_logistic_loss,
        "lambda": lambda: functools.partial(
            rax.pairwise_logistic_loss, lambdaweight_fn=rax.dcg_lambdaweight
        ),
        "lambda_full": lambda: lambda_full,
        # The training-size sections, by lodestar's names.
        "softmax_loss": softmax,
        "poly1_softmax_loss": lambda: rax.poly1_softmax_loss,
        "listmle_loss": lambda: rax.listmle_loss,
        "pointwise_mse_loss": lambda: rax.pointwise_mse_loss,
        "pointwise_sigmoid_loss": lambda: rax.pointwise_sigmoid_loss,
        "pairwise_logistic_loss": lambda: rax.pairwise_logistic_loss,
        "pairwise_hinge_loss": lambda: rax.pairwise_hinge_loss,
        "pairwise_soft_zero_one_loss": lambda: rax.pairwise_soft_zero_one_loss,
        "lambda_loss": lambda: lambda_full,
        "approx_ndcg_loss": lambda: rax.approx_t12n(rax.ndcg_metric),
        **{name: functools.partial(build, rax) for name, (_, build) in COMPOSED.items()},
    }
    trial = make_batch(np.random.default_rng(2), 2, 5)
    fns, failures = {}, {}
    for name, build in builders.items():
        try:
            loss = build()
            value, grad = value_and_grad(loss)(*trial)
            if not (np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grad)))):
                raise FloatingPointError(f"non-finite value {float(value)} or gradient")
            fns[name] = loss
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

    names = [name for name in LOSSES if not only or name in only]
    for batch, n in shapes:
        scores_np, labels_np = make_batch(rng, batch, n)
        if not names:
            continue
        args = (jax.device_put(scores_np), jax.device_put(labels_np))
        for name in names:
            rx = rax_loss_fns.get(name)
            record(batch, n, name, lo_fns[name], None if rx is None else value_and_grad(rx), args)
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
# Losses at training sizes: memory (compiled only) and time
# --------------------------------------------------------------------------- #


def compile_value_and_grad(loss, args) -> tuple[object, dict, float]:
    """``(executable, memory, seconds)`` of ``jit(value_and_grad(loss))`` for ``args``.

    ``args`` may be arrays or ``jax.ShapeDtypeStruct``: only compiled, never run.
    """
    start = time.perf_counter()
    compiled, memory = common.compile_with_memory(jax.value_and_grad(loss), args)
    return compiled, memory, time.perf_counter() - start


class Compiled:
    """Each side's loss compiled once per shape, for the memory and the timed rows."""

    def __init__(self, rax_loss_fns: dict):
        self.rax_loss_fns = rax_loss_fns
        self.cache = {}

    def loss(self, side: str, name: str):
        return lodestar_loss(name) if side == "lodestar" else self.rax_loss_fns.get(name)

    def get(self, side: str, name: str, batch: int, n: int):
        """``(executable, memory, compile seconds)``, or None where Rax has no counterpart."""
        key = (side, name, batch, n)
        if key not in self.cache:
            loss = self.loss(side, name)
            if loss is None:
                return None
            self.cache[key] = compile_value_and_grad(loss, shape_structs(batch, n))
        return self.cache[key]


def shape_structs(batch: int, n: int):
    struct = jax.ShapeDtypeStruct((batch, n), jnp.float32)
    return struct, struct


def memory_rows(shapes, compiled: Compiled, names) -> list:
    """XLA's temporaries of each loss's value and gradient: compiled, not run."""
    rows = []
    for batch, n in shapes:
        for name in names:
            row = {"batch": batch, "n": n, "loss": name, "rax_temp_bytes": None}
            for side in ("lodestar", "rax"):
                entry = compiled.get(side, name, batch, n)
                if entry is None:
                    continue
                _, memory, seconds = entry
                row.update(
                    {
                        f"{side}_temp_bytes": memory.get("temp_bytes"),
                        f"{side}_memory": memory,
                        f"{side}_compile_s": seconds,
                    }
                )
            rows.append(row)
            print(
                f"  memory {batch}x{n} {name:28s} lodestar {gib(row['lodestar_temp_bytes'])} GiB,"
                f" rax {gib(row['rax_temp_bytes'])} GiB",
                file=sys.stderr,
                flush=True,
            )
    return rows


def sinkhorn_rows(shape, iterations) -> list:
    """NeuralNDCG's temporaries against its Sinkhorn iterations: compiled, not run."""
    batch, n = shape
    rows = []
    for count in iterations:
        loss = functools.partial(losses.neural_ndcg_loss, sinkhorn_iterations=count)
        _, memory, seconds = compile_value_and_grad(loss, shape_structs(batch, n))
        rows.append(
            {
                "batch": batch,
                "n": n,
                "sinkhorn_iterations": count,
                "temp_bytes": memory.get("temp_bytes"),
                "memory": memory,
                "compile_s": seconds,
            }
        )
        print(
            f"  sinkhorn {batch}x{n} iterations={count}: {gib(rows[-1]['temp_bytes'])} GiB",
            file=sys.stderr,
            flush=True,
        )
    return rows


def compile_cpu_seconds(function, *args) -> float:
    """Process CPU seconds to lower and compile ``jax.jit(function)`` for ``args``, uncached."""
    jax.clear_caches()
    start = time.process_time()
    jax.jit(function).lower(*args).compile()
    return time.process_time() - start


def jvp_of(loss, direction):
    """``(s, y) ->`` the derivative of ``loss(s, y)`` along ``direction``."""
    return lambda s, y: jax.jvp(lambda s: loss(s, y), (s,), (direction,))[1]


def hvp_of(loss, direction):
    """``(s, y) ->`` the Hessian of ``loss(s, y)`` times ``direction`` (jvp of grad)."""
    return lambda s, y: jax.jvp(jax.grad(lambda s: loss(s, y)), (s,), (direction,))[1]


def closed_over(function, labels):
    """``s -> function(s, labels)``: the labels become constants of the program."""
    return lambda s: function(s, labels)


def forward_mode_rows(shapes, names=FORWARD_MODE_LOSSES, seed: int = 0) -> list:
    """Compile seconds of ``jvp`` and of a Hessian-vector product, labels closed over or not."""
    rng = np.random.default_rng(seed + 2)
    rows = []
    for batch, n in shapes:
        scores, labels = (jnp.asarray(a) for a in make_batch(rng, batch, n))
        direction = jnp.ones_like(scores)
        shape_rows = []
        for name in names:
            loss = getattr(losses, name)
            row = {"batch": batch, "n": n, "loss": name}
            for kind, derivative in (("jvp", jvp_of), ("hvp", hvp_of)):
                function = derivative(loss, direction)
                row[f"{kind}_closed_s"] = compile_cpu_seconds(closed_over(function, labels), scores)
                row[f"{kind}_argument_s"] = compile_cpu_seconds(function, scores, labels)
            shape_rows.append(row)
            print(
                f"  forward mode {batch}x{n} {name:20s} jvp {row['jvp_closed_s']:.2f}s"
                f" hvp {row['hvp_closed_s']:.2f}s (labels closed over)",
                file=sys.stderr,
                flush=True,
            )
        bar = next((r for r in shape_rows if r["loss"] == FORWARD_MODE_BAR), None)
        for row in shape_rows:
            for key in [key for key in row if key.endswith("_s")]:
                row[key.removesuffix("_s") + "_over_softmax"] = (
                    None if bar is None else row[key] / bar[key]
                )
        rows.extend(shape_rows)
    return rows


def timed_cell(entry, args, reps: int, max_run_bytes: float) -> dict:
    """Time a compiled executable when its temporaries fit in ``max_run_bytes``."""
    executable, memory, seconds = entry
    cell = {"compile_s": seconds, "temp_bytes": memory.get("temp_bytes"), "ms": None}
    if cell["temp_bytes"] is not None and cell["temp_bytes"] > max_run_bytes:
        cell["skipped"] = f"temporaries {gib(cell['temp_bytes'])} GiB > --max-run-gib"
        return cell
    t, first, (value, _) = common.time_jax(executable, args, reps)
    cell.update(ms=1e3 * t, first_call_ms=1e3 * first, value=float(value))
    return cell


def training_rows(shapes, reps, compiled: Compiled, names, seed, max_run_gib) -> list:
    """Every loss timed at training sizes, with its time over lambda_loss's."""
    rng = np.random.default_rng(seed + 1)
    max_run_bytes = max_run_gib * GIB
    rows = []
    for batch, n in shapes:
        scores_np, labels_np = make_batch(rng, batch, n)
        args = (jax.device_put(scores_np), jax.device_put(labels_np))
        shape_rows = []
        # lambda_loss first: every row of the shape is divided by its time.
        for name in sorted(names, key=lambda name: name != BAR):
            row = {"batch": batch, "n": n, "loss": name, "lodestar_ms": None, "rax_ms": None}
            if name == NEURAL and batch * n * n > NEURAL_MAX_PAIRS:
                row["skipped"] = f"not timed: lists * n * n > {NEURAL_MAX_PAIRS:,}"
                shape_rows.append(row)
                continue
            for side in ("lodestar", "rax"):
                entry = compiled.get(side, name, batch, n)
                if entry is None:
                    continue
                cell = timed_cell(entry, args, reps, max_run_bytes)
                row.update({f"{side}_{key}": value for key, value in cell.items()})
            shape_rows.append(row)
            print(
                f"  training {batch}x{n} {name:28s} "
                f"lodestar {common.fmt_ms(row['lodestar_ms'])} ms, "
                f"rax {common.fmt_ms(row['rax_ms'])} ms",
                file=sys.stderr,
                flush=True,
            )
        bar = next((r["lodestar_ms"] for r in shape_rows if r["loss"] == BAR), None)
        for row in shape_rows:
            ms = row["lodestar_ms"]
            row["over_lambda_loss"] = None if ms is None or not bar else ms / bar
        order = {name: index for index, name in enumerate(TRAINING_LOSSES)}
        rows.extend(sorted(shape_rows, key=lambda r: order.get(r["loss"], len(order))))
        del args
    return rows


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def gib(value) -> str:
    """Bytes in GiB, three significant digits (at least two decimals), ``-`` if missing."""
    if value is None:
        return "-"
    value /= GIB
    return f"{value:.2f}" if value >= 0.995 else f"{value:.3g}"


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


def print_memory(rows) -> None:
    head = (
        f"{'shape':>10} {'loss':28} | {'lodestar GiB':>12} {'rax GiB':>10} | {'rax/lodestar':>12}"
    )
    print()
    print("XLA temporaries of value_and_grad, GiB (2**30 bytes); compiled, not run.")
    print(head)
    print("-" * len(head))
    for shape, r in common.rows_by_shape(rows, "-" * len(head)):
        print(
            f"{shape:>10} {r['loss']:28} | {gib(r['lodestar_temp_bytes']):>12} "
            f"{gib(r['rax_temp_bytes']):>10} | "
            f"{common.fmt_ratio(r['rax_temp_bytes'], r['lodestar_temp_bytes']):>12}"
        )


def print_sinkhorn(rows) -> None:
    if not rows:
        return
    print()
    print(
        f"neural_ndcg_loss at {rows[0]['batch']}x{rows[0]['n']}: XLA temporaries of "
        "value_and_grad by sinkhorn_iterations, GiB; compiled, not run."
    )
    for r in rows:
        print(f"  sinkhorn_iterations={r['sinkhorn_iterations']:>4}: {gib(r['temp_bytes'])} GiB")


def print_training(rows) -> None:
    head = (
        f"{'shape':>10} {'loss':28} | {'lodestar ms':>11} {'rax ms':>10} | "
        f"{'rax/lodestar':>12} {'x ' + BAR:>14}"
    )
    print()
    print(
        "Training sizes: value_and_grad, median ms; x lambda_loss = lodestar's time over "
        "lodestar's lambda_loss."
    )
    print(head)
    print("-" * len(head))
    for shape, r in common.rows_by_shape(rows, "-" * len(head)):
        over = "-" if r["over_lambda_loss"] is None else f"{r['over_lambda_loss']:.3g}x"
        print(
            f"{shape:>10} {r['loss']:28} | {common.fmt_ms(r['lodestar_ms']):>11} "
            f"{common.fmt_ms(r['rax_ms']):>10} | "
            f"{common.fmt_ratio(r['rax_ms'], r['lodestar_ms']):>12} {over:>14}"
        )
    for r in rows:
        for key in ("skipped", "lodestar_skipped", "rax_skipped"):
            if key in r:
                print(f"{r['batch']}x{r['n']} {r['loss']} ({key.split('_')[0]}): {r[key]}")


def print_forward_mode(rows) -> None:
    columns = ("jvp_closed", "jvp_argument", "hvp_closed", "hvp_argument")
    head = f"{'shape':>10} {'loss':20} | " + " ".join(f"{c:>21}" for c in columns)
    print()
    print(
        "Forward-mode compile time: CPU seconds of jit(jvp) and jit(jvp of grad), labels "
        "closed over or passed, and x softmax_loss."
    )
    print(head)
    print("-" * len(head))
    for shape, r in common.rows_by_shape(rows, "-" * len(head)):
        cells = []
        for column in columns:
            ratio = r[f"{column}_over_softmax"]
            over = "-" if ratio is None else f"{ratio:.1f}x"
            cells.append(f"{r[column + '_s']:>13.2f}s {over:>6}")
        print(f"{shape:>10} {r['loss']:20} | " + " ".join(cells))


def main(argv=None) -> int:
    parser = common.base_parser(__doc__.split("\n")[0], "tiny shapes, 1 repetition (CI smoke test)")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax even if installed")
    rows = (*LOSSES, RANKS, *TRAINING_LOSSES, *COMPOSED, SINKHORN, FORWARD_MODE)
    parser.add_argument(
        "--only",
        metavar="ROWS",
        help=f"comma-separated rows to run, among {', '.join(rows)}",
    )
    parser.add_argument(
        "--max-run-gib",
        type=float,
        default=MAX_RUN_GIB,
        help="time a training-size row only if its XLA temporaries fit in this many GiB "
        f"(default {MAX_RUN_GIB:g})",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    reps = common.default_reps(args)
    shapes = QUICK_SHAPES if args.quick else FULL_SHAPES
    rank_shapes = QUICK_RANK_SHAPES if args.quick else FULL_RANK_SHAPES
    training_shapes = QUICK_TRAINING_SHAPES if args.quick else TRAINING_SHAPES
    memory_shapes = QUICK_MEMORY_SHAPES if args.quick else MEMORY_SHAPES
    sinkhorn_shape = QUICK_SINKHORN_SHAPE if args.quick else SINKHORN_SHAPE
    forward_mode_shapes = QUICK_FORWARD_MODE_SHAPES if args.quick else FORWARD_MODE_SHAPES
    only = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = only - set(rows)
        if unknown:
            parser.error(f"unknown rows {sorted(unknown)}; choose among {rows}")
    names = [name for name in TRAINING_LOSSES if not only or name in only]
    timed_names = [*names, BAR] if names and BAR not in names else names

    wall = time.perf_counter()
    rax, rax_status = load_rax(args.no_rax)
    info = header(rax_status)
    common.warm_up_process(0.2 if args.quick else 1.0)
    rax_loss_fns, failures = rax_losses(rax)
    results = run(shapes, rank_shapes, reps, rax_loss_fns, only, args.seed)
    compiled = Compiled(rax_loss_fns)
    composed = [name for name in COMPOSED if not only or name in only]
    memory = memory_rows(memory_shapes, compiled, [*names, *composed])
    sinkhorn = (
        []
        if only and SINKHORN not in only
        else (sinkhorn_rows(sinkhorn_shape, SINKHORN_ITERATIONS))
    )
    training = training_rows(
        training_shapes, reps, compiled, timed_names, args.seed, args.max_run_gib
    )
    forward_mode = (
        []
        if only and FORWARD_MODE not in only
        else forward_mode_rows(forward_mode_shapes, seed=args.seed)
    )
    if results:
        print_table(results, rax_status, failures)
    if memory:
        print_memory(memory)
    print_sinkhorn(sinkhorn)
    if forward_mode:
        print_forward_mode(forward_mode)
    if training:
        print_training(training)
    if memory or training:
        print()
        print("Rax counterparts of the training-size rows: lambda_loss = lambda_full above;")
        print("approx_ndcg_loss = approx_t12n(ndcg_metric); softmax_loss = softmax_loss")
        print("(label_fn=normalize_probabilities); the others are Rax's losses of the same name;")
        print(f"{NEURAL} has none.")
    wall = time.perf_counter() - wall
    print(
        f"\nshapes={list(shapes)} ranks={list(rank_shapes)} training={list(training_shapes)} "
        f"memory={list(memory_shapes)} sinkhorn={sinkhorn_shape} reps={reps} wall={wall:.1f}s"
    )
    common.save_json(
        args.json,
        info,
        reps,
        args.quick,
        results=results,
        training=training,
        memory=memory,
        sinkhorn=sinkhorn,
        forward_mode=forward_mode,
        settings={
            "max_run_gib": args.max_run_gib,
            "neural_max_pairs": NEURAL_MAX_PAIRS,
            "mu": MU,
            "only": sorted(only) if only else None,
        },
        rax_failures=failures,
        wall_s=wall,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
