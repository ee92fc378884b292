"""Real learning-to-rank data: LightGBM's lambdarank excerpt loads with its group files and trains.

``tests/data/lambdarank`` holds the first 40 training and 20 test queries of
LightGBM's ``examples/lambdarank`` (its README says how they were cut). Its
document lines carry no ``qid:``: the queries come from the group files
(``rank.train.query``), which is what ``load_svmlight(group=...)`` reads.
"""

import gzip
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lodestar import datasets, losses, metrics

DATA = Path(__file__).resolve().parent / "data" / "lambdarank"
SIZES = {"train": (40, 570), "test": (20, 317)}  # queries, documents
STEPS = 40
HIDDEN = 16
# Measured (40 full-batch Adam steps at 1e-2 from key 0): untrained 0.664,
# random scores 0.687, trained 0.785 with softmax_loss and 0.794 with
# pairwise_logistic_loss, gains of 0.097 and 0.107 over the better of the two.
# The margin is about half the smaller gain.
MARGIN = 0.05


def load(split, **options):
    return datasets.load_svmlight(
        DATA / f"rank.{split}.gz", group=DATA / f"rank.{split}.query", n_features=300, **options
    )


@pytest.fixture(scope="module")
def data():
    train, test = load("train"), load("test")
    width = max(train.labels.shape[1], test.labels.shape[1])
    return load("train", max_list_size=width), load("test", max_list_size=width)


def test_the_excerpt_loads_with_its_group_files(data):
    for split, part in zip(("train", "test"), data, strict=True):
        queries, documents = SIZES[split]
        sizes = np.loadtxt(DATA / f"rank.{split}.query", dtype=int)
        assert part.features.shape[::2] == (queries, 300)
        np.testing.assert_array_equal(part.where.sum(axis=1), sizes)
        assert int(part.where.sum()) == documents
        np.testing.assert_array_equal(part.qids, np.arange(queries))
        labels = part.labels[part.where]
        assert set(np.unique(labels)) == {0, 1, 2, 3, 4}
        # The first document of the file, as its line says.
        with gzip.open(DATA / f"rank.{split}.gz", "rt") as file:
            first = file.readline().split()
        assert float(first[0]) == part.labels[0, 0]
        for token in first[1:]:
            feature, value = token.split(":")
            assert part.features[0, 0, int(feature) - 1] == np.float32(value)
        assert np.count_nonzero(part.features[0, 0]) == len(first) - 1


def test_the_excerpt_with_query_ids_reads_the_same(data, tmp_path):
    # The same lines with qid: (the query's position) read without a group file.
    train = data[0]
    sizes = np.loadtxt(DATA / "rank.train.query", dtype=int)
    with gzip.open(DATA / "rank.train.gz", "rt") as file:
        lines = file.read().splitlines()
    query = np.repeat(np.arange(len(sizes)), sizes)
    with_qids = [
        f"{label} qid:{q} {rest}" for (label, _, rest), q in zip(
            (line.partition(" ") for line in lines), query, strict=True
        )
    ]  # fmt: skip
    path = tmp_path / "rank.train.qid"
    path.write_text("\n".join(with_qids) + "\n")
    again = datasets.load_svmlight(path, n_features=300, max_list_size=train.labels.shape[1])
    for a, b in zip(again, train, strict=True):
        np.testing.assert_array_equal(a, b)


def mean_ndcg(scores, data):
    return float(metrics.ndcg(scores, data.labels, k=10, where=data.where).mean())


