"""Learning to rank on LightGBM's lambdarank example: every lodestar loss against LightGBM.

What is measured
----------------
The held-out quality a small neural ranker reaches with each loss of
:mod:`lodestar.losses`, on real learning-to-rank data, beside LightGBM's
``lambdarank`` objective on the same data. It is a quality benchmark, not a
timing: the seconds are reported for scale only.

Data. LightGBM's ``examples/lambdarank`` (``rank.train``: 3,005 documents in
201 queries; ``rank.test``: 768 in 50; labels 0-4, 300 features), read with
:func:`lodestar.datasets.load_svmlight` and its LightGBM group files
(``group=rank.train.query``). ``--data DIR`` points at that folder of a
LightGBM clone; without it the script runs on the excerpt that ships with
lodestar (``tests/data/lambdarank``: the first 40 training and 20 test
queries), and says so. Each run holds a fifth of the training queries out as
its validation set, drawn by the run's seed (so the seeds vary the split as
well as the initialisation and the minibatches: on 201 queries, one split's
validation NDCG@10 can favour a poor model); the test queries are used only
for the final numbers.

Model. An MLP, ``features -> 64 ReLU -> 1`` (``--hidden``), the same for every
loss, initialised from the run's seed (He-scaled normal weights, zero biases).

Training. Adam (optax), learning rate 1e-3, on minibatches of 32 training
queries drawn without replacement at each step, for at most 2,000 steps. The
validation NDCG@10 is measured every 25 steps; training stops after 20
measurements without a better one (500 steps), and the parameters of the best
measurement are kept. Each loss runs with its defaults; a loss that takes a
``key`` (ListMLE, to break label ties) gets a fresh one at each step.

Metric. Exact NDCG@10 (:func:`lodestar.metrics.ndcg`, ties averaged) with
``gain="exp2"`` (2**label - 1), the gain the NDCG losses and LightGBM optimise;
the linear-gain NDCG@10 (lodestar's default) is reported beside it. Queries
whose labels are all 0 score 0. Early stopping, for every row, reads the
exp2 NDCG@10 on the validation queries.

LightGBM. ``lightgbm.train`` with ``objective="lambdarank"`` and the settings
of LightGBM's ``examples/lambdarank/train.conf`` (``num_leaves=31``,
``learning_rate=0.1``, ``max_bin=255``, ``bagging_fraction=0.9`` every round),
the run's seed, up to 1,000 rounds, stopped after 50 rounds without a better
validation NDCG@10, measured with lodestar's exact metric (``feval``), so that
its trees, whose scores tie often, are chosen and scored as the MLP is. Its row
is left out, with a note, where ``lightgbm`` is not importable
(``pip install -e ".[bench]"``).

Every row runs ``--seeds`` seeds (default 3: 0, 1, 2) and reports the test
NDCG@10's mean and sample standard deviation over them. Two reference rows:
the untrained MLP of each seed, and random scores.

Usage
-----
::

    python benchmarks/bench_ltr.py --data path/to/LightGBM/examples/lambdarank
    python benchmarks/bench_ltr.py            # on the excerpt in tests/data/lambdarank
    python benchmarks/bench_ltr.py --quick    # CI smoke test: a few steps, one seed, seconds
    python benchmarks/bench_ltr.py --data DIR --json benchmarks/results/cpu_ltr_<date>.json
    python benchmarks/bench_ltr.py --only softmax_loss,lambda_loss --seeds 5 --max-steps 500
    python benchmarks/bench_ltr.py --no-lightgbm

The rows are the losses in ``lodestar.losses.__all__``, so a new loss joins the
benchmark without changes here, and the pairwise losses with lambda weights
(``LAMBDAWEIGHT_ROWS``: ``pairwise_logistic_loss+dcg`` is
``pairwise_logistic_loss(..., lambdaweight=dcg_lambdaweight(normalize=True))``),
and NDCG through the metric-to-loss transformations (``TRANSFORM_ROWS``:
``approx_t12n``, ``bound_t12n``, and Gumbel sampling over ``approx_t12n``).
Rax 0.4.0's counterparts (``rax <name>``: its softmax, ListMLE, pairwise
logistic, hinge, MSE and QR losses, the logistic loss with its normalized
``dcg_lambdaweight``, and its ``approx_t12n`` and ``bound_t12n`` of
``ndcg_metric``) train beside them where Rax is installed (``--no-rax``
leaves them out; ``--quick`` always does).
A loss that needs a keyword this script cannot supply is listed as skipped; a
loss that raises or gives a non-finite value, or LightGBM raising, fails the
run (exit status 1) after the table is printed.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import statistics
import sys
import time
from pathlib import Path

import _common as common
import jax
import jax.numpy as jnp
import numpy as np

from lodestar import datasets, losses, metrics

ROOT = Path(__file__).resolve().parents[1]
EXCERPT = ROOT / "tests" / "data" / "lambdarank"
K = 10
GAIN = "exp2"
# Keywords the training loop supplies to a loss: its arrays, and a key for the
# losses that draw (ListMLE breaks label ties at random).
SUPPLIED = {"scores", "labels", "where", "key"}
LIGHTGBM = "lightgbm lambdarank"
UNTRAINED = "untrained MLP"
RANDOM = "random scores"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How every run trains; ``--quick`` shrinks the loop, not the model."""

    seeds: tuple[int, ...] = (0, 1, 2)
    hidden: int = 64
    learning_rate: float = 1e-3
    batch_queries: int = 32
    max_steps: int = 2000
    eval_every: int = 25
    patience: int = 20  # measurements without a better validation NDCG@10
    validation_share: float = 0.2
    lightgbm_rounds: int = 1000
    lightgbm_patience: int = 50


