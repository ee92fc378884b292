"""Counts, set measures, R-precision, utility, unjudged and rank-biased precision.

What ``tests/test_measures.py`` cannot see from the registry: known values
worked by hand, every refusal's text, the options and the ``judged`` context
over every tie order, trec_eval's double-precision cut-off for multiples of R,
and agreement with trec_eval.

Agreement: per query with pytrec_eval-terrier (trec_eval 9.x in-process) at
1e-9 absolute on generated runs whose scores are distinct in float32, so the
order is the same in every precision; pytrec_eval has no ``-M``, ``rbp``,
``rbp_resid`` or ``unj``, so those and the cut-offs are checked against a
trec_eval binary when one is found (``$TREC_EVAL`` or ``trec_eval`` on the
path), to the 4 decimals it prints (5e-5). Oracle comparisons (tests/oracles.py)
are at 1e-12 in float64.
"""

import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import strategies
import trec_glue
from hypothesis import given
from hypothesis import strategies as st

from lodestar import metrics
from lodestar._validation import InvalidParameterError

TOL = dict(rtol=1e-12, atol=1e-12)
TREC_TOLERANCE = 1e-9
PRINTED_TOLERANCE = 5e-5 + 1e-12


# --- known values ------------------------------------------------------------------------

SCORES = np.array([0.9, 0.5, 0.5, 0.1, 0.05])
LABELS = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
JUDGED = np.array([True, True, False, True, True])


def test_counts_known_values():
    # Ranked: item 0 (rel), then items 1 and 2 tied (2 unjudged), then 3, 4 (rel).
    assert metrics.num_retrieved(SCORES, LABELS) == 5
    assert metrics.num_retrieved(SCORES, LABELS, k=2) == 2
    assert metrics.num_relevant(SCORES, LABELS) == 3
    assert metrics.num_relevant(SCORES, LABELS, judged=JUDGED) == 2
    assert metrics.num_relevant(SCORES, LABELS, num_relevant=np.float64(7), k=1) == 7
    assert metrics.num_relevant_retrieved(SCORES, LABELS, k=2) == 1.5
    assert metrics.num_relevant_retrieved(SCORES, LABELS, k=2, judged=JUDGED) == 1.0
    # Judged non-relevant: items 1 and 3; item 1 is at position 2 half the time.
    assert metrics.num_nonrelevant_judged_retrieved(SCORES, LABELS, k=2, judged=JUDGED) == 0.5
    assert metrics.num_nonrelevant_judged_retrieved(SCORES, LABELS, judged=JUDGED) == 2.0
    assert metrics.unjudged(SCORES, LABELS, k=2, judged=JUDGED) == 0.25
    assert metrics.unjudged(SCORES, LABELS, k=10, judged=JUDGED) == 0.1
    assert metrics.unjudged(SCORES, LABELS, judged=JUDGED) == 0.2


def test_r_precision_known_values():
    # R = 3: the first three positions hold item 0 and two of {1, 2}: 1 + 1 (item 2
    # comes with item 1 either way) relevant, so 2/3.
    np.testing.assert_allclose(metrics.r_precision(SCORES, LABELS), 2 / 3, **TOL)
    # multiple 0.4: (long) (1.2 + 0.9) = 2 positions: 1 + 1/2 relevant.
    np.testing.assert_allclose(metrics.r_precision(SCORES, LABELS, multiple=0.4), 0.75, **TOL)
    # multiple 2: 6 positions, past the 5 retrieved: 3 relevant / 6.
    np.testing.assert_allclose(metrics.r_precision(SCORES, LABELS, multiple=2.0), 0.5, **TOL)
    # -M 2 with R = 3: the third position is not retrieved.
    np.testing.assert_allclose(metrics.r_precision(SCORES, LABELS, k=2), 1.5 / 3, **TOL)
    assert metrics.r_precision(SCORES, np.zeros(5)) == 0.0
    # multiple 0.2 with R = 3: (long) (0.6 + 0.9) = 1.
    assert metrics.r_precision(SCORES, LABELS, multiple=0.2) == 1.0


def test_relative_precision_known_values():
    np.testing.assert_allclose(metrics.relative_precision(SCORES, LABELS, k=2), 0.75, **TOL)
    np.testing.assert_allclose(metrics.relative_precision(SCORES, LABELS, k=4), 2 / 3, **TOL)
    np.testing.assert_allclose(metrics.relative_precision(SCORES, LABELS, k=10), 1.0, **TOL)
    np.testing.assert_allclose(metrics.relative_precision(SCORES, LABELS), 1.0, **TOL)
    assert metrics.relative_precision(SCORES, np.zeros(5), k=3) == 0.0


