"""Packed lists (``segments=``) against the same lists padded on their own.

Every exact metric, smooth metric and loss is called on packed rows and on the
padded form built here in NumPy: list ``s`` of a row becomes block ``[s, :]``,
its real items in their order in the row, then zero padding with
``where=False``, ``max_segment_size`` items in all.

Tolerances (float64 under x64):

* Eager values are compared **bitwise** (``assert_array_equal``): the packed
  call runs the very kernel of the padded call on the very same arrays.
  Eager gradients are compared with ``rtol=1e-12, atol=1e-15``: the backward
  pass also runs the transpose of the layout's gather, and differentiating
  through it can reorder a sum (seen: 3e-15 relative for
  ``neural_ndcg_loss``'s Sinkhorn iterations).
* Under ``jit`` and ``vmap`` the layout and the kernel compile into one
  program, so XLA may fuse differently; values and gradients are compared
  with ``rtol=1e-12, atol=1e-12``.
* The brute-force oracle (every tie order) is matched to ``rtol=1e-12,
  atol=1e-12``.

Scores are small integers, so ties within and across lists are common; ids of
padding are drawn from junk values (-1, a huge id) to show they are ignored.
"""

import functools
import inspect
import re

import jax
import jax.numpy as jnp
import numpy as np
import oracles
import pytest
import tiers
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.experimental import checkify

import lodestar
from lodestar import _registry, losses, metrics, smooth
from lodestar._validation import InvalidParameterError

