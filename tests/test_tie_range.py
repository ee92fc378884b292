"""``metrics.tie_range``: the values with ties broken against and for each list.

For every measure the registry gives a ``tie_key`` (relevance, or for three
measures whether an item is unjudged, or judged and not relevant), the pair
must be the exact minimum and maximum of the measure over every order of the
tied items: the brute force of tests/oracles.py, lists of up to 7 items, with
random judgments, 1e-12. For the two without one (``G``, ``infAP``) the pair is
checked to lie within the extremes.
"""

import functools
import inspect
import json

import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import strategies
import tiers
from hypothesis import example, given

from lodestar import _registry, metrics
from lodestar.metrics import _kernel

TOL = dict(rtol=1e-12, atol=1e-12)


def values_over_orders(key, scores, labels, **options):
    entry = _registry.MEASURES[key]
    oracle = functools.partial(oracles.ORACLES[key], **entry.required_options)
    return [oracle(labels, order, **options) for order in oracles.tie_orders(scores)]


# The default tier: a graded measure, a binary one, and the three whose ties
# are ordered by judgment (a count of judged non-relevant items, the share of
# unjudged ones, RBP's residual); the slow tier every measure.
@pytest.mark.parametrize(
    "key",
    tiers.params(
        _registry.MEASURES,
        default=("ndcg", "map", "num_nonrel_judged_ret", "unj", "rbp_resid"),
    ),
)
@given(batch=strategies.tied_batches(judged=True))
# Drawn once: a list whose two orders do not bracket G's average.
@example(
    batch=(
        np.array([[-2.0, -2.0, 0.0, -2.0]] + [[0.0] * 4] * 3),
        np.array([[2.0, 3.0, 1.0, 3.0]] + [[0.0] * 4] * 3),
        np.ones((4, 4), bool),
    )
)
def test_the_range_is_the_extremes_over_every_order(key, batch):
    entry = _registry.MEASURES[key]
    scores, labels, judged = batch
    # A measure whose oracle reads judgments gets them; unjudged items are
    # what three measures order their ties by.
    oracle = inspect.signature(oracles.ORACLES[key])
    context = {"judged": judged} if "judged" in oracle.parameters else {}
    for k in (None, 2, 4) if entry.cutoff else (None,):
        options = {"k": k} if entry.cutoff else {}
        lows, highs = metrics.tie_range(
            entry.function, scores, labels, **entry.required_options, **options, **context
        )
        averages = entry.function(scores, labels, **entry.required_options, **options, **context)
        for row, (low, high, average) in enumerate(zip(lows, highs, averages, strict=True)):
            row_context = {name: value[row] for name, value in context.items()}
            values = values_over_orders(key, scores[row], labels[row], **options, **row_context)
            if entry.tie_key is not None:
                assert low <= high + 1e-12  # equal ranges differ in rounding
                assert low - 1e-12 <= average <= high + 1e-12
                np.testing.assert_allclose(low, min(values), **TOL)
                np.testing.assert_allclose(high, max(values), **TOL)
            else:
                # The two orders need not be the extremes, so they need not
                # bracket the average either (G: labels [2, 3, 1, 3], the
                # three items of score -2 tied, averages 0.6576 while the
                # two orders give 0.6513 and 0.6548).
                low, high = sorted((float(low), float(high)))
                assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12
                assert min(values) - 1e-12 <= average <= max(values) + 1e-12


def test_normalized_gain_is_lowest_at_an_order_other_than_relevant_last():
    # Why the registry gives G no tie key: its discount reads the gain
    # collected so far, so placing the 3 before the 2 lowers it further.
    scores, labels = np.zeros(4), np.array([1.0, 1.0, 2.0, 3.0])
    low, high = metrics.tie_range(metrics.normalized_gain, scores, labels)
    values = values_over_orders("G", scores, labels)
    np.testing.assert_allclose(low, oracles.g_of_order(labels, np.arange(4)), **TOL)
    np.testing.assert_allclose(min(values), 0.6890665455411094, **TOL)
    assert min(values) < low - 0.01
    np.testing.assert_allclose(high, max(values), **TOL)
    assert _registry.MEASURES["G"].tie_key is None


