"""Run by tests/test_host.py in a fresh process: host callbacks from many threads at once.

``python host_threads_check.py THREADS CALLS`` starts THREADS Python threads,
each of which calls a jitted kernel CALLS times, wrapped by
:func:`lodestar._host.one_program_at_a_time`. The kernel hands its argument,
a 600 x 1,024 float32 batch as it was passed in, to a host callback: the
shape of every lodestar host path, and the one that hangs unwrapped. Before
decision 0026, with four threads on two cores, such a process hung in every
run (``jax.pure_callback`` copies the argument on the thread pool that its
waiting callbacks fill).

It prints ``OK`` when every thread has finished with the right values. A run
still going after ``LODESTAR_CHECK_DEADLINE`` seconds (default 120) prints
every thread's stack and exits non-zero.
"""

import faulthandler
import os
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _host


def _row_minimum(x):
    return (np.min(x, axis=-1),)


@_host.one_program_at_a_time
@jax.jit
def kernel(x):
    (found,) = _host.call(_row_minimum, (_host.result_type(x, x.dtype, x.shape[:-1]),), x)
    return found


def main(threads: int, calls: int) -> int:
    faulthandler.dump_traceback_later(
        float(os.environ.get("LODESTAR_CHECK_DEADLINE", 120)), exit=True
    )
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(calls):
                x = rng.random((600, 1024), dtype=np.float32)
                if not np.array_equal(np.asarray(kernel(jnp.asarray(x))), x.min(axis=-1)):
                    failures.append(f"thread {seed}: wrong values")
                    return
        except Exception as error:  # reported below
            failures.append(f"thread {seed}: {error!r}")

    workers = [threading.Thread(target=worker, args=(seed,)) for seed in range(threads)]
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
