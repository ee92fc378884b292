"""``python -m lodestar`` and the ``lodestar`` script: :func:`lodestar.cli.console`."""

import sys


def main() -> None:
    """Start the program; Ctrl-C while it is still importing exits 130, as it does later."""
    from lodestar._interrupt import caused_by_interrupt

    try:
        from lodestar.cli import console
    except BaseException as error:
        if not caused_by_interrupt(error):
            raise
        print("lodestar: interrupted", file=sys.stderr)
        sys.exit(130)
    console()


if __name__ == "__main__":
    main()
