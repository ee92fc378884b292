"""lodestar.datasets: the synthetic generator and the svmlight/LETOR reader."""

import gzip
import re
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar import InvalidParameterError, datasets, metrics

# One set of sizes for most synthetic tests, so the draw compiles once.
Q, L, F = 200, 30, 8


@pytest.fixture(scope="module")
def train():
    return datasets.synthetic_ltr(jax.random.key(0), Q, L, F)


@pytest.fixture(scope="module")
def test():
    return datasets.synthetic_ltr(jax.random.key(1), Q, L, F)


# --------------------------------------------------------------------------
# synthetic_ltr
# --------------------------------------------------------------------------


def test_synthetic_shapes_dtypes_and_padding(train):
    features, labels, where, qids = train
    assert isinstance(train, datasets.RankingData)
    assert features.shape == (Q, L, F) and features.dtype == jnp.float32
    assert labels.shape == (Q, L) and labels.dtype == jnp.float32
    assert where.shape == (Q, L) and where.dtype == jnp.bool_
    np.testing.assert_array_equal(qids, np.arange(Q))
    where = np.asarray(where)
    lengths = where.sum(axis=1)
    # Padding only at the end of each row: the mask is a prefix.
    np.testing.assert_array_equal(where, np.arange(L) < lengths[:, None])
    # Default min_list_size = max(2, L // 4) = 7; lengths vary across that range.
    assert lengths.min() >= 7 and lengths.max() <= L
    assert len(np.unique(lengths)) > 10
    assert lengths.min() < 10 and lengths.max() > L - 3
    assert np.all(np.asarray(features)[~where] == 0)
    assert np.all(np.asarray(labels)[~where] == 0)
    # Real features are not zero and look standard normal.
    real = np.asarray(features)[where]
    assert np.all(real != 0)
    assert abs(real.mean()) < 0.1 and 0.9 < real.std() < 1.1


def test_synthetic_min_list_size_and_dtype():
    fixed = datasets.synthetic_ltr(
        jax.random.key(0), 5, 6, 3, min_list_size=6, dtype=jnp.float64, noise=0.0
    )
    assert bool(fixed.where.all())
    assert fixed.features.dtype == jnp.float64 and fixed.labels.dtype == jnp.float64
    narrow = datasets.synthetic_ltr(jax.random.key(0), 5, 6, 3, min_list_size=6, noise=0.0)
    # The data are drawn in float32 whatever the dtype: same labels, same features.
    np.testing.assert_array_equal(fixed.labels, narrow.labels)
    np.testing.assert_array_equal(fixed.features, np.asarray(narrow.features, np.float64))


def test_synthetic_is_deterministic_and_key_sensitive(train, test):
    again = datasets.synthetic_ltr(jax.random.key(0), Q, L, F)
    for a, b in zip(train, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(train.features, test.features)
    assert not np.array_equal(train.where, test.where)
    assert not np.array_equal(train.labels, test.labels)
    # A raw uint32 key works too, and differs from the typed key of another seed.
    raw = datasets.synthetic_ltr(jax.random.PRNGKey(0), Q, L, F)
    assert raw.features.shape == (Q, L, F)


def test_synthetic_label_range_and_distribution(train):
    labels = np.asarray(train.labels)[np.asarray(train.where)]
    np.testing.assert_array_equal(labels, np.round(labels))  # integers stored as float
    shares = np.bincount(labels.astype(int), minlength=5) / labels.size
    assert len(shares) == 5  # nothing above 4, nothing below 0
    # About 50 / 30 / 13 / 5 / 2 percent: many 0s, few 4s, decreasing.
    assert 0.42 < shares[0] < 0.58
    assert 0.22 < shares[1] < 0.38
    assert 0.08 < shares[2] < 0.18
    assert 0.02 < shares[3] < 0.09
    assert 0.005 < shares[4] < 0.045
    assert np.all(np.diff(shares) < 0)
    # Some queries have no relevant document, most have one.
    relevant = np.asarray((train.labels > 0).any(axis=1))
    assert 0 < (~relevant).sum() < Q // 4


def _mean_ndcg(scores, data):
    return float(metrics.ndcg(jnp.asarray(scores), data.labels, k=10, where=data.where).mean())


def _least_squares(phi, train, test):
    where = np.asarray(train.where)
    x = phi(np.asarray(train.features, np.float64))[where]
    x = np.c_[x, np.ones(len(x))]
    weights = np.linalg.lstsq(x, np.asarray(train.labels)[where], rcond=None)[0]
    x_test = phi(np.asarray(test.features, np.float64))
    return x_test @ weights[:-1] + weights[-1]


def test_synthetic_is_learnable_and_non_linear(train, test):
    random = _mean_ndcg(np.random.default_rng(0).random(test.labels.shape), test)
    linear = _mean_ndcg(_least_squares(lambda x: x, train, test), test)
    rng = np.random.default_rng(1)
    u, b = rng.standard_normal((F, 256)) * 1.5 / np.sqrt(F), rng.standard_normal(256)
    non_linear = _mean_ndcg(_least_squares(lambda x: np.tanh(x @ u + b), train, test), test)
    ideal = _mean_ndcg(test.labels, test)
    # Measured: random 0.42, linear 0.69, random-feature network 0.86, ideal 0.99.
    assert linear > random + 0.15
    assert non_linear > linear + 0.08
    assert ideal > non_linear + 0.05  # the noise leaves room


def test_synthetic_noise_zero_is_learnable_further(train, test):
    clean_train = datasets.synthetic_ltr(jax.random.key(0), Q, L, F, noise=0.0)
    clean_test = datasets.synthetic_ltr(jax.random.key(1), Q, L, F, noise=0.0)
    # Same features (noise enters only the labels), different labels.
    np.testing.assert_array_equal(clean_train.features, train.features)
    assert not np.array_equal(clean_train.labels, train.labels)
    rng = np.random.default_rng(1)
    u, b = rng.standard_normal((F, 256)) * 1.5 / np.sqrt(F), rng.standard_normal(256)
    noisy = _mean_ndcg(_least_squares(lambda x: np.tanh(x @ u + b), train, test), test)
    clean = _mean_ndcg(
        _least_squares(lambda x: np.tanh(x @ u + b), clean_train, clean_test), clean_test
    )
    assert clean > noisy + 0.03


def test_synthetic_task_changes_the_hidden_model_only():
    a = datasets.synthetic_ltr(jax.random.key(3), 20, 10, 4, task=0)
    b = datasets.synthetic_ltr(jax.random.key(3), 20, 10, 4, task=1)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.where, b.where)
    assert not np.array_equal(a.labels, b.labels)