def test_set_measures_known_values():
    total = np.float64(4)
    np.testing.assert_allclose(metrics.set_precision(SCORES, LABELS), 0.6, **TOL)
    np.testing.assert_allclose(metrics.set_precision(SCORES, LABELS, k=2), 0.75, **TOL)
    np.testing.assert_allclose(metrics.set_precision(SCORES, LABELS, k=9), 0.6, **TOL)
    np.testing.assert_allclose(
        metrics.set_recall(SCORES, LABELS, k=2, num_relevant=total), 1.5 / 4, **TOL
    )
    np.testing.assert_allclose(
        metrics.set_relative_precision(SCORES, LABELS, k=2, num_relevant=total), 0.75, **TOL
    )
    # k = 2 cuts the tie: X is 1 or 2 with probability 1/2 each, E[X^2] = 2.5.
    np.testing.assert_allclose(
        metrics.set_average_precision(SCORES, LABELS, k=2, num_relevant=total), 2.5 / 8, **TOL
    )
    np.testing.assert_allclose(
        metrics.set_average_precision(SCORES, LABELS, num_relevant=total), 9 / 20, **TOL
    )
    # F with beta = 1 at k = 2: 2 X / (R + K) = 2 * 1.5 / 6.
    np.testing.assert_allclose(metrics.set_f(SCORES, LABELS, k=2, num_relevant=total), 0.5, **TOL)
    # beta = 0 is set precision.
    np.testing.assert_allclose(
        metrics.set_f(SCORES, LABELS, beta=0.0, k=2), metrics.set_precision(SCORES, LABELS, k=2)
    )
    assert metrics.set_f(SCORES, np.zeros(5)) == 0.0


def test_utility_known_values():
    total = np.float64(4)
    # X = 3, K = 5: 3 - 2.
    assert metrics.utility(SCORES, LABELS, num_relevant=total) == 1.0
    # k = 2: X = 1.5, K = 2, R = 4, N = 50: 3 * 1.5 - 0.5 - 2 * 2.5 + 0.5 * (50 - 2 - 4 + 1.5).
    got = metrics.utility(
        SCORES,
        LABELS,
        k=2,
        coefficients=(3, -1, -2, 0.5),
        num_documents=50,
        num_relevant=total,
    )
    np.testing.assert_allclose(got, 4.5 - 0.5 - 5 + 0.5 * 45.5, **TOL)
    # trec_eval without -N: the last cell is negative.
    got = metrics.utility(SCORES, LABELS, coefficients=(0, 0, 0, 1), num_documents=0)
    assert got == 3 - 5 - 3
    # No real item: 0, whatever the coefficients (trec_eval's -c counts such a query as 0).
    got = metrics.utility(
        SCORES,
        LABELS,
        where=np.zeros(5, bool),
        coefficients=(1, 1, 1, 1),
        num_documents=10,
        num_relevant=total,
    )
    assert got == 0.0


def test_rbp_known_values():
    scores = np.array([0.9, 0.5, 0.1])
    np.testing.assert_allclose(
        metrics.rank_biased_precision(scores, np.array([1, 0, 1]), p=0.5), 0.625, **TOL
    )
    # Grades 0-2: halved; with max_label 4: quartered; max_label below 1: unscaled.
    np.testing.assert_allclose(
        metrics.rank_biased_precision(scores, np.array([2, 0, 1]), p=0.5), 0.5625, **TOL
    )
    np.testing.assert_allclose(
        metrics.rank_biased_precision(scores, np.array([2, 0, 1]), p=0.5, max_label=4),
        0.5 * (2 + 0.25) / 4,
        **TOL,
    )
    np.testing.assert_allclose(
        metrics.rank_biased_precision(scores, np.array([0.5, 0, 0.5]), p=0.5, max_label=0.5),
        0.5 * (0.5 + 0.125),
        **TOL,
    )
    # Two tied items at the top share positions 0 and 1: mean weight (1 - 0.25) / 2.
    np.testing.assert_allclose(
        metrics.rank_biased_precision(np.array([1.0, 1.0, 0.0]), np.array([1, 0, 0]), p=0.5),
        0.375,
        **TOL,
    )
    # k = 1 reads the first position only.
    np.testing.assert_allclose(
        metrics.rank_biased_precision(scores, np.array([1, 0, 1]), p=0.5, k=1), 0.5, **TOL
    )


