"""``-R qrels_jg``: trec_eval's measures averaged over a query's judgment groups.

trec_eval's own expected output (``out.test.qrels_jg``) is reproduced line for
line in ``tests/test_trec_eval_outputs.py``, with trec_eval's order of ties.
Here the oracle is the definition (``m_map_avgjg.c``, ``m_P_avgjg.c``,
``m_Rprec_mult_avgjg.c``): each group's judgments evaluate the run on their
own, and a query scores the mean over the groups that judged it. Each group
is written out as a plain qrels file and evaluated with ``map``, ``P`` and
``Rprec_mult``, in both tie modes, and the averaged measures must equal the
mean of those to 1e-12. Ties are many (scores on a coarse grid), so the
tie-averaged path is exercised as well as trec_eval's order.
"""

import json

import numpy as np
import pytest

import lodestar
from lodestar._trec import read
from lodestar.cli import main

GROUPS = ("alice", "bob", "carol")
PLAIN = ["-m", "map", "-m", "P.5", "-m", "Rprec_mult.0.5"]
AVERAGED = ["-m", "map_avgjg", "-m", "P_avgjg.5", "-m", "Rprec_mult_avgjg.0.5"]


def _files(directory, seed):
    """A tied run, its qrels_jg, and one plain qrels file per group."""
    rng = np.random.default_rng(seed)
    run_lines, jg_lines = [], []
    plain = {group: [] for group in GROUPS}
    for q in range(4):
        docs = [f"d{q}_{i}" for i in range(30)]
        scores = np.round(rng.random(30), 1)
        for rank, i in enumerate(np.argsort(-scores, kind="stable")):
            run_lines.append(f"q{q} Q0 {docs[i]} {rank + 1} {scores[i]:.1f} sys")
        # Query q3 is judged by one group only; the others by two or three.
        judging = GROUPS[:1] if q == 3 else GROUPS[: 2 + q % 2]
        for group in judging:
            judged = rng.choice(30, size=15, replace=False)
            for i in judged:
                line = f"q{q} GROUP {docs[i]} {rng.choice(3, p=[0.5, 0.3, 0.2])}"
                jg_lines.append(line.replace("GROUP", group))
                plain[group].append(line.replace("GROUP", "0"))
    run = directory / "run.txt"
    run.write_text("\n".join(run_lines) + "\n")
    qrels_jg = directory / "qrels.jg"
    qrels_jg.write_text("\n".join(jg_lines) + "\n")
    per_group = []
    for group, lines in plain.items():
        path = directory / f"qrels.{group}"
        path.write_text("\n".join(lines) + "\n")
        per_group.append(path)
    return run, qrels_jg, per_group


