"""Interpolated precision (``iprec_at_recall``) and its mean (``11pt_avg``): decision 0017.

What tests/test_measures.py does not cover: known values, trec_eval's
rounding of the recall level, several levels at once, every refusal, the
bracketing grid's error bound against the all-orders oracle, and agreement
with trec_eval through pytrec_eval-terrier (and with a trec_eval 10 binary
when ``TREC_EVAL`` names one).

Tolerances: float64 values against the oracle and trec_eval 1e-12 and 1e-9
(both sides compute in double precision); the grid within its bound
``1 / (2 grid)`` plus 1e-12.
"""

import functools
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import trec_glue
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar import metrics
from lodestar.metrics import _interpolated, _kernel

TOL = dict(rtol=1e-12, atol=1e-12)
LEVELS = list(_interpolated.ELEVEN_POINTS)


def test_known_values():
    # Relevant at ranks 2, 4 and 5 of 6: precision 1/2, 2/4, 3/5 there.
    scores = -np.arange(6.0)
    labels = np.array([0, 1, 0, 1, 1, 0])
    got = metrics.interpolated_precision(scores, labels, recall=LEVELS)
    # lround(x * 3): 0 for x < 0.2, 1 up to 0.4, 2 up to 0.8, then 3.
    np.testing.assert_allclose(got, [0.6] * 11, **TOL)
    got = metrics.interpolated_precision(scores, labels, recall=[0.0, 0.5, 1.0], k=4)
    # Cut at 4: the third relevant item is not ranked, and 3/5 is gone.
    np.testing.assert_allclose(got, [0.5, 0.5, 0.0], **TOL)
    assert float(metrics.eleven_point_average(scores, labels)) == pytest.approx(0.6)


def test_level_becomes_a_count_by_rounding_half_away_from_zero():
    # R = 5: level 0.1 is 0.5 items, rounded up to the first; 0.3 is 1.5, the second.
    scores = -np.arange(10.0)
    labels = np.array([0, 1, 0, 0, 1, 0, 0, 0, 0, 0])
    one = metrics.interpolated_precision(scores, labels, recall=0.1, num_relevant=5.0)
    two = metrics.interpolated_precision(scores, labels, recall=0.3, num_relevant=5.0)
    assert float(one) == pytest.approx(1 / 2)
    assert float(two) == pytest.approx(2 / 5)
    # 0.05 * 5 = 0.25 rounds to 0: the best precision anywhere.
    zero = metrics.interpolated_precision(scores, labels, recall=0.05, num_relevant=5.0)
    assert float(zero) == pytest.approx(1 / 2)
    # Level 1.0 needs all 5 relevant items ranked; only 2 are.
    assert float(metrics.interpolated_precision(scores, labels, recall=1.0, num_relevant=5.0)) == 0


def test_ties_are_averaged_over_every_order():
    # The docstring's example: first two tied, the first relevant item is first half the time.
    scores = np.array([2.0, 2.0, 1.0])
    labels = np.array([0, 1, 1])
    got = metrics.interpolated_precision(scores, labels, recall=[0.0, 1.0])
    np.testing.assert_allclose(got, [(1 + 2 / 3) / 2, 2 / 3], **TOL)


def test_shapes_one_level_and_several():
    rng = np.random.default_rng(3)
    scores = np.round(rng.random((2, 3, 9)), 1)
    labels = rng.integers(0, 2, (2, 3, 9))
    assert metrics.interpolated_precision(scores, labels, recall=0.5).shape == (2, 3)
    several = metrics.interpolated_precision(scores, labels, recall=(0.0, 0.5))
    assert several.shape == (2, 3, 2)
    np.testing.assert_array_equal(
        several[..., 1], metrics.interpolated_precision(scores, labels, recall=0.5)
    )
    mean = metrics.eleven_point_average(scores, labels, recall=(0.0, 0.5, 0.5))
    np.testing.assert_allclose(mean, (several[..., 0] + 2 * several[..., 1]) / 3, **TOL)


