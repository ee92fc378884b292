"""Metrics, losses and accumulators on 8 CPU devices equal one device's results.

The checks run in a subprocess (tests/multidevice_check.py), because
``--xla_force_host_platform_device_count`` must be set before JAX starts and
this process has started it already.

What is compared, and how strictly:
- Per-list metric and loss values under ``jit`` with ``NamedSharding`` inputs
  (automatic and explicit mesh axes) and inside ``shard_map`` are **bitwise**
  equal to one device evaluating each device's block of lists, except ERR
  inside ``shard_map``: its per-block recursion divides inside a loop that XLA
  fuses differently in that program, up to 6 ulp at k = 10 (rtol 4e-15);
  interpolated precision under partitioned ``jit``, whose area loop is fused
  otherwise too (1 ulp seen, rtol 1e-15); and LambdaLoss under partitioned
  ``jit``: its pair sums take their column
  blocks' width from the whole batch (decision 0029), so a long list is
  summed in other blocks than on one device's share (rtol 1e-15). They are
  not always bitwise equal to one device evaluating the whole batch at once:
  XLA:CPU orders a row's reduction according to the batch shape, which moves
  a float64 value by an ulp or so (2.8e-14 on a DCG of about 40).
- The lengths reach every engine path: pairwise counting, the NDCG ideal's
  argsort, the long-list sort (the compiled kernels on one device and inside
  ``shard_map``, XLA's sort in partitioned ``jit``) and top-k. Inside
  ``shard_map`` the expected values come from a one-device ``shard_map``,
  since a kernel sums a row in another order than XLA's route. Every function
  meets pairwise counting; one measure of every metrics module, NDCG and the
  losses meet top-k; the default tier's measures and the losses meet all
  four. The check runs in two processes, "pairwise" and "engine", which the
  suite's workers share.
- Accumulators: the mean after ``merge_across`` inside ``shard_map``, and after
  ``update`` under sharded ``jit``, equals one device's to rtol 1e-15 (float64);
  counts are exact. Not bitwise: each device's per-list values come from a
  different XLA program than one device's, and may differ in the last bit.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "multidevice_check.py"

# Every registry measure on eight devices compiles several hundred programs.
pytestmark = pytest.mark.slow


PARTS = ("pairwise", "engine")


@pytest.fixture(scope="module")
def lines():
    """Every line each part of the check prints, by part (run once per worker)."""
    return {}


def run_part(lines, part):
    if part not in lines:
        # LLVM's optimisations off (decision 0034): the check compiles several
        # hundred programs, each compared with another compiled the same way,
        # and took 3.7 of CI's 30 minutes with them on. XLA's own passes, its
        # fusion emitters and so the programs' arithmetic are the users'.
        flags = [os.environ.get("XLA_FLAGS", ""), "--xla_backend_optimization_level=0"]
        env = {
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
            "XLA_FLAGS": " ".join(flag for flag in flags if flag),
        }
        result = subprocess.run(
            [sys.executable, str(SCRIPT), part],
            capture_output=True,
            text=True,
            timeout=2400,
            env=env,
        )
        printed = result.stdout.splitlines()
        assert printed and printed[-1].startswith("OK "), (
            result.stdout[-2000:] + result.stderr[-4000:]
        )
        lines[part] = printed
    return lines[part]


@pytest.mark.parametrize("part", PARTS)
def test_sharded_results_equal_one_device(lines, part):
    failed = [line for line in run_part(lines, part) if line.startswith("FAIL ")]
    assert not failed, "\n".join(failed)
