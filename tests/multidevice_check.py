"""Run by tests/test_multidevice.py in a fresh process with 8 CPU devices.

XLA_FLAGS must be set before JAX initialises, which tests/conftest.py does
first in the pytest process; so this script runs on its own:
``python multidevice_check.py PART`` (a key of :data:`PARTS`) prints one line
per failed check ("FAIL ...") and "OK <count>" at the end.
"""

import os

# Eight devices, with whatever flags the caller compiles with.
os.environ["XLA_FLAGS"] = " ".join(
    [*os.environ.get("XLA_FLAGS", "").split(), "--xla_force_host_platform_device_count=8"]
)

import functools  # noqa: E402
import sys  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_enable_x64", True)

import children  # noqa: E402  (tests/children.py, beside this script)
import tiers  # noqa: E402  (tests/tiers.py, beside this script)

children.use_the_suite_compilation_cache()

from lodestar import _ranking, _registry, losses, metrics, streaming  # noqa: E402

DEVICES = 8
PER_DEVICE = 4  # lists per device, a power of two
BATCH = DEVICES * PER_DEVICE
# Lengths that reach every engine path: pairwise, the NDCG ideal's argsort,
# the host or XLA sort for long full lists, and top-k.
SIZES = [
    (24, None),
    (_ranking.ORDER_BY_SORT_MIN_N + 4, None),
    (_ranking.PAIRWISE_MAX_N + 20, None),
    (_ranking.PAIRWISE_MAX_N + 20, 10),
]
# Which functions each length takes. Every function meets pairwise counting;
# one measure of every metrics module and the losses meet top-k too; the
# default tier's measures and the losses meet the two engine paths between,
# which the engine takes whatever the formula. (Every function on every
# length compiled about 800 programs on 8 devices, 8 minutes on 2 cores; every
# function on pairwise counting and top-k, 520 programs, 5.6 minutes.)
LOSSES = {"lambda_loss", "softmax_loss"}
FUNCTIONS_AT = {
    SIZES[0]: None,  # every function
    SIZES[1]: {*tiers.DEFAULT_TIER, *LOSSES},
    SIZES[2]: {*tiers.DEFAULT_TIER, *LOSSES},
    SIZES[3]: {*tiers.ONE_PER_MODULE, "ndcg", *LOSSES},
}
# The check runs in parts, one process each, so that the suite's workers share
# it: part "pairwise" is the first length, part "engine" the other three and
# the accumulators.
PARTS = {"pairwise": SIZES[:1], "engine": SIZES[1:]}
# Every function of the registry once, with the options it requires; k only
# for those that take it.
_ENTRIES = {m.function_path: m for m in _registry.MEASURES.values()}.values()
FUNCTIONS = {
    **{
        m.key: functools.partial(m.function, **m.required_options)
        for m in _ENTRIES
        if m.key != "err"
    },
    "err": functools.partial(metrics.err, max_label=3),
    "lambda_loss": functools.partial(losses.lambda_loss, reduction="none"),
    "softmax_loss": functools.partial(losses.softmax_loss, reduction="none"),
}
failures = []
checks = 0


def check(ok, message):
    global checks
    checks += 1
    if not ok:
        failures.append(message)


def same_bits(a, b):
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


def per_block(fn, *arrays, mapped=False):
    """``fn`` on one device, block by block: what each device computes.

    With ``mapped``, inside a ``shard_map`` over that one device, as each
    device of a ``shard_map`` runs it: there the engine ranks with the
    compiled kernels, which sum in another order than XLA's route that a
    partitioned ``jit`` takes (decision 0043).
    """
    place = None
    if mapped:
        one = jax.make_mesh((1,), ("batch",), devices=jax.devices()[:1])
        fn = jax.shard_map(fn, mesh=one, in_specs=P("batch"), out_specs=P("batch"))
        place = NamedSharding(one, P("batch"))
    blocks = [
        np.asarray(jax.jit(fn)(*(jax.device_put(a[i : i + PER_DEVICE], place) for a in arrays)))
        for i in range(0, BATCH, PER_DEVICE)
    ]
    return np.concatenate(blocks)


