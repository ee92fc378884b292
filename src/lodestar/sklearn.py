"""Drop-in replacements for scikit-learn's ranking scores.

``dcg_score`` and ``ndcg_score`` take the arguments of
``sklearn.metrics.dcg_score`` and ``sklearn.metrics.ndcg_score``, refuse the
same inputs with the same exception class and message text, and return the
same Python float: the (optionally ``sample_weight``-weighted) mean over the
rows of ``y_true`` and ``y_score``, both of shape ``(n_samples, n_labels)``.
``reciprocal_rank_score`` follows the same conventions.

They always compute in float64, whatever ``jax_enable_x64`` says, and agree
with scikit-learn to 1e-12 relative. The arithmetic is :mod:`lodestar.metrics`;
this module only validates like scikit-learn and averages like
``numpy.average``.

Where scikit-learn fails obscurely (a column-count mismatch surfaces there as a
broadcasting error), lodestar raises a :class:`ValueError` naming both shapes.
Three deliberate differences: ``k=True`` and ``log_base=True`` are refused
instead of being read as 1; ``dcg_score`` refuses a single-document input
with NDCG's sentence rather than a message about target types; and a
subnormal ``log_base`` (below 2.2e-308, which XLA flushes to zero) is refused.
Every normal base is computed, ``1e-300`` and ``1e300`` included. Like
scikit-learn, the drop-ins refuse complex input ("Complex data not
supported"), rows without columns and scipy.sparse matrices (which are not
array-likes to scikit-learn's parameter validation).

>>> from lodestar.sklearn import ndcg_score
>>> ndcg_score([[10, 0, 0, 1, 5]], [[0.1, 0.2, 0.3, 4, 70]])
0.6956940443813076
"""

from __future__ import annotations

import sys

import jax
import numpy as np

from lodestar import _shapes, _validation, metrics

__all__ = ["dcg_score", "ndcg_score", "reciprocal_rank_score"]

_SUPPORTED_TARGETS = (
    "multilabel-indicator",
    "continuous-multioutput",
    "multiclass-multioutput",
)


def _one_dimensional_target_type(y: np.ndarray) -> str:
    """scikit-learn's ``type_of_target`` for the 1-D inputs it then refuses."""
    if y.dtype.kind == "f" and np.any(y != y.astype(int)):
        return "continuous"
    return "multiclass" if np.unique(y).shape[0] > 2 else "binary"


def _is_sparse(x) -> bool:
    """Whether ``x`` is a scipy.sparse matrix or array (without importing scipy)."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)


def _check_array_like(value, *, name: str, caller: str, optional: bool = False) -> None:
    """scikit-learn's ``"array-like"`` parameter constraint: no scalar, no sparse matrix."""
    if optional and value is None:
        return
    if not _is_sparse(value) and (
        hasattr(value, "__len__") or hasattr(value, "shape") or hasattr(value, "__array__")
    ):
        if not np.isscalar(value):
            return
    kind = "an array-like or None" if optional else "an array-like"
    raise _validation.InvalidParameterError(
        f"The '{name}' parameter of {caller} must be {kind}. Got {value!r} instead."
    )


def _as_checked_array(x) -> np.ndarray:
    array = np.asarray(x)
    if array.dtype.kind == "c":
        raise ValueError(f"Complex data not supported\n{array}\n")
    if array.dtype.kind in "SUa":
        raise ValueError(
            "dtype='numeric' is not compatible with arrays of bytes/strings."
            "Convert your data to numeric values explicitly instead."
        )
    if array.dtype.kind == "O":
        array = array.astype(np.float64)
    if array.ndim > 2:
        raise ValueError(f"Found array with dim {array.ndim}, while dim <= 2 is required.")
    if array.shape[0] < 1 if array.ndim else True:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={array.shape}) while a minimum of 1 is required."
        )
    if array.ndim == 2 and array.shape[1] < 1:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={array.shape}) while a minimum of 1 is required."
        )
    if array.dtype.kind == "f":
        if np.isnan(array).any():
            raise ValueError("Input contains NaN.")
        if np.isinf(array).any():
            raise ValueError(f"Input contains infinity or a value too large for {array.dtype!r}.")
    return array


