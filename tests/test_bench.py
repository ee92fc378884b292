"""``benchmarks/bench_exact.py``: its table, its JSON and its checks.

The benchmark runs in this process at tiny shapes with one repetition, so
these tests check structure and accounting, never speed: each peak is XLA's
argument + output + temp - alias plus the host-callback peak (integers,
equal), and the argument bytes are the scores' and labels' bytes. lodestar's agreement with scikit-learn inside the benchmark
is held to the benchmark's own float32 tolerance, ``SKLEARN_TOLERANCE``.
"""

import json
import sys

import _common
import bench_exact as _bench
import jax
import pytest

SHAPE = (16, 8)
MEMORY_SHAPE = (30, 90)


def run_bench(tmp_path, capsys, *options):
    path = tmp_path / "bench.json"
    status = _bench.main(["--quick", "--json", str(path), *options])
    return status, capsys.readouterr().out, json.loads(path.read_text())


def public_rows(k=_bench.DEFAULT_K):
    """Every registry measure once, at k and on the full list."""
    return list(_bench.exact_rows(k))


@pytest.mark.slow  # every row of the benchmark, timed: half a minute
def test_every_metric_timed_against_the_sort_with_its_memory(tmp_path, capsys):
    status, out, report = run_bench(
        tmp_path,
        capsys,
        *("--shapes", f"{SHAPE[0]}x{SHAPE[1]}"),
        "--no-rax",
    )
    assert status == 0, out
    rows = report["results"]
    assert [r["metric"] for r in rows] == public_rows()
    for r in rows:
        assert (r["batch"], r["n"]) == SHAPE
        assert r["lodestar_ms"] > 0 and r["sort_ms"] > 0
        assert r["input_bytes"] == 2 * 4 * SHAPE[0] * SHAPE[1]
        assert r["argument_bytes"] == r["input_bytes"]
        assert r["xla_peak_bytes"] == (
            r["argument_bytes"] + r["output_bytes"] + r["temp_bytes"] - r["alias_bytes"]
        )
        assert r["peak_bytes"] == r["xla_peak_bytes"] + r.get("host_peak_bytes", 0)
        assert r["rax_ms"] is None and r["lodestar_over_rax"] is None
    by_name = {r["metric"]: r for r in rows}
    for name in _bench.SKLEARN_COUNTERPARTS:
        for row in (name, f"{name}@{_bench.DEFAULT_K}"):
            checked = by_name[row]
            assert checked["checked_lists"] == SHAPE[0]
            assert checked["diff_per_list_vs_sklearn"] <= _bench.SKLEARN_TOLERANCE
            assert checked["sklearn_ms"] > 0
    assert report["memory_only"] == []
    assert report["machine"]["jax_backend"] == jax.default_backend()
    assert report["mismatches"] == [] and report["failures"] == []
    assert report["interrupted"] is False
    for heading in ("lo/sort", "lo/sk", "lo/rax", "Peak memory of the timed shapes"):
        assert heading in out
    assert "rax: disabled (--no-rax)" in out


def test_memory_only_shapes_are_compiled_not_run(tmp_path, capsys):
    rows = ["ndcg@10", "ndcg"]
    status, out, report = run_bench(
        tmp_path,
        capsys,
        *("--shapes", "4x3", "--metrics", ",".join(rows), "--no-rax"),
        *("--memory-shapes", f"{MEMORY_SHAPE[0]}x{MEMORY_SHAPE[1]}"),
    )
    assert status == 0, out
    assert [r["metric"] for r in report["memory_only"]] == rows
    for r in report["memory_only"]:
        assert (r["batch"], r["n"]) == MEMORY_SHAPE
        assert "lodestar_ms" not in r and "host_peak_bytes" not in r
        assert r["peak_bytes"] == r["xla_peak_bytes"] > r["input_bytes"]
        assert r["sort_peak_bytes"] == 2 * 4 * MEMORY_SHAPE[0] * MEMORY_SHAPE[1]  # in and out
    assert "Peak memory by compiling only (not run)" in out


