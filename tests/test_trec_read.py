"""The TREC reader under fuzzing, and its two paths against each other.

The only outcomes allowed for any bytes are a result or a clean refusal: a
``ValueError`` whose message starts with ``path:line:`` (a malformed line)
or an ``OSError`` that names the file (unreadable gzip). Never another
exception, never a traceback from deep inside. Files regular enough for
pyarrow's parser must read exactly as the line-by-line reader reads them.
"""

import gzip
import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lodestar import _files
from lodestar._trec import read

SRC = Path(__file__).resolve().parents[1] / "src"

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))


def read_file(tmp_path, data: bytes, qrels: bool, *, text: bytes | None = None):
    """Read ``data`` as a file; ``text`` is what it holds when it is compressed."""
    text = data if text is None else text
    path = tmp_path / ("fuzz.qrels" if qrels else "fuzz.run")
    path.write_bytes(data)
    reader = read.read_qrels if qrels else read.read_run
    try:
        return reader(path), None
    except ValueError as error:
        assert re.match(re.escape(str(path)) + r":\d+: \S", str(error)), str(error)
        line = int(str(error)[len(str(path)) + 1 :].split(":")[0])
        assert 1 <= line <= text.count(b"\n") + 1
        return None, error
    except OSError as error:
        assert str(error).startswith(f"{path}: "), str(error)
        return None, error


def same_records(a: read.TrecFile, b: read.TrecFile) -> None:
    """Two reads hold the same records: ids, docnos, values, runid and lines."""
    assert len(a) == len(b)
    assert [a.query_ids[q] for q in a.query] == [b.query_ids[q] for q in b.query]
    docnos_a, docnos_b = a.docnos.to_pylist(), b.docnos.to_pylist()
    assert [docnos_a[d] for d in a.docno] == [docnos_b[d] for d in b.docno]
    np.testing.assert_array_equal(a.values, b.values)
    assert a.values.dtype == b.values.dtype
    assert a.runid == b.runid
    assert [a.line(i) for i in range(len(a))] == [b.line(i) for i in range(len(b))]


@FUZZ
@given(data=st.binary(max_size=400), qrels=st.booleans())
def test_random_bytes_give_a_result_or_a_clean_refusal(tmp_path_factory, data, qrels):
    found, _ = read_file(tmp_path_factory.mktemp("bytes"), data, qrels)
    if found is not None:
        assert len(found.query) == len(found.docno) == len(found.values)


token = st.text(alphabet="abcXYZ019-_.:", min_size=1, max_size=6)
score = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["nan", "inf", "1e999", "1_0", "0x1p3", "", "1.5.2", "+3", ".5", "5."]),
)
relevance = st.one_of(
    st.integers(-3, 4).map(str), st.sampled_from(["1.5", "x", "9" * 25, "-0", "+2", ""])
)
separator = st.sampled_from([" ", "\t", "  ", " \t", "\t\t"])


