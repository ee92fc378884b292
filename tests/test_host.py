"""Host callbacks from many Python threads at once finish (decision 0026).

tests/host_threads_check.py runs, in a fresh process, a kernel whose host
callback takes its argument as passed in, from more threads than the CPU
client's pool has. Unwrapped, that process hung in every run on two cores;
wrapped by ``_host.one_program_at_a_time`` it must finish with the right
values. tests/test_contexts.py covers every measure from four threads, in
the slow tier.
"""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "host_threads_check.py"


def test_kernels_called_from_many_threads_at_once_finish():
    # Twice as many threads as cores, so that the threads outnumber the pool.
    threads = max(4, 2 * len(os.sched_getaffinity(0)))
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1] / "src")}
    env["LODESTAR_CHECK_DEADLINE"] = "120"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(threads), "40"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0 and result.stdout.strip() == "OK", (
        result.stdout[-2000:] + result.stderr[-6000:]
    )
