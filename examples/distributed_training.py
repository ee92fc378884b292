"""Data-parallel training over several processes with ``jax.distributed``, and a merged evaluation.

What it shows:

* one training step, jitted over a mesh of every device of every process:
  a linear scorer, :func:`lodestar.losses.softmax_loss` on **packed lists**
  (several queries to a row, told apart by ``segments=``) and optax's Adam.
  The rows are sharded over the devices and the parameters replicated, so
  XLA sums the gradient across processes;
* a held-out evaluation with :mod:`lodestar.streaming`: each device adds its
  own lists to a state inside :func:`jax.shard_map`, and ``merge_across``
  merges the states of every device of every process into one replicated
  state;
* how to start the processes: on one machine (``--launch N``: CPU processes
  talking through gloo), under SLURM, under ``mpirun`` or under a launcher
  that sets torchrun's environment variables (``--cluster``).

Every process draws the same synthetic collection, packs it into the same
global rows and keeps its own block of them, so any number of processes
trains on one global batch: the losses, gradients and metric agree with a
single process (``tests/test_distributed_example.py``). A real job would
read each process's share of the queries from its own files instead
(:func:`lodestar.datasets.load_svmlight`).

Run it with::

    python examples/distributed_training.py                # one process
    python examples/distributed_training.py --launch 4     # 4 local processes
    srun --ntasks=4 python examples/distributed_training.py --cluster

Every process must run the same steps on arrays of the same global shape, or
the collectives wait for ever: the rows are padded to a multiple of the device
count with empty rows, which neither the loss nor the metric counts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lodestar import datasets, losses, metrics, streaming

N_FEATURES = 8
SHORTEST, LONGEST = 8, 24  # documents of a training query
ROW_WIDTH = 64  # items per packed training row: two to eight queries
LEARNING_RATE = 0.05
K = 10
DESCRIPTION = "Data-parallel training over several processes with jax.distributed."


def parse_arguments(argv=None) -> argparse.Namespace:
    """The command line; the coordinator's three options go together."""
    parser = argparse.ArgumentParser(description=DESCRIPTION, allow_abbrev=False)
    start = parser.add_mutually_exclusive_group()
    start.add_argument(
        "--launch",
        type=int,
        metavar="N",
        help="start N processes of this script on this machine and wait for them",
    )
    start.add_argument(
        "--cluster",
        action="store_true",
        help="one process of a job started by SLURM, mpirun or a torchrun-style launcher",
    )
    start.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        help="the coordinator's address; with --num-processes and --process-id",
    )
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=96, help="training queries")
    parser.add_argument("--test-queries", type=int, default=64)
    parser.add_argument(
        "--report", metavar="FILE", help="process 0 writes the losses, gradient and metric as JSON"
    )
    arguments = parser.parse_args(argv)
    given = [arguments.coordinator, arguments.num_processes, arguments.process_id]
    if any(x is not None for x in given) and None in given:
        parser.error("--coordinator, --num-processes and --process-id go together")
    return arguments


# --------------------------------------------------------------------------
# Starting the processes
# --------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that no process on this machine listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(count: int, argv: list[str]) -> int:
    """Run ``count`` copies of this script as one job on this machine; their worst exit status.

    If one process fails, the others would wait for it in their next
    collective for ever, so they are stopped.
    """
    address = f"127.0.0.1:{free_port()}"
    children = [
        subprocess.Popen(
            [sys.executable, __file__, *argv, "--coordinator", address]
            + ["--num-processes", str(count), "--process-id", str(index)]
        )
        for index in range(count)
    ]
    status, remaining = 0, list(children)
    while remaining:
        for child in list(remaining):
            try:
                code = child.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
            remaining.remove(child)
            if code != 0 and status == 0:
                status = code
                for other in remaining:
                    other.terminate()
    return status