CLOSE = {"rtol": 1e-12, "atol": 1e-12}
N = 8
LISTS = 3
# Each example draws a new layout, and so compiles its own programs, and there
# are many functions: half of the profile's examples per function (5 by
# default, 500 under HYPOTHESIS_PROFILE=thorough).
FEW = settings(max_examples=max(5, settings.default.max_examples // 2))

EXACT = {
    "dcg": (metrics.dcg, {}),
    "dcg_k2_base3": (metrics.dcg, {"k": 2, "log_base": 3.0}),
    "ndcg": (metrics.ndcg, {}),
    "ndcg_k3_exp2": (metrics.ndcg, {"k": 3, "gain": "exp2"}),
    "reciprocal_rank": (metrics.reciprocal_rank, {}),
    "reciprocal_rank_k2": (metrics.reciprocal_rank, {"k": 2}),
    "precision_k3": (metrics.precision, {"k": 3}),
    "precision": (metrics.precision, {}),
    "recall_k2": (metrics.recall, {"k": 2}),
    "hits_k2": (metrics.hits, {"k": 2}),
    "average_precision": (metrics.average_precision, {}),
    "average_precision_k3": (metrics.average_precision, {"k": 3}),
    "err": (metrics.err, {"max_label": 3.0}),
    "err_k2": (metrics.err, {"k": 2, "max_label": 3.0}),
}
SMOOTH = {
    f"{name}_{method}": (fn, {"method": method, "temperature": 0.5, **extra})
    for name, fn, extra in (
        ("dcg", smooth.dcg, {"k": 2}),
        ("ndcg", smooth.ndcg, {}),
        ("reciprocal_rank", smooth.reciprocal_rank, {}),
    )
    for method in smooth.METHODS
}
# The measures declared as rank sums share one kernel: two methods suffice.
SMOOTH.update(
    {
        f"{name}_{method}": (fn, {"method": method, "temperature": 0.5, **extra})
        for name, fn, extra in (
            ("precision", smooth.precision, {"k": 2}),
            ("recall", smooth.recall, {"k": 2}),
            ("average_precision", smooth.average_precision, {"k": 3}),
            ("err", smooth.err, {"max_label": 3.0}),
        )
        for method in ("sigmoid", "permutahedron")
    }
)
RANKS = {f"ranks_{method}": (smooth.ranks, {"method": method}) for method in smooth.METHODS}
LOSSES = {
    "softmax_loss": (losses.softmax_loss, {}),
    "listmle_loss": (losses.listmle_loss, {}),
    "pairwise_logistic_loss": (losses.pairwise_logistic_loss, {}),
    "lambda_loss": (losses.lambda_loss, {"k": 3}),
    "approx_ndcg_loss": (losses.approx_ndcg_loss, {"k": 2}),
    "neural_ndcg_loss": (losses.neural_ndcg_loss, {"sinkhorn_iterations": 5}),
}
PER_LIST = {**EXACT, **SMOOTH}
# The packing is shared machinery (lodestar._segments): the default tier packs
# two exact measures, one smooth method and one loss
# (tests/tiers.py); the slow tier every function above.
DEFAULT_TIER = (
    "ndcg_k3_exp2",
    "average_precision_k3",
    "ndcg_sigmoid",
    "ranks_sigmoid",
    "lambda_loss",
)


def swept(functions):
    return tiers.params(functions, default=DEFAULT_TIER)


# Gradients and jit take each soft-rank method once (on NDCG) and each smooth
# measure once: a measure is a rank sum over the same soft ranks, packed by
# the same machinery. (Every measure with every method took 4 minutes of the
# slow tier; the values above still sweep them all, bitwise.)
SMOOTH_TRANSFORMED = {
    name: SMOOTH[name]
    for name in (
        *(f"ndcg_{method}" for method in smooth.METHODS),
        "dcg_sigmoid",
        "reciprocal_rank_softsort",
        "precision_sigmoid",
        "recall_sigmoid",
        "average_precision_sigmoid",
        "err_permutahedron",
    )
}
# Losses per list ("none"), so that every list is compared.
ALL = {
    **EXACT,
    **SMOOTH_TRANSFORMED,
    **RANKS,
    **{name: (fn, {**o, "reduction": "none"}) for name, (fn, o) in LOSSES.items()},
}


# --------------------------------------------------------------------------
# Data and the padded form
# --------------------------------------------------------------------------


@st.composite
def packed_rows(draw, batch_shapes=((), (3,))):
    """``(scores, labels, where, segments)`` with ties, padding and junk padding ids."""
    shape = (*draw(st.sampled_from(batch_shapes)), N)
    size = int(np.prod(shape))
    ints = st.integers(0, 3)
    scores = np.array(draw(st.lists(ints, min_size=size, max_size=size)), float).reshape(shape)
    labels = np.array(draw(st.lists(ints, min_size=size, max_size=size)), float).reshape(shape)
    ids = st.integers(0, LISTS - 1)
    segments = np.array(draw(st.lists(ids, min_size=size, max_size=size))).reshape(shape)
    where = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    where = where.reshape(shape) | (np.arange(size).reshape(shape) % 3 == 0)
    junk = np.array(draw(st.lists(st.sampled_from([-1, 2**30]), min_size=size, max_size=size)))
    segments = np.where(where, segments, junk.reshape(shape))
    return scores, labels, where, segments


def longest(where, segments):
    rows = segments.reshape(-1, N)
    real = where.reshape(-1, N)
    return max(
        (int(np.sum(real[r] & (rows[r] == s))) for r in range(len(rows)) for s in range(LISTS)),
        default=0,
    )


def block_size(where, segments):
    """Half a row when the longest list fits, else a whole row (two compilations per shape)."""
    return N // 2 if longest(where, segments) <= N // 2 else N


def padded_form(scores, labels, where, segments, size):
    """``(scores, labels, where, item)`` of shape ``(..., LISTS, size)``; ``item`` is -1 if empty."""
    batch = scores.shape[:-1]
    out_scores = np.zeros((*batch, LISTS, size))
    out_labels = np.zeros((*batch, LISTS, size))
    out_where = np.zeros((*batch, LISTS, size), bool)
    item = np.full((*batch, LISTS, size), -1)
    for index in np.ndindex(*batch):
        for s in range(LISTS):
            members = np.flatnonzero(where[index] & (segments[index] == s))
            assert len(members) <= size
            out_scores[(*index, s, slice(len(members)))] = scores[index][members]
            out_labels[(*index, s, slice(len(members)))] = labels[index][members]
            out_where[(*index, s, slice(len(members)))] = True
            item[(*index, s, slice(len(members)))] = members
    return out_scores, out_labels, out_where, item


def to_items(values, item):
    """Per-slot ``(..., LISTS, size)`` values back at their items, ``(..., N)``; 0 elsewhere."""
    values = np.asarray(values)
    out = np.zeros((*item.shape[:-2], N), values.dtype)
    for index in np.ndindex(*item.shape[:-2]):
        filled = item[index] >= 0
        out[index][item[index][filled]] = values[index][filled]
    return out


def packed(fn, options, data, size):
    scores, labels, where, segments = data
    args = (scores,) if fn is smooth.ranks else (scores, labels)
    return fn(
        *args,
        where=where,
        segments=segments,
        max_segments=LISTS,
        max_segment_size=size,
        **options,
    )


def padded(fn, options, data, size, **extra):
    scores, labels, where, _ = padded_form(*data, size)
    args = (scores,) if fn is smooth.ranks else (scores, labels)
    return fn(*args, where=where, **extra, **options)


# --------------------------------------------------------------------------
# Values: packed == padded, eagerly bitwise
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", swept(PER_LIST))
@FEW
@given(data=packed_rows(), ignore_ties=st.booleans())
def test_per_list_values_equal_the_padded_form_bitwise(name, data, ignore_ties):
    fn, options = PER_LIST[name]
    if name in EXACT:
        options = {**options, "ignore_ties": ignore_ties}
    size = block_size(data[2], data[3])
    got = packed(fn, options, data, size)
    assert got.shape == (*data[0].shape[:-1], LISTS)
    np.testing.assert_array_equal(got, padded(fn, options, data, size))


@pytest.mark.parametrize("name", swept(RANKS))
@FEW
@given(data=packed_rows())
def test_soft_ranks_equal_the_padded_form_bitwise(name, data):
    fn, options = RANKS[name]
    size = block_size(data[2], data[3])
    got = packed(fn, options, data, size)
    item = padded_form(*data, size)[3]
    np.testing.assert_array_equal(got, to_items(padded(fn, options, data, size), item))


@pytest.mark.parametrize("name", swept(LOSSES))
@FEW
@given(data=packed_rows(), reduction=st.sampled_from(["none", "mean", "sum"]))
def test_losses_equal_the_padded_form_bitwise(name, data, reduction):
    fn, options = LOSSES[name]
    size = block_size(data[2], data[3])
    weights = np.arange(1.0, 1.0 + LISTS) * np.ones((*data[0].shape[:-1], 1))
    options = {**options, "reduction": reduction, "weights": weights}
    got = packed(fn, options, data, size)
    np.testing.assert_array_equal(got, padded(fn, options, data, size))


# --------------------------------------------------------------------------
# Gradients: packed == padded, eagerly bitwise
# --------------------------------------------------------------------------


def _gradients(fn, options, data, size):
    scores, labels, where, segments = data
    cotangent = np.linspace(0.5, 1.5, LISTS)

    def objective_packed(s):
        value = fn(
            s,
            labels,
            where=where,
            segments=segments,
            max_segments=LISTS,
            max_segment_size=size,
            **options,
        )
        return jnp.sum(value * cotangent) if value.ndim else value

    padded_scores, padded_labels, padded_where, item = padded_form(*data, size)

    def objective_padded(s):
        value = fn(s, padded_labels, where=padded_where, **options)
        return jnp.sum(value * cotangent) if value.ndim else value

    got = jax.grad(objective_packed)(jnp.asarray(scores))
    want = to_items(jax.grad(objective_padded)(jnp.asarray(padded_scores)), item)
    return got, want


@pytest.mark.parametrize("name", swept(SMOOTH_TRANSFORMED))
@FEW
@given(data=packed_rows())
def test_smooth_metric_gradients_equal_the_padded_form(name, data):
    fn, options = SMOOTH_TRANSFORMED[name]
    got, want = _gradients(fn, options, data, block_size(data[2], data[3]))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", swept(LOSSES))
@FEW
@given(data=packed_rows(), reduction=st.sampled_from(["none", "mean"]))
def test_loss_gradients_equal_the_padded_form(name, data, reduction):
    fn, options = LOSSES[name]
    options = {**options, "reduction": reduction}
    got, want = _gradients(fn, options, data, block_size(data[2], data[3]))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------
# jit and vmap
# --------------------------------------------------------------------------


@functools.cache
def _jitted(name, size):
    fn, options = ALL[name]
    unary = fn is smooth.ranks

    def run(scores, labels, where, segments):
        args = (scores,) if unary else (scores, labels)
        return fn(
            *args,
            where=where,
            segments=segments,
            max_segments=LISTS,
            max_segment_size=size,
            **options,
        )

    return jax.jit(run), jax.vmap(run)


@pytest.mark.parametrize("name", swept(ALL))
@FEW
@given(data=packed_rows(batch_shapes=((3,),)))
def test_jit_and_vmap_equal_the_padded_form(name, data):
    fn, options = ALL[name]
    size = block_size(data[2], data[3])
    want = padded(fn, options, data, size)
    if fn is smooth.ranks:
        want = to_items(want, padded_form(*data, size)[3])
    jitted, vmapped = _jitted(name, size)
    for run in (jitted, vmapped):
        np.testing.assert_allclose(run(*map(jnp.asarray, data)), want, **CLOSE)


@FEW
@given(data=packed_rows(batch_shapes=((3,),)))
def test_under_jit_the_default_size_is_the_row(data):
    scores, labels, where, segments = map(jnp.asarray, data)
    run = jax.jit(lambda s, g: metrics.ndcg(s, labels, where=where, segments=g, max_segments=LISTS))
    got = run(scores, segments)
    np.testing.assert_allclose(got, padded(metrics.ndcg, {}, data, N), **CLOSE)


# --------------------------------------------------------------------------
# Semantics
# --------------------------------------------------------------------------


@given(data=packed_rows(batch_shapes=((),)))
def test_ties_are_averaged_within_a_list_never_across(data):
    scores, labels, where, segments = data
    got = metrics.ndcg(scores, labels, where=where, segments=segments, max_segments=LISTS)
    for s in range(LISTS):
        members = where & (segments == s)
        want = 0.0
        if members.any():
            want = oracles.tie_average(oracles.ndcg_of_order, scores[members], labels[members])
        np.testing.assert_allclose(got[s], want, **CLOSE)


def test_absent_ids_score_zero_and_padding_ids_are_ignored():
    scores = jnp.array([3.0, 2.0, 1.0, 9.0, 9.0])
    labels = jnp.array([1.0, 0.0, 1.0, 5.0, 5.0])
    where = jnp.array([True, True, True, False, False])
    segments = jnp.array([2, 2, 0, -7, 2**31 - 1])
    got = metrics.dcg(scores, labels, where=where, segments=segments, max_segments=4)
    np.testing.assert_array_equal(got, [1.0, 0.0, 1.0, 0.0])


def test_defaults_come_from_concrete_ids():
    scores = jnp.array([[3.0, 2.0, 1.0, 0.5], [1.0, 2.0, 3.0, 0.5]])
    labels = jnp.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
    segments = jnp.array([[0, 0, 0, 1], [1, 1, 1, 1]])
    inferred = metrics.ndcg(scores, labels, segments=segments)
    explicit = metrics.ndcg(scores, labels, segments=segments, max_segments=2, max_segment_size=4)
    assert inferred.shape == (2, 2)
    np.testing.assert_array_equal(inferred, explicit)
    np.testing.assert_array_equal(inferred[1, 0], 0.0)  # an absent id is an empty list


def test_a_nan_score_poisons_only_its_own_list():
    scores = jnp.array([jnp.nan, 1.0, 2.0, 3.0])
    labels = jnp.array([1.0, 0.0, 1.0, 0.0])
    segments = jnp.array([0, 0, 1, 1])
    run = jax.jit(lambda s: metrics.ndcg(s, labels, segments=segments, max_segments=2))
    got = run(scores)
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1], 1 / np.log2(3), **CLOSE)