def test_synthetic_jits_with_static_sizes():
    eager = datasets.synthetic_ltr(jax.random.key(5), 20, 10, 4, noise=0.3)
    draw = jax.jit(
        datasets.synthetic_ltr,
        static_argnums=(1, 2, 3),
        static_argnames=("noise",),
    )
    jitted = draw(jax.random.key(5), 20, 10, 4, noise=0.3)
    for a, b in zip(eager, jitted, strict=True):
        np.testing.assert_array_equal(a, b)
    # vmap over keys gives a batch of data sets.
    keys = jax.random.split(jax.random.key(5), 3)
    batch = jax.vmap(lambda k: datasets.synthetic_ltr(k, 20, 10, 4))(keys)
    assert batch.features.shape == (3, 20, 10, 4)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(n_queries=-1),
            "The 'n_queries' parameter of synthetic_ltr must be an int in the range [0, inf). "
            "Got -1 instead.",
        ),
        (
            dict(list_size=0),
            "The 'list_size' parameter of synthetic_ltr must be an int in the range [1, inf). "
            "Got 0 instead.",
        ),
        (
            dict(n_features=2.0),
            "The 'n_features' parameter of synthetic_ltr must be an int in the range [1, inf). "
            "Got 2.0 instead.",
        ),
        (
            dict(min_list_size=11),
            "The 'min_list_size' parameter of synthetic_ltr must be an int in the range "
            "[1, list_size=10] or None. Got 11 instead.",
        ),
        (
            dict(noise=-0.1),
            "The 'noise' parameter of synthetic_ltr must be a float in the range [0.0, inf). "
            "Got -0.1 instead.",
        ),
        (
            dict(dtype=jnp.int32),
            "The 'dtype' parameter of synthetic_ltr must be a floating dtype. "
            "Got <class 'jax.numpy.int32'> instead.",
        ),
    ],
)
def test_synthetic_refusals(kwargs, message):
    args = dict(n_queries=4, list_size=10, n_features=3) | kwargs
    with pytest.raises(InvalidParameterError) as info:
        datasets.synthetic_ltr(
            jax.random.key(0),
            args.pop("n_queries"),
            args.pop("list_size"),
            args.pop("n_features"),
            **args,
        )
    assert str(info.value) == message


# --------------------------------------------------------------------------
# load_svmlight
# --------------------------------------------------------------------------

GOOD = """\
# A LETOR-style file: two queries, comments and blank lines.
2 qid:10 1:0.5 3:-1.25 # doc a
0 qid:10 2:1e-3

   # an indented comment line
1 qid:10 3:7\t1:.5
4 qid:7 2:3.
"""


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def check_good(data, *, n_features=3, list_size=3, dtype=np.float32):
    features, labels, where, qids = data
    assert isinstance(data, datasets.RankingData)
    assert all(isinstance(a, np.ndarray) for a in data)
    assert features.shape == (2, list_size, n_features) and features.dtype == dtype
    expected = np.zeros((2, list_size, n_features))
    expected[0, 0, [0, 2]] = [0.5, -1.25]
    expected[0, 1, 1] = 1e-3
    expected[0, 2, [2, 0]] = [7, 0.5]
    expected[1, 0, 1] = 3.0
    np.testing.assert_array_equal(features, expected.astype(dtype))
    expected_labels = np.zeros((2, list_size))
    expected_labels[0, :3] = [2, 0, 1]
    expected_labels[1, 0] = 4
    np.testing.assert_array_equal(labels, expected_labels)
    assert labels.dtype == dtype
    np.testing.assert_array_equal(where, expected_labels * 0 + (np.arange(list_size) < [[3], [1]]))
    assert where.dtype == bool
    np.testing.assert_array_equal(qids, [10, 7])  # file order, not sorted
    assert qids.dtype == np.int64


def test_load_plain(tmp_path):
    check_good(datasets.load_svmlight(write(tmp_path, GOOD)))
    check_good(datasets.load_svmlight(str(write(tmp_path, GOOD))))  # str path too


def test_load_gzip_by_suffix_and_by_magic(tmp_path):
    compressed = gzip.compress(GOOD.encode())
    check_good(datasets.load_svmlight(write(tmp_path, compressed, "data.txt.gz")))
    check_good(datasets.load_svmlight(write(tmp_path, compressed, "data.bin")))


def test_load_windows_line_endings(tmp_path):
    check_good(datasets.load_svmlight(write(tmp_path, GOOD.replace("\n", "\r\n"))))


def test_load_widths_and_dtype(tmp_path):
    path = write(tmp_path, GOOD)
    check_good(
        datasets.load_svmlight(path, n_features=5, max_list_size=4, dtype=np.float64),
        n_features=5,
        list_size=4,
        dtype=np.float64,
    )


def test_load_round_trip_exact(tmp_path):
    rng = np.random.default_rng(0)
    features = rng.standard_normal((6, 5, 4)).astype(np.float32)
    features[rng.random(features.shape) < 0.3] = 0  # sparse: zeros left out
    labels = rng.integers(0, 5, (6, 5)).astype(np.float32)
    where = np.arange(5) < rng.integers(1, 6, (6, 1))
    features[~where], labels[~where] = 0, 0
    lines = []
    for q in range(6):
        for d in range(where[q].sum()):
            tokens = [
                f"{j + 1}:{float(features[q, d, j])!r}" for j in range(4) if features[q, d, j]
            ]
            lines.append(f"{labels[q, d]:g} qid:{100 + q} " + " ".join(tokens) + f" # q{q}d{d}")
    path = write(tmp_path, "\n".join(lines), "round.txt.gz")
    path.write_bytes(gzip.compress(path.read_bytes()))
    data = datasets.load_svmlight(path, n_features=4, max_list_size=5)
    np.testing.assert_array_equal(data.features, features)
    np.testing.assert_array_equal(data.labels, labels)
    np.testing.assert_array_equal(data.where, where)
    np.testing.assert_array_equal(data.qids, np.arange(100, 106))
    # The result scores directly.
    assert metrics.ndcg(data.labels, data.labels, where=data.where).shape == (6,)