def _check_inputs(y_true, y_score, sample_weight, *, caller, single_document_name):
    y_true = _as_checked_array(y_true)
    y_score = _as_checked_array(y_score)
    lengths = [len(y_true), len(y_score)]
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
        if sample_weight.ndim != 1:
            raise ValueError(
                f"sample_weight must be 1-D, one weight per sample; got shape "
                f"{sample_weight.shape}."
            )
        lengths.append(len(sample_weight))
    if len(set(lengths)) > 1:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: {lengths}")
    if caller == "ndcg_score" and y_true.min() < 0:
        raise ValueError("ndcg_score should not be used on negative y_true values.")
    if y_true.ndim > 1 and y_true.shape[1] <= 1:
        raise ValueError(
            f"Computing {single_document_name} is only meaningful when there is more "
            f"than 1 document. Got {y_true.shape[1]} instead."
        )
    if y_true.ndim == 1:
        raise ValueError(
            f"Only {_SUPPORTED_TARGETS} formats are supported. Got "
            f"{_one_dimensional_target_type(y_true)} instead"
        )
    if y_true.shape != y_score.shape:
        raise ValueError(
            f"y_true and y_score must have the same shape (n_samples, n_labels); got "
            f"y_true {y_true.shape} and y_score {y_score.shape}."
        )
    return y_true, y_score, sample_weight


def _padded_lists(y_true: np.ndarray, y_score: np.ndarray):
    """Pad rows and columns up to powers of two, masking the padding out.

    Padding changes no result (it takes no part in the ranking), and bucketing
    the shapes means a stream of differently sized inputs compiles a handful
    of kernels instead of one per shape.
    """
    rows, n = y_true.shape
    shape = (_shapes.bucket(rows), _shapes.bucket(n, 8))
    labels = np.zeros(shape, np.float64)
    scores = np.zeros(shape, y_score.dtype)
    where = np.zeros(shape, bool)
    labels[:rows, :n] = y_true
    scores[:rows, :n] = y_score
    where[:rows, :n] = True
    return scores, labels, where


def _check_params(y_true, y_score, k, log_base, sample_weight, ignore_ties, *, caller):
    """scikit-learn's ``validate_params``: each parameter's constraint, in signature order."""
    _check_array_like(y_true, name="y_true", caller=caller)
    _check_array_like(y_score, name="y_score", caller=caller)
    k = _validation.check_k(k, caller=caller)
    if log_base is not None:
        # The drop-ins compute in float64, so every normal float64 base is carried.
        with jax.enable_x64(True):
            log_base = _validation.check_log_base(log_base, caller=caller)
    _check_array_like(sample_weight, name="sample_weight", caller=caller, optional=True)
    ignore_ties = _validation.check_bool(ignore_ties, name="ignore_ties", caller=caller)
    return k, log_base, ignore_ties


def _score(
    metric,
    y_true,
    y_score,
    k,
    sample_weight,
    ignore_ties,
    *,
    caller,
    metric_name,
    log_base=None,
    **options,
):
    """Validate like scikit-learn, evaluate ``metric`` in float64, take the weighted mean."""
    k, log_base, ignore_ties = _check_params(
        y_true, y_score, k, log_base, sample_weight, ignore_ties, caller=caller
    )
    if log_base is not None:
        options["log_base"] = log_base
    y_true, y_score, sample_weight = _check_inputs(
        y_true, y_score, sample_weight, caller=caller, single_document_name=metric_name
    )
    with jax.enable_x64(True):
        scores, labels, where = _padded_lists(y_true, y_score)
        per_row = metric(scores, labels, k=k, ignore_ties=ignore_ties, where=where, **options)
        return float(np.average(np.asarray(per_row)[: len(y_true)], weights=sample_weight))