def test_empty_rows_and_lists():
    empty = jnp.zeros((2, 0))
    segments = jnp.zeros((2, 0), jnp.int32)
    got = metrics.dcg(empty, empty, segments=segments, max_segments=3)
    np.testing.assert_array_equal(got, np.zeros((2, 3)))
    assert metrics.dcg(empty, empty, segments=segments).shape == (2, 1)
    loss = losses.softmax_loss(empty, empty, segments=segments, max_segments=3)
    assert loss == 0.0


def test_mean_reduction_counts_only_non_empty_lists():
    scores = jnp.array([[2.0, 1.0, 0.0, 5.0]])
    labels = jnp.array([[1.0, 0.0, 0.0, 1.0]])
    segments = jnp.array([[0, 0, 3, 3]])
    per_list = losses.softmax_loss(
        scores, labels, segments=segments, max_segments=5, reduction="none"
    )
    mean = losses.softmax_loss(scores, labels, segments=segments, max_segments=5)
    assert per_list.shape == (1, 5)
    np.testing.assert_allclose(mean, (per_list[0, 0] + per_list[0, 3]) / 2, **CLOSE)


def test_every_public_function_takes_segments_keyword_only():
    # Every measure of the registry, and every smooth metric and loss. Of
    # metrics' other names, GainTable is a gain, and tie_range passes its
    # options, segments among them, to the measure it is given.
    functions = {m.function.__name__: m.function for m in _registry.MEASURES.values()}
    functions.update({name: getattr(smooth, name) for name in smooth.__all__})
    # Of the losses module, the losses: the ``*_t12n`` transformations take
    # functions, and the losses they make take the packing options
    # (tests/test_t12n.py); a lambda weight is an option of a pairwise loss.
    functions.update(
        {name: getattr(losses, name) for name in losses.__all__ if name.endswith("_loss")}
    )
    others = {name for name in metrics.__all__ if name[0].islower()} - set(functions)
    assert others == {"tie_range"}
    for name, function in functions.items():
        parameters = inspect.signature(function).parameters
        for option in ("segments", "max_segments", "max_segment_size"):
            assert option in parameters, f"{name} lacks {option}"
            assert parameters[option].kind is inspect.Parameter.KEYWORD_ONLY