def test_load_empty_and_comment_only(tmp_path):
    data = datasets.load_svmlight(write(tmp_path, "# nothing\n\n"))
    assert data.features.shape == (0, 0, 0) and data.qids.shape == (0,)
    data = datasets.load_svmlight(write(tmp_path, ""), n_features=3, max_list_size=2)
    assert data.features.shape == (0, 2, 3) and data.where.shape == (0, 2)


def test_load_query_without_features(tmp_path):
    data = datasets.load_svmlight(write(tmp_path, "1 qid:1\n0 qid:1 # c\n"))
    assert data.features.shape == (1, 2, 0)
    np.testing.assert_array_equal(data.labels, [[1, 0]])


def test_load_unsorted_feature_ids_and_fractional_labels(tmp_path):
    data = datasets.load_svmlight(write(tmp_path, "0.5 qid:3 3:1 1:2 2:3\n"))
    np.testing.assert_array_equal(data.features, [[[2, 3, 1]]])
    np.testing.assert_array_equal(data.labels, [[0.5]])


def test_load_is_fast_enough(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.random((20_000, 46)).round(6)
    feature_text = [" ".join(f"{j}:{v}" for j, v in enumerate(row, 1)) for row in values]
    text = "\n".join(
        f"{i % 3} qid:{i // 50} {row} #docid = {i}" for i, row in enumerate(feature_text)
    )
    data = datasets.load_svmlight(write(tmp_path, text))
    assert data.features.shape == (400, 50, 46)
    np.testing.assert_array_equal(data.features.reshape(-1, 46), values.astype(np.float32))


REFUSALS = [
    # (file text, 1-based line, message after "path:line: ")
    ("1 qid:1 1:1\nfoo qid:1 1:1\n", 2, "expected a finite number as the label, got 'foo'"),
    ("nan qid:1 1:1\n", 1, "expected a finite number as the label, got 'nan'"),
    ("1e999 qid:1 1:1\n", 1, "expected a finite number as the label, got '1e999'"),
    ("# c\n\n1 1:1\n", 3, "expected 'qid:<id>' after the label, got '1:1'"),
    ("1 foo 1:1\n", 1, "expected 'qid:<id>' after the label, got 'foo'"),
    ("1 # only a label\n", 1, "expected 'qid:<id>' after the label, got end of line"),
    ("1 qid:abc 1:1\n", 1, "expected a non-negative integer query id, got 'qid:abc'"),
    ("1 qid:-3 1:1\n", 1, "expected a non-negative integer query id, got 'qid:-3'"),
    ("1 qid:1 1:1 foo\n", 1, "expected a feature '<id>:<value>', got 'foo'"),
    ("1 qid:1 a:1\n", 1, "expected a feature '<id>:<value>', got 'a:1'"),
    ("1 qid:1 :1\n", 1, "expected a feature '<id>:<value>', got ':1'"),
    ("1 qid:1 +2:1\n", 1, "expected a feature '<id>:<value>', got '+2:1'"),
    ("1 qid:1 0:1\n", 1, "feature id 0 in '0:1' is below 1; feature ids start at 1"),
    ("1 qid:1 -2:1\n", 1, "feature id -2 in '-2:1' is below 1; feature ids start at 1"),
    ("1 qid:1 1:abc\n", 1, "expected a finite number as the value of feature 1, got 'abc'"),
    ("1 qid:1 1:\n", 1, "expected a finite number as the value of feature 1, got ''"),
    ("1 qid:1 1:1:2\n", 1, "expected a finite number as the value of feature 1, got '1:2'"),
    ("1 qid:1 1:inf\n", 1, "expected a finite number as the value of feature 1, got 'inf'"),
    ("1 qid:1 2:1e39\n", 1, "expected a finite number as the value of feature 2, got '1e39'"),
    ("1 qid:1 2:1 3:1 2:5\n", 1, "feature id 2 appears twice"),
    (
        "1 qid:1 99999999999999999999:1\n",
        1,
        "feature id 99999999999999999999 in '99999999999999999999:1' is too large",
    ),
    (
        "1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 1:1\n",
        3,
        "query 1 comes back after other queries (first seen on line 1); "
        "the lines of one query must be contiguous",
    ),
]


@pytest.mark.parametrize("text, line, message", REFUSALS)
def test_load_refusals(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_load_refuses_feature_beyond_n_features(tmp_path):
    path = write(tmp_path, "1 qid:1 1:1 3:1\n0 qid:1 4:2\n")
    assert datasets.load_svmlight(path).features.shape == (1, 2, 4)
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, n_features=3)
    assert str(info.value) == f"{path}:2: feature id 4 in '4:2' exceeds n_features=3"


def test_load_refuses_list_longer_than_max_list_size(tmp_path):
    path = write(tmp_path, "1 qid:1 1:1\n0 qid:2 1:1\n0 qid:2 1:2\n0 qid:2 1:3\n")
    assert datasets.load_svmlight(path, max_list_size=3).features.shape == (2, 3, 1)
    for options in ({}, {"long_lists": "refuse"}):  # the default
        with pytest.raises(ValueError) as info:
            datasets.load_svmlight(path, max_list_size=2, **options)
        assert str(info.value) == (
            f"{path}:4: query 2 has more than max_list_size=2 documents{CUT}"
        )


CUT = "; long_lists='truncate' or 'sample' cuts such queries of training data"


def numbered(sizes, labels_of=lambda query, doc: 0):
    """Queries 1, 2, ... of the given sizes; feature 1 of a document is its 1-based place."""
    return "".join(
        f"{labels_of(query, doc)} qid:{query + 1} 1:{doc + 1}\n"
        for query, size in enumerate(sizes)
        for doc in range(size)
    )


def test_load_long_lists_truncate_keeps_the_first_documents_of_a_long_query(tmp_path):
    text = numbered([1, 4, 2], lambda query, doc: doc)
    path = write(tmp_path, text)
    whole = datasets.load_svmlight(path)
    cut = datasets.load_svmlight(path, max_list_size=2, long_lists="truncate", seed=5)
    for whole_array, cut_array in zip(whole[:3], cut[:3], strict=True):
        np.testing.assert_array_equal(cut_array, whole_array[:, :2])
    np.testing.assert_array_equal(cut.qids, whole.qids)
    assert cut.features[1, :, 0].tolist() == [1, 2] and cut.labels[1].tolist() == [0, 1]
    # The same with a group file, and every line is still checked.
    group = write(tmp_path, "1\n4\n2\n", "q")
    plain = write(tmp_path, re.sub(r" qid:\d+", "", text), "plain.txt")
    grouped = datasets.load_svmlight(plain, group=group, max_list_size=2, long_lists="truncate")
    np.testing.assert_array_equal(grouped.features, cut.features)
    path = write(tmp_path, text.replace("qid:2 1:4", "qid:2 0:4"))
    with pytest.raises(ValueError, match=r":5: feature id 0 "):
        datasets.load_svmlight(path, max_list_size=2, long_lists="truncate")


def test_load_long_lists_sample_is_uniform_among_subsets_with_a_relevant_document(tmp_path):
    # 3,800 queries of 6 documents, 3 of them relevant, cut to 3: each of the
    # 19 subsets that hold a relevant document is drawn about 200 times (a
    # standard deviation of 14), and the one that holds none never. Two short
    # queries, one with no relevant document, pass unchanged.
    n_queries, grades = 3800, [0, 2, 0, 1, 0, 3]
    sizes = [6] * n_queries + [3, 2]
    path = write(tmp_path, numbered(sizes, lambda query, doc: grades[doc] * (query < n_queries)))
    data = datasets.load_svmlight(path, max_list_size=3, long_lists="sample", seed=3)
    places = data.features[..., 0].astype(int)
    assert places[n_queries:].tolist() == [[1, 2, 3], [1, 2, 0]]
    assert data.where[n_queries:].tolist() == [[True] * 3, [True, True, False]]
    places = places[:n_queries]
    assert data.where[:n_queries].all()
    assert (np.diff(places, axis=1) > 0).all()  # without replacement, in file order
    np.testing.assert_array_equal(data.labels[:n_queries], np.array(grades)[places - 1])
    subsets, counts = np.unique(places, axis=0, return_counts=True)
    assert len(subsets) == 19 and [1, 3, 5] not in subsets.tolist()
    assert counts.min() > 200 - 5 * 14 and counts.max() < 200 + 5 * 14
    assert data.qids.tolist() == list(range(1, n_queries + 3))


def test_load_long_lists_sample_keeps_a_rare_relevant_document(tmp_path):
    # One relevant document in 50, cut to 3: always kept (a uniform subset
    # would hold it 6% of the time); a query with none keeps a uniform subset.
    text = numbered([50] * 40 + [50] * 40, lambda query, doc: int(query < 40 and doc == 17))
    data = datasets.load_svmlight(write(tmp_path, text), max_list_size=3, long_lists="sample")
    places = data.features[..., 0].astype(int)
    assert (data.labels[:40].sum(axis=1) == 1).all() and (places[:40] == 18).any(axis=1).all()
    assert (data.labels[40:] == 0).all() and len(np.unique(places[40:])) > 30


def test_load_long_lists_sample_is_reproducible_by_seed(tmp_path):
    path = write(tmp_path, numbered([30] * 20, lambda query, doc: int(doc % 7 == 0)))

    def draw(**seed):
        return datasets.load_svmlight(path, max_list_size=4, long_lists="sample", **seed)

    first = draw(seed=0)
    for array, again in zip(first, draw(), strict=True):  # 0 is the default
        np.testing.assert_array_equal(array, again)
    assert not np.array_equal(draw(seed=1).features, first.features)
    assert not np.array_equal(draw(seed=2**32 - 1).features, first.features)


def test_load_refuses_values_too_large_for_float16(tmp_path):
    path = write(tmp_path, "1 qid:1 1:70000\n")
    assert datasets.load_svmlight(path).features[0, 0, 0] == 70000
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, dtype=np.float16)
    assert str(info.value) == (
        f"{path}:1: expected a finite number as the value of feature 1, got '70000'"
    )


