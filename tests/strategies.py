"""Hypothesis strategies shared by the property tests: batches of tied lists at few shapes.

Every array shape a test passes to a measure compiles a program of its own,
and compilation, not arithmetic, is what a property test of a jitted kernel
spends its time on. So each example here is a *batch* of lists at one of a
handful of shapes: an example checks :data:`BATCH` lists against the oracle,
and the programs a test compiles are bounded by the shapes, not by the number
of examples (so the ``thorough`` profile's 1,000 examples cost little more
compilation than the default 10).
"""

import numpy as np
from hypothesis import strategies as st

BATCH = 4

# Few distinct values, so most lists hold several tie blocks.
TIED_SCORES = st.sampled_from([0.0, 0.5, 0.5, 1.0, 1.0, -2.0])


def _rows(n, elements, batch):
    return st.lists(st.lists(elements, min_size=n, max_size=n), min_size=batch, max_size=batch)


@st.composite
def tied_batches(draw, *, max_n=7, batch=BATCH, judged=False):
    """``(batch, n)`` tied scores and labels in 0..3 (float64), ``n`` drawn from 1..max_n.

    With ``judged``, a third ``(batch, n)`` boolean array marks judged items.
    """
    n = draw(st.integers(1, max_n))
    scores = np.array(draw(_rows(n, TIED_SCORES, batch)), np.float64)
    labels = np.array(draw(_rows(n, st.integers(0, 3), batch)), np.float64)
    if not judged:
        return scores, labels
    return scores, labels, np.array(draw(_rows(n, st.booleans(), batch)), bool)


def extra_relevant(batch=BATCH, most=3):
    """Per list, how many relevant items lie outside it: ``(batch,)`` ints in 0..most."""
    return st.lists(st.integers(0, most), min_size=batch, max_size=batch).map(np.array)


@st.composite
def padded_batches(draw, *, width=10, max_n=6, batch=BATCH):
    """Lists of 1..max_n real items, each scattered among padding in rows of ``width`` slots.

    Returns ``(scores, labels, where, real)``: ``(batch, width)`` arrays and,
    per row, its real ``(scores, labels)`` in order. The padding is built to
    leak if it is read: tied scores of its own or NaN, labels of 9 (relevant,
    above any real maximum) and one label of -1 per row (never refused in
    padding).
    """
    scores = np.array(draw(_rows(width, TIED_SCORES, batch)), np.float64)
    labels = np.full((batch, width), 9.0)
    where = np.zeros((batch, width), bool)
    real = []
    for row in range(batch):
        n = draw(st.integers(1, max_n))
        slots = sorted(draw(st.permutations(range(width)))[:n])
        row_scores = np.array(draw(st.lists(TIED_SCORES, min_size=n, max_size=n)))
        row_labels = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), float)
        scores[row, slots], labels[row, slots], where[row, slots] = row_scores, row_labels, True
        padding = np.flatnonzero(~where[row])
        scores[row, padding[::2]] = np.nan
        labels[row, padding[0]] = -1.0
        real.append((row_scores, row_labels))
    return scores, labels, where, real