@st.composite
def mutated_files(draw, qrels: bool):
    """Valid-looking lines with random mutations: fields, separators, comments, CR, BOM."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        fields = [draw(token), "0" if qrels else "Q0", draw(token)]
        fields += [draw(relevance)] if qrels else [draw(token), draw(score), draw(token)]
        mutation = draw(st.sampled_from(["none"] * 6 + ["drop", "extra", "comment", "blank"]))
        if mutation == "drop":
            del fields[draw(st.integers(0, len(fields) - 1))]
        elif mutation == "extra":
            fields.append(draw(token))
        line = draw(separator).join(f for f in fields)
        if mutation == "comment":
            line = draw(st.sampled_from(["#", "  #", "# "])) + line
        elif mutation == "blank":
            line = draw(st.sampled_from(["", "   ", "\t"]))
        lines.append(line + draw(st.sampled_from(["\n", "\r\n", "  \n"])))
    data = "".join(lines).encode()
    if draw(st.booleans()):
        data = data.rstrip(b"\n")
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


@FUZZ
@given(data=st.data(), qrels=st.booleans())
def test_mutated_lines_give_a_result_or_a_clean_refusal(tmp_path_factory, data, qrels):
    text = data.draw(mutated_files(qrels))
    found, _ = read_file(tmp_path_factory.mktemp("lines"), text, qrels)
    if found is not None:
        # Whatever pyarrow reads must be what the line-by-line reader reads.
        body = text[3:] if text.startswith(b"\xef\xbb\xbf") else text
        same_records(found, read._read_lines("x", body, qrels=qrels))


@FUZZ
@given(data=st.data(), qrels=st.booleans(), cut=st.floats(0, 1))
def test_truncated_gzip_is_refused_naming_the_file(tmp_path_factory, data, qrels, cut):
    text = data.draw(mutated_files(qrels))
    compressed = gzip.compress(text)
    found, error = read_file(
        tmp_path_factory.mktemp("gzip"),
        compressed[: int(len(compressed) * cut)],
        qrels,
        text=text,
    )
    if error is not None and isinstance(error, OSError):
        assert "cannot read this gzip file" in str(error)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(token, token, st.floats(-1e6, 1e6, allow_nan=False), token),
        min_size=1,
        max_size=40,
    ),
    delimiter=st.sampled_from([" ", "\t"]),
)
def test_regular_files_read_the_same_by_both_paths(rows, delimiter):
    text = "".join(
        delimiter.join([q, "Q0", d, "1", repr(s), t]) + "\n" for q, d, s, t in rows
    ).encode()
    fast = read._read_regular("x", [(text, len(text))], len(text), qrels=False)
    assert fast is not None
    # The records carry no bytes; the reader keeps the text of a stream.
    same_records(read.TrecFile(*fast[:-1], text), read._read_lines("x", text, qrels=False))


def test_a_nul_byte_is_refused_with_its_line(tmp_path):
    found, error = read_file(tmp_path, b"q 0 d 1\nq 0 e\x00 1\n", qrels=True)
    assert found is None and ":2: the line holds a NUL byte" in str(error)


def test_content_lines_skip_blank_and_comment_lines():
    data = b"a\n\n  # c\nb\n  \r\nc"
    assert read.content_lines(data).tolist() == [1, 4, 6]
    assert read.content_lines(b"").tolist() == []
    assert read.content_lines(b"\n\n#x\n").tolist() == []


# --- reading in blocks and parsing in pieces, for the progress line ---------------------


def _run_text(lines: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return b"".join(
        f"q{i % 7} Q0 d{rng.integers(10**6)}-{i} {i + 1} {rng.random():.6f} sys\n".encode()
        for i in range(lines)
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_a_file_is_read_in_blocks_with_its_progress(tmp_path, monkeypatch, compressed):
    text = _run_text(3_000)
    monkeypatch.setattr(_files, "READ_BLOCK", 4_096)
    # Two gzip members, read one after the other as gzip itself does.
    half = len(text) // 2
    data = gzip.compress(text[:half]) + gzip.compress(text[half:]) if compressed else text
    path = tmp_path / "run"
    path.write_bytes(b"\xef\xbb\xbf" + text if not compressed else data)
    calls = []
    got = _files.read_bytes(path, progress=lambda done, total: calls.append((done, total)))
    assert isinstance(got, bytearray) and got == text  # the byte-order mark is dropped
    size = path.stat().st_size
    assert len(calls) >= 3 and all(total == size for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == size


def test_a_large_file_is_parsed_in_pieces_to_the_same_records(tmp_path, monkeypatch):
    text = _run_text(2_000, seed=1)
    path = tmp_path / "run"
    path.write_bytes(text)
    whole = read.read_run(path)
    monkeypatch.setattr(read, "PARSE_PIECE", 10_000)
    stages = []
    pieces = read.read_run(path, progress=lambda *call: stages.append(call))
    same_records(pieces, whole)
    parsed = [(done, total) for stage, done, total in stages if stage == "parsing"]
    assert len(parsed) >= len(text) // 10_000 - 1
    assert parsed[-1] == (len(text), len(text))
    # Every "reading" call comes before the first "parsing" one.
    order = [stage for stage, _, _ in stages]
    assert order == sorted(order, key=["reading", "parsing"].index) and "reading" in order


@pytest.mark.parametrize("compressed", [False, True])
def test_a_pipe_is_read_whole_as_a_shell_passes_it(tmp_path, pipe, compressed):
    # `lodestar evaluate qrels <(zcat run.gz)` names a pipe.
    text = _run_text(500)
    fifo = pipe(gzip.compress(text) if compressed else text)
    got = read.read_run(fifo, progress=lambda *call: None)
    path = tmp_path / "run"
    path.write_bytes(text)
    same_records(got, read.read_run(path))


# --- Plain files are read a piece at a time, each let go once parsed ----------------


def read_whole(monkeypatch):
    """Read every file whole, as standard input and gzip files are read."""
    monkeypatch.setattr(read, "open_plain", lambda *args, **kwargs: None)


@FUZZ
@given(data=st.data(), qrels=st.booleans(), piece=st.sampled_from([16, 64, 1 << 26]))
def test_a_file_read_in_pieces_reads_as_a_whole_one(tmp_path_factory, data, qrels, piece):
    # Every file the reader meets, read in pieces (as a plain file is) and
    # whole: the same records, or the same refusal.
    text = data.draw(mutated_files(qrels))
    directory = tmp_path_factory.mktemp("pieces")
    with pytest.MonkeyPatch.context() as monkeypatch:
        read_whole(monkeypatch)
        whole_found, whole_error = read_file(directory, text, qrels)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(read, "PARSE_PIECE", piece)
        pieces_found, pieces_error = read_file(directory, text, qrels)
    assert str(pieces_error) == str(whole_error)
    if whole_found is not None:
        assert pieces_found is not None
        same_records(pieces_found, whole_found)


def test_a_plain_file_is_read_and_parsed_a_piece_at_a_time(tmp_path, monkeypatch):
    text = _run_text(2_000, seed=2).replace(b"\n", b"\r\n")  # CRLF: counted in each piece
    path = tmp_path / "run"
    path.write_bytes(text)
    read_whole(monkeypatch)
    whole = read.read_run(path)
    monkeypatch.undo()
    monkeypatch.setattr(read, "PARSE_PIECE", 10_000)
    pieces = []

    def read_pieces(*args):
        for block, end in _files.read_pieces(*args):
            pieces.append(block[:end])
            yield block, end

    monkeypatch.setattr(read, "read_pieces", read_pieces)
    same_records(read.read_run(path), whole)
    # Whole lines of about a piece each, the file once over.
    assert b"".join(pieces) == text and len(pieces) >= len(text) // 10_000
    assert all(piece.endswith(b"\r\n") for piece in pieces)
    assert all(len(piece) <= 10_000 for piece in pieces)


def test_a_named_pipe_is_not_opened_to_be_read_in_pieces(pipe):
    # Opened to be looked at, a pipe (<(zcat run.gz)) gave its writer's text
    # to the look, and the reader then waited for more forever (a hang of
    # the default tier, caught in a loop of runs).
    import threading

    path = pipe(_run_text(50))  # within a pipe's buffer: the writer is done at once
    found = []
    reader = threading.Thread(target=lambda: found.append(read.read_run(path)), daemon=True)
    reader.start()
    reader.join(timeout=20)
    if reader.is_alive():  # let it end: a writer that closes at once gives it an end of file
        with open(path, "wb"):
            pass
        reader.join(timeout=20)
    assert found and len(found[0]) == 50, "the reader waited for a writer that had gone"


def test_a_file_that_is_not_plain_text_is_read_whole(tmp_path):
    text = _run_text(50)
    cases = {
        "plain": text,
        "gzip": gzip.compress(text),
        "bom": b"\xef\xbb\xbf" + text,
        "empty": b"",
    }
    plain = {}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        file = _files.open_plain(tmp_path / name)
        plain[name] = file is not None
        if file is not None:
            file.close()
    assert plain == {"plain": True, "gzip": False, "bom": False, "empty": False}
    assert _files.open_plain("-", dash_is_stdin=True) is None
    assert _files.open_plain(tmp_path / "missing") is None


# The peak from /proc (VmHWM, this process's own): getrusage's ru_maxrss
# starts a child at its parent's peak, a test worker's hundreds of MB.
PEAK = """
import sys
from lodestar import _files
from lodestar._trec import read
def peak():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
if sys.argv[2] == "whole":
    read.open_plain = lambda *args, **kwargs: None
before = peak()
found = read.read_run(sys.argv[1])
print(peak() - before, len(found))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/self/status")
def test_a_run_read_in_pieces_never_holds_its_bytes_and_its_columns_at_once(tmp_path):
    # The peak of reading a ten-million-line run was its bytes (377 MB) and
    # pyarrow's parsed columns together. Here a 100 MB run: read in pieces,
    # the reader's peak grows by less than half the file's size than read
    # whole.
    import subprocess
    import sys

    path = tmp_path / "run"
    block = _run_text(20_000, seed=3)
    with open(path, "wb") as file:
        for _ in range(-(-100_000_000 // len(block))):
            file.write(block)
    size_mb = path.stat().st_size / 2**20
    env = {"PYTHONPATH": str(SRC)}
    peaks = {}
    for how in ("whole", "pieces"):
        out = subprocess.run(
            [sys.executable, "-c", PEAK, str(path), how],
            capture_output=True, text=True, check=True, env={**os.environ, **env},
        ).stdout.split()  # fmt: skip
        peaks[how] = float(out[0])
    assert peaks["whole"] - peaks["pieces"] > 0.6 * size_mb, (peaks, size_mb)
