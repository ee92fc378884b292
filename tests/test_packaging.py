"""The source distribution carries what its tests need, and the version is written once.

An sdist is what a packager, or anyone without a clone, runs the tests from.
It must hold ``tests/`` entirely (``conftest.py``, the oracles, the frozen
scikit-learn corpus, the trec_eval data and the helper scripts), and the
documentation, notebooks, benchmarks and examples that the tests read. The
sdist is built with ``python -m build`` from a copy of the tracked files (a
stale ``*.egg-info`` in the checkout would otherwise add files to it); the
test is skipped where ``build`` is not installed.
"""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

import lodestar

ROOT = Path(__file__).resolve().parents[1]
# Everything under these folders ships, and these files at the top.
SHIPPED_FOLDERS = ("tests", "docs", "notebooks", "benchmarks", "examples")
SHIPPED_FILES = ("README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "MANIFEST.in")
# Never shipped: build outputs and caches.
NOT_SOURCE = {"_build", "generated", "__pycache__", ".hypothesis", ".pytest_cache"}


def source_files() -> list[str]:
    """The files the sdist should carry, relative to the root, as they are in a checkout."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(
            ["git", "ls-files", "-z", *SHIPPED_FOLDERS, *SHIPPED_FILES, "src"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout.split(b"\0")
        paths = [os.fsdecode(path) for path in listed if path]
    else:  # an unpacked sdist: the files on disk
        paths = [
            str(path.relative_to(ROOT))
            for folder in (*SHIPPED_FOLDERS, "src")
            for path in (ROOT / folder).rglob("*")
            if path.is_file() and not NOT_SOURCE & set(path.relative_to(ROOT).parts)
        ]
        paths += [name for name in SHIPPED_FILES if (ROOT / name).is_file()]
    return sorted(p for p in paths if "egg-info" not in p and not p.endswith((".pyc", ".pyo")))


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory) -> set[str]:
    """The paths in a freshly built sdist, relative to its top folder."""
    if importlib.util.find_spec("build") is None:
        pytest.skip("the 'build' package is not installed (pip install build)")
    tree = tmp_path_factory.mktemp("tree")
    for relative in source_files():
        source = ROOT / relative
        if source.is_symlink() and source.is_dir():  # docs/notebooks -> ../notebooks
            shutil.copytree(source, tree / relative)
        elif source.is_file():
            (tree / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / relative)
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (archive,) = out.glob("lodestar-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    top = f"lodestar-{lodestar.__version__}/"
    assert all(name == top.rstrip("/") or name.startswith(top) for name in names), names[:5]
    return {name[len(top) :] for name in names if name.startswith(top)}


def test_the_sdist_carries_what_the_tests_need(sdist_names):
    needed = [
        "tests/conftest.py",
        "tests/oracles.py",
        "tests/corpus/sklearn_corpus.json",
        "tests/corpus/sklearn_corpus.npz",
        "tests/corpus/load.py",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "docs/conf.py",
        "examples/train_ltr.py",
        "src/lodestar/__init__.py",
        # PEP 561: type checkers read the package's annotations.
        "src/lodestar/py.typed",
    ]
    assert [name for name in needed if name not in sdist_names] == []
    assert any(name.startswith("tests/data/") for name in sdist_names)
    assert any(name.startswith("notebooks/") and name.endswith(".ipynb") for name in sdist_names)
    assert any(name.startswith("benchmarks/results/") for name in sdist_names)


def test_the_sdist_carries_every_source_file(sdist_names):
    """tests/, docs/, notebooks/, benchmarks/ and examples/ ship entirely."""
    missing = []
    for relative in source_files():
        path = ROOT / relative
        if path.is_symlink() and path.is_dir():
            # The sdist holds a copy of the folder a link points to.
            expected = [f"{relative}/{child.name}" for child in path.iterdir() if child.is_file()]
        else:
            expected = [relative]
        missing += [name for name in expected if name not in sdist_names]
    assert missing == []


def test_the_sdist_carries_no_build_output(sdist_names):
    stray = [name for name in sdist_names if NOT_SOURCE & set(name.split("/"))]
    assert stray == []


def test_the_wheel_carries_the_typing_marker():
    """PEP 561's marker is in the package folder, which a wheel carries whole."""
    with open(ROOT / "pyproject.toml", "rb") as config:
        wheel = tomllib.load(config)["tool"]["scikit-build"]["wheel"]
    assert wheel["packages"] == ["src/lodestar"]
    assert (ROOT / "src" / "lodestar" / "py.typed").is_file()


def test_the_version_is_written_once():
    """``lodestar.__version__`` is the only place the version is written."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["scikit-build"]["metadata"]["version"] == {
        "provider": "scikit_build_core.metadata.regex",
        "input": "src/lodestar/__init__.py",
    }
    init = (ROOT / "src" / "lodestar" / "__init__.py").read_text()
    assert re.findall(r"^__version__ = \"(.+)\"$", init, re.MULTILINE) == [lodestar.__version__]


def test_the_installed_metadata_and_the_command_line_agree():
    """``lodestar --version`` reads the installed metadata, which is built from ``__version__``."""
    try:
        installed = importlib.metadata.version("lodestar")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("lodestar is not installed, only importable")
    assert installed == lodestar.__version__
    shown = subprocess.run(
        [sys.executable, "-m", "lodestar", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert shown.stdout.strip() == f"lodestar {lodestar.__version__}"