@settings(max_examples=40)
@given(
    scores=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=1, max_size=7),
    data=st.data(),
)
def test_eleven_point_average_with_levels_and_num_relevant_matches_the_oracle(scores, data):
    n = len(scores)
    labels = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), float)
    # Three levels and 7 slots whatever the example: one compilation serves all.
    levels = tuple(
        data.draw(st.lists(st.sampled_from(LEVELS + [0.35, 0.65]), min_size=3, max_size=3))
    )
    extra = data.draw(st.integers(0, 3))
    total = np.float64(np.count_nonzero(labels) + extra)
    wide_scores, wide_labels, where = trec_glue.padded(7, np.array(scores), labels)
    for k in (None, 1, 3):
        expected = oracles.tie_average(
            oracles.eleven_pt_of_order, scores, labels, k=k, recall=levels, num_relevant=total
        )
        got = metrics.eleven_point_average(
            wide_scores, wide_labels, recall=levels, k=k, num_relevant=total, where=where
        )
        np.testing.assert_allclose(got, expected, **TOL)


def _grid_formula(grid):
    compute = functools.partial(
        _interpolated._interpolated_precision, exact_limit=-1, grid=grid, chunk=4
    )
    return _kernel.Formula(f"grid_{grid}", compute)


def _bracketed(formula, scores, labels, level, k=None, where=None):
    return _kernel.evaluate_formula(
        formula,
        scores,
        labels,
        caller="t",
        k=k,
        ignore_ties=False,
        where=where,
        options={"recall": level},
    )


@pytest.mark.parametrize("grid", [8, 64])
def test_the_grid_stays_within_its_bound_of_the_exact_value(grid):
    # Every list bracketed on q / grid: within 1 / (2 grid) of the all-orders mean,
    # and the bound is not vacuous (some values differ).
    formula, bound = _grid_formula(grid), 1 / (2 * grid)
    rng = np.random.default_rng(grid)
    differ = 0
    for _ in range(60):
        n = int(rng.integers(2, 8))
        scores = rng.choice([0.0, 0.5, 1.0], n)
        labels = rng.integers(0, 2, n).astype(float)
        for level in (0.0, 0.5, 1.0):
            for k in (None, 3):
                expected = oracles.tie_average(
                    oracles.iprec_of_order, scores, labels, k=k, recall=level
                )
                padded = trec_glue.padded(8, scores, labels)
                got = float(_bracketed(formula, *padded[:2], level, k, where=padded[2]))
                assert abs(got - expected) <= bound + 1e-12
                differ += abs(got - expected) > 1e-9
    assert differ > 0


def test_large_blocks_take_the_grid_within_its_bound():
    # 60 items in blocks of 20: too many reachable precisions for the exact walk
    # at the default limit; the exact walk (no limit) is the reference.
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 3, (4, 60)).astype(float)
    labels = (rng.random((4, 60)) < 0.3).astype(float)
    exact = _kernel.Formula(
        "exact",
        functools.partial(_interpolated._interpolated_precision, exact_limit=10**9),
    )
    for level in (0.2, 0.7):
        walked = _bracketed(exact, scores, labels, level)
        got = metrics.interpolated_precision(scores, labels, recall=level)
        np.testing.assert_allclose(got, walked, rtol=0, atol=1 / (2 * _interpolated.GRID))


def _tiled(tile, **engine):
    compute = functools.partial(_interpolated._interpolated_precision, tile=tile, **engine)
    return _kernel.Formula(f"tile_{tile}", compute)