def test_rbp_residual_known_values():
    scores = np.array([0.9, 0.5, 0.1])
    judged = np.array([True, False, True])
    got = metrics.rank_biased_precision_residual(scores, np.zeros(3), p=0.5, judged=judged)
    np.testing.assert_allclose(got, 0.125 + 0.25, **TOL)
    # Everything judged: 0, as in trec_eval, though p^3 is still unknown.
    assert metrics.rank_biased_precision_residual(scores, np.zeros(3), p=0.5) == 0.0
    # k = 1: the unjudged item is not retrieved.
    got = metrics.rank_biased_precision_residual(scores, np.zeros(3), p=0.5, k=1, judged=judged)
    assert got == 0.0
    # Two tied at the top, one unjudged, k = 1: retrieved half the time, and
    # then resid = p + (1 - p).
    got = metrics.rank_biased_precision_residual(
        np.array([1.0, 1.0, 0.0]), np.zeros(3), p=0.5, k=1, judged=judged
    )
    np.testing.assert_allclose(got, 0.5, **TOL)


def test_counts_with_packed_lists_and_context():
    segments = np.array([0, 0, 1, 1, 1])
    judged = np.array([True, False, True, True, False])
    got = metrics.unjudged(SCORES, LABELS, judged=judged, segments=segments)
    np.testing.assert_allclose(got, [0.5, 1 / 3], **TOL)
    got = metrics.num_relevant(
        SCORES, LABELS, num_relevant=np.array([4.0, 5.0]), segments=segments, max_segments=2
    )
    np.testing.assert_array_equal(got, [4.0, 5.0])
    got = metrics.rank_biased_precision(
        SCORES, LABELS, max_label=np.array([4.0, 2.0]), segments=segments, max_segments=2
    )
    alone = [
        metrics.rank_biased_precision(SCORES[:2], LABELS[:2], max_label=4.0),
        metrics.rank_biased_precision(SCORES[2:], LABELS[2:], max_label=2.0),
    ]
    np.testing.assert_allclose(got, alone, **TOL)


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: metrics.rank_biased_precision(SCORES, LABELS, p=2),
            "The 'p' parameter of rank_biased_precision must be a float in the range "
            "(0.0, 1.0). Got 2 instead.",
        ),
        (
            lambda: metrics.rank_biased_precision_residual(SCORES, LABELS, p=1.0),
            "The 'p' parameter of rank_biased_precision_residual must be a float in the "
            "range (0.0, 1.0). Got 1.0 instead.",
        ),
        (
            lambda: metrics.rank_biased_precision(SCORES, LABELS, p=True),
            "The 'p' parameter of rank_biased_precision must be a float in the range "
            "(0.0, 1.0). Got True instead.",
        ),
        (
            lambda: metrics.rank_biased_precision(SCORES, LABELS, max_label=-1.0),
            "The 'max_label' parameter of rank_biased_precision must be a float in the range "
            "[0.0, inf). Got -1.0 instead.",
        ),
        (
            lambda: metrics.r_precision(SCORES, LABELS, multiple=0),
            "The 'multiple' parameter of r_precision must be a float in the range (0.0, inf). "
            "Got 0 instead.",
        ),
        (
            lambda: metrics.set_f(SCORES, LABELS, beta=-0.5),
            "The 'beta' parameter of set_f must be a float in the range [0.0, inf). "
            "Got -0.5 instead.",
        ),
        (
            lambda: metrics.set_f(SCORES, LABELS, beta="1"),
            "The 'beta' parameter of set_f must be a float in the range [0.0, inf). "
            "Got '1' instead.",
        ),
        (
            lambda: metrics.utility(SCORES, LABELS, coefficients=(1.0, -1.0)),
            "The 'coefficients' parameter of utility must be a tuple of 4 finite floats. "
            "Got (1.0, -1.0) instead.",
        ),
        (
            lambda: metrics.utility(SCORES, LABELS, coefficients=(1.0, -1.0, 0.0, np.inf)),
            "The 'coefficients' parameter of utility must be a tuple of 4 finite floats. "
            "Got (1.0, -1.0, 0.0, inf) instead.",
        ),
        (
            lambda: metrics.utility(SCORES, LABELS, num_documents=-1),
            "The 'num_documents' parameter of utility must be an int in the range [0, inf) "
            "or None. Got -1 instead.",
        ),
        (
            lambda: metrics.utility(SCORES, LABELS, num_documents=10.0),
            "The 'num_documents' parameter of utility must be an int in the range [0, inf) "
            "or None. Got 10.0 instead.",
        ),
        (
            lambda: metrics.set_precision(SCORES, LABELS, k=0),
            "The 'k' parameter of set_precision must be an int in the range [1, inf) or None. "
            "Got 0 instead.",
        ),
        (
            lambda: metrics.unjudged(SCORES, LABELS, k=2.0),
            "The 'k' parameter of unjudged must be an int in the range [1, inf) or None. "
            "Got 2.0 instead.",
        ),
    ],
)
def test_invalid_parameters_are_refused(call, message):
    with pytest.raises(InvalidParameterError) as raised:
        call()
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: metrics.utility(SCORES, LABELS, coefficients=(1, -1, 0, 0.5)),
            "utility needs num_documents (the collection size, trec_eval's -N) when the fourth "
            "coefficient is not 0; pass num_documents=0 for trec_eval's value without -N.",
        ),
        (
            lambda: metrics.unjudged(SCORES, LABELS, judged=np.ones(5)),
            "unjudged expects `judged` to be a boolean mask; got dtype float64.",
        ),
        (
            lambda: metrics.num_nonrelevant_judged_retrieved(
                SCORES, LABELS, judged=np.ones(4, bool)
            ),
            "num_nonrelevant_judged_retrieved expects `judged` of the same shape as scores; "
            "got judged (4,) and scores (5,).",
        ),
        (
            lambda: metrics.rank_biased_precision(
                np.zeros((2, 3)), np.zeros((2, 3)), max_label=np.ones(3)
            ),
            "rank_biased_precision expects max_label of shape (2,) (one value per list) or a "
            "float; got max_label (3,).",
        ),
        (
            lambda: metrics.rank_biased_precision(
                np.zeros((2, 3)), np.zeros((2, 3)), max_label=np.array([1.0, -1.0])
            ),
            "rank_biased_precision expects max_label to hold finite non-negative numbers.",
        ),
        (
            lambda: metrics.rank_biased_precision(SCORES, LABELS, max_label=1.5),
            "Input labels contains a value greater than max_label in rank_biased_precision.",
        ),
        (
            lambda: metrics.rank_biased_precision(
                np.zeros((2, 2)), np.array([[1.0, 3.0], [1.0, 2.0]]), max_label=np.array([3, 1])
            ),
            "Input labels contains a value greater than max_label in rank_biased_precision.",
        ),
        (
            lambda: metrics.set_recall(SCORES, LABELS, num_relevant=np.float64(2)),
            "set_recall got num_relevant below the number of relevant items in a list; it "
            "counts every relevant item of the list, retrieved or not.",
        ),
        (
            lambda: metrics.r_precision(SCORES, LABELS, num_relevant=np.float64(3.5)),
            "r_precision expects num_relevant to hold non-negative whole numbers.",
        ),
        (
            lambda: metrics.num_relevant(SCORES, -LABELS),
            "num_relevant should not be used on negative labels.",
        ),
    ],
)
def test_invalid_inputs_are_refused(call, message):
    with pytest.raises(ValueError) as raised:
        call()
    assert str(raised.value) == message


