r"""Differentiable ranking losses for training scoring models.

Every loss here ranks along the **last axis**: ``scores`` and ``labels`` have
shape ``(..., n)`` and every leading axis is a batch axis, one list per index.
Each loss is first computed per list, then reduced:

>>> import jax
>>> import jax.numpy as jnp
>>> from lodestar import losses
>>> scores = jnp.array([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]])
>>> labels = jnp.array([[2.0, 1.0, 0.0], [2.0, 1.0, 0.0]])
>>> print(jnp.round(losses.softmax_loss(scores, labels, reduction="none"), 4))
[0.7409 2.0743]
>>> jax.grad(losses.softmax_loss)(scores, labels).shape
(2, 3)

**Signature.** Every loss is called as ``fn(scores, labels, *, where=None,
weights=None, reduction="mean", ...)``, with its own options keyword-only.
Higher scores rank first; higher labels are more relevant.

**Padding.** ``where`` is a boolean mask of shape ``(..., n)``; ``False`` marks
padding, which takes no part in the loss: a padded list has exactly the loss
and the real-item gradients of the unpadded list, and padding gets a zero
gradient. A list with no real item has a loss of 0 (never NaN) and a zero
gradient.

**Weights.** ``weights`` of shape ``(...)`` (the batch shape, ``()`` for a
single list) are **per-list**: each list's loss is multiplied by its weight
before the reduction. ``weights`` of the scores' shape ``(..., n)`` are
**per-item**, as in Rax: a pointwise loss weights each item's term, the
softmax losses weight each item's label in the target distribution, ListMLE
each position's term by the weight of the item placed there, Uni-Rank each
item's term, a pairwise loss (LambdaLoss included) each pair ``y_i > y_j``
(every ordered pair for the pairwise MSE) by the weight of item ``i``, and
ApproxNDCG and NeuralNDCG each item's gain (and the ideal DCG is that of the
weighted gains). With packed lists, per-list weights
have shape ``(..., max_segments)``; when that equals ``(..., n)`` the weights
are per item. Weights must be finite and non-negative (checked on concrete
arrays).

**Reduction.** ``reduction="none"`` returns the ``(...)`` weighted per-list
losses; ``"sum"`` returns their sum (so the ``"none"`` values always sum to
the ``"sum"``); ``"mean"`` divides that sum by the number of lists with at
least one real item (0 if there is none). With weights, ``"mean"`` is thus
``sum(w * loss) / count`` and not ``sum(w * loss) / sum(w)``; divide the
``"sum"`` by ``sum(w)`` yourself if you want the latter.

**Packed lists.** ``segments`` (integers, ``(..., n)``) packs several lists
into one row, as in :mod:`lodestar.metrics`: every list of every row is then
one list of the reduction. ``"none"`` returns ``(..., max_segments)``, one loss
per list (0 for an id with no real item); ``"mean"`` averages over the lists
with a real item; ``weights`` has shape ``(..., max_segments)``, one weight per
list. Each list's loss and gradients are those of the list padded on its own.
Under ``jit``, ``max_segments`` is needed only for ``"none"``, whose shape it
sets: with ``"mean"`` or ``"sum"`` the traced ids may be any integers (query
ids, as in Rax), and each row is laid out as up to ``n`` lists of
``max_segment_size`` slots, ``n`` by default; give ``max_segment_size`` (room
for the longest list) to keep a long row's layout small.

>>> segments = jnp.array([[0, 0, 0], [0, 1, 1]])
>>> per_list = losses.pairwise_logistic_loss(scores, labels, segments=segments, reduction="none")
>>> print(jnp.round(per_list, 4))  # row 0 holds one list, row 1 two
[[0.7535 0.    ]
 [0.     1.3133]]

**Numerics.** Values and gradients stay finite for tied scores, all-zero
labels, one-item and fully padded lists, and scores of :math:`\pm 10^6`.
Half-precision inputs are computed, and returned, in float32, as in
:mod:`lodestar.metrics`. Options and shapes are checked when the function is
traced; NaN and infinity in real items (and negative labels, where gains or
label distributions need them non-negative, and ``gain="exp2"`` labels whose
gains overflow the dtype: below 128 in float32, 1024 in float64) raise
:class:`ValueError` on concrete arrays. A ``temperature`` below the smallest
normal number of the dtype (1.2e-38 in float32) is refused, under ``jit``
too; from there up values and gradients are never NaN.

**Bad values under jit.** Traced values cannot be refused, so a list holding
one (a NaN or infinite score or label, a refused negative label, overflowing
exp2 gains) gets a per-list loss of NaN, and so does the reduced loss; with
``reduction="none"`` only that list is NaN. The gradient is NaN for that
list's real items (0 for its padding), so that an optimiser sees the NaN;
every other list keeps its value and gradient. See decision 0003.

>>> bad = labels.at[0, 1].set(jnp.nan)
>>> per_list = jax.jit(lambda s, y: losses.softmax_loss(s, y, reduction="none"))
>>> print(jnp.round(per_list(scores, bad), 4))
[   nan 2.0743]

**Lambda weights.** The pairwise losses take ``lambdaweight=``, a weight of
each pair computed from the current ranks, gains or labels
(:func:`dcg_lambdaweight`, :func:`dcg2_lambdaweight`,
:func:`labeldiff_lambdaweight`), as Rax's ``lambdaweight_fn=``. Weights add
and scale (``dcg + mu * dcg2`` is LambdaLoss's NDCG-Loss2++), carry no
gradient with respect to the scores, and are computed per item and combined
inside the blocks of pairs, so a weighted loss keeps the unweighted one's
memory (decision 0044).

**Hyperparameters under jit.** ``temperature``, ``mu``, ``margin``,
``epsilon`` and the factors of a :class:`LambdaWeight` may be traced, so that
one compiled step anneals them. Concrete
values are checked eagerly; a traced value outside its range makes the loss
NaN (with a NaN gradient), never a plausible number. Each has its true
derivative: :func:`jax.grad` or :func:`jax.jvp` with respect to the option,
to learn or tune it, differentiates the loss as a finite difference would
(what :func:`lambda_loss` holds fixed is its ranks and gains, not ``mu``).

>>> step = jax.jit(lambda s, y, t: losses.approx_ndcg_loss(s, y, temperature=t))
>>> print(f"{step(scores, labels, 0.5):.4f}", step(scores, labels, -1.0))
-0.7627 nan

**Long lists.** The pairwise losses, LambdaLoss and ApproxNDCG sum over the
pairs of a list in column blocks, with each block recomputed on the way back,
so their value and gradient take memory linear in the list length (0.1 GiB of
temporaries at 32 lists of 10,000 items, where the pairs would take 36 GiB).
NeuralNDCG relaxes the permutation itself, an (n, n) matrix per list, and its
Sinkhorn steps scale that one matrix by two vectors; past 2**26 (list,
position, item) entries the matrix is never held and its products are
recomputed in blocks too (0.55 GiB at 32 x 10,000, at n² exponentials per
product: a GPU's work). None uses a custom derivative rule: ``grad``,
``jvp``, ``jacfwd`` and Hessian-vector products all work (decision 0029).

**Rank-aware losses.** :func:`lambda_loss` takes its current ranks from the
exact rank engine of :mod:`lodestar.metrics` (ties broken by descending index,
ranks carry no gradient); :func:`approx_ndcg_loss` is
``-lodestar.smooth.ndcg(..., method="sigmoid")``; :func:`neural_ndcg_loss`
relaxes the sorting permutation itself. All three default to the exponential
gain :math:`2^\ell - 1` of the papers that define them, unlike the linear
default of :mod:`lodestar.metrics`.

**Transformations.** :func:`approx_t12n`, :func:`bound_t12n` and
:func:`gumbel_t12n` make losses, as Rax's functions of the same names do:
minus a measure's smooth counterpart, minus DCG or NDCG at upper bounds of
the ranks, and any loss averaged over Gumbel-perturbed scores. They take a
measure or a loss and return the loss; the loss takes the arguments above.

>>> from lodestar import metrics
>>> stochastic_ndcg = losses.gumbel_t12n(losses.approx_t12n(metrics.ndcg), samples=4)
>>> stochastic_ndcg(scores, labels, key=jax.random.key(0)).shape
()
"""

