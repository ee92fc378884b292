"""``python -m lodestar``: the same command line as the ``lodestar`` script."""

import sys

from lodestar.cli import main

if __name__ == "__main__":
    sys.exit(main())