QUICK = Settings(seeds=(0,), max_steps=6, eval_every=3, patience=2, lightgbm_rounds=3)


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def _one_of(folder: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise FileNotFoundError(f"{folder}: none of {', '.join(names)} is there")


def split_files(folder: Path, split: str) -> tuple[Path, Path]:
    """``(documents, group file)`` of ``rank.<split>``, each plain or gzip."""
    base = f"rank.{split}"
    documents = _one_of(folder, (base, f"{base}.gz"))
    group = _one_of(folder, (f"{base}.query", f"{base}.query.gz"))
    return documents, group


def load(folder: Path) -> tuple[datasets.RankingData, datasets.RankingData]:
    """The training and test sets of a lambdarank folder, at one width.

    Each file is read once with its own widths; where they differ, both are
    read again with the larger, so that one model applies to both.
    """
    files = {split: split_files(folder, split) for split in ("train", "test")}

    def read(split, **widths):
        documents, group = files[split]
        return datasets.load_svmlight(documents, group=group, **widths)

    train, test = read("train"), read("test")
    widths = {
        "max_list_size": max(train.labels.shape[1], test.labels.shape[1]),
        "n_features": max(train.features.shape[2], test.features.shape[2]),
    }
    if train.features.shape[1:] != test.features.shape[1:]:
        train, test = read("train", **widths), read("test", **widths)
    return train, test


def take(data: datasets.RankingData, rows) -> datasets.RankingData:
    """The queries ``rows`` of ``data``."""
    return datasets.RankingData(*(np.asarray(field)[rows] for field in data))


def split_validation(train, share: float, seed: int):
    """``(training, validation)``: a random ``share`` of the queries, at least one, held out."""
    n = train.labels.shape[0]
    order = np.random.default_rng(seed).permutation(n)
    held = max(1, round(share * n))
    return take(train, np.sort(order[held:])), take(train, np.sort(order[:held]))


def describe(data) -> str:
    queries, size, features = data.features.shape
    return f"{queries} queries, {int(data.where.sum())} documents (<= {size}), {features} features"


# --------------------------------------------------------------------------- #
# Model and metric
# --------------------------------------------------------------------------- #


def init_mlp(key, n_features: int, hidden: int) -> dict:
    """``features -> hidden ReLU -> 1``: He-scaled normal weights, zero biases."""
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (n_features, hidden)) * math.sqrt(2 / n_features),
        "b1": jnp.zeros((hidden,)),
        "w2": jax.random.normal(k2, (hidden,)) * math.sqrt(2 / hidden),
        "b2": jnp.zeros(()),
    }


