"""Kernels kept on disk whole (lodestar._executables, decision 0038).

A second ``lodestar evaluate`` of a run of the same shape loads the compiled
kernel without tracing or lowering it, and prints what the first printed. A
kept file that is damaged, or that JAX's own cache would have handed back, must
never change an answer.
"""

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lodestar import _executables, _registry

SRC = str(Path(__file__).resolve().parents[1] / "src")
DATA = Path(SRC) / "lodestar" / "data"
ARGUMENTS = ["evaluate", str(DATA / "example.qrels"), str(DATA / "example.run")]
ALL_TREC = [*ARGUMENTS, "-m", "all_trec", "--trec-eval"]


def _lodestar(arguments, cache):
    """Run the program with ``cache`` as its cache: ``(stdout, the kernels it traced)``."""
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "LODESTAR_COMPILATION_CACHE": str(cache),
        "JAX_LOG_COMPILES": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "lodestar", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    traced = len(re.findall(r"Finished tracing.* evaluate_formulas ", done.stderr))
    return done.stdout, traced


def _kept(cache):
    directory = Path(cache) / _executables.SUBDIRECTORY
    return sorted(p for p in directory.iterdir() if not p.name.startswith(_executables._RECENT))


# Runs the program, saying on stderr which thread loads each kept kernel. Each
# line is one write: print's separate writes of its parts interleave when both
# threads load at once ("LOADLOAD ..."), and a line would be lost.
_WATCHED = """
import sys, threading
from lodestar import _executables, cli
load = _executables._load
def watched(path):
    line = f"LOAD {threading.current_thread().name} {path.rsplit('/', 1)[-1]}\\n"
    sys.stderr.write(line)
    return load(path)
_executables._load = watched
sys.argv = ["lodestar", *sys.argv[1:]]
cli.console()
"""


def _watched(arguments, cache):
    """Run the program: ``(stdout, [(thread, file name) of every kernel it loads])``."""
    env = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _WATCHED, *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    loads = [
        tuple(line.split()[1:]) for line in done.stderr.splitlines() if line.startswith("LOAD ")
    ]
    assert all(len(load) == 2 for load in loads), done.stderr
    return done.stdout, loads


def test_the_loader_thread_loads_the_kernels_the_last_run_used(tmp_path):
    # While the main thread reads and joins, the loader thread loads the
    # kernels that the last run of the same measures used (decision 0040).
    cache = tmp_path / "cache"
    first, _ = _watched(ALL_TREC, cache)
    (kept,) = _kept(cache)
    second, loads = _watched(ALL_TREC, cache)
    assert second == first
    assert loads == [("lodestar-load-jax", kept.name)]


def test_a_wrong_guess_is_loaded_for_nothing_and_replaced(tmp_path):
    # Another run of the same measures has other shapes: the guess is loaded
    # and unused, the run's own kernel compiled and kept, and guessed next.
    cache = tmp_path / "cache"
    _watched(ALL_TREC, cache)
    (small,) = _kept(cache)
    rows = [f"q{q} Q0 d{d} 0 {d % 7} r" for q in range(3) for d in range(300)]
    run = tmp_path / "run"
    run.write_text("\n".join(rows) + "\n")
    other = ["evaluate", str(DATA / "example.qrels"), str(run), "-m", "all_trec", "--trec-eval"]
    expected, _ = _lodestar(other, tmp_path / "fresh")
    out, loads = _watched(other, cache)
    assert out == expected
    (large,) = set(_kept(cache)) - {small}
    assert ("lodestar-load-jax", small.name) in loads
    assert ("MainThread", large.name) in loads
    _, loads = _watched(other, cache)
    assert loads == [("lodestar-load-jax", large.name)]


@pytest.mark.parametrize(
    "text",
    [b"\xff not a list\n", b"../../etc/passwd\n" + b"Z" * 64 + b"\n" + b"0" * 64 + b"\n", b""],
    ids=["bytes", "names", "empty"],
)
def test_a_damaged_guess_is_ignored_and_rewritten(tmp_path, text):
    # Only names of kept kernels are ever loaded, and a guess that names
    # none leaves the main thread to load its kernel, as with no guess.
    cache = tmp_path / "cache"
    expected, _ = _watched(ALL_TREC, cache)
    (kept,) = _kept(cache)
    (recent,) = (cache / _executables.SUBDIRECTORY).glob(_executables._RECENT + "*")
    recent.write_bytes(text)
    out, loads = _watched(ALL_TREC, cache)
    assert out == expected
    assert ("MainThread", kept.name) in loads
    assert all(name in (kept.name, "0" * 64) for _, name in loads)
    assert _watched(ALL_TREC, cache)[1] == [("lodestar-load-jax", kept.name)]