def initialize(arguments: argparse.Namespace) -> None:
    """Join the job, if this process is one of several.

    On CPU the processes exchange arrays through gloo, which JAX must be told
    before it starts its CPU backend; GPUs use NCCL whatever this says.
    """
    pytorch_variables = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
    if arguments.coordinator is None and not arguments.cluster:
        return  # one process, on its own devices
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if arguments.coordinator is not None:
        jax.distributed.initialize(
            coordinator_address=arguments.coordinator,
            num_processes=arguments.num_processes,
            process_id=arguments.process_id,
        )
    elif all(name in os.environ for name in pytorch_variables):
        # torchrun and launchers that mimic it set these; JAX does not read them.
        jax.distributed.initialize(
            coordinator_address=f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
            num_processes=int(os.environ["WORLD_SIZE"]),
            process_id=int(os.environ["RANK"]),
        )
    else:
        jax.distributed.initialize()  # SLURM, Open MPI, Kubernetes: read from the environment


# --------------------------------------------------------------------------
# Data: packed training rows, padded held-out lists, each process's block
# --------------------------------------------------------------------------


def pack(data: datasets.RankingData, width: int, multiple: int):
    """Pack the lists of ``data`` into rows of ``width`` items, a list never split.

    Lists are placed in order, each in the current row if it fits and else in
    a new one; ``segments`` numbers the lists of a row from 0. The number of
    rows is rounded up to ``multiple`` with empty rows.

    Returns:
      ``(features, labels, where, segments)`` NumPy arrays with ``rows`` and
      ``width`` as their first two axes.
    """
    features, labels, where = (np.asarray(x) for x in data[:3])
    lengths = where.sum(axis=1)
    row, used, segment, placed = 0, 0, 0, []
    for length in lengths:
        if used + length > width:
            row, used, segment = row + 1, 0, 0
        placed.append((row, used, segment))
        used, segment = used + length, segment + 1
    rows = -(-(row + 1) // multiple) * multiple
    packed_features = np.zeros((rows, width, features.shape[-1]), features.dtype)
    packed_labels = np.zeros((rows, width), labels.dtype)
    packed_where = np.zeros((rows, width), bool)
    packed_segments = np.zeros((rows, width), np.int32)
    for query, (row, start, segment) in enumerate(placed):
        items = slice(start, start + lengths[query])
        packed_features[row, items] = features[query, : lengths[query]]
        packed_labels[row, items] = labels[query, : lengths[query]]
        packed_where[row, items] = True
        packed_segments[row, items] = segment
    return packed_features, packed_labels, packed_where, packed_segments


def padded_rows(arrays, multiple: int):
    """``arrays`` with empty rows (all padding) added up to a multiple of ``multiple`` rows."""
    rows = len(arrays[0])
    extra = -rows % multiple
    return tuple(np.pad(a, [(0, extra)] + [(0, 0)] * (a.ndim - 1)) for a in arrays)


def global_arrays(arrays, sharding: NamedSharding):
    """One global array of each, from this process's block of rows.

    Each process passes only its own rows, as it would after reading its own
    files; here it cuts them out of the same global set.
    """
    count, index = jax.process_count(), jax.process_index()
    return tuple(
        jax.make_array_from_process_local_data(
            sharding, np.array_split(a, count)[index], global_shape=a.shape
        )
        for a in arrays
    )


# --------------------------------------------------------------------------
# The model, the step and the evaluation
# --------------------------------------------------------------------------


def init_params(n_features: int) -> dict:
    """A linear scorer's parameters, zero: every document ties at first."""
    return {"w": jnp.zeros((n_features,), jnp.float32), "b": jnp.zeros((), jnp.float32)}


def apply(params: dict, features):
    """Scores ``(..., n)`` of features ``(..., n, n_features)``."""
    return features @ params["w"] + params["b"]


def local_loss(params, features, labels, where, segments):
    """The loss summed over the lists of this device's packed rows."""
    return losses.softmax_loss(
        apply(params, features),
        labels,
        where=where,
        segments=segments,
        reduction="sum",
        max_segments=ROW_WIDTH // SHORTEST,
        max_segment_size=LONGEST,
    )


def summed_loss_and_grad(params, features, labels, where, segments):
    """The loss and its gradient summed over every device's lists: call in shard_map.

    The loss is summed over devices first and then differentiated: the
    parameters are the same on every device, so the gradient of the sum is
    the sum of every device's gradient, and JAX adds those up itself.
    """

    def summed_loss(params):
        return jax.lax.psum(local_loss(params, features, labels, where, segments), "batch")

    return jax.value_and_grad(summed_loss)(params)


def merged_evaluation(params, features, labels, where):
    """This device's lists added to a state, merged with every device's: call in shard_map."""
    scores = apply(params, features)
    state = EVALUATION.update(EVALUATION.init(), scores, labels, where=where)
    return EVALUATION.merge_across(state, "batch")


EVALUATION = streaming.collection(
    {"ndcg@10": streaming.mean(metrics.ndcg, k=K), "mrr": streaming.mean(metrics.reciprocal_rank)}
)


def without_launch(argv: list[str]) -> list[str]:
    """The arguments a launched process gets: ``argv`` without ``--launch N``."""
    kept, skip = [], False
    for argument in argv:
        if not skip and argument != "--launch" and not argument.startswith("--launch="):
            kept.append(argument)
        skip = argument == "--launch"
    return kept


def main(argv=None) -> int:
    """Start the processes, or be one: train, evaluate, and report from process 0."""
    argv = sys.argv[1:] if argv is None else argv
    arguments = parse_arguments(argv)
    if arguments.launch is not None:
        return launch(arguments.launch, without_launch(argv))
    initialize(arguments)

    # Every device of every process; rows are sharded over them, parameters replicated.
    mesh = jax.make_mesh((jax.device_count(),), ("batch",))
    rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())
    # Each device gets as many rows; the empty rows that even them out count nowhere.
    multiple = jax.device_count()

    # One draw (one compilation) split into training and held-out queries.
    queries = datasets.synthetic_ltr(
        jax.random.key(arguments.seed),
        arguments.queries + arguments.test_queries,
        LONGEST,
        N_FEATURES,
        min_list_size=SHORTEST,
    )
    train = jax.tree.map(lambda x: x[: arguments.queries], queries)
    test = [np.asarray(x[arguments.queries :]) for x in queries[:3]]
    batch = global_arrays(pack(train, ROW_WIDTH, multiple), rows)
    held_out = global_arrays(padded_rows(test, multiple), rows)

    # Data parallel: each device takes the loss of its own rows, a psum adds
    # them up, and the gradient of that sum is every device's, summed.
    summed = jax.shard_map(
        summed_loss_and_grad,
        mesh=mesh,
        in_specs=(P(), *[P("batch")] * 4),
        out_specs=P(),
    )
    optimizer = optax.adam(LEARNING_RATE)
    params = jax.device_put(init_params(N_FEATURES), replicated)
    state = jax.device_put(optimizer.init(params), replicated)

    @jax.jit
    def step(params, state, batch):
        loss, grad = jax.tree.map(lambda total: total / arguments.queries, summed(params, *batch))
        updates, state = optimizer.update(grad, state, params)
        return optax.apply_updates(params, updates), state, loss, grad

    evaluate = jax.jit(
        jax.shard_map(
            merged_evaluation, mesh=mesh, in_specs=(P(), *[P("batch")] * 3), out_specs=P()
        )
    )

    lead = jax.process_index() == 0
    if lead:
        print(
            f"{jax.process_count()} process(es), {jax.device_count()} device(s); "
            f"{arguments.queries} training queries in {batch[0].shape[0]} packed rows"
        )
    before = EVALUATION.compute(evaluate(params, *held_out))
    trace, first_grad = [], None
    for _ in range(arguments.steps):
        params, state, loss, grad = step(params, state, batch)
        trace.append(float(loss))
        if first_grad is None:
            first_grad = {name: np.asarray(value).tolist() for name, value in grad.items()}
    after = EVALUATION.compute(evaluate(params, *held_out))
    if lead:
        print(f"softmax loss {trace[0]:.4f} -> {trace[-1]:.4f} in {len(trace)} steps")
        for name in after:
            print(f"held-out {name}: {float(before[name]):.4f} -> {float(after[name]):.4f}")
        if arguments.report:
            report = {
                "processes": jax.process_count(),
                "losses": trace,
                "first_grad": first_grad,
                "metrics": {name: float(value) for name, value in after.items()},
            }
            with open(arguments.report, "w") as file:
                json.dump(report, file)
    return 0


if __name__ == "__main__":
    sys.exit(main())
