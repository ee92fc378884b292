"""Load the frozen scikit-learn DCG/NDCG reference corpus.

The corpus (``sklearn_corpus.npz``, described in ``sklearn_corpus.json``) is
produced by ``python tests/corpus/make_corpus.py``. This module only needs numpy,
so tests that use the corpus run without scikit-learn installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

CORPUS_DIR = Path(__file__).resolve().parent
CORPUS_PATH = CORPUS_DIR / "sklearn_corpus.npz"
METADATA_PATH = CORPUS_DIR / "sklearn_corpus.json"


def load_metadata() -> dict[str, Any]:
    """Return the corpus metadata (versions, seed, format description, counts)."""
    return json.loads(METADATA_PATH.read_text())


def load_cases() -> list[dict[str, Any]]:
    """Return every corpus case as a dict.

    Keys of each case:
        y_true, y_score: 2-D float64 arrays of shape (n_rows, n_cols).
        k: int, or None for no cut-off (may exceed n_cols).
        log_base: float, the DCG log base (NDCG always uses base 2).
        sample_weight: 1-D float64 array of length n_rows, or None.
        ignore_ties: bool (True only for rows without tied scores).
        dcg_score: float, ``sklearn.metrics.dcg_score``.
        ndcg_score: float, ``sklearn.metrics.ndcg_score``; NaN if y_true has a
            negative entry (scikit-learn rejects such input for NDCG).
        dcg_rows, ndcg_rows: 1-D float64 arrays of per-row values (ndcg_rows is
            all NaN when ndcg_score is NaN).
        case_id: int, index of the case in the corpus.
        label_kind, score_kind: str, how the inputs were drawn (diagnostic).

    Each call reads the file afresh, so callers may modify the returned arrays.
    """
    with np.load(CORPUS_PATH, allow_pickle=False) as data:
        a = {name: data[name] for name in data.files}

    label_names = [str(s) for s in a["label_kind_names"]]
    score_names = [str(s) for s in a["score_kind_names"]]
    item_off = a["case_item_offset"]
    row_off = a["case_row_offset"]
    w_off = a["case_weight_offset"]

    cases = []
    for i in range(a["case_n_rows"].size):
        shape = (int(a["case_n_rows"][i]), int(a["case_n_cols"][i]))
        items = slice(item_off[i], item_off[i + 1])
        rows = slice(row_off[i], row_off[i + 1])
        k = int(a["case_k"][i])
        cases.append(
            {
                "y_true": a["y_true"][items].reshape(shape),
                "y_score": a["y_score"][items].reshape(shape),
                "k": None if k == -1 else k,
                "log_base": float(a["case_log_base"][i]),
                "sample_weight": (
                    a["sample_weight"][w_off[i] : w_off[i + 1]]
                    if a["case_has_weights"][i]
                    else None
                ),
                "ignore_ties": bool(a["case_ignore_ties"][i]),
                "dcg_score": float(a["case_dcg_score"][i]),
                "ndcg_score": float(a["case_ndcg_score"][i]),
                "dcg_rows": a["row_dcg"][rows],
                "ndcg_rows": a["row_ndcg"][rows],
                "case_id": i,
                "label_kind": label_names[a["case_label_kind"][i]],
                "score_kind": score_names[a["case_score_kind"][i]],
            }
        )
    return cases