def test_rax_runs_beside_lodestar_when_installed(tmp_path, capsys):
    pytest.importorskip("rax", reason="rax is not installed: nothing to compare")
    status, out, report = run_bench(
        tmp_path, capsys, "--shapes", "12x6", "--metrics", "ndcg@3,reciprocal_rank", "--k", "3"
    )
    assert status == 0, out
    assert [r["metric"] for r in report["results"]] == ["ndcg@3", "reciprocal_rank"]
    for r in report["results"]:
        assert r["rax_ms"] > 0
        assert r["rax_peak_bytes"] > 0
    assert report["machine"]["rax"].startswith(_common.version("rax"))


def test_missing_references_are_reported_and_lodestar_still_timed(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rax", None)  # import rax raises ImportError
    monkeypatch.setitem(sys.modules, "sklearn", None)
    status, out, report = run_bench(tmp_path, capsys, "--shapes", "12x6", "--metrics", "ndcg")
    assert status == 0, out
    assert "rax: not installed" in out and "scikit-learn: not installed" in out
    assert "lodestar's values were not checked" in out
    (row,) = report["results"]
    assert row["lodestar_over_sort"] > 0
    assert row["rax_ms"] is None and row["sklearn_ms"] is None
    assert "diff_per_list_vs_sklearn" not in row


def test_a_disagreement_with_sklearn_fails_the_run(tmp_path, capsys, monkeypatch):
    pytest.importorskip("sklearn", reason="scikit-learn is not installed: nothing to check")
    honest = _bench.sklearn_fn

    def off_by_a_little(sklearn_metrics, name, k):
        reference = honest(sklearn_metrics, name, k)
        return None if reference is None else lambda s, y: reference(s, y) + 1e-3

    monkeypatch.setattr(_bench, "sklearn_fn", off_by_a_little)
    status, out, report = run_bench(tmp_path, capsys, "--shapes", "12x6", "--metrics", "ndcg@10")
    assert status == 1
    assert "MISMATCH" in out
    (problem,) = report["mismatches"]
    assert problem.startswith("12x6 ndcg@10: worst per-list difference 0.001")


def test_an_interrupt_keeps_the_finished_shapes(tmp_path, capsys, monkeypatch):
    finish = _bench.Bench.timed_shape

    def interrupted_at_the_second_shape(bench, batch, n):
        if bench.results:
            raise KeyboardInterrupt  # what timeout -s INT delivers
        finish(bench, batch, n)

    monkeypatch.setattr(_bench.Bench, "timed_shape", interrupted_at_the_second_shape)
    status, out, report = run_bench(
        tmp_path, capsys, *("--shapes", "12x6", "9x5", "--metrics", "ndcg", "--no-rax")
    )
    assert status == 1
    assert report["interrupted"] is True
    assert [(r["batch"], r["n"]) for r in report["results"]] == [(12, 6)]
    assert "INTERRUPTED" in out


@pytest.mark.parametrize(
    "options, message",
    [
        (["--shapes", "10by3"], "expected a shape BxN"),
        (["--shapes", "0x3"], "expected a shape BxN"),
        (["--metrics", "ndcg,nope"], "unknown rows ['nope']"),
        (["--k", "0"], "--k must be at least 1"),
    ],
)
def test_bad_options_are_refused(options, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _bench.main(options)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_jax_util_shim_copies_metadata_only(monkeypatch):
    monkeypatch.delattr(jax, "util", raising=False)
    assert _common.install_jax_util_shim() is True
    assert _common.install_jax_util_shim() is False  # already there: left alone

    def original(x):
        """Doubles x."""
        return 2 * x

    @jax.util.wraps(original, namestr="approx_{fun}", docstr="Approximate {fun}.")
    def wrapper(x):
        return original(x) + 1

    assert wrapper.__name__ == "original" and wrapper.__doc__ == "Doubles x."
    assert wrapper(1) == 3
