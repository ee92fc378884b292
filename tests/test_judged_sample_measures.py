"""bpref, gm_bpref, infAP, binG and G: known values, ties with context, refusals, trec_eval.

The registry's invariance tests (tests/test_measures.py) check these measures
without context; here they are checked with trec_eval's context (``judged``,
``pooled``, ``num_relevant``, ``num_judged_nonrelevant``, ``ideal_labels``)
against the oracles over every tie order, and against pytrec_eval-terrier on
generated runs. G's pooled subset sums are checked against an exact reference
within the bound its docstring states.

Tolerances: float64 against the oracles, ``1e-12`` (round-off only). Against
pytrec_eval, ``1e-9`` absolute per query (both sides in float64; scores are
distinct in float32, so the order is the same whatever the precision).
"""

import functools
import math
import subprocess
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import tiers
import trec_glue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lodestar import InvalidParameterError, metrics
from lodestar.metrics import _kernel, _normalized_gain

TOL = dict(rtol=1e-12, atol=1e-12)
TREC_TOLERANCE = 1e-9


# --- known values ------------------------------------------------------------------------


def test_bpref_counts_unretrieved_judged_documents_as_trec_eval_8_does():
    # trec_eval's bpref_bug note: five judged documents retrieved, one
    # non-relevant then four relevant; 3 judged non-relevant and 2 relevant
    # not retrieved. bpref = (4 * (3/4) + 2 * 0) / 6 = 0.5.
    scores = -jnp.arange(5.0)
    labels = jnp.array([0, 1, 1, 1, 1])
    got = metrics.bpref(scores, labels, num_relevant=6, num_judged_nonrelevant=4)
    np.testing.assert_allclose(got, 0.5, **TOL)
    # Without the qrels counts only the retrieved documents count: 1 - 1/1 each.
    np.testing.assert_allclose(metrics.bpref(scores, labels), 0.0, **TOL)


def test_bpref_skips_unjudged_items_and_caps_at_r():
    # rel, unjudged, nonrel, nonrel, rel: the second relevant item has two
    # non-relevant above, capped at R = 2 over min(N, R) = 2.
    labels = jnp.array([1, 0, 0, 0, 1])
    judged = jnp.array([True, False, True, True, True])
    got = metrics.bpref(-jnp.arange(5.0), labels, judged=judged)
    np.testing.assert_allclose(got, (1 + 0) / 2, **TOL)
    # Labelled 0 but judged, the same item would count as a third non-relevant.
    got = metrics.bpref(-jnp.arange(5.0), labels, num_judged_nonrelevant=5)
    np.testing.assert_allclose(got, (1 + (1 - 2 / 2)) / 2, **TOL)


def test_bpref_of_a_tied_block_is_uniform_in_the_non_relevant_block_mates():
    # One relevant item tied with b judged non-relevant items and c unjudged
    # ones: v ~ uniform{0..b}, whatever c. With R = 1 the term is 1 - min(v, 1).
    for b, c in [(1, 0), (3, 0), (3, 5), (0, 4)]:
        labels = np.array([1] + [0] * (b + c))
        judged = np.array([True] * (1 + b) + [False] * c)
        got = metrics.bpref(np.zeros(1 + b + c), labels, judged=judged)
        np.testing.assert_allclose(got, 1 / (b + 1), **TOL)


def test_bpref_of_a_block_straddling_k():
    # rel + nonrel tied at the top of a list cut at k = 1: the relevant item is
    # read only when first (probability 1/2), and then scores 1.
    got = metrics.bpref(jnp.array([1.0, 1.0, 0.0]), jnp.array([1, 0, 1]), k=1)
    np.testing.assert_allclose(got, 0.5 / 2, **TOL)


