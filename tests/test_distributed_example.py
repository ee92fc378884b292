"""``examples/distributed_training.py`` on two processes equals one process on the same batch.

The example starts its processes with ``--launch 2``: two CPU processes on
this machine, joined by ``jax.distributed`` and exchanging arrays through
gloo. Both runs train the same global batch of packed lists, so what may
differ is only the order in which the devices' sums are added:

- the loss of every step, and the gradient of the first, to 1e-6 (float32;
  the two differ by about 3e-7, an ulp or two, and the bias's gradient is 0
  up to round-off, since a softmax loss does not see a shift of the scores);
- the merged held-out NDCG@10 and MRR exactly: each device's per-list values
  are those one device computes, and ``merge_across`` adds the devices'
  compensated sums in device order.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "distributed_training.py"

pytestmark = pytest.mark.slow


def run(tmp_path, *launch):
    """The report of one run of the example, five steps, started as ``launch`` says."""
    report = tmp_path / f"report{len(launch)}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("XLA_FLAGS", None)  # one CPU device a process, whatever the suite set
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--steps", "5", "--report", str(report), *launch],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(report.read_text())


def test_two_processes_train_and_evaluate_as_one(tmp_path):
    one = run(tmp_path)
    two = run(tmp_path, "--launch", "2")
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["losses"][-1] < one["losses"][0]  # it trains
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-6, atol=0)
    for name, gradient in one["first_grad"].items():
        np.testing.assert_allclose(two["first_grad"][name], gradient, rtol=1e-6, atol=1e-6)
    assert two["metrics"] == one["metrics"]
    assert 0 < one["metrics"]["ndcg@10"] < 1