def test_load_reports_the_first_faulty_line(tmp_path):
    # Line 2 breaks a bulk rule (id 0), line 3 a syntax rule, line 4 contiguity.
    text = "1 qid:1 1:1\n1 qid:1 0:1\n1 qid:2 x\n1 qid:1 1:1\n"
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=r":2: feature id 0 "):
        datasets.load_svmlight(path)
    path = write(tmp_path, text.replace("0:1", "1:1"))
    with pytest.raises(ValueError, match=r":3: expected a feature "):
        datasets.load_svmlight(path)
    path = write(tmp_path, "1 qid:1 1:1\n1 qid:2 1:1\n1 qid:1 1:1\n1 qid:3 0:1\n")
    with pytest.raises(ValueError, match=r":3: query 1 comes back"):
        datasets.load_svmlight(path)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(n_features=0),
            "The 'n_features' parameter of load_svmlight must be an int in the range "
            "[1, inf) or None. Got 0 instead.",
        ),
        (
            dict(max_list_size=2.5),
            "The 'max_list_size' parameter of load_svmlight must be an int in the range "
            "[1, inf) or None. Got 2.5 instead.",
        ),
        (
            dict(long_lists="slate"),
            "The 'long_lists' parameter of load_svmlight must be a str among "
            "{'refuse', 'sample', 'truncate'}. Got 'slate' instead.",
        ),
        (
            dict(long_lists="sample"),
            "The 'long_lists' parameter of load_svmlight is 'sample', which needs "
            "max_list_size: without it every list is as wide as the longest query, and none "
            "is cut.",
        ),
        (
            dict(long_lists="truncate", max_list_size=None),
            "The 'long_lists' parameter of load_svmlight is 'truncate', which needs "
            "max_list_size: without it every list is as wide as the longest query, and none "
            "is cut.",
        ),
        (
            dict(seed=-1),
            "The 'seed' parameter of load_svmlight must be an int in the range "
            "[0, 4294967295]. Got -1 instead.",
        ),
        (
            dict(seed=2**32, long_lists="sample", max_list_size=2),
            "The 'seed' parameter of load_svmlight must be an int in the range "
            "[0, 4294967295]. Got 4294967296 instead.",
        ),
        (
            dict(seed=1.0),
            "The 'seed' parameter of load_svmlight must be an int in the range "
            "[0, 4294967295]. Got 1.0 instead.",
        ),
        (
            dict(dtype=np.int32),
            "The 'dtype' parameter of load_svmlight must be a floating dtype. "
            "Got dtype('int32') instead.",
        ),
        (
            dict(dtype="floaty"),
            "The 'dtype' parameter of load_svmlight must be a floating dtype. "
            "Got 'floaty' instead.",
        ),
    ],
)
def test_load_parameter_refusals(tmp_path, kwargs, message):
    with pytest.raises(InvalidParameterError) as info:
        datasets.load_svmlight(write(tmp_path, GOOD), **kwargs)
    assert str(info.value) == message


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        datasets.load_svmlight(tmp_path / "absent.txt")