def test_infap_is_average_precision_when_everything_is_judged():
    rng = np.random.default_rng(3)
    scores = rng.random((20, 12))
    labels = (rng.random((20, 12)) < 0.3).astype(np.float64)
    labels[0] = 0
    got = metrics.inferred_average_precision(scores, labels)
    # AP with precision (R + eps) / (R + N + 2 eps) instead of R / (R + N).
    np.testing.assert_allclose(got, metrics.average_precision(scores, labels), atol=1e-5)
    for s, y, value in zip(scores, labels, got, strict=True):
        expected = oracles.infap_of_order(y, oracles.descending_index_order(s))
        np.testing.assert_allclose(value, expected, **TOL)


def test_infap_reads_items_outside_the_pool_as_non_relevant_and_skips_unjudged_ones():
    scores, labels = -jnp.arange(3.0), jnp.array([1, 0, 1])
    judged = jnp.array([True, False, True])
    eps = 1e-5
    third = 1 / 3 + (2 / 3) * (2 / 2) * ((1 + eps) / (1 + 2 * eps))
    pooled = jnp.ones(3, bool)
    got = metrics.inferred_average_precision(scores, labels, judged=judged, pooled=pooled)
    np.testing.assert_allclose(got, (1 + third) / 2, **TOL)
    # Outside the pool: a plain non-relevant item above the third.
    outside = 1 / 3 + (2 / 3) * (1 / 2) * ((1 + eps) / (1 + 2 * eps))
    got = metrics.inferred_average_precision(scores, labels, judged=judged)
    np.testing.assert_allclose(got, (1 + outside) / 2, **TOL)


def test_binary_normalized_gain_known_values():
    labels = jnp.array([0, 1, 0, 0, 1])
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / 3
    got = metrics.binary_normalized_gain(-jnp.arange(5.0), labels, num_relevant=3)
    np.testing.assert_allclose(got, expected, **TOL)
    # Unjudged items are non-relevant here (bpref would skip them).
    judged = jnp.array([True, True, False, False, True])
    got = metrics.binary_normalized_gain(-jnp.arange(5.0), labels, judged=judged)
    np.testing.assert_allclose(got, (1 / math.log2(3) + 1 / math.log2(5)) / 2, **TOL)


def test_normalized_gain_known_values():
    # Gains 1, 0, 3 retrieved; ideal 3, 1, 0: costs 3, 4, 5.
    scores, labels = -jnp.arange(3.0), jnp.array([1, 0, 3])
    expected = (1 / math.log2(2 + 3 - 1) + 3 / math.log2(2 + 5 - 4)) / 4
    np.testing.assert_allclose(metrics.normalized_gain(scores, labels), expected, **TOL)
    # An unretrieved judged item of level 2 enters the ideal and its total.
    ideal = jnp.array([1, 0, 3, 2])
    expected = (1 / math.log2(2 + 3 - 1) + 3 / math.log2(2 + 6 - 4)) / 6
    got = metrics.normalized_gain(scores, labels, ideal_labels=ideal)
    np.testing.assert_allclose(got, expected, **TOL)
    # trec_eval's G.1=3.5,3=9 as a gain table: ideal 9, 3.5, 0, costs 9, 12.5, 13.5.
    table = {0: 0.0, 1: 3.5, 3: 9.0}

    def gain(levels):
        return jnp.select([levels == level for level in table], list(table.values()), levels)

    expected = (3.5 / math.log2(2 + 9 - 3.5) + 9 / math.log2(2 + 13.5 - 12.5)) / 12.5
    np.testing.assert_allclose(metrics.normalized_gain(scores, labels, gain=gain), expected, **TOL)


def test_normalized_gain_of_the_ideal_ranking_is_one():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 4, (30, 9)).astype(np.float64)
    labels[:, 0] = 1
    got = metrics.normalized_gain(labels + rng.random((30, 9)) * 0.1, labels)
    np.testing.assert_allclose(got, 1.0, **TOL)
    assert np.all(metrics.normalized_gain(-labels, labels) < 1)