def apply(params: dict, features):
    """Scores ``(queries, documents)`` of features ``(queries, documents, features)``."""
    return jax.nn.relu(features @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


@functools.partial(jax.jit, static_argnames="gain")
def mean_ndcg(scores, labels, where, gain=GAIN):
    """Mean exact NDCG@10 over the queries, ties averaged."""
    return metrics.ndcg(scores, labels, k=K, where=where, gain=gain).mean()


def held_out_metrics(scores, data) -> dict:
    scores = jnp.asarray(scores, jnp.float32)
    return {
        "test_ndcg10": float(mean_ndcg(scores, data.labels, data.where)),
        "test_ndcg10_linear": float(mean_ndcg(scores, data.labels, data.where, gain="linear")),
    }


# --------------------------------------------------------------------------- #
# Losses
# --------------------------------------------------------------------------- #


# The lambda weights on the pairwise losses, as Rax users combine them: rows
# beside the plain losses, named by the call they make.
LAMBDAWEIGHT_ROWS = {
    "pairwise_logistic_loss+labeldiff": ("pairwise_logistic_loss", losses.labeldiff_lambdaweight()),
    "pairwise_logistic_loss+dcg": (
        "pairwise_logistic_loss",
        losses.dcg_lambdaweight(normalize=True),
    ),
    "pairwise_logistic_loss+dcg2": (
        "pairwise_logistic_loss",
        losses.dcg2_lambdaweight(normalize=True),
    ),
    "pairwise_mse_loss+dcg": ("pairwise_mse_loss", losses.dcg_lambdaweight(normalize=True)),
    "pairwise_qr_loss+dcg": ("pairwise_qr_loss", losses.dcg_lambdaweight(normalize=True)),
}


# The metric-to-loss transformations of NDCG (with the exp2 gain that the
# benchmark's NDCG@10 measures), as Rax users write them.
_APPROX_NDCG = losses.approx_t12n(metrics.ndcg)
_BOUND_NDCG = losses.bound_t12n(metrics.ndcg)
_GUMBEL_APPROX_NDCG = losses.gumbel_t12n(_APPROX_NDCG)


def _approx_t12n_row(scores, labels, *, where=None):
    return _APPROX_NDCG(scores, labels, where=where, gain=GAIN)


def _bound_t12n_row(scores, labels, *, where=None):
    return _BOUND_NDCG(scores, labels, where=where, gain=GAIN)


def _gumbel_t12n_row(scores, labels, *, where=None, key):
    return _GUMBEL_APPROX_NDCG(scores, labels, where=where, key=key, gain=GAIN)


TRANSFORM_ROWS = {
    "approx_t12n(ndcg)": _approx_t12n_row,
    "bound_t12n(ndcg)": _bound_t12n_row,
    "gumbel_t12n(approx_t12n(ndcg))": _gumbel_t12n_row,
}


def rax_rows(rax) -> dict:
    """Rax 0.4.0's counterparts, trained the same way: ``{"rax <name>": loss}``.

    Rax masks padding with ``where=`` too; its NDCG gains are 2**label - 1,
    the benchmark's. Empty without Rax.
    """
    if rax is None:
        return {}
    dcg = functools.partial(rax.dcg_lambdaweight, normalize=True)
    builders = {
        "softmax_loss": rax.softmax_loss,
        "listmle_loss": rax.listmle_loss,
        "pairwise_logistic_loss": rax.pairwise_logistic_loss,
        "pairwise_hinge_loss": rax.pairwise_hinge_loss,
        "pairwise_mse_loss": rax.pairwise_mse_loss,
        "pairwise_qr_loss": rax.pairwise_qr_loss,
        "pairwise_logistic_loss+dcg": functools.partial(
            rax.pairwise_logistic_loss, lambdaweight_fn=dcg
        ),
        "approx_t12n(ndcg)": rax.approx_t12n(rax.ndcg_metric),
        "bound_t12n(ndcg)": rax.bound_t12n(rax.ndcg_metric),
    }

    def masked(loss):
        return lambda scores, labels, *, where=None: loss(scores, labels, where=where)

    return {f"rax {name}": masked(loss) for name, loss in builders.items()}


def every_row() -> list[str]:
    """The names ``--only`` takes: every loss of ``lodestar.losses``, then the composed rows."""
    return [
        *(name for name in losses.__all__ if name.endswith("_loss")),
        *LAMBDAWEIGHT_ROWS,
        *TRANSFORM_ROWS,
    ]


def loss_rows(only=None) -> tuple[dict, dict]:
    """``({name: loss}, {name: why skipped})``: every loss of ``lodestar.losses``,
    :data:`LAMBDAWEIGHT_ROWS` and :data:`TRANSFORM_ROWS`."""
    rows, skipped = {}, {}
    for name in losses.__all__:
        if not name.endswith("_loss") or (only and name not in only):
            continue
        loss = getattr(losses, name)
        needed = [
            parameter.name
            for parameter in inspect.signature(loss).parameters.values()
            if parameter.default is inspect.Parameter.empty and parameter.name not in SUPPLIED
        ]
        if needed:
            skipped[name] = f"needs {', '.join(needed)}, which this benchmark does not supply"
        else:
            rows[name] = loss
    for name, (loss_name, lambdaweight) in LAMBDAWEIGHT_ROWS.items():
        if (not only or name in only) and hasattr(losses, loss_name):
            rows[name] = functools.partial(getattr(losses, loss_name), lambdaweight=lambdaweight)
    rows.update({name: loss for name, loss in TRANSFORM_ROWS.items() if not only or name in only})
    return rows, skipped


def objective(loss):
    """``objective(scores, labels, where, key)``: the loss, given a key if it takes one."""
    if "key" in inspect.signature(loss).parameters:
        return lambda scores, labels, where, key: loss(scores, labels, where=where, key=key)
    return lambda scores, labels, where, key: loss(scores, labels, where=where)


# --------------------------------------------------------------------------- #
# Training
# --------------------------------------------------------------------------- #


def fit_mlp(loss, train, valid, seed: int, settings: Settings) -> dict:
    """Train the MLP with ``loss``; keep the parameters of the best validation NDCG@10.

    Returns:
      ``params`` (the best), ``initial`` (before training), ``valid_ndcg10``
      (the best), ``best_step``, ``steps`` (run) and ``final_loss``.
    """
    import optax

    init_key, run_key = jax.random.split(jax.random.key(seed))
    params = init_mlp(init_key, train.features.shape[-1], settings.hidden)
    optimiser = optax.adam(settings.learning_rate)
    opt_state = optimiser.init(params)
    batch = min(settings.batch_queries, train.labels.shape[0])
    value = objective(loss)

    # The data are arguments, not closed-over constants, so that XLA does not
    # constant-fold the losses' sorts of the training labels.
    @functools.partial(jax.jit, static_argnums=3)
    def chunk(params, opt_state, key, n, features, labels, where):
        def step(carry, key):
            params, opt_state = carry
            rows_key, loss_key = jax.random.split(key)
            rows = jax.random.choice(rows_key, features.shape[0], (batch,), replace=False)

            def batch_loss(params):
                scores = apply(params, features[rows])
                return value(scores, labels[rows], where[rows], loss_key)

            loss_value, grads = jax.value_and_grad(batch_loss)(params)
            updates, opt_state = optimiser.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), loss_value

        (params, opt_state), values = jax.lax.scan(
            step, (params, opt_state), jax.random.split(key, n)
        )
        return params, opt_state, values[-1]

    def validate(params):
        return float(mean_ndcg(apply(params, valid.features), valid.labels, valid.where))

    arrays = tuple(jnp.asarray(field) for field in (train.features, train.labels, train.where))
    initial = params
    best = {"params": params, "valid_ndcg10": validate(params), "best_step": 0}
    steps, waited, final_loss = 0, 0, math.nan
    while steps < settings.max_steps and waited < settings.patience:
        n = min(settings.eval_every, settings.max_steps - steps)
        run_key, key = jax.random.split(run_key)
        params, opt_state, last = chunk(params, opt_state, key, n, *arrays)
        steps += n
        final_loss = float(last)
        if not math.isfinite(final_loss):
            raise FloatingPointError(f"the training loss is {final_loss} at step {steps}")
        score = validate(params)
        if score > best["valid_ndcg10"]:
            best = {"params": params, "valid_ndcg10": score, "best_step": steps}
            waited = 0
        else:
            waited += 1
    return {**best, "initial": initial, "steps": steps, "final_loss": final_loss}


