"""``python -m lodestar`` and the ``lodestar`` script: :func:`lodestar.cli.console`."""

import os
import sys

# The variables OpenBLAS reads for its number of threads, in its order.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread() -> bool:
    """Let OpenBLAS start no threads of its own in the program's process.

    NumPy's OpenBLAS, and SciPy's, which JAX loads for its CPU LAPACK calls,
    each start a thread per core when they load, and those threads spin for
    about a tenth of a second before they sleep. The program never calls
    BLAS (its kernels are XLA's and lodestar's own), and on a 2-core machine
    the spinning took 0.2-0.6 s of CPU from a TREC-depth evaluation's 2.7 s
    (decision 0027, 2026-12-07 revision). Set before NumPy loads; not where
    the user chose a number of threads. The program's own setting: the
    library never calls it.

    Returns:
      Whether the variable was set.
    """
    if any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


def main() -> None:
    """Start the program; Ctrl-C while it is still importing exits 130, as it does later."""
    one_blas_thread()
    from lodestar import _interrupt

    # Ctrl-C is handled from here on, not only once the command line is
    # imported: a KeyboardInterrupt that a finaliser swallows while NumPy or
    # JAX import (0.15 s after start) was lost, and the program ran to its end.
    _interrupt.install()
    try:
        from lodestar.cli import console

        # Inside the try: an interrupt remembered during the import above can
        # be raised before console() reaches its own handler.
        console()
    except BaseException as error:
        _interrupt.reporting()
        if not _interrupt.caused_by_interrupt(error):
            raise
        print("lodestar: interrupted", file=sys.stderr)
        sys.stderr.flush()
        # Not the interpreter's teardown: an import cut short can leave an
        # extension module half set up, and tearing it down crashed (SIGSEGV).
        os._exit(130)


if __name__ == "__main__":
    main()
