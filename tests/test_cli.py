"""``lodestar evaluate``: reading, conventions, measures, output, refusals.

Every value is checked against ``tests/oracles.py``: the tie-averaged values
against the mean over every tie-breaking order, and ``--ignore-ties`` against
the explicit trec_eval order (score descending, then docno descending). The
``--trec-eval`` definitions are checked against pytrec_eval in
``tests/test_trec_eval_agreement.py``. Tolerance: 1e-12 absolute (float64).
"""

import gzip
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lodestar import _files, _host_ranking
from lodestar._terminal import Progress
from lodestar._trec import batches, join, names, read
from lodestar._trec import evaluate as trec_evaluate
from lodestar.cli import DEFAULT_MEASURES, main

TOLERANCE = 1e-12
README = Path(__file__).resolve().parents[1] / "README.md"
DATA = Path(__file__).resolve().parents[1] / "src" / "lodestar" / "data"


def evaluate_json(capsys, *args):
    assert main(["evaluate", *args, "--json", "--per-query"]) == 0
    return json.loads(capsys.readouterr().out)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------- the example


def example_lists():
    """The bundled example as {qid: (scores, labels, docnos)}, read independently."""
    qrels = {}
    for line in (DATA / "example.qrels").read_text().splitlines():
        if line and not line.startswith("#"):
            q, _, d, r = line.split()
            qrels[(q, d)] = int(r)
    lists = {}
    for line in (DATA / "example.run").read_text().splitlines():
        if line and not line.startswith("#"):
            q, _, d, _, s, _ = line.split()
            scores, labels, docnos = lists.setdefault(q, ([], [], []))
            scores.append(float(s))
            labels.append(qrels.get((q, d), 0))
            docnos.append(d)
    judged = {q for q, _ in qrels}
    return {q: lists[q] for q in sorted(lists) if q in judged}


def trec_eval_order(scores, docnos):
    return sorted(range(len(scores)), key=lambda i: (-scores[i], [-ord(c) for c in docnos[i]]))


ORACLES = {
    "ndcg@3": lambda y, o: oracles.ndcg_of_order(y, o, k=3),
    "ndcg": oracles.ndcg_of_order,
    "dcg@2": lambda y, o: oracles.dcg_of_order(y, o, k=2),
    "mrr": lambda y, o: oracles.rr_of_order([r >= 1 for r in y], o),
    "map": lambda y, o: oracles.ap_of_order([r >= 1 for r in y], o),
    "P@2": lambda y, o: oracles.precision_of_order([r >= 1 for r in y], o, k=2),
    "recall@2": lambda y, o: oracles.recall_of_order([r >= 1 for r in y], o, k=2),
    "hits@1": lambda y, o: oracles.hits_of_order([r >= 1 for r in y], o, k=1),
    "err@3": lambda y, o: oracles.err_of_order(y, o, k=3, max_label=3),
}


def test_every_measure_matches_the_oracles_with_and_without_ties(capsys):
    averaged = evaluate_json(capsys, "--example", "-m", *ORACLES)
    ordered = evaluate_json(capsys, "--example", "-m", *ORACLES, "--ignore-ties")
    lists = example_lists()
    assert list(averaged["per_query"]) == list(lists) == ["q1", "q2", "q3", "q4"]
    for qid, (scores, labels, docnos) in lists.items():
        order = trec_eval_order(scores, docnos)
        for name, metric in ORACLES.items():
            expected = oracles.tie_average(metric, scores, labels)
            assert abs(averaged["per_query"][qid][name] - expected) <= TOLERANCE, (qid, name)
            expected = metric(labels, order)
            assert abs(ordered["per_query"][qid][name] - expected) <= TOLERANCE, (qid, name)
    for name in ORACLES:
        values = [averaged["per_query"][q][name] for q in lists]
        assert averaged["mean"][name] == pytest.approx(np.mean(values), abs=TOLERANCE)