# --------------------------------------------------------------------------
# load_svmlight on hostile bytes
# --------------------------------------------------------------------------


def test_load_refuses_a_huge_feature_id_unless_n_features_says_so(tmp_path):
    path = write(tmp_path, "1 qid:1 1:1\n0 qid:1 2147483647:1\n")
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path)
    assert str(info.value) == (
        f"{path}:2: feature id 2147483647 in '2147483647:1' is above 65536, the most "
        "features load_svmlight infers from the ids; pass n_features=2147483647 or more if "
        "the file has that many (each document's features then take 8.0 GiB)"
    )
    path = write(tmp_path, "1 qid:1 65536:1\n")
    assert datasets.load_svmlight(path).features.shape == (1, 1, 65536)
    path = write(tmp_path, "1 qid:1 70000:2\n")
    with pytest.raises(ValueError, match=r":1: feature id 70000 .* is above 65536"):
        datasets.load_svmlight(path)
    data = datasets.load_svmlight(path, n_features=70000)
    assert data.features.shape == (1, 1, 70000) and data.features[0, 0, -1] == 2


def test_load_refuses_truncated_or_corrupt_gzip_with_an_oserror_naming_the_file(tmp_path):
    compressed = gzip.compress(GOOD.encode())
    cases = {
        "truncated.gz": compressed[: len(compressed) // 2],
        "header_only.gz": compressed[:3],
        "no_trailer.gz": compressed[:-4],
        "corrupt.gz": compressed[:10] + b"\xff" * 20 + compressed[30:],
        "trailing_garbage.gz": compressed + b"garbage",
    }
    for name, data in cases.items():
        path = write(tmp_path, data, name)
        with pytest.raises(OSError) as info:
            datasets.load_svmlight(path)
        assert type(info.value) is OSError
        assert str(info.value).startswith(f"{path}: cannot read this gzip file: ")
    # Two gzip members are read one after the other, as gzip itself does.
    two = gzip.compress(GOOD.encode()) + gzip.compress(b"3 qid:8 1:1\n")
    assert datasets.load_svmlight(write(tmp_path, two, "two.gz")).qids.tolist() == [10, 7, 8]


def test_load_skips_a_utf8_byte_order_mark(tmp_path):
    check_good(datasets.load_svmlight(write(tmp_path, b"\xef\xbb\xbf" + GOOD.encode())))
    check_good(
        datasets.load_svmlight(
            write(tmp_path, gzip.compress(b"\xef\xbb\xbf" + GOOD.encode()), "bom.gz")
        )
    )


def test_load_reads_a_file_named_dash_not_standard_input(tmp_path, monkeypatch):
    # Only the command line's files take `-` for standard input; a notebook
    # that calls load_svmlight("-") must not block reading it.
    class Unreadable:
        buffer = property(lambda self: pytest.fail("load_svmlight read standard input"))

    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text(GOOD)
    monkeypatch.setattr(sys, "stdin", Unreadable())
    check_good(datasets.load_svmlight("-"))


@pytest.mark.parametrize("compressed", [False, True])
def test_load_reads_a_pipe_as_the_trec_reader_does(pipe, compressed):
    # A shell's `<(zcat train.txt.gz)` names a pipe; the BOM is dropped there too.
    data = b"\xef\xbb\xbf" + GOOD.encode()
    check_good(datasets.load_svmlight(pipe(gzip.compress(data) if compressed else data)))


@pytest.mark.parametrize(
    "data, line, message",
    [
        (
            b"1 qid:1 1:0.5\x00\n",
            1,
            "expected a finite number as the value of feature 1, got '0.5\\x00'",
        ),
        (b"\x00\x00\n", 1, "expected a finite number as the label, got '\\x00\\x00'"),
        (
            b"1 qid:1 1:1 # caf\xe9\n\xff qid:2 1:1\n",
            2,
            "expected a finite number as the label, got '\\\\xff'",
        ),
        (
            b"1 qid:1\xc2\xa01:1\n",
            1,
            "expected a non-negative integer query id, got 'qid:1\\xa01:1'",
        ),
        (
            b"1 qid:1 1:1\r0 qid:1 1:2\r",
            1,
            "expected a feature '<id>:<value>', got '0' (the line holds a carriage return: "
            "only a line feed, alone or after a carriage return, ends a line)",
        ),
        (
            b"1 qid:1 1:" + b"9" * 500 + b"\n",
            1,
            "expected a finite number as the value of feature 1, got '"
            + "9" * 60
            + "' (first 60 of 500 bytes)",
        ),
        (
            b"1 qid:1234567890123456789 1:1\n",
            1,
            "expected a non-negative integer query id, got 'qid:1234567890123456789'",
        ),
    ],
)
def test_load_refuses_hostile_bytes_naming_file_and_line(tmp_path, data, line, message):
    path = write(tmp_path, data)
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_load_reads_documented_oddities_soundly(tmp_path):
    # Vertical tabs and form feeds separate fields; negative labels and
    # values too small for the dtype (read as 0) are read as they are.
    data = datasets.load_svmlight(write(tmp_path, b"-3 qid:0 1:1\x0b2:1e-60\x0c3:2\r\n"))
    np.testing.assert_array_equal(data.features, [[[1.0, 0.0, 2.0]]])
    np.testing.assert_array_equal(data.labels, [[-3.0]])
    np.testing.assert_array_equal(data.qids, [0])


def test_load_names_the_file_when_the_arrays_do_not_fit(tmp_path, monkeypatch):
    path = write(tmp_path, GOOD)

    def no_memory(shape, dtype):
        raise MemoryError(f"Unable to allocate array with shape {shape}")

    monkeypatch.setattr(datasets.np, "zeros", no_memory)
    with pytest.raises(MemoryError) as info:
        datasets.load_svmlight(path)
    assert str(info.value) == (
        f"{path}: the padded features, of shape (2, 3, 3), take 72 bytes: more than can be "
        "allocated"
    )


# Fuzzing: the only outcomes allowed are a sound result, or ValueError naming
# the file and a line of it, or OSError naming the file (gzip faults).

_HOSTILE = b"\x00\r\n\t\x0b\x0c :#-+.eE0123456789qid\xff\xef\xbb\xbf\x1f\x8bnaif"


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def check_outcome(path, data, **options):
    """Load ``data`` from ``path``; allow only a sound result or a clean, located refusal."""
    path.write_bytes(data)
    try:
        result = datasets.load_svmlight(path, **options)
    except ValueError as error:
        match = re.fullmatch(rf"{re.escape(str(path))}:(\d+): (.+)", str(error), re.DOTALL)
        assert match, str(error)
        assert "malformed line" not in match[2]
        text = gzip.decompress(data) if data.startswith(b"\x1f\x8b") else data
        assert 1 <= int(match[1]) <= text.count(b"\n") + 1
        return "refused"
    except OSError as error:
        assert type(error) is OSError and str(error).startswith(f"{path}: "), error
        return "oserror"
    features, labels, where, qids = result
    assert features.dtype == labels.dtype == np.float32 and where.dtype == bool
    assert features.shape[:2] == labels.shape == where.shape
    assert features.shape[0] == qids.shape[0] and features.shape[2] <= 65536
    assert np.all(np.isfinite(features)) and np.all(np.isfinite(labels))
    assert np.all(qids >= 0)
    # Real documents first in each row, and every row holds one.
    assert np.all(np.diff(where.astype(int), axis=1) <= 0) and np.all(where[:, :1])
    assert np.all(features[~where] == 0) and np.all(labels[~where] == 0)
    return "read"


@st.composite
def svmlight_lines(draw):
    """Valid-looking text: labels, query ids, features and comments, then mutated."""
    lines = []
    qid = draw(st.integers(0, 3))
    for _ in range(draw(st.integers(0, 6))):
        qid += draw(st.sampled_from([0, 0, 1]))
        features = draw(st.lists(st.tuples(st.integers(1, 9), st.floats(-1e3, 1e3)), max_size=4))
        tokens = [f"{draw(st.integers(0, 4))}", f"qid:{qid}"] + [f"{i}:{v!r}" for i, v in features]
        if draw(st.booleans()):
            tokens.append("# comment")
        lines.append(" ".join(tokens))
    text = bytearray("\n".join(lines).encode())
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        byte = draw(st.sampled_from(list(_HOSTILE)))
        if action == "insert":
            text[at:at] = bytes([byte])
        elif action == "delete":
            del text[at : at + draw(st.integers(1, 5))]
        elif action == "replace" and at < len(text):
            text[at] = byte
        else:
            text[at:at] = text[at : at + draw(st.integers(1, 12))]
    return bytes(text)


@settings(max_examples=150)
@given(data=st.binary(max_size=200))
def test_fuzz_random_bytes(fuzz_dir, data):
    check_outcome(fuzz_dir / "random.txt", data)
    check_outcome(fuzz_dir / "random_magic.txt", b"\x1f\x8b" + data)


@settings(max_examples=250)
@given(data=svmlight_lines(), n_features=st.sampled_from([None, 5]))
def test_fuzz_mutated_lines(fuzz_dir, data, n_features):
    check_outcome(fuzz_dir / "mutated.txt", data, n_features=n_features)


@settings(max_examples=100)
@given(data=st.data())
def test_fuzz_truncated_and_flipped_gzip(fuzz_dir, data):
    plain = data.draw(svmlight_lines())
    compressed = gzip.compress(plain)
    cut = data.draw(st.integers(0, len(compressed)))
    outcome = check_outcome(fuzz_dir / "cut.gz", compressed[:cut])
    if cut == len(compressed):
        # Whole, the file reads as its text does (which may be refused).
        assert outcome == check_outcome(fuzz_dir / "plain.txt", plain)
    else:
        assert outcome in ("oserror", "refused", "read")
    flipped = bytearray(compressed)
    at = data.draw(st.integers(0, len(flipped) - 1))
    flipped[at] ^= data.draw(st.integers(1, 255))
    check_outcome(fuzz_dir / "flipped.gz", bytes(flipped))


@pytest.mark.slow
@settings(max_examples=5000)
@given(data=svmlight_lines(), n_features=st.sampled_from([None, 5]))
def test_fuzz_mutated_lines_thoroughly(fuzz_dir, data, n_features):
    check_outcome(fuzz_dir / "mutated.txt", data, n_features=n_features)


# --------------------------------------------------------------------------
# load_svmlight with a group file (LightGBM's and XGBoost's query sizes)
# --------------------------------------------------------------------------

# GOOD without its query ids, and the sizes of its two queries.
GOOD_WITHOUT_QIDS = re.sub(r" qid:\d+", "", GOOD)
GOOD_SIZES = "3\n1\n"


def test_load_group_file_reads_lines_without_qids_as_the_qid_file_reads(tmp_path):
    assert "qid:" not in GOOD_WITHOUT_QIDS
    with_qids = datasets.load_svmlight(write(tmp_path, GOOD))
    grouped = datasets.load_svmlight(
        write(tmp_path, GOOD_WITHOUT_QIDS, "rank.train"),
        group=write(tmp_path, GOOD_SIZES, "rank.train.query"),
    )
    for name in ("features", "labels", "where"):
        np.testing.assert_array_equal(getattr(grouped, name), getattr(with_qids, name))
        assert getattr(grouped, name).dtype == getattr(with_qids, name).dtype
    # Without qid: the query ids are the queries' positions in the group file.
    np.testing.assert_array_equal(grouped.qids, [0, 1])
    assert grouped.qids.dtype == np.int64
    check_good(grouped._replace(qids=with_qids.qids))


def test_load_group_file_agreeing_with_the_qids_changes_nothing(tmp_path):
    path = write(tmp_path, GOOD)
    grouped = datasets.load_svmlight(path, group=write(tmp_path, GOOD_SIZES, "sizes"))
    check_good(grouped)  # the file's own query ids, 10 and 7


def test_load_group_file_round_trip_with_and_without_qids(tmp_path):
    # Random documents, written once with qid: and once without plus a group file.
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, 25)
    lines_with, lines_without = [], []
    for query, size in enumerate(sizes):
        for _ in range(size):
            ids = np.sort(rng.choice(12, rng.integers(0, 6), replace=False)) + 1
            features = " ".join(f"{i}:{rng.standard_normal():.4f}" for i in ids)
            label = rng.integers(0, 5)
            lines_with.append(f"{label} qid:{1000 + 7 * query} {features}".rstrip())
            lines_without.append(f"{label} {features}".rstrip())
    sizes_text = "".join(f"{size}\n" for size in sizes)
    options = dict(n_features=12, max_list_size=8, dtype=np.float64)
    reference = datasets.load_svmlight(write(tmp_path, "\n".join(lines_with), "a.txt"), **options)
    for name, text in (("with.txt", lines_with), ("without.txt", lines_without)):
        data = datasets.load_svmlight(
            write(tmp_path, "\n".join(text) + "\n", name),
            group=write(tmp_path, sizes_text, "a.query"),
            **options,
        )
        for field in ("features", "labels", "where"):
            np.testing.assert_array_equal(getattr(data, field), getattr(reference, field))
        expected = reference.qids if name == "with.txt" else np.arange(len(sizes))
        np.testing.assert_array_equal(data.qids, expected)
    assert reference.features.shape == (25, 8, 12)
    np.testing.assert_array_equal(reference.where.sum(axis=1), sizes)


