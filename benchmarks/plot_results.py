"""Plots and tables of the committed benchmark results, for docs/benchmarks.md.

Every number on the benchmarks page comes from a JSON file in
``benchmarks/results/``; this script is where it is read. It draws the
speed-up plots into ``docs/_static/benchmarks/`` and prints the page's tables
as Markdown::

    python benchmarks/plot_results.py            # write the PNGs, print the tables
    python benchmarks/plot_results.py --tables   # print the tables only

A speed-up is the competitor's time over lodestar's, measured in one process:
above 1, lodestar is faster. Each PNG records a digest of the numbers it shows
(a PNG text chunk), and ``tests/test_docs_build.py`` recomputes it from
the JSON and checks that each table printed here appears on the page. So after
committing new results, point ``SOURCES`` at them, rerun this script, paste
its tables into the page and commit the PNGs.

It needs matplotlib, and neither JAX nor lodestar.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PLOTS = ROOT / "docs" / "_static" / "benchmarks"

# The results each part of the page shows.
SOURCES = {
    "exact": "cpu_exact_20261207.json",
    # The same rows on XLA's route (LODESTAR_KERNELS=xla), lodestar alone.
    "exact_xla": "cpu_exact_20261207_xla.json",
    "exact_large": "cpu_exact_20261130_large.json",
    # trec_eval's G and binG beside NDCG, on both routes (their kernel).
    "gain": "cpu_exact_20261207e_gain.json",
    "gain_xla": "cpu_exact_20261207e_gain_xla.json",
    "smooth": "cpu_smooth_20261201.json",
    "smooth_earlier": "cpu_smooth_20261130.json",
    "smooth_training": "cpu_smooth_20261204.json",
    # The lambda-weighted losses, the NDCG transformations and ListMLE (its
    # suffix log-sum-exp blocked since), compiled only.
    "smooth_composed": "cpu_smooth_20261207_memory.json",
    "cli": "cpu_cli_20261205c.json",
    "ltr": "cpu_ltr_20261207.json",
    "long_ties": "cpu_long_ties_20261205.json",
    "python_api": "cpu_python_api_20261205.json",
}
DIGEST_KEY = "lodestar-data-digest"


def load(kind: str) -> dict:
    """The JSON file behind one part of the page."""
    return json.loads((RESULTS / SOURCES[kind]).read_text())


def speedup(competitor_ms, lodestar_ms) -> float | None:
    """Competitor time over lodestar time; None where either is missing."""
    if competitor_ms is None or lodestar_ms is None or lodestar_ms <= 0:
        return None
    return competitor_ms / lodestar_ms


def shape_of(row: dict) -> str:
    return f"{row['batch']:,}×{row['n']:,}"


def _metric_label(row: dict) -> str:
    label = row["metric"]
    if row.get("k") is not None and row["k"] >= row["n"]:
        label += " (k ≥ n)"
    return label


# --------------------------------------------------------------------------
# The data each plot and table shows
# --------------------------------------------------------------------------


def exact_series(report: dict) -> list[dict]:
    """Per timed row: its shape, metric, engine, time, speed-ups and peak memory."""
    series = []
    for row in report["results"]:
        if row.get("lodestar_ms") is None:
            continue
        series.append(
            {
                "shape": shape_of(row),
                "metric": _metric_label(row),
                "engine": row["engine"],
                "lodestar_ms": row["lodestar_ms"],
                "vs_jnp_sort": speedup(row.get("sort_ms"), row["lodestar_ms"]),
                "vs_np_sort": speedup(row.get("np_sort_ms"), row["lodestar_ms"]),
                "vs_rax": speedup(row.get("rax_ms"), row["lodestar_ms"]),
                "vs_sklearn": speedup(row.get("sklearn_ms"), row["lodestar_ms"]),
                "peak_over_input": row.get("peak_over_input"),
            }
        )
    return series


def memory_series(report: dict) -> list[dict]:
    """Per compiled-only row: lodestar's and Rax's peak over the input's bytes."""
    series = []
    for row in report.get("memory_only", []):
        rax = row.get("rax_peak_bytes")
        series.append(
            {
                "shape": shape_of(row),
                "metric": row["metric"],
                "input_mb": row["input_bytes"] / 1e6,
                "lodestar_peak_mb": row["peak_bytes"] / 1e6,
                "lodestar_over_input": row["peak_bytes"] / row["input_bytes"],
                "rax_over_input": None if rax is None else rax / row["input_bytes"],
            }
        )
    return series