def test_a_second_run_loads_the_kernel_without_tracing_it(tmp_path):
    cache = tmp_path / "cache"
    first, traced = _lodestar(ALL_TREC, cache)
    assert traced >= 1
    assert len(_kept(cache)) == 1
    second, traced = _lodestar(ALL_TREC, cache)
    assert traced == 0
    assert second == first
    # Other measures are another kernel, kept beside it.
    _, traced = _lodestar([*ARGUMENTS, "-m", "ndcg@10"], cache)
    assert traced >= 1
    assert len(_kept(cache)) == 2


def test_a_kernel_that_jax_cache_handed_back_is_compiled_afresh_before_it_is_kept(tmp_path):
    # An executable loaded from JAX's persistent cache, serialized again,
    # loads in a new process and then fails when run ("Function
    # multiply_divide_fusion not found"). Here JAX's cache holds the kernel
    # (a first run filled both) and the kept file is gone, as after an update
    # that changed lodestar's source but not the kernel.
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    for path in _kept(cache):
        path.unlink()
    _lodestar(ALL_TREC, cache)  # compiles and keeps it again
    out, traced = _lodestar(ALL_TREC, cache)  # runs the kept file
    assert traced == 0
    assert out == expected


def test_a_damaged_file_is_compiled_again_and_replaced(tmp_path):
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    (kept,) = _kept(cache)
    kept.write_bytes(b"not a kernel")
    out, traced = _lodestar(ALL_TREC, cache)
    assert traced >= 1
    assert out == expected
    assert kept.read_bytes() != b"not a kernel"
    assert _lodestar(ALL_TREC, cache) == (expected, 0)


def _formula(key):
    return _registry.MEASURES[key].function.formula


def test_static_arguments_are_described_by_what_they_are():
    # The description names the same value the same way in every process
    # (no addresses), and tells apart values that compile differently.
    ndcg = _formula("ndcg")
    describe = _executables._describe
    assert describe(ndcg) == describe(_formula("ndcg"))
    assert " at 0x" not in describe(ndcg)
    assert describe(ndcg) != describe(_formula("dcg"))
    assert describe((1, "a")) != describe(("1", "a"))
    assert describe(1) != describe(1.0) != describe(True)

    def scaled(factor):
        return lambda x: x * factor

    assert describe(scaled(2)) != describe(scaled(3))
    assert describe(functools.partial(max, 1)) != describe(functools.partial(max, 2))
    with pytest.raises(_executables._Unstable):
        describe(object())


def test_the_file_name_follows_the_source_and_the_types(monkeypatch):
    name = functools.partial(_executables._file_name, "kernel", {"rank_k": None}, "*")
    first = name(("float64[2,3]",))
    assert first == name(("float64[2,3]",))
    assert first != name(("float32[2,3]",))
    _executables._source_digest.cache_clear()
    monkeypatch.setattr(_executables, "_source_digest", lambda: "another lodestar")
    assert name(("float64[2,3]",)) != first


def test_nothing_is_kept_unless_asked(tmp_path, monkeypatch):
    # Off by default: a library writes nothing unasked. The public metrics'
    # kernels rank with a host callback and are never kept.
    import jax.numpy as jnp

    from lodestar import metrics

    monkeypatch.setattr(_executables, "_directory", None)
    assert float(metrics.ndcg(jnp.array([1.0, 2.0]), jnp.array([0.0, 1.0]))) == 1.0
    _executables.keep_in(tmp_path)
    try:
        assert float(metrics.ndcg(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 2.0]))) == 1.0
    finally:
        _executables.keep_in(None)
    assert not (tmp_path / _executables.SUBDIRECTORY).exists()


@pytest.mark.slow
def test_every_trec_eval_measure_fits_one_batch_in_memory_the_allocator_keeps(tmp_path):
    # A kernel's scratch memory is one allocation per batch. Past 32 MiB, the
    # C library's largest threshold, it is mapped from the system and handed
    # back after every batch, and each batch then faults it in again page by
    # page: at 2**20 items per batch `-m all_trec` took 620 MB per batch and a
    # third of its time at TREC depth (decision 0040).
    import numpy as np

    rng = np.random.default_rng(0)
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    with open(run, "w") as run_file, open(qrels, "w") as qrels_file:
        for query in range(40):
            scores = np.round(rng.random(1000), 2)
            for doc, score in enumerate(scores):
                run_file.write(f"{query} Q0 d{doc} 0 {score} r\n")
            for doc in rng.choice(1000, 100, replace=False):
                qrels_file.write(f"{query} 0 d{doc} {rng.integers(0, 4)}\n")
    cache = tmp_path / "cache"
    for ties in ([], ["--ignore-ties"]):
        _lodestar(["evaluate", str(qrels), str(run), "-m", "all_trec", "--trec-eval", *ties], cache)
    kept = _kept(cache)
    assert len(kept) == 2
    import jax

    with jax.enable_x64(True):
        for path in kept:
            compiled = _executables._load(str(path))
            assert compiled is not None
            assert compiled.memory_analysis().temp_size_in_bytes < 32 * 2**20
