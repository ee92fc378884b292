"""Learning-to-rank data: a synthetic generator and a LETOR/svmlight reader.

Both return the same padded form, a :class:`RankingData`: one row per query,
documents along the second axis, padding at the end of each row and marked
False in ``where``. That is the layout :mod:`lodestar.metrics` scores, so a
model's scores go straight into a metric with ``where=data.where``:

>>> import jax
>>> from lodestar import datasets, metrics
>>> data = datasets.synthetic_ltr(jax.random.key(0), 8, 20, 5)
>>> data.features.shape, data.labels.shape, data.where.shape
((8, 20, 5), (8, 20), (8, 20))
>>> scores = data.features[..., 0]  # rank by the first feature
>>> metrics.ndcg(scores, data.labels, k=10, where=data.where).shape
(8,)

* :func:`synthetic_ltr` draws a learnable ranking task with JAX (jit-able): graded
  labels 0-4 from a hidden non-linear model of the features plus noise, with
  lists of varying length.
* :func:`load_svmlight` reads the text format of the LETOR, MSLR-WEB and Yahoo!
  learning-to-rank collections (plain or gzip-compressed) into NumPy arrays.
"""

from __future__ import annotations

import functools
import math
import os
import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _files, _slates, _validation
from lodestar._validation import InvalidParameterError

__all__ = ["RankingData", "load_svmlight", "synthetic_ltr"]


class RankingData(NamedTuple):
    """Padded learning-to-rank data: ``n_queries`` lists of up to ``list_size`` documents.

    Documents of query ``q`` fill ``features[q, :m]`` and ``labels[q, :m]``,
    where ``m = where[q].sum()``; the padding after them is 0 in ``features``
    and ``labels`` and False in ``where``. Being a named tuple, it unpacks
    (``features, labels, where, qids = data``) and is a JAX pytree.

    Attributes:
      features: ``(n_queries, list_size, n_features)`` floating feature vectors.
      labels: ``(n_queries, list_size)`` graded relevance, floating.
      where: ``(n_queries, list_size)`` boolean mask; False marks padding.
      qids: ``(n_queries,)`` integer query ids, in the order of the rows.
    """

    features: np.ndarray | jax.Array
    labels: np.ndarray | jax.Array
    where: np.ndarray | jax.Array
    qids: np.ndarray | jax.Array


# --------------------------------------------------------------------------
# Synthetic data
# --------------------------------------------------------------------------

# Cumulative share of labels below 1, 2, 3 and 4: about 50% of documents are
# graded 0, 30% 1, 13% 2, 5% 3 and 2% 4, close to MSLR-WEB30K's distribution.
_GRADE_QUANTILES = (0.50, 0.80, 0.93, 0.98)
_HIDDEN_UNITS = 16
_REFERENCE_SIZE = 8192
_QUERY_FEATURE_SHARE = 0.2  # share of each feature's variance common to a query
_QUERY_OFFSET_SD = 0.5  # per-query shift of the noisy relevance (query difficulty)
_TASK_SEED = 0x10DE57A
_TERM_WEIGHTS = np.array([0.7, 1.0, 1.0])  # linear, tanh network, squared
_F32 = jnp.float32  # the data are drawn in float32 whatever the dtype asked for


def _check_size(value, *, name: str, low: int) -> int:
    return _validation.Interval(int, low).check(value, name=name, caller="synthetic_ltr")


class _HiddenModel(NamedTuple):
    """Constants of one task's hidden relevance model (see :func:`_hidden_model`)."""

    w: np.ndarray  # (f,) linear term
    u: np.ndarray  # (f, h) hidden layer
    b: np.ndarray  # (h,)
    v: np.ndarray  # (h,) output layer
    a: np.ndarray  # (f,) squared projection
    mean: np.ndarray  # (3,) reference mean of the three terms
    weights: np.ndarray  # (3,) mixing weights over the reference standard deviations
    reference: np.ndarray  # (_REFERENCE_SIZE,) hidden relevance of a reference sample
    reference_offset: np.ndarray  # (_REFERENCE_SIZE,) query offsets of that sample
    reference_noise: np.ndarray  # (_REFERENCE_SIZE,) standard normal label noise


def _terms(model: _HiddenModel, x, xp):
    """The three terms of the hidden relevance of ``x`` (``(..., f)``), in NumPy or JAX."""
    hidden = xp.tanh(x @ model.u + model.b) @ model.v
    return xp.stack([x @ model.w, hidden, (x @ model.a) ** 2], axis=-1)