def test_normalized_gain_of_gains_past_what_the_dtype_holds_is_nan():
    # G's slack is a difference of sums of gains; past 2 / eps their rounding
    # outgrows the costs of 1 it counts (labels 2**60 and 1 gave a slack of -1
    # and G = inf, or a plausible value by luck). No value, not a plausible one.
    scores = np.array([[1.0, 0.5], [0.5, 1.0], [1.0, 0.5]])
    labels = np.array([[2.0**60, 1.0], [2.0**60, 1.0], [2.0**40, 1.0]])
    got = np.asarray(metrics.normalized_gain(scores, labels))
    assert np.isnan(got[:2]).all(), got
    assert float(got[2]) == pytest.approx(1.0, rel=1e-12)  # 2**40 is held exactly
    exp2 = metrics.normalized_gain(scores[:1], np.array([[100.0, 1.0]]), gain="exp2")
    assert np.isnan(np.asarray(exp2)).all()
    with jax.enable_x64(False):
        single = metrics.normalized_gain(scores[:1], np.array([[2.0**25, 1.0]], np.float32))
        assert np.isnan(np.asarray(single)).all()  # 2**24 in float32


# --- ties with trec_eval's context, against the oracles ----------------------------------
# Every list is padded to WIDTH items (and the ideal to IDEAL_WIDTH), so each
# measure compiles once per tie rule however many examples run: padding
# changes nothing (tests/test_measures.py).

WIDTH, IDEAL_WIDTH = 7, 9
tied_scores = st.sampled_from([0.0, 0.5, 0.5, 1.0, 1.0, -2.0])
levels = st.integers(0, 3)


@st.composite
def judged_lists(draw, max_n=WIDTH, labels=levels):
    n = draw(st.integers(1, max_n))
    scores = np.array(draw(st.lists(tied_scores, min_size=n, max_size=n)))
    labels = np.array(draw(st.lists(labels, min_size=n, max_size=n)), np.float64)
    judged = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    pooled = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    extra = draw(st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 3)))
    return scores, labels, judged, pooled, extra


def pad(values, width=WIDTH):
    """``values`` padded with zeros (False) to ``width``, and the mask of the real ones."""
    values = np.asarray(values)
    padded = np.zeros(width, values.dtype)
    padded[: len(values)] = values
    return padded, np.arange(width) < len(values)


def _context(measure, labels, judged, pooled, extra):
    """(lodestar keywords on padded lists, oracle keywords) for one measure."""
    relevant = int(np.sum((labels != 0) & judged)) + extra[1]
    nonrelevant = int(np.sum((labels == 0) & judged)) + extra[2]
    if measure == "bpref":
        theirs = dict(judged=judged, num_relevant=relevant, num_judged_nonrelevant=nonrelevant)
    elif measure == "infap":
        theirs = dict(judged=judged, pooled=pooled, num_relevant=relevant)
    elif measure == "bing":
        theirs = dict(judged=judged, num_relevant=relevant)
    else:
        theirs = dict(judged=judged, ideal_labels=np.concatenate([labels[judged], extra[1:]]))
    ours = {}
    for name, value in theirs.items():
        if name.startswith("num_"):
            ours[name] = np.float64(value)
        elif name == "ideal_labels":
            ours["ideal_labels"], ours["ideal_where"] = pad(value, IDEAL_WIDTH)
        else:
            ours[name] = pad(value)[0]
    return ours, theirs


MEASURES = {
    "bpref": (metrics.bpref, oracles.bpref_of_order),
    "infap": (metrics.inferred_average_precision, oracles.infap_of_order),
    "bing": (metrics.binary_normalized_gain, oracles.bing_of_order),
    "g": (metrics.normalized_gain, oracles.g_of_order),
}


def on_both_routes(**options):
    """Hypothesis settings for a test taking the ``route`` fixture (one route per test)."""
    suppressed = [*settings.default.suppress_health_check, HealthCheck.function_scoped_fixture]
    return settings(suppress_health_check=suppressed, **options)


