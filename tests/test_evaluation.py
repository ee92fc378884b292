"""``lodestar.evaluate`` and ``lodestar.compare``: every kind of source, the command line's numbers.

The Python API and ``lodestar evaluate`` share the reader, the join and the
kernels, so their values must be **bitwise** equal. Against pytrec_eval
(trec_eval's C code) with ``trec_eval=True, ignore_ties=True`` and distinct
float32 scores: 1e-9 absolute per query, as in test_trec_eval_agreement.py.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lodestar
from lodestar import _registry, stats
from lodestar._trec import names
from lodestar.cli import main

MEASURES = ["ndcg@10", "ndcg", "mrr", "map", "P@5", "recall@20", "err@10"]


def generate(seed, *, queries=12, tied=True):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(queries):
        qid = f"q{q:02d}"
        pool = [f"d{d}" for d in rng.choice(80, size=int(rng.integers(2, 60)), replace=False)]
        qrels[qid] = {d: int(r) for d, r in zip(pool, rng.integers(0, 4, len(pool)), strict=True)}
        retrieved = [d for d in pool if rng.random() < 0.7] + [f"x{i}" for i in range(5)]
        scores = rng.integers(0, 6, len(retrieved)) / 5 if tied else rng.permutation(len(retrieved))
        run[qid] = {d: float(s) for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


def write_trec(tmp_path, qrels, run):
    qrels_path, run_path = tmp_path / "qrels", tmp_path / "run"
    qrels_path.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    run_path.write_text(
        "".join(f"{q} Q0 {d} 1 {s!r} tag\n" for q, docs in run.items() for d, s in docs.items())
    )
    return str(qrels_path), str(run_path)


def frames(qrels, run):
    rows_q = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    rows_r = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    qrels_table = pa.table(
        dict(zip(["q_id", "doc_id", "relevance"], zip(*rows_q, strict=True), strict=True))
    )
    run_table = pa.table(
        dict(zip(["q_id", "doc_id", "score"], zip(*rows_r, strict=True), strict=True))
    )
    return qrels_table, run_table


@pytest.mark.parametrize("ignore_ties", [False, True])
def test_every_source_gives_the_command_lines_values_bitwise(tmp_path, capsys, ignore_ties):
    qrels, run = generate(1)
    paths = write_trec(tmp_path, qrels, run)
    options = ["--ignore-ties"] if ignore_ties else []
    assert main(["evaluate", *paths, "-m", *MEASURES, "-q", "--json", *options]) == 0
    cli = json.loads(capsys.readouterr().out)
    qrels_table, run_table = frames(qrels, run)
    sources = {
        "paths": paths,
        "dicts": (qrels, run),
        "arrow": (qrels_table, run_table),
    }
    try:
        sources["pandas"] = (qrels_table.to_pandas(), run_table.to_pandas())
    except ImportError:  # pandas is optional: the other sources still run
        pass
    for name, (q, r) in sources.items():
        result = lodestar.evaluate(q, r, MEASURES, ignore_ties=ignore_ties)
        assert result.per_query == cli["per_query"], name
        assert result.mean == cli["mean"], name
        assert list(result.query_ids) == list(cli["per_query"])


# Options of the command line that shape only its output, with no Python
# keyword: an Evaluation or a Comparison holds every value, and prints nothing.
PRESENTATION_ONLY = {
    "help",
    "qrels",  # a positional argument of both
    "run",
    "runs",
    "per_query",  # Evaluation.per_query holds them
    "json",  # Evaluation and Comparison.to_dict()
    "plot",
    "example",
    "progress",
    "format",  # Comparison.format()
}
# An option whose Python keyword says what it means rather than trec_eval's letter.
KEYWORD_OF = {"rel_format": "judgment_groups"}


def _cli_options(command):
    import argparse

    from lodestar import cli

    parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {action.dest: action for action in commands.choices[command]._actions}


@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_every_option_of_the_command_has_its_python_keyword(command):
    import inspect

    function = lodestar.evaluate if command == "evaluate" else lodestar.compare
    keywords = inspect.signature(function).parameters
    options = _cli_options(command)
    missing = [
        dest
        for dest in options
        if dest not in PRESENTATION_ONLY and KEYWORD_OF.get(dest, dest) not in keywords
    ]
    assert not missing, f"{command}: options without a keyword of lodestar.{command}: {missing}"
    # Defaults agree where both have one (the measures default is the
    # command's own list: None in Python, expanded the same way).
    for dest, action in options.items():
        keyword = KEYWORD_OF.get(dest, dest)
        if dest in PRESENTATION_ONLY or dest == "measures" or keyword not in keywords:
            continue
        default = keywords[keyword].default
        if dest == "rel_format":
            assert (action.default == "qrels_jg") is default
        else:
            assert action.default == default or (action.default is False and default is False), (
                command,
                dest,
                action.default,
                default,
            )


def test_the_definitions_options_give_the_command_lines_values_bitwise(tmp_path, capsys):
    qrels, run = generate(5)
    # Scores apart by less than float32 can tell: --single-precision ties them.
    close = {q: {d: 0.5 + i * 1e-12 for i, d in enumerate(docs)} for q, docs in run.items()}
    measures = ["map", "P@5", "err@10", "utility.1,-1,0,0.5", "ndcg"]
    cases = [
        (run, ["-J"], {"judged_only": True}),
        (run, ["-N", "500"], {"num_documents": 500}),
        (run, ["--err-max-label", "6"], {"err_max_label": 6.0}),
        (close, ["--single-precision"], {"single_precision": True}),
        (
            run,
            ["-J", "--trec-eval", "-l", "2"],
            {"judged_only": True, "trec_eval": True, "relevance_level": 2},
        ),
    ]
    for index, (ranking, flags, keywords) in enumerate(cases):
        directory = tmp_path / str(index)
        directory.mkdir()
        paths = write_trec(directory, qrels, ranking)
        assert main(["evaluate", *paths, "-m", *measures, "-q", "--json", *flags]) == 0
        cli = json.loads(capsys.readouterr().out)
        got = lodestar.evaluate(*paths, measures, **keywords)
        assert got.per_query == cli["per_query"], flags
        assert got.mean == cli["mean"], flags
        plain = lodestar.evaluate(*paths, measures)
        assert got.mean != plain.mean, f"{flags} changed nothing: the case tests nothing"
        for name, value in keywords.items():
            assert got.options[name] == value


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"judged_only": True, "max_documents": 5},
            ValueError,
            "judged_only and max_documents together are not supported; give one of them",
        ),
        (
            {"num_documents": -1},
            lodestar.InvalidParameterError,
            "The 'num_documents' parameter of evaluate must be an int in the range "
            "[0, 9223372036854775807] or None",
        ),
        (
            {"err_max_label": 0.0},
            lodestar.InvalidParameterError,
            "The 'err_max_label' parameter of evaluate must be a float in the range (0.0, inf)",
        ),
        (
            {"judgment_groups": 1},
            lodestar.InvalidParameterError,
            "The 'judgment_groups' parameter of evaluate must be an instance of 'bool'",
        ),
        (
            {"single_precision": "yes"},
            lodestar.InvalidParameterError,
            "The 'single_precision' parameter of evaluate must be an instance of 'bool'",
        ),
    ],
)
def test_the_definitions_options_are_checked(options, error, message):
    qrels, run = generate(6)
    with pytest.raises(error, match=re.escape(message)):
        lodestar.evaluate(qrels, run, ["map"], **options)


def test_complete_and_the_query_conventions(tmp_path):
    qrels = {"a": {"d1": 1}, "b": {"d2": 1}, "c": {"d3": 0}}
    run = {"a": {"d1": 0.5}, "b": {"d9": 0.5}, "z": {"d1": 0.5}}
    some = lodestar.evaluate(qrels, run, ["mrr"])
    assert some.query_ids == ("a", "b")
    assert some.missing_from_run == ("c",) and some.missing_from_qrels == ("z",)
    every = lodestar.evaluate(qrels, run, ["mrr"], complete=True)
    assert every.query_ids == ("a", "b", "c")
    assert every.mean == {"mrr": pytest.approx(1 / 3)}


def test_to_pandas():
    pandas = pytest.importorskip("pandas")
    qrels, run = generate(2)
    result = lodestar.evaluate(qrels, run, ["map", "P@5"])
    frame = result.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == ["map", "P@5"] and frame.index.name == "q_id"
    assert frame["map"].mean() == pytest.approx(result.mean["map"], abs=1e-15)


def test_integer_and_bytes_ids_and_non_utf8():
    qrels = {1: {10: 1, 11: 0}, b"q\xff": {b"d": 1}}
    run = {1: {10: 0.2, 11: 0.9}, b"q\xff": {b"d": 0.1}}
    result = lodestar.evaluate(qrels, run, ["mrr"])
    assert result.per_query["1"] == {"mrr": 0.5}
    weird = [q for q in result.query_ids if q != "1"][0]
    assert weird.encode("utf-8", "surrogateescape") == b"q\xff"


@pytest.mark.parametrize(
    ("qrels", "run", "error", "message"),
    [
        (
            {"q": {"d": 1.5}},
            {"q": {"d": 1.0}},
            ValueError,
            "qrels: query 'q', document 'd': expected an integer relevance, got '1.5'",
        ),
        (
            {"q": {"d": 1}},
            {"q": {"c": 2.0, "d": float("nan")}},
            ValueError,
            "run: query 'q', document 'd': expected a finite number as the score, got 'nan'",
        ),
        ({"q": [1]}, {"q": {"d": 1.0}}, TypeError, "query 'q' maps to list"),
        ({"q": {"d": 1}}, {"q": {None: 1.0}}, TypeError, "document ids must be str, bytes or int"),
        (
            {"q": {"d": 1}},
            42,
            TypeError,
            "run must be a path, a dict, a pandas DataFrame or a pyarrow Table",
        ),
        (
            {"q": {"d": 1}},
            {"z": {"d": 1.0}},
            ValueError,
            "no query is in both the qrels and the run 'run', so there is nothing to evaluate",
        ),
        ({"q": {"d": 1}}, {"q": {"d": 1.0}, "r": {}}, ValueError, None),
    ],
)
def test_refusals(qrels, run, error, message):
    if message is None:  # an empty list in a dict is a query with no document
        assert lodestar.evaluate(qrels, run, ["mrr"]).mean == {"mrr": 1.0}
        return
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        lodestar.evaluate(qrels, run, ["mrr"])


@pytest.mark.parametrize(
    "relevance",
    [np.uint64(2**63 + 5), 2**63 + 5, np.array([2**63 + 5], np.uint64), -(2**63) - 5],
)
def test_a_relevance_past_int64_is_refused_as_in_a_file(relevance, tmp_path):
    # NumPy holds 2**63 + 5 as uint64, which once wrapped round to a negative
    # judgment: unjudged, and map 0.0 instead of 1.0 or a refusal.
    if isinstance(relevance, np.ndarray):
        qrels = {"q_id": ["q1"], "doc_id": ["a"], "relevance": relevance}
        qrels = pytest.importorskip("pandas").DataFrame(qrels)
        shown = relevance[0]
    else:
        qrels, shown = {"q1": {"a": relevance}}, relevance
    message = f"qrels: query 'q1', document 'a': relevance {shown} is out of range"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        lodestar.evaluate(qrels, {"q1": {"a": 1.0}}, ["map"], trec_eval=True)
    path = tmp_path / "qrels"
    path.write_text(f"q1 0 a {shown}\n")
    with pytest.raises(ValueError, match=f"relevance {shown} is out of range"):
        lodestar.evaluate(str(path), {"q1": {"a": 1.0}}, ["map"], trec_eval=True)


@pytest.mark.parametrize("relevance", [1e308, float("inf"), float("nan"), 1.0])
def test_a_real_relevance_is_refused_as_in_a_file(relevance):
    message = f"qrels: query 'q1', document 'a': expected an integer relevance, got '{relevance}'"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        lodestar.evaluate({"q1": {"a": relevance}}, {"q1": {"a": 1.0}}, ["map"], trec_eval=True)


@pytest.mark.parametrize(
    ("relevance", "value"),
    [(2**63 - 1, 1.0), (np.int64(-(2**63)), 0.0), (np.uint64(2**63 - 1), 1.0), (np.uint64(3), 1.0)],
)
def test_relevance_at_int64s_ends_is_a_judgment(relevance, value):
    # As in a file: -2**63 is a negative judgment, read as unjudged by trec_eval's rules.
    mean = lodestar.evaluate({"q1": {"a": relevance}}, {"q1": {"a": 1.0}}, ["map"], trec_eval=True)
    assert mean.mean == {"map": value}


def test_compare_names_the_run_that_shares_no_query():
    qrels, run = generate(3)
    stranger = {"elsewhere": {"d": 1.0}}
    with pytest.raises(ValueError, match="the run 'run2', so there is nothing to evaluate"):
        lodestar.compare(qrels, [run, stranger], ["map"])


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"max_documents": 0}, "max_documents", "[1, inf) or None. Got 0 instead."),
        ({"max_documents": -1}, "max_documents", "[1, inf) or None. Got -1 instead."),
        ({"max_documents": 1.5}, "max_documents", "[1, inf) or None. Got 1.5 instead."),
        ({"max_documents": True}, "max_documents", "[1, inf) or None. Got True instead."),
        ({"relevance_level": None}, "relevance_level", "[0, inf). Got None instead."),
        ({"relevance_level": -1}, "relevance_level", "[0, inf). Got -1 instead."),
        ({"relevance_level": 0.5}, "relevance_level", "[0, inf). Got 0.5 instead."),
        (
            {"num_documents": 2**63},
            "num_documents",
            "[0, 9223372036854775807] or None. Got 9223372036854775808 instead.",
        ),
    ],
)
@pytest.mark.parametrize("function", ["evaluate", "compare"])
def test_options_are_checked_in_scikit_learns_words(function, options, error, message):
    qrels, run = generate(43)
    if function == "compare" and {"max_documents", "num_documents"} & set(options):
        pytest.skip("compare has no max_documents or num_documents")
    text = f"The '{error}' parameter of {function} must be an int in the range {message}"
    with pytest.raises(lodestar.InvalidParameterError, match=re.escape(text)):
        if function == "evaluate":
            lodestar.evaluate(qrels, run, ["map"], **options)
        else:
            lodestar.compare(qrels, {"a": run, "b": run}, ["map"], **options)


@pytest.mark.parametrize("measures", [3, ["map", None]])
def test_measures_must_be_names(measures):
    qrels, run = generate(43)
    with pytest.raises(TypeError, match="measures must be a measure name or a sequence of them"):
        lodestar.evaluate(qrels, run, measures)


def test_no_measures_are_the_command_lines_default_six():
    qrels, run = generate(43)
    got = lodestar.evaluate(qrels, run)
    assert list(got.mean) == ["ndcg@10", "ndcg", "mrr", "map", "P@10", "recall@100"]
    assert got.mean == lodestar.evaluate(qrels, run, list(got.mean)).mean


def test_a_bytes_path_is_a_path(tmp_path):
    qrels, run = generate(44)
    qrels_path, run_path = write_trec(tmp_path, qrels, run)
    by_bytes = lodestar.evaluate(os.fsencode(qrels_path), os.fsencode(run_path), ["map"])
    assert by_bytes.mean == lodestar.evaluate(qrels_path, run_path, ["map"]).mean


def test_unknown_measure():
    with pytest.raises(ValueError, match="unknown measure 'ndgc'"):
        lodestar.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["ndgc"])


def test_all_trec_gives_every_measure_and_relstring_by_name_is_refused(tmp_path, capsys):
    # trec_eval's -m all_trec holds the report's relstring line; in Python it
    # is left out, as runid and num_q are, and the measures are the command
    # line's to the last bit.
    paths = write_trec(tmp_path, *generate(6, tied=False))
    result = lodestar.evaluate(*paths, "all_trec", trec_eval=True, ignore_ties=True)
    assert (
        main(["evaluate", *paths, "-m", "all_trec", "--trec-eval", "--ignore-ties", "--json"]) == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert result.mean == document["mean"] and len(result.mean) > 90
    with pytest.raises(ValueError, match="relstring is a line of the command line's report"):
        lodestar.evaluate(*paths, ["map", "relstring.20"])


def test_table_without_the_columns():
    table = pa.table({"qid": ["q"], "docno": ["d"], "score": [1.0]})
    with pytest.raises(ValueError, match="run needs columns q_id, doc_id and score"):
        lodestar.evaluate({"q": {"d": 1}}, table)


def test_agrees_with_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = generate(3, queries=20, tied=False)
    names = {
        "ndcg": "ndcg",
        "ndcg@10": "ndcg_cut_10",
        "map": "map",
        "P@5": "P_5",
        "mrr": "recip_rank",
    }
    ours = lodestar.evaluate(qrels, run, list(names), trec_eval=True, ignore_ties=True)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
    for qid, values in ours.per_query.items():
        for name, trec_name in names.items():
            assert values[name] == pytest.approx(theirs[qid][trec_name], abs=1e-9), (qid, name)


def test_compare_tests_the_evaluated_values():
    qrels, base = generate(4, queries=15)
    rng = np.random.default_rng(9)
    better = {
        q: {d: s + rng.random() * (d.startswith("d")) for d, s in docs.items()}
        for q, docs in base.items()
    }
    runs = {"base": base, "better": better}
    comparison = lodestar.compare(qrels, runs, ["map", "ndcg@10"], test="t")
    expected = stats.compare_scores(
        {
            name: lodestar.evaluate(qrels, run, ["map", "ndcg@10"]).values
            for name, run in runs.items()
        },
        test="t",
    )
    np.testing.assert_array_equal(comparison.p_values, expected.p_values)
    assert comparison.queries == 15


def test_compare_uses_the_queries_of_every_run_and_refuses_too_few():
    qrels = {f"q{i}": {"a": 1} for i in range(4)}
    one = {f"q{i}": {"a": 1.0} for i in range(4)}
    other = {f"q{i}": {"a": 1.0} for i in range(2)}
    assert lodestar.compare(qrels, [one, other], ["mrr"]).queries == 2
    assert lodestar.compare(qrels, [one, other], ["mrr"], complete=True).queries == 4
    with pytest.raises(ValueError, match="at least 2 runs"):
        lodestar.compare(qrels, [one], ["mrr"])


# --------------------------------------------------------------------------
# The kernels the command line runs
# --------------------------------------------------------------------------


@pytest.fixture
def kernel_programs(monkeypatch):
    """The kernels ``lodestar.evaluate`` would run, as the text of their jaxprs; all values 0."""
    import jax

    from lodestar.metrics import _kernel

    programs = []
    evaluate_formulas = _kernel.evaluate_formulas

    def recorded(scores, arrays, options, **static):
        def run(s, a, o):
            return evaluate_formulas(s, a, o, **static)

        # Traced, not compiled: the values are not what these tests read.
        program, shapes = jax.make_jaxpr(run, return_shape=True)(scores, arrays, options)
        programs.append(str(program))
        return jax.tree.map(lambda shape: np.zeros(shape.shape, shape.dtype), shapes)

    monkeypatch.setattr(_kernel, "evaluate_formulas", recorded)
    return programs


# Every measure alone (one that shares a kernel with a measure that asks for
# the order would get it through that one), in each of the command line's
# modes. Tracing them is cheap: nothing is compiled.
MODES = {
    "tied-trec_eval": (False, True),
    "tied": (False, False),
    "ignore_ties-trec_eval": (True, True),
    "ignore_ties": (True, False),
}


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_no_measure_leaves_a_host_callback_in_the_kernel(tmp_path, kernel_programs, mode):
    # The command line ranks and sorts on the host before the kernel, so that
    # the kernel holds no host callback: JAX does not keep a program with one
    # in its persistent cache, and `lodestar evaluate -m all_trec` compiled
    # for 3 s on every run when bpref, infAP, binG and G asked the ranking
    # for its order without saying so (`Formula.uses_order`) and G sorted its
    # ideal in the kernel (decision 0018).
    from lodestar import _registry

    ignore_ties, trec_eval = mode
    paths = write_trec(tmp_path, *generate(4))
    with_callbacks = []
    for name in _registry.MEASURES:
        kernel_programs.clear()
        lodestar.evaluate(*paths, [name], ignore_ties=ignore_ties, trec_eval=trec_eval)
        assert kernel_programs, f"no kernel ran for {name}"
        if any("callback" in program for program in kernel_programs):
            with_callbacks.append(name)
    assert not with_callbacks, f"host callbacks in the kernels of {with_callbacks}"


def _takes_a_plain_cutoff(name):
    try:
        names.parse(f"{name}@5")
    except ValueError:  # a parameter it needs besides k (iprec_at_recall's recall)
        return False
    return True


CUTOFF_MEASURES = [
    name
    for name, measure in _registry.MEASURES.items()
    if measure.cutoff and _takes_a_plain_cutoff(name)
]


@pytest.mark.parametrize("trec_eval", [False, True])
def test_cut_offs_past_int32_cut_nothing(trec_eval):
    # A cut-off past every list is the uncut value (or, for a measure that
    # divides by the requested k, the same count over the larger k).
    qrels, run = generate(41)
    huge = (2**31, 2**32, 2**40)

    def values(k, **options):
        measures = [f"{name}@{k}" for name in CUTOFF_MEASURES]
        result = lodestar.evaluate(qrels, run, measures=measures, trec_eval=trec_eval, **options)
        return dict(zip(CUTOFF_MEASURES, result.mean.values(), strict=True))

    near, nearer = values(10**6), values(2 * 10**6)
    for k in huge:
        far = values(k)
        for name in CUTOFF_MEASURES:
            if near[name] == nearer[name]:
                assert far[name] == near[name], (name, k)
            else:
                np.testing.assert_allclose(far[name] * k, near[name] * 10**6, rtol=1e-12)
    uncut = lodestar.evaluate(qrels, run, measures=["map", "err", "hits"], trec_eval=trec_eval)
    for k in huge:
        cut = lodestar.evaluate(
            qrels, run, measures=["map", "err", "hits"], trec_eval=trec_eval, max_documents=k
        )
        assert cut.mean == uncut.mean


_FRESH_PROCESS = """
import json, sys
import jax.monitoring
import lodestar
events = {"/jax/compilation_cache/cache_hits": 0, "/jax/compilation_cache/cache_misses": 0}
def count(event, **kwargs):
    if event in events:
        events[event] += 1