def fit_lightgbm(lgb, train, valid, seed: int, settings: Settings) -> dict:
    """LightGBM's lambdarank with train.conf's settings, stopped on lodestar's NDCG@10."""

    def flat(data):
        where = np.asarray(data.where)
        return np.asarray(data.features)[where], np.asarray(data.labels)[where], where

    def padded(predictions, where):
        scores = np.zeros(where.shape, np.float32)
        scores[where] = predictions
        return scores

    x_train, y_train, train_where = flat(train)
    x_valid, y_valid, valid_where = flat(valid)
    train_set = lgb.Dataset(x_train, y_train, group=train_where.sum(axis=1), free_raw_data=False)
    valid_set = lgb.Dataset(x_valid, y_valid, group=valid_where.sum(axis=1), reference=train_set)

    def exact_ndcg(predictions, _):
        score = mean_ndcg(padded(predictions, valid_where), valid.labels, valid.where)
        return "exact_ndcg@10", float(score), True

    params = {
        "objective": "lambdarank",
        "metric": "None",  # early stopping reads exact_ndcg@10 alone
        "num_leaves": 31,
        "learning_rate": 0.1,
        "max_bin": 255,
        "bagging_fraction": 0.9,
        "bagging_freq": 1,
        "feature_fraction": 1.0,
        "seed": seed,
        "deterministic": True,
        "force_row_wise": True,
        "verbose": -1,
    }
    rounds = []

    def count(env):
        rounds.append(env.iteration)

    booster = lgb.train(
        params,
        train_set,
        num_boost_round=settings.lightgbm_rounds,
        valid_sets=[valid_set],
        feval=exact_ndcg,
        callbacks=[lgb.early_stopping(settings.lightgbm_patience, verbose=False), count],
    )
    # After early stopping the booster holds the best rounds only: the rounds run
    # are counted by the callback.
    best = booster.best_iteration or booster.current_iteration()
    predict = functools.partial(booster.predict, num_iteration=best)
    return {
        "predict": lambda data: padded(predict(flat(data)[0]), np.asarray(data.where)),
        "valid_ndcg10": float(exact_ndcg(predict(x_valid), None)[1]),
        "best_step": best,
        "steps": len(rounds),
    }