@pytest.mark.parametrize("loss", [losses.softmax_loss, losses.pairwise_logistic_loss])
def test_training_on_the_excerpt_improves_held_out_ndcg(data, loss):
    train, test = (jax.tree.map(jnp.asarray, part) for part in data)
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(k1, (300, HIDDEN)) * math.sqrt(2 / 300),
        "b1": jnp.zeros(HIDDEN),
        "w2": jax.random.normal(k2, (HIDDEN,)) / math.sqrt(HIDDEN),
        "b2": jnp.zeros(()),
    }

    def apply(params, features):
        return jax.nn.relu(features @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]

    optimiser = optax.adam(1e-2)

    @jax.jit
    def fit(params, features, labels, where):
        def step(carry, _):
            params, state = carry
            value, grads = jax.value_and_grad(
                lambda p: loss(apply(p, features), labels, where=where)
            )(params)
            updates, state = optimiser.update(grads, state, params)
            return (optax.apply_updates(params, updates), state), value

        (params, _), values = jax.lax.scan(
            step, (params, optimiser.init(params)), None, length=STEPS
        )
        return params, values

    trained, values = fit(params, train.features, train.labels, train.where)
    untrained = mean_ndcg(apply(params, test.features), test)
    random = mean_ndcg(jax.random.normal(jax.random.key(1), test.labels.shape), test)
    after = mean_ndcg(apply(trained, test.features), test)
    assert bool(jnp.all(jnp.isfinite(values))) and values[-1] < values[0]
    assert after > max(untrained, random) + MARGIN, (untrained, random, after)


# -- benchmarks/bench_ltr.py, which trains on the same data --------------------


def test_the_ltr_benchmark_runs_quick_and_reports_every_row(tmp_path, capsys):
    import bench_ltr

    path = tmp_path / "ltr.json"
    status = bench_ltr.main(
        ["--quick", "--only", "softmax_loss,listmle_loss", "--no-lightgbm", "--json", str(path)]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    report = json.loads(path.read_text())
    assert report["data"]["excerpt"] is True and report["failures"] == {}
    assert report["data"]["test"] == "20 queries, 317 documents (<= 23), 300 features"
    rows = [entry["row"] for entry in report["summary"]]
    assert rows == [bench_ltr.RANDOM, bench_ltr.UNTRAINED, "listmle_loss", "softmax_loss"]
    for result in report["results"]:
        assert 0 < result["test_ndcg10"] <= 1 and 0 < result["test_ndcg10_linear"] <= 1
        if result["row"] in ("listmle_loss", "softmax_loss"):
            assert result["steps"] == bench_ltr.QUICK.max_steps
            assert 0 < result["best_step"] <= result["steps"]
    assert "LightGBM's row is left out (disabled (--no-lightgbm))" in out


def test_the_ltr_benchmark_fails_on_a_broken_loss(capsys, monkeypatch):
    import bench_ltr

    def broken(scores, labels, *, where=None):
        return jnp.sum(scores) * jnp.nan

    monkeypatch.setattr(bench_ltr, "loss_rows", lambda only: ({"broken": broken}, {}))
    assert bench_ltr.main(["--quick", "--no-lightgbm"]) == 1
    assert "broken: FloatingPointError: the training loss is nan at step 3" in (
        capsys.readouterr().out
    )


def test_the_ltr_benchmark_rows_are_every_loss_it_can_call(monkeypatch):
    import types

    import bench_ltr

    rows, skipped = bench_ltr.loss_rows(None)
    every_loss = [name for name in losses.__all__ if name.endswith("_loss")]
    composed = [*bench_ltr.LAMBDAWEIGHT_ROWS, *bench_ltr.TRANSFORM_ROWS]
    assert sorted([*rows, *skipped]) == sorted([*every_loss, *composed])
    assert bench_ltr.every_row() == [*every_loss, *composed]
    assert "softmax_loss" in rows and "pairwise_logistic_loss+dcg" in rows
    assert "gumbel_t12n(approx_t12n(ndcg))" in rows

    def needs_more(scores, labels, *, where=None, margin):
        return jnp.sum(scores)

    # A name that is not a loss (a lambda weight) is no row.
    fake = types.SimpleNamespace(
        __all__=["softmax_loss", "needs_more_loss", "dcg_lambdaweight"],
        softmax_loss=losses.softmax_loss,
        needs_more_loss=needs_more,
        dcg_lambdaweight=losses.dcg_lambdaweight,
    )
    monkeypatch.setattr(bench_ltr, "losses", fake)
    rows, skipped = bench_ltr.loss_rows(None)
    assert [name for name in rows if name not in bench_ltr.TRANSFORM_ROWS] == ["softmax_loss"]
    assert skipped == {"needs_more_loss": "needs margin, which this benchmark does not supply"}