@pytest.mark.parametrize("measure", list(MEASURES))
@on_both_routes(max_examples=30)
@given(case=judged_lists())
def test_context_and_ties_agree_with_the_oracle_over_every_order(measure, case, route):
    scores, labels, judged, pooled, extra = case
    function, oracle = MEASURES[measure]
    ours, theirs = _context(measure, labels, judged, pooled, extra)
    (padded_scores, where), padded_labels = pad(scores), pad(labels)[0]
    for k in (None, 1, 2, 4):
        for ignore_ties, reference in ((False, oracles.tie_average), (True, oracles.ignoring_ties)):
            expected = reference(oracle, scores, labels, k=k, **theirs)
            got = function(
                padded_scores, padded_labels, k=k, ignore_ties=ignore_ties, where=where, **ours
            )
            np.testing.assert_allclose(got, expected, **TOL)


def shifted_gain(labels):
    """A gain that is negative for low labels, as trec_eval's G allows."""
    return labels - 1.5


@on_both_routes(max_examples=30)
@given(case=judged_lists(labels=st.sampled_from([0.0, 0.3, 1.0, 1.7, 2.5, 4.25])))
def test_normalized_gain_with_real_valued_gains_agrees_with_the_oracle(case, route):
    scores, labels, judged, _, _ = case
    (padded_scores, where), padded_labels = pad(scores), pad(labels)[0]
    for gain in ("linear", shifted_gain):
        python_gain = (lambda x: x) if gain == "linear" else shifted_gain
        for k in (None, 2):
            expected = oracles.tie_average(
                oracles.g_of_order, scores, labels, k=k, gain=python_gain, judged=list(judged)
            )
            got = metrics.normalized_gain(
                padded_scores, padded_labels, k=k, gain=gain, judged=pad(judged)[0], where=where
            )
            np.testing.assert_allclose(got, expected, **TOL)


def test_context_is_laid_out_with_packed_lists():
    # judged and pooled travel with their items into each list's block.
    rng = np.random.default_rng(8)
    scores = rng.integers(0, 3, (4, 24)).astype(np.float64)
    labels = rng.integers(0, 3, (4, 24)).astype(np.float64)
    judged, pooled = rng.random((4, 24)) < 0.7, rng.random((4, 24)) < 0.5
    segments = np.repeat(np.arange(3), 8)[None].repeat(4, 0)
    function = metrics.inferred_average_precision
    packed = function(scores, labels, judged=judged, pooled=pooled, segments=segments, k=5)
    alone = function(
        scores.reshape(4, 3, 8),
        labels.reshape(4, 3, 8),
        judged=judged.reshape(4, 3, 8),
        pooled=pooled.reshape(4, 3, 8),
        k=5,
    )
    np.testing.assert_allclose(packed, alone, **TOL)


@pytest.mark.slow
def test_long_tied_blocks_on_every_engine_path():
    # One block of 60 tied items on a 600-item list: the pairwise, host and
    # top-k paths agree with the value on a short list of the block alone. G
    # pools sums here (gains 1 and 2, 30-odd of them): its canonical order of
    # the block's gains makes the pooled value the same on every path.
    rng = np.random.default_rng(9)
    labels = rng.integers(0, 3, 60).astype(np.float64)
    judged = rng.random(60) < 0.8
    where = np.zeros(600, bool)
    where[rng.permutation(600)[:60]] = True
    long_scores = rng.random(600) - 2
    long_labels = rng.integers(0, 3, 600).astype(np.float64)
    long_judged = np.ones(600, bool)
    long_scores[where], long_labels[where], long_judged[where] = 1.0, labels, judged
    short_scores = np.concatenate([np.ones(60), np.zeros(10)])
    short_labels = np.concatenate([labels, np.ones(10)])
    short_judged = np.concatenate([judged, np.ones(10, bool)])
    short_where = np.arange(70) < 60
    for function in (
        metrics.bpref,
        metrics.inferred_average_precision,
        metrics.binary_normalized_gain,
        metrics.normalized_gain,
    ):
        for k in (None, 3, 60):
            short = function(
                short_scores, short_labels, judged=short_judged, where=short_where, k=k
            )
            long = function(long_scores, long_labels, judged=long_judged, where=where, k=k)
            np.testing.assert_allclose(long, short, rtol=1e-11, atol=1e-12)


