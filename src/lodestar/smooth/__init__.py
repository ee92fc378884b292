r"""Smooth (differentiable) ranking metrics: soft ranks, and the measures they make smooth.

The exact metrics of :mod:`lodestar.metrics` are piecewise constant in the
scores, so their gradient is zero. Every function here replaces the hard rank
of each item by a **soft rank**, a smooth function of the scores controlled by
a ``temperature`` :math:`T > 0` (in the units of the scores), and converges to
the exact metric on tie-free scores as :math:`T \to 0`.

Every function works along the **last axis**: ``scores`` and ``labels`` have
shape ``(..., n)``; :func:`ranks` returns ``(..., n)`` and the metrics return
``(...)``, one value per list.

>>> import jax
>>> import jax.numpy as jnp
>>> from lodestar import smooth
>>> scores = jnp.array([0.3, 2.0, 1.0])
>>> labels = jnp.array([1.0, 0.0, 2.0])
>>> smooth.ranks(scores, temperature=0.01).tolist()
[3.0, 1.0, 2.0]
>>> print(f"{smooth.ndcg(scores, labels, temperature=0.01):.4f}")
0.6697
>>> jax.grad(smooth.ndcg)(scores, labels).shape
(3,)

**Methods.** ``method`` selects the soft rank:

* ``"sigmoid"`` (default): the ApproxNDCG rank of Qin, Liu & Li (2010),
  :math:`r_i = 1 + \sum_{j \ne i} \sigma((s_j - s_i) / T)`. :math:`O(n^2)`
  time and memory.
* ``"neuralsort"``: the relaxed permutation matrix of Grover et al. (2019).
  :math:`O(n^2)`.
* ``"softsort"``: the relaxed permutation matrix of Prillo & Eisenschlos
  (2020). :math:`O(n^2)`.
* ``"permutahedron"``: the projection onto the permutahedron of Blondel et al.
  (2020), by isotonic regression. :math:`O(n \log n)` time, :math:`O(n)`
  memory, with a closed-form backward pass.

**Cut-off** ``k``. The soft metrics weight each item by a soft indicator of
being in the top ``k``, :math:`c_i = \sigma((s_i - t_k) / T)`, where the
threshold :math:`t_k` is the midpoint of the ``k``-th and ``(k+1)``-th largest
real scores (as Qin et al. 2010 and Rax place it); with ``k`` at or past the
number of real items, :math:`c_i = 1`. As :math:`T \to 0`, :math:`c_i` tends
to 1 for the top ``k`` items and to 0 for the others, so the soft DCG@k tends
to the exact DCG@k.

**Measures declared once.** :func:`precision`, :func:`recall`,
:func:`average_precision`, :func:`err`, :func:`rank_biased_precision` and
:func:`r_precision` are their exact measures' declarations in the registry, a
utility of each item's rank summed over the items (``lodestar._rank_sums``),
evaluated on soft ranks: the rank is the soft rank of ``method``, the cut-off
the soft one above (R-precision's at each list's own :math:`c`), and the
items ranked above an item are weighted by :math:`\sigma((s_j - s_i) / T)`.
:func:`reciprocal_rank` and :func:`hits` read the first relevant item through
a softmax over the relevant items' scores instead.

**Padding.** ``where`` is a boolean mask; ``False`` marks padding, which takes
no part: real items score and differentiate exactly as without it, padding
gets a zero gradient (and a soft rank of 0), and a list with no real item
scores 0.

**Packed lists.** ``segments`` (integers, ``(..., n)``) packs several lists
into one row, as in :mod:`lodestar.metrics`: :func:`ranks` then ranks each
item within its own list, and the metrics return ``(..., max_segments)``, one
value per list, with the values and gradients of each list padded on its own.

>>> packed = jnp.array([0.3, 2.0, 1.0, 5.0, 4.0])
>>> smooth.ranks(packed, temperature=0.01, segments=jnp.array([0, 0, 0, 1, 1])).tolist()
[3.0, 1.0, 2.0, 1.0, 2.0]

**Numerics.** Half-precision inputs are computed in float32, as in
:mod:`lodestar.metrics`. Values and gradients stay finite for tied scores,
scores of :math:`\pm 10^6`, one-item and fully padded lists, and every
temperature from the smallest normal number of the compute dtype
(:math:`1.2 \times 10^{-38}` in float32, :math:`2.2 \times 10^{-308}` in
float64) up, where the soft ranks are the hard ones; a smaller temperature
would be flushed to zero and is refused. Options are checked when the function
is traced; NaN and infinity in real items raise on concrete arrays, as in
:mod:`lodestar.metrics`, and so do ``gain="exp2"`` labels whose gains overflow
(below 128 in float32, 1024 in float64).

**Bad values under jit.** Traced values cannot be refused, so a list holding
a NaN or infinite score or label (or a negative label in :func:`ndcg`, or
overflowing exp2 gains) gives NaN: its value, every real item's soft rank,
and the gradient with respect to its real scores. Other lists are unaffected.
Unlike the exact metrics, an infinite score gives NaN, since a soft rank is a
function of the score values. See decision 0003.

References:
  Qin, Liu & Li, "A general approximation framework for direct optimization of
  information retrieval measures", Information Retrieval 13(4), 2010.
  https://doi.org/10.1007/s10791-009-9124-x

  Grover, Wang, Zweig & Ermon, "Stochastic optimization of sorting networks via
  continuous relaxations", ICLR 2019. https://arxiv.org/abs/1903.08850

  Prillo & Eisenschlos, "SoftSort: a continuous relaxation for the argsort
  operator", ICML 2020. https://arxiv.org/abs/2006.16038

  Blondel, Teboul, Berthet & Djolonga, "Fast differentiable sorting and
  ranking", ICML 2020. https://arxiv.org/abs/2002.08871
"""

from __future__ import annotations

from lodestar.smooth._common import METHODS as METHODS
from lodestar.smooth._dcg import dcg as dcg
from lodestar.smooth._dcg import ndcg as ndcg
from lodestar.smooth._rank_sum_measures import average_precision as average_precision
from lodestar.smooth._rank_sum_measures import err as err
from lodestar.smooth._rank_sum_measures import precision as precision
from lodestar.smooth._rank_sum_measures import r_precision as r_precision
from lodestar.smooth._rank_sum_measures import rank_biased_precision as rank_biased_precision
from lodestar.smooth._rank_sum_measures import recall as recall
from lodestar.smooth._ranks import ranks as ranks
from lodestar.smooth._reciprocal_rank import hits as hits
from lodestar.smooth._reciprocal_rank import reciprocal_rank as reciprocal_rank

__all__ = [
    "average_precision",
    "dcg",
    "err",
    "hits",
    "ndcg",
    "precision",
    "r_precision",
    "rank_biased_precision",
    "ranks",
    "recall",
    "reciprocal_rank",
]
