"""The ``lodestar`` program's start: JAX loaded on a thread while the files are read.

The program (:func:`lodestar.cli.console`) imports and configures JAX and
lodestar's kernels on a thread (:func:`start_loading_jax`) while the main
thread reads and joins the files, and the evaluation waits for it before its
first kernel (:func:`jax_loaded`). It also sets what only a program may set
for its whole process (:func:`configure_jax`), and keeps pyarrow from
importing pandas (:class:`WithoutPandas`). :func:`lodestar.cli.main` called
from Python loads nothing in the background.
"""

from __future__ import annotations

import gc
import os
import sys
import threading

from lodestar import _interrupt, _terminal, evaluation


def configure_jax() -> None:
    """What the program sets for its whole process (a library never does).

    Float64 for every computation, process-wide rather than by JAX's
    thread-local context manager; and JAX's persistent compilation cache in
    the user's cache directory, so that a second evaluation of a run of the
    same shape compiles nothing (``LODESTAR_COMPILATION_CACHE=0`` turns it
    off, ``LODESTAR_COMPILATION_CACHE=DIR`` moves it,
    ``LODESTAR_COMPILATION_CACHE_SIZE`` bounds it), in a directory that only
    the user can write (:func:`lodestar._executables.untrusted`).
    """
    import jax

    from lodestar import _executables

    jax.config.update("jax_enable_x64", True)
    if jax.config.values["jax_compilation_cache_dir"]:
        return
    # The store's and the cache's refusals (a directory others can write, a
    # kept file that failed its checks) are the program's notes.
    _executables.note = _terminal.note
    # A cache that cannot be written would make JAX warn at every compilation
    # (a read-only home, a path through a file): the program compiles without
    # it, and says so only where the user named the directory.
    used, untrusted = evaluation.open_compilation_cache(None, max_size=None)
    if used is None and not untrusted:
        setting = os.environ.get(evaluation.CACHE_VARIABLE, "")
        if setting not in ("", "0"):
            _terminal.note(
                f"LODESTAR_COMPILATION_CACHE={setting!r} cannot be written; compiling without it"
            )


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
# The largest threshold glibc accepts (32 MiB on 64-bit), and room for two
# such blocks before the heap's top is handed back.
_MMAP_THRESHOLD = 32 << 20
_TRIM_THRESHOLD = 64 << 20
_ALLOCATOR_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


def keep_scratch_memory() -> bool:
    """Let the C library keep a kernel's scratch memory from one batch to the next.

    XLA allocates each run's scratch memory afresh (under 32 MB a batch,
    decision 0040). glibc maps such a block from the system, and hands it
    back when it is freed, until its own estimate of a large block has
    grown; with programs in flight on several threads it often never does,
    and every batch then faults its scratch memory in again page by page: a
    fifth of a TREC-depth ``-m all_trec``. Fixing the thresholds serves
    blocks up to 32 MB from the heap and keeps them. A program's own
    setting, like :func:`configure_jax`: the library never calls it. Not on
    another C library, nor where the user set glibc's own variables.

    Returns:
      Whether the thresholds were set.
    """
    if any(v in os.environ for v in _ALLOCATOR_VARIABLES):
        return False
    libc = _glibc()
    if libc is None:
        return False
    import ctypes

    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    )


def release_free_memory() -> bool:
    """Hand the free memory of every heap back to the system (glibc's ``malloc_trim``).

    The loader thread calls it once it has loaded the kept kernels. XLA
    frees the temporaries of loading a kernel (34 MB of ``-m all_trec``'s)
    in that thread's own heap (glibc gives threads arenas of their own),
    where nothing the evaluation allocates later reuses them, and under
    :func:`keep_scratch_memory`'s thresholds glibc kept them to the end:
    at TREC depth, peak memory 468-496 MB where it is now 429-432 MB, in
    the same time. Scratch memory that a batch in flight has freed is handed
    back too, once, and the next batch faults it in again. A program's own
    setting: the library never calls it. Returns whether it was called (on
    glibc alone).
    """
    libc = _glibc()
    if libc is None:
        return False
    import ctypes

    trim = libc.malloc_trim
    trim.argtypes, trim.restype = (ctypes.c_size_t,), ctypes.c_int
    trim(0)
    return True