def test_ties_change_the_example(capsys):
    # The example's scores are quantised: averaging and trec_eval's docno order
    # disagree on it, which is the point of the default.
    averaged = evaluate_json(capsys, "--example", "-m", "ndcg", "mrr")["mean"]
    ordered = evaluate_json(capsys, "--example", "-m", "ndcg", "mrr", "--ignore-ties")["mean"]
    assert averaged["ndcg"] > ordered["ndcg"] + 0.05
    assert averaged["mrr"] > ordered["mrr"] + 0.01


@pytest.mark.parametrize(
    "page", [README, *sorted((README.parent / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_pages_show_the_example_output(capsys, page):
    # Every console block of the README and the docs runs the bundled
    # examples and shows what the command prints today: none is illustrative.
    text = page.read_text()
    commands = re.findall(r"```console\n\$ (.*?)\n", text)
    blocks = re.findall(
        r"```console\n\$ lodestar (evaluate|compare) (--example.*?)\n(.*?)```", text, re.S
    )
    assert len(blocks) == len(commands), f"{page.name}: a console block runs no bundled example"
    if page == README:
        assert len(blocks) >= 2
    for command, args, shown in blocks:
        assert main([command, *args.split(), "--progress", "never"]) == 0
        assert capsys.readouterr().out == shown, f"{page.name}: lodestar {command} {args}"


# ---------------------------------------------------------------- conventions


QRELS = """\
a 0 d1 1
a 0 d2 0
b 0 d3 0
c 0 d4 2
"""
RUN = """\
a Q0 d1 2 0.2 t
a Q0 d2 1 0.9 t
b Q0 d3 1 0.5 t
x Q0 d9 1 0.5 t
"""


def test_queries_in_both_files_only_and_complete(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    both = evaluate_json(capsys, qrels, run, "-m", "mrr")
    # Ranked by score, not by the rank column: d1 is second. b has no
    # relevant document and counts 0; x has no qrels, c no run lines.
    assert both["per_query"] == {"a": {"mrr": 0.5}, "b": {"mrr": 0.0}}
    assert both["mean"]["mrr"] == 0.25
    complete = evaluate_json(capsys, qrels, run, "-m", "mrr", "--complete")
    assert complete["per_query"]["c"] == {"mrr": 0.0}
    assert complete["mean"]["mrr"] == pytest.approx(0.5 / 3, abs=TOLERANCE)


def test_dropped_queries_are_reported(tmp_path, capsys):
    main(["evaluate", write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN), "-m", "mrr"])
    err = capsys.readouterr().err
    assert "1 run query without judgments not evaluated: 'x'" in err
    assert "1 judged query missing from the run is not evaluated (see -c): 'c'" in err


def test_nothing_to_evaluate(tmp_path, capsys):
    qrels = write(tmp_path, "q", "a 0 d1 1\n")
    run = write(tmp_path, "r", "z Q0 d1 1 1.0 t\n")
    assert main(["evaluate", qrels, run]) == 1
    assert "nothing to evaluate" in capsys.readouterr().err
    assert evaluate_json(capsys, qrels, run, "-c", "-m", "ndcg")["mean"] == {"ndcg": 0.0}


def test_a_collection_size_past_int64_is_a_usage_error(tmp_path, capsys):
    # It ended in an OverflowError at the kernel's int64 num_documents.
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    assert main(["evaluate", qrels, run, "--trec-eval", "-N", str(2**63), "-m", "utility"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        f"lodestar: error: -N takes a number of documents of at most 2**63 - 1; got {2**63}"
    )
    assert main(["evaluate", qrels, run, "--trec-eval", "-N", str(2**63 - 1), "-m", "utility"]) == 0


def test_qrels_and_run_both_from_standard_input_is_a_usage_error(capsys):
    # Read twice, standard input left the run empty: "nothing to evaluate".
    assert main(["evaluate", "-", "-", "-m", "map"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lodestar: error: '-' is given more than once, but standard input can be read only "
        "once; give the other files as paths",
        "lodestar: see 'lodestar evaluate --help'",
    ]


def test_empty_run_file_with_complete(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", "")
    result = evaluate_json(capsys, qrels, run, "-c", "-m", *DEFAULT_MEASURES)
    assert result["num_q"] == 3
    assert set(result["mean"].values()) == {0.0}


def test_negative_relevance_refused_unless_trec_eval(tmp_path, capsys):
    qrels = write(tmp_path, "q", "a 0 d1 1\na 0 d2 -2\n")
    run = write(tmp_path, "r", "a Q0 d2 1 0.9 t\na Q0 d1 2 0.1 t\n")
    assert main(["evaluate", qrels, run]) == 1
    err = capsys.readouterr().err
    assert f"{qrels}:2: relevance -2 is negative" in err and "--trec-eval" in err
    assert evaluate_json(capsys, qrels, run, "--trec-eval", "-m", "mrr")["mean"] == {"mrr": 0.5}


def test_trec_eval_definitions_differ_where_documented(tmp_path, capsys):
    # d3 (relevant) is judged but not retrieved: trec_eval's ideal, AP and
    # recall count it; lodestar's own definitions look at the list only.
    qrels = write(tmp_path, "q", "a 0 d1 1\na 0 d2 0\na 0 d3 2\n")
    run = write(tmp_path, "r", "a Q0 d1 1 0.9 t\na Q0 d2 2 0.5 t\n")
    measures = ["-m", "ndcg", "map", "recall@5"]
    ours = evaluate_json(capsys, qrels, run, *measures)["mean"]
    theirs = evaluate_json(capsys, qrels, run, *measures, "--trec-eval")["mean"]
    assert ours == {"ndcg": 1.0, "map": 1.0, "recall@5": 1.0}
    ideal = 2 + 1 / np.log2(3)
    assert theirs["ndcg"] == pytest.approx(1 / ideal, abs=TOLERANCE)
    assert theirs["map"] == 0.5
    assert theirs["recall@5"] == 0.5


def test_relevance_level(tmp_path, capsys):
    qrels = write(tmp_path, "q", "a 0 d1 1\na 0 d2 2\n")
    run = write(tmp_path, "r", "a Q0 d1 1 0.9 t\na Q0 d2 2 0.5 t\n")
    assert evaluate_json(capsys, qrels, run, "-m", "mrr", "-l", "2")["mean"] == {"mrr": 0.5}


# ---------------------------------------------------------------- reading


@pytest.mark.parametrize(
    ("run", "line", "message"),
    [
        (
            "a Q0 d1 1 0.5\n",
            1,
            "expected 6 or more fields (qid Q0 docno rank score runid), got 5 fields",
        ),
        ("# c\n\na Q0 d1 1\n", 3, "expected 6 or more fields"),
        ("a Q0 d1 1 0.5 t\na Q0 d2 2 abc t\n", 2, "expected a finite number as the score"),
        ("a Q0 d1 1 nan t\n", 1, "got 'nan'"),
        ("a Q0 d1 1 inf t\n", 1, "got 'inf'"),
        ("a Q0 d1 1 1e999 t\n", 1, "got '1e999'"),
        ("a Q0 d1 1 1_0 t\n", 1, "got '1_0'"),
    ],
)
def test_malformed_run_lines(tmp_path, run, line, message):
    path = write(tmp_path, "run.txt", run)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}: ") + ".*" + re.escape(message)):
        read.read_run(path)


@pytest.mark.parametrize(
    ("qrels", "line", "message"),
    [
        ("a 0 d1\n", 1, "expected 4 fields (qid iter docno rel), got 3 fields"),
        ("a 0 d1 1 extra\n", 1, "expected 4 fields (qid iter docno rel), got 5 fields"),
        ("a 0 d1 1\na 0 d2 1.5\n", 2, "expected an integer relevance (field 4), got '1.5'"),
        ("a 0 d1 x\n", 1, "expected an integer relevance (field 4), got 'x'"),
    ],
)
def test_malformed_qrels_lines(tmp_path, qrels, line, message):
    path = write(tmp_path, "qrels.txt", qrels)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}: {message}")):
        read.read_qrels(path)


def test_command_line_reports_malformed_input(tmp_path, capsys):
    qrels = write(tmp_path, "q", QRELS)
    run = write(tmp_path, "r", "a Q0 d1 1\n")
    assert main(["evaluate", qrels, run]) == 1
    assert f"error: {run}:1: expected 6 or more fields" in capsys.readouterr().err


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_duplicate_documents_refused(tmp_path, capsys, which):
    qrels = "a 0 d1 1\nb 0 d1 1\n" + ("a 0 d1 0\n" if which == "qrels" else "")
    run = "a Q0 d1 1 0.5 t\nb Q0 d1 1 0.5 t\n" + ("a Q0 d1 2 0.4 t\n" if which == "run" else "")
    paths = {"qrels": write(tmp_path, "q", qrels), "run": write(tmp_path, "r", run)}
    assert main(["evaluate", paths["qrels"], paths["run"]]) == 1
    assert (
        f"{paths[which]}:3: document 'd1' appears twice for query 'a' (first on line 1)"
        in capsys.readouterr().err
    )


def test_comments_blank_lines_and_gzip(tmp_path):
    lines = [f"q{i % 7} Q0 doc{i} {i} {i / 3!r} tag" for i in range(300)]
    text = "# header\n\n" + "\n".join(lines[:150]) + "\n   # indented comment\n"
    text += "\t\n" + "\r\n".join(lines[150:])  # CRLF and no final newline
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(text.encode()))
    run = read.read_run(path)
    docnos = run.docnos.to_pylist()
    assert [docnos[d].decode() for d in run.docno] == [f"doc{i}" for i in range(300)]
    np.testing.assert_array_equal(run.values, np.arange(300) / 3)
    expected_lines = [3 + i for i in range(150)] + [155 + i for i in range(150)]
    assert [run.line(i) for i in range(300)] == expected_lines
    assert [run.query_ids[q].decode() for q in run.query] == [f"q{i % 7}" for i in range(300)]


# ---------------------------------------------------------------- measures and batches


@pytest.mark.parametrize(
    ("text", "reported", "key", "k"),
    [
        ("ndcg@10", ["ndcg@10"], "ndcg", [10]),
        ("NDCG@10", ["NDCG@10"], "ndcg", [10]),
        ("ndcg_cut_10", ["ndcg_cut_10"], "ndcg", [10]),
        ("ndcg_cut.10", ["ndcg_cut_10"], "ndcg", [10]),
        ("ndcg_cut.20,5,20", ["ndcg_cut_5", "ndcg_cut_20"], "ndcg", [5, 20]),
        ("P_5", ["P_5"], "P", [5]),
        ("p@5", ["p@5"], "P", [5]),
        ("P.5,10", ["P_5", "P_10"], "P", [5, 10]),
        ("recip_rank", ["recip_rank"], "mrr", [None]),
        ("recall_100", ["recall_100"], "recall", [100]),
        ("map", ["map"], "map", [None]),
        ("map_cut.10", ["map_cut_10"], "map", [10]),
        ("success_1", ["success_1"], "hits", [1]),
        ("err@20", ["err@20"], "err", [20]),
        ("mrr", ["mrr"], "mrr", [None]),
    ],
)
def test_measure_names_are_reported_as_asked(text, reported, key, k):
    requests = names.parse(text)
    assert [r.name for r in requests] == reported
    assert {r.measure.key for r in requests} == {key}
    assert [r.k for r in requests] == k


@pytest.mark.parametrize(
    ("text", "family"),
    [("P", "P"), ("ndcg_cut", "ndcg_cut"), ("recall", "recall"), ("map_cut", "map_cut")],
)
def test_a_bare_trec_eval_family_means_its_default_cutoffs(text, family):
    # As in trec_eval: -m P is P_5 ... P_1000, not the uncut measure.
    requests = names.parse(text)
    assert [r.k for r in requests] == [5, 10, 15, 20, 30, 100, 200, 500, 1000]
    assert [r.name for r in requests] == [
        f"{family}_{k}" for k in [5, 10, 15, 20, 30, 100, 200, 500, 1000]
    ]
    assert [r.k for r in names.parse("success")] == [1, 5, 10]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndgc", "unknown measure 'ndgc'"),
        ("ndcg@", "the cut-off '' is not a whole number"),
        ("ndcg@x", "the cut-off 'x' is not a whole number"),
        ("P@0", "cut-off 0; a cut-off must be at least 1"),
        ("@10", "unknown measure '@10'"),
        ("P.5,x", "the cut-off 'x' is not a number"),
        ("map.10", "measure 'map' takes no parameters"),
    ],
)
def test_unknown_measures(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        names.parse(text)


def test_each_reported_name_once_first_wins():
    requests = names.parse_all(["P_10", "P.5,10", "map", "map"])
    assert [r.name for r in requests] == ["P_10", "P_5", "map"]


def test_buckets_keep_long_lists_apart():
    lengths = np.array([3] * 40 + [1000] + [20] * 5)
    plan = batches.plan(lengths, batch_items=4096, merge_items=4096)
    assert [(b.width, len(b.queries), b.batches) for b in plan] == [(32, 45, 1), (1024, 1, 1)]
    plan = batches.plan(lengths, batch_items=1 << 20, merge_items=1 << 20)
    assert [(b.width, len(b.queries)) for b in plan] == [(1024, 46)]


def test_buckets_merge_by_their_whole_size_and_are_cut_into_small_batches():
    # Merging saves a kernel; a small batch keeps each kernel's scratch memory
    # reused (decision 0040). A run of every length from 1 to 1,000 makes few
    # shapes, as before batches were small.
    lengths = np.array([3] * 40 + [1000] + [20] * 5)
    plan = batches.plan(lengths, batch_items=4096)
    assert [(b.width, len(b.queries), b.rows, b.batches) for b in plan] == [(1024, 46, 4, 12)]
    lengths = np.random.default_rng(0).integers(1, 1001, 10_000)
    plan = batches.plan(lengths)
    assert len(plan) <= 3
    assert all(b.rows * b.width <= batches.BATCH_ITEMS for b in plan)


def test_a_document_judged_nowhere_takes_no_judgment_of_the_query_before(tmp_path):
    # Run documents are looked up by (query, code among the qrels' docnos);
    # one the qrels never judge has no code (-1), and query * width - 1 is
    # the key of the previous query's last judged docno: it must stay unjudged.
    run = read.read_run(write(tmp_path, "r", "a Q0 x 1 2.0 t\nb Q0 new 1 1.0 t\n"))
    qrels = read.read_qrels(write(tmp_path, "q", "a 0 x 0\na 0 y 2\nb 0 x 1\n"))
    joined = join.join(qrels, run)
    assert joined.query_ids == [b"a", b"b"]
    assert joined.retrieved.items["grade"].tolist() == [0, 0]
    assert joined.retrieved.items["pooled"].tolist() == [True, False]
    assert joined.retrieved.items["judged"].tolist() == [True, False]


@given(
    layout=st.sampled_from(["down", "up", "shuffled"]),
    lists=st.lists(
        st.lists(
            st.tuples(
                st.sampled_from([2.5, 1.0, 0.0, -0.0, -1.0, 1e300]),
                st.text("ab\u00e9~0", min_size=1, max_size=3),
            ),
            max_size=12,
            unique_by=lambda item: item[1],
        ),
        min_size=1,
        max_size=4,
    ),
    complete=st.booleans(),
    docno_rank=st.booleans(),
    data=st.randoms(use_true_random=False),
)
@settings(max_examples=150, deadline=None)
def test_ties_are_ranked_by_descending_docno_however_the_run_is_laid_out(
    tmp_path_factory, layout, lists, complete, docno_rank, data
):
    # --ignore-ties ranks tied documents by descending docno, as trec_eval
    # does. The join arranges only the tied documents when each query's
    # scores run down (or up) the file, and every docno otherwise; either
    # way the grades, one per document here, come out in trec_eval's order,
    # and so does relstring's order (score, then the item docno_rank).
    tmp_path = tmp_path_factory.mktemp("ties")
    lines, grades = [], {}
    for q, items in enumerate(lists):
        if layout == "shuffled":
            data.shuffle(items)
        else:
            items = sorted(items, key=lambda item: item[0], reverse=layout == "down")
        for score, docno in items:
            lines.append(f"q{q} Q0 {docno} 0 {score!r} t\n")
            grades[(f"q{q}", docno)] = len(grades)
    qrels = [f"{q} 0 {d} {g}\n" for (q, d), g in grades.items()] + ["z 0 d 1\n"]
    joined = join.join(
        read.read_qrels(write(tmp_path, "q", "".join(qrels))),
        read.read_run(write(tmp_path, "r", "".join(lines))),
        docno_order=True,
        complete=complete,
        docno_rank=docno_rank,
    )
    offsets = joined.retrieved.offsets
    for position, query in enumerate(joined.query_ids):
        if query == b"z":  # judged, never retrieved: evaluated only when complete
            assert complete and offsets[position] == offsets[position + 1]
            continue
        span = slice(offsets[position], offsets[position + 1])
        score = joined.retrieved.items["score"][span]
        grade = joined.retrieved.items["grade"][span]
        ranked = sorted(range(len(score)), key=lambda i: (-score[i], -i))
        by_docno = sorted(lists[int(query[1:])], key=lambda item: item[1].encode(), reverse=True)
        trec_eval = [grades[(query.decode(), d)] for _, d in sorted(by_docno, key=lambda i: -i[0])]
        assert [grade[i] for i in ranked] == trec_eval
        if docno_rank:
            docno = joined.retrieved.items["docno_rank"][span]
            assert grade[_host_ranking.host_trec_order(score, docno)].tolist() == trec_eval


def test_results_do_not_depend_on_batching(tmp_path):
    rng = np.random.default_rng(0)
    qrels, run = [], []
    for q in range(30):
        for d in range(int(rng.integers(1, 80))):
            run.append(f"q{q} Q0 d{d} 0 {rng.integers(0, 5) / 4} t\n")
            if rng.random() < 0.5:
                qrels.append(f"q{q} 0 d{d} {rng.integers(0, 3)}\n")
    joined = join.join(
        read.read_qrels(write(tmp_path, "q", "".join(qrels))),
        read.read_run(write(tmp_path, "r", "".join(run))),
    )
    requests = names.parse_all(["ndcg@5", "map", "P@3", "err@4"])
    definitions = trec_evaluate.Definitions()
    whole = trec_evaluate.evaluate_queries(joined, requests, definitions, max_grade=2)
    steps = []
    split = trec_evaluate.evaluate_queries(
        joined,
        requests,
        definitions,
        max_grade=2,
        batch_items=64,
        progress=lambda done, total: steps.append((done, total)),
    )
    plan = batches.plan(joined.retrieved.lengths, batch_items=64)
    total = sum(b.batches for b in plan)
    assert total > 5 and steps == [(i, total) for i in range(total + 1)]
    for name in whole:
        np.testing.assert_allclose(split[name], whole[name], rtol=0, atol=TOLERANCE)


# ---------------------------------------------------------------- output and entry points


def test_table_layout(capsys):
    assert main(["evaluate", "--example", "-m", "mrr", "P@2", "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "mrr                   \tq1\t0.8333"  # 2 of 3 tied are relevant
    assert lines[-3] == "num_q                 \tall\t4"
    assert [line.split("\t")[0].strip() for line in lines[-2:]] == ["mrr", "P@2"]
    assert len(lines) == 4 * 2 + 3


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["evaluate"]) == 2
    assert "give QRELS and RUN, or --example" in capsys.readouterr().err
    assert main(["evaluate", "--example", "-m", "bogus"]) == 2
    assert "unknown measure 'bogus'" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "missing"), str(tmp_path / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["evaluate", "--example", "-M", "0"]) == 2
    assert main(["evaluate", "--example", "--bogus-option"]) == 2


def test_python_dash_m():
    completed = subprocess.run(
        [sys.executable, "-m", "lodestar", "evaluate", "--example", "-m", "P@2"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert completed.stdout.splitlines()[-1].split("\t") == ["P@2".ljust(22), "all", "0.4792"]


def test_progress_bar_only_when_wanted():
    class Stream:
        def __init__(self, tty):
            self.tty, self.text = tty, ""

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    for mode, tty, drawn in [
        ("always", False, True),
        ("never", True, False),
        ("auto", False, False),
    ]:
        stream = Stream(tty)
        progress = Progress(mode=mode, stream=stream)
        progress.begin("evaluating")
        progress(0, 4)
        progress(1, 4)
        progress(4, 4)
        progress.close()
        assert ("4/4 batches" in stream.text) is drawn, mode
        assert stream.text.endswith("\n") is drawn


def test_a_stage_without_steps_shows_its_time_growing():
    # Reading and parsing a file, or loading JAX, count no steps: the line is
    # redrawn while the stage runs, and not once it is closed.
    stream = io.StringIO()
    progress = Progress(mode="always", stream=stream)
    progress.begin("reading run.txt")
    time.sleep(0.8)
    progress.close()
    drawn = [line for line in stream.getvalue().split("\r") if line]
    assert len(drawn) >= 3, drawn
    seconds = [float(line.split()[-2]) for line in drawn]
    assert seconds == sorted(seconds) and seconds[-1] >= 0.5, drawn
    closed = stream.getvalue()
    time.sleep(0.6)
    assert stream.getvalue() == closed


@pytest.mark.parametrize("compressed", [False, True])
def test_progress_follows_the_bytes_of_reading_and_parsing_a_file(
    tmp_path, capsys, monkeypatch, compressed
):
    # A gzip run is read in blocks, then parsed in pieces; a plain one is
    # read and parsed in one pass, a piece at a time, shown as its parsing.
    # The progress line shows the stages' bytes, rising to the file's size.
    monkeypatch.setattr(_files, "READ_BLOCK", 1 << 12)
    monkeypatch.setattr(read, "PARSE_PIECE", 1 << 13)
    text = "".join(f"q{i % 5} Q0 d{i} {i + 1} {1 - i / 4000:.6f} sys\n" for i in range(1500))
    run = str(tmp_path / "run")
    Path(run).write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    qrels = write(tmp_path, "qrels", "".join(f"q{i} 0 d{i} 1\n" for i in range(5)))
    assert main(["evaluate", qrels, run, "--progress", "always", "-m", "map"]) == 0
    drawn = capsys.readouterr().err.split("\r")
    sizes = {"reading": Path(run).stat().st_size / 1e3, "parsing": len(text) / 1e3}
    for stage, size in sizes.items():
        counts = [
            tuple(map(float, m.groups()))
            for line in drawn
            if line.startswith(f"{stage} {run} [")
            for m in [re.search(r"\] ([\d.]+)/([\d.]+) kB", line)]
        ]
        assert len(counts) >= (3 if compressed or stage == "parsing" else 1), stage
        assert [done for done, _ in counts] == sorted(done for done, _ in counts), stage
        assert counts[-1] == (round(size, 1), round(size, 1)), stage