def test_label_above_max_label_is_nan_under_jit():
    labels = np.array([[1.0, 3.0], [1.0, 2.0]])
    got = jax.jit(lambda s, y, m: metrics.rank_biased_precision(s, y, max_label=m))(
        np.array([[1.0, 0.0], [1.0, 0.0]]), labels, np.array([2.0, 2.0])
    )
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1], 0.1 * (0.5 + 0.9), **TOL)


# --- options and context over every tie order --------------------------------------------


def check_every_order(function, oracle, scores, labels, per_list=None, **options):
    """``function`` on a ``(batch, n)`` batch against ``oracle`` on each list, every cut-off.

    ``per_list`` holds options with one value (or row) per list, such as
    ``num_relevant`` or ``judged``; ``options`` the ones shared by every list.
    """
    per_list = per_list or {}

    def row_options(row):
        return {name: value[row] for name, value in per_list.items()}

    arrays = {
        name: value.astype(np.float64) if value.dtype.kind == "i" else value
        for name, value in per_list.items()
    }
    for k in [None, *range(1, scores.shape[-1] + 2)]:
        for ignore_ties, reference in ((False, oracles.tie_average), (True, oracles.ignoring_ties)):
            expected = [
                reference(oracle, scores[row], labels[row], k=k, **options, **row_options(row))
                for row in range(len(scores))
            ]
            got = function(scores, labels, k=k, ignore_ties=ignore_ties, **options, **arrays)
            np.testing.assert_allclose(got, expected, **TOL)