def _glibc():
    """The C library through ctypes where it is glibc (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - no C library to load
        return None
    # musl has a mallopt that does nothing, and no gnu_get_libc_version.
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "malloc_trim"):
        return None
    return libc


# Set while the program has paused the cyclic garbage collector (below).
_collection_paused = False


def pause_garbage_collection() -> None:
    """Pause Python's cyclic garbage collector while the program starts.

    Importing JAX and lodestar's kernels makes hundreds of thousands of
    objects, and the collector, which runs after every few hundred new
    ones, went through all of them again and again: 0.14-0.2 s of a
    TREC-depth evaluation, two full collections among them, for a few
    hundred objects of garbage. :func:`resume_garbage_collection` turns it
    back on, once JAX is loaded, with what start-up made set aside
    (:func:`gc.freeze`), so that later collections look only at what the
    evaluation makes. A program's own setting, like
    :func:`keep_scratch_memory`: the library never calls it.
    """
    global _collection_paused
    if gc.isenabled():
        gc.disable()
        _collection_paused = True


def resume_garbage_collection() -> None:
    """Undo :func:`pause_garbage_collection`, setting start-up's objects aside."""
    global _collection_paused
    if _collection_paused:
        _collection_paused = False
        gc.freeze()
        gc.enable()


# The program (console) loads JAX on a thread while it reads the files; main()
# called from Python does not.
_load_in_background = False
_loader: threading.Thread | None = None


def load_in_background() -> None:
    """Let :func:`start_loading_jax` start its thread: the program's own process only."""
    global _load_in_background
    _load_in_background = True


class WithoutPandas:
    """An import hook under which ``import pandas`` fails, for the program's own process.

    pyarrow imports pandas, where installed, the first time it builds an array
    (to recognise pandas objects): a second or more of start-up that the
    command line, which never uses pandas, would pay on every run. Told that
    pandas cannot be imported, pyarrow works without it.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("the lodestar program does not use pandas", name=name)
        return None


# Set by the loader thread once JAX and lodestar's kernels are imported; it
# may go on to load the kernels it expects (lodestar._executables.expect).
_jax_imported = threading.Event()


def _load_jax(command: str | None = None) -> None:
    """Import and configure JAX and lodestar's kernels, and warm up tracing.

    Run on a thread by :func:`start_loading_jax`, once the command line is
    parsed and before the files are read. From then until the evaluation's
    ``ready`` hook, the main thread imports no module that imports JAX: two
    threads importing one package can deadlock on its submodules' import
    locks, and CPython then fails one of the imports
    (``tests/test_cli_startup.py`` checks this for every command). Tracing
    and lowering a small function here makes JAX's one-time set-up (the
    backend, MLIR's context and dialects) before the main thread needs it.

    Then, with ``command`` (the measures and definitions), it loads the
    compiled kernels that the last run of the same command used
    (:func:`lodestar._executables.expect`), while the main thread still
    reads and joins; the evaluation waits only for what it asks for. Last,
    it hands back what it freed (:func:`release_free_memory`).
    """
    load_expected = None
    try:
        configure_jax()
        import jax
        import numpy as np
        from jax import export  # noqa: F401 - imported here, once

        from lodestar import _executables
        from lodestar.metrics import _kernel  # noqa: F401

        jax.jit(lambda x: x + 1).trace(np.zeros(1)).lower()
        if command is not None:
            load_expected = _executables.expect(command)
    except Exception:  # noqa: BLE001 - the main thread imports again and reports it
        pass
    finally:
        _jax_imported.set()
    if load_expected is not None:
        load_expected()
    release_free_memory()


def start_loading_jax(command: str | None = None) -> None:
    """Start :func:`_load_jax` on its thread, in the program (console) only."""
    global _loader
    if _load_in_background and _loader is None:
        _loader = threading.Thread(
            target=_load_jax, args=(command,), name="lodestar-load-jax", daemon=True
        )
        _loader.start()


def jax_loaded(progress: _terminal.Progress, stage: str):
    """A ``ready`` hook for the evaluation: wait for the loader thread, then go on with ``stage``.

    The files are read, joined and the first batch padded while JAX loads;
    the evaluation waits here before its first kernel.
    """

    def ready() -> None:
        if _loader is not None and not _jax_imported.is_set():
            progress.begin("loading JAX")
            # A loader that died without setting the event is not waited for.
            while not _jax_imported.wait(0.05) and _loader.is_alive():
                pass
            progress.begin(stage)
        resume_garbage_collection()
        _interrupt.raise_if_interrupted()

    return ready
