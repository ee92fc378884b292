"""Generate the frozen scikit-learn reference corpus for lodestar's DCG/NDCG tests.

The corpus pins down what ``sklearn.metrics.dcg_score`` / ``ndcg_score`` (and the
per-row helpers ``_dcg_sample_scores`` / ``_ndcg_sample_scores``) return on a few
thousand randomly drawn, deliberately awkward inputs: heavily tied scores, fully
tied rows, all-zero label rows and cases, ``k`` of 1, ``n_cols`` and beyond,
unusual log bases, sample weights with zeros, ``ignore_ties=True`` on tie-free
scores, and (for DCG only) negative labels. Tests load it through
``tests/corpus/load.py`` and do not need scikit-learn installed.

Regenerate (from the repository root, with scikit-learn installed)::

    python tests/corpus/make_corpus.py

This rewrites ``tests/corpus/sklearn_corpus.npz`` and
``tests/corpus/sklearn_corpus.json`` next to this file (``--output-dir`` writes
elsewhere). Generation is deterministic: a single ``numpy.random.default_rng``
stream seeded with ``SEED`` drives every draw, so the same numpy/scikit-learn
versions reproduce identical array contents (the zip container itself carries
timestamps, so the ``.npz`` bytes may differ between runs).

Layout of the ``.npz`` (ragged; every case has its own ``(n_rows, n_cols)``):

* per-case arrays (length ``n_cases``): ``case_n_rows``, ``case_n_cols``,
  ``case_k`` (-1 means ``k=None``), ``case_log_base``, ``case_has_weights``,
  ``case_ignore_ties``, ``case_label_kind``, ``case_score_kind``,
  ``case_dcg_score``, ``case_ndcg_score`` (NaN when ``y_true`` has negatives);
* offset arrays (length ``n_cases + 1``, int64, start at 0):
  ``case_item_offset`` into ``y_true``/``y_score`` (row-major flattening),
  ``case_row_offset`` into ``row_dcg``/``row_ndcg``, ``case_weight_offset`` into
  ``sample_weight`` (empty slice for unweighted cases);
* ``label_kind_names`` / ``score_kind_names``: the names of the kind codes.
"""

from __future__ import annotations

import argparse
import json
import platform
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.metrics import dcg_score, ndcg_score
from sklearn.metrics._ranking import _dcg_sample_scores, _ndcg_sample_scores

SEED = 20_240_917
N_CASES = 4000
MAX_ROWS = 6
MIN_COLS, MAX_COLS = 2, 60
LOG_BASES = (2.0, 10.0, float(np.e), 0.5)

# Probabilities of the per-case choices.
P_IGNORE_TIES = 0.15
P_NO_WEIGHTS = 0.5
P_ALL_ZERO_CASE = 0.04  # non-negative label kinds only
P_ZERO_ROW = 0.10
P_CONSTANT_ROW = 0.08  # fully tied score row (ignore_ties=False only)

LABEL_KINDS = ("graded", "binary", "continuous", "negative")
LABEL_KIND_P = (0.40, 0.25, 0.25, 0.10)
SCORE_KINDS = ("continuous", "rounded", "tiny_set", "label_derived", "mixed", "tie_free")
# Used when ignore_ties is False; "tie_free" is reserved for ignore_ties=True.
SCORE_KIND_P = (0.15, 0.35, 0.25, 0.10, 0.15, 0.0)

HERE = Path(__file__).resolve().parent
NPZ_NAME = "sklearn_corpus.npz"
JSON_NAME = "sklearn_corpus.json"


