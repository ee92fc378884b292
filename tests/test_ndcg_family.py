"""trec_eval's NDCG family: gain tables, ``ndcg`` with a judged pool, ``ndcg_rel``, ``Rndcg``.

Decision 0017. What tests/test_measures.py does not cover: :class:`GainTable`
and its refusals, NDCG with per-level gains (zero, negative, and level 0 given
a gain, where the ``judged`` mask keeps unjudged documents at gain 0), the
ideal over a judged pool longer than the list, known values of
``ndcg_at_relevant`` and ``ndcg_at_gain_levels``, their tie averages with a
pool and gains against the all-orders oracle, the bound for negative gains in
``ndcg_at_relevant``, and agreement with trec_eval through pytrec_eval-terrier.

Tolerances: 1e-12 against the oracles (float64 on both sides), 1e-9 against
pytrec_eval (double precision, summed in another order).
"""

import math

import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import trec_glue
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar import metrics

TOL = dict(rtol=1e-12, atol=1e-12)
GainTable = metrics.GainTable


# --- GainTable --------------------------------------------------------------------------


def test_gain_table_maps_listed_levels_and_keeps_the_rest():
    table = GainTable({1: 3.5, 2: 9, 0: -1.0})
    assert table(jnp.array([0, 1, 2, 3, 7])).tolist() == [-1.0, 3.5, 9.0, 3.0, 7.0]
    assert table == GainTable({2: 9.0, 1: 3.5, 0: -1})
    assert hash(table) == hash(GainTable({0: -1, 1: 3.5, 2: 9.0}))
    assert repr(table) == "GainTable({0: -1.0, 1: 3.5, 2: 9.0})"
    assert GainTable.parse("1=3.5,2=9,0=-1") == table
    assert GainTable({2.0: 1}).levels == (2,)


@pytest.mark.parametrize(
    "gains",
    [
        [(1, 2.0)],
        {-1: 2.0},
        {1.5: 2.0},
        {True: 2.0},
        {1: float("inf")},
        {1: "2"},
        # Past int64, where no relevance reaches (10**400 is past float64 too).
        {2**63: 2.0},
        {10**400: 2.0},
        {1e300: 2.0},
    ],
)
def test_gain_table_refuses_what_is_not_a_table_of_levels(gains):
    with pytest.raises(ValueError, match="The 'gains' parameter of GainTable must be a mapping"):
        GainTable(gains)


@pytest.mark.parametrize(
    "text",
    ["1", "1=2,1=3", "a=2", "1=x", "1=2,,2=3", "-1=2", "9223372036854775808=2", "9" * 5000 + "=2"],
)
def test_gain_table_parse_refuses_malformed_pairs(text):
    with pytest.raises(ValueError, match="GainTable.parse expects comma-separated level=gain"):
        GainTable.parse(text)
    assert GainTable.parse("9223372036854775807=2").levels == (2**63 - 1,)


# --- trec_eval's ndcg with a judged pool and gain parameters -----------------------------


def trec_ndcg(gains, order, pool_gains, *, k=None):
    """m_ndcg.c (and m_ndcg_cut.c for k): DCG of the run over the ideal of the pool."""
    ideal = sorted((g for g in pool_gains if g > 0), reverse=True)
    ranked = order if k is None else order[:k]
    dcg = sum(gains[i] / math.log2(p + 2) for p, i in enumerate(ranked))
    cut = ideal if k is None else ideal[:k]
    best = sum(g / math.log2(p + 2) for p, g in enumerate(cut))
    return dcg / best if best > 0 else 0.0


