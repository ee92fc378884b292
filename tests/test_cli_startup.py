"""The program's start-up: JAX loads on a thread, and no import races it.

``lodestar evaluate`` and ``lodestar compare`` import JAX and the kernels on a
thread while the main thread reads and joins the files (decision 0027). Two
threads importing one package can deadlock on its submodules' import locks,
and CPython then fails one of the imports, so from the moment the loader
starts until the evaluation's ``ready`` hook the main thread must import no
JAX module and nothing the loader imports. These tests slow the loader's
``import jax`` down so that the main thread runs well into that window on every
run, record every import of ``jax*`` and ``lodestar*`` with the importing
thread, and check the rule for each command: a race that would show once in a
hundred runs fails here every time.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lodestar.cli import main

DATA = Path(__file__).resolve().parents[1] / "src" / "lodestar" / "data"
LOADER = "lodestar-load-jax"

RECORDER = f'''
import os, sys, threading, time

LOG = os.environ["LODESTAR_TEST_IMPORT_LOG"]


class Recorder:
    """Logs each import of jax* or lodestar* with its thread; holds the loader at jax."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in ("jax", "jaxlib", "lodestar"):
            return None
        thread = threading.current_thread().name
        loader = [t for t in threading.enumerate() if t.name == "{LOADER}"]
        alive = int(bool(loader) and loader[0].is_alive())
        with open(LOG, "a") as log:
            log.write(f"{{thread}}\\t{{name}}\\t{{alive}}\\n")
        if name == "jax" and thread == "{LOADER}":
            time.sleep(float(os.environ["LODESTAR_TEST_JAX_DELAY"]))
        return None