def test_load_group_file_gzip_crlf_blank_lines_and_pipes(tmp_path, pipe):
    data_path = write(tmp_path, gzip.compress(GOOD_WITHOUT_QIDS.encode()), "rank.train.gz")
    for text in (
        GOOD_SIZES,
        " 3 \r\n\r\n\t1\r\n",  # whitespace around a size, CRLF, a blank line
        "3\n1",  # no final line feed
        b"\xef\xbb\xbf3\n1\n",  # a byte-order mark
    ):
        for group in (
            write(tmp_path, text, "rank.train.query"),
            write(
                tmp_path, gzip.compress(text.encode() if isinstance(text, str) else text), "q.gz"
            ),
        ):
            data = datasets.load_svmlight(data_path, group=group)
            np.testing.assert_array_equal(data.where.sum(axis=1), [3, 1])
            np.testing.assert_array_equal(data.labels[:, 0], [2, 4])
    data = datasets.load_svmlight(data_path, group=pipe(GOOD_SIZES.encode()))
    np.testing.assert_array_equal(data.where.sum(axis=1), [3, 1])
    data = datasets.load_svmlight(data_path, group=str(write(tmp_path, GOOD_SIZES, "str.query")))
    np.testing.assert_array_equal(data.qids, [0, 1])


GROUP_FILE_REFUSALS = [
    # (group file text, 1-based line, what follows "expected the number of lines ..., got ")
    ("3\n0\n", 2, "'0'"),
    ("3\n-1\n", 2, "'-1'"),
    ("+3\n1\n", 1, "'+3'"),
    ("3.0\n1\n", 1, "'3.0'"),
    ("3e0\n1\n", 1, "'3e0'"),
    ("three\n1\n", 1, "'three'"),
    ("3 1\n", 1, "'3 1'"),
    ("3\n1 # comment\n", 2, "'1 # comment'"),
    ("\n\n3\n\x001\n", 4, "'\\x001'"),
    ("1234567890123456789\n", 1, "'1234567890123456789'"),
]