# --------------------------------------------------------------------------- #
# Random input generators
# --------------------------------------------------------------------------- #
def draw_labels(rng: np.random.Generator, shape: tuple[int, int], kind: str) -> np.ndarray:
    """Draw a ``y_true`` matrix of the given label kind (float64)."""
    n_rows, n_cols = shape
    if kind == "graded":
        p = rng.dirichlet(np.ones(5))
        y = rng.choice(5, size=shape, p=p).astype(np.float64)
    elif kind == "binary":
        y = (rng.random(shape) < rng.uniform(0.05, 0.7)).astype(np.float64)
    elif kind == "continuous":
        if rng.random() < 0.5:
            y = rng.exponential(rng.choice([0.5, 1.0, 3.0]), size=shape)
        else:
            y = rng.uniform(0.0, 5.0, size=shape)
        if rng.random() < 0.5:  # sparse relevance: most documents irrelevant
            y[rng.random(shape) < rng.uniform(0.3, 0.9)] = 0.0
    elif kind == "negative":
        if rng.random() < 0.5:
            y = rng.integers(-2, 5, size=shape).astype(np.float64)
        else:
            y = rng.normal(0.5, 1.5, size=shape)
    else:
        raise ValueError(kind)

    if kind != "negative" and rng.random() < P_ALL_ZERO_CASE:
        y[:] = 0.0
    else:
        y[rng.random(n_rows) < P_ZERO_ROW] = 0.0

    if kind == "negative" and not (y < 0).any():
        y[rng.integers(n_rows), rng.integers(n_cols)] = -rng.choice(
            [1.0, 2.0, rng.uniform(0.01, 3.0)]
        )
    return y


def _continuous_row(rng: np.random.Generator, n_cols: int) -> np.ndarray:
    return rng.normal(0.0, 10.0 ** rng.uniform(-2, 2), size=n_cols)


def _rounded_row(rng: np.random.Generator, n_cols: int) -> np.ndarray:
    decimals = int(rng.integers(0, 3))  # 0, 1 or 2
    if rng.random() < 0.5:
        x = rng.normal(0.0, rng.choice([0.3, 1.0, 3.0]), size=n_cols)
    else:
        x = rng.uniform(0.0, 1.0, size=n_cols)
    return np.round(x, decimals)


def _tiny_set_row(
    rng: np.random.Generator, n_cols: int, values: np.ndarray | None = None
) -> np.ndarray:
    if values is None:
        values = _tiny_value_set(rng)
    return rng.choice(values, size=n_cols)


def _tiny_value_set(rng: np.random.Generator) -> np.ndarray:
    m = int(rng.integers(1, 5))  # 1..4 distinct values
    if rng.random() < 0.5:
        return rng.integers(-3, 4, size=m).astype(np.float64)
    return rng.normal(size=m)


def draw_scores(rng: np.random.Generator, y_true: np.ndarray, kind: str) -> np.ndarray:
    """Draw a ``y_score`` matrix of the given score kind (float64)."""
    n_rows, n_cols = y_true.shape
    if kind == "tie_free":
        return draw_tie_free_scores(rng, n_rows, n_cols)

    if kind == "continuous":
        s = np.stack([_continuous_row(rng, n_cols) for _ in range(n_rows)])
    elif kind == "rounded":
        s = np.stack([_rounded_row(rng, n_cols) for _ in range(n_rows)])
    elif kind == "tiny_set":
        values = _tiny_value_set(rng)  # shared by all rows of the case
        s = np.stack([_tiny_set_row(rng, n_cols, values) for _ in range(n_rows)])
    elif kind == "label_derived":
        mode = rng.integers(3)
        if mode == 0:  # ideal ordering, ties exactly where labels tie
            s = y_true.copy()
        elif mode == 1:  # worst ordering
            s = -y_true
        else:  # noisy labels, rounded so ties remain
            s = np.round(y_true + rng.normal(0.0, 0.7, size=y_true.shape), 1)
    elif kind == "mixed":
        makers = (_continuous_row, _rounded_row, _tiny_set_row)
        s = np.stack([makers[rng.integers(3)](rng, n_cols) for _ in range(n_rows)])
    else:
        raise ValueError(kind)

    constant = rng.random(n_rows) < P_CONSTANT_ROW
    for i in np.flatnonzero(constant):
        s[i] = rng.choice([0.0, 1.0, float(np.round(rng.normal(), 2))])
    return np.ascontiguousarray(s, dtype=np.float64)