TABLES = [
    "linear",
    GainTable({1: 3, 2: 9}),
    GainTable({0: 1, 3: -2}),  # level 0 gains, level 3 loses
    GainTable({1: 0, 2: 5}),  # a relevant level that gains nothing
]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("seed", range(3))
def test_ndcg_with_gains_pool_and_judged_matches_trec_eval_loop(table, seed):
    qrels, run = trec_glue.generate(seed)
    batch = trec_glue.Batch(qrels, run)
    gain = (lambda x: x) if table == "linear" else table
    for k in (None, 3, 10):
        got = metrics.ndcg(
            batch.scores,
            batch.grades,
            k=k,
            gain=table,
            ideal_labels=batch.pool,
            ideal_where=batch.pool_where,
            judged=batch.judged,
            where=batch.where,
        )
        for row, query in enumerate(batch.queries.values()):
            order = list(np.argsort(-query.scores))
            gains = [
                float(gain(g)) if j else 0.0
                for g, j in zip(query.grades, query.judged, strict=True)
            ]
            pool = [float(gain(g)) for g in query.pool]
            assert abs(float(got[row]) - trec_ndcg(gains, order, pool, k=k)) <= 1e-12


def test_ndcg_ideal_ranks_the_whole_pool_without_a_cutoff():
    # Two retrieved, four judged relevant: the ideal ranks all four.
    scores, labels = np.array([2.0, 1.0]), np.array([1.0, 1.0])
    pool = np.array([1.0, 1.0, 1.0, 1.0])
    ideal = sum(1 / math.log2(p + 2) for p in range(4))
    dcg = 1 + 1 / math.log2(3)
    assert float(metrics.ndcg(scores, labels, ideal_labels=pool)) == pytest.approx(dcg / ideal)
    assert float(metrics.ndcg(scores, labels, ideal_labels=pool, k=2)) == pytest.approx(1.0)


def test_a_negative_gain_lowers_the_dcg_never_the_ideal():
    scores, labels = np.array([2.0, 1.0]), np.array([3.0, 1.0])
    got = metrics.ndcg(scores, labels, gain=GainTable({3: -2}))
    # Ideal: the gain-1 item alone; DCG: -2 first, then 1 / log2 3.
    assert float(got) == pytest.approx(-2 + 1 / math.log2(3))


def test_an_unjudged_item_gains_nothing_when_level_0_gains():
    scores, labels = np.array([2.0, 1.0]), np.array([0.0, 0.0])
    judged = np.array([True, False])
    got = metrics.ndcg(scores, labels, gain=GainTable({0: 1}), judged=judged)
    assert float(got) == pytest.approx(1.0)  # the judged one ranks first
    got = metrics.ndcg(scores, labels, gain=GainTable({0: 1}), judged=judged[::-1])
    assert float(got) == pytest.approx(1 / math.log2(3))


# --- ndcg_rel and Rndcg ------------------------------------------------------------------


def test_ndcg_at_gain_levels_known_value():
    # trec_eval's example levels: 5 items of gain 3, 3 of gain 2, 10 of gain 1:
    # NDCG at depths 5, 8 and 18, and once more at the end (40 >= 18 + 2).
    pool = np.array([3.0] * 5 + [2.0] * 3 + [1.0] * 10 + [0.0] * 50)
    rng = np.random.default_rng(0)
    labels = rng.permutation(pool)[:40]
    scores = -np.arange(40.0)
    points = [_ndcg_at(labels, pool, b) for b in (5, 8, 18)]
    expected = np.mean(points + [_ndcg_at(labels, pool, 40, ideal_depth=18)])
    got = metrics.ndcg_at_gain_levels(scores, labels, ideal_labels=pool)
    assert float(got) == pytest.approx(float(expected), rel=1e-12)


def _ndcg_at(labels, pool, depth, *, ideal_depth=None):
    ideal = sorted(pool, reverse=True)[: ideal_depth or depth]
    dcg = sum(g / math.log2(p + 2) for p, g in enumerate(labels[:depth]))
    return dcg / sum(g / math.log2(p + 2) for p, g in enumerate(ideal))