def main(part):
    meshes = [
        jax.make_mesh((DEVICES,), ("batch",), axis_types=(axis_type,))
        for axis_type in (AxisType.Auto, AxisType.Explicit)
    ]
    for n, k in PARTS[part]:
        rng = np.random.default_rng(n + (k or 0))
        scores = rng.integers(0, 6, (BATCH, n)).astype(np.float64)
        labels = rng.integers(0, 4, (BATCH, n)).astype(np.float64)
        where = rng.random((BATCH, n)) < 0.9
        for name, fn in FUNCTIONS.items():
            if FUNCTIONS_AT[n, k] is not None and name not in FUNCTIONS_AT[n, k]:
                continue
            entry = _registry.MEASURES.get(name)
            kwargs = {"k": k} if entry is not None and entry.cutoff else {}

            def per_list(s, y, w, fn=fn, kwargs=kwargs):
                return fn(s, y, where=w, **kwargs)

            # One device's blocks, the same for both kinds of mesh axis; made
            # inside the check, since a measure that cannot run in a
            # shard_map fails there on one device as on eight.
            expected = {}

            arrays = (scores, labels, where)

            def one_device(how, per_list=per_list, expected=expected, arrays=arrays):
                if how not in expected:
                    expected[how] = per_block(per_list, *arrays, mapped=how == "shard_map")
                return expected[how]

            for mesh in meshes:
                rows = NamedSharding(mesh, P("batch"))
                sharded = [jax.device_put(a, rows) for a in (scores, labels, where)]
                label = f"{mesh.axis_types[0]} n={n} k={k} {name}"
                mapped = jax.shard_map(per_list, in_specs=P("batch"), out_specs=P("batch"))
                for how, run in (("jit", jax.jit(per_list)), ("shard_map", jax.jit(mapped))):
                    try:
                        with jax.set_mesh(mesh):
                            got = run(*sharded)
                        want = one_device(how)
                        if name == "err":
                            # ERR's per-block recursion divides inside a loop
                            # that XLA fuses differently per program: up to 6
                            # ulp seen at k = 10, within a product and a sum
                            # of 10 terms in another order (20 ulp).
                            same = np.allclose(got, want, rtol=4e-15, atol=0)
                        elif name == "iprec_at_recall":
                            # Its area sums a round of segments per loop step
                            # of a while_loop, which the partitioned program
                            # fuses otherwise: 1 ulp (1.8e-16) seen.
                            same = np.allclose(got, want, rtol=1e-15, atol=0)
                        elif name == "lambda_loss":
                            # A loss's pair sums take their column blocks'
                            # width from the whole batch (decision 0029), so
                            # the partitioned program sums in other blocks.
                            same = np.allclose(got, want, rtol=1e-15, atol=0)
                        else:
                            same = same_bits(got, want)
                        check(same, f"{label} {how}")
                    except Exception as error:  # report every path, not just the first
                        message = f"{label} {how}: {type(error).__name__}: {error}"[:300]
                        check(False, message)
    if part == "engine":
        for mesh in meshes:
            check_accumulators(mesh, np.random.default_rng(0))
    print("\n".join(f"FAIL {f}" for f in failures))
    print(f"OK {checks - len(failures)}/{checks}")
    return 1 if failures else 0


def check_accumulators(mesh, rng):
    """merge_across in shard_map, and update under sharded jit, match one device."""
    n = 20
    scores = rng.integers(0, 6, (BATCH, n)).astype(np.float64)
    labels = rng.integers(0, 4, (BATCH, n)).astype(np.float64)
    weights = rng.random(BATCH)
    evaluation = streaming.collection(
        {
            "ndcg@5": streaming.mean(metrics.ndcg, k=5),
            "mrr": streaming.mean(metrics.reciprocal_rank),
        }
    )
    one_device = evaluation.update(evaluation.init(), scores, labels, weights=weights)

    def on_each_device(s, y, w):
        state = evaluation.update(evaluation.init(), s, y, weights=w)
        return evaluation.merge_across(state, "batch")

    rows = NamedSharding(mesh, P("batch"))
    with jax.set_mesh(mesh):
        mapped = jax.shard_map(on_each_device, in_specs=P("batch"), out_specs=P())
        merged = jax.jit(mapped)(*(jax.device_put(a, rows) for a in (scores, labels, weights)))
        jitted = jax.jit(evaluation.update)(
            evaluation.init(),
            *(jax.device_put(a, rows) for a in (scores, labels)),
            weights=jax.device_put(weights, rows),
        )
    for name in ("ndcg@5", "mrr"):
        label = f"{mesh.axis_types} accumulator {name}"
        for got in (merged, jitted):
            check(int(got[name].count) == BATCH, f"{label} count")
            close = np.isclose(
                evaluation.compute(got)[name], evaluation.compute(one_device)[name], rtol=1e-15
            )
            check(bool(close), f"{label} mean")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
