"""lodestar: exact, tie-averaged and differentiable ranking metrics in JAX.

The public surface:

* :mod:`lodestar.metrics`: exact measures, one value per list, averaged over
  tied scores: DCG, NDCG, reciprocal rank, precision, recall, hits, average
  precision, ERR and trec_eval's measures; jit-, vmap- and backend-agnostic.
* :mod:`lodestar.sklearn`: drop-ins for scikit-learn's ``dcg_score`` and
  ``ndcg_score``, plus ``reciprocal_rank_score``.
* :mod:`lodestar.smooth`: differentiable soft ranks (sigmoid, NeuralSort,
  SoftSort, permutahedron) and smooth DCG, NDCG, reciprocal rank, hits,
  precision, recall, average precision, ERR, rank-biased precision and
  R-precision.
* :mod:`lodestar.losses`: learning-to-rank losses (softmax, poly1 softmax,
  ListMLE, RankNet, pairwise hinge and soft zero-one, pointwise MSE and
  sigmoid, LambdaLoss, ApproxNDCG, NeuralNDCG), in memory linear in the list
  length for all but NeuralNDCG, and Rax's metric-to-loss transformations
  (``approx_t12n``, ``bound_t12n``, ``gumbel_t12n``).
* :mod:`lodestar.streaming`: mergeable accumulators for evaluating a stream
  of batches, under ``jit``, ``lax.scan`` and ``shard_map``.
* :mod:`lodestar.stats`: significance tests over per-query scores (paired
  t-test, Fisher's randomization test, the paired bootstrap), Holm and
  Bonferroni corrections, and the superscript report comparing several runs.
* :func:`lodestar.evaluate` and :func:`lodestar.compare` (in
  :mod:`lodestar.evaluation`): TREC runs scored and compared from Python, from
  files, dicts, DataFrames or Arrow tables, exactly as ``lodestar evaluate``;
  :func:`lodestar.use_compilation_cache` keeps their compiled kernels on disk
  for the next process, as the command line does.
* :func:`lodestar.export`: :func:`jax.export.export` for programs holding
  exact metrics, whose CPU kernels are XLA custom calls.
* :mod:`lodestar.datasets`: synthetic learning-to-rank data and the
  svmlight/LETOR reader, both in padded ``(features, labels, where)`` form.

Submodules are imported when first used, so that ``lodestar evaluate`` starts
before JAX has finished loading.
"""

from __future__ import annotations

import importlib

# Not typing's: importing typing (14 ms) would delay the Ctrl-C handler that
# ``python -m lodestar`` installs right after this module (decision 0033).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from lodestar import datasets as datasets
    from lodestar import evaluation as evaluation
    from lodestar import losses as losses
    from lodestar import metrics as metrics
    from lodestar import sklearn as sklearn
    from lodestar import smooth as smooth
    from lodestar import stats as stats
    from lodestar import streaming as streaming
    from lodestar._native import export as export
    from lodestar._validation import InvalidParameterError as InvalidParameterError
    from lodestar._validation import value_checks_under_jit as value_checks_under_jit
    from lodestar.evaluation import Evaluation as Evaluation
    from lodestar.evaluation import compare as compare
    from lodestar.evaluation import evaluate as evaluate
    from lodestar.evaluation import use_compilation_cache as use_compilation_cache

__version__ = "0.1.0.dev0"

__all__ = [
    "Evaluation",
    "InvalidParameterError",
    "compare",
    "datasets",
    "evaluate",
    "evaluation",
    "export",
    "losses",
    "metrics",
    "sklearn",
    "smooth",
    "stats",
    "streaming",
    "use_compilation_cache",
    "value_checks_under_jit",
]

_FROM_EVALUATION = {"Evaluation", "compare", "evaluate", "use_compilation_cache"}
_FROM_VALIDATION = {"InvalidParameterError", "value_checks_under_jit"}
_FROM_NATIVE = {"export"}
# Every other public name is a submodule.
_SUBMODULES = set(__all__) - _FROM_EVALUATION - _FROM_VALIDATION - _FROM_NATIVE


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"lodestar.{name}")
    if name in _FROM_EVALUATION:
        return getattr(importlib.import_module("lodestar.evaluation"), name)
    if name in _FROM_VALIDATION:
        return getattr(importlib.import_module("lodestar._validation"), name)
    if name in _FROM_NATIVE:
        return getattr(importlib.import_module("lodestar._native"), name)
    raise AttributeError(f"module 'lodestar' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
