"""Train small ranking models with every lodestar loss, and score them with exact NDCG@10.

What it shows:

* the six losses of :mod:`lodestar.losses` (softmax, ListMLE, pairwise
  logistic, LambdaLoss, ApproxNDCG, NeuralNDCG) driving plain-JAX models, a
  linear scorer and a two-layer MLP (parameters are a dict pytree, initialised
  with :mod:`jax.random`), optimised with optax's Adam in a jitted
  :func:`jax.lax.scan`;
* padding handled by the ``where`` mask of
  :func:`lodestar.datasets.synthetic_ltr` all the way through the losses and
  the metric;
* the held-out evaluation: data drawn with a second key from the same task,
  scored with the exact :func:`lodestar.metrics.ndcg` at ``k=10`` before and
  after training, next to a random scorer and the ideal one (the labels as
  scores; below 1 because queries with no relevant document score 0).

Adam is used because the losses live on very different scales (the pairwise
and lambda losses sum over pairs, the NDCG surrogates lie in [-1, 0]); Adam's
per-parameter normalisation makes one learning rate serve them all.

Run it with::

    python examples/train_ltr.py            # full run, well under a minute on 2 CPU cores
    python examples/train_ltr.py --quick    # smaller, for a smoke test
    python examples/train_ltr.py --steps 600 --seed 3

A progress bar (tqdm if it is installed, plain lines otherwise) shows the
running held-out NDCG@10 of each run; a table is printed at the end.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from lodestar import datasets, losses, metrics

try:  # tqdm is optional
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover - depends on the environment
    tqdm = None

LOSSES: dict[str, Callable] = {
    "softmax": losses.softmax_loss,
    "listmle": losses.listmle_loss,
    "pairwise_logistic": losses.pairwise_logistic_loss,
    "lambda": losses.lambda_loss,
    "approx_ndcg": losses.approx_ndcg_loss,
    # 20 Sinkhorn scalings instead of the default 50: the NeuralSort matrices of
    # these short lists are close to doubly stochastic by then, and the default
    # costs several times more per step on a CPU.
    "neural_ndcg": functools.partial(losses.neural_ndcg_loss, sinkhorn_iterations=20),
}
MODELS = ("linear", "mlp")

# Default sizes of the full run and of --quick.
FULL = dict(n_train=512, n_test=512, list_size=32, n_features=16, steps=300)
QUICK = dict(n_train=128, n_test=256, list_size=16, n_features=8, steps=100)
BATCH_SIZE = 64  # queries per Adam step, drawn at random from the training set
LEARNING_RATE = {"linear": 0.05, "mlp": 0.01}
HIDDEN = 32
K = 10


# --------------------------------------------------------------------------
# Data and models
# --------------------------------------------------------------------------


def make_data(key, *, n_train, n_test, list_size, n_features, task=0):
    """A training set and a held-out set: two keys, one task (same hidden model)."""
    train_key, test_key = jax.random.split(key)
    train = datasets.synthetic_ltr(train_key, n_train, list_size, n_features, task=task)
    test = datasets.synthetic_ltr(test_key, n_test, list_size, n_features, task=task)
    return train, test


def init_params(key, model: str, n_features: int, hidden: int = HIDDEN) -> dict:
    """Parameters of a ``"linear"`` or ``"mlp"`` scorer, as a dict of float32 arrays."""
    if model == "linear":
        w = jax.random.normal(key, (n_features,), jnp.float32) / math.sqrt(n_features)
        return {"w": w, "b": jnp.zeros((), jnp.float32)}
    if model == "mlp":
        k1, k2 = jax.random.split(key)
        w1 = jax.random.normal(k1, (n_features, hidden), jnp.float32) * math.sqrt(2 / n_features)
        w2 = jax.random.normal(k2, (hidden,), jnp.float32) / math.sqrt(hidden)
        return {
            "w1": w1,
            "b1": jnp.zeros((hidden,), jnp.float32),
            "w2": w2,
            "b2": jnp.zeros((), jnp.float32),
        }
    raise ValueError(f"model must be one of {MODELS}; got {model!r}")


def apply(params: dict, features):
    """Scores of shape ``(queries, docs)`` from features ``(queries, docs, features)``."""
    if "w" in params:
        return features @ params["w"] + params["b"]
    hidden = jax.nn.relu(features @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


@jax.jit
def held_out_ndcg(scores, labels, where):
    """Mean exact NDCG@10 over the lists (queries with no relevant document count 0)."""
    return metrics.ndcg(scores, labels, k=K, where=where).mean()


def random_ndcg(key, data) -> float:
    """Held-out NDCG@10 of a scorer that ignores the features."""
    scores = jax.random.normal(key, data.labels.shape, jnp.float32)
    return float(held_out_ndcg(scores, data.labels, data.where))


def ideal_ndcg(data) -> float:
    """Held-out NDCG@10 of the labels used as scores (the ceiling)."""
    return float(held_out_ndcg(data.labels, data.labels, data.where))


# --------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------


class _Progress:
    """A tqdm bar if tqdm is importable, else a line printed at each update."""

    def __init__(self, total: int, desc: str, enabled: bool):
        self.desc, self.enabled, self.done, self.total = desc, enabled, 0, total
        self.bar = tqdm(total=total, desc=desc, leave=False) if enabled and tqdm else None

    def update(self, n: int, ndcg: float):
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix(ndcg10=f"{ndcg:.4f}")
        elif self.enabled:
            print(f"  {self.desc}: step {self.done}/{self.total}  held-out NDCG@10 {ndcg:.4f}")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def fit(
    loss_fn: Callable,
    model: str = "linear",
    steps: int = FULL["steps"],
    key=None,
    *,
    data=None,
    learning_rate: float | None = None,
    batch_size: int | None = None,
    eval_every: int = 25,
    progress: bool = False,
    desc: str = "",
) -> dict:
    """Train one model with one loss; return NDCGs, the loss trace and the parameters.

    Args:
      loss_fn: A lodestar loss, ``loss_fn(scores, labels, where=...)``.
      model: ``"linear"`` or ``"mlp"``.
      steps: Adam steps, each on a random minibatch of queries.
      key: PRNG key for the initialisation (and the data if ``data`` is None).
      data: ``(train, test)`` :class:`~lodestar.datasets.RankingData`; default
        :func:`make_data` with the full-run sizes.
      learning_rate: Adam's step size; default per model (0 trains nothing).
      batch_size: Queries per step (default 64); the whole training set if larger.
      eval_every: Steps per jitted scan chunk; the held-out NDCG is measured
        (and the progress bar updated) after each chunk.
      progress: Show a progress bar.
      desc: Its label.

    Returns:
      A dict with ``ndcg_before``, ``ndcg_after`` (held-out exact NDCG@10),
      ``losses`` (training loss at every step, a NumPy-convertible array),
      ``curve`` (held-out NDCG after each chunk) and ``params``.
    """
    key = jax.random.key(0) if key is None else key
    data_key, init_key, batch_key = jax.random.split(key, 3)
    if data is None:
        sizes = {name: FULL[name] for name in ("n_train", "n_test", "list_size", "n_features")}
        data = make_data(data_key, **sizes)
    train, test = data
    lr = LEARNING_RATE[model] if learning_rate is None else learning_rate
    batch = min(BATCH_SIZE if batch_size is None else batch_size, train.features.shape[0])
    params = init_params(init_key, model, train.features.shape[-1])
    optimiser = optax.adam(lr)
    opt_state = optimiser.init(params)

    # The data are arguments, not closed-over constants, so that XLA does not
    # try to constant-fold the losses' sorts of the training labels.
    @functools.partial(jax.jit, static_argnums=3)
    def run_chunk(params, opt_state, key, n, features, labels, where):
        def objective(params, rows):
            scores = apply(params, features[rows])
            return loss_fn(scores, labels[rows], where=where[rows])

        def step(carry, step_key):
            params, opt_state = carry
            if batch < features.shape[0]:
                rows = jax.random.choice(step_key, features.shape[0], (batch,), replace=False)
            else:  # full batch
                rows = jnp.arange(features.shape[0])
            value, grads = jax.value_and_grad(objective)(params, rows)
            updates, opt_state = optimiser.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), value

        keys = jax.random.split(key, n)
        (params, opt_state), values = jax.lax.scan(step, (params, opt_state), keys)
        return params, opt_state, values

    def evaluate(params):
        return float(held_out_ndcg(apply(params, test.features), test.labels, test.where))

    before = evaluate(params)
    bar = _Progress(steps, desc, progress)
    trace, curve, done = [], [], 0
    while done < steps:
        n = min(eval_every, steps - done)
        batch_key, chunk_key = jax.random.split(batch_key)
        params, opt_state, values = run_chunk(
            params, opt_state, chunk_key, n, train.features, train.labels, train.where
        )
        trace.append(values)
        done += n
        curve.append(evaluate(params))
        bar.update(n, curve[-1])
    bar.close()
    return {
        "ndcg_before": before,
        "ndcg_after": evaluate(params),
        "losses": jnp.concatenate(trace) if trace else jnp.zeros((0,)),
        "curve": curve,
        "params": params,
    }


def train(loss_fn: Callable, model: str = "linear", steps: int = FULL["steps"], key=None, **kw):
    """Train one model with one loss; return ``(ndcg_before, ndcg_after)`` on held-out data.

    Keyword arguments are passed to :func:`fit`.
    """
    result = fit(loss_fn, model, steps, key, **kw)
    return result["ndcg_before"], result["ndcg_after"]


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def main(argv=None):
    """Train every loss with both models and print the held-out NDCG@10 table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="Adam steps per run")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and initialisation")
    args = parser.parse_args(argv)

    sizes = dict(QUICK if args.quick else FULL)
    steps = sizes.pop("steps") if args.steps is None else args.steps
    sizes.pop("steps", None)
    key = jax.random.key(args.seed)
    data_key, random_key, init_key = jax.random.split(key, 3)
    data = make_data(data_key, **sizes)
    train_set, test = data
    print(
        f"train: {train_set.features.shape[0]} queries, test: {test.features.shape[0]} queries, "
        f"{sizes['list_size']} docs max, {sizes['n_features']} features; {steps} Adam steps "
        f"(lr {LEARNING_RATE['linear']} linear, {LEARNING_RATE['mlp']} MLP)"
    )

    start = time.perf_counter()
    rows = []
    for model in MODELS:
        for name, loss_fn in LOSSES.items():
            t0 = time.perf_counter()
            result = fit(
                loss_fn, model, steps, init_key, data=data, progress=True, desc=f"{model}/{name}"
            )
            final_loss = float(result["losses"][-1]) if steps else math.nan
            rows.append(
                (model, name, result["ndcg_before"], result["ndcg_after"], final_loss,
                 time.perf_counter() - t0)
            )  # fmt: skip

    print()
    print(f"{'model':<8} {'loss':<18} {'before':>8} {'after':>8} {'final loss':>11} {'time':>6}")
    print("-" * 64)
    for model, name, before, after, final_loss, seconds in rows:
        print(
            f"{model:<8} {name:<18} {before:8.4f} {after:8.4f} {final_loss:11.4f} {seconds:5.1f}s"
        )
    print("-" * 64)
    print(f"{'random scorer':<27} {random_ndcg(random_key, test):17.4f}")
    print(f"{'ideal (labels as scores)':<27} {ideal_ndcg(test):17.4f}")
    print(f"\nheld-out exact NDCG@10; training took {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
