"""``python -m lodestar``: the same program as the ``lodestar`` script."""

from lodestar.cli import console

if __name__ == "__main__":
    console()
