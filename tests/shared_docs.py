"""The text many public docstrings share, written once: what tests/test_docstrings.py holds them to.

Each public function writes its docstring out in full, so that the source, an
editor's hover and ``help()`` read the same (decision 0036). Where functions
share a parameter or a refusal, their text is one of the entries here, and
the test finds every copy and compares it, word for word and line for line,
with its entry:

* :data:`ARGS` holds entries of an ``Args:`` section. A line that starts a
  new argument (``name: text``) sits at the section's indentation; its
  continuation lines are indented two more spaces, as Google style wants.
* :data:`BLOCKS` holds lines for any section (a ``Returns:`` paragraph, the
  entries of a ``Raises:`` section), with their own relative indentation.
"""

from __future__ import annotations

import re

# The room packed lists need, shared by every function that takes ``segments``.
_SEGMENT_LIMITS = (
    "max_segments: Lists per row (ids ``0 .. max_segments - 1``); required\n"
    "when ``segments`` is traced, else 1 + the largest id.\n"
    "max_segment_size: Room for the longest list; by default the longest\n"
    "list rounded up to a power of two, or ``n`` when ``segments`` is traced."
)

_WHERE = "where: ``(..., n)`` boolean mask; False marks padding."

ARGS = {
    "scores": "scores: ``(..., n)`` scores the ranking is made from; higher ranks first.",
    # The labels of the binary measures, the graded ones and those that only count items.
    "binary_labels": (
        "labels: ``(..., n)`` relevance judgements, non-negative; any non-zero\nvalue is relevant."
    ),
    "graded_labels": "labels: ``(..., n)`` graded relevance, non-negative.",
    "judged_binary_labels": (
        "labels: ``(..., n)`` relevance judgements, non-negative; any non-zero\n"
        "value of a judged item is relevant."
    ),
    "shape_labels": (
        "labels: ``(..., n)`` relevance judgements, non-negative; only their\nshape is used."
    ),
    # The cut-off of the set measures and of the measures scoring the first k positions.
    "retrieved_k": (
        "k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).\n"
        "None retrieves the whole list."
    ),
    "counted_k": (
        "k: The retrieved set is the first ``k`` positions (trec_eval's ``-M``).\n"
        "None counts over the whole list."
    ),
    "read_k_over_relevant": (
        "k: Only the first ``k`` positions are read (trec_eval's ``-M``); the\n"
        "denominator stays :math:`R`. None, or a ``k`` past ``n``, reads the\n"
        "whole list."
    ),
    "scored_k": (
        "k: Score only the first ``k`` positions. None, or a ``k`` past ``n``,\n"
        "scores the whole list."
    ),
    "ignore_ties": (
        "ignore_ties: Rank tied scores by descending index instead of averaging\nover their orders."
    ),
    "where": _WHERE,
    "packed": (
        "segments: ``(..., n)`` integer ids of the lists packed into each row;\n"
        "the result is then ``(..., max_segments)``, one value per list. See\n"
        "*Packed lists* in the module docstring.\n" + _SEGMENT_LIMITS
    ),
    "segment_limits": _SEGMENT_LIMITS,
    "num_relevant": (
        "num_relevant: ``(...)`` the number of relevant items of each list,\n"
        "retrieved or not (trec_eval's ``num_rel``), or None to count the\n"
        "relevant real items of the list. It must be at least that count."
    ),
    "judged": (
        "judged: ``(..., n)`` boolean mask of the items that were judged, or\n"
        "None if every real item was. An unjudged item is not relevant."
    ),
    "num_judged_nonrelevant": (
        "num_judged_nonrelevant: ``(...)`` the number of judged non-relevant\n"
        "items of each list, retrieved or not (trec_eval's judged documents\n"
        "below the relevance level), or None to count the judged real items\n"
        "of the list labelled 0. It must be at least that count."
    ),
    "pooled": (
        "pooled: ``(..., n)`` boolean mask of the items in the judgement pool,\n"
        "judged or not (trec_eval: in the qrels at all), or None for the\n"
        "judged items. A judged item always counts as pooled."
    ),
    # The NDCG family beyond ndcg (decision 0017).
    "judged_gain": (
        "judged: ``(..., n)`` boolean mask of the items that were judged, or\n"
        "None if every real item was. An unjudged item gains 0 whatever its\n"
        "label, which matters when level 0 has a gain."
    ),
    "ideal_pool": (
        "ideal_labels: ``(..., m)`` labels of every judged item of each list,\n"
        "retrieved or not, for the ideal ranking; None uses the list's own\n"
        "judged items. Not with ``segments``.\n"
        "ideal_where: ``(..., m)`` boolean mask of ``ideal_labels``; False marks\n"
        "padding."
    ),
    # The multiple-testing corrections of lodestar.stats.
    "p_values": (
        "p_values: ``(..., m)`` p-values in [0, 1]; each row along the last axis\n"
        "is one family of ``m`` hypotheses."
    ),
    # The smooth metrics and the softened losses.
    "temperature": "temperature: :math:`T` in (0, inf), in the units of the scores.",
    "loss_labels": "labels: ``(..., n)`` non-negative relevance labels.",
    # The losses: how a batch of lists is masked, weighted, reduced and packed.
    "loss_batch": (
        _WHERE + "\n"
        "weights: ``(...)`` per-list weights, or ``(..., n)`` per-item weights\n"
        "as in Rax (see the module docstring).\n"
        'reduction: ``"mean"`` (over lists with a real item), ``"sum"`` or\n'
        '``"none"``.\n'
        "segments: ``(..., n)`` integer ids of the lists packed into each row;\n"
        "each list is then one list of the reduction (see *Packed lists* in the\n"
        "module docstring).\n" + _SEGMENT_LIMITS
    ),
    # The pairwise losses that weight their pairs.
    "lambdaweight": (
        "lambdaweight: None, or a :class:`LambdaWeight` that weights each pair\n"
        "(:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,\n"
        ":func:`labeldiff_lambdaweight`, or a sum of them); one of those\n"
        "functions itself means it with its defaults. Its weights carry no\n"
        "gradient with respect to the scores."
    ),
}