def test_bpref_of_a_long_tied_block_has_its_closed_form():
    # All tied: v ~ uniform{0..b} for each relevant item.
    r, b = 40, 70
    labels = np.array([1] * r + [0] * b)
    got = metrics.bpref(np.zeros(r + b), labels)
    expected = np.mean([1 - min(v, r) / min(b, r) for v in range(b + 1)])
    np.testing.assert_allclose(got, expected, rtol=1e-11)


# --- G's pooled subset sums: the bound ---------------------------------------------------


def _exact_tied_g(gains):
    """G of one list whose items all tie, by an exact law of the subset sums.

    ``gains`` are multiples of 1/4, so sums are exact in binary floating point
    and the counts of t-subsets by sum are Python integers.
    """
    m = len(gains)
    counts = [dict() for _ in range(m + 1)]
    counts[0][Fraction(0)] = 1
    for g in gains:
        for t in range(m, 0, -1):
            for total, count in counts[t - 1].items():
                key = total + Fraction(g)
                counts[t][key] = counts[t].get(key, 0) + count
    ideal = sorted(gains, reverse=True)
    cost = np.cumsum([max(x, 1.0) for x in ideal])
    found = 0.0
    for t in range(1, m + 1):
        subsets = math.comb(m, t)
        for total, count in counts[t].items():
            y = float(total)
            if y != 0:
                found += count / subsets * (y / t) / math.log2(2 + cost[t - 1] - y)
    return found / sum(x for x in gains if x > 0)


def _pooling_bound(gains):
    """The docstring's bound for one tied block: (1/2) sum_t sum_w P(w|t) sup|psi''| Var(Z_w)."""
    gains = np.asarray(gains, np.float64)
    m, nonzero = len(gains), gains[gains != 0]
    r = len(nonzero)
    variance = np.var(nonzero)
    ideal = sorted(gains, reverse=True)
    cost = np.cumsum([max(x, 1.0) for x in ideal])
    ordered = np.sort(nonzero)
    bound = 0.0
    for t in range(1, m + 1):
        for w in range(max(1, t - (m - r)), min(t, r) + 1):
            p = math.comb(r, w) * math.comb(m - r, t - w) / math.comb(m, t)
            low, high = ordered[:w].sum(), ordered[-w:].sum()
            y = np.linspace(low, high, 201)
            x = 2 + cost[t - 1] - y
            log = np.log(x)
            second = math.log(2) / t * (2 / (x * log**2) + y * (log + 2) / (x**2 * log**3))
            spread = w * (r - w) / (r - 1) * variance if r > 1 else 0.0
            bound += 0.5 * p * np.max(np.abs(second)) * spread
    return bound / gains[gains > 0].sum()


@functools.cache
def _formula_with_atoms(atoms):
    """G keeping at most ``atoms`` sums (one Formula per count, so one compilation)."""
    return _kernel.Formula(
        "normalized_gain",
        functools.partial(_normalized_gain._normalized_gain, atoms=atoms),
        static=("gain",),
    )


def _g_with_atoms(scores, where, labels, atoms):
    formula = _formula_with_atoms(atoms)
    return _kernel.evaluate_formula(
        formula, scores, labels, caller="normalized_gain", k=None, ignore_ties=False,
        where=where, options={"gain": "linear"},
    )  # fmt: skip