def smooth_series(report: dict) -> list[dict]:
    """Per loss and shape: lodestar's and Rax's time, and the speed-up."""
    return [
        {
            "shape": shape_of(row),
            "loss": row["loss"],
            "lodestar_ms": row["lodestar_ms"],
            "rax_ms": row.get("rax_ms"),
            "vs_rax": speedup(row.get("rax_ms"), row["lodestar_ms"]),
        }
        for row in report["results"]
    ]


def smooth_training_series(report: dict) -> list[dict]:
    """Per loss and training shape: time, Rax's, the speed-up and the time over lambda_loss's."""
    return [
        {
            "shape": shape_of(row),
            "loss": row["loss"],
            "lodestar_ms": row["lodestar_ms"],
            "rax_ms": row.get("rax_ms"),
            "vs_rax": speedup(row.get("rax_ms"), row["lodestar_ms"]),
            "over_lambda_loss": row.get("over_lambda_loss"),
            "rax_skipped": row.get("rax_skipped"),
        }
        for row in report["training"]
    ]


def smooth_memory_series(report: dict) -> list[dict]:
    """Per loss and shape: XLA's temporaries (GiB) of lodestar and Rax, compiled only."""
    gib = float(1 << 30)
    series = []
    for row in report["memory"]:
        rax = row.get("rax_temp_bytes")
        series.append(
            {
                "shape": shape_of(row),
                "loss": row["loss"],
                "lodestar_gib": row["lodestar_temp_bytes"] / gib,
                "rax_gib": None if rax is None else rax / gib,
            }
        )
    return series


def ltr_series(report: dict) -> list[dict]:
    """Per row of ``bench_ltr.py``: held-out NDCG@10 (both gains), mean and std over seeds."""
    return [
        {
            "row": entry["row"],
            "seeds": entry["seeds"],
            "ndcg10": entry["test_ndcg10"],
            "ndcg10_std": entry["test_ndcg10_std"],
            "ndcg10_linear": entry["test_ndcg10_linear"],
            "ndcg10_linear_std": entry["test_ndcg10_linear_std"],
            "valid_ndcg10": entry.get("valid_ndcg10"),
            "best_step": entry.get("best_step"),
            "seconds": entry.get("seconds") or None,
        }
        for entry in report["summary"]
    ]


