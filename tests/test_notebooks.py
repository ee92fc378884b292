"""Every notebook is valid nbformat 4, committed without outputs, and runs top to bottom.

The code cells are executed in one namespace per notebook, in-process, so the
check needs no Jupyter kernel and pytest's ``filterwarnings = error`` applies to
them: a warning in a notebook fails the test. Each notebook starts as a fresh
kernel would: float64 off, the working directory its own folder, matplotlib's
non-interactive Agg backend. ``LODESTAR_NOTEBOOK_QUICK=1`` shrinks the sizes
so that all of them run in about a minute; the notebooks read it and nothing
else changes. Every notebook must draw at least one figure.
"""

import sys
from pathlib import Path

import jax
import matplotlib
import nbformat
import pytest
import tiers

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_every_notebook_is_on_the_documentation_site():
    # The site renders the notebooks its index's toctree names; a notebook
    # missing there would be tested here but never read.
    import fnmatch
    import re

    index = (NOTEBOOK_DIR.parent / "docs" / "index.md").read_text()
    entries = re.findall(r"^(notebooks/\S+)$", index, re.M)
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        name = f"notebooks/{path.stem}"
        assert any(fnmatch.fnmatch(name, entry) for entry in entries), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_and_stripped(path):
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    assert notebook.nbformat == 4
    nbformat.validate(notebook)
    assert notebook.cells[0].cell_type == "markdown"
    assert notebook.cells[0].source.startswith("# "), "the first cell gives the title"
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"cell {index} is committed with outputs"
            assert cell.execution_count is None, f"cell {index} has an execution count"


# The training notebook trains for most of a minute even at its quick size:
# the slow tier runs it (.ci/run builds the documentation without running them).
@pytest.mark.parametrize(
    "path",
    tiers.params(
        NOTEBOOKS,
        default=[p for p in NOTEBOOKS if "training" not in p.name],
        ids=[p.name for p in NOTEBOOKS],
    ),
)
def test_notebook_runs(path, monkeypatch):
    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("LODESTAR_NOTEBOOK_QUICK", "1")
    monkeypatch.chdir(path.parent)
    monkeypatch.setattr(sys, "path", list(sys.path))  # notebooks may add folders
    namespace = {"__name__": "__main__"}
    x64 = jax.config.jax_enable_x64
    plt.close("all")
    try:
        jax.config.update("jax_enable_x64", False)
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                exec(compile(cell.source, f"{path.name}[cell {index}]", "exec"), namespace)
        assert plt.get_fignums(), f"{path.name} draws no figure"
    finally:
        plt.close("all")
        jax.config.update("jax_enable_x64", x64)
