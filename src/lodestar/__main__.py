"""``python -m lodestar`` and the ``lodestar`` script: :func:`lodestar.cli.console`."""

import os
import sys


def main() -> None:
    """Start the program; Ctrl-C while it is still importing exits 130, as it does later."""
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
