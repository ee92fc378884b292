"""``lodestar compare``, ``--tie-range`` and ``--plot``: the report, the range, the pictures.

The report's numbers come from ``lodestar.stats.compare_scores`` on the
per-query values ``lodestar evaluate`` gives each run (checked equal here);
the statistics themselves are checked in tests/test_stats.py. The plots are
rendered and read back, so that they cannot rot.
"""

import json

import numpy as np
import pytest

import lodestar
from lodestar import stats
from lodestar.cli import main


def write_runs(tmp_path, queries=12, seed=0):
    rng = np.random.default_rng(seed)
    qrels, runs = [], {"base": [], "better": [], "tied": []}
    for q in range(queries):
        for d in range(20):
            relevance = int(rng.integers(0, 3)) if rng.random() < 0.6 else None
            if relevance is not None:
                qrels.append(f"q{q} 0 d{d} {relevance}\n")
            noise = rng.random()
            good = (relevance or 0) + noise
            runs["base"].append(f"q{q} Q0 d{d} 1 {noise:.6f} base\n")
            runs["better"].append(f"q{q} Q0 d{d} 1 {good:.6f} better\n")
            runs["tied"].append(f"q{q} Q0 d{d} 1 {round(good):d} tied\n")
    (tmp_path / "qrels").write_text("".join(qrels))
    paths = {}
    for name, lines in runs.items():
        (tmp_path / name).write_text("".join(lines))
        paths[name] = str(tmp_path / name)
    return str(tmp_path / "qrels"), paths