def relevant_totals(labels, extra):
    return np.count_nonzero(labels, axis=-1) + extra


JUDGED_MEASURES = {
    "num_relevant": oracles.num_rel_of_order,
    "num_relevant_retrieved": oracles.num_rel_ret_of_order,
    "num_nonrelevant_judged_retrieved": oracles.num_nonrel_judged_ret_of_order,
    "unjudged": oracles.unj_of_order,
    "rank_biased_precision_residual": oracles.rbp_resid_of_order,
}


@pytest.mark.parametrize("name", JUDGED_MEASURES)
@given(batch=strategies.tied_batches(judged=True))
def test_judged_context_over_every_order(name, batch):
    scores, labels, judged = batch
    check_every_order(
        getattr(metrics, name), JUDGED_MEASURES[name], scores, labels, {"judged": judged}
    )


@given(
    batch=strategies.tied_batches(),
    multiple=st.sampled_from([0.2, 0.3, 0.7, 1.0, 1.4, 2.0, 3.1]),
)
def test_multiples_of_r_over_every_order(batch, multiple):
    scores, labels = batch
    check_every_order(
        metrics.r_precision, oracles.rprec_mult_of_order, scores, labels, multiple=multiple
    )


@given(batch=strategies.tied_batches(), extra=strategies.extra_relevant())
def test_r_precision_is_trec_evals_rprec(batch, extra):
    # m_Rprec.c's own loop (the first min(num_ret, R) positions over R).
    scores, labels = batch
    total = relevant_totals(labels, extra)
    check_every_order(
        metrics.r_precision, oracles.rprec_of_order, scores, labels, {"num_relevant": total}
    )


@given(
    batch=strategies.tied_batches(),
    beta=st.sampled_from([0.0, 0.25, 1.0, 4.0]),
    extra=strategies.extra_relevant(most=2),
)
def test_set_f_beta_over_every_order(batch, beta, extra):
    scores, labels = batch
    total = relevant_totals(labels, extra)
    check_every_order(
        metrics.set_f, oracles.set_f_of_order, scores, labels, {"num_relevant": total}, beta=beta
    )


@given(
    batch=strategies.tied_batches(),
    coefficients=st.tuples(*[st.sampled_from([-2.0, -0.5, 0.0, 1.0, 3.0])] * 4),
    extra=strategies.extra_relevant(most=2),
)
def test_utility_coefficients_over_every_order(batch, coefficients, extra):
    scores, labels = batch
    total = relevant_totals(labels, extra)
    check_every_order(
        metrics.utility,
        oracles.utility_of_order,
        scores,
        labels,
        {"num_relevant": total},
        coefficients=coefficients,
        num_documents=20,
    )


@given(
    batch=strategies.tied_batches(judged=True),
    p=st.sampled_from([0.1, 0.5, 0.9, 0.99]),
    max_label=st.sampled_from([None, 0.5, 3.0, 5.0]),
)
def test_rbp_options_over_every_order(batch, p, max_label):
    scores, labels, judged = batch
    if max_label == 0.5:
        labels = labels / 6  # every label within 0.5
    check_every_order(
        metrics.rank_biased_precision,
        oracles.rbp_of_order,
        scores,
        labels,
        p=p,
        max_label=max_label,
    )
    check_every_order(
        metrics.rank_biased_precision_residual,
        oracles.rbp_resid_of_order,
        scores,
        labels,
        {"judged": judged},
        p=p,
    )


@given(batch=strategies.tied_batches(), extra=strategies.extra_relevant())
def test_set_map_variance_over_every_order(batch, extra):
    # The one quadratic measure: its tie average needs the hypergeometric variance.
    scores, labels = batch
    total = relevant_totals(labels, extra)
    check_every_order(
        metrics.set_average_precision,
        oracles.set_map_of_order,
        scores,
        labels,
        {"num_relevant": total},
    )