@functools.lru_cache(maxsize=32)
def _hidden_model(task: int, n_features: int) -> _HiddenModel:
    """The hidden model of ``task``, a fixed function of the features.

    It mixes a linear term, a random one-hidden-layer tanh network and a
    squared projection, each standardised on a reference sample, so that a
    linear scorer recovers part of the signal and a non-linear one more. The
    constants are drawn with NumPy from ``(task, n_features)`` alone, never
    from the key that draws the data, and become constants of the compiled
    draw.
    """
    rng = np.random.default_rng([_TASK_SEED, task, n_features])
    f, h = n_features, _HIDDEN_UNITS
    model = _HiddenModel(
        w=rng.standard_normal(f) / math.sqrt(f),
        u=rng.standard_normal((f, h)) * (2.0 / math.sqrt(f)),
        b=rng.standard_normal(h),
        v=rng.standard_normal(h) / math.sqrt(h),
        a=rng.standard_normal(f) / math.sqrt(f),
        mean=np.zeros(3),
        weights=np.ones(3),
        reference=np.zeros(0),
        reference_offset=_QUERY_OFFSET_SD * rng.standard_normal(_REFERENCE_SIZE),
        reference_noise=rng.standard_normal(_REFERENCE_SIZE),
    )
    terms = _terms(model, rng.standard_normal((_REFERENCE_SIZE, f)), np)
    mean = terms.mean(axis=0)
    weights = _TERM_WEIGHTS / terms.std(axis=0)
    reference = (terms - mean) @ weights
    weights = weights / reference.std()
    model = model._replace(mean=mean, weights=weights, reference=reference / reference.std())
    return model._replace(**{k: np.asarray(v, np.float32) for k, v in model._asdict().items()})


@functools.lru_cache(maxsize=128)
def _grade_cuts(task: int, n_features: int, noise: float) -> np.ndarray:
    """Cut points between the grades: quantiles of the noisy reference relevance."""
    model = _hidden_model(task, n_features)
    noisy = (
        model.reference.astype(np.float64)
        + model.reference_offset
        + noise * model.reference_noise.astype(np.float64)
    )
    return np.quantile(noisy, _GRADE_QUANTILES).astype(np.float32)


@functools.partial(
    jax.jit,
    static_argnames=("n_queries", "list_size", "n_features", "min_list_size", "task", "dtype"),
)
def _draw(key, noise, cuts, *, n_queries, list_size, n_features, min_list_size, task, dtype):
    """The body of :func:`synthetic_ltr`, compiled once per set of sizes."""
    model = _hidden_model(task, n_features)
    k_length, k_normal = jax.random.split(key)
    lengths = jax.random.randint(k_length, (n_queries, 1), min_list_size, list_size + 1)
    where = jnp.arange(list_size) < lengths

    # One draw of standard normals, cut into the four kinds needed.
    q, n, f = n_queries, list_size, n_features
    sizes = np.cumsum([q * f, q * n * f, q, q * n])
    normal = jax.random.normal(k_normal, (int(sizes[-1]),), _F32)
    common, own, offset, eps = jnp.split(normal, sizes[:-1])
    share = _QUERY_FEATURE_SHARE
    features = math.sqrt(share) * common.reshape(q, 1, f) + math.sqrt(1 - share) * own.reshape(
        q, n, f
    )
    relevance = (_terms(model, features, jnp) - model.mean) @ model.weights
    noisy = relevance + _QUERY_OFFSET_SD * offset.reshape(q, 1) + noise * eps.reshape(q, n)
    labels = jnp.sum(noisy[..., None] > cuts, axis=-1)

    features = jnp.where(where[..., None], features, 0).astype(dtype)
    labels = jnp.where(where, labels, 0).astype(dtype)
    return features, labels, where