def dcg_score(y_true, y_score, *, k=None, log_base=2, sample_weight=None, ignore_ties=False):
    """Mean DCG over the rows, a drop-in for ``sklearn.metrics.dcg_score``.

    Args:
      y_true: ``(n_samples, n_labels)`` relevance of each document. Negative
        values are accepted and can make the score negative.
      y_score: ``(n_samples, n_labels)`` scores the ranking is made from.
      k: Score only the first ``k`` positions; None, or a ``k`` past
        ``n_labels``, scores whole rows.
      log_base: Base of the discount, in (0, inf); below 1 the score turns
        negative, and exactly 1 makes every discount 0.
      sample_weight: ``(n_samples,)`` weights of the rows, or None. Over a
        single row it cancels, since it multiplies both halves of the mean.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders; correct only when genuine ties cannot occur.

    Returns:
      float: the weighted mean over rows of the DCG, linear gains. Unbounded
      above; use :func:`ndcg_score` for a number in [0, 1].

    Raises:
      InvalidParameterError: ``y_true`` or ``y_score`` is not an array-like (a
        scalar, None, a scipy.sparse matrix), or ``sample_weight`` is neither
        an array-like nor None; ``k`` is not None and not an int >= 1;
        ``log_base`` is not in (0, inf) (zero, negative, NaN, infinite) or is
        subnormal (below 2.2e-308); ``ignore_ties`` is not a bool.
      ValueError: an input is complex or not numeric, has more than 2
        dimensions, no rows, no columns, NaN or infinity; the inputs disagree
        in their number of rows or in shape; there are fewer than 2 documents
        per row; the input is 1-D; ``sample_weight`` has the wrong length or
        is not 1-D.
      ZeroDivisionError: ``sample_weight`` sums to zero (numpy.average's
        refusal).

    Example:
      >>> from lodestar.sklearn import dcg_score
      >>> dcg_score([[3, 2, 1, 0]], [[0.5, 0.5, 0.5, 0.5]])
      3.8424...
      >>> dcg_score([[3, 2, 1, 0]], [[0.5, 0.5, 0.5, 0.5]], ignore_ties=True)
      2.9229...

    Remarks:
      The gains are linear; use :func:`lodestar.metrics.dcg` with
      ``gain="exp2"`` for 2^label - 1.

    References:
      Järvelin & Kekäläinen, ACM TOIS 20(4), 2002.
      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _score(
        metrics.dcg,
        y_true,
        y_score,
        k,
        sample_weight,
        ignore_ties,
        caller="dcg_score",
        metric_name="NDCG",
        log_base=log_base,
        gain="linear",
    )


def ndcg_score(y_true, y_score, *, k=None, sample_weight=None, ignore_ties=False):
    """Mean NDCG over the rows, a drop-in for ``sklearn.metrics.ndcg_score``.

    Args:
      y_true: ``(n_samples, n_labels)`` non-negative relevance of each document.
      y_score: ``(n_samples, n_labels)`` scores the ranking is made from.
      k: Score only the first ``k`` positions; None, or a ``k`` past
        ``n_labels``, scores whole rows.
      sample_weight: ``(n_samples,)`` weights of the rows, or None.
      ignore_ties: Rank tied scores by descending index instead of averaging
        over their orders; correct only when genuine ties cannot occur.

    Returns:
      float in [0, 1]: the weighted mean over rows of the NDCG. A row with no
      relevant document scores 0.

    Raises:
      InvalidParameterError: as :func:`dcg_score` (without ``log_base``).
      ValueError: as :func:`dcg_score`, and when ``y_true`` holds a negative
        value.
      ZeroDivisionError: ``sample_weight`` sums to zero.

    Example:
      >>> from lodestar.sklearn import ndcg_score
      >>> ndcg_score([[10, 0, 0, 1, 5]], [[1, 0, 0, 0, 1]], k=1)
      0.75

    References:
      Järvelin & Kekäläinen, ACM TOIS 20(4), 2002.
      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _score(
        metrics.ndcg,
        y_true,
        y_score,
        k,
        sample_weight,
        ignore_ties,
        caller="ndcg_score",
        metric_name="NDCG",
        gain="linear",
    )


def reciprocal_rank_score(y_true, y_score, *, k=None, sample_weight=None, ignore_ties=False):
    """Mean reciprocal rank (MRR) over the rows, in scikit-learn's conventions.

    scikit-learn has no reciprocal-rank function; this one validates and
    averages exactly as :func:`dcg_score` does.

    Args:
      y_true: ``(n_samples, n_labels)`` relevance; any non-zero value is
        relevant, and 3 counts no more than 1.
      y_score: ``(n_samples, n_labels)`` scores the ranking is made from.
      k: Only a first relevant document within the first ``k`` positions
        counts; None, or a ``k`` past ``n_labels``, looks at whole rows.
      sample_weight: ``(n_samples,)`` weights of the rows, or None.
      ignore_ties: Rank tied scores by descending index instead of taking the
        expectation over their orders.

    Returns:
      float in [0, 1]: 1 when every row puts a relevant document first, 0 when
      no row retrieves one. A row with no relevant document contributes 0 and
      is never dropped from the mean.

    Raises:
      InvalidParameterError: as :func:`dcg_score` (without ``log_base``).
      ValueError: as :func:`dcg_score`.
      ZeroDivisionError: ``sample_weight`` sums to zero.

    Example:
      >>> from lodestar.sklearn import reciprocal_rank_score
      >>> relevance = [[0, 1, 0, 0], [1, 0, 0, 0]]
      >>> scores = [[0.9, 0.5, 0.4, 0.1], [0.9, 0.5, 0.4, 0.1]]
      >>> reciprocal_rank_score(relevance, scores)
      0.75

    References:
      Voorhees, "The TREC-8 question answering track report", TREC 1999.
      McSherry & Najork, ECIR 2008. https://doi.org/10.1007/978-3-540-78646-7_38
    """
    return _score(
        metrics.reciprocal_rank,
        y_true,
        y_score,
        k,
        sample_weight,
        ignore_ties,
        caller="reciprocal_rank_score",
        metric_name="reciprocal rank",
    )