def draw_tie_free_scores(rng: np.random.Generator, n_rows: int, n_cols: int) -> np.ndarray:
    """Scores without duplicates in any row (safe for ``ignore_ties=True``).

    numpy's ``argsort`` order among equal keys is build dependent, so scikit-learn's
    ``ignore_ties=True`` result is only well defined on tie-free rows.
    """
    rows = []
    for _ in range(n_rows):
        while True:
            if rng.random() < 0.5:
                row = rng.permutation(n_cols).astype(np.float64) * rng.choice([1.0, 0.25, -1.0])
            else:
                row = _continuous_row(rng, n_cols)
            # np.unique also merges -0.0 with 0.0, matching sklearn's notion.
            if np.unique(row).size == n_cols:
                break
        rows.append(row)
    return np.stack(rows)


def draw_k(rng: np.random.Generator, n_cols: int) -> int | None:
    """``None``, 1, ``n_cols``, beyond ``n_cols``, or uniform in 1..n_cols+5."""
    u = rng.random()
    if u < 0.30:
        return None
    if u < 0.45:
        return 1
    if u < 0.60:
        return n_cols
    if u < 0.70:
        return int(rng.integers(n_cols + 1, n_cols + 6))
    return int(rng.integers(1, n_cols + 6))


def draw_weights(rng: np.random.Generator, n_rows: int) -> np.ndarray | None:
    """``None`` about half the time, otherwise positive weights (maybe zeros)."""
    if rng.random() < P_NO_WEIGHTS:
        return None
    u = rng.random()
    if u < 0.6:
        w = rng.uniform(0.1, 3.0, size=n_rows)
    elif u < 0.8:
        w = rng.integers(1, 6, size=n_rows).astype(np.float64)
    else:  # some zero weights, never all of them
        w = rng.uniform(0.1, 3.0, size=n_rows)
        w[rng.random(n_rows) < 0.4] = 0.0
        if not (w > 0).any():
            w[rng.integers(n_rows)] = rng.uniform(0.1, 3.0)
    return w