def test_ndcg_at_relevant_known_value_and_a_missed_item():
    # Relevant at ranks 1 and 3, and one more judged but not retrieved: it
    # scores the final NDCG.
    scores, labels = np.array([3.0, 2.0, 1.0]), np.array([1.0, 0.0, 1.0])
    pool = np.array([1.0, 1.0, 1.0])
    ideal = np.cumsum([1 / math.log2(p + 2) for p in range(3)])
    dcg = [1.0, 1.0, 1.5]
    expected = (dcg[0] / ideal[0] + dcg[2] / ideal[2] + dcg[2] / ideal[2]) / 3
    got = metrics.ndcg_at_relevant(scores, labels, ideal_labels=pool)
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_ndcg_at_gain_levels_is_zero_without_relevant_items():
    scores, labels = np.array([2.0, 1.0]), np.array([0.0, 0.0])
    got = metrics.ndcg_at_gain_levels(scores, labels, gain=GainTable({0: 1}), num_relevant=0.0)
    assert float(got) == 0.0
    with_relevant = metrics.ndcg_at_gain_levels(
        scores, labels, gain=GainTable({0: 1}), ideal_labels=np.array([0.0, 0.0, 1.0])
    )
    assert float(with_relevant) > 0


small_labels = st.lists(st.integers(0, 3), min_size=1, max_size=6)


def python_gain(table):
    """``table``'s gain of one label, in plain Python for the oracles' inner loops.

    trec_eval's gain_init.c: a listed level gains its gain, any other label
    its own value. (Calling the table itself there would run a JAX
    operation per label of each of up to 720 orders.) Checked against the
    table on every level the tests draw.
    """
    gains = dict(zip(table.levels, table.gains, strict=True))
    for level in range(4):
        assert gains.get(level, level) == float(table(jnp.asarray(float(level))))
    return lambda label: float(gains.get(int(label), label))


@settings(max_examples=2 * settings.default.max_examples)
@given(labels=small_labels, data=st.data())
def test_pool_judged_and_gains_match_the_oracle_over_every_order(labels, data):
    n = len(labels)
    scores = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    labels = np.array(labels, float)
    judged = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    extra = data.draw(st.lists(st.integers(0, 3), max_size=3))
    pool = np.concatenate([labels[judged], np.array(extra, float)])
    table = data.draw(st.sampled_from(TABLES[1:]))
    gain = python_gain(table)
    common = dict(gain=gain, ideal_labels=pool, judged=judged)
    # Padded to fixed widths: one compilation serves every example.
    wide_scores, wide_labels, wide_judged, where = trec_glue.padded(6, scores, labels, judged)
    wide_pool, pool_where = trec_glue.padded(9, pool)
    for k in (None, 2, 4):
        rel = oracles.tie_average(oracles.ndcg_rel_of_order, scores, labels, k=k, **common)
        rnd = oracles.tie_average(oracles.rndcg_of_order, scores, labels, k=k, **common)
        options = dict(
            k=k,
            gain=table,
            ideal_labels=wide_pool,
            ideal_where=pool_where,
            judged=wide_judged,
            where=where,
        )
        got_rel = metrics.ndcg_at_relevant(wide_scores, wide_labels, **options)
        got_rnd = metrics.ndcg_at_gain_levels(wide_scores, wide_labels, **options)
        if not any(g < 0 for g in table.gains):
            np.testing.assert_allclose(got_rel, rel, **TOL)
        np.testing.assert_allclose(got_rnd, rnd, **TOL)


def _rel_sum(labels, order, *, gain, part=None, pool):
    """m_ndcg_rel.c's sum S before its clamp, with only positive (or negative) gains in DCG."""
    gains = [gain(float(x)) for x in labels]
    ideal = sorted((g for g in (gain(float(x)) for x in pool) if g > 0), reverse=True)
    total = dcg = 0.0
    found = 0
    ideal_running = np.cumsum([g / math.log2(p + 2) for p, g in enumerate(ideal)])
    for position, index in enumerate(order):
        g = gains[index]
        if part is None or (g > 0) == (part > 0):
            dcg += g / math.log2(position + 2)
        if g > 0:
            total += dcg / ideal_running[min(position, len(ideal) - 1)]
            found += 1
    return total + (len(ideal) - found) * dcg / ideal_running[-1]