# --------------------------------------------------------------------------- #
# The runs
# --------------------------------------------------------------------------- #


def run(data, settings: Settings, loss_fns: dict, lgb) -> tuple[list, dict]:
    """Every row and seed; returns ``(per-run results, {row: failure})``."""
    train_all, test = data
    splits = {
        seed: split_validation(train_all, settings.validation_share, seed)
        for seed in settings.seeds
    }
    results, failures = [], {}

    def record(row, seed, seconds, scores, **extra):
        result = {"row": row, "seed": seed, "seconds": seconds, **held_out_metrics(scores, test)}
        result.update(extra)
        results.append(result)
        print(
            f"  done {row} seed {seed}: test NDCG@10 {result['test_ndcg10']:.4f} ({seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

    for seed in settings.seeds:
        scores = jax.random.normal(jax.random.key(1000 + seed), test.labels.shape)
        record(RANDOM, seed, 0.0, scores)
    for name, loss in loss_fns.items():
        for seed in settings.seeds:
            start = time.perf_counter()
            try:
                fitted = fit_mlp(loss, *splits[seed], seed, settings)
            except Exception as error:  # noqa: BLE001 - reported, and the run fails
                failures[name] = f"{type(error).__name__}: {error}"
                print(f"  FAILED {name} seed {seed}: {failures[name]}", file=sys.stderr)
                break
            seconds = time.perf_counter() - start
            if not any(r["row"] == UNTRAINED and r["seed"] == seed for r in results):
                record(UNTRAINED, seed, 0.0, apply(fitted["initial"], test.features))
            record(
                name,
                seed,
                seconds,
                apply(fitted["params"], test.features),
                valid_ndcg10=fitted["valid_ndcg10"],
                best_step=fitted["best_step"],
                steps=fitted["steps"],
                final_loss=fitted["final_loss"],
            )
    if lgb is not None:
        for seed in settings.seeds:
            start = time.perf_counter()
            try:
                fitted = fit_lightgbm(lgb, *splits[seed], seed, settings)
            except Exception as error:  # noqa: BLE001 - reported, and the run fails
                failures[LIGHTGBM] = f"{type(error).__name__}: {error}"
                print(f"  FAILED {LIGHTGBM} seed {seed}: {failures[LIGHTGBM]}", file=sys.stderr)
                break
            record(
                LIGHTGBM,
                seed,
                time.perf_counter() - start,
                fitted["predict"](test),
                valid_ndcg10=fitted["valid_ndcg10"],
                best_step=fitted["best_step"],
                steps=fitted["steps"],
            )
    return results, failures


def summarise(results: list) -> list[dict]:
    """Per row, in the order first run: mean and sample standard deviation over seeds."""
    rows = {}
    for result in results:
        rows.setdefault(result["row"], []).append(result)
    summary = []
    for row, runs in rows.items():
        entry = {"row": row, "seeds": len(runs)}
        for field in ("test_ndcg10", "test_ndcg10_linear", "valid_ndcg10", "best_step", "seconds"):
            values = [r[field] for r in runs if field in r]
            if values:
                entry[field] = statistics.fmean(values)
                entry[f"{field}_std"] = statistics.stdev(values) if len(values) > 1 else None
        summary.append(entry)
    return summary


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def _mean_std(entry, field, digits=4) -> str:
    if field not in entry:
        return "-"
    std = entry.get(f"{field}_std")
    shown = "" if std is None else f" ± {std:.{digits}f}"
    return f"{entry[field]:.{digits}f}{shown}"


def print_table(summary: list, settings: Settings) -> None:
    width = max(len(entry["row"]) for entry in summary)
    head = (
        f"{'row':{width}} | {'test NDCG@10 (exp2)':>19} | {'linear gains':>17} | "
        f"{'valid NDCG@10':>13} | {'best step':>9} | {'seconds':>7}"
    )
    print()
    print(
        f"Held-out exact NDCG@10, mean ± sample std over {len(settings.seeds)} seed(s); "
        "the validation NDCG@10 (exp2) chose each run's step."
    )
    print(head)
    print("-" * len(head))
    for entry in summary:
        best = "-" if "best_step" not in entry else f"{entry['best_step']:.0f}"
        seconds = "-" if not entry.get("seconds") else f"{entry['seconds']:.1f}"
        valid = "-" if "valid_ndcg10" not in entry else f"{entry['valid_ndcg10']:.4f}"
        print(
            f"{entry['row']:{width}} | {_mean_std(entry, 'test_ndcg10'):>19} | "
            f"{_mean_std(entry, 'test_ndcg10_linear'):>17} | {valid:>13} | {best:>9} | "
            f"{seconds:>7}"
        )


def main(argv=None) -> int:
    parser = common.base_parser(
        __doc__.split("\n")[0], "a few steps, one seed, the excerpt unless --data (CI smoke test)"
    )
    parser.add_argument(
        "--data",
        metavar="DIR",
        type=Path,
        help="LightGBM's examples/lambdarank folder (rank.train, rank.train.query, rank.test, "
        f"rank.test.query, each plain or .gz); default: the excerpt in {EXCERPT}",
    )
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 (default 3; 1 with --quick)")
    parser.add_argument("--max-steps", type=int, help="Adam steps at most per run")
    parser.add_argument("--hidden", type=int, help="the MLP's hidden units (default 64)")
    parser.add_argument("--learning-rate", type=float, help="Adam's step size (default 1e-3)")
    parser.add_argument("--only", metavar="LOSSES", help="comma-separated losses to run")
    parser.add_argument("--no-lightgbm", action="store_true", help="skip LightGBM's row")
    parser.add_argument("--no-rax", action="store_true", help="skip Rax's rows")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    changes = {
        "seeds": None if args.seeds is None else tuple(range(args.seeds)),
        "max_steps": args.max_steps,
        "hidden": args.hidden,
        "learning_rate": args.learning_rate,
    }
    settings = dataclasses.replace(settings, **{k: v for k, v in changes.items() if v is not None})
    only = None
    if args.only:
        only = {name.strip() for name in args.only.split(",") if name.strip()}
        unknown = {name for name in only - set(every_row()) if not name.startswith("rax ")}
        if unknown:
            parser.error(f"unknown losses {sorted(unknown)}; choose among {every_row()}")

    wall = time.perf_counter()
    folder = args.data if args.data is not None else EXCERPT
    lgb, lgb_status = common.optional_import(
        "lightgbm", "--no-lightgbm" if args.no_lightgbm else None
    )
    lgb_line = f"lightgbm: {common.version('lightgbm') if lgb else lgb_status}"
    data = load(folder)
    source = "the full set" if args.data is not None else "the excerpt that ships with lodestar"
    train, valid = split_validation(data[0], settings.validation_share, settings.seeds[0])
    info = common.machine_info(extra_versions=("optax", "lightgbm"))
    common.print_header(
        "lodestar learning-to-rank benchmark: an MLP per loss, and LightGBM, on LightGBM's "
        "lambdarank example",
        info,
        [
            f"data    : {folder} ({source})",
            f"train   : {describe(train)}",
            f"valid   : {describe(valid)} (seed {settings.seeds[0]}'s split; each seed draws one)",
            f"test    : {describe(data[1])}",
            f"settings: {dataclasses.asdict(settings)}",
            lgb_line,
        ],
        ratios="the NDCG@10 columns; the seconds are for scale",
    )
    if lgb is None:
        print(f"NOTE: LightGBM's row is left out ({lgb_status}); pip install -e '.[bench]'.")
    loss_fns, skipped = loss_rows(only)
    rax, rax_status = common.import_rax(args.no_rax or args.quick)
    if rax is None:
        print(f"NOTE: Rax's rows are left out ({rax_status}).")
    loss_fns.update({k: v for k, v in rax_rows(rax).items() if not only or k in only})
    results, failures = run(data, settings, loss_fns, lgb)
    summary = summarise(results)
    print_table(summary, settings)
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    wall = time.perf_counter() - wall
    print(f"\nwall={wall:.1f}s")
    common.save_json(
        args.json,
        info,
        len(settings.seeds),
        args.quick,
        data={
            "folder": os.fspath(folder),
            "excerpt": args.data is None,
            "train": describe(train),
            "valid": describe(valid),
            "test": describe(data[1]),
        },
        settings=dataclasses.asdict(settings),
        lightgbm=lgb_line,
        results=results,
        summary=summary,
        skipped=skipped,
        failures=failures,
        wall_s=wall,
    )
    if failures:
        common.print_mismatches(
            "Rows that failed:", [f"{name}: {why}" for name, why in failures.items()]
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