def _per_query(capsys, args):
    assert main(["evaluate", "--json", "-q", *args]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["per_query"]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("ties", [[], ["--ignore-ties"]], ids=["averaged", "trec_eval-order"])
def test_averaged_measures_are_the_mean_over_each_groups_own_evaluation(
    tmp_path, capsys, seed, ties
):
    run, qrels_jg, per_group = _files(tmp_path, seed)
    got = _per_query(capsys, [*ties, "-R", "qrels_jg", *AVERAGED, str(qrels_jg), str(run)])
    by_group = [_per_query(capsys, [*ties, *PLAIN, str(path), str(run)]) for path in per_group]
    assert sorted(got) == ["q0", "q1", "q2", "q3"]
    for query, values in got.items():
        judged_by = [group[query] for group in by_group if query in group]
        assert len(judged_by) == (1 if query == "q3" else 2 + int(query[1:]) % 2)
        pairs = [("map_avgjg", "map"), ("P_avgjg_5", "P_5")]
        for averaged, plain in [*pairs, ("Rprec_mult_avgjg_0.50", "Rprec_mult_0.50")]:
            want = np.mean([group[plain] for group in judged_by])
            np.testing.assert_allclose(values[averaged], want, rtol=1e-12, atol=1e-12)


def test_one_group_gives_the_plain_measures(tmp_path, capsys):
    run, _, per_group = _files(tmp_path, 2)
    alone = per_group[0]  # read as qrels_jg, its second field names one group, "0"
    got = _per_query(capsys, ["-R", "qrels_jg", *AVERAGED, str(alone), str(run)])
    plain = _per_query(capsys, [*PLAIN, str(alone), str(run)])
    for query, values in plain.items():
        assert got[query]["map_avgjg"] == pytest.approx(values["map"], rel=1e-12, abs=1e-12)
        assert got[query]["P_avgjg_5"] == pytest.approx(values["P_5"], rel=1e-12, abs=1e-12)


def test_tie_range_is_given_only_where_each_query_has_one_group(tmp_path, capsys):
    # Two groups of one query may want the ties in opposite orders, so the
    # mean of their extremes is not the range of the mean: no range, and why.
    run, qrels_jg, per_group = _files(tmp_path, 5)
    args = ["evaluate", "--json", "-q", "--tie-range", "-R", "qrels_jg", *AVERAGED]
    assert main([*args, str(qrels_jg), str(run)]) == 0
    captured = capsys.readouterr()
    assert "tie_range" not in json.loads(captured.out)
    assert (
        "lodestar: --tie-range: no tie range is given under judgment groups when a query has "
        "more than one: one order of the ties need not give every group its smallest or "
        "largest value\n"
    ) in captured.err
    # One group per query: the group's own range, exact.
    alone = per_group[0]
    assert main([*args, str(alone), str(run)]) == 0
    got = json.loads(capsys.readouterr().out)["tie_range"]
    plain = ["evaluate", "--json", "-q", "--tie-range", *PLAIN, str(alone), str(run)]
    assert main(plain) == 0
    want = json.loads(capsys.readouterr().out)["tie_range"]
    assert got["per_query"]["q0"]["map_avgjg"] == want["per_query"]["q0"]["map"]
    assert got["mean"]["P_avgjg_5"] == want["mean"]["P_5"]
    assert got["mean"]["map_avgjg"][0] < got["mean"]["map_avgjg"][1]


def _records(qrels_jg):
    """The qrels_jg file's judgments as (qid, group, docno, relevance) rows."""
    rows = [line.split() for line in qrels_jg.read_text().splitlines()]
    return [(q, g, d, int(r)) for q, g, d, r in rows]


def test_lodestar_evaluate_takes_judgment_groups_from_every_source(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    run, qrels_jg, _ = _files(tmp_path, 6)
    want = _per_query(capsys, ["-R", "qrels_jg", *AVERAGED, str(qrels_jg), str(run)])
    measures = [m for m in AVERAGED if m != "-m"]
    rows = _records(qrels_jg)
    nested: dict = {}
    for q, g, d, r in rows:
        nested.setdefault(q, {}).setdefault(g, {})[d] = r
    columns = zip(*rows, strict=True)
    table = pa.table(dict(zip(["q_id", "group", "doc_id", "relevance"], columns, strict=True)))
    for name, qrels in (("path", str(qrels_jg)), ("dict", nested), ("arrow", table)):
        got = lodestar.evaluate(qrels, str(run), measures, judgment_groups=True)
        assert got.per_query == want, name
    # Without the measures, the averaged set; without the switch, refused.
    assert list(lodestar.evaluate(nested, str(run), judgment_groups=True).mean) == [
        "map_avgjg",
        "P_avgjg_5",
        "P_avgjg_10",
        "P_avgjg_15",
        "P_avgjg_20",
        "P_avgjg_30",
        "P_avgjg_100",
        "P_avgjg_200",
        "P_avgjg_500",
        "P_avgjg_1000",
        "Rprec_mult_avgjg_0.20",
        "Rprec_mult_avgjg_0.40",
        "Rprec_mult_avgjg_0.60",
        "Rprec_mult_avgjg_0.80",
        "Rprec_mult_avgjg_1.00",
        "Rprec_mult_avgjg_1.20",
        "Rprec_mult_avgjg_1.40",
        "Rprec_mult_avgjg_1.60",
        "Rprec_mult_avgjg_1.80",
        "Rprec_mult_avgjg_2.00",
    ]
    with pytest.raises(ValueError, match=r"give judgment_groups=True, with qrels that name"):
        lodestar.evaluate(str(qrels_jg), str(run), ["map_avgjg"])
    with pytest.raises(ValueError, match=r"judgment_groups=True evaluates the measures averaged"):
        lodestar.evaluate(str(qrels_jg), str(run), ["map"], judgment_groups=True)
    with pytest.raises(ValueError, match=r"q_id, doc_id, group"):
        lodestar.evaluate(table.drop(["group"]), str(run), measures, judgment_groups=True)


def test_lodestar_evaluate_warns_where_groups_withhold_the_tie_range(tmp_path):
    run, qrels_jg, per_group = _files(tmp_path, 7)
    measures = ["map_avgjg"]
    with pytest.warns(UserWarning, match="no tie range is given under judgment groups"):
        got = lodestar.evaluate(
            str(qrels_jg), str(run), measures, judgment_groups=True, tie_range=True
        )
    assert got.tie_range is None
    alone = lodestar.evaluate(
        str(per_group[0]), str(run), measures, judgment_groups=True, tie_range=True
    )
    low, high = alone.tie_range["map_avgjg"]
    assert low <= alone.mean["map_avgjg"] <= high and low < high


def test_the_group_field_is_read_the_same_by_both_readers(tmp_path):
    _, qrels_jg, _ = _files(tmp_path, 3)
    data = qrels_jg.read_bytes()
    regular = read._read_regular(
        str(qrels_jg), [(data, len(data))], len(data), qrels=True, groups=True
    )
    lines = read._read_lines(str(qrels_jg), data, qrels=True, groups=True)
    assert regular is not None
    assert regular.query_ids[:3] == [b"q0 alice", b"q0 bob", b"q1 alice"]
    for got in (regular, lines):
        pairs = [got.query_ids[c] for c in got.query]
        assert pairs == [b" ".join(line.split()[:2]) for line in data.splitlines()]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-R", "qrels_jg", "-m", "map"],
            "-R qrels_jg evaluates the measures averaged over judgment groups (map_avgjg, "
            "P_avgjg, Rprec_mult_avgjg, or -m qrels_jg); map is not one",
        ),
        (
            ["-m", "P_avgjg.10"],
            "P_avgjg_10 averages over judgment groups: give -R qrels_jg, with qrels that "
            "name each judgment's group (a qrels_jg file's second field)",
        ),
        (["-R", "prefs"], "argument -R/--rel-format: invalid choice: 'prefs'"),
    ],
)
def test_mixing_the_formats_is_a_usage_error(tmp_path, capsys, args, message):
    run, qrels_jg, _ = _files(tmp_path, 4)
    assert main(["evaluate", *args, str(qrels_jg), str(run)]) == 2
    assert message in capsys.readouterr().err


def test_a_duplicate_in_the_run_names_the_runs_own_query(tmp_path, capsys):
    run, qrels_jg, _ = _files(tmp_path, 5)
    lines = run.read_text().splitlines()
    run.write_text("\n".join([*lines, lines[0].replace(" 1 ", " 99 ")]) + "\n")
    assert main(["evaluate", "-R", "qrels_jg", str(qrels_jg), str(run)]) == 1
    err = capsys.readouterr().err
    assert f"{run}:{len(lines) + 1}:" in err
    assert "for query 'q0'" in err


def test_the_python_api_refuses_the_averaged_measures(tmp_path):
    import lodestar

    run, qrels_jg, _ = _files(tmp_path, 6)
    with pytest.raises(ValueError, match="map_avgjg averages over judgment groups"):
        lodestar.evaluate(str(qrels_jg), str(run), ["map_avgjg"])