def test_a_batch_with_padding_and_per_item_options():
    scores = np.array([[0.5, 0.5, 0.5, 0.1], [0.9, 0.9, 0.2, 0.2]])
    labels = np.array([[0, 1, 0, 1], [1, 0, 1, 0]])
    where = np.array([[True, True, True, False], [True, True, True, True]])
    low, high = metrics.tie_range(metrics.reciprocal_rank, scores, labels, where=where)
    np.testing.assert_allclose(low, [1 / 3, 1 / 2])
    np.testing.assert_allclose(high, [1.0, 1.0])
    judged = np.array([[True, False, True, True], [True, True, True, True]])
    low, high = metrics.tie_range(
        metrics.num_relevant_retrieved, scores, labels, where=where, k=1, judged=judged
    )
    np.testing.assert_allclose(high, [0.0, 1.0])  # the unjudged item 1 is never relevant


def test_refuses_its_own_tie_options():
    with pytest.raises(ValueError, match="takes no ignore_ties"):
        metrics.tie_range(metrics.ndcg, jnp.zeros(3), jnp.ones(3), ignore_ties=True)
    with pytest.raises(ValueError, match="takes no segments"):
        metrics.tie_range(metrics.ndcg, jnp.zeros(3), jnp.ones(3), segments=jnp.zeros(3, int))


def test_finds_the_formula_through_partials_and_wrappers_and_refuses_other_functions():
    # What orders the ties is the formula's; a function that carries none is
    # refused rather than ordered by a guess (graded relevance was assumed).
    scores, labels = jnp.array([0.5, 0.5, 0.5]), jnp.array([0, 1, 0])
    judged = jnp.array([True, True, False])
    expected = metrics.tie_range(metrics.unjudged, scores, labels, k=1, judged=judged)

    @functools.wraps(metrics.unjudged)
    def wrapped(*args, **kwargs):
        return metrics.unjudged(*args, **kwargs)

    at_one = functools.partial(metrics.unjudged, k=1)
    for metric in (at_one, functools.partial(wrapped, k=1)):
        np.testing.assert_array_equal(
            metrics.tie_range(metric, scores, labels, judged=judged), expected
        )
    # The unjudged item ranks last at the low end, first at the high end.
    np.testing.assert_array_equal(expected, (0.0, 1.0))
    with pytest.raises(TypeError, match="pass one of them, or a functools.partial"):
        metrics.tie_range(lambda s, y, **kw: metrics.ndcg(s, y, **kw), scores, labels)


def test_every_public_function_of_the_registry_carries_the_formula_it_evaluates():
    for measure in _registry.MEASURES.values():
        assert isinstance(measure.function.formula, _kernel.Formula), measure.key
    assert metrics.ndcg.formula.labels == "graded" and metrics.precision.formula.labels == "binary"


# --- the command line's --tie-range, at every relevance level ----------------------

# One query: a judged non-relevant document (d3), an unjudged one (d4) and
# grades 1 and 2 tied with them, between two documents that are not tied.
_QRELS = "q 0 d1 0\nq 0 d2 2\nq 0 d3 0\nq 0 d5 1\nq 0 d6 1\nq 0 d7 1\n"
_TIED = ("d2", "d3", "d4", "d5")
_MEASURES = [
    "mrr", "P@3", "map", "recall@3", "ndcg@3", "ndcg", "Rprec",
    # Ordered by judgment, not relevance: d4 is unjudged, d3 judged non-relevant.
    "unjudged@3", "num_nonrel_judged_ret", "rbp_resid",
]  # fmt: skip


def _per_query(capsys, qrels, run, measures, *options):
    from lodestar.cli import main

    assert main(["evaluate", qrels, run, "--json", "-q", "-m", *measures, *options]) == 0
    return json.loads(capsys.readouterr().out)


def _run_file(directory, before, block, order=None):
    """One query: ``before`` (docno, score) pairs, ``block`` tied at 0.5, then d6 at 0.1.

    With ``order``, the block's documents take distinct scores in that order.
    """
    scores = [*before]
    scores += [(doc, 0.5 - 0.01 * i) for i, doc in enumerate(order)] if order else []
    scores += [(doc, 0.5) for doc in block] if order is None else []
    scores += [("d6", 0.1)]
    lines = [f"q Q0 {doc} {rank} {score:.2f} r" for rank, (doc, score) in enumerate(scores, 1)]
    path = directory / ("tied" if order is None else "ordered")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _range_and_every_order(capsys, qrels, directory, before, block, measures, *options):
    """``(tie-range report, {name: [per-query value at each order of the block]})``."""
    import itertools

    values = {}
    for order in itertools.permutations(block):
        run = _run_file(directory, before, block, order)
        found = _per_query(capsys, qrels, run, measures, *options)["per_query"]["q"]
        for name, value in found.items():
            if isinstance(value, (int, float)):
                values.setdefault(name, []).append(value)
    run = _run_file(directory, before, block)
    return _per_query(capsys, qrels, run, measures, *options, "--tie-range"), values


