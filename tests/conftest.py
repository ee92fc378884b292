"""Test configuration: float64 on, and hypothesis profiles.

The exact paths are checked in float64 against scikit-learn, so the suite runs
with ``jax_enable_x64``; float32 behaviour is tested with float32 arrays (and
with x64 switched off where the default dtype matters).
"""

import os
import sys
import threading
from pathlib import Path

import jax
from hypothesis import HealthCheck, settings

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The benchmark scripts and their helpers, which tests run and import.
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import children  # noqa: E402  (tests/children.py)

from lodestar import _native  # noqa: E402

# multidevice_check.py is a script for a subprocess: it sets XLA_FLAGS for 8 CPU
# devices at import. Collected for doctests, it would set them in this process
# too, and a backend started after that would have 8 devices, which turns the
# host-sort paths off for the rest of the session.
collect_ignore = ["multidevice_check.py"]

settings.register_profile(
    "default",
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


import pytest  # noqa: E402

# Each XLA:CPU executable holds memory mappings of its own (one
# eleven_point_average executable holds about 250), and the kernel refuses a
# process more than vm.max_map_count of them (65,530 by default): past that,
# compiling the next executable aborts the interpreter. The property tests
# compile a new executable for almost every example, so a module can reach the
# limit on its own; the caches are dropped whenever a test leaves the process
# within reach of it.
_MAPS = Path("/proc/self/maps")
_MAPPINGS_BEFORE_CLEARING = 20_000


def _mapping_count():
    """This process's memory mappings, or None where the system does not say."""
    try:
        with _MAPS.open("rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return None


@pytest.fixture(autouse=True)
def _release_compiled_executables():
    """Drop JAX's compilation caches before the process runs out of mappings."""
    yield
    count = _mapping_count()
    if count is not None and count > _MAPPINGS_BEFORE_CLEARING:
        jax.clear_caches()


@pytest.fixture(params=["native", "xla"])
def route(request, monkeypatch):
    """Runs a test with lodestar's compiled CPU kernels, then with XLA's sort instead.

    The route is chosen at trace time (``_native.applies``), so the switch to
    XLA's sort, and back, drops JAX's traces: a program traced on one route
    must not be reused on the other.
    """
    if request.param == "xla":
        jax.clear_caches()
        monkeypatch.setattr(_native, "applies", lambda: False)
    yield request.param
    if request.param == "xla":
        jax.clear_caches()


@pytest.fixture
def pipe(tmp_path):
    """``pipe(data)``: a named pipe that a thread fills with ``data`` once it is opened.

    What a shell passes for ``<(zcat run.gz)``: a file that cannot seek and has
    no size. The writers are joined when the test ends.
    """
    writers = []

    def make(data: bytes) -> Path:
        path = tmp_path / f"pipe{len(writers)}"
        os.mkfifo(path)
        writer = threading.Thread(target=path.write_bytes, args=(data,))
        writer.start()
        writers.append(writer)
        return path

    yield make
    for writer in writers:
        writer.join(timeout=30)


_TIMES = os.environ.get("LODESTAR_TEST_TIMES")


def pytest_runtest_logreport(report):
    """With LODESTAR_TEST_TIMES=FILE, append each test phase's duration to FILE as it ends.

    One line per phase: ``seconds<TAB>phase<TAB>test id``, the phase being
    ``setup`` (where module fixtures are paid), ``call`` or ``teardown``.
    """
    # Under pytest-xdist the controller receives every worker's reports: only
    # it writes, so that each test is logged once.
    if not _TIMES or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(_TIMES, "a") as out:
        out.write(f"{report.duration:.3f}\t{report.when}\t{report.nodeid}\n")


# JAX's persistent compilation cache (tests/children.py, decision 0022).
children.use_the_suite_compilation_cache()

# The default tier's XLA:CPU compiles without LLVM's optimisations and with
# the loop emitters in place of the MLIR fusion emitters: 60% less compile
# time on its programs, the same IEEE arithmetic (decision 0034). The slow
# tier, which CI runs after it, compiles as users' processes do.
CHEAP_COMPILATION = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
DEFAULT_TIER = "not slow"
# Set to 1, any tier compiles cheaply: CI runs the slow tier's sweeps of
# values over every measure this way (decision 0034, revision of 2026-12-07).
CHEAP_VARIABLE = "LODESTAR_TEST_CHEAP_COMPILATION"


def compiles_cheaply(markexpr: str) -> bool:
    """Whether a session with this marker expression compiles cheaply."""
    return markexpr == DEFAULT_TIER or os.environ.get(CHEAP_VARIABLE) == "1"


def pytest_configure(config):
    """Compile cheaply in the default tier (or with ``LODESTAR_TEST_CHEAP_COMPILATION=1``).

    This runs before any test starts XLA's backend.

    XLA reads ``XLA_FLAGS`` once, when the backend starts; the child
    processes the tests start inherit them, and JAX's cache keys its entries
    by them, so the two tiers never share a program compiled either way. A
    flag the user set already is left as it is.
    """
    if not compiles_cheaply(config.option.markexpr):
        return
    flags = os.environ.get("XLA_FLAGS", "").split()
    named = {flag.split("=")[0] for flag in flags}
    flags += [flag for flag in CHEAP_COMPILATION if flag.split("=")[0] not in named]
    os.environ["XLA_FLAGS"] = " ".join(flags)
