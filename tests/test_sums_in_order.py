"""trec_eval's order of addition: the sum of a list's terms added one at a time, in rank order.

``--trec-eval --ignore-ties`` prints what trec_eval prints to the last
decimal, and on a value half-way in the fourth decimal the order of the
additions decides the digit (``tests/test_trec_eval_outputs.py`` holds such
cases). :func:`~lodestar.metrics._kernel.sum_in_order` adds a list's terms
from the first to the last; :func:`~lodestar.metrics._kernel.running_sums_in_order`
keeps every running total, so that each cut-off of ``map_cut`` reads its sum
from one pass (:func:`~lodestar.metrics._kernel.running_sum_at`). Both are
checked here **bitwise** against Python's own float64 loop, the order C's
``sum += term`` takes, on terms drawn to round differently in another order.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar.metrics import _kernel

N = 7

# Non-negative terms of very different magnitudes, so that a tree of
# additions rounds apart from the loop.
TERMS = st.lists(
    st.lists(
        st.sampled_from([0.0, 1e-17, 0.1, 1 / 3, 0.7, 1.0, 2.0**52, 3.5e15]),
        min_size=N,
        max_size=N,
    ),
    min_size=3,
    max_size=3,
)


def _loop_sum(row, k):
    total = 0.0
    for term in row[:k]:
        total += term
    return total


@given(TERMS)
@settings(deadline=None)
def test_every_running_total_is_the_loops_sum_to_the_bit(rows):
    terms = np.array(rows)
    running = np.asarray(jax.jit(_kernel.running_sums_in_order)(terms))
    expected = np.array([[_loop_sum(row, k + 1) for k in range(N)] for row in rows])
    np.testing.assert_array_equal(running, expected)
    np.testing.assert_array_equal(np.asarray(jax.jit(_kernel.sum_in_order)(terms)), expected[:, -1])


@given(TERMS)
@settings(deadline=None)
def test_the_total_at_a_cut_off_is_the_sum_of_the_terms_before_it(rows):
    """Against sum_in_order of the cut terms, for each cut-off traced, as map_cut's loop gives it."""
    terms = np.array(rows)
    cut_offs = jnp.arange(-1, N + 3)

    def at_each(terms):
        running = _kernel.running_sums_in_order(terms)
        return jax.lax.map(lambda k: _kernel.running_sum_at(running, k), cut_offs)

    def cut_then_summed(terms):
        return jax.lax.map(
            lambda k: _kernel.sum_in_order(jnp.where(jnp.arange(N) < k, terms, 0)), cut_offs
        )

    got = np.asarray(jax.jit(at_each)(terms))
    np.testing.assert_array_equal(got, np.asarray(jax.jit(cut_then_summed)(terms)))
    expected = [[_loop_sum(row, max(int(k), 0)) for row in rows] for k in cut_offs]
    np.testing.assert_array_equal(got, np.array(expected))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_sums_keep_the_dtype_and_an_empty_list_sums_to_zero(dtype):
    terms = np.full((2, 3), 0.1, dtype)
    running = _kernel.running_sums_in_order(terms)
    assert running.dtype == dtype
    assert running.shape == (2, 3)
    empty = _kernel.running_sums_in_order(np.zeros((2, 0), dtype))
    assert empty.shape == (2, 0)
    np.testing.assert_array_equal(_kernel.running_sum_at(empty, 5), np.zeros(2, dtype))
