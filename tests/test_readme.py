"""The README's examples run, so they cannot go stale."""

import doctest
from pathlib import Path

import jax

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples():
    # The README shows float32 results, the default without x64.
    with jax.enable_x64(False):
        failures, tried = doctest.testfile(
            str(README), module_relative=False, optionflags=doctest.ELLIPSIS
        )
    assert tried >= 8
    assert failures == 0