# --------------------------------------------------------------------------- #
# Reference values
# --------------------------------------------------------------------------- #
def reference_values(y_true, y_score, k, log_base, sample_weight, ignore_ties):
    """scikit-learn's values: (dcg, ndcg, dcg_rows, ndcg_rows).

    NDCG (case value and all rows) is NaN when ``y_true`` has a negative entry,
    because ``ndcg_score`` rejects such input.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning would make a case dubious
        dcg = dcg_score(
            y_true,
            y_score,
            k=k,
            log_base=log_base,
            sample_weight=sample_weight,
            ignore_ties=ignore_ties,
        )
        dcg_rows = _dcg_sample_scores(
            y_true, y_score, k=k, log_base=log_base, ignore_ties=ignore_ties
        )
        if (y_true < 0).any():
            ndcg = np.nan
            ndcg_rows = np.full(y_true.shape[0], np.nan)
        else:
            ndcg = ndcg_score(
                y_true, y_score, k=k, sample_weight=sample_weight, ignore_ties=ignore_ties
            )
            ndcg_rows = _ndcg_sample_scores(y_true, y_score, k=k, ignore_ties=ignore_ties)
    return (
        float(dcg),
        float(ndcg),
        np.asarray(dcg_rows, np.float64),
        np.asarray(ndcg_rows, np.float64),
    )


# --------------------------------------------------------------------------- #
# Corpus assembly
# --------------------------------------------------------------------------- #
def generate(seed: int = SEED, n_cases: int = N_CASES) -> dict[str, np.ndarray]:
    """Draw ``n_cases`` cases and return the arrays of the ``.npz`` file."""
    rng = np.random.default_rng(seed)
    per_case = {
        name: []
        for name in (
            "case_n_rows",
            "case_n_cols",
            "case_k",
            "case_log_base",
            "case_has_weights",
            "case_ignore_ties",
            "case_label_kind",
            "case_score_kind",
            "case_dcg_score",
            "case_ndcg_score",
        )
    }
    y_true_parts, y_score_parts, weight_parts = [], [], []
    row_dcg_parts, row_ndcg_parts = [], []

    for _ in range(n_cases):
        n_rows = int(rng.integers(1, MAX_ROWS + 1))
        n_cols = int(rng.integers(MIN_COLS, MAX_COLS + 1))
        label_kind = str(rng.choice(LABEL_KINDS, p=LABEL_KIND_P))
        ignore_ties = bool(rng.random() < P_IGNORE_TIES)
        score_kind = "tie_free" if ignore_ties else str(rng.choice(SCORE_KINDS, p=SCORE_KIND_P))
        k = draw_k(rng, n_cols)
        log_base = float(LOG_BASES[rng.integers(len(LOG_BASES))])
        weights = draw_weights(rng, n_rows)

        y_true = draw_labels(rng, (n_rows, n_cols), label_kind)
        y_score = draw_scores(rng, y_true, score_kind)
        dcg, ndcg, dcg_rows, ndcg_rows = reference_values(
            y_true, y_score, k, log_base, weights, ignore_ties
        )

        per_case["case_n_rows"].append(n_rows)
        per_case["case_n_cols"].append(n_cols)
        per_case["case_k"].append(-1 if k is None else k)
        per_case["case_log_base"].append(log_base)
        per_case["case_has_weights"].append(weights is not None)
        per_case["case_ignore_ties"].append(ignore_ties)
        per_case["case_label_kind"].append(LABEL_KINDS.index(label_kind))
        per_case["case_score_kind"].append(SCORE_KINDS.index(score_kind))
        per_case["case_dcg_score"].append(dcg)
        per_case["case_ndcg_score"].append(ndcg)
        y_true_parts.append(y_true.ravel())
        y_score_parts.append(y_score.ravel())
        weight_parts.append(np.empty(0) if weights is None else weights)
        row_dcg_parts.append(dcg_rows)
        row_ndcg_parts.append(ndcg_rows)

    def offsets(sizes) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    dtypes = {
        "case_n_rows": np.int64,
        "case_n_cols": np.int64,
        "case_k": np.int64,
        "case_log_base": np.float64,
        "case_has_weights": np.bool_,
        "case_ignore_ties": np.bool_,
        "case_label_kind": np.int8,
        "case_score_kind": np.int8,
        "case_dcg_score": np.float64,
        "case_ndcg_score": np.float64,
    }
    arrays = {name: np.asarray(vals, dtype=dtypes[name]) for name, vals in per_case.items()}
    arrays["case_item_offset"] = offsets([p.size for p in y_true_parts])
    arrays["case_row_offset"] = offsets(arrays["case_n_rows"])
    arrays["case_weight_offset"] = offsets([p.size for p in weight_parts])
    arrays["y_true"] = np.concatenate(y_true_parts).astype(np.float64)
    arrays["y_score"] = np.concatenate(y_score_parts).astype(np.float64)
    arrays["sample_weight"] = np.concatenate(weight_parts).astype(np.float64)
    arrays["row_dcg"] = np.concatenate(row_dcg_parts)
    arrays["row_ndcg"] = np.concatenate(row_ndcg_parts)
    arrays["label_kind_names"] = np.asarray(LABEL_KINDS)
    arrays["score_kind_names"] = np.asarray(SCORE_KINDS)
    return arrays


DESCRIPTION = (
    "Frozen scikit-learn reference values for DCG/NDCG. Each case is a pair of "
    "float64 matrices y_true, y_score of shape (case_n_rows[i], case_n_cols[i]) "
    "stored row-major in the flat arrays y_true / y_score at "
    "[case_item_offset[i]:case_item_offset[i+1]]. Per-case parameters: case_k "
    "(-1 means k=None), case_log_base (used by dcg_score only; ndcg_score always "
    "uses scikit-learn's fixed base 2), case_ignore_ties, and case_has_weights; "
    "weighted cases have one weight per row in "
    "sample_weight[case_weight_offset[i]:case_weight_offset[i+1]] (an empty "
    "slice for unweighted cases). Expected values: case_dcg_score = "
    "sklearn.metrics.dcg_score(y_true, y_score, k, log_base, sample_weight, "
    "ignore_ties); case_ndcg_score = sklearn.metrics.ndcg_score(y_true, y_score, "
    "k, sample_weight, ignore_ties); per-row values row_dcg / row_ndcg at "
    "[case_row_offset[i]:case_row_offset[i+1]] from "
    "sklearn.metrics._ranking._dcg_sample_scores(y_true, y_score, k, log_base, "
    "ignore_ties) and _ndcg_sample_scores(y_true, y_score, k, ignore_ties). "
    "Cases whose y_true has any negative entry (label kind 'negative') are valid "
    "for DCG only: their case_ndcg_score and all their row_ndcg entries are NaN. "
    "ignore_ties=True occurs only with scores that have no duplicates in any row "
    "(numpy's order among ties is build dependent). Offset arrays have length "
    "n_cases+1 and start at 0. case_label_kind / case_score_kind are codes into "
    "label_kind_names / score_kind_names (diagnostic only). Scores may contain "
    "-0.0 (from np.round), which ties with 0.0. Load with tests/corpus/load.py "
    "(no scikit-learn needed)."
)


def summarize(arrays: dict[str, np.ndarray]) -> dict:
    """Counts of the case types, recorded in the json for reference."""
    k = arrays["case_k"]
    n_cols = arrays["case_n_cols"]
    label = arrays["case_label_kind"]
    score = arrays["case_score_kind"]
    return {
        "n_rows_total": int(arrays["case_n_rows"].sum()),
        "n_items_total": int(arrays["y_true"].size),
        "label_kind": {name: int((label == i).sum()) for i, name in enumerate(LABEL_KINDS)},
        "score_kind": {name: int((score == i).sum()) for i, name in enumerate(SCORE_KINDS)},
        "k_none": int((k == -1).sum()),
        "k_eq_1": int((k == 1).sum()),
        "k_eq_n_cols": int((k == n_cols).sum()),
        "k_gt_n_cols": int((k > n_cols).sum()),
        "log_base": {repr(b): int((arrays["case_log_base"] == b).sum()) for b in LOG_BASES},
        "weighted": int(arrays["case_has_weights"].sum()),
        "ignore_ties": int(arrays["case_ignore_ties"].sum()),
        "ndcg_nan": int(np.isnan(arrays["case_ndcg_score"]).sum()),
    }


def main(argv: list[str] | None = None) -> None:
    """Write the corpus ``.npz`` and its ``.json`` metadata."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=HERE,
        help="directory to write into (default: next to this file)",
    )
    args = parser.parse_args(argv)

    arrays = generate()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    npz_path = args.output_dir / NPZ_NAME
    np.savez_compressed(npz_path, **arrays)

    metadata = {
        "description": DESCRIPTION,
        "generator": "tests/corpus/make_corpus.py",
        "regenerate": "python tests/corpus/make_corpus.py",
        "seed": SEED,
        "n_cases": int(arrays["case_n_rows"].size),
        "sklearn_version": sklearn.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "log_bases": list(LOG_BASES),
        "label_kind_names": list(LABEL_KINDS),
        "score_kind_names": list(SCORE_KINDS),
        "arrays": {
            name: {"dtype": str(a.dtype), "shape": list(a.shape)} for name, a in arrays.items()
        },
        "counts": summarize(arrays),
    }
    json_path = args.output_dir / JSON_NAME
    json_path.write_text(json.dumps(metadata, indent=2) + "\n")
    print(f"wrote {npz_path} ({npz_path.stat().st_size} bytes) and {json_path}")


if __name__ == "__main__":
    main()