# --------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------

SCORES = jnp.array([[0.3, 0.2, 0.1, 0.0]])
LABELS = jnp.array([[1.0, 0.0, 1.0, 0.0]])
FUNCTIONS = [
    functools.partial(metrics.ndcg, SCORES, LABELS),
    functools.partial(smooth.dcg, SCORES, LABELS),
    functools.partial(smooth.ranks, SCORES),
    functools.partial(losses.lambda_loss, SCORES, LABELS),
]


@pytest.mark.parametrize("fn", FUNCTIONS)
@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"segments": SCORES}, ValueError, "expects integer segment ids; got dtype float"),
        ({"segments": jnp.zeros((1, 3), int)}, ValueError, "segments (1, 3) and scores (1, 4)"),
        ({"segments": jnp.array([[0, 0, -1, 0]])}, ValueError, "non-negative segment ids; got -1"),
        (
            {"segments": jnp.array([[0, 0, 2, 1]]), "max_segments": 2},
            ValueError,
            "in [0, 2) (max_segments=2). Got 2 instead.",
        ),
        (
            {"segments": jnp.array([[0, 0, 0, 1]]), "max_segment_size": 2},
            ValueError,
            "longer than max_segment_size=2. The longest has 3 items.",
        ),
        (
            {"segments": jnp.array([[0, 0, 0, 1]]), "max_segments": 0},
            InvalidParameterError,
            "The 'max_segments' parameter of",
        ),
        (
            {"segments": jnp.array([[0, 0, 0, 1]]), "max_segment_size": 2.0},
            InvalidParameterError,
            "must be an int in the range [1, inf) or None. Got 2.0 instead.",
        ),
        ({"max_segments": 2}, ValueError, "max_segments or max_segment_size without segments"),
    ],
)
def test_bad_segments_are_refused(fn, options, error, message):
    with pytest.raises(error, match=re.escape(message)):
        fn(**options)