@pytest.mark.parametrize("tile", [1, 2, 3, 7])
def test_tiles_of_any_width_give_the_same_values(tile):
    # The lattice's packed states are stepped tile by tile, each reading its
    # left neighbour's last slot: tiles of 1, 2, 3 and 7 slots cut blocks at
    # every place, and must give the one-tile values: exactly where XLA
    # emits no fused multiply-adds (the default tier's unoptimised
    # compilation, or --xla_cpu_max_isa=SSE4_2). With them, as compiled for
    # users on AVX2, LLVM contracts each tile width's arithmetic its own way:
    # one-slot tiles moved 6 values of 144 by 1 to 8 ulp, hence 1e-14. A
    # tiling error moves a value by a precision step, 1/70 here.
    rng = np.random.default_rng(tile)
    scores = rng.integers(0, 4, (3, 70)).astype(float)
    labels = (rng.random((3, 70)) < 0.3).astype(float)
    for engine in ({}, {"exact_limit": -1, "chunk": 4}):
        whole = _tiled(_interpolated.TILE, **engine)
        for level in (0.0, 0.3, 1.0):
            for k in (None, 25):
                expected = _bracketed(whole, scores, labels, level, k)
                got = _bracketed(_tiled(tile, **engine), scores, labels, level, k)
                np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)


def test_two_slot_tiles_match_the_oracle_over_every_order():
    rng = np.random.default_rng(11)
    exact = _tiled(2, exact_limit=10**9)
    for _ in range(30):
        n = int(rng.integers(2, 8))
        scores = rng.choice([0.0, 0.5, 1.0], n)
        labels = rng.integers(0, 2, n).astype(float)
        for level in (0.0, 0.5, 1.0):
            expected = oracles.tie_average(oracles.iprec_of_order, scores, labels, recall=level)
            got = float(_bracketed(exact, scores, labels, level))
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def _packed_slots(lists, k, *, recall):
    blocks = _interpolated._Blocks(lists)
    cut = jnp.minimum(jnp.asarray(k, blocks.real.dtype), blocks.real)
    level = _interpolated._Level(blocks, cut, jnp.ones_like(blocks.real), lists.dtype)
    return _interpolated._Lattice(level, _interpolated.TILE).used.astype(lists.dtype)


def test_the_lattice_holds_one_state_per_relevant_item_of_a_random_block():
    # The programme's work per step is the packed states, sum over the blocks
    # holding both kinds of (r + 1): 151 for 3,000 tied items of which 150
    # are relevant (the work is O(m r), not O(m n)). Blocks of one kind, and
    # items past the cut, hold none.
    probe = _kernel.Formula("packed_slots", _packed_slots)
    labels = np.zeros((3, 3000))
    labels[[0, 2], :150] = 1
    labels[1, 0:300:2] = 1
    scores = np.zeros((3, 3000))
    scores[1, :100] = 1.0  # two random blocks: 50 of 100 relevant, then 100 of 2,900
    scores[2, :10] = 1.0  # 10 relevant alone, then 140 relevant among 2,990
    got = _bracketed(probe, scores, labels, 0.5)
    np.testing.assert_array_equal(got, [151, 51 + 101, 141])
    # Cut after the first block of the second list: nothing random before it.
    np.testing.assert_array_equal(_bracketed(probe, scores[2:], labels[2:], 0.5, k=10), [0])


def test_float32_without_x64_agrees():
    rng = np.random.default_rng(5)
    scores = np.round(rng.random((3, 30)), 1).astype(np.float32)
    labels = (rng.random((3, 30)) < 0.4).astype(np.float32)
    expected = metrics.interpolated_precision(scores.astype(np.float64), labels, recall=LEVELS)
    with jax.enable_x64(False):
        got = metrics.interpolated_precision(scores, labels, recall=LEVELS)
        assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


# --- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("recall", [-0.1, 1.5, float("nan"), True, "0.5", [], [0.2, 2.0], None])
def test_refuses_a_bad_recall_level(recall):
    with pytest.raises(ValueError, match="The 'recall' parameter of interpolated_precision"):
        metrics.interpolated_precision(np.zeros(3), np.ones(3), recall=recall)
    with pytest.raises(ValueError, match="The 'recall' parameter of eleven_point_average"):
        metrics.eleven_point_average(np.zeros(3), np.ones(3), recall=recall)


