"""``lodestar evaluate`` under the conditions users create, and the inputs that once misled it.

Each test here failed before the fix it pins: trec_eval's command-line habits
(``-m`` repeated or before the files, trec_eval's names in the output),
hostile bytes (a byte-order mark, ids that differ only in non-UTF-8 bytes,
truncated or corrupt gzip), the program's behaviour as a Unix tool (a closed
pipe, a closed stdout, Ctrl-C), definitions that gave plausible wrong numbers
(``-l 0``, ERR's top grade taken from the evaluated queries only), and a
TREC-depth run evaluated repeatedly (it crashed in 3 of 4 runs: decision
0013). The programs run as subprocesses where the behaviour is the
process's own.
"""

import contextlib
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tiers
from children import SRC, interruptible_children, program
from trec_glue import write_long_runs

from lodestar.cli import main

TREC_EVAL = Path(__file__).resolve().parent / "data" / "trec_eval"


def evaluate(capsys, *args):
    assert main(["evaluate", *args]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def evaluate_json(capsys, *args):
    return json.loads(evaluate(capsys, *args, "--json"))


def table(text):
    """{(measure, query): value} of a trec_eval-style table."""
    rows = [line.split("\t") for line in text.splitlines()]
    return {(name.strip(), qid): value for name, qid, value in rows}


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


QRELS = b"q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 a 1\n"
RUN = b"q1 Q0 a 1 0.9 t\nq1 Q0 b 2 0.8 t\nq1 Q0 c 3 0.7 t\nq2 Q0 b 1 0.5 t\nq2 Q0 a 2 0.4 t\n"


# --- trec_eval's habits --------------------------------------------------------------


def test_repeated_m_adds_measures(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    out = table(evaluate(capsys, qrels, run, "-m", "ndcg", "-m", "map"))
    assert {name for name, _ in out} == {"num_q", "ndcg", "map"}


def test_m_before_the_files_and_attached(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    before = table(evaluate(capsys, "-m", "ndcg_cut.10", qrels, run))
    attached = table(evaluate(capsys, "-mndcg_cut.10", "-mP.2", qrels, run))
    after = table(evaluate(capsys, qrels, run, "-m", "ndcg_cut.10"))
    assert before == after == {k: v for k, v in attached.items() if k[0] != "P_2"}
    assert ("P_2", "all") in attached


def test_measures_are_reported_under_the_names_asked_for(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    out = table(evaluate(capsys, qrels, run, "-m", "P_10", "recip_rank", "mrr@2", "P.1,2"))
    assert [name for name, _ in out] == ["num_q", "P_10", "recip_rank", "mrr@2", "P_1", "P_2"]


def test_bare_p_and_ndcg_cut_are_trec_eval_families(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    out = table(evaluate(capsys, qrels, run, "-m", "P", "-m", "ndcg_cut"))
    cutoffs = [5, 10, 15, 20, 30, 100, 200, 500, 1000]
    assert [name for name, _ in out][1:] == [f"P_{k}" for k in cutoffs] + [
        f"ndcg_cut_{k}" for k in cutoffs
    ]


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("lodestar ")


def test_runs_with_trailing_fields_are_read_as_trec_eval_reads_them(capsys):
    # trec_eval's own test run has junk after the sixth field on every line.
    qrels, run = str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.trunc")
    out = table(evaluate(capsys, qrels, run, "-m", "num_q", "P_5", "--trec-eval", "-c"))
    assert out[("num_q", "all")] == "3"
    # trec_eval's out.test.aqc: P_5 of results.trunc, every qrels query counted.
    assert out[("P_5", "all")] == "0.2000"


# --- bytes ---------------------------------------------------------------------------


def test_a_byte_order_mark_is_not_part_of_the_first_query(tmp_path, capsys):
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    marked = write(tmp_path, "qb", b"\xef\xbb\xbf" + QRELS)
    marked_run = write(tmp_path, "rb", b"\xef\xbb\xbf" + RUN)
    plain = evaluate(capsys, qrels, run, "-q")
    assert evaluate(capsys, marked, marked_run, "-q") == plain
    assert evaluate(capsys, marked, run, "-q") == plain
    assert "num_q                 \tall\t2" in plain


@pytest.mark.parametrize("marks", [1, 2, 3])
def test_both_readers_drop_every_leading_byte_order_mark(tmp_path, capsys, marks):
    # A comment line sends a file to the line-by-line reader; without one,
    # pyarrow's parser reads it. Both must give the same queries.
    plain = evaluate(capsys, write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN), "-q")
    bom = b"\xef\xbb\xbf" * marks
    for comment in (b"", b"# a comment\n"):
        qrels = write(tmp_path, "qb", bom + QRELS + comment)
        run = write(tmp_path, "rb", bom + RUN + comment)
        assert evaluate(capsys, qrels, run, "-q") == plain, (marks, comment)


def test_query_ids_that_differ_only_in_non_utf8_bytes_stay_apart(tmp_path, capsysbinary):
    # b"q\xff" would print as "q\\xff" with backslashreplace, the same text as
    # the literal id q\xff: one would overwrite the other.
    qrels = b"q\xff 0 a 1\nq\\xff 0 a 0\nq\\xff 0 b 1\n"
    run = b"q\xff Q0 a 1 0.9 t\nq\\xff Q0 a 1 0.9 t\nq\\xff Q0 b 2 0.1 t\n"
    paths = write(tmp_path, "q", qrels), write(tmp_path, "r", run)
    assert main(["evaluate", *paths, "-q", "-m", "mrr"]) == 0
    rows = capsysbinary.readouterr().out.splitlines()
    # The table writes ids as the bytes they were read as, as trec_eval does.
    assert rows[:2] == [
        b"mrr                   \tq\\xff\t0.5000",
        b"mrr                   \tq\xff\t1.0000",
    ]
    assert main(["evaluate", *paths, "-q", "-m", "mrr", "--json"]) == 0
    per_query = json.loads(capsysbinary.readouterr().out)["per_query"]
    assert len(per_query) == 2
    decoded = {key.encode("utf-8", "surrogateescape"): v["mrr"] for key, v in per_query.items()}
    assert decoded == {b"q\xff": 1.0, b"q\\xff": 0.5}


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_gzip_is_refused_naming_the_file(tmp_path, capsys, damage):
    data = gzip.compress(RUN * 50)
    data = data[: len(data) // 2] if damage == "truncated" else data[:12] + b"\x00" * 40 + data[52:]
    run = write(tmp_path, "run.gz", data)
    assert main(["evaluate", write(tmp_path, "q", QRELS), run]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lodestar: error: {run}: cannot read this gzip file")
    assert "Traceback" not in err


@pytest.mark.parametrize("source", ["device", "gzip bomb", "standard input", "pipe"])
def test_endless_zeros_are_refused_at_their_first_block(tmp_path, capsys, monkeypatch, source):
    # /dev/zero, and 64 MiB of zeros in 64 KiB of gzip, were read until memory
    # ran out (a MemoryError traceback); trec_eval refuses /dev/zero at once.
    qrels = write(tmp_path, "q", QRELS)
    if source == "device":
        run = "/dev/zero"
    elif source == "gzip bomb":
        run = write(tmp_path, "bomb.gz", gzip.compress(b"\x00" * (64 << 20), mtime=0))
    elif source == "standard input":
        zeros = open("/dev/zero", "rb")  # noqa: SIM115 - closed below
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(zeros))
        run = "-"
    else:
        read_end, write_end = os.pipe()
        os.write(write_end, b"q1 Q0 a 1 0.9 t\n" + b"\x00" * 60_000)  # within a pipe's buffer
        os.close(write_end)
        run = f"/dev/fd/{read_end}"
    assert main(["evaluate", qrels, run]) == 1
    err = capsys.readouterr().err
    line = 2 if source == "pipe" else 1
    assert err == f"lodestar: error: {run}:{line}: the line holds a NUL byte, which is not text\n"
    if source == "standard input":
        zeros.close()
    elif source == "pipe":
        os.close(read_end)


def test_running_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    from lodestar import evaluation

    def exhausted(path, **_):
        raise MemoryError(f"{path}: the gzip data decompress to more than fits")

    # The command reads through its application layer.
    monkeypatch.setattr(evaluation, "read_run", exhausted)
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN)
    assert main(["evaluate", qrels, run]) == 1
    assert capsys.readouterr().err.endswith(
        f"lodestar: error: out of memory: {run}: the gzip data decompress to more than fits\n"
    )


def test_single_precision_refuses_a_score_float32_cannot_hold(tmp_path, capsys):
    run = write(tmp_path, "r", RUN + b"q2 Q0 c 3 1e39 t\n")
    assert main(["evaluate", write(tmp_path, "q", QRELS), run, "--single-precision"]) == 1
    assert f"{run}:6: score 1e+39 does not fit in single precision" in capsys.readouterr().err


# --- definitions that gave plausible wrong numbers ----------------------------------


def test_relevance_level_zero_counts_judged_documents_never_unjudged_ones(tmp_path, capsys):
    # With -l 0, unjudged retrieved documents once counted as relevant:
    # recall and MAP reached 2.5. Level 0 makes every judged document relevant.
    qrels = write(tmp_path, "q", b"q1 0 a 0\nq1 0 b 1\n")
    run = write(
        tmp_path, "r", b"q1 Q0 x 1 0.9 t\nq1 Q0 a 2 0.8 t\nq1 Q0 y 3 0.7 t\nq1 Q0 b 4 0.6 t\n"
    )
    out = evaluate_json(capsys, qrels, run, "--trec-eval", "-l", "0", "-m", "map", "recall@10")
    assert out["mean"] == {"map": pytest.approx((1 / 2 + 2 / 4) / 2), "recall@10": 1.0}
    assert main(["evaluate", qrels, run, "-l", "-1"]) == 2  # a usage error
    assert "-l: relevance level -1 is negative" in capsys.readouterr().err


def _strict_json(text):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
def test_negative_judgments_give_no_nan_to_any_measure(tmp_path, capsys):
    # A query judged only negatively: its documents are unjudged under
    # trec_eval's definitions, and rbp once divided by a top grade of -1.
    qrels = write(tmp_path, "q", b"q1 0 a -1\nq1 0 b -2\nq2 0 a 1\nq2 0 c 0\nq3 0 a 2\n")
    run = write(
        tmp_path,
        "r",
        b"q1 Q0 a 1 1.0 t\nq1 Q0 b 2 0.5 t\nq1 Q0 z 3 0.2 t\nq2 Q0 a 1 1.0 t\nq3 Q0 c 1 1 t\n",
    )
    assert main(["evaluate", qrels, run, "--trec-eval", "-m", "all_trec", "-q", "--json"]) == 0
    document = _strict_json(capsys.readouterr().out)
    values = [*document["mean"].values()]
    values += [v for query in document["per_query"].values() for v in query.values()]
    numbers = [v for v in values if isinstance(v, float)]
    assert numbers and all(np.isfinite(numbers))
    assert document["per_query"]["q1"]["rbp"] == 0.0


@pytest.mark.parametrize(
    "measure",
    ["utility.1e308,1e308,0,0", *tiers.params(["G.1=1e154", "ndcg.1=1e308"], default=())],
)
def test_gains_whose_sums_overflow_are_refused(measure, capsys):
    files = [str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.test")]
    assert main(["evaluate", *files, "-m", measure, "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "is not a finite number for query '301': its gains or parameters are too large" in (
        captured.err
    )


def test_json_has_no_nan_even_for_a_value_that_is_not_a_number():
    from lodestar.cli import _finite_or_null

    document = {"mean": {"a": float("nan"), "b": 0.5}, "range": [float("inf"), 1.0]}
    assert _finite_or_null(document) == {"mean": {"a": None, "b": 0.5}, "range": [None, 1.0]}


def test_err_top_grade_comes_from_the_whole_qrels(tmp_path, capsys):
    # Taken from the evaluated queries, a query's ERR changed with the other
    # queries of the run: 0.9335 against 0.6241 for query 302 here.
    qrels, run = TREC_EVAL / "qrels.rel_level", TREC_EVAL / "results.test"
    alone = write(
        tmp_path,
        "r302",
        b"".join(line for line in run.read_bytes().splitlines(True) if line.startswith(b"302")),
    )
    options = ["-m", "err@20", "-q", "--trec-eval"]
    every = evaluate_json(capsys, str(qrels), str(run), *options)["per_query"]
    one = evaluate_json(capsys, str(qrels), alone, *options)["per_query"]
    assert one["302"]["err@20"] == every["302"]["err@20"]
    top = max(int(line.split()[3]) for line in qrels.read_text().splitlines())
    fixed = evaluate_json(capsys, str(qrels), alone, *options, "--err-max-label", str(top))
    assert fixed["per_query"]["302"] == one["302"]
    # The top grade here is 4, gdeval's; another one changes the values.
    assert top == 4
    other = evaluate_json(capsys, str(qrels), alone, *options, "--err-max-label", "10")
    assert other["per_query"]["302"]["err@20"] < one["302"]["err@20"]


@pytest.mark.parametrize("ceiling", ["-1", "0", "nan", "inf", "1e400"])
def test_err_top_grade_must_be_a_finite_positive_grade(ceiling, capsys):
    # Each once printed nan, or 0.0000 for inf, with exit status 0.
    qrels, run = str(TREC_EVAL / "qrels.rel_level"), str(TREC_EVAL / "results.test")
    options = ["--trec-eval", "-m", "err", "--err-max-label", ceiling]
    assert main(["evaluate", qrels, run, *options]) == 2
    assert "--err-max-label takes a finite grade above 0" in capsys.readouterr().err


def test_err_top_grade_below_a_relevance_of_the_qrels_is_refused(capsys):
    qrels, run = str(TREC_EVAL / "qrels.rel_level"), str(TREC_EVAL / "results.test")
    options = ["--trec-eval", "-m", "err", "--err-max-label", "2"]
    assert main(["evaluate", qrels, run, *options]) == 1
    err = capsys.readouterr().err
    assert "qrels.rel_level:" in err and "is above ERR's top grade 2" in err
    # Without ERR among the measures, the top grade concerns nothing.
    assert main(["evaluate", qrels, run, "--trec-eval", "-m", "map", "--err-max-label", "2"]) == 0


# --- the program as a Unix tool -----------------------------------------------------


@pytest.fixture(scope="module")
def many_queries(tmp_path_factory):
    """A run with enough queries that ``-q`` prints far more than a pipe buffers.

    ``(qrels, run)``; a second run, ``second``, lies beside the first.
    """
    qrels, runs = write_long_runs(
        tmp_path_factory.mktemp("many"), queries=3000, depth=20, runs=("r", "second")
    )
    return qrels, runs[0]


def test_a_closed_pipe_ends_the_program_quietly(many_queries):
    process = program("evaluate", *many_queries, "-q", "-m", "P@5")
    first = process.stdout.readline()
    process.stdout.close()
    process.wait(timeout=300)
    err = process.stderr.read().decode()
    process.stderr.close()
    assert first.startswith(b"P@5")
    assert "Broken pipe" not in err and "Traceback" not in err
    # Ended by SIGPIPE, as trec_eval and other Unix tools are by `| head -1`.
    assert process.returncode in (-signal.SIGPIPE, 0)


@pytest.mark.parametrize("json_output", [False, True])
def test_a_closed_stdout_is_an_error(json_output):
    command = [sys.executable, "-m", "lodestar", "evaluate", "--example"]
    command += ["--json"] if json_output else []
    shell = " ".join(command) + " >&-"
    env = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": "0"}
    done = subprocess.run(shell, shell=True, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "standard output is closed" in done.stderr
    assert "Traceback" not in done.stderr


def _reading_standard_input(pid: int) -> bool:
    """Whether the process's main thread is blocked in read(2) on descriptor 0 (Linux)."""
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return call[:2] == ["0", "0x0"]


@pytest.mark.parametrize("named", [True, False])
def test_a_compilation_cache_that_cannot_be_written_is_not_used(tmp_path, named):
    # JAX warned on stderr at every compilation into a cache it could not
    # write (a path through a file here; a read-only home in practice).
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    env = {**os.environ, "PYTHONPATH": SRC}
    if named:
        env["LODESTAR_COMPILATION_CACHE"] = str(blocked / "cache")
    else:
        env.pop("LODESTAR_COMPILATION_CACHE", None)
        env["XDG_CACHE_HOME"] = str(blocked)
    done = subprocess.run(
        [sys.executable, "-m", "lodestar", "evaluate", "--example", "-m", "map"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The example's own notes (queries not evaluated), and nothing else.
    notes = [line for line in done.stderr.splitlines() if "not evaluated" not in line]
    expected = [
        f"lodestar: LODESTAR_COMPILATION_CACHE={str(blocked / 'cache')!r} cannot be "
        "written; compiling without it"
    ]
    assert notes == (expected if named else [])
    assert "map                   \tall\t0.5707" in done.stdout


def test_ctrl_c_exits_130_with_one_line(many_queries):
    # The run comes from a pipe that stays open, and the signal is sent once
    # the program waits on it: a fixed delay could land in start-up on a
    # loaded machine (test_ctrl_c_while_importing_exits_130_with_one_line).
    process = program("evaluate", many_queries[0], "-", stdin=subprocess.PIPE)
    deadline = time.monotonic() + 120
    if Path("/proc/self/syscall").exists():
        while not _reading_standard_input(process.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _reading_standard_input(process.pid), "the program never read standard input"
    else:  # pragma: no cover - no /proc
        time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    err = err.decode()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "lodestar: interrupted"
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize(
    "test, draws",
    [
        ("randomization", ["--permutations", "10000000000"]),
        ("bootstrap", ["--samples", "100000000"]),
    ],
)
def test_ctrl_c_stops_a_long_significance_test_within_a_second(many_queries, tmp_path, test, draws):
    # 1e10 sign flips of 3,000 queries take hours; an eager test works a window
    # of chunks at a time (a few tens of milliseconds each), and Ctrl-C ends it
    # between two. The signal is sent 1.5 s into the test, past the
    # compilation of the window's program; the bar leaves room for a loaded
    # machine.
    qrels, run = many_queries
    second = Path(run).with_name("second")
    process = program(
        "compare", qrels, run, str(second), "-m", "map", "--test", test, *draws,
        "--progress", "always",
    )  # fmt: skip
    seen = b""
    while b"testing" not in seen:
        chunk = process.stderr.read1(4096)
        assert chunk, seen.decode()
        seen += chunk
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = process.communicate(timeout=300)
    waited = time.monotonic() - sent
    err = (seen + err).decode()
    assert process.returncode == 130, err[-3000:]
    assert err.rstrip().endswith("lodestar: interrupted")
    assert "Traceback" not in err
    assert waited < 3.0, f"{test} ended {waited:.1f} s after Ctrl-C"


# --- TREC depth, repeatedly ----------------------------------------------------------


def test_ctrl_c_while_importing_exits_130_with_one_line(tmp_path):
    # A sitecustomize on the path holds the import of lodestar's reader for 3 s,
    # so the signal arrives while the program is still importing itself.
    (tmp_path / "sitecustomize.py").write_text(
        "import sys, time\n"
        "class _Slow:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'lodestar._trec.read':\n"
        "            time.sleep(3)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Slow())\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{SRC}"}
    with interruptible_children():
        process = subprocess.Popen(
            [sys.executable, "-m", "lodestar", "evaluate", "--example"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err.decode()
    assert err.decode().strip().splitlines() == ["lodestar: interrupted"]
    assert out == b""


@pytest.mark.slow
def test_ctrl_c_while_evaluating_exits_130_without_crashing(trec_depth):
    # Interrupted while XLA's threads ran the kernels, the program could
    # segfault on its way out (exit -11 after "interrupted", in 4 of 6 tries at
    # 2.3-2.7 s on a quiet 2-core machine). The signal is sent at a sweep of
    # moments through the evaluation stage; each try must end with 130, or 0
    # if the evaluation finished first, or by SIGINT itself if it arrived as
    # the interpreter was exiting (the shell reports 130 for both): never by
    # another signal.
    interrupted = 0
    for delay in (0.1, 0.4, 0.7, 1.0, 1.3, 1.6, 1.9, 2.2):
        process = program("evaluate", *trec_depth, "--progress", "always")
        seen = b""
        while b"evaluating" not in seen:
            chunk = process.stderr.read1(4096)
            assert chunk, seen.decode()
            seen += chunk
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = process.communicate(timeout=300)
        # Within about a second: 0.02-0.96 s measured on a quiet machine.
        waited = time.monotonic() - sent
        err = (seen + err).decode()
        assert process.returncode in (0, 130, -signal.SIGINT), (
            delay,
            process.returncode,
            err[-3000:],
        )
        assert "Traceback" not in err
        assert waited < 3.0, f"exited {waited:.1f} s after Ctrl-C at {delay} s"
        if process.returncode == 130:
            interrupted += 1
            assert err.rstrip().endswith("lodestar: interrupted"), err[-3000:]
    assert interrupted


@pytest.fixture(scope="module")
def trec_depth(tmp_path_factory):
    """1,500 queries x 1,000 documents, scores with ties, 100 judged per query."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_cli import write_files

    return write_files(str(tmp_path_factory.mktemp("depth")), 1500, 1000, 100)


@pytest.mark.slow
def test_a_trec_depth_run_evaluates_the_same_every_time(trec_depth):
    # It failed in 3 of 4 runs before decision 0013: five clean runs in a row
    # would happen by chance with probability 0.25**5, about 1 in 1,000.
    outputs = set()
    for _ in range(5):
        process = program("evaluate", *trec_depth)
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err.decode()[-3000:]
        outputs.add(out)
    assert len(outputs) == 1
    values = table(outputs.pop().decode())
    assert values[("num_q", "all")] == "1500"


@pytest.mark.parametrize(
    "measure, message",
    [
        ("P.٥", "measure 'P.٥': the cut-off '٥' is not a number"),
        ("P@٥", "measure 'P@٥': the cut-off '٥' is not a whole number"),
        ("ndcg.٣=2", "GainTable.parse expects comma-separated level=gain pairs"),
        ("ndcg.1=1_0", "GainTable.parse expects comma-separated level=gain pairs"),
        ("utility.1_0,1,1,1", "the parameter '1_0' is not a finite number"),
        ("rbp.p=-0.5", "The 'p' parameter of rbp must be a float in the range (0.0, 1.0)"),
        ("rbp.p=1", "The 'p' parameter of rbp must be a float in the range (0.0, 1.0)"),
        ("rbp_resid.p=0", "The 'p' parameter of rbp_resid must be a float in the range (0.0,"),
        ("set_F.-1", "The 'beta' parameter of set_F must be a float in the range [0.0, inf)"),
        ("Rprec_mult.0", "The 'multiple' parameter of Rprec must be a float in the range (0.0,"),
    ],
)
def test_measure_parameters_take_ascii_numbers_in_their_range(measure, message, capsys):
    assert main(["evaluate", "--example", "-m", measure]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_gain_for_a_level_past_int64_is_refused_as_a_cut_off_is(capsys):
    # trec_eval would read the level as 2**63 - 1 (atol); int() refuses 4,300 digits.
    files = [str(TREC_EVAL / "qrels.test"), str(TREC_EVAL / "results.test")]
    for level in ("9223372036854775808", "9" * 5000):
        assert main(["evaluate", *files, "-m", f"ndcg.{level}=1"]) == 2
        assert "level a whole number up to 9223372036854775807" in capsys.readouterr().err
    assert main(["evaluate", *files, "-m", "ndcg.9223372036854775807=1", "--json"]) == 0


# Parameters at every size and of every kind: past int64, past float64, a
# number of more digits than int() converts, negative, zero, NaN, infinity,
# and no number at all.
ODD_PARAMETERS = (
    "9223372036854775807",
    "9223372036854775808",
    "123456789012345678901234",
    "1" * 5000,
    "1e308",
    "1e400",
    "-5",
    "0",
    "nan",
    "inf",
    "x",
)


def _odd_measure_names() -> list[tuple[str, str]]:
    """``(family, name)``: every family of the registry and trec_eval's, with each odd parameter."""
    from lodestar import _registry
    from lodestar._trec import families

    names = []
    for value in ODD_PARAMETERS:
        names.append(("relstring", f"relstring.{value}"))
        for measure in _registry.MEASURES.values():
            if measure.cutoff:
                names.append((measure.key, f"{measure.key}@{value}"))
        for key_families in families.FAMILIES.values():
            for family in key_families:
                if family.parameter in ("k", "multiple", "recall", "beta"):
                    texts = [f"{family.name}.{value}", f"{family.name}_{value}"]
                elif family.parameter == "gain":
                    texts = [f"{family.name}.1={value}", f"{family.name}.{value}=2"]
                elif family.parameter == "p":
                    texts = [f"{family.name}.p={value}"]
                elif family.parameter == "coefficients":
                    texts = [f"{family.name}.{value},1,1,1", f"{family.name}.1,{value},1,1"]
                else:
                    texts = []
                names += [(family.name, text) for text in texts]
    return names


def test_every_measure_parameter_at_any_size_is_a_value_or_one_error_line(tmp_path, capsys):
    import lodestar

    qrels = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"a": 1, "b": 3}}
    run = {"q1": {"a": 2.0, "b": 1.0, "d": 0.5}, "q2": {"b": 1.0, "a": 0.5}}
    qrels_path = write(tmp_path, "q", QRELS)
    run_path = write(tmp_path, "r", RUN)
    names = _odd_measure_names()
    assert len(names) > 500
    for family, name in names:
        try:
            status = main(["evaluate", qrels_path, run_path, "--trec-eval", "-q", "-m", name])
        except Exception as error:  # noqa: BLE001  anything but a status is the defect
            pytest.fail(f"lodestar evaluate -m {name[:80]}: {type(error).__name__}: {error}")
        out, err = capsys.readouterr()
        if status == 0:
            assert not {"nan", "inf", "-inf"} & set(out.split()), (name[:80], out)
        else:
            errors = [line for line in err.splitlines() if line.startswith("lodestar: error: ")]
            assert status in (1, 2) and len(errors) == 1, (name[:80], status, err)
            assert "Traceback" not in err and "Exceeds the limit" not in err, (name[:80], err)
        try:
            mean = lodestar.evaluate(qrels, run, [name], trec_eval=True).mean
        except ValueError as error:
            message = str(error)
            assert "\n" not in message and "Exceeds the limit" not in message, (name[:80], message)
            assert family.lower() in message.lower(), (name[:80], message)
        except Exception as error:  # noqa: BLE001  anything but a value or a ValueError
            pytest.fail(f"lodestar.evaluate({name[:80]!r}): {type(error).__name__}: {error}")
        else:
            assert all(np.isfinite(v) for v in mean.values()), (name[:80], mean)


def test_each_registry_interval_is_the_functions_own():
    # The command line checks trec_eval parameters against Option.interval; the
    # function checks its keyword itself. Just inside, both accept; just
    # outside, both refuse.
    from lodestar import InvalidParameterError, _registry

    scores, labels = np.array([[0.3, 0.2, 0.1]]), np.array([[1, 0, 1]])
    checked = 0
    for measure in _registry.MEASURES.values():
        for option in measure.options:
            if option.interval is None:
                continue
            low, high, closed = option.interval
            extra = {"max_label": 1} if "max_label" in {o.name for o in measure.options} else {}

            def call(value, measure=measure, option=option, extra=extra):
                return measure.function(scores, labels, **{option.name: value}, **extra)

            inside = [low if closed in ("left", "both") else np.nextafter(low, high)]
            outside = [low if closed in ("neither", "right") else np.nextafter(low, -np.inf)]
            if np.isfinite(high):
                inside.append(high if closed in ("right", "both") else np.nextafter(high, low))
                outside.append(
                    high if closed in ("neither", "left") else np.nextafter(high, np.inf)
                )
            for value in inside:
                call(float(value))
            for value in outside:
                with pytest.raises(InvalidParameterError, match=f"'{option.name}' parameter"):
                    call(float(value))
            checked += 1
    assert checked >= 4


def _bad_paths(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    return {
        "missing": (tmp_path / "missing", "No such file or directory"),
        "under a file": (a_file / "x", "Not a directory"),
        "symlink loop": (tmp_path / "loop1", "Too many levels of symbolic links"),
        "name too long": (tmp_path / ("a" * 300), "File name too long"),
    }


@pytest.mark.parametrize("kind", ["missing", "under a file", "symlink loop", "name too long"])
@pytest.mark.parametrize("command", ["evaluate", "compare"])
def test_a_path_that_names_no_file_is_a_usage_error(tmp_path, capsys, kind, command):
    path, reason = _bad_paths(tmp_path)[kind]
    run = str(TREC_EVAL / "results.test")
    args = [str(path), run] if command == "evaluate" else [str(TREC_EVAL / "qrels.test"), run]
    if command == "compare":
        args.append(str(path))
    assert main([command, *args]) == 2
    err = capsys.readouterr().err
    assert f"lodestar: error: cannot read {str(path)!r}: {reason}\n" in err
    assert "[Errno" not in err


def test_relstring_reads_negative_judgments_and_max_documents_as_trec_eval_does(tmp_path, capsys):
    # form_res_rels.c: every negative judgment is "in the pool, unjudged",
    # '.'; a document missing from the qrels is '-'; -M cuts the string.
    qrels = write(tmp_path, "q", b"q1 0 a -1\nq1 0 b -2\nq1 0 c -7\nq1 0 d 12\nq1 0 e 3\n")
    run = write(
        tmp_path,
        "r",
        b"".join(
            b"q1 Q0 %s %d %f t\n" % (d, i, 1 - i / 10)
            for i, d in enumerate(b"a b c d e x y".split())
        ),
    )
    out = evaluate(capsys, qrels, run, "--trec-eval", "-q", "-m", "relstring")
    assert out.splitlines()[0].split("\t")[2] == "'...>3--'"
    out = evaluate(capsys, qrels, run, "--trec-eval", "-q", "-M", "3", "-m", "relstring")
    assert out.splitlines()[0].split("\t")[2] == "'...'"


# NumPy wraps whatever interrupts the import of its C parts in an ImportError
# of its own ("Importing the numpy C-extensions failed"): Ctrl-C 0.08 s into
# the program, found by tests/test_cli_fuzz.py, ended in that traceback with
# status 1. The finder below imitates it for one module, imported either
# while the program starts (numpy) or lazily in the main thread after the
# evaluation (the statistics of compare), and says on stderr when it waits.
# The program's handler now only remembers a Ctrl-C that comes inside an
# import, so the import ends (after the finder's 3 s) and the interrupt is
# raised after it.
_WRAPPING_FINDER = """\
import sys, time
class _Wrapping:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.stderr.write('importing {module}\\n')
            sys.stderr.flush()
            try:
                time.sleep(3)
            except BaseException as exc:
                raise ImportError('its C-extensions failed') from exc
        return None
sys.meta_path.insert(0, _Wrapping())
"""


@pytest.mark.parametrize(
    "module, command",
    [("numpy", ["evaluate", "--example"]), ("lodestar.stats", ["compare", "--example"])],
)
def test_ctrl_c_inside_an_import_that_wraps_it_exits_130_with_one_line(tmp_path, module, command):
    (tmp_path / "sitecustomize.py").write_text(_WRAPPING_FINDER.format(module=module))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{SRC}"}
    with interruptible_children():
        process = subprocess.Popen(
            [sys.executable, "-m", "lodestar", *command, "--progress", "never"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    seen = b""
    while f"importing {module}".encode() not in seen:
        chunk = process.stderr.read1(4096)
        assert chunk, seen.decode()
        seen += chunk
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=300)
    err = (seen + err).decode()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "lodestar: interrupted", err
    assert "Traceback" not in err


@pytest.fixture
def handled_interrupts(monkeypatch):
    """The program's Ctrl-C handling in this process, as ``lodestar.__main__`` installs it.

    Yields :mod:`lodestar._interrupt` with no interrupt remembered; the
    handlers, the timer and the module's state are restored afterwards.
    """
    import lodestar._interrupt as interrupt

    monkeypatch.setattr(interrupt, "_pending", False)
    monkeypatch.setattr(interrupt, "_raised", False)
    monkeypatch.setattr(interrupt, "_reporting", False)
    monkeypatch.setattr(sys, "unraisablehook", interrupt.quiet_swallowed_interrupt)
    previous = signal.signal(signal.SIGINT, interrupt.note_interrupt)
    previous_alarm = signal.signal(signal.SIGALRM, interrupt.note_interrupt)
    try:
        yield interrupt
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_alarm)
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _signalling_module(tmp_path, monkeypatch, name, rest=""):
    """A module ``name`` on the path whose import raises SIGINT, then runs ``rest``."""
    (tmp_path / f"{name}.py").write_text(
        "import signal, time\nsignal.raise_signal(signal.SIGINT)\n" + rest
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield
    finally:
        sys.modules.pop(name, None)


def test_ctrl_c_inside_an_import_is_remembered_and_raised_after_it(
    handled_interrupts, monkeypatch, tmp_path
):
    # A KeyboardInterrupt raised while an extension module sets itself up can
    # abort the process: Ctrl-C 0.24-0.27 s into compare, inside jaxlib's
    # MLIR bindings, ended in SIGABRT and SIGSEGV (tests/test_cli_fuzz.py, under
    # load). Inside an import the handler only remembers it, and tries again
    # until it comes outside one: the import ends, then it is raised.
    name = "signalled_during_import"
    with _signalling_module(tmp_path, monkeypatch, name, "time.sleep(0.2)\nFINISHED = True\n"):
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            import signalled_during_import  # noqa: F401

            time.sleep(5)
        # The import ran to its end (0.2 s after the signal), and the
        # interrupt came right after it, not 5 s later.
        assert sys.modules[name].FINISHED
        assert handled_interrupts._pending
        assert 0.2 <= time.monotonic() - started < 2


def test_a_retry_lost_before_a_blocking_call_is_made_again(
    handled_interrupts, monkeypatch, tmp_path
):
    # A retry's signal can be lost to the program: on another thread, or on
    # the main thread just before a blocking call, which then waits out its
    # time (the test above once took 5.2 s, under load). Here the retries of
    # a few periods reach a handler that does nothing (not SIG_IGN, which
    # would stop the timer: an interval timer goes on when its signal is
    # taken); the next one ends the wait.
    name = "signalled_then_lost"
    with _signalling_module(tmp_path, monkeypatch, name, "FINISHED = True\n"):
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            import signalled_then_lost  # noqa: F401

            signal.signal(signal.SIGALRM, lambda signum, frame: None)
            time.sleep(3 * handled_interrupts.RETRY_SECONDS)
            signal.signal(signal.SIGALRM, handled_interrupts.note_interrupt)
            started = time.monotonic()
            time.sleep(5)
        assert sys.modules[name].FINISHED
        assert time.monotonic() - started < 1


def test_ctrl_c_outside_an_import_raises_at_once(handled_interrupts):
    # As Python's own handler does.
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)


def test_a_ctrl_c_caught_and_dropped_is_raised_again(handled_interrupts):
    # JAX's tracing catches every exception around a pytree's key paths (a
    # bare except), and a Ctrl-C that came there was lost: the program went
    # on to compile for 10 s (tests/test_cli_fuzz.py in CI; 2 in 80 Ctrl-Cs
    # 1.2-1.7 s in, under load). An interrupt that has not reached the
    # program's handler SWALLOWED_SECONDS after it was raised is raised again.
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass  # dropped, as that except clause does
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        time.sleep(5)
    assert time.monotonic() - started < 1


def test_no_interrupt_is_raised_once_the_handler_reports(handled_interrupts):
    # Raised while the program writes its note, a second KeyboardInterrupt
    # would escape as a traceback: neither the retry nor a further Ctrl-C
    # raises one.
    interrupt = handled_interrupts
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    interrupt.reporting()
    signal.raise_signal(signal.SIGINT)
    time.sleep(3 * interrupt.SWALLOWED_SECONDS)
    interrupt.raise_if_interrupted()
    assert interrupt._pending


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_a_swallowed_ctrl_c_is_raised_again_between_windows(handled_interrupts, test):
    # A KeyboardInterrupt raised inside a finaliser is printed and swallowed,
    # and a bootstrap test given Ctrl-C so went on for hours (once, in CI).
    # The command line's handler remembers the interrupt; the long loops
    # raise it again between their windows.
    from lodestar import stats

    interrupt = handled_interrupts
    with pytest.raises(KeyboardInterrupt):
        interrupt.note_interrupt(signal.SIGINT, None)
    assert interrupt._pending
    a, b = np.linspace(0, 1, 40), np.linspace(0, 1, 40) ** 2
    with pytest.raises(KeyboardInterrupt):
        if test == "randomization":
            stats.randomization_test(a, b, permutations=10_000)
        else:
            stats.bootstrap_test(a, b, samples=10_000)
    interrupt._pending = False
    assert stats.randomization_test(a, b, permutations=1000).p_value >= 0


def test_a_swallowed_ctrl_c_prints_no_traceback(handled_interrupts, monkeypatch, capsys):
    # Python reports an interrupt inside a garbage-collector callback (JAX's
    # _xla_gc_callback) as "Exception ignored in ..." with its traceback; the
    # program, which raises it again, prints none. Other errors still show.
    import types

    interrupt = handled_interrupts
    monkeypatch.setattr(interrupt, "_pending", True)
    monkeypatch.setattr(interrupt, "_try_again_soon", lambda: None)
    swallowed = types.SimpleNamespace(
        exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(), exc_traceback=None,
        err_msg=None, object=None,
    )  # fmt: skip
    interrupt.quiet_swallowed_interrupt(swallowed)
    assert capsys.readouterr().err == ""
    reported = []
    monkeypatch.setattr(sys, "__unraisablehook__", reported.append)
    other = types.SimpleNamespace(**{**vars(swallowed), "exc_value": ValueError("kept")})
    interrupt.quiet_swallowed_interrupt(other)
    interrupt.quiet_swallowed_interrupt(swallowed)
    assert reported == [other]


def test_a_ctrl_c_swallowed_by_a_gc_callback_is_raised_again_at_once(handled_interrupts):
    # JAX's _xla_gc_callback swallowed Ctrl-C while `-m all_trec` lowered its
    # kernel, and the program ran on to the next check, 8-12 s later
    # (tests/test_cli_fuzz.py, in CI; caught locally 4 times in 40 Ctrl-Cs
    # 0.9-1.6 s in). A swallowed interrupt is tried again RETRY_SECONDS later.
    import gc

    def signalled_during_collection(phase, info):
        if phase == "start" and not signalled:
            signalled.append(True)
            signal.raise_signal(signal.SIGINT)

    signalled = []
    gc.callbacks.append(signalled_during_collection)
    try:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            # Swallowed: the collection returned with the interrupt remembered.
            assert signalled and handled_interrupts._pending
            time.sleep(5)
        assert time.monotonic() - started < 2
    finally:
        gc.callbacks.remove(signalled_during_collection)


def test_an_interrupt_raised_after_an_import_leaves_no_retry_armed(
    handled_interrupts, monkeypatch, tmp_path
):
    # Ctrl-C inside an import armed a retry 20 ms later; a check that raised
    # the interrupt first left it armed, and it fired again while the program
    # wrote "interrupted": two tracebacks and death by SIGINT (2 in 24 Ctrl-Cs
    # 0.25-0.3 s into compare). Once raised, the interrupt is raised by no
    # retry.
    with _signalling_module(tmp_path, monkeypatch, "signalled_and_done"):
        with pytest.raises(KeyboardInterrupt):
            import signalled_and_done  # noqa: F401

            handled_interrupts.raise_if_interrupted()
        assert handled_interrupts._pending
        try:
            time.sleep(0.1)  # five retries' time
        except KeyboardInterrupt:
            pytest.fail("a retry raised the interrupt again")


def test_a_second_ctrl_c_while_the_first_unwinds_raises_no_other(handled_interrupts):
    # A second interrupt raised while the first was on its way up could come
    # inside the program's own handling of the first, where it escapes as a
    # traceback. It is remembered only.
    with pytest.raises(KeyboardInterrupt) as raised:
        try:
            signal.raise_signal(signal.SIGINT)
        finally:
            signal.raise_signal(signal.SIGINT)
    assert raised.value.__context__ is None


# Runs the program's console() with SIGINT raised at one line of it, given as
# the first argument; it is traced, so console() ends with sys.exit.
_AT_ONE_LINE = """
import signal, sys
from lodestar import cli
line = int(sys.argv[1])
def interrupting(frame, event, arg):
    if frame.f_code is not cli.console.__code__:
        return None
    if event == "line" and frame.f_lineno == line:
        sys.settrace(None)
        signal.raise_signal(signal.SIGINT)
    return interrupting
sys.argv = ["lodestar", "evaluate", "--example"]
sys.settrace(interrupting)
cli.console()
"""


def test_ctrl_c_at_each_line_of_the_programs_set_up_exits_130_with_one_line():
    # A retry armed inside an import fired 20 ms later in console()'s set-up,
    # before its handler's reach: a traceback and death by SIGINT. Every line
    # up to the command's work is interrupted here, in children run at once.
    import dis
    import inspect
    import linecache

    from lodestar import cli

    source, first = inspect.getsourcelines(cli.console)
    work = first + next(i for i, text in enumerate(source) if "= main()" in text)
    # Python handles a signal at a call or a jump, never at the bare "try:".
    lines = sorted(
        n
        for _, n in set(dis.findlinestarts(cli.console.__code__))
        if first < n <= work and source[n - first].strip() != "try:"
    )
    env = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": "0"}
    with interruptible_children():
        children = {
            line: subprocess.Popen(
                [sys.executable, "-c", _AT_ONE_LINE, str(line)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for line in lines
        }
    for line, child in children.items():
        out, err = child.communicate(timeout=300)
        context = f"line {line} ({linecache.getline(cli.__file__, line).strip()})"
        assert (child.returncode, err.decode(), out) == (130, "lodestar: interrupted\n", b""), (
            f"{context}\n{err.decode()[-3000:]}"
        )


# Runs console() with a main() that parses a line pyarrow refuses, and says
# whether SIGINT's handler in the C library during the parse (read where
# pyarrow calls back for the line) is the one the process had before it.
_SIGINT_DURING_A_PARSE = """
import ctypes, signal, sys
import pyarrow as pa
import pyarrow.csv as pcsv
from lodestar import cli
libc = ctypes.CDLL(None)
def sigint_handler():
    action = ctypes.create_string_buffer(512)  # a struct sigaction, handler first
    assert libc.sigaction(signal.SIGINT, None, action) == 0
    return action.raw[: ctypes.sizeof(ctypes.c_void_p)]
during = []
def refused(row):
    during.append(sigint_handler())
    return "skip"
def main(argv=None):
    before = sigint_handler()
    options = pcsv.ParseOptions(delimiter=" ", invalid_row_handler=refused)
    pcsv.read_csv(pa.py_buffer(b"a b\\n1\\n"), parse_options=options)
    print(during == [before])
    return 0
cli.main = main
sys.argv = ["lodestar"]
cli.console()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the C library's sigaction")
def test_pyarrow_leaves_ctrl_c_to_the_program_while_it_parses():
    # pyarrow set a SIGINT handler of its own around each parse, and passed
    # the signal on through a thread of its own: a Ctrl-C that came as a
    # parse ended was lost, and compare ran to its end and exited 0 (1 in 300
    # Ctrl-Cs at TREC depth, tests/test_cli_fuzz.py). The reader parses in
    # pieces, and the program's handler runs between them.
    with interruptible_children():
        done = subprocess.run(
            [sys.executable, "-c", _SIGINT_DURING_A_PARSE],
            env={**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": "0"},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


def test_each_registry_option_default_is_the_functions_own():
    # The command line and the benchmarks read a measure's options from the
    # registry; the function's signature states the same defaults. A default
    # changed in one place only would make `-m` and Python disagree.
    import inspect

    from lodestar import _registry

    compared = 0
    for measure in _registry.MEASURES.values():
        parameters = inspect.signature(measure.function).parameters
        for option in measure.options:
            assert option.name in parameters, (measure.key, option.name)
            parameter = parameters[option.name]
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (measure.key, option.name)
            if option.default is _registry.REQUIRED:
                assert parameter.default is inspect.Parameter.empty, (measure.key, option.name)
            else:
                assert parameter.default == option.default, (
                    measure.key,
                    option.name,
                    parameter.default,
                    option.default,
                )
            compared += 1
    assert compared >= 14


# --- reading stays bounded, and ends in a message ----------------------------------------

LONG_LINE = b"q1 Q0 " + b"d" * 70_000 + b" 1 0.5 t\n"
# Over a mebibyte: a run that the reader reads a piece at a time.
LARGE_RUN = b"".join(b"q%d Q0 d%d 1 0.5 t\n" % (i % 2 + 1, i) for i in range(70_000))


@pytest.mark.parametrize("source", ["small run", "large run", "gzip", "standard input", "qrels"])
def test_a_line_longer_than_any_trec_line_is_refused(tmp_path, capsys, monkeypatch, source):
    # A 70 kB docno was read as a document, and a gzip of one 1 GB line took
    # 3.4 GB before its refusal: no TREC line comes near 64 KiB.
    qrels, run = write(tmp_path, "q", QRELS), write(tmp_path, "r", RUN + LONG_LINE)
    line = RUN.count(b"\n") + 1
    if source == "large run":
        run = write(tmp_path, "r", LARGE_RUN + LONG_LINE)
        line = LARGE_RUN.count(b"\n") + 1
    elif source == "gzip":
        run = write(tmp_path, "r.gz", gzip.compress(RUN + LONG_LINE, mtime=0))
    elif source == "standard input":
        stdin = open(run, "rb")  # noqa: SIM115 - closed below
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
        run = "-"
    elif source == "qrels":
        qrels = write(tmp_path, "q", QRELS + b"q1 0 " + b"d" * 70_000 + b" 1\n")
        run = write(tmp_path, "r", RUN)
        line = QRELS.count(b"\n") + 1
    assert main(["evaluate", qrels, run]) == 1
    path = qrels if source == "qrels" else run
    err = capsys.readouterr().err
    assert err == f"lodestar: error: {path}:{line}: the line is longer than 65,536 bytes\n"
    if source == "standard input":
        stdin.close()


# The peak from /proc (VmHWM): getrusage's ru_maxrss starts a child at its
# parent's peak, a test worker's hundreds of MB.
EVALUATE_AND_PEAK = """
import sys
from lodestar.cli import main
status = main(["evaluate", *sys.argv[1:]])
with open("/proc/self/status") as status_file:
    peak = next(line for line in status_file if line.startswith("VmHWM:"))
print(status, int(peak.split()[1]) // 1024)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/self/status")
def test_a_gzip_of_one_huge_line_is_refused_in_bounded_memory(tmp_path):
    # 256 MiB of one line in 256 kB of gzip: the whole line was decompressed,
    # then copied twice, before its line 1 was refused (850 MB).
    bomb = tmp_path / "bomb.gz"
    with gzip.GzipFile(bomb, "wb", compresslevel=1, mtime=0) as file:
        file.write(b"q1 Q0 ")
        for _ in range(256):
            file.write(b"d" * (1 << 20))
    done = subprocess.run(
        [sys.executable, "-c", EVALUATE_AND_PEAK, write(tmp_path, "q", QRELS), str(bomb)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    status, peak_mb = map(int, done.stdout.split())
    assert status == 1 and done.stderr.endswith(
        f"{bomb}:1: the line is longer than 65,536 bytes\n"
    ), done.stderr
    assert peak_mb < 300, peak_mb


# Another program truncates or rewrites the run as soon as its first piece
# is parsed (pieces of 64 KiB here instead of 64 MiB).
CHANGED_WHILE_READ = """
import os, sys
import pyarrow.csv
from lodestar._trec import read
from lodestar.cli import main
how, qrels, run = sys.argv[1:]
read.PARSE_PIECE = 1 << 16
parse = pyarrow.csv.read_csv
def change_the_file_then_parse(source, **kwargs):
    if source.size < 1000:  # the qrels
        return parse(source, **kwargs)
    pyarrow.csv.read_csv = parse
    if how == "truncated":
        os.truncate(run, 0)
    else:
        with open(run, "r+b") as file:
            file.write(file.read().replace(b" t\\n", b" u\\n"))
    return parse(source, **kwargs)
pyarrow.csv.read_csv = change_the_file_then_parse
sys.exit(main(["evaluate", "-m", "num_ret", qrels, run]))
"""


@pytest.mark.parametrize("how", ["truncated", "rewritten"])
def test_a_run_changed_while_it_is_read_is_refused(tmp_path, how):
    # A large run was mapped, and one truncated under the reader ended the
    # program with SIGBUS; one rewritten was read half old, half new.
    run = write(tmp_path, "r", LARGE_RUN)
    os.utime(run, ns=(0, 0))  # a rewrite within the clock's tick changes the time too
    done = subprocess.run(
        [sys.executable, "-c", CHANGED_WHILE_READ, how, write(tmp_path, "q", QRELS), run],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        1,
        f"lodestar: error: {run}: the file changed while it was read\n",
    )