def test_traced_ids_need_max_segments():
    run = jax.jit(lambda s, g: metrics.dcg(s, LABELS, segments=g))
    with pytest.raises(ValueError, match="needs max_segments when the segment ids are traced"):
        run(SCORES, jnp.zeros((1, 4), int))


@pytest.mark.parametrize(
    "segments, size, message",
    [([[0, 0, 3, 1]], None, "in \\[0, 2\\)"), ([[0, 0, 0, 1]], 2, "max_segment_size=2")],
)
def test_bad_traced_ids_poison_the_row_and_raise_under_checkify(segments, size, message):
    packing = {"max_segments": 2, "max_segment_size": size}

    def per_list(s, g):
        return metrics.dcg(s, LABELS, segments=g, **packing)

    def loss(s, g):
        return losses.softmax_loss(s, LABELS, segments=g, **packing)

    def ranks(s, g):
        return smooth.ranks(s, segments=g, **packing)

    bad = jnp.array(segments)
    good = jnp.array([[0, 0, 1, 1]])
    for fn in (per_list, loss, ranks):
        assert np.all(np.isnan(jax.jit(fn)(SCORES, bad)))
        assert not np.any(np.isnan(jax.jit(fn)(SCORES, good)))
    with lodestar.value_checks_under_jit():
        error, _ = checkify.checkify(jax.jit(per_list))(SCORES, bad)
    with pytest.raises(checkify.JaxRuntimeError, match=message):
        error.throw()
    assert checkify.checkify(jax.jit(per_list))(SCORES, bad)[0].get() is None