@pytest.mark.parametrize("text, line, shown", GROUP_FILE_REFUSALS)
def test_load_group_file_refuses_a_size_that_is_not_a_positive_integer(tmp_path, text, line, shown):
    group = write(tmp_path, text, "rank.train.query")
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(write(tmp_path, GOOD_WITHOUT_QIDS), group=group)
    assert str(info.value) == (
        f"{group}:{line}: expected the number of lines of one query, a positive integer, "
        f"got {shown}"
    )


# mtime=0: a gzip header holds its time, and pytest-xdist's workers must
# collect the same parameter ids.
@pytest.mark.parametrize("text", ["", "\n", " \r\n\n\t\n", gzip.compress(b"", mtime=0)])
def test_load_group_file_refuses_an_empty_group_file(tmp_path, text):
    group = write(tmp_path, text, "rank.train.query")
    for data_text in (GOOD_WITHOUT_QIDS, ""):  # even beside an empty file
        with pytest.raises(ValueError) as info:
            datasets.load_svmlight(write(tmp_path, data_text), group=group)
        assert str(info.value) == (
            f"{group}: the group file holds no query sizes (expected one positive integer a "
            "line: the number of consecutive lines of each query)"
        )


@pytest.mark.parametrize(
    "sizes, message",
    [
        ("3\n2\n", "the file has 4 document lines, but the query sizes in {group} add up to 5"),
        ("5\n", "the file has 4 document lines, but the query sizes in {group} add up to 5"),
        (
            "2\n1\n",
            "the file has 4 document lines, but the query sizes in {group} add up to 3 "
            "(line 7 is the first beyond them)",
        ),
        (
            "1\n",
            "the file has 4 document lines, but the query sizes in {group} add up to 1 "
            "(line 3 is the first beyond them)",
        ),
    ],
)
def test_load_group_file_refuses_sizes_that_do_not_add_up_to_the_lines(tmp_path, sizes, message):
    group = write(tmp_path, sizes, "rank.train.query")
    # With GOOD's query ids, only sizes whose queries start where the ids change
    # get this far; the others disagree with the ids first.
    for text in (GOOD_WITHOUT_QIDS, GOOD) if sizes.startswith("3\n") else (GOOD_WITHOUT_QIDS,):
        path = write(tmp_path, text)
        with pytest.raises(ValueError) as info:
            datasets.load_svmlight(path, group=group)
        assert str(info.value) == f"{path}: " + message.format(group=group)
    path = write(tmp_path, "# no documents\n")
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, group=group)
    assert str(info.value).startswith(f"{path}: the file has 0 document lines, but ")


