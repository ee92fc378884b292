"""Exact ranking metrics, averaged over tied scores.

Every function here scores lists along the **last axis**: ``scores`` and
``labels`` have shape ``(..., n)`` with any number of leading batch axes, and
the result has shape ``(...)``, one value per list. Nothing is reduced; take
the mean yourself, or use :mod:`lodestar.sklearn` for scikit-learn's
weighted mean.

>>> import jax.numpy as jnp
>>> import lodestar
>>> scores = jnp.array([[0.9, 0.5, 0.5, 0.1], [0.1, 0.2, 0.3, 0.4]])
>>> labels = jnp.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
>>> lodestar.metrics.reciprocal_rank(scores, labels).tolist()
[0.41666..., 1.0]

The first list's relevant item ties with another for positions 2 and 3, so its
reciprocal rank is the mean of 1/2 and 1/3.

**Ties.** By default a tie between scores is averaged over every order of the
tied items (McSherry & Najork, 2008), which is what ``sklearn.metrics.dcg_score``
computes. ``ignore_ties=True`` instead ranks tied items by descending index,
deterministically: faster to reason about, and correct only when real ties
cannot occur.

**Padding.** ``where`` is a boolean mask of shape ``(..., n)``; ``False`` marks
padding, which takes no part in the ranking or in the ideal DCG. A padded list
scores exactly what the unpadded list scores, and a list with no real items
scores 0.

**Packed lists.** ``segments``, an integer array of shape ``(..., n)``, packs
several lists into one row: item ``i`` belongs to list ``segments[..., i]``,
and the result has shape ``(..., max_segments)``, one value per list. Each
list scores exactly what it scores padded on its own (ties are averaged within
a list, never across lists), and an id with no real item scores 0 like an
empty list. Padding (``where=False``) belongs to no list, whatever its id.

>>> scores = jnp.array([0.9, 0.5, 0.5, 0.1, 0.3])
>>> labels = jnp.array([0.0, 1.0, 0.0, 1.0, 0.0])
>>> lodestar.metrics.reciprocal_rank(scores, labels, segments=jnp.array([0, 0, 0, 1, 1])).tolist()
[0.41666..., 0.5]

``max_segments`` (the number of lists per row) sets the result's shape, so it
is required under :func:`jax.jit`; ``max_segment_size`` (room for the longest
list) bounds the work, which grows with ``max_segments * max_segment_size``.
Ids outside ``[0, max_segments)`` and lists longer than ``max_segment_size``
are refused like NaN scores (below): on concrete ids they raise, and under
``jit`` every list of that row scores NaN. See decision 0009.

**Transformations.** Every function works under :func:`jax.jit` and
:func:`jax.vmap` and on any backend. Ranking is piecewise constant in the
scores, so :func:`jax.grad` with respect to the scores is zero; for training
use :mod:`lodestar.smooth` or :mod:`lodestar.losses`.

**Bad input.** Options (``k``, ``log_base``, ``gain``) and shapes are checked
when the function is traced, so they raise under ``jit`` too. NaN and infinity
in real items (and negative labels, except in :func:`dcg` and
:func:`reciprocal_rank`) raise :class:`ValueError` on
concrete arrays. Under ``jit`` they are checked inside
:func:`lodestar.value_checks_under_jit` through
:func:`jax.experimental.checkify.checkify`; otherwise a list holding a NaN score
or a label those checks refuse gives NaN, never a plausible number. So do
``gain="exp2"`` labels whose gains overflow the dtype (128 or more in float32,
1024 in float64): refused on concrete arrays, NaN under ``jit``.

**Dtypes.** The result is floating: the promoted floating dtype of the inputs
(float32 in, float32 out; float64 with ``jax_enable_x64``), with float16 and
bfloat16 computed in float32. Integer and boolean scores are ranked by value.
"""

from lodestar._gains import GainTable as GainTable
from lodestar.metrics._average_precision import average_precision as average_precision
from lodestar.metrics._bpref import bpref as bpref
from lodestar.metrics._counts import (
    num_nonrelevant_judged_retrieved as num_nonrelevant_judged_retrieved,
)
from lodestar.metrics._counts import num_relevant as num_relevant
from lodestar.metrics._counts import num_relevant_retrieved as num_relevant_retrieved
from lodestar.metrics._counts import num_retrieved as num_retrieved
from lodestar.metrics._counts import unjudged as unjudged
from lodestar.metrics._dcg import dcg as dcg
from lodestar.metrics._dcg import ndcg as ndcg
from lodestar.metrics._err import err as err
from lodestar.metrics._first_relevant import hits as hits
from lodestar.metrics._first_relevant import reciprocal_rank as reciprocal_rank
from lodestar.metrics._infap import inferred_average_precision as inferred_average_precision
from lodestar.metrics._interpolated import eleven_point_average as eleven_point_average
from lodestar.metrics._interpolated import interpolated_precision as interpolated_precision
from lodestar.metrics._ndcg_averages import ndcg_at_gain_levels as ndcg_at_gain_levels
from lodestar.metrics._ndcg_averages import ndcg_at_relevant as ndcg_at_relevant
from lodestar.metrics._normalized_gain import binary_normalized_gain as binary_normalized_gain
from lodestar.metrics._normalized_gain import normalized_gain as normalized_gain
from lodestar.metrics._precision import precision as precision
from lodestar.metrics._precision import recall as recall
from lodestar.metrics._r_precision import r_precision as r_precision
from lodestar.metrics._r_precision import relative_precision as relative_precision
from lodestar.metrics._rbp import rank_biased_precision as rank_biased_precision
from lodestar.metrics._rbp import rank_biased_precision_residual as rank_biased_precision_residual
from lodestar.metrics._set import set_average_precision as set_average_precision
from lodestar.metrics._set import set_f as set_f
from lodestar.metrics._set import set_precision as set_precision
from lodestar.metrics._set import set_recall as set_recall
from lodestar.metrics._set import set_relative_precision as set_relative_precision
from lodestar.metrics._set import utility as utility
from lodestar.metrics._tie_range import tie_range as tie_range

__all__ = [
    "average_precision",
    "dcg",
    "err",
    "hits",
    "ndcg",
    "precision",
    "recall",
    "reciprocal_rank",
    # Set measures, counts, R-precision and rank-biased precision (decision 0015).
    "num_nonrelevant_judged_retrieved",
    "num_relevant",
    "num_relevant_retrieved",
    "num_retrieved",
    "r_precision",
    "rank_biased_precision",
    "rank_biased_precision_residual",
    "relative_precision",
    "set_average_precision",
    "set_f",
    "set_precision",
    "set_recall",
    "set_relative_precision",
    "unjudged",
    "utility",
    # The range ties leave a measure (decision 0020).
    "tie_range",
    # bpref, inferred AP and the normalized gains (decision 0016).
    "bpref",
    "inferred_average_precision",
    "binary_normalized_gain",
    "normalized_gain",
    # Interpolated precision and the NDCG family beyond ndcg (decision 0017).
    "GainTable",
    "ndcg_at_gain_levels",
    "ndcg_at_relevant",
    "interpolated_precision",
    "eleven_point_average",
]