# The losses' value under jit and their refusals of bad shapes and values.
_LOSS_NAN_UNDER_JIT = (
    "Under ``jit``, a list holding a value refused on concrete inputs\n"
    "gives NaN (see *Bad values under jit* in the module docstring)."
)

# The exact measures' refusals: of ``k``, and of shapes and values.
_VALUE_ERROR = "ValueError: ``scores`` and ``labels`` differ in shape or are scalars;\n"

BLOCKS = {
    "invalid_k": "InvalidParameterError: ``k`` is not None and not an int >= 1.",
    "invalid_k_gain": (
        "InvalidParameterError: ``k`` is not None and not an int >= 1; ``gain`` is\n  unknown."
    ),
    "value_error": (
        _VALUE_ERROR + "  ``where`` is not a boolean array of the same shape; on concrete inputs,\n"
        "  a real item holds NaN or infinity, or a negative label."
    ),
    "value_error_judged": (
        _VALUE_ERROR + "  ``where`` or ``judged`` is not a boolean array of the same shape; on\n"
        "  concrete inputs, a real item holds NaN or infinity, or a negative label."
    ),
    "value_error_num_relevant": (
        _VALUE_ERROR + "  ``where`` is not a boolean array of the same shape; ``num_relevant``\n"
        "  has the wrong shape; on concrete inputs, a real item holds NaN or\n"
        "  infinity, or a negative label, or ``num_relevant`` is below the list's\n"
        "  own relevant items or not a whole number."
    ),
    "expected_count": (
        "``(...)`` the expected count of each list, in [0, min(n, k)]. 0 for a\n"
        "list with no real items; NaN for a list with a NaN score."
    ),
    "p_values_error": (
        "ValueError: a scalar, a non-numeric input, or (on concrete inputs) NaN\n"
        "  or a value outside [0, 1]."
    ),
    "loss_nan_under_jit": _LOSS_NAN_UNDER_JIT,
    "loss_returns": (
        'A scalar for ``"mean"`` and ``"sum"``; the ``(...)`` per-list losses for\n'
        '``"none"``.\n' + _LOSS_NAN_UNDER_JIT
    ),
    "loss_value_error": (
        "ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or\n"
        "  ``weights``; on concrete inputs, NaN or infinity in a real item, or a\n"
        "  negative or non-finite weight."
    ),
    "loss_value_error_lambdaweight": (
        "ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or\n"
        "  ``weights``; on concrete inputs, NaN or infinity in a real item, a\n"
        "  negative or non-finite weight, or, with a lambda weight that takes\n"
        "  gains, a negative label or exp2 gains that overflow the dtype."
    ),
    "loss_value_error_gain": (
        "ValueError: bad shapes or dtypes of ``scores``, ``labels``, ``where`` or\n"
        "  ``weights``; on concrete inputs, NaN or infinity in a real item, a\n"
        "  negative label, a negative or non-finite weight, or, with\n"
        '  ``gain="exp2"``, labels whose gains overflow the dtype (a label of\n'
        "  128 or more in float32, 1024 in float64)."
    ),
}

assert not ARGS.keys() & BLOCKS.keys(), "a marker must name one shared text"


def render(name: str, indent: str = "  ") -> str:
    """The shared text ``name`` as a docstring holds it, at ``indent``."""
    if name in BLOCKS:
        return "\n".join(indent + line if line else line for line in BLOCKS[name].split("\n"))
    lines = []
    for line in ARGS[name].split("\n"):
        starts_argument = re.match(r"^\w+: ", line) is not None
        lines.append(indent + ("" if starts_argument else "  ") + line)
    return "\n".join(lines)
