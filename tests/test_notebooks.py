"""Every notebook's code cells run top to bottom without error.

The cells are executed in one namespace per notebook, in-process, so the
check needs no Jupyter kernel.
"""

import json
from pathlib import Path

import jax
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    cells = json.loads(path.read_text())["cells"]
    namespace = {"__name__": "__main__"}
    x64 = jax.config.jax_enable_x64
    try:
        for index, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            exec(compile(source, f"{path.name}[cell {index}]", "exec"), namespace)
            assert not cell.get("outputs"), f"{path.name} cell {index} is committed with outputs"
    finally:
        jax.config.update("jax_enable_x64", x64)
