"""What the test suite shares with the child processes it starts.

The compilation cache, children that Ctrl-C (SIGINT) reaches, and the
program started as one.
"""

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

# JAX's persistent compilation cache, shared by the workers of a run, by the
# check scripts they start (multidevice_check.py, contexts_check.py), and
# kept between runs (decision 0022): most of the suite's time is compilation,
# and a second run, or the slow tier after the default one, loads what the
# first compiled. LODESTAR_TEST_JAX_CACHE=DIR moves it, =0 turns it off.
CACHE_VARIABLE = "LODESTAR_TEST_JAX_CACHE"
DEFAULT_CACHE = str(Path(__file__).resolve().parents[1] / ".cache" / "jax-tests")


def use_the_suite_compilation_cache() -> None:
    """Point this process's JAX at the suite's cache, and its children too."""
    import jax

    directory = os.environ.setdefault(CACHE_VARIABLE, DEFAULT_CACHE)
    if directory != "0":
        jax.config.update("jax_compilation_cache_dir", directory)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


@contextlib.contextmanager
def interruptible_children():
    """Start children that Ctrl-C reaches, even when this process ignores SIGINT.

    A shell starts a background job (``pytest &``, ``nohup``) with SIGINT
    ignored, and a child inherits an ignored signal: the program under test
    would then never see the Ctrl-C these tests send. Children started inside
    this context get SIGINT's default instead (a handled signal is reset at
    exec; a ``preexec_fn`` would fork a threaded process).
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


SRC = str(Path(__file__).resolve().parents[1] / "src")


def program(*args, env=None, **kwargs) -> subprocess.Popen:
    """``python -m lodestar ARGS`` as a child that Ctrl-C reaches, stderr piped.

    It imports this checkout's lodestar and keeps no compilation cache, so
    that it neither reads nor fills the user's; ``env`` adds to the
    environment, and ``kwargs`` go to :class:`subprocess.Popen` (stdout is
    piped unless given).
    """
    environment = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": "0"}
    with interruptible_children():
        return subprocess.Popen(
            [sys.executable, "-m", "lodestar", *args],
            env={**environment, **(env or {})},
            stdout=kwargs.pop("stdout", subprocess.PIPE),
            stderr=subprocess.PIPE,
            **kwargs,
        )