def digest(data) -> str:
    """A short digest of the numbers a plot shows, rounded so float noise cannot move it."""

    def rounded(value):
        if isinstance(value, float):
            return float(f"{value:.6g}")
        if isinstance(value, dict):
            return {key: rounded(item) for key, item in value.items()}
        if isinstance(value, list):
            return [rounded(item) for item in value]
        return value

    text = json.dumps(rounded(data), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def _ratio(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _ms(value: float) -> str:
    return f"{value:,.1f}" if value >= 1 else f"{value:.2f}"


def exact_table(series: list[dict]) -> str:
    lines = [
        "| shape | metric | engine | lodestar ms | vs jnp.sort | vs np.sort "
        "| vs Rax | vs scikit-learn | peak × input |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in series:
        peak = "—" if r["peak_over_input"] is None else f"{r['peak_over_input']:.2f}"
        lines.append(
            f"| {r['shape']} | {r['metric']} | {r['engine']} | {_ms(r['lodestar_ms'])} "
            f"| {_ratio(r['vs_jnp_sort'])} | {_ratio(r['vs_np_sort'])} | {_ratio(r['vs_rax'])} "
            f"| {_ratio(r['vs_sklearn'])} | {peak} |"
        )
    return "\n".join(lines)


def routes_series(native: dict, xla: dict) -> list[dict]:
    """Per row timed on both routes: the kernels' time, XLA's, and each over ``np.sort``."""
    on_xla = {(shape_of(r), _metric_label(r)): r for r in xla["results"] if r.get("lodestar_ms")}
    series = []
    for row in native["results"]:
        other = on_xla.get((shape_of(row), _metric_label(row)))
        if row.get("lodestar_ms") is None or other is None:
            continue
        series.append(
            {
                "shape": shape_of(row),
                "metric": _metric_label(row),
                "kernels_ms": row["lodestar_ms"],
                "xla_ms": other["lodestar_ms"],
                "kernels_over_np_sort": speedup(row["lodestar_ms"], row.get("np_sort_ms")),
                "xla_over_np_sort": speedup(other["lodestar_ms"], other.get("np_sort_ms")),
            }
        )
    return series


def routes_table(series: list[dict]) -> str:
    lines = [
        "| shape | metric | kernels ms | XLA's sort ms | XLA ÷ kernels "
        "| kernels ÷ np.sort | XLA ÷ np.sort |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in series:
        lines.append(
            f"| {r['shape']} | {r['metric']} | {_ms(r['kernels_ms'])} | {_ms(r['xla_ms'])} "
            f"| {_ratio(speedup(r['xla_ms'], r['kernels_ms']))} "
            f"| {_ratio(r['kernels_over_np_sort'])} | {_ratio(r['xla_over_np_sort'])} |"
        )
    return "\n".join(lines)


def large_table(series: list[dict]) -> str:
    lines = [
        "| shape | metric | engine | lodestar ms | vs jnp.sort | vs np.sort | peak × input |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in series:
        lines.append(
            f"| {r['shape']} | {r['metric']} | {r['engine']} | {_ms(r['lodestar_ms'])} "
            f"| {_ratio(r['vs_jnp_sort'])} | {_ratio(r['vs_np_sort'])} "
            f"| {r['peak_over_input']:.2f} |"
        )
    return "\n".join(lines)


def memory_table(series: list[dict]) -> str:
    shapes = list(dict.fromkeys(r["shape"] for r in series))
    by = {(r["shape"], r["metric"]): r for r in series}
    metrics = list(dict.fromkeys(r["metric"] for r in series))
    header = "| metric | " + " | ".join(f"{s}: lodestar | {s}: Rax" for s in shapes) + " |"
    lines = [header, "|---|" + "---:|---:|" * len(shapes)]
    for metric in metrics:
        cells = []
        for shape in shapes:
            r = by.get((shape, metric))
            if r is None:
                cells += ["—", "—"]
                continue
            rax = r["rax_over_input"]
            cells += [
                f"{r['lodestar_over_input']:.2f}",
                "—" if rax is None else f"{rax:,.1f}" if rax < 100 else f"{rax:,.0f}",
            ]
        lines.append(f"| {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


SMOOTH_NAMES = {
    "lambda": "lambda (against Rax's LambdaRank weights only)",
    "lambda_full": "lambda (against Rax with the same NDCG-Loss2++ weights)",
    "ranks_permutahedron": "permutahedron soft ranks (Rax has none)",
}


SHORT_SMOOTH_NAMES = {
    "lambda": "lambda\n(vs LambdaRank weights)",
    "lambda_full": "lambda\n(vs the same weights)",
}


def smooth_table(
    series: list[dict], earlier: list[dict], earlier_label: str = "earlier run"
) -> str:
    before = {(r["shape"], r["loss"]): r["vs_rax"] for r in earlier}
    lines = [
        f"| shape | loss | lodestar ms | Rax ms | vs Rax | vs Rax, {earlier_label} |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in series:
        rax = "—" if r["rax_ms"] is None else _ms(r["rax_ms"])
        name = SMOOTH_NAMES.get(r["loss"], r["loss"])
        lines.append(
            f"| {r['shape']} | {name} | {_ms(r['lodestar_ms'])} | {rax} | {_ratio(r['vs_rax'])} "
            f"| {_ratio(before.get((r['shape'], r['loss'])))} |"
        )
    return "\n".join(lines)


def _gib(value: float | None) -> str:
    """GiB to three significant digits."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:#.3g}"


def _times(value: float | None) -> str:
    """A ratio as ``_ratio`` writes it, with two significant digits below 0.1."""
    if value is None or value >= 0.1:
        return _ratio(value)
    return f"{value:#.2g}"


def smooth_memory_table(series: list[dict]) -> str:
    """One row per loss: each shape's temporaries, lodestar and Rax, and their ratio."""
    shapes = list(dict.fromkeys(r["shape"] for r in series))
    by = {(r["shape"], r["loss"]): r for r in series}
    names = list(dict.fromkeys(r["loss"] for r in series))
    header = "| loss | " + " | ".join(
        f"{s}: lodestar GiB | {s}: Rax GiB | {s}: Rax ÷ lodestar" for s in shapes
    )
    lines = [header + " |", "|---|" + "---:|---:|---:|" * len(shapes)]
    for name in names:
        cells = []
        for shape in shapes:
            r = by.get((shape, name))
            if r is None:
                cells += ["—", "—", "—"]
                continue
            cells += [
                _gib(r["lodestar_gib"]),
                _gib(r["rax_gib"]),
                _ratio(speedup(r["rax_gib"], r["lodestar_gib"])),
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sinkhorn_table(report: dict) -> str:
    """NeuralNDCG's temporaries against its Sinkhorn iterations."""
    rows = report["sinkhorn"]
    shape = shape_of(rows[0])
    lines = [
        f"| sinkhorn_iterations | {shape}: lodestar GiB |",
        "|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['sinkhorn_iterations']} | {_gib(r['temp_bytes'] / float(1 << 30))} |")
    return "\n".join(lines)


def smooth_training_table(series: list[dict]) -> str:
    lines = [
        "| shape | loss | lodestar ms | Rax ms | vs Rax | × lambda_loss |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in series:
        if r["lodestar_ms"] is None:
            lines.append(f"| {r['shape']} | {r['loss']} | not timed | — | — | — |")
            continue
        rax = "—" if r["rax_ms"] is None else _ms(r["rax_ms"])
        if r["rax_skipped"]:
            rax = "not run"
        lines.append(
            f"| {r['shape']} | {r['loss']} | {_ms(r['lodestar_ms'])} | {rax} "
            f"| {_ratio(r['vs_rax'])} | {_times(r['over_lambda_loss'])} |"
        )
    return "\n".join(lines)


CLI_WORKLOADS = {
    "small": "1,000 lines",
    "trec": "1,500 × 1,000",
    "trec-distinct": "1,500 × 1,000, distinct docnos",
    "large": "10,000 × 1,000",
}


# bench_cli.py's tools: the -m all_trec pair, and trec_eval's run of the default measures.
CLI_ALL_TREC = "lodestar -m all_trec --trec-eval --ignore-ties, warm"
CLI_TREC_EVAL_ALL_TREC = "trec_eval (C) -m all_trec"
CLI_TREC_EVAL = "trec_eval (C)"


def _versus_trec_eval(results: dict, tool: str) -> float | None:
    """A lodestar row's time over trec_eval's on the same measures; None for other tools."""
    if not tool.startswith("lodestar"):
        return None
    reference = results.get(CLI_TREC_EVAL_ALL_TREC if tool == CLI_ALL_TREC else CLI_TREC_EVAL)
    value = results[tool]
    if not reference or not value or reference["seconds"] < 0.01:
        return None
    return value["seconds"] / reference["seconds"]


def cli_table(report: dict) -> str:
    """``lodestar evaluate`` from the shell against the other tools, one row per tool and run.

    The first ratio is the tool's wall time over lodestar's warm one
    (tie-averaged, default measures): above 1, lodestar is faster. The
    second is a lodestar row's time over trec_eval's on the same measures:
    below 1, lodestar is faster.
    """
    lines = [
        "| run | tool | seconds | peak MB | ÷ lodestar, warm | lodestar ÷ trec_eval |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, workload in report["workloads"].items():
        results = workload["results"]
        warm = results["lodestar, warm"]["seconds"]
        for tool, value in results.items():
            if value is None:
                lines.append(f"| {CLI_WORKLOADS[name]} | {tool} | — | — | — | — |")
                continue
            versus = _versus_trec_eval(results, tool)
            lines.append(
                f"| {CLI_WORKLOADS[name]} | {tool} | {value['seconds']:.2f} "
                f"| {value['peak_mb']:,.0f} | {value['seconds'] / warm:.2f} "
                f"| {'—' if versus is None else f'{versus:.2f}'} |"
            )
    return "\n".join(lines)


def cli_series(report: dict) -> list[dict]:
    """Per workload large enough to time, each lodestar run's time over trec_eval's."""
    rows = []
    for name, workload in report["workloads"].items():
        results = workload["results"]
        for tool in results:
            versus = _versus_trec_eval(results, tool)
            if versus is not None:
                rows.append({"shape": CLI_WORKLOADS[name], "tool": tool, "ratio": versus})
    return rows


LONG_TIE_WORKLOADS = {
    "tail": ("10 × 1,000, last 900 tied", "official"),
    "graded-3000": ("3,000 tied, grades 1–4", "G"),
}


def long_ties_table(report: dict) -> str:
    """``bench_long_ties.py``: tie-averaged against ``--ignore-ties``, cold and warm.

    The ratio is the warm tie-averaged time over the warm ``--ignore-ties``
    one; for the one-query blocks, the extra warm seconds per million of
    ``m * r`` (block length times relevant items).
    """
    lines = [
        "| run | measures | averaged, cold | averaged, warm | --ignore-ties, warm "
        "| ratio, warm | extra s per million m·r |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, workload in report["workloads"].items():
        averaged, plain = workload["seconds"]["averaged"], workload["seconds"]["ignore_ties"]
        if name.startswith("block-"):
            label = f"{int(name.split('-')[1]):,} tied, 5 % relevant"
            measures, work = "iprec_at_recall", workload["m_times_r"]
            extra = f"{(averaged['warm'] - plain['warm']) / (work / 1e6):.2f}"
        else:
            (label, measures), extra = LONG_TIE_WORKLOADS[name], "—"
        lines.append(
            f"| {label} | {measures} | {averaged['cold']:.2f} | {averaged['warm']:.2f} "
            f"| {plain['warm']:.2f} | {averaged['warm'] / plain['warm']:.1f} | {extra} |"
        )
    return "\n".join(lines)


def python_api_table(report: dict) -> str:
    """``bench_python_api.py``: a fresh Python process against the command, both warm."""
    lines = [
        "| job | the command | Python, `use_compilation_cache()` | Python, default |",
        "|---|---:|---:|---:|",
    ]
    for job, times in report["seconds"].items():
        command = times["command"]
        cells = [f"{command:.2f} s"] + [
            f"{times[name]:.2f} s ({times[name] / command:.2f}×)"
            for name in ("python, cache", "python, default")
        ]
        lines.append(f"| `{job}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean_std(mean: float, std: float | None) -> str:
    return f"{mean:.3f}" if std is None else f"{mean:.3f} ± {std:.3f}"


def ltr_table(series: list[dict]) -> str:
    """``bench_ltr.py``'s rows: held-out NDCG@10, mean ± sample std over the seeds."""
    lines = [
        "| row | test NDCG@10 (2^label − 1) | test NDCG@10 (linear) | validation NDCG@10 "
        "| best step | seconds a run |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in series:
        valid = "—" if r["valid_ndcg10"] is None else f"{r['valid_ndcg10']:.3f}"
        step = "—" if r["best_step"] is None else f"{r['best_step']:,.0f}"
        seconds = "—" if r["seconds"] is None else f"{r['seconds']:.1f}"
        lines.append(
            f"| {r['row']} | {_mean_std(r['ndcg10'], r['ndcg10_std'])} "
            f"| {_mean_std(r['ndcg10_linear'], r['ndcg10_linear_std'])} | {valid} | {step} "
            f"| {seconds} |"
        )
    return "\n".join(lines)


def tables() -> dict[str, str]:
    """Every table of the benchmarks page, by name."""
    exact = load("exact")
    return {
        "cli": cli_table(load("cli")),
        "long_ties": long_ties_table(load("long_ties")),
        "python_api": python_api_table(load("python_api")),
        "exact": exact_table(exact_series(exact)),
        "routes": routes_table(routes_series(exact, load("exact_xla"))),
        "gain_routes": routes_table(routes_series(load("gain"), load("gain_xla"))),
        "memory": memory_table(memory_series(exact)),
        "exact_large": large_table(exact_series(load("exact_large"))),
        "smooth": smooth_table(
            smooth_series(load("smooth")), smooth_series(load("smooth_earlier"))
        ),
        "ltr": ltr_table(ltr_series(load("ltr"))),
        "smooth_retimed": smooth_table(
            smooth_series(load("smooth_training")),
            smooth_series(load("smooth")),
            earlier_label="2026-12-01 run",
        ),
        "smooth_memory": smooth_memory_table(smooth_memory_series(load("smooth_training"))),
        "smooth_memory_composed": smooth_memory_table(
            smooth_memory_series(load("smooth_composed"))
        ),
        "smooth_sinkhorn": sinkhorn_table(load("smooth_training")),
        "smooth_training": smooth_training_table(smooth_training_series(load("smooth_training"))),
    }


# --------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------


def plot_data() -> dict[str, dict]:
    """What each PNG shows, by file name."""
    exact = exact_series(load("exact"))
    earlier = {(r["shape"], r["loss"]): r["vs_rax"] for r in smooth_series(load("smooth_earlier"))}
    smooth = [
        {**r, "vs_rax_earlier": earlier.get((r["shape"], r["loss"]))}
        for r in smooth_series(load("smooth"))
        if r["vs_rax"] is not None
    ]
    return {
        "exact_speedups.png": {"source": SOURCES["exact"], "rows": exact},
        "smooth_speedups.png": {
            "source": f"{SOURCES['smooth']}, {SOURCES['smooth_earlier']}",
            "rows": smooth,
        },
        "ltr_ndcg.png": {"source": SOURCES["ltr"], "rows": ltr_series(load("ltr"))},
        "cli_vs_trec_eval.png": {"source": SOURCES["cli"], "rows": cli_series(load("cli"))},
    }


def _bars(ax, labels, columns, title, *, log=True):
    """Horizontal bars of speed-ups, one group per label, with a line at 1."""
    import numpy as np

    height = 0.8 / len(columns)
    positions = np.arange(len(labels))
    for index, (name, values, color) in enumerate(columns):
        shown = [math.nan if v is None else v for v in values]
        ax.barh(
            positions + (index - (len(columns) - 1) / 2) * height,
            shown,
            height=height,
            label=name,
            color=color,
        )
    ax.axvline(1.0, color="black", linewidth=1)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(5e-3, 2e3)
    ax.set_yticks(positions, labels, fontsize=8)
    if not ax.yaxis_inverted():  # axes sharing y share the inversion
        ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.3)


def draw(name: str, data: dict, path: Path) -> None:
    """Draw one PNG, recording the digest of its data in the file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = data["rows"]
    if name == "ltr_ndcg.png":
        _draw_ltr(plt, data, path)
        return
    if name == "cli_vs_trec_eval.png":
        _draw_cli(plt, data, path)
        return
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    if name == "exact_speedups.png":
        fig, axes = plt.subplots(
            1, len(shapes), figsize=(5.2 * len(shapes), 7.5), layout="constrained", sharex=True
        )
        for ax, shape in zip(axes, shapes, strict=True):
            part = [r for r in rows if r["shape"] == shape]
            _bars(
                ax,
                [r["metric"] for r in part],
                [
                    ("vs scikit-learn", [r["vs_sklearn"] for r in part], "tab:orange"),
                    ("vs Rax", [r["vs_rax"] for r in part], "tab:green"),
                    ("vs one jnp.sort", [r["vs_jnp_sort"] for r in part], "tab:blue"),
                ],
                f"{shape} (lists × items)",
            )
            ax.set_xlabel("speed-up: their time / lodestar's")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=9)
        fig.suptitle(
            "Exact metrics on CPU, float32, tied scores: speed-ups above 1 mean lodestar is "
            f"faster ({data['source']})"
        )
    else:
        fig, axes = plt.subplots(
            1,
            len(shapes),
            figsize=(4 + 3.5 * len(shapes), 3.8),
            layout="constrained",
            sharex=True,
            sharey=True,
        )
        for ax, shape in zip(axes, shapes, strict=True):
            part = [r for r in rows if r["shape"] == shape]
            _bars(
                ax,
                [SHORT_SMOOTH_NAMES.get(r["loss"], r["loss"]) for r in part],
                [
                    (SOURCES["smooth"], [r["vs_rax"] for r in part], "tab:green"),
                    (SOURCES["smooth_earlier"], [r["vs_rax_earlier"] for r in part], "tab:gray"),
                ],
                f"{shape} (lists × items)",
                log=False,
            )
            ax.set_xlabel("speed-up: Rax's time / lodestar's\n(> 1: lodestar faster)")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=9)
        fig.suptitle("Losses, value and gradient, on CPU: two runs")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, metadata={DIGEST_KEY: digest(data), "Software": None})
    plt.close(fig)


def _draw_cli(plt, data: dict, path: Path) -> None:
    """lodestar's wall time over trec_eval's, per run and workload: below 1, lodestar is faster."""
    rows = data["rows"]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    fig, axes = plt.subplots(
        1, len(shapes), figsize=(4 + 3.5 * len(shapes), 3.2), layout="constrained", sharey=True
    )
    for ax, shape in zip(axes, shapes, strict=True):
        part = [r for r in rows if r["shape"] == shape]
        _bars(
            ax,
            [r["tool"].removeprefix("lodestar").strip(" ,") or "default" for r in part],
            [("lodestar ÷ trec_eval", [r["ratio"] for r in part], "tab:blue")],
            f"{shape} lines",
            log=False,
        )
        ax.set_xlabel("lodestar's time / trec_eval's\n(< 1: lodestar faster)")
    fig.suptitle(f"lodestar evaluate against trec_eval 10, same measures ({data['source']})")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, metadata={DIGEST_KEY: digest(data), "Software": None})
    plt.close(fig)


def _draw_ltr(plt, data: dict, path: Path) -> None:
    """Held-out NDCG@10 per row, mean with one sample standard deviation either side."""
    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.6), layout="constrained")
    positions = list(range(len(rows)))
    colors = [
        "tab:gray" if r["valid_ndcg10"] is None else "tab:orange" if "lightgbm" in r["row"]
        else "tab:green" if r["row"].startswith("rax ") else "tab:blue"
        for r in rows
    ]  # fmt: skip
    ax.barh(
        positions,
        [r["ndcg10"] for r in rows],
        xerr=[r["ndcg10_std"] or 0.0 for r in rows],
        color=colors,
        capsize=3,
    )
    ax.set_yticks(positions, [r["row"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0.5, 0.8)
    ax.set_xlabel("held-out exact NDCG@10 (gain 2^label − 1), mean ± std over seeds")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(
        f"LightGBM's lambdarank example: an MLP per lodestar loss (blue), per Rax loss "
        f"(green), and LightGBM\n"
        f"({data['source']})",
        fontsize=10,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, metadata={DIGEST_KEY: digest(data), "Software": None})
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", action="store_true", help="print the tables only")
    parser.add_argument("--out", type=Path, default=PLOTS, help=f"where the PNGs go ({PLOTS})")
    args = parser.parse_args(argv)
    if not args.tables:
        for name, data in plot_data().items():
            draw(name, data, args.out / name)
            print(f"wrote {args.out / name}")
    for name, table in tables().items():
        print(f"\n<!-- table: {name} -->\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