def test_set_map_on_a_large_tie_block_matches_exact_fractions():
    # 40 tied items, 13 relevant, k = 17: E[X^2] from the hypergeometric law,
    # summed in exact fractions.
    from fractions import Fraction
    from math import comb

    m, r, c = 40, 13, 17
    square = sum(
        Fraction(comb(r, x) * comb(m - r, c - x), comb(m, c)) * x * x for x in range(c + 1)
    )
    labels = np.zeros(m)
    labels[:r] = 1
    got = metrics.set_average_precision(np.zeros(m), labels, k=c)
    np.testing.assert_allclose(got, float(square / (c * r)), **TOL)


def test_r_precision_cut_off_rounds_twice_like_trec_eval():
    # (long) (0.7 * 3 + 0.9) is 2 in double precision (0.7 * 3 rounds down to
    # 2.0999999999999996), not 3; a fused multiply-add would give 3. The third
    # item is relevant, so the two cut-offs give different values.
    assert int(0.7 * 3 + 0.9) == 2
    scores = np.array([3.0, 2.0, 1.0])
    labels = np.array([1.0, 0.0, 1.0])
    total = np.float64(3)
    eager = metrics.r_precision(scores, labels, multiple=0.7, num_relevant=total)
    jitted = jax.jit(lambda s, y, r: metrics.r_precision(s, y, multiple=0.7, num_relevant=r))(
        scores, labels, total
    )
    np.testing.assert_allclose([eager, jitted], [0.5, 0.5], **TOL)
    # Over many R at once, every cut-off is trec_eval's.
    for multiple in (0.3, 0.7, 1.1, 1.3):
        totals = np.arange(1, 3000, dtype=np.float64)
        expected = np.array([int(multiple * r + 0.9) for r in totals])
        n = 1
        ones = np.ones((len(totals), n))
        got = jax.jit(
            lambda s, y, r, multiple=multiple: metrics.r_precision(
                s, y, multiple=multiple, num_relevant=r
            )
        )(ones, ones, totals)
        # One relevant item ranked first: the value is 1 / cut-off.
        np.testing.assert_array_equal(np.round(1 / np.asarray(got)), expected)


def test_r_precision_cut_off_without_x64_matches_for_the_default_multiples():
    multiples = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
    totals = np.arange(1, 2000)
    with jax.enable_x64(False):
        ones = np.ones((len(totals), 1), np.float32)
        for multiple in multiples:
            got = metrics.r_precision(
                ones, ones, multiple=multiple, num_relevant=totals.astype(np.float32)
            )
            expected = np.array([int(multiple * r + 0.9) for r in totals])
            np.testing.assert_array_equal(np.round(1 / np.asarray(got)), expected)


# --- agreement with trec_eval ------------------------------------------------------------

pytrec_eval = pytest.importorskip("pytrec_eval")


