"""``python -m lodestar`` and the ``lodestar`` script: :func:`lodestar.cli.console`."""

import sys


def main() -> None:
    """Start the program; Ctrl-C while it is still importing exits 130, as it does later."""
    try:
        from lodestar.cli import console
    except KeyboardInterrupt:
        print("lodestar: interrupted", file=sys.stderr)
        sys.exit(130)
    console()


if __name__ == "__main__":
    main()