def test_normalized_gain_pools_within_its_bound_past_sixteen_sums(route):
    rng = np.random.default_rng(12)
    gains = rng.choice([0.0, 0.25, 1.0, 2.5, 3.75, 4.0, 5.5], size=28)
    exact = _exact_tied_g(list(gains))
    got = float(metrics.normalized_gain(np.zeros(28), gains))
    error, bound = abs(got - exact), _pooling_bound(gains)
    assert 1e-12 < error <= bound, (error, bound)
    # Exact where the sums fit: two distinct non-zero gains.
    gains = rng.choice([0.0, 1.0, 3.0], size=40)
    np.testing.assert_allclose(
        metrics.normalized_gain(np.zeros(40), gains), _exact_tied_g(list(gains)), rtol=1e-11
    )


@pytest.mark.parametrize("atoms", tiers.params([1, 2, 3], default=(2,)))
def test_few_atoms_stay_within_the_bound_on_every_small_block(atoms, route):
    rng = np.random.default_rng(atoms)
    for _ in range(15):
        n = int(rng.integers(2, WIDTH + 1))
        gains = rng.integers(0, 4, n).astype(np.float64)
        if gains.max() == 0:
            continue
        expected = oracles.tie_average(oracles.g_of_order, np.zeros(n), gains)
        padded, where = pad(gains)
        got = float(_g_with_atoms(np.zeros(WIDTH), where, padded, atoms))
        assert abs(got - expected) <= _pooling_bound(gains) + 1e-12


# --- refusals ----------------------------------------------------------------------------

S = jnp.array([[0.5, 0.5, 0.2]], jnp.float32)
L = jnp.array([[1.0, 0.0, 2.0]], jnp.float32)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: metrics.bpref(S, L, k=0),
            InvalidParameterError,
            "The 'k' parameter of bpref must be an int in the range [1, inf) or None. Got 0 instead.",
        ),
        (
            lambda: metrics.inferred_average_precision(S, L, ignore_ties=1),
            InvalidParameterError,
            "The 'ignore_ties' parameter of inferred_average_precision must be an instance of "
            "'bool' or an instance of 'numpy.bool'. Got 1 instead.",
        ),
        (
            lambda: metrics.normalized_gain(S, L, gain="exp"),
            InvalidParameterError,
            "The 'gain' parameter of normalized_gain must be a str among {'linear', 'exp2'} "
            "or a callable. Got 'exp' instead.",
        ),
        (
            lambda: metrics.bpref(S, L, judged=jnp.ones((1, 3), jnp.int32)),
            ValueError,
            "bpref expects `judged` to be a boolean mask; got dtype int32.",
        ),
        (
            lambda: metrics.inferred_average_precision(S, L, pooled=jnp.ones((1, 2), bool)),
            ValueError,
            "inferred_average_precision expects `pooled` of the same shape as scores; got "
            "pooled (1, 2) and scores (1, 3).",
        ),
        (
            lambda: metrics.binary_normalized_gain(S, L, judged=jnp.ones(3, bool)),
            ValueError,
            "binary_normalized_gain expects `judged` of the same shape as scores; got "
            "judged (3,) and scores (1, 3).",
        ),
        (
            lambda: metrics.bpref(S, L, num_judged_nonrelevant=jnp.array([0.5])),
            ValueError,
            "bpref expects num_judged_nonrelevant to hold non-negative whole numbers.",
        ),
        (
            lambda: metrics.bpref(S, L, num_judged_nonrelevant=jnp.array(3.0)),
            ValueError,
            "bpref expects num_judged_nonrelevant of shape (1,) (one count per list); got "
            "num_judged_nonrelevant ().",
        ),
        (
            lambda: metrics.bpref(S, L, num_judged_nonrelevant=jnp.array([0.0])),
            ValueError,
            "bpref got num_judged_nonrelevant below the number of judged non-relevant items "
            "in a list; it counts every judged non-relevant item of the list, retrieved or not.",
        ),
        (
            lambda: metrics.bpref(S, L, num_relevant=jnp.array([1.0])),
            ValueError,
            "bpref got num_relevant below the number of relevant items in a list; it counts "
            "every relevant item of the list, retrieved or not.",
        ),
        (
            lambda: metrics.inferred_average_precision(S, L, num_relevant=jnp.array([-1.0])),
            ValueError,
            "inferred_average_precision expects num_relevant to hold non-negative whole numbers.",
        ),
        (lambda: metrics.bpref(S, -L), ValueError, "bpref should not be used on negative labels."),
        (
            lambda: metrics.normalized_gain(S, -L),
            ValueError,
            "normalized_gain should not be used on negative labels.",
        ),
        (
            lambda: metrics.normalized_gain(S, L, ideal_labels=-L),
            ValueError,
            "normalized_gain should not be used on negative labels.",
        ),
        (
            lambda: metrics.normalized_gain(S, L, ideal_where=jnp.ones((1, 3), bool)),
            ValueError,
            "normalized_gain got ideal_where without ideal_labels.",
        ),
        (
            lambda: metrics.binary_normalized_gain(S.at[0, 1].set(jnp.nan), L),
            ValueError,
            "Input scores contains NaN.",
        ),
    ],
)
def test_refusals(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value) == message