def synthetic_ltr(
    key: jax.Array,
    n_queries: int,
    list_size: int,
    n_features: int,
    *,
    min_list_size: int | None = None,
    noise: float = 0.5,
    task: int = 0,
    dtype=jnp.float32,
) -> RankingData:
    """Draw a synthetic learning-to-rank data set with graded labels 0-4.

    Each query draws a list length uniformly from ``[min_list_size,
    list_size]`` and that many documents. A document's features are standard
    normal, with a share common to its query (so documents of one query look
    alike, as in real collections). Its label grades a hidden relevance, a
    fixed non-linear function of the features, plus a per-query offset and
    Gaussian noise of scale ``noise`` (the hidden relevance has unit
    variance): the grades cut that noisy relevance at fixed quantiles, so
    about 50% of documents are graded 0, 30% 1, 13% 2, 5% 3 and 2% 4,
    whatever ``noise`` is. Some queries have no relevant document at all.

    The hidden model depends only on ``task`` and ``n_features``, not on
    ``key``: data sets drawn with different keys are independent samples of
    one task, so one can train on one key and evaluate on another.

    Args:
      key: A JAX PRNG key (``jax.random.key`` or ``jax.random.PRNGKey``).
      n_queries: Number of queries (rows), >= 0.
      list_size: Longest list, and the padded width; >= 1.
      n_features: Features per document, >= 1.
      min_list_size: Shortest list, in ``[1, list_size]``. Default
        ``min(list_size, max(2, list_size // 4))``. Equal to ``list_size``
        for lists without padding.
      noise: Standard deviation of the label noise, >= 0; 0 makes the labels
        a deterministic function of the features and the query.
      task: Which hidden model, an int >= 0.
      dtype: Floating dtype of ``features`` and ``labels``. The data are drawn
        in float32 whatever it is, so the labels and the mask do not depend
        on it.

    Returns:
      A :class:`RankingData` of JAX arrays: ``features`` of shape
      ``(n_queries, list_size, n_features)``, ``labels`` (integers 0-4 stored
      as ``dtype``) and ``where`` of shape ``(n_queries, list_size)``, and
      ``qids = arange(n_queries)``. Padding is at the end of each row, with
      features and labels 0. The same key and arguments give the same data.

    Raises:
      InvalidParameterError: a size is not an int in its range, ``noise`` is
        negative or not finite, ``task`` is not an int >= 0, or ``dtype`` is
        not floating.

    Example:
      The sizes are static, so under :func:`jax.jit` they are static
      arguments:

      >>> import jax
      >>> from lodestar import datasets
      >>> draw = jax.jit(datasets.synthetic_ltr, static_argnums=(1, 2, 3))
      >>> data = draw(jax.random.key(1), 100, 30, 10)
      >>> data.labels.min().item(), data.labels.max().item()
      (0.0, 4.0)
      >>> lengths = data.where.sum(axis=1)
      >>> bool((lengths >= 7).all() and (lengths <= 30).all())
      True
    """
    n_queries = _check_size(n_queries, name="n_queries", low=0)
    list_size = _check_size(list_size, name="list_size", low=1)
    n_features = _check_size(n_features, name="n_features", low=1)
    task = _check_size(task, name="task", low=0)
    shortest: int | None = _validation.Interval(int, 1, list_size, "both", "list_size").check(
        min_list_size, name="min_list_size", caller="synthetic_ltr", none=True
    )
    if shortest is None:
        shortest = min(list_size, max(2, list_size // 4))
    noise = _validation.Interval(float, 0.0, math.inf, "left").check(
        noise, name="noise", caller="synthetic_ltr"
    )
    if not jnp.issubdtype(dtype, jnp.floating):
        raise InvalidParameterError(
            f"The 'dtype' parameter of synthetic_ltr must be a floating dtype. Got {dtype!r} "
            "instead."
        )

    features, labels, where = _draw(
        key,
        jnp.float32(noise),
        _grade_cuts(task, n_features, float(noise)),
        n_queries=n_queries,
        list_size=list_size,
        n_features=n_features,
        min_list_size=shortest,
        task=task,
        dtype=jnp.dtype(dtype),
    )
    return RankingData(features, labels, where, jnp.arange(n_queries))


# --------------------------------------------------------------------------
# svmlight / LETOR files
# --------------------------------------------------------------------------

# Numbers in the decimal forms C, Python and NumPy all read the same way;
# "nan", "inf" and hexadecimal are refused. re.ASCII keeps \d and \s to ASCII.
_NUMBER = rb"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER, re.ASCII)
_QID_RE = re.compile(rb"qid:(\d{1,18})", re.ASCII)
_FEATURES_RE = re.compile(rb"(?:\d+:" + _NUMBER + rb"(?:\s+\d+:" + _NUMBER + rb")*)?\s*", re.ASCII)
_FEATURE_ID_RE = re.compile(rb"-?\d+", re.ASCII)
_MAX_FEATURE_ID = 2**31 - 1
# The widest feature axis inferred from the ids alone. Learning-to-rank
# collections have a few hundred features (MSLR-WEB 136, Istella 220, Yahoo!
# 700); an id far beyond is more likely a typo or hostile input, and would
# make every document's dense feature vector that long. n_features lifts it.
_MAX_INFERRED_FEATURES = 2**16
_SHOWN_BYTES = 60


def _show(token: bytes | bytearray) -> str:
    shown = repr(token[:_SHOWN_BYTES].decode("utf-8", "backslashreplace"))
    if len(token) > _SHOWN_BYTES:
        shown += f" (first {_SHOWN_BYTES} of {len(token)} bytes)"
    return shown


def _nbytes(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


def _finite(text: bytes | bytearray, limit: float) -> bool:
    return _NUMBER_RE.fullmatch(text) is not None and abs(float(text)) <= limit


def _line_error(
    body: bytes | bytearray,
    *,
    n_features: int | None,
    limit: float,
    itemsize: int,
    qid: bool = True,
    first_line: int | None = None,
) -> str | None:
    """What is wrong with one non-blank line (comment removed); None if nothing.

    This is the slow, token-by-token reading that words the refusals; the
    fast path in :func:`load_svmlight` only finds which line to hand it.
    ``qid`` says whether the line must carry ``qid:<id>`` after its label
    (True) or must not (False). ``first_line``, given with ``group=``, is
    the 1-based number of the first document line, which decided ``qid``.
    """
    head = body.split(None, 2)
    if not _finite(head[0], limit):
        return f"expected a finite number as the label, got {_show(head[0])}"
    if qid:
        mixed = ""
        if first_line is not None:
            mixed = (
                f" (with group=, every document line has 'qid:<id>' or none has, and line "
                f"{first_line} has one)"
            )
        if len(head) < 2:
            return "expected 'qid:<id>' after the label, got end of line" + mixed
        if not head[1].startswith(b"qid:"):
            return f"expected 'qid:<id>' after the label, got {_show(head[1])}" + mixed
        if _QID_RE.fullmatch(head[1]) is None:
            return f"expected a non-negative integer query id, got {_show(head[1])}"
        tokens = head[2].split() if len(head) == 3 else ()
    else:
        if len(head) > 1 and head[1].startswith(b"qid:"):
            return (
                f"unexpected {_show(head[1])}: with group=, every document line has "
                f"'qid:<id>' or none has, and line {first_line} has none"
            )
        tokens = body.split()[1:]
    seen = set()
    for token in tokens:
        text_id, colon, value = token.partition(b":")
        if not colon or _FEATURE_ID_RE.fullmatch(text_id) is None:
            return f"expected a feature '<id>:<value>', got {_show(token)}"
        feature = int(text_id)
        if feature < 1:
            return f"feature id {feature} in {_show(token)} is below 1; feature ids start at 1"
        if n_features is not None and feature > n_features:
            return f"feature id {feature} in {_show(token)} exceeds n_features={n_features}"
        if feature > _MAX_FEATURE_ID:
            return f"feature id {feature} in {_show(token)} is too large"
        if n_features is None and feature > _MAX_INFERRED_FEATURES:
            return (
                f"feature id {feature} in {_show(token)} is above {_MAX_INFERRED_FEATURES}, "
                "the most features load_svmlight infers from the ids; pass "
                f"n_features={feature} or more if the file has that many (each document's "
                f"features then take {_nbytes(feature * itemsize)})"
            )
        if not _finite(value, limit):
            return f"expected a finite number as the value of feature {feature}, got {_show(value)}"
        if feature in seen:
            return f"feature id {feature} appears twice"
        seen.add(feature)
    return None


def _check_optional_size(value, *, name: str) -> int | None:
    return _validation.check_int_or_none(value, name=name, caller="load_svmlight", low=1)


_LONG_LISTS = ("refuse", "truncate", "sample")
_CUTTING_HINT = "; long_lists='truncate' or 'sample' cuts such queries of training data"
_MAX_SEED = 2**32 - 1


def _check_group(value) -> str | os.PathLike | None:
    if value is not None and not isinstance(value, str | os.PathLike):
        raise InvalidParameterError(
            "The 'group' parameter of load_svmlight must be a path (str or os.PathLike) "
            f"or None. Got {value!r} instead."
        )
    return value


def load_svmlight(
    path: str | os.PathLike,
    *,
    group: str | os.PathLike | None = None,
    n_features: int | None = None,
    dtype=np.float32,
    max_list_size: int | None = None,
    long_lists: str = "refuse",
    seed: int = 0,
) -> RankingData:
    """Read a LETOR/svmlight ranking file into padded NumPy arrays.

    Each line holds one document::

        <label> qid:<id> <feature>:<value> <feature>:<value> ... # comment

    Labels and values are decimal numbers (``3``, ``-0.5``, ``1e-3``; not
    ``nan`` or ``inf``, nor too large for ``dtype``; one too small for it
    reads as 0); labels are read as they are, negative ones included (the
    metrics that need them non-negative refuse them). Query ids are
    non-negative integers of at most 18 digits; feature ids are 1-based
    integers, in any order, each at most once per line, and features a line
    leaves out are 0. Fields are separated by ASCII whitespace (spaces and
    tabs, also vertical tabs and form feeds). ``#`` starts a comment that runs
    to the end of the line and may hold any bytes; blank and comment-only
    lines are skipped. Lines end with a line feed, optionally after a carriage
    return (CRLF). A file that starts with the gzip magic bytes is
    decompressed, whatever its name (several gzip members are read one after
    the other); a UTF-8 byte-order mark at the start of the text is skipped.
    Every other byte outside these rules (a NUL, a non-ASCII byte outside a
    comment) is refused with the line it is on.

    The lines of one query must be contiguous, as in every LETOR collection:
    a query id that comes back after another query's lines is refused rather
    than merged, since that usually means two files or two folds were
    concatenated. Queries keep the order of the file, and documents the order
    of their lines.

    LightGBM and XGBoost keep the queries in a separate group file instead
    (``rank.train.query`` beside ``rank.train``): one positive integer a
    line, the number of consecutive document lines of each query, in order.
    With ``group=``, the lines need no ``qid:``, and the queries are the
    group file's. If the lines do carry ``qid:`` (every document line, or
    else none), the group file must agree with them: a new query starts
    exactly where the query id changes, and the result is what reading the
    file without ``group=`` gives; the group file then only checks the
    file.

    Args:
      path: The file, plain or gzip-compressed.
      group: The group file (plain or gzip-compressed, read as ``path`` is),
        or None to read the queries from ``qid:``. Its sizes must add up to
        the number of document lines of ``path``. Blank lines and ASCII
        whitespace around a size are skipped; anything else on a line, and a
        group file with no sizes, is refused.
      n_features: Width of the feature axis. Default: the largest feature id
        in the file, which may be at most 65,536 (a larger id is refused,
        since every document's dense feature vector would be that long).
        Given, a feature id beyond it is refused, and ids up to 2**31 - 1 are
        read.
      dtype: Floating NumPy dtype of ``features`` and ``labels``. A label or
        value too large for it is refused.
      max_list_size: Width of the list axis. Default: the longest query's
        length. Given, a query with more documents is refused, or cut to
        this many as ``long_lists`` says. Give the same value to the train
        and test files for arrays of the same width.
      long_lists: What to do with a query of more than ``max_list_size``
        documents:

        * ``"refuse"`` (the default): raise ValueError naming the query and
          its first line beyond the width. Use it for evaluation data:
          cutting a query changes its metric (NDCG's ideal DCG, recall's
          number of relevant documents), so metrics of cut queries are not
          the collection's.
        * ``"truncate"``: keep its first ``max_list_size`` documents, in file
          order. For training a re-ranker on a file whose order is a
          first-stage ranking, so that the model sees the candidates it
          will re-rank.
        * ``"sample"``: keep ``max_list_size`` of its documents drawn
          without replacement, in file order, as allRank's ``slate_length``
          does for training. Every such subset with at least one relevant
          document (a label above 0) is equally likely when the query has
          one, since a list without one gives most losses nothing to learn
          from; a query without one keeps a uniform subset. The draw is
          NumPy's, seeded by ``seed``.

        ``"truncate"`` and ``"sample"`` need ``max_list_size``. Both are for
        training data; every line is still read and checked.
      seed: The seed of ``long_lists="sample"``, an int in
        ``[0, 2**32 - 1]``: the same file, ``max_list_size`` and seed keep
        the same documents. Unused otherwise.

    Returns:
      A :class:`RankingData` of NumPy arrays: ``features`` of shape
      ``(n_queries, list_size, n_features)`` and ``labels`` of shape
      ``(n_queries, list_size)`` in ``dtype``, the boolean mask ``where``, and
      ``qids``, the int64 query ids. A file with no documents gives
      ``n_queries = 0``. With ``group=`` and lines without ``qid:``, the
      query ids are the queries' positions in the group file, ``0, 1, ...``.

    Raises:
      ValueError: a line is malformed, or breaks a rule above. The message
        names the file and the 1-based line, for example
        ``data.txt:3: expected 'qid:<id>' after the label, got 'foo'``. When
        a file has several faults the first line with one is reported. With
        ``group=``, a fault of the group file names it and its line
        (``rank.train.query:4: expected the number of lines of one query, a
        positive integer, got '0'``), and so does a group file whose sizes
        do not add up to the file's document lines, or that disagrees with
        the lines' ``qid:``. The group file is read first.
      InvalidParameterError: ``n_features`` or ``max_list_size`` is not None
        and not an int >= 1, ``dtype`` is not floating, ``group`` is not
        None, a ``str`` or an ``os.PathLike``, ``long_lists`` is not one of
        its three choices (or is ``"truncate"`` or ``"sample"`` without
        ``max_list_size``), or ``seed`` is not an int in its range.
      OSError: the file cannot be read, or its gzip data are truncated or
        corrupt; a decompression error names the file
        (``data.txt.gz: cannot read this gzip file: ...``).
      MemoryError: the padded arrays (or the decompressed data) do not fit in
        memory; the message names the file and the shape.

    Example:
      >>> import os, tempfile
      >>> from lodestar import datasets
      >>> text = '''# two queries
      ... 2 qid:10 1:0.5 3:1.0  # doc a
      ... 0 qid:10 2:0.25
      ... 1 qid:11 1:1.0
      ... '''
      >>> with tempfile.TemporaryDirectory() as tmp:
      ...     path = os.path.join(tmp, "train.txt")
      ...     with open(path, "w") as f:
      ...         _ = f.write(text)
      ...     data = datasets.load_svmlight(path)
      >>> data.features.shape, data.qids.tolist()
      ((2, 2, 3), [10, 11])
      >>> data.features[0].tolist()
      [[0.5, 0.0, 1.0], [0.0, 0.25, 0.0]]
      >>> data.labels.tolist(), data.where.tolist()
      ([[2.0, 0.0], [1.0, 0.0]], [[True, True], [True, False]])

      The same documents without ``qid:``, with a LightGBM group file:

      >>> text = '''2 1:0.5 3:1.0
      ... 0 2:0.25
      ... 1 1:1.0
      ... '''
      >>> sizes = '''2
      ... 1
      ... '''
      >>> with tempfile.TemporaryDirectory() as tmp:
      ...     path = os.path.join(tmp, "rank.train")
      ...     for name, content in ((path, text), (path + ".query", sizes)):
      ...         with open(name, "w") as f:
      ...             _ = f.write(content)
      ...     grouped = datasets.load_svmlight(path, group=path + ".query")
      >>> grouped.qids.tolist(), grouped.labels.tolist()
      ([0, 1], [[2.0, 0.0], [1.0, 0.0]])
      >>> bool((grouped.features == data.features).all())
      True

      One query of five documents, the fourth relevant, cut to three:

      >>> text = '''0 qid:1 1:1
      ... 0 qid:1 1:2
      ... 0 qid:1 1:3
      ... 1 qid:1 1:4
      ... 0 qid:1 1:5
      ... '''
      >>> with tempfile.TemporaryDirectory() as tmp:
      ...     path = os.path.join(tmp, "train.txt")
      ...     with open(path, "w") as f:
      ...         _ = f.write(text)
      ...     first = datasets.load_svmlight(path, max_list_size=3, long_lists="truncate")
      ...     drawn = datasets.load_svmlight(path, max_list_size=3, long_lists="sample", seed=0)
      >>> first.features[0, :, 0].tolist(), first.labels[0].tolist()
      ([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
      >>> 1.0 in drawn.labels[0].tolist()  # a sample keeps a relevant document
      True

    References:
      LightGBM's query data (the group file):
      https://lightgbm.readthedocs.io/en/latest/Parameters.html#query-data.
      XGBoost's group input format:
      https://xgboost.readthedocs.io/en/stable/tutorials/input_format.html.
      Pobrotyn, Bartczak, Synowiec, Białobrzeski & Bojar, "Context-Aware
      Learning to Rank with Self-Attention", SIGIR eCom 2020
      (https://arxiv.org/abs/2005.10084): allRank, whose ``slate_length``
      samples long training queries.
    """
    group = _check_group(group)
    n_features = _check_optional_size(n_features, name="n_features")
    max_list_size = _check_optional_size(max_list_size, name="max_list_size")
    long_lists = _check_long_lists(long_lists, max_list_size)
    seed = _validation.Interval(int, 0, _MAX_SEED, "both").check(
        seed, name="seed", caller="load_svmlight"
    )
    dtype = _check_floating_dtype(dtype)
    groups = None if group is None else _read_groups(group)
    name = os.fspath(path)
    lines = _files.read_bytes(path).split(b"\n")
    limit = float(np.finfo(dtype).max)
    scanned = _scan(lines, qid=True if groups is None else None)
    line_error = functools.partial(
        _line_error,
        n_features=n_features,
        limit=limit,
        itemsize=dtype.itemsize,
        qid=scanned.has_qids,
        first_line=None if groups is None or not len(scanned.lines) else scanned.lines[0] + 1,
    )

    def refuse(index: int, message: str | None = None):
        line = lines[index]
        if message is None:
            message = line_error(line.partition(b"#")[0])
        if message is None:  # pragma: no cover - the fast path and _line_error disagree
            message = "malformed line"
        if b"\r" in line.rstrip(b"\r"):
            message += (
                " (the line holds a carriage return: only a line feed, alone or after a "
                "carriage return, ends a line)"
            )
        raise ValueError(f"{name}:{index + 1}: {message}")

    try:
        ids, values, token_line = _features(scanned.features)
    except OverflowError:  # an id of 19 digits or more: find and word it slowly
        for index in scanned.lines:
            if line_error(lines[index].partition(b"#")[0]) is not None:
                refuse(int(index))
        raise  # pragma: no cover - _line_error refuses every id that overflows
    max_id = _MAX_INFERRED_FEATURES if n_features is None else min(_MAX_FEATURE_ID, n_features)
    first_bad = _first_faulty_line(scanned.labels, ids, values, token_line, limit, max_id)
    n_lines = len(scanned.lines)
    if groups is None:
        layout = _QueryLayout.of(scanned.qids)
    else:
        layout = _QueryLayout.of_sizes(groups.sizes, n_lines)
    refused_size = max_list_size if long_lists == "refuse" else None
    faults = [
        (at, message)
        for at, message in _cross_line_faults(scanned, layout, refused_size, groups)
        if at < first_bad
    ]
    if faults:
        at, message = min(faults)
        refuse(int(scanned.lines[at]), message)
    if first_bad < n_lines:
        refuse(int(scanned.lines[first_bad]))
    if scanned.syntax_error is not None:
        refuse(scanned.syntax_error)
    if groups is not None and groups.total != n_lines:
        beyond = ""
        if n_lines > groups.total:
            beyond = f" (line {scanned.lines[groups.total] + 1} is the first beyond them)"
        raise ValueError(
            f"{name}: the file has {n_lines} document lines, but the query sizes in "
            f"{groups.name} add up to {groups.total}{beyond}"
        )

    width = max_list_size if max_list_size is not None else int(layout.lengths.max(initial=0))
    depth = n_features if n_features is not None else int(ids.max(initial=0))
    shape = (len(layout.starts), width, depth)
    try:
        features = np.zeros(shape, dtype=dtype)
    except (MemoryError, ValueError) as error:  # ValueError: a size past NumPy's maximum
        size = _nbytes(math.prod(shape) * dtype.itemsize)
        raise MemoryError(
            f"{name}: the padded features, of shape {shape}, take {size}: more than "
            "can be allocated"
        ) from error
    query, position = layout.query, layout.position
    # Every document line and feature is kept, without a copy, unless lists are cut.
    kept: slice | np.ndarray = slice(None)
    kept_tokens: slice | np.ndarray = slice(None)
    if max_list_size is not None and long_lists != "refuse":
        kept = _slates.kept_lines(
            layout.starts,
            layout.lengths,
            layout.query,
            layout.position,
            scanned.labels,
            max_list_size,
            long_lists,
            seed,
        )
        kept_tokens = kept[token_line]
        position = _slates.positions_among(kept, layout.starts, layout.query)
    token_line = token_line[kept_tokens]
    features[query[token_line], position[token_line], ids[kept_tokens] - 1] = values[kept_tokens]
    labels = np.zeros(shape[:2], dtype=dtype)
    labels[query[kept], position[kept]] = scanned.labels[kept]
    where = np.zeros(shape[:2], dtype=bool)
    where[query[kept], position[kept]] = True
    if scanned.has_qids:
        qids = scanned.qids[layout.starts]
    else:
        qids = np.arange(len(layout.starts), dtype=np.int64)
    return RankingData(features, labels, where, qids)


def _check_long_lists(value, max_list_size: int | None) -> str:
    long_lists = _validation.check_option(
        value, name="long_lists", options=_LONG_LISTS, caller="load_svmlight"
    )
    if long_lists != "refuse" and max_list_size is None:
        raise InvalidParameterError(
            f"The 'long_lists' parameter of load_svmlight is {long_lists!r}, which needs "
            "max_list_size: without it every list is as wide as the longest query, and none "
            "is cut."
        )
    return long_lists


def _check_floating_dtype(dtype) -> np.dtype:
    try:
        checked = np.dtype(dtype)
    except TypeError:
        checked = None
    if checked is None or not np.issubdtype(checked, np.floating):
        shown = dtype if checked is None else checked
        raise InvalidParameterError(
            "The 'dtype' parameter of load_svmlight must be a floating dtype. "
            f"Got {shown!r} instead."
        )
    return checked


class _Scanned(NamedTuple):
    """The document lines the fast path read, up to the first it could not.

    Attributes:
      lines: int64 0-based line number of each document line.
      labels: float64 label of each.
      qids: int64 query id of each.
      features: The ``<id>:<value>`` text of each.
      syntax_error: The first line the patterns refused, or None.
      has_qids: Whether the lines carry ``qid:<id>``; if not (only with a
        group file), ``qids`` is empty.
    """

    lines: np.ndarray
    labels: np.ndarray
    qids: np.ndarray
    features: list[bytes | bytearray]
    syntax_error: int | None
    has_qids: bool


def _scan(lines: list, *, qid: bool | None = True) -> _Scanned:
    """Split off each line's label and qid, and check its syntax with compiled patterns.

    The numbers are parsed afterwards in bulk; a line the patterns refuse
    ends the scan, and :func:`_line_error` words it. ``qid=True`` requires
    ``qid:<id>`` after every label; ``qid=None`` (with a group file) lets
    the first document line decide: every line then has one, or none has.
    """
    label_text, qid_text, features, line_index = [], [], [], []
    syntax_error = None
    for index, line in enumerate(lines):
        body = line.partition(b"#")[0]
        head = body.split(None, 2)
        if not head:
            continue
        if qid is None:
            qid = len(head) > 1 and head[1].startswith(b"qid:")
        label_ok = _NUMBER_RE.fullmatch(head[0]) is not None
        if qid:
            match = _QID_RE.fullmatch(head[1]) if len(head) > 1 else None
            rest = head[2] if len(head) == 3 else b""
            if match is None or not label_ok or _FEATURES_RE.fullmatch(rest) is None:
                syntax_error = index
                break
            qid_text.append(match[1])
        else:  # no qid: the features follow the label (a 'qid:' fails the pattern)
            rest = body.split(None, 1)[1] if len(head) > 1 else b""
            if not label_ok or _FEATURES_RE.fullmatch(rest) is None:
                syntax_error = index
                break
        label_text.append(head[0])
        features.append(rest)
        line_index.append(index)
    return _Scanned(
        np.array(line_index, dtype=np.int64),
        np.array([float(t) for t in label_text], dtype=np.float64),
        np.array([int(t) for t in qid_text], dtype=np.int64),
        features,
        syntax_error,
        bool(qid),
    )


def _features(texts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every line's features at once: int64 ids, float64 values, and each one's line.

    Raises:
      OverflowError: an id does not fit in int64.
    """
    counts = np.array([text.count(b":") for text in texts], dtype=np.int64)
    tokens = b" ".join(texts).replace(b":", b" ").split()
    ids = np.array(tokens[0::2], dtype=np.int64).reshape(-1)
    values = np.array(tokens[1::2], dtype=np.float64).reshape(-1)
    return ids, values, np.repeat(np.arange(len(texts)), counts)


def _first_faulty_line(labels, ids, values, token_line, limit: float, max_id: int) -> int:
    """The first document line with a fault within it, or the number of lines if none.

    Found in bulk: a label or value beyond the dtype, an id out of range, an
    id repeated on its line. :func:`_line_error` words it.
    """
    bad = ~(np.abs(labels) <= limit)
    bad_token = (ids < 1) | (ids > max_id) | ~(np.abs(values) <= limit)
    same_line = token_line[1:] == token_line[:-1]
    if not np.all(ids[1:][same_line] > ids[:-1][same_line]):  # unsorted: look for repeats
        order = np.lexsort((ids, token_line))
        repeat = (np.diff(ids[order]) == 0) & (np.diff(token_line[order]) == 0)
        bad_token[order[1:][repeat]] = True
    bad[token_line[bad_token]] = True
    return int(np.argmax(bad)) if bad.any() else len(labels)


class _QueryLayout(NamedTuple):
    """Where each document line goes: its query's row and its position in it.

    Attributes:
      starts: The first document line of each run of one query id.
      query: The row of each document line.
      position: Its position within the row.
      lengths: The documents of each row.
    """

    starts: np.ndarray
    query: np.ndarray
    position: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, qids: np.ndarray) -> _QueryLayout:
        new_query = np.ones(len(qids), dtype=bool)
        new_query[1:] = qids[1:] != qids[:-1]
        starts = np.flatnonzero(new_query)
        query = np.cumsum(new_query) - 1
        position = np.arange(len(qids)) - starts[query] if len(qids) else query
        return cls(starts, query, position, np.bincount(query, minlength=len(starts)))

    @classmethod
    def of_sizes(cls, sizes: np.ndarray, n_lines: int) -> _QueryLayout:
        """The layout a group file gives the first ``n_lines`` document lines.

        Where the sizes add up to more than ``n_lines``, the queries are cut
        there; where to fewer, the lines beyond them belong to no query (the
        caller refuses both).
        """
        # Each size capped at n_lines + 1, so that the running sum cannot overflow
        # and still passes n_lines at the same query.
        ends = np.cumsum(np.minimum(sizes, n_lines + 1))
        starts = ends - np.minimum(sizes, n_lines + 1)
        kept = starts < n_lines
        starts, ends = starts[kept], np.minimum(ends[kept], n_lines)
        lengths = ends - starts
        query = np.repeat(np.arange(len(starts)), lengths)
        position = np.arange(len(query)) - starts[query]
        return cls(starts, query, position, lengths)


class _Groups(NamedTuple):
    """A group file: the size of each query and the line it is on.

    Attributes:
      name: The file's name.
      sizes: int64, the number of consecutive document lines of each query.
      lines: int64, the 1-based line of the group file each size is on.
      total: The sum of the sizes, as a Python int (it cannot overflow).
    """

    name: str
    sizes: np.ndarray
    lines: np.ndarray
    total: int


_GROUP_SIZE_RE = re.compile(rb"\d{1,18}", re.ASCII)


def _read_groups(path: str | os.PathLike) -> _Groups:
    """Read a LightGBM/XGBoost group file: one positive integer a line, blank lines skipped."""
    name = os.fspath(path)
    sizes, numbers = [], []
    for index, line in enumerate(_files.read_bytes(path).split(b"\n")):
        text = line.strip()  # ASCII whitespace, the carriage return of CRLF included
        if not text:
            continue
        if _GROUP_SIZE_RE.fullmatch(text) is None or int(text) == 0:
            raise ValueError(
                f"{name}:{index + 1}: expected the number of lines of one query, a positive "
                f"integer, got {_show(text)}"
            )
        sizes.append(int(text))
        numbers.append(index + 1)
    if not sizes:
        raise ValueError(
            f"{name}: the group file holds no query sizes (expected one positive integer a "
            "line: the number of consecutive lines of each query)"
        )
    return _Groups(
        name, np.array(sizes, dtype=np.int64), np.array(numbers, dtype=np.int64), sum(sizes)
    )


def _group_faults(scanned: _Scanned, layout: _QueryLayout, groups: _Groups):
    """``(document line, message)`` where a line's qid disagrees with the group file."""
    qids, starts = scanned.qids, layout.starts
    change = np.zeros(len(qids), dtype=bool)
    change[1:] = qids[1:] != qids[:-1]
    new_group = np.zeros(len(qids), dtype=bool)
    new_group[starts[1:]] = True
    disagree = np.flatnonzero(change != new_group)
    if not len(disagree):
        return []
    at = int(disagree[0])
    query = int(layout.query[at])
    where = f"{groups.name}:{groups.lines[query]}"
    if change[at]:
        message = (
            f"query id {qids[at]} follows {qids[at - 1]} within one query of the group file "
            f"({where}: {groups.sizes[query]} lines)"
        )
    else:
        message = f"query {qids[at]} goes on, but the group file starts a new query here ({where})"
    return [(at, message + "; with group=, the lines' query ids must agree with it")]


def _cross_line_faults(
    scanned: _Scanned,
    layout: _QueryLayout,
    max_list_size: int | None,
    groups: _Groups | None = None,
):
    """``(document line, message)`` for a query that comes back and one that is too long.

    With a group file, a query id that disagrees with it, and no query id at all if
    the lines carry none.
    """
    qids, starts, faults = scanned.qids, layout.starts, []
    if groups is not None:
        # Without query ids, or with ids that disagree with the group file, the
        # queries are the group file's, and a fault is worded by its lines.
        faults = _group_faults(scanned, layout, groups) if scanned.has_qids else []
        if not scanned.has_qids or faults:
            if max_list_size is not None and np.any(layout.position >= max_list_size):
                over = int(np.argmax(layout.position >= max_list_size))
                query = int(layout.query[over])
                faults.append(
                    (
                        over,
                        f"the query of {groups.name}:{groups.lines[query]} "
                        f"({groups.sizes[query]} lines) has more than "
                        f"max_list_size={max_list_size} documents{_CUTTING_HINT}",
                    )
                )
            return faults
    _, first_start = np.unique(qids[starts], return_index=True)
    back = np.ones(len(starts), dtype=bool)
    back[first_start] = False
    if back.any():
        again = int(starts[np.argmax(back)])
        first = int(starts[np.argmax(qids[starts] == qids[again])])
        faults.append(
            (
                again,
                f"query {qids[again]} comes back after other queries (first seen on line "
                f"{scanned.lines[first] + 1}); the lines of one query must be contiguous",
            )
        )
    if max_list_size is not None and np.any(layout.position >= max_list_size):
        over = int(np.argmax(layout.position >= max_list_size))
        faults.append(
            (
                over,
                f"query {qids[over]} has more than max_list_size={max_list_size} "
                f"documents{_CUTTING_HINT}",
            )
        )
    return faults
