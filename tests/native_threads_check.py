"""Run by tests/test_native.py in a fresh process: jitted steps from many threads at once.

``python native_threads_check.py THREADS CALLS`` starts THREADS Python
threads, each of which calls a user's own jitted step CALLS times: NDCG@10
and average precision of a 600 x 1,024 float32 batch, summed. At that length
the step ranks with the compiled kernels (tie blocks and the ideal's sorted
gains), which share XLA's intra-op thread pool with every other program
running at the time; the calling thread works too, so that none waits on a
task no thread is free to run.

It prints ``OK`` when every thread has finished with the values that one
call before the threads started gave. A run still going after
``LODESTAR_CHECK_DEADLINE`` seconds (default 120) prints every thread's
stack and exits non-zero.
"""

import faulthandler
import os
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _native, metrics


@jax.jit
def step(scores, labels):
    return (
        metrics.ndcg(scores, labels, k=10).mean() + metrics.average_precision(scores, labels).mean()
    )


def main(threads: int, calls: int) -> int:
    faulthandler.dump_traceback_later(
        float(os.environ.get("LODESTAR_CHECK_DEADLINE", 120)), exit=True
    )
    if not _native.loaded():
        print("FAIL the compiled kernels are not loaded:", _native.refusal())
        return 1
    rng = np.random.default_rng(0)
    batches = [
        (
            jnp.asarray(np.round(rng.random((600, 1024), dtype=np.float32), 2)),
            jnp.asarray(rng.integers(0, 3, (600, 1024)).astype(np.float32)),
        )
        for _ in range(threads)
    ]
    expected = [float(step(*batch)) for batch in batches]
    failures = []

    def worker(index):
        try:
            for _ in range(calls):
                if float(step(*batches[index])) != expected[index]:
                    failures.append(f"thread {index}: wrong value")
                    return
        except Exception as error:  # reported below
            failures.append(f"thread {index}: {error!r}")

    workers = [threading.Thread(target=worker, args=(index,)) for index in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    if failures:
        print("FAIL", failures[0])
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