@pytest.mark.parametrize("definitions", [[], ["--trec-eval"]], ids=["lodestar", "trec_eval"])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_the_command_line_range_is_the_extremes_over_every_order(
    tmp_path, capsys, level, definitions
):
    # By label alone, -l 0 ranked a judged non-relevant document (relevant at
    # level 0) among the unjudged ones: mrr 0.9688 printed [1.0000, 1.0000].
    (tmp_path / "qrels").write_text(_QRELS)
    found, values = _range_and_every_order(
        capsys, str(tmp_path / "qrels"), tmp_path, [("d1", 0.9)], _TIED, _MEASURES,
        "-l", str(level), *definitions,
    )  # fmt: skip
    for m in _MEASURES:
        low, high = found["tie_range"]["per_query"]["q"][m]
        np.testing.assert_allclose(
            [low, high], [min(values[m]), max(values[m])], rtol=1e-12, err_msg=m
        )
        np.testing.assert_allclose(
            found["per_query"]["q"][m], np.mean(values[m]), rtol=1e-12, err_msg=m
        )


@pytest.mark.slow
@pytest.mark.parametrize("options", [["-l", "0"], ["-l", "2"], ["-M", "3"], ["-J"]], ids=" ".join)
def test_every_trec_eval_measure_with_a_tie_key_has_its_extremes(tmp_path, capsys, options):
    # Every measure of -m all_trec that the registry gives a tie key is the
    # exact minimum and maximum over every order of a tied block holding
    # grades 2, 1, 0, -1 and an unjudged document, under options that move
    # relevance, the depth and judgment; the others (G, infAP) have no range.
    from lodestar._trec import names as _names

    (tmp_path / "qrels").write_text(_QRELS + "q 0 d8 -1\n")
    found, values = _range_and_every_order(
        capsys, str(tmp_path / "qrels"), tmp_path, [("d1", 0.9), ("d5", 0.6)],
        ("d2", "d3", "d4", "d8"), ["all_trec"], "--trec-eval", *options,
    )  # fmt: skip
    ranges = found["tie_range"]["per_query"]["q"]
    without = {name for name in values if _names.parse(name)[0].measure.tie_key is None}
    assert without and not without & set(ranges), without
    for name, (low, high) in ranges.items():
        extremes = [min(values[name]), max(values[name])]
        np.testing.assert_allclose([low, high], extremes, rtol=1e-9, atol=1e-12, err_msg=name)
    assert len(ranges) > 80


def test_the_command_names_the_measures_without_a_range(capsys):
    from lodestar.cli import main

    assert main(["evaluate", "--example", "-m", "G", "ndcg", "infAP", "unj.5", "--tie-range"]) == 0
    captured = capsys.readouterr()
    assert (
        "lodestar: --tie-range gives no range for G, infAP: no order of the ties is known "
        "to give their smallest and largest values"
    ) in captured.err.splitlines()
    columns = {
        line.split("\t")[0].strip(): len(line.split("\t")) for line in captured.out.splitlines()
    }
    assert columns == {"num_q": 3, "G": 3, "ndcg": 4, "infAP": 3, "unj_5": 4}
    assert main(["evaluate", "--example", "-m", "G", "map", "--tie-range", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tie_range"]["mean"].keys() == {"map"}
    assert main(["evaluate", "--example", "-m", "ndcg", "map", "--tie-range"]) == 0
    assert "--tie-range gives no range" not in capsys.readouterr().err


def test_a_partial_of_a_measure_is_ordered_by_what_the_measure_reads():
    # unjudged@1 reads only judgments: one unjudged item among three tied
    # gives 0 or 1 at the cut-off. Unwrapped, the partial is ordered by
    # judgment; ordered by relevance it gave the pair reversed, (1, 0).
    scores, labels = np.zeros(3), np.array([1.0, 0.0, 0.0])
    judged = np.array([True, False, True])
    low, high = metrics.tie_range(
        functools.partial(metrics.unjudged, k=1), scores, labels, judged=judged
    )
    assert (float(low), float(high)) == (0.0, 1.0)