@pytest.mark.parametrize(
    "text, sizes, line, message",
    [
        # Every document line has a qid, or none has: the first decides.
        (
            "1 qid:1 1:1\n0 qid:1 1:2\n1 2:1\n",
            "3\n",
            3,
            "expected 'qid:<id>' after the label, got '2:1' (with group=, every document line "
            "has 'qid:<id>' or none has, and line 1 has one)",
        ),
        (
            "# header\n1 1:1\n0 1:2\n1 qid:2 2:1\n",
            "3\n",
            4,
            "unexpected 'qid:2': with group=, every document line has 'qid:<id>' or none has, "
            "and line 2 has none",
        ),
        # Query ids that disagree with the group file.
        (
            "1 qid:1 1:1\n0 qid:2 1:2\n1 qid:2 2:1\n",
            "3\n",
            2,
            "query id 2 follows 1 within one query of the group file ({group}:1: 3 lines); "
            "with group=, the lines' query ids must agree with it",
        ),
        (
            "1 qid:1 1:1\n0 qid:1 1:2\n1 qid:1 2:1\n",
            "\n2\n1\n",
            3,
            "query 1 goes on, but the group file starts a new query here ({group}:3); "
            "with group=, the lines' query ids must agree with it",
        ),
        # Agreeing with the group file, a query id must still not come back.
        (
            "1 qid:1 1:1\n0 qid:2 1:2\n1 qid:1 2:1\n",
            "1\n1\n1\n",
            3,
            "query 1 comes back after other queries (first seen on line 1); the lines of one "
            "query must be contiguous",
        ),
        # A fault within a line is worded as without a group file.
        ("1 1:1\nfoo 1:2\n", "2\n", 2, "expected a finite number as the label, got 'foo'"),
        ("1 1:1 1:2\n", "1\n", 1, "feature id 1 appears twice"),
        (
            "1 1:1\n0 qid:x 1:2\n",
            "2\n",
            2,
            "unexpected 'qid:x': with group=, every document "
            "line has 'qid:<id>' or none has, and line 1 has none",
        ),
    ],
)
def test_load_group_file_refusals_within_the_file(tmp_path, text, sizes, line, message):
    path = write(tmp_path, text)
    group = write(tmp_path, sizes, "rank.train.query")
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, group=group)
    assert str(info.value) == f"{path}:{line}: " + message.format(group=group)


def test_load_group_file_reports_the_first_faulty_line(tmp_path):
    # The sizes do not add up, and line 2 is malformed: the line comes first.
    path = write(tmp_path, "1 1:1\n1 0:1\n1 1:1\n")
    with pytest.raises(ValueError, match=r":2: feature id 0 "):
        datasets.load_svmlight(path, group=write(tmp_path, "7\n", "q"))
    # A bad group file is reported before anything in the file.
    with pytest.raises(ValueError, match=r"q:1: expected the number of lines"):
        datasets.load_svmlight(path, group=write(tmp_path, "x\n", "q"))
    # A query longer than max_list_size before a syntax fault.
    path = write(tmp_path, "1 1:1\n1 1:1\n1 1:1\n1 x\n")
    group = write(tmp_path, "3\n1\n", "q")
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, group=group, max_list_size=2)
    assert str(info.value) == (
        f"{path}:3: the query of {group}:1 (3 lines) has more than max_list_size=2 documents{CUT}"
    )


def test_load_group_file_and_max_list_size(tmp_path):
    path = write(tmp_path, GOOD_WITHOUT_QIDS)
    group = write(tmp_path, GOOD_SIZES, "q")
    assert datasets.load_svmlight(path, group=group, max_list_size=3).where.shape == (2, 3)
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, group=group, max_list_size=2)
    assert str(info.value) == (
        f"{path}:6: the query of {group}:1 (3 lines) has more than max_list_size=2 documents{CUT}"
    )
    # With query ids that agree with the group file, worded by them as without it.
    path = write(tmp_path, GOOD)
    with pytest.raises(ValueError) as info:
        datasets.load_svmlight(path, group=group, max_list_size=2)
    assert str(info.value) == f"{path}:6: query 10 has more than max_list_size=2 documents{CUT}"


@pytest.mark.parametrize("group", [3, b"rank.train.query", ["a"], True])
def test_load_group_parameter_refusal(tmp_path, group):
    with pytest.raises(InvalidParameterError) as info:
        datasets.load_svmlight(write(tmp_path, GOOD), group=group)
    assert str(info.value) == (
        "The 'group' parameter of load_svmlight must be a path (str or os.PathLike) or None. "
        f"Got {group!r} instead."
    )


def test_load_group_file_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        datasets.load_svmlight(write(tmp_path, GOOD), group=tmp_path / "absent.query")


@st.composite
def grouped_lines(draw):
    """Mutated lines (with or without their qids) and group sizes that may not fit them."""
    text = draw(svmlight_lines())
    if draw(st.booleans()):
        text = re.sub(rb" qid:\d+", b"", text)
    n_lines = sum(1 for line in text.split(b"\n") if line.partition(b"#")[0].strip())
    sizes = []
    while sum(sizes) < n_lines:
        sizes.append(draw(st.integers(1, 3)))
    if draw(st.integers(0, 3)) == 0:  # sometimes a size off by one, or a bad line
        sizes.append(draw(st.sampled_from([1, 0, -1])))
    return text, "".join(f"{size}\n" for size in sizes).encode()


@settings(max_examples=150)
@given(data=grouped_lines())
def test_fuzz_group_files(fuzz_dir, data):
    # A sound result, or a refusal naming the group file, the file and a line of
    # it, or the file and its count of document lines.
    text, sizes = data
    path, group = fuzz_dir / "grouped.txt", fuzz_dir / "fuzz.query"
    path.write_bytes(text)
    group.write_bytes(sizes)
    try:
        where = datasets.load_svmlight(path, group=group).where
    except ValueError as error:
        said = str(error)
        if said.startswith(f"{group}:") or said.startswith(f"{path}: the file has "):
            return
        assert re.match(rf"{re.escape(str(path))}:\d+: ", said), said
        assert check_outcome(path, text, group=group) == "refused"  # and located in the file
        return
    assert check_outcome(path, text, group=group) == "read"  # and sound
    np.testing.assert_array_equal(where.sum(axis=1), [int(s) for s in sizes.split()])