from __future__ import annotations

from lodestar.losses._lambdaweights import LambdaWeight as LambdaWeight
from lodestar.losses._lambdaweights import dcg2_lambdaweight as dcg2_lambdaweight
from lodestar.losses._lambdaweights import dcg_lambdaweight as dcg_lambdaweight
from lodestar.losses._lambdaweights import labeldiff_lambdaweight as labeldiff_lambdaweight
from lodestar.losses._listwise import listmle_loss as listmle_loss
from lodestar.losses._listwise import poly1_softmax_loss as poly1_softmax_loss
from lodestar.losses._listwise import softmax_loss as softmax_loss
from lodestar.losses._listwise import unique_softmax_loss as unique_softmax_loss
from lodestar.losses._ndcg import approx_ndcg_loss as approx_ndcg_loss
from lodestar.losses._ndcg import lambda_loss as lambda_loss
from lodestar.losses._neural_ndcg import neural_ndcg_loss as neural_ndcg_loss
from lodestar.losses._pairwise import pairwise_hinge_loss as pairwise_hinge_loss
from lodestar.losses._pairwise import pairwise_logistic_loss as pairwise_logistic_loss
from lodestar.losses._pairwise import pairwise_mse_loss as pairwise_mse_loss
from lodestar.losses._pairwise import pairwise_qr_loss as pairwise_qr_loss
from lodestar.losses._pairwise import pairwise_soft_zero_one_loss as pairwise_soft_zero_one_loss
from lodestar.losses._pointwise import pointwise_mse_loss as pointwise_mse_loss
from lodestar.losses._pointwise import pointwise_sigmoid_loss as pointwise_sigmoid_loss
from lodestar.losses._t12n import approx_t12n as approx_t12n
from lodestar.losses._t12n import bound_t12n as bound_t12n
from lodestar.losses._t12n import gumbel_t12n as gumbel_t12n

__all__ = [
    "LambdaWeight",
    "approx_ndcg_loss",
    "approx_t12n",
    "bound_t12n",
    "dcg2_lambdaweight",
    "dcg_lambdaweight",
    "labeldiff_lambdaweight",
    "lambda_loss",
    "listmle_loss",
    "neural_ndcg_loss",
    "pairwise_hinge_loss",
    "pairwise_logistic_loss",
    "pairwise_mse_loss",
    "pairwise_qr_loss",
    "pairwise_soft_zero_one_loss",
    "pointwise_mse_loss",
    "pointwise_sigmoid_loss",
    "poly1_softmax_loss",
    "softmax_loss",
    "gumbel_t12n",
    "unique_softmax_loss",
]