jax.monitoring.register_event_listener(count)
traced = []
def trace(event, seconds, **kwargs):
    if event == "/jax/core/compile/jaxpr_trace_duration":
        traced.append(kwargs.get("fun_name", "?"))
jax.monitoring.register_event_duration_secs_listener(trace)
directory = lodestar.use_compilation_cache(sys.argv[1])
result = lodestar.evaluate(sys.argv[2], sys.argv[3], ["ndcg@10", "map"])
hits, misses = events.values()
print(json.dumps({"directory": directory, "mean": result.mean, "hits": hits, "misses": misses,
                  "traced": traced}))
"""


def test_the_compilation_cache_spares_a_new_process_the_compilation(tmp_path):
    # The Python API keeps no cache unless asked (a library leaves JAX's
    # configuration alone); asked, a second process loads what the first
    # compiled, as the command line's second run does.
    from lodestar.cli import _example_paths

    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "LODESTAR_TEST_JAX_CACHE"}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _FRESH_PROCESS, str(cache), *_example_paths()],
                capture_output=True, check=True, env=env, text=True,
            ).stdout
        )
        for _ in range(2)
    ]  # fmt: skip
    assert runs[0]["directory"] == runs[1]["directory"] == str(cache)
    assert runs[0]["mean"] == runs[1]["mean"]
    # The first traced and compiled its programs and kept them; the second
    # compiled none, and traced no kernel either: the evaluation's kernel is
    # kept as its exported program (decision 0038), whose call is the one
    # thing traced, and every compilation is in JAX's cache.
    assert runs[0]["hits"] == 0 and "evaluate_formulas" in runs[0]["traced"]
    assert runs[1]["hits"] == runs[0]["misses"] and runs[1]["misses"] == 0
    # Traced in every process, and compiled from JAX's cache, are also the
    # small programs around lodestar's compiled CPU kernels: their check on
    # first use (lodestar._native._check) and the ranking of the batches
    # outside the kernel (_ranking.host_tie_blocks and host_rank_order).
    around_the_kernels = {"every_kernel", "_native_tie_blocks", "ascending_order"}
    # JAX 0.8.0 also reports the jitted jax.numpy functions traced inside
    # those programs (jnp.negative, jnp.where's _where, ...); later JAX inlines them.
    import jax.numpy as jnp

    def inside_a_program(name):
        return hasattr(jnp, name) or (name.startswith("_") and name not in around_the_kernels)

    traced = [name for name in runs[1]["traced"] if not inside_a_program(name)]
    assert [name for name in traced if name not in around_the_kernels] == ["call"]
    assert any((cache / "lodestar-kernels").iterdir())


def test_the_compilation_cache_is_the_command_lines_by_default(tmp_path, monkeypatch):
    from lodestar import evaluation

    monkeypatch.setenv("LODESTAR_COMPILATION_CACHE", str(tmp_path / "named"))
    assert evaluation.default_cache_directory() == str(tmp_path / "named")
    monkeypatch.setenv("LODESTAR_COMPILATION_CACHE", "0")
    assert evaluation.default_cache_directory() is None
    monkeypatch.delenv("LODESTAR_COMPILATION_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert evaluation.default_cache_directory() == str(tmp_path / "xdg" / "lodestar" / "jax")


def test_evaluating_and_comparing_files_never_imports_pandas():
    # pyarrow imports pandas the first time an array becomes NumPy through
    # to_numpy, or a Python number becomes an Arrow scalar: 0.2 s of every
    # fresh script that scores files, for nothing (the reader reads buffers).
    code = """