def test_compare_reports_what_compare_scores_finds(tmp_path, capsys):
    qrels, runs = write_runs(tmp_path)
    options = ["-m", "ndcg@10", "map", "--test", "t"]
    assert main(["compare", qrels, runs["base"], runs["better"], *options, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    values = {
        name: lodestar.evaluate(qrels, runs[name], ["ndcg@10", "map"]).values
        for name in ("base", "better")
    }
    expected = stats.compare_scores(values, test="t").to_dict()
    for key in ("runs", "measures", "queries", "means", "pairs"):
        assert report[key] == expected[key], key
    assert report["queries_tested"].startswith("the queries in the qrels and in every run")
    assert main(["compare", qrels, runs["base"], runs["better"], *options]) == 0
    table = capsys.readouterr().out
    # The run names are the files' runids; the better run beats the base on both.
    assert "better" in table and "base" in table
    assert "Queries: 12, the queries in the qrels and in every run" in table


def test_runids_shown_alike_name_the_runs_by_their_paths(tmp_path, capsys):
    # The byte 0xff and the four characters "\xff" are shown alike; named by
    # them, the report's two runs would have one name.
    qrels, runs = write_runs(tmp_path)
    for name, runid in (("base", b"r\xff"), ("better", b"r\\xff")):
        path = tmp_path / name
        path.write_bytes(path.read_bytes().replace(f" {name}\n".encode(), b" " + runid + b"\n"))
    assert main(["compare", qrels, runs["base"], runs["better"], "-m", "map", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == [runs["base"], runs["better"]]


@pytest.mark.parametrize("style", ["markdown", "latex"])
def test_compare_formats(tmp_path, capsys, style):
    qrels, runs = write_runs(tmp_path)
    assert main(["compare", qrels, *runs.values(), "--format", style, "-m", "map"]) == 0
    out = capsys.readouterr().out
    assert ("|" in out) if style == "markdown" else ("\\begin{tabular}" in out)


def test_compare_refusals(tmp_path, capsys):
    qrels, runs = write_runs(tmp_path)
    assert main(["compare", qrels, runs["base"]]) == 2
    assert "compare needs at least 2 runs" in capsys.readouterr().err
    assert main(["compare", qrels, runs["base"], runs["base"]]) == 2
    assert "two runs have the same name" in capsys.readouterr().err
    assert main(["compare", qrels, runs["base"], runs["better"], "--test", "z"]) == 2


def test_a_run_that_shares_no_query_is_named(tmp_path, capsys):
    qrels, runs = write_runs(tmp_path)
    stranger = tmp_path / "stranger.run"
    stranger.write_text("elsewhere Q0 d1 1 1.0 s\n")
    assert main(["compare", qrels, runs["base"], str(stranger), "-m", "map"]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert errors == [
        f"lodestar: error: no query is in both the qrels and the run {str(stranger)!r}, "
        "so there is nothing to evaluate"
    ]


@pytest.mark.parametrize("where", ["qrels", "runs"])
def test_standard_input_is_given_once(tmp_path, capsys, where):
    qrels, runs = write_runs(tmp_path)
    files = ["-", runs["base"], "-"] if where == "qrels" else [qrels, "-", "-"]
    assert main(["compare", *files, "-m", "map"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lodestar: error: '-' is given more than once, but standard input can be read only "
        "once; give the other files as paths",
        "lodestar: see 'lodestar compare --help'",
    ]


def test_tie_range_brackets_the_average(tmp_path, capsys):
    qrels, runs = write_runs(tmp_path)
    assert main(["evaluate", qrels, runs["tied"], "-m", "ndcg@10", "mrr", "--tie-range", "-q"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    ranged = [row for row in rows if len(row) == 4]
    assert len(ranged) == 2 * 12 + 2
    for name, _, value, bounds in ranged:
        low, high = (float(b) for b in bounds.strip("[]").split(","))
        assert low - 5e-5 <= float(value) <= high + 5e-5, name
    assert main(["evaluate", qrels, runs["tied"], "-m", "ndcg@10", "--tie-range", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    low, high = document["tie_range"]["mean"]["ndcg@10"]
    assert low < document["mean"]["ndcg@10"] < high  # the tied run has ties that matter
    result = lodestar.evaluate(qrels, runs["tied"], ["ndcg@10"], tie_range=True)
    assert result.tie_range == {"ndcg@10": (low, high)}


def test_plots_render(tmp_path, capsys):
    image = pytest.importorskip("matplotlib.image")
    qrels, runs = write_runs(tmp_path)
    histogram, differences = tmp_path / "h.png", tmp_path / "d.png"
    assert (
        main(
            [
                "evaluate",
                qrels,
                runs["tied"],
                "-m",
                "ndcg@10",
                "map",
                "--tie-range",
                "--plot",
                str(histogram),
            ]
        )
        == 0
    )
    assert main(["compare", qrels, *runs.values(), "-m", "map", "--plot", str(differences)]) == 0
    capsys.readouterr()
    for path in (histogram, differences):
        pixels = image.imread(path)
        assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 300
        assert pixels[..., :3].std() > 0.05  # not a blank canvas


def test_plot_without_matplotlib_is_a_clear_usage_error(tmp_path, capsys, monkeypatch):
    from lodestar import _plots

    monkeypatch.setattr(_plots, "available", lambda: False)
    qrels, runs = write_runs(tmp_path)
    assert main(["evaluate", qrels, runs["base"], "--plot", str(tmp_path / "x.png")]) == 2
    assert "pip install 'lodestar[plot]'" in capsys.readouterr().err


def test_usage_errors_point_to_the_commands_own_help(capsys):
    assert main(["compare"]) == 2
    assert capsys.readouterr().err.endswith("lodestar: see 'lodestar compare --help'\n")
    assert main(["evaluate"]) == 2
    assert capsys.readouterr().err.endswith("lodestar: see 'lodestar evaluate --help'\n")


@pytest.mark.parametrize(
    "option, message",
    [
        (["--permutations", "0"], "--permutations takes a number of at least 1; got 0"),
        (["--samples", "-3"], "--samples takes a number of at least 1; got -3"),
        (["--seed", "4294967296"], "--seed takes a number in [0, 2**32 - 1]; got 4294967296"),
        (["--seed", "-1"], "--seed takes a number in [0, 2**32 - 1]; got -1"),
    ],
)
def test_test_options_are_refused_before_the_runs_are_read(capsys, option, message):
    # The runs named do not exist: the options are refused before any reading.
    assert main(["compare", "no-qrels", "no-run-a", "no-run-b", *option]) == 2
    assert capsys.readouterr().err.startswith(f"lodestar: error: {message}\n")


@pytest.mark.parametrize(
    "options, recorded",
    [
        ([], {"trec_eval": False, "ignore_ties": False, "complete": False, "relevance_level": 1}),
        (
            ["--trec-eval", "--ignore-ties", "-c", "-l", "2"],
            {"trec_eval": True, "ignore_ties": True, "complete": True, "relevance_level": 2},
        ),
    ],
)
def test_the_json_report_records_how_the_runs_were_evaluated(tmp_path, capsys, options, recorded):
    qrels, runs = write_runs(tmp_path)
    args = ["compare", qrels, runs["base"], runs["better"], "-m", "map", "--json", *options]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["evaluation"] == {"qrels": qrels, **recorded}


def test_the_bundled_comparison_is_the_installed_files_named_plainly(capsys):
    from lodestar.cli import _compare_example_paths

    assert main(["compare", "--example", "-m", "map", "--json"]) == 0
    example = json.loads(capsys.readouterr().out)
    qrels, runs = _compare_example_paths()
    assert main(["compare", qrels, *runs, "-m", "map", "--json"]) == 0
    from_paths = json.loads(capsys.readouterr().out)
    assert example["runs"] == ["bm25", "dense", "hybrid"] == from_paths["runs"]
    assert example["pairs"] == from_paths["pairs"] and example["queries"] == 30
    assert example["runs_files"] == {name: f"{name}.run" for name in example["runs"]}
    assert example["evaluation"]["qrels"] == "compare.qrels"
    assert from_paths["evaluation"]["qrels"] == qrels


@pytest.mark.parametrize(
    "args, message",
    [
        (["--example", "qrels"], "--example compares the bundled files; give no QRELS or RUN"),
        ([], "give QRELS and two or more RUNs, or --example"),
    ],
)
def test_the_bundled_comparison_or_files(capsys, args, message):
    assert main(["compare", *args]) == 2
    assert capsys.readouterr().err.startswith(f"lodestar: error: {message}\n")