def test_a_count_below_the_list_gives_nan_under_jit():
    import jax

    got = jax.jit(lambda s, y, c: metrics.bpref(s, y, num_judged_nonrelevant=c))(
        jnp.concatenate([S, S]), jnp.concatenate([L, L]), jnp.array([0.0, 1.0])
    )
    assert np.isnan(got[0]) and np.isfinite(got[1])


# --- agreement with trec_eval (pytrec_eval-terrier) --------------------------------------

pytrec_eval = pytest.importorskip("pytrec_eval")


def generate(seed):
    """Qrels and run dicts: levels -2..3, unjudged and unpooled documents, distinct scores."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(12):  # a fixed batch: one compilation for every case
        pool = [f"d{d}" for d in rng.choice(80, size=int(rng.integers(2, 60)), replace=False)]
        levels = rng.choice([-2, -1, 0, 0, 0, 1, 1, 2, 3], size=len(pool))
        if q % 5 == 1:
            levels = np.minimum(levels, 0)  # judged, nothing relevant
        in_qrels = rng.random(len(pool)) < 0.7
        judgments = {d: int(r) for d, r, j in zip(pool, levels, in_qrels, strict=True) if j}
        if not judgments or max(judgments.values()) < 0:
            # trec_eval crashes on a query judged only negative.
            judgments[pool[0]] = 0
        retrieved = [d for d in pool if rng.random() < 0.75] or pool[:1]
        # Distinct in float32 too: multiples of 2**-12 below 2**12.
        scores = rng.choice(2**20, size=len(retrieved), replace=False) / 2**12
        qrels[f"q{q}"] = judgments
        run[f"q{q}"] = dict(zip(retrieved, scores.tolist(), strict=True))
    return qrels, run


def lodestar_per_query(qrels, run, *, gain="linear", k=None):
    """Every query's lists as trec_eval forms them, padded into one batch."""
    queries = sorted(run)
    n = max(64, *(len(run[q]) for q in queries))  # one compilation for every case
    shape = (len(queries), n)
    scores, graded = np.zeros(shape), np.zeros(shape)
    where, judged, pooled = np.zeros(shape, bool), np.zeros(shape, bool), np.zeros(shape, bool)
    num_rel, num_nonrel = np.zeros(len(queries)), np.zeros(len(queries))
    ideal_width = max(64, *(len(qrels[q]) for q in queries))
    ideal, ideal_where = (
        np.zeros((len(queries), ideal_width)),
        np.zeros((len(queries), ideal_width), bool),
    )
    for row, q in enumerate(queries):
        judgments = qrels[q]
        for column, doc in enumerate(sorted(run[q])):  # docnos ascending
            level = judgments.get(doc)
            scores[row, column] = run[q][doc]
            where[row, column] = True
            pooled[row, column] = level is not None
            judged[row, column] = level is not None and level >= 0
            graded[row, column] = max(level, 0) if judged[row, column] else 0
        levels = [r for r in judgments.values() if r >= 0]
        num_rel[row] = sum(r >= 1 for r in levels)
        num_nonrel[row] = sum(r < 1 for r in levels)
        ideal[row, : len(levels)], ideal_where[row, : len(levels)] = levels, True
    binary = (graded >= 1).astype(np.float64)
    common = dict(where=where, judged=judged, ignore_ties=True, k=k)
    values = {
        "bpref": metrics.bpref(
            scores, binary, num_relevant=num_rel, num_judged_nonrelevant=num_nonrel, **common
        ),
        "infAP": metrics.inferred_average_precision(
            scores, binary, num_relevant=num_rel, pooled=pooled, **common
        ),
        "binG": metrics.binary_normalized_gain(scores, binary, num_relevant=num_rel, **common),
        "G": metrics.normalized_gain(
            scores, graded, gain=gain, ideal_labels=ideal, ideal_where=ideal_where, **common
        ),
    }
    return {
        q: {name: float(value[row]) for name, value in values.items()}
        for row, q in enumerate(queries)
    }


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_pytrec_eval(seed):
    qrels, run = generate(seed)
    ours = lodestar_per_query(qrels, run)
    names = {"bpref", "infAP", "binG", "G", "gm_bpref"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    assert sorted(ours) == sorted(theirs)
    for q, values in theirs.items():
        for name in ("bpref", "infAP", "binG", "G"):
            assert abs(ours[q][name] - values[name]) <= TREC_TOLERANCE, (q, name)
        # pytrec_eval reports gm_bpref's per-query log, floored at 1e-5.
        logged = math.log(max(ours[q]["bpref"], 1e-5))
        assert abs(logged - values["gm_bpref"]) <= TREC_TOLERANCE, q


def test_generated_runs_hold_every_kind_of_document():
    qrels, run = generate(0)
    levels = [r for judgments in qrels.values() for r in judgments.values()]
    assert {-2, -1, 0, 1, 2, 3} <= set(levels)
    assert any(d not in qrels[q] for q in run for d in run[q])


# --- agreement with trec_eval's binary: -M, G's gain table, gm_bpref's all line --------


def trec_eval_values(tmp_path, qrels, run, *options):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: -item[1])
        lines += [f"{q} Q0 {d} {i + 1} {s!r} x\n" for i, (d, s) in enumerate(ranked)]
    run_path.write_text("".join(lines))
    out = subprocess.run(
        [trec_glue.trec_eval_binary(), "-q", *options, str(qrels_path), str(run_path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    values = {}
    for line in out.splitlines():
        name, q, value = line.split()
        values.setdefault(q, {})[name.split("_1=")[0]] = float(value)
    return values


@pytest.mark.slow
def test_agrees_with_the_trec_eval_binary_on_cutoffs_gain_tables_and_gm_bpref(tmp_path):
    qrels, run = generate(7)
    names = ("bpref", "infAP", "binG", "G")
    for depth in (3, 10):
        measures = [option for name in names for option in ("-m", name)]
        theirs = trec_eval_values(tmp_path, qrels, run, "-M", str(depth), *measures)
        ours = lodestar_per_query(qrels, run, k=depth)  # -M is k
        for q in run:
            for name in names:
                assert abs(ours[q][name] - theirs[q][name]) <= 1e-4, (q, name)  # 4 places
    table = {1: 3.5, 3: 9.0}

    def gain(levels):
        return jnp.select([levels == level for level in table], list(table.values()), levels)

    theirs = trec_eval_values(tmp_path, qrels, run, "-m", "G.1=3.5,3=9", "-m", "gm_bpref")
    ours = lodestar_per_query(qrels, run, gain=gain)
    for q in run:
        assert abs(ours[q]["G"] - theirs[q]["G"]) <= 1e-4, q
    logs = [math.log(max(ours[q]["bpref"], 1e-5)) for q in run]
    assert abs(math.exp(np.mean(logs)) - theirs["all"]["gm_bpref"]) <= 1e-4