sys.meta_path.insert(0, Recorder())
'''


def _program(tmp_path, hook, arguments, **variables):
    """``python -m lodestar ARGUMENTS`` with ``hook`` as its sitecustomize and a cache of its own."""
    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(hook)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]),
        "LODESTAR_COMPILATION_CACHE": str(tmp_path / "cache"),
        **variables,
    }
    return subprocess.run(
        [sys.executable, "-m", "lodestar", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _run(tmp_path, arguments, *, delay):
    log = tmp_path / "imports.log"
    log.unlink(missing_ok=True)
    completed = _program(
        tmp_path,
        RECORDER,
        arguments,
        LODESTAR_TEST_IMPORT_LOG=str(log),
        LODESTAR_TEST_JAX_DELAY=str(delay),
    )
    records = [line.split("\t") for line in log.read_text().splitlines()]
    return completed, records


EXAMPLE = [str(DATA / "example.qrels"), str(DATA / "example.run")]
SECOND_RUN = "second.run"  # a copy of the example run, compared with it
COMMANDS = {
    "defaults": ["evaluate", *EXAMPLE],
    "trec_eval all_trec": ["evaluate", *EXAMPLE, "--trec-eval", "-m", "all_trec"],
    "gains per level, tie range": ["evaluate", *EXAMPLE, "-m", "ndcg.1=3,2=9", "--tie-range"],
    "ignore ties, relstring": ["evaluate", *EXAMPLE, "--ignore-ties", "-mmap", "-mrelstring"],
    "compare": ["compare", *EXAMPLE, SECOND_RUN],
}


SLOW = {"trec_eval all_trec", "ignore ties, relstring"}
GAIN_TABLES = {"gains per level, tie range"}


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=[pytest.mark.slow] if c in SLOW else []) for c in COMMANDS]
)
def test_the_main_thread_imports_nothing_the_loader_is_importing(tmp_path, capsys, command):
    second = tmp_path / SECOND_RUN
    second.write_bytes((DATA / "example.run").read_bytes())
    arguments = [str(second) if a == SECOND_RUN else a for a in COMMANDS[command]]
    assert main(arguments) == 0
    expected = capsys.readouterr().out
    slowed, records = _run(tmp_path, [*arguments, "--progress", "always"], delay=0.6)
    assert slowed.returncode == 0, slowed.stderr
    assert slowed.stdout == expected

    loaded = {name for thread, name, _ in records if thread == LOADER}
    assert "lodestar.metrics._kernel" in loaded, "the loader thread did not import the kernels"
    # JAX comes in on the loader, not on the main thread before the loader
    # starts: a module-level import of _ranking in the TREC layer did so, and
    # the 0.4 s import no longer overlapped the reading. Per-level gains are
    # parsed into a GainTable (which imports JAX) before the loader starts.
    first_jax = next(thread for thread, name, _ in records if name == "jax")
    expected_first = "MainThread" if command in GAIN_TABLES else LOADER
    assert first_jax == expected_first, f"JAX was first imported on {first_jax}"
    raced = [
        name
        for thread, name, alive in records
        if thread == "MainThread"
        and alive == "1"
        and (name.split(".")[0] in ("jax", "jaxlib") or name in loaded)
    ]
    assert not raced, f"imported on the main thread while the loader ran: {raced}"
    # The main thread read and joined the files while the loader was held,
    # and then waited for it (the progress line's "loading JAX" stage).
    assert "loading JAX" in slowed.stderr


def test_a_profiler_of_the_program_gets_its_results(tmp_path):
    # The program ends with os._exit, except under a profiler or a coverage
    # tracer, which write their results as the interpreter ends.
    profile = tmp_path / "evaluate.prof"
    completed = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "lodestar"]
        + ["evaluate", "--example", "-m", "P@2"],
        capture_output=True,
        text=True,
        env={**os.environ, "LODESTAR_COMPILATION_CACHE": str(tmp_path / "cache")},
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[-1].split("\t") == ["P@2".ljust(22), "all", "0.4792"]
    assert profile.stat().st_size > 0


# `python -m lodestar ARGS...` with transparent huge pages off for the
# process (PR_SET_THP_DISABLE, kept across exec), so that each page fault
# maps one 4 KB page.
WITHOUT_HUGE_PAGES = """
import ctypes, os, sys
if ctypes.CDLL(None).prctl(41, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_THP_DISABLE) failed")
os.execv(sys.executable, [sys.executable, "-m", "lodestar", *sys.argv[1:]])
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_the_program_keeps_its_kernel_scratch_memory_from_batch_to_batch(tmp_path):
    # Every batch's scratch memory (18 MB for -m all_trec at 32 x 1,024) was
    # mapped from the system and faulted in again page by page, a fifth of a
    # TREC-depth run (decision 0040). With the allocator's thresholds fixed,
    # 45 more batches fault in little more than their data.
    #
    # The program runs with transparent huge pages off (a prctl that exec
    # keeps): where the kernel can give a huge page, one fault maps 2 MB,
    # and where memory is fragmented (other tests running beside this one)
    # it maps 4 KB, so the count of faults measured the machine's memory as
    # much as the program's (CI once counted 61,600 more faults where this
    # machine counts 9,000-15,000). With 4 KB pages only, 45 more batches
    # fault about 40,000 pages in; with an allocator that hands every
    # batch's scratch back (MALLOC_TRIM_THRESHOLD_=131072), about 257,000.
    import resource

    import bench_cli

    from lodestar import _executables, _startup

    src = str(DATA.parents[1])
    env = {**os.environ, "PYTHONPATH": src, "LODESTAR_COMPILATION_CACHE": str(tmp_path / "c")}
    for name in _startup._ALLOCATOR_VARIABLES:
        env.pop(name, None)

    def faults(queries):
        # The benchmark's TREC-depth files: with them the faults were seen.
        directory = tmp_path / str(queries)
        directory.mkdir()
        qrels, run = bench_cli.write_files(str(directory), queries, 1000, 100)
        command = [sys.executable, "-c", WITHOUT_HUGE_PAGES, "evaluate", "-m", "all_trec"]
        command += ["--trec-eval", "--ignore-ties", qrels, run]
        subprocess.run(command, env=env, check=True, capture_output=True)  # compiles
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        subprocess.run(command, env=env, check=True, capture_output=True)
        return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before

    few, many = faults(64), faults(1504)
    import jax

    with jax.enable_x64(True):
        kernels = (tmp_path / "c" / _executables.SUBDIRECTORY).iterdir()
        (kept,) = [p for p in kernels if not p.name.startswith(_executables._RECENT)]
        loaded = _executables._load(str(kept))
        assert isinstance(loaded, _executables._Kept), loaded
        scratch = loaded.run.memory_analysis().temp_size_in_bytes
    more_batches = (1504 - 64) // 32
    # Faulting every batch's scratch afresh would add more_batches * pages.
    assert many - few < more_batches * (scratch // 4096)


# Memory that a thread allocated and freed, before and after the program's
# release_free_memory, under the program's allocator thresholds: glibc keeps
# it in the thread's own arena until it is handed back.
FREED_BY_A_THREAD = """
import threading
import numpy as np
from lodestar import _startup

def resident_anonymous_kb():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("RssAnon:"))
    return int(line.split()[1])

assert _startup.keep_scratch_memory()

def allocate_and_free():
    blocks = [np.ones(1 << 17) for _ in range(40)]  # 40 blocks of 1 MB, written
    del blocks

thread = threading.Thread(target=allocate_and_free)
thread.start()
thread.join()
kept = resident_anonymous_kb()
assert _startup.release_free_memory()
print(kept - resident_anonymous_kb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_memory_a_thread_freed_goes_back_to_the_system():
    # XLA frees the temporaries of loading a kept kernel (34 MB for -m
    # all_trec) in the loader thread's arena, where glibc kept them to the
    # end under the program's thresholds: 13% of a TREC-depth run's peak.
    from lodestar import _startup

    env = {k: v for k, v in os.environ.items() if k not in _startup._ALLOCATOR_VARIABLES}
    completed = subprocess.run(
        [sys.executable, "-c", FREED_BY_A_THREAD], capture_output=True, text=True, env=env
    )
    assert completed.returncode == 0, completed.stderr
    assert int(completed.stdout) > 30 * 1024  # of the 40 MB freed, in kB


# Records each call of release_free_memory: its thread, and whether the
# kernels the loader expected were loaded by then (how many were expected).
RELEASE_CALLS = """
import os, sys, threading

def profile(frame, event, argument):
    if event == "call" and frame.f_code.co_name == "release_free_memory":
        executables = sys.modules["lodestar._executables"]
        expected = list(executables._guessed)
        loaded = all(future.done() for future in executables._expected.values())
        with open(os.environ["LODESTAR_TEST_RELEASE_LOG"], "a") as log:
            log.write(f"{threading.current_thread().name} {len(expected)} {loaded}\\n")

threading.setprofile(profile)
"""


def test_the_loader_hands_back_what_it_freed_once_the_kept_kernels_are_loaded(tmp_path):
    log = tmp_path / "release"
    arguments = ["evaluate", *EXAMPLE, "-m", "all_trec", "--trec-eval", "--ignore-ties"]
    for _ in range(2):  # the first run keeps its kernels, the second loads them
        log.unlink(missing_ok=True)
        completed = _program(tmp_path, RELEASE_CALLS, arguments, LODESTAR_TEST_RELEASE_LOG=str(log))
        assert completed.returncode == 0, completed.stderr
    (call,) = log.read_text().splitlines()
    thread, expected, loaded = call.split()
    assert thread == LOADER
    assert int(expected) > 0
    assert loaded == "True"


@pytest.mark.parametrize("variable", ["MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"])
def test_an_allocator_the_user_tuned_is_left_as_it_is(monkeypatch, variable):
    from lodestar import _startup

    monkeypatch.setenv(variable, "glibc.malloc.trim_threshold=1")
    assert _startup.keep_scratch_memory() is False


# What the program's process settings leave in the process, read in it. The
# hook stops the program when NumPy is first imported, and reports whether
# OpenBLAS would start threads of its own by then.
BLAS_AT_NUMPY_IMPORT = """
import os, sys

class AtNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            print(os.environ.get("OPENBLAS_NUM_THREADS"), flush=True)
            os._exit(0)

sys.meta_path.insert(0, AtNumpy())
sys.argv = ["lodestar", "evaluate", "--example"]
from lodestar.__main__ import main
main()
"""


def _without_blas_settings():
    from lodestar.__main__ import BLAS_THREAD_VARIABLES

    return {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}


def test_the_program_lets_openblas_start_no_threads_before_numpy_loads():
    # NumPy's OpenBLAS started a thread per core that spun for a tenth of a
    # second: 0.2-0.6 s of CPU on a 2-core machine, where the program is
    # CPU-bound. The variable must be set before NumPy is imported.
    completed = subprocess.run(
        [sys.executable, "-c", BLAS_AT_NUMPY_IMPORT],
        capture_output=True,
        text=True,
        env=_without_blas_settings(),
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "1"


def _numpy_blas() -> str:
    import numpy as np

    return str(np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("name", ""))


@pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or (os.cpu_count() or 1) < 2
    or "openblas" not in _numpy_blas(),
    reason="OpenBLAS's threads, counted in /proc",
)
def test_one_blas_thread_is_what_openblas_honours():
    # The setting is worth its place only if OpenBLAS reads it: without it,
    # importing NumPy starts threads.
    count = "import os, numpy; print(len(os.listdir('/proc/self/task')))"
    set_first = "from lodestar.__main__ import one_blas_thread; one_blas_thread(); " + count

    def threads(code):
        env = _without_blas_settings()
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env)
        return int(result.stdout)

    assert threads(set_first) == 1
    assert threads(count) > 1


@pytest.mark.parametrize(
    "variable", ["OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"]
)
def test_a_blas_thread_count_the_user_chose_is_left_as_it_is(monkeypatch, variable):
    from lodestar import __main__ as program

    environment = {variable: "4"}
    monkeypatch.setattr(os, "environ", environment)
    assert program.one_blas_thread() is False
    assert environment == {variable: "4"}


# Records whether the cyclic collector is on when the loader thread imports
# lodestar's kernels (after JAX, before the evaluation can start), and, as the
# program ends, whether it is on again with start-up's objects set aside.
COLLECTOR_STATES = """
import gc, os, sys

states = []

class AtKernels:
    def find_spec(self, name, path=None, target=None):
        if name == "lodestar.metrics._kernel" and not states:
            states.append(gc.isenabled())
        return None

sys.meta_path.insert(0, AtKernels())
exit_process = os._exit

def reporting_exit(status):
    with open(os.environ["LODESTAR_TEST_GC_LOG"], "w") as log:
        log.write(f"{states} {gc.isenabled()} {gc.get_freeze_count() > 0}")
    exit_process(status)

os._exit = reporting_exit
"""


def test_the_program_starts_without_collecting_garbage_and_collects_it_while_evaluating(
    tmp_path,
):
    # Importing JAX beside the reading made two full collections and a few
    # hundred young ones, 0.14-0.2 s of a TREC-depth evaluation, for a few
    # hundred objects of garbage. The collector is paused until JAX is
    # loaded, then resumed with start-up's objects set aside.
    log = tmp_path / "collector"
    arguments = ["evaluate", *EXAMPLE, "-m", "P@2"]
    completed = _program(tmp_path, COLLECTOR_STATES, arguments, LODESTAR_TEST_GC_LOG=str(log))
    assert completed.returncode == 0, completed.stderr
    while_loading, enabled_at_end, frozen = log.read_text().rsplit(" ", 2)
    assert (while_loading, enabled_at_end, frozen) == ("[False]", "True", "True")


def test_main_called_from_python_leaves_the_garbage_collector_alone(capsys):
    import gc

    assert gc.isenabled()
    assert main(["evaluate", *EXAMPLE, "-m", "P@2"]) == 0
    assert gc.isenabled()