import sys
from pathlib import Path
from importlib import resources
import lodestar
data = resources.files("lodestar") / "data"
lodestar.evaluate(str(data / "example.qrels"), str(data / "example.run"), "all_trec")
runs = {name: str(data / name) for name in ("bm25.run", "dense.run", "hybrid.run")}
lodestar.compare(str(data / "compare.qrels"), runs)
assert "pandas" not in sys.modules, "pandas was imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


@pytest.mark.parametrize("ignore_ties", [False, True])
def test_eleven_point_average_beside_its_levels_reads_them_to_the_bit(ignore_ties):
    # -m all_trec asks for 11pt_avg and iprec_at_recall at its eleven levels:
    # the kernel runs the levels in one loop and averages their values
    # (decision 0040). Each value must be what the measure gives asked alone.
    from lodestar._trec import evaluate as trec_evaluate
    from lodestar._trec import names

    rng = np.random.default_rng(3)
    run = {
        f"q{q}": {f"d{d}": float(rng.integers(0, 6)) for d in range(rng.integers(5, 40))}
        for q in range(30)
    }
    qrels = {
        q: {d: int(rng.integers(0, 3)) for d in docs if rng.random() < 0.5}
        for q, docs in run.items()
    }
    levels = [
        f"iprec_at_recall_{x:.2f}" for x in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    ]
    together = lodestar.evaluate(
        qrels, run, ["11pt_avg", *levels, "P_5"], trec_eval=True, ignore_ties=ignore_ties
    )
    requests = names.measures(names.parse_all(["11pt_avg", *levels, "P_5"]))
    kernel_requests, traced = trec_evaluate._kernel_requests(
        requests, trec_evaluate.Definitions(trec_eval=True), 2
    )
    assert trec_evaluate._mapped_groups(kernel_requests, traced) == (tuple(range(1, 12)),)
    assert trec_evaluate._shared_means(kernel_requests, traced) == ((0, tuple(range(1, 12))),)
    for name in ["11pt_avg", *levels]:
        alone = lodestar.evaluate(qrels, run, [name], trec_eval=True, ignore_ties=ignore_ties)
        np.testing.assert_array_equal(together.values[name], alone.values[name])


@pytest.mark.parametrize(
    "call",
    [
        lambda: lodestar.evaluate("-", "-", ["map"]),
        lambda: lodestar.evaluate(b"-", Path("-"), ["map"]),
        lambda: lodestar.compare("qrels.txt", {"a": "-", "b": "-"}, ["map"]),
    ],
    ids=["evaluate", "evaluate-bytes-and-path", "compare"],
)
def test_standard_input_is_given_once_from_python(call):
    # As on the command line: read twice, the second file was empty and the
    # report said that no query is in both, which hid the mistake.
    with pytest.raises(ValueError, match="'-' is given more than once"):
        call()