def test_refuses_a_bad_cutoff_and_bad_counts():
    with pytest.raises(ValueError, match="The 'k' parameter of interpolated_precision"):
        metrics.interpolated_precision(np.zeros(3), np.ones(3), recall=0.5, k=0)
    with pytest.raises(ValueError, match="num_relevant of shape"):
        metrics.eleven_point_average(np.zeros((2, 3)), np.ones((2, 3)), num_relevant=np.ones(3))
    with pytest.raises(ValueError, match="num_relevant below"):
        metrics.eleven_point_average(np.zeros(3), np.ones(3), num_relevant=np.float64(2))
    with pytest.raises(ValueError, match="negative labels"):
        metrics.interpolated_precision(np.zeros(3), -np.ones(3), recall=0.5)


def test_refuses_scores_and_labels_of_different_shapes():
    with pytest.raises(ValueError, match="same shape"):
        metrics.interpolated_precision(np.zeros(3), np.ones(4), recall=0.5)


# --- agreement with trec_eval -----------------------------------------------------------


def _lround(x):
    return int(np.floor(x) + (x - np.floor(x) >= 0.5))


pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_pytrec_eval(seed):
    # pytrec_eval-terrier is built on trec_eval 9, which turns a level into a
    # count as (long)(x * R + 0.9) where trec_eval 10 uses lround(x * R); the
    # levels where the two counts differ are compared with the oracle, which
    # follows trec_eval 10 (the binary test below checks that).
    qrels, run = trec_glue.generate(seed)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall", "11pt_avg"})
    reference = evaluator.evaluate(run)
    batch = trec_glue.Batch(qrels, run)
    common = dict(num_relevant=batch.num_relevant, where=batch.where)
    got = metrics.interpolated_precision(batch.scores, batch.relevant, recall=LEVELS, **common)
    means = metrics.eleven_point_average(batch.scores, batch.relevant, **common)
    compared = 0
    for row, (qid, query) in enumerate(batch.queries.items()):
        same_counts = True
        for level, value in zip(LEVELS, np.asarray(got[row]), strict=True):
            count = level * query.num_relevant
            if _lround(count) == int(count + 0.9):
                theirs = reference[qid][f"iprec_at_recall_{level:.2f}"]
                assert abs(value - theirs) <= 1e-9, (qid, level)
                compared += 1
            else:
                same_counts = False
                order = list(np.argsort(-query.scores))
                ours = oracles.iprec_of_order(
                    query.relevant, order, recall=level, num_relevant=query.num_relevant
                )
                assert abs(value - ours) <= 1e-12
        if same_counts:
            assert abs(float(means[row]) - reference[qid]["11pt_avg"]) <= 1e-9
    assert compared > 30  # most levels count alike in trec_eval 9 and 10


def _run_trec_eval(binary, tmp_path, qrels, run, *args):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    run_path.write_text(
        "".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, docs in run.items() for d, s in docs.items())
    )
    out = subprocess.run(
        [binary, "-q", *args, str(qrels_path), str(run_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    values = {}
    for line in out.splitlines():
        name, qid, value = line.split()
        values.setdefault(qid, {})[name] = float(value)
    return values


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("cut", [None, 7])
def test_agrees_with_a_trec_eval_binary(tmp_path, seed, cut):
    # trec_eval prints 4 decimals: agreement to 5e-5.
    binary = trec_glue.trec_eval_binary()
    qrels, run = trec_glue.generate(seed)
    extra = () if cut is None else ("-M", str(cut))
    reference = _run_trec_eval(
        binary, tmp_path, qrels, run, *extra, "-m", "iprec_at_recall", "-m", "11pt_avg"
    )
    batch = trec_glue.Batch(qrels, run)
    common = dict(k=cut, num_relevant=batch.num_relevant, where=batch.where)
    got = metrics.interpolated_precision(batch.scores, batch.relevant, recall=LEVELS, **common)
    means = metrics.eleven_point_average(batch.scores, batch.relevant, **common)
    for row, qid in enumerate(batch.qids):
        for level, value in zip(LEVELS, np.asarray(got[row]), strict=True):
            assert abs(value - reference[qid][f"iprec_at_recall_{level:.2f}"]) <= 5e-5
        mean = means[row]
        assert abs(float(mean) - reference[qid]["11pt_avg"]) <= 5e-5