def test_negative_gains_in_ndcg_at_relevant_stay_within_the_stated_bound():
    # S can change sign across tie orders; lodestar returns max(E[S], 0) / P,
    # within min(E[S+], E[S-]) / P of the tie average of max(S, 0) / P.
    table = GainTable({1: -4, 2: 1})
    gain = python_gain(table)
    rng = np.random.default_rng(2)
    differ = 0
    for _ in range(40):
        n = int(rng.integers(2, 7))
        scores = rng.choice([0.0, 1.0], n)
        labels = rng.integers(0, 3, n).astype(float)
        if not (labels == 2).any():
            continue
        size = sum(gain(x) > 0 for x in labels)

        def average(part, scores=scores, labels=labels):
            return oracles.tie_average(_rel_sum, scores, labels, gain=gain, part=part, pool=labels)

        expected = oracles.tie_average(oracles.ndcg_rel_of_order, scores, labels, gain=gain)
        wide_scores, wide_labels, where = trec_glue.padded(6, scores, labels)
        got = float(metrics.ndcg_at_relevant(wide_scores, wide_labels, gain=table, where=where))
        assert got == pytest.approx(max(average(None), 0) / size, abs=1e-12)
        bound = min(average(1), -average(-1)) / size
        assert abs(got - expected) <= bound + 1e-12
        differ += abs(got - expected) > 1e-9
    assert differ > 0


def test_refusals():
    scores, labels = np.zeros(3), np.ones(3)
    for function in (metrics.ndcg, metrics.ndcg_at_relevant, metrics.ndcg_at_gain_levels):
        name = function.__name__
        with pytest.raises(ValueError, match=f"{name} expects `judged` to be a boolean mask; got"):
            function(scores, labels, judged=np.ones(3))
        with pytest.raises(
            ValueError, match=f"{name} expects `judged` of the same shape as scores"
        ):
            function(scores, labels, judged=np.ones(4, bool))
        with pytest.raises(ValueError, match="The 'gain' parameter"):
            function(scores, labels, gain="cubic")
        with pytest.raises(ValueError, match="ideal_labels only for unpacked lists"):
            function(scores, labels, ideal_labels=labels, segments=np.zeros(3, int))
        with pytest.raises(ValueError, match="ideal_where without ideal_labels"):
            function(scores, labels, ideal_where=np.ones(3, bool))
        with pytest.raises(ValueError, match="The 'k' parameter"):
            function(scores, labels, k=0)
        with pytest.raises(ValueError, match="negative labels"):
            function(scores, -labels)
    with pytest.raises(ValueError, match="num_relevant of shape"):
        metrics.ndcg_at_gain_levels(np.zeros((2, 3)), np.ones((2, 3)), num_relevant=np.ones(3))


# --- agreement with trec_eval -------------------------------------------------------------

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_pytrec_eval(seed):
    qrels, run = trec_glue.generate(seed)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_rel", "Rndcg"})
    reference = evaluator.evaluate(run)
    batch = trec_glue.Batch(qrels, run)
    common = dict(
        ideal_labels=batch.pool,
        ideal_where=batch.pool_where,
        judged=batch.judged,
        where=batch.where,
    )
    ours = {
        "ndcg": metrics.ndcg(batch.scores, batch.grades, **common),
        "ndcg_rel": metrics.ndcg_at_relevant(batch.scores, batch.grades, **common),
        "Rndcg": metrics.ndcg_at_gain_levels(
            batch.scores, batch.grades, num_relevant=batch.num_relevant, **common
        ),
    }
    for row, qid in enumerate(batch.qids):
        for name, values in ours.items():
            assert abs(float(values[row]) - reference[qid][name]) <= 1e-9, (qid, name)