def generate(seed):
    """Qrels and run dicts: graded, unjudged (-1) and unretrieved documents."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(rng.integers(6, 20)):
        qid = f"q{q}"
        pool = [f"d{d:03d}" for d in rng.choice(80, size=rng.integers(2, 60), replace=False)]
        levels = rng.choice([-1, 0, 0, 0, 1, 1, 2, 3], size=len(pool))
        judged = rng.random(len(pool)) < 0.7
        judgments = {d: int(r) for d, r, j in zip(pool, levels, judged, strict=True) if j}
        if q % 6 == 2:
            judgments = {d: min(r, 0) for d, r in judgments.items()}  # nothing relevant
        if not judgments or max(judgments.values()) < 0:
            judgments[pool[0]] = 0  # trec_eval crashes on a query judged only negative
        retrieved = [d for d in pool if rng.random() < 0.8]
        retrieved += [f"x{d}" for d in range(rng.integers(0, 5))]  # never judged
        if not retrieved:
            retrieved = [pool[0]]
        # Distinct in float32: multiples of 2**-12 below 2**12.
        scores = rng.choice(2**20, size=len(retrieved), replace=False) / 2**12
        qrels[qid] = judgments
        run[qid] = dict(zip(retrieved, scores.tolist(), strict=True))
    return qrels, run


# Every generated run fits one padded shape, so the agreement tests share
# their compilations.
ROWS, WIDTH = 20, 72


def batch(qrels, run, level):
    """Per query, padded: scores, binary and graded labels, judged, where, num_rel, max level."""
    qids = sorted(q for q in run if q in qrels)
    assert len(qids) <= ROWS and max(len(run[q]) for q in qids) <= WIDTH
    shape = (ROWS, WIDTH)
    scores, binary, graded = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    judged, where = np.zeros(shape, bool), np.zeros(shape, bool)
    num_rel, top = np.zeros(ROWS), np.zeros(ROWS)
    for row, q in enumerate(qids):
        for col, (d, s) in enumerate(run[q].items()):
            rel = qrels[q].get(d, -1)
            scores[row, col], where[row, col] = s, True
            judged[row, col] = rel >= 0
            binary[row, col] = float(rel >= level)
            graded[row, col] = max(rel, 0)
        num_rel[row] = sum(r >= level for r in qrels[q].values())
        top[row] = max(r for r in qrels[q].values() if r >= 0)
    return qids, dict(
        scores=scores,
        binary=binary,
        graded=graded,
        judged=judged,
        where=where,
        num_rel=num_rel,
        top=top,
    )


def lodestar_values(data, k=None):
    """trec_eval name -> (queries,) values, fed as the command line feeds them."""
    s, y, w, judged, total = (
        data["scores"],
        data["binary"],
        data["where"],
        data["judged"],
        data["num_rel"],
    )

    def binary(function, **options):
        return np.asarray(function(s, y, where=w, k=k, **options))

    values = {
        "num_ret": binary(metrics.num_retrieved),
        "num_rel": binary(metrics.num_relevant, num_relevant=total, judged=judged),
        "num_rel_ret": binary(metrics.num_relevant_retrieved, judged=judged),
        "num_nonrel_judged_ret": binary(metrics.num_nonrelevant_judged_retrieved, judged=judged),
        "Rprec": binary(metrics.r_precision, num_relevant=total),
        "set_P": binary(metrics.set_precision),
        "set_recall": binary(metrics.set_recall, num_relevant=total),
        "set_relative_P": binary(metrics.set_relative_precision, num_relevant=total),
        "set_map": binary(metrics.set_average_precision, num_relevant=total),
        "set_F": binary(metrics.set_f, num_relevant=total),
        "utility": binary(metrics.utility, num_relevant=total),
    }
    for multiple in (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0):
        values[f"Rprec_mult_{multiple:3.2f}"] = binary(
            metrics.r_precision, multiple=multiple, num_relevant=total
        )
    ap = binary(metrics.average_precision, num_relevant=total)
    values["gm_map"] = np.log(np.maximum(ap, 1e-5))  # what trec_eval stores per query
    return values


def cut_values(data, cut):
    """Measures whose parameter is a cut-off, at ``cut`` (no -M)."""
    s, y, w, total = data["scores"], data["binary"], data["where"], data["num_rel"]
    return {
        f"relative_P_{cut}": np.asarray(
            metrics.relative_precision(s, y, where=w, k=cut, num_relevant=total)
        ),
        f"success_{cut}": np.asarray(metrics.hits(s, y, where=w, k=cut)),
    }


@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, 6))]
)
@pytest.mark.parametrize("level", [1, 2])
def test_agrees_with_pytrec_eval(seed, level):
    qrels, run = generate(seed)
    qids, data = batch(qrels, run, level)
    ours = lodestar_values(data)
    cuts = (1, 2, 5, 10, 30)
    for cut in cuts:
        ours.update(cut_values(data, cut))
    names = {"Rprec_mult", "relative_P.1,2,5,10,30", "success.1,2,5,10,30"} | {
        name for name in ours if not name.startswith(("Rprec_mult", "relative_P", "success"))
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, names, relevance_level=level).evaluate(run)
    assert sorted(reference) == qids
    for row, q in enumerate(qids):
        for name, values in ours.items():
            assert abs(values[row] - reference[q][name]) <= TREC_TOLERANCE, (q, name)
    # The all line: sums for the counts, exp of the mean log for gm_map.
    for name in ("num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "gm_map"):
        theirs = pytrec_eval.compute_aggregated_measure(name, [reference[q][name] for q in qids])
        values = ours[name][: len(qids)]
        mine = np.exp(np.mean(values)) if name == "gm_map" else np.sum(values)
        assert abs(mine - theirs) <= TREC_TOLERANCE, name


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_set_f_parameter_agrees_with_pytrec_eval(beta):
    qrels, run = generate(7)
    qids, data = batch(qrels, run, 1)
    ours = metrics.set_f(
        data["scores"],
        data["binary"],
        where=data["where"],
        beta=beta,
        num_relevant=data["num_rel"],
    )
    reference = pytrec_eval.RelevanceEvaluator(qrels, {f"set_F.{beta}"}).evaluate(run)
    for row, q in enumerate(qids):
        assert abs(ours[row] - reference[q]["set_F"]) <= TREC_TOLERANCE, q


def trec_eval_per_query(tmp_path, qrels, run, *args):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {i} {s!r} test\n"
            for q, docs in run.items()
            for i, (d, s) in enumerate(sorted(docs.items(), key=lambda item: -item[1]))
        )
    )
    out = subprocess.run(
        [trec_glue.trec_eval_binary(), "-q", *args, str(qrels_path), str(run_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, qid, value = line.split()
        found.setdefault(qid, {})[name] = float(value)
    return found


@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(seed, marks=pytest.mark.slow) for seed in range(1, 4))]
)
@pytest.mark.parametrize("max_docs", [None, 7, 30])
def test_agrees_with_the_trec_eval_binary(tmp_path, seed, max_docs):
    trec_glue.trec_eval_binary()  # skips now, before lodestar's side is computed
    qrels, run = generate(10 + seed)
    qids, data = batch(qrels, run, 1)
    k = max_docs
    s, w, judged = data["scores"], data["where"], data["judged"]
    ours = lodestar_values(data, k=k)
    del ours["utility"], ours["gm_map"]  # default utility: pytrec_eval; no per-query gm_map
    ours.update(
        {
            "rbp": metrics.rank_biased_precision(
                s, data["graded"], where=w, k=k, max_label=data["top"]
            ),
            "rbp_p=0.5": metrics.rank_biased_precision(
                s, data["graded"], where=w, k=k, p=0.5, max_label=data["top"]
            ),
            "rbp_resid": metrics.rank_biased_precision_residual(
                s, data["binary"], where=w, k=k, judged=judged
            ),
            "utility_2,-1,-0.5,0.25": metrics.utility(
                s,
                data["binary"],
                where=w,
                k=k,
                coefficients=(2, -1, -0.5, 0.25),
                num_documents=500,
                num_relevant=data["num_rel"],
            ),
        }
    )
    for cut in (3, 5, 10, 20):
        # unj_k with -M: positions past -M count as judged, the denominator stays k.
        seen = cut if k is None else min(cut, k)
        unjudged = metrics.unjudged(s, data["binary"], where=w, k=seen, judged=judged)
        ours[f"unj_{cut}"] = np.asarray(unjudged) * seen / cut
    measures = [
        "-m",
        "num_ret",
        "-m",
        "num_rel",
        "-m",
        "num_rel_ret",
        "-m",
        "num_nonrel_judged_ret",
        "-m",
        "Rprec",
        "-m",
        "Rprec_mult",
        "-m",
        "set_P",
        "-m",
        "set_recall",
        "-m",
        "set_relative_P",
        "-m",
        "set_map",
        "-m",
        "set_F",
        "-m",
        "unj.3,5,10,20",
        "-m",
        "rbp_resid",
        "-m",
        "utility.2,-1,-0.5,0.25",
        "-N",
        "500",
    ]
    extra = [] if max_docs is None else ["-M", str(max_docs)]
    reference = trec_eval_per_query(tmp_path, qrels, run, *measures, *extra)
    # rbp twice under one name is one measure in trec_eval: separate runs.
    reference_rbp = trec_eval_per_query(tmp_path, qrels, run, "-m", "rbp", *extra)
    reference_rbp_half = trec_eval_per_query(tmp_path, qrels, run, "-m", "rbp.p=0.5", *extra)
    for row, q in enumerate(qids):
        theirs = {**reference[q], **reference_rbp[q], **reference_rbp_half[q]}
        for name, values in ours.items():
            assert abs(float(np.asarray(values)[row]) - theirs[name]) <= PRINTED_TOLERANCE, (
                q,
                name,
            )


def test_num_measures_are_whole_numbers_without_ties():
    qrels, run = generate(3)
    _, data = batch(qrels, run, 1)
    for k in (None, 4):
        for name, values in lodestar_values(data, k=k).items():
            if name.startswith("num_"):
                np.testing.assert_array_equal(values, np.round(values))


@pytest.mark.slow
def test_float32_agrees_with_float64():
    qrels, run = generate(5)
    _, data = batch(qrels, run, 1)
    ours = lodestar_values(data, k=9)
    single = {
        key: (value.astype(np.float32) if value.dtype == np.float64 else value)
        for key, value in data.items()
    }
    theirs = lodestar_values(single, k=9)
    for name in ours:
        np.testing.assert_allclose(theirs[name], ours[name], rtol=2e-6, atol=1e-5, err_msg=name)
    assert jnp.asarray(theirs["set_map"]).dtype == jnp.float32
