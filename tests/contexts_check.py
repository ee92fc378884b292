"""Run by tests/test_contexts.py in a fresh process: one configuration per run.

``python contexts_check.py MODE ROWS`` evaluates every exact metric and the
rank-aware loss on batches that reach every host-callback path (the host sort
of long lists, the top values of the top-k path, the NDCG ideal's argsort and
the packed-list layout), and prints one line per result, ``name sha256``, of
the values' bytes. MODE is:

* ``global``: ``jax_enable_x64`` set for the whole process (the reference);
* ``context``: x64 off for the process, each call inside
  ``with jax.enable_x64(True):`` (JAX's thread-local context manager);
* ``threads``: as ``context``, from four Python threads at once, each calling
  the functions of ``ENGINE_PATHS`` on every batch, the threads starting at
  different batches;
  every thread's results are checked against the first thread's before
  printing;
* ``global-reported`` and ``context-reported``: the crash as it was reported
  (:func:`reported`), under global x64 and inside the context.

A run that has not finished after ``LODESTAR_CHECK_DEADLINE`` seconds (default
600) prints every thread's Python stack to stderr and exits, so that a hang is
reported with the place it hangs rather than as a bare timeout.

JAX's configuration contexts are thread-local, while host callbacks run on
XLA's threads and on lodestar's pool, so a callback that read the calling
thread's configuration at run time would fail (or silently narrow float64
scores to float32) in the ``context`` and ``threads`` modes only.
"""

import faulthandler
import functools
import hashlib
import os
import sys
import threading

import children  # tests/children.py, beside this script
import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _ranking, _registry, losses

children.use_the_suite_compilation_cache()

# Every exact measure of the registry, with its required options, and the
# rank-aware loss. ``cutoff`` says whether the function takes ``k``. Every
# measure ranks through the same engine (lodestar._ranking), whose host paths
# are what differ between batches: every measure meets the host sort of whole
# lists, and the measures of ENGINE_PATHS also meet the top-k path, float32
# and packed lists. (Every measure on every batch took 15 minutes, mostly
# tracing, for no path the engine set misses.)
FUNCTIONS = {
    key: (functools.partial(entry.function, **entry.required_options), entry.cutoff)
    for key, entry in _registry.MEASURES.items()
}
FUNCTIONS["lambda_loss"] = (functools.partial(losses.lambda_loss, reduction="none"), False)
ENGINE_PATHS = {"ndcg", "dcg", "map", "mrr", "P", "recall", "err", "lambda_loss"}


def batches(rows):
    """(name, scores, labels, options): every host path, float64 and float32."""
    rng = np.random.default_rng(20261201)
    long = _ranking.PAIRWISE_MAX_N * 2  # host sort of whole lists
    scores = rng.random((rows, long))
    # Scores distinct only beyond float32's resolution: narrowed to float32
    # they would tie, and every metric would move.
    scores[:, :8] = 0.5 + np.arange(8) * 1e-12
    labels = rng.integers(0, 4, (rows, long)).astype(np.float64)
    labels[:, :8] = np.arange(8) % 4
    for k in (None, 10):
        yield f"long_k{k}", scores, labels, {"k": k}
    yield "long_f32_k10", scores.astype(np.float32), labels.astype(np.float32), {"k": 10}
    segments = np.repeat(np.arange(4), long // 4)[None].repeat(rows // 10, 0)
    yield "packed", scores[: rows // 10], labels[: rows // 10], {"segments": segments}


def evaluate(rows, start=0, *, names=None):
    """Every function (of ``names``) on every batch, as ``{name: sha256 of the values}``.

    ``start`` rotates the order of the batches, so that threads given
    different starts evaluate different batches at the same time.
    """
    digests = {}
    every = list(batches(rows))
    for batch, scores, labels, options in every[start % len(every) :] + every[: start % len(every)]:
        for name, (function, takes_k) in FUNCTIONS.items():
            if options.get("k") is not None and not takes_k:
                continue
            if (batch != "long_kNone" or names is not None) and name not in ENGINE_PATHS:
                continue
            arguments = scores, labels, {o: v for o, v in options.items() if o != "k" or takes_k}
            if name == "lambda_loss":
                # Its n x n pairs would need 25 GB at full size; its ranks come
                # from the same engine, so a few lists reach the same paths.
                if "k" in options:
                    continue
                arguments = scores[:32], labels[:32], options
                if "segments" in options:
                    arguments = scores[:32], labels[:32], {"segments": options["segments"][:32]}
            with jax.enable_x64(True):
                s, y = jnp.asarray(arguments[0]), jnp.asarray(arguments[1])
                value = np.asarray(function(s, y, **arguments[2]))
            digests[f"{name}[{batch}] {value.dtype}"] = hashlib.sha256(value.tobytes()).hexdigest()
    return digests


def reported(rows):
    """The reported crash: NDCG@100, recall@100 and RR of a float64 batch, three times each.

    ``with jax.enable_x64(True): metrics.ndcg(s, l, k=100)`` on 3,000 x 1,000
    crashed on every call before decision 0013 ("Incorrect output dtype").
    Each repetition must give the same bytes.
    """
    from lodestar import metrics

    rng = np.random.default_rng(3000)
    scores = rng.random((rows, 1000))
    labels = rng.integers(0, 4, (rows, 1000)).astype(np.float64)
    digests = {}
    for name, function in (
        ("ndcg@100", functools.partial(metrics.ndcg, k=100)),
        ("recall@100", functools.partial(metrics.recall, k=100)),
        ("reciprocal_rank", metrics.reciprocal_rank),
    ):
        seen = set()
        for _ in range(3):
            with jax.enable_x64(True):
                value = np.asarray(function(jnp.asarray(scores), jnp.asarray(labels)))
            seen.add(hashlib.sha256(value.tobytes()).hexdigest())
        if len(seen) != 1:
            raise AssertionError(f"{name}: repetitions differ")
        digests[f"{name} {value.dtype}"] = seen.pop()
    return digests


def main(mode, rows):
    faulthandler.dump_traceback_later(
        float(os.environ.get("LODESTAR_CHECK_DEADLINE", 600)), exit=True
    )
    # Set before any computation: lodestar reads no configuration at import.
    if mode.startswith("global"):
        jax.config.update("jax_enable_x64", True)
    if mode.endswith("reported"):
        results = reported(rows)
    elif mode != "threads":
        results = evaluate(rows)
    else:
        found, errors = [], []

        # The threads share the engine's host paths, whatever the formula:
        # the functions of ENGINE_PATHS reach every one of them.
        def worker(start):
            try:
                found.append(evaluate(rows, start, names=ENGINE_PATHS))
            except Exception as error:  # reported below, with the others
                errors.append(repr(error))

        threads = [threading.Thread(target=worker, args=(start,)) for start in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            print("FAIL", errors[0][:2000])
            return 1
        results = found[0]
        for other in found[1:]:
            if other != results:
                different = sorted(k for k in results if other.get(k) != results[k])
                print("FAIL threads disagree on", different[:5])
                return 1
    for name, digest in sorted(results.items()):
        print(name, digest)
    print("OK", len(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
