"""Reading TREC qrels and runs into dictionary-encoded columns.

The formats are trec_eval's (``get_qrels.c``, ``get_trec_results.c``):

* **qrels**: ``qid iter docno rel``, exactly four fields; ``rel`` an integer.
* **run**: ``qid Q0 docno rank score runid``, six fields or more: trec_eval
  ignores fields after the sixth, and so does lodestar. The rank column is not
  read (documents are ranked by score); the run is named by the ``runid`` of
  its last line, as trec_eval names it.

Fields are separated by ASCII whitespace. Blank lines, and lines whose first
non-blank byte is ``#``, are skipped. A line of more than
:data:`LONGEST_LINE` bytes is refused as soon as it is read. Either file may be gzip-compressed
(recognised by its first bytes, whatever its name), and ``-`` reads standard
input. UTF-8 byte-order marks at the start of a file are not part of the
first field: editors on Windows write one, and it would otherwise split a
query in two.

Reading is strict. A wrong number of fields, a relevance that is not an
integer, a score that is not a finite number, a NUL byte, or a gzip stream
that is truncated or corrupt is refused with the file, the 1-based line and
what was expected (trec_eval reads a malformed number as 0). Identifiers are
bytes, never decoded: two query ids that differ in any byte are different
queries.

Two readers give the same result. Most files are regular (one delimiter,
six or four fields on every line, no comments), and pyarrow's multithreaded
CSV parser reads them and dictionary-encodes the identifiers in C++. Any file
it cannot read exactly falls back to a line-by-line reader, which also words
every refusal. Decision 0018 records the measurements.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from lodestar._files import (
    READ_BLOCK,
    Progress,
    long_line_at,
    open_plain,
    read_bytes,
    read_pieces,
    rereadable,
)

# progress(stage, done, total): bytes read ("reading") or parsed ("parsing")
# of all.
Stages = Callable[[str, int, int], None]
# A large file is read (a plain one) and parsed in pieces of about this size,
# so that a progress line can follow it and a plain file's bytes are never
# all held. Pieces of 16 MiB, which the C library's heap keeps between
# pieces, read the TREC-depth run faster than 64 MiB ones, which are fresh
# pages every time (decision 0039).
PARSE_PIECE = 1 << 24
# No line of a qrels or run is longer: a longer one is refused as soon as it
# is read, so that a gzip of one endless line costs a block of memory, not
# the line. trec_eval has no limit of its own (it reads a file whole, and
# standard input in steps of 10,000 bytes, its MAXLINE, that it joins
# again), but a TREC line is four to six short fields: identifiers of tens
# of bytes, a URL as a docno of a few kB at most. 64 KiB is ten times the
# longest of those and bounds a refused line's cost to reading one block.
LONGEST_LINE = 1 << 16
QRELS_FIELDS = ("qid", "iter", "docno", "rel")
RUN_FIELDS = ("qid", "Q0", "docno", "rank", "score", "runid")


class TrecFile(NamedTuple):
    """The records of a qrels or run file, identifiers dictionary-encoded.

    Attributes:
      path: The file name, for messages.
      query: int32 ``(records,)`` code of each record's query in ``query_ids``.
      query_ids: The distinct query ids.
      docno: int32 ``(records,)`` code of each record's docno in ``docnos``.
      docnos: The distinct docnos, a pyarrow binary array.
      values: ``(records,)`` relevance (int64, qrels) or score (float64, run).
      runid: The run's name (the last line's sixth field); None for qrels.
      lines: int64 ``(records,)`` 1-based line of each record, or None when
        the records are the file's content lines in order (found on demand
        by :meth:`line`).
      data: The decompressed bytes of standard input or a pipe, kept only
        to locate lines; None for a regular file, which :meth:`line` reads
        again (only a refusal needs a line number, and a run's bytes can be
        most of the program's memory).
    """

    path: str
    query: np.ndarray
    query_ids: list[bytes]
    docno: np.ndarray
    docnos: pa.Array
    values: np.ndarray
    runid: bytes | None
    lines: np.ndarray | None
    data: bytes | bytearray | None

    def line(self, record: int) -> int:
        """The 1-based line number of ``record``."""
        if self.lines is not None:
            return int(self.lines[record])
        data = self.data
        if data is None:
            data = read_bytes(
                self.path, dash_is_stdin=True, refuse_nul=True, longest_line=LONGEST_LINE
            )
        return int(content_lines(data)[record])

    def __len__(self) -> int:
        return len(self.query)


def show(token: bytes) -> str:
    """A token as it appears in messages: UTF-8, other bytes escaped."""
    return token.decode("utf-8", "backslashreplace")


def refuse(path: str, line: int, message: str) -> ValueError:
    """The error for a refused line: ``path:line: message``."""
    return ValueError(f"{path}:{line}: {message}")


def content_lines(data: bytes | bytearray) -> np.ndarray:
    """1-based numbers of the lines that hold a record (not blank, not a comment)."""
    buffer = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(buffer == 10)
    if not len(buffer) or buffer[-1] != 10:
        ends = np.append(ends, len(buffer))
    starts = np.concatenate(([0], ends[:-1] + 1))
    blank = (buffer == 32) | ((buffer >= 9) & (buffer <= 13))
    text = np.flatnonzero(~blank)  # positions of non-blank bytes
    if not len(text):
        return np.zeros(0, np.int64)
    # A line holds a record if its first non-blank byte lies inside it and is not '#'.
    first = text[np.minimum(np.searchsorted(text, starts), len(text) - 1)]
    record = (first >= starts) & (first < ends) & (buffer[first] != ord("#"))
    return np.flatnonzero(record) + 1


def _expected(fields: tuple[str, ...], *, at_least: bool) -> str:
    count = f"{len(fields)} fields" if not at_least else f"{len(fields)} or more fields"
    return f"{count} ({' '.join(fields)})"


def read_qrels(
    path: str | os.PathLike, *, judgment_groups: bool = False, progress: Stages | None = None
) -> TrecFile:
    """Read a qrels file: ``qid iter docno rel`` per line, ``rel`` an integer.

    With ``judgment_groups`` the second field names the judgment group
    (trec_eval's ``qrels_jg`` format, ``get_qrels_jg.c``), and each record's
    query is the pair ``qid jg``, one space between: a query judged by three
    groups reads as three queries, which :mod:`lodestar._trec.groups` pairs
    with the run's query and averages back. ``progress`` is
    :func:`read_run`'s.

    Raises:
      ValueError: a line is malformed (the message names the file and line).
      OSError: the file cannot be read or decompressed.
    """
    return _read(path, qrels=True, groups=judgment_groups, progress=progress)


def read_run(path: str | os.PathLike, *, progress: Stages | None = None) -> TrecFile:
    """Read a run: ``qid Q0 docno rank score runid [more fields]`` per line, ``score`` finite.

    Args:
      path: The file (plain or gzip), or ``-`` for standard input.
      progress: Called as ``progress(stage, done, total)``: stage
        ``"reading"`` with the file's bytes read of its size, then
        ``"parsing"`` with the bytes parsed of all of them.

    Raises:
      ValueError: a line is malformed (the message names the file and line).
      OSError: the file cannot be read or decompressed.
    """
    return _read(path, qrels=False, progress=progress)


def _read(path, *, qrels: bool, groups: bool = False, progress: Stages | None = None) -> TrecFile:
    name = os.fspath(path)
    reading = parsing = None
    if progress is not None:
        reading = functools.partial(progress, "reading")
        parsing = functools.partial(progress, "parsing")
    found, data = None, None
    # A plain file is read a piece at a time, each parsed and let go, so that
    # its bytes and the parsed columns are not all held at once.
    plain = open_plain(path, dash_is_stdin=True)
    if plain is not None:
        with plain:
            size = os.fstat(plain.fileno()).st_size
            if reading is not None:
                reading(size, size)
            pieces = read_pieces(name, plain, PARSE_PIECE)
            found = _read_regular(name, pieces, size, qrels=qrels, groups=groups, progress=parsing)
    if found is None:
        data = read_bytes(
            path,
            progress=reading,
            dash_is_stdin=True,
            refuse_nul=True,
            longest_line=LONGEST_LINE,
        )
        if plain is None:  # a plain file that was not regular is not parsed twice
            found = _read_regular(
                name, [(data, len(data))], len(data), qrels=qrels, groups=groups, progress=parsing
            )
    # pyarrow's allocator returns freed memory to the system only after a
    # delay; the parsed table is gone, and the join is about to allocate as
    # much again.
    pa.default_memory_pool().release_unused()
    if found is None:
        assert data is not None
        # The line-by-line reader's tokens are dictionary keys: bytes.
        found = _read_lines(name, bytes(data), qrels=qrels, groups=groups)
    # A regular file can be read again to locate a line; standard input and
    # a pipe cannot. (Not ``_replace``: a TrecFile's ``len`` counts its records.)
    return TrecFile(*found[:-1], None if rereadable(name) else data)


# --------------------------------------------------------------------------
# Regular files: pyarrow's parser
# --------------------------------------------------------------------------


def _read_regular(
    name: str,
    pieces: Iterable[tuple[bytes | bytearray, int]],
    size: int,
    *,
    qrels: bool,
    groups: bool = False,
    progress: Progress | None = None,
) -> TrecFile | None:
    """The file read by pyarrow, or None if it is not regular enough to be read exactly.

    Regular: one delimiter (a tab, or a single space) between exactly four
    (qrels) or six (run) fields on every line, no comment, no NUL byte, no
    line longer than :data:`LONGEST_LINE`, and numbers pyarrow parses to
    what the line-by-line reader would accept. Each piece
    ``block[:end]`` (:func:`lodestar._files.read_pieces`; all of a file
    held in memory is one) is checked, then parsed in parts of whole lines
    (:data:`PARSE_PIECE` bytes or so), one table chunk each, with
    ``progress(done, size)`` after each part. The records carry no bytes
    (``data`` is None): the caller keeps what it must.
    """
    fields = QRELS_FIELDS if qrels else RUN_FIELDS
    value_field = 3 if qrels else 4
    names = [f"f{i}" for i in range(len(fields))]
    types = {n: pa.binary() for n in names}
    types[names[value_field]] = pa.int64() if qrels else pa.float64()
    wanted = [names[0], names[2], names[value_field]] + ([names[1]] if groups else [])
    options = {
        "read_options": pcsv.ReadOptions(column_names=names, block_size=READ_BLOCK),
        "convert_options": pcsv.ConvertOptions(
            column_types=types, include_columns=wanted, strings_can_be_null=False
        ),
    }
    parts, done, delimiter, last_line = [], 0, None, b""
    for block, end in pieces:
        if not end:
            return None  # a line longer than a piece: the whole file is read and refused
        if any(block.find(byte, 0, end) >= 0 for byte in (b"#", b"\x00", b"\x0b", b"\x0c")):
            return None
        if block.find(b"\r", 0, end) >= 0 and block.count(b"\r", 0, end) != block.count(
            b"\r\n", 0, end
        ):
            return None
        if long_line_at(block, 0, end, LONGEST_LINE) >= 0:
            return None  # the whole file is read, and the line refused with its number
        if delimiter is None:
            newline = block.find(b"\n", 0, end)
            first_line = block[: newline if newline >= 0 else end]
            if not first_line.strip():
                return None
            delimiter = "\t" if b"\t" in first_line else " "
            options["parse_options"] = pcsv.ParseOptions(
                delimiter=delimiter,
                quote_char=False,
                escape_char=False,
                double_quote=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            )
        # One delimiter only: any other whitespace inside a line would split a
        # field for the line-by-line reader but not for the CSV parser.
        if block.find(b" " if delimiter == "\t" else b"\t", 0, end) >= 0:
            return None
        buffer, start = pa.py_buffer(block), 0
        try:
            while start < end:
                newline = block.find(b"\n", start + PARSE_PIECE, end)
                stop = end if newline < 0 else newline + 1
                parts.append(pcsv.read_csv(buffer.slice(start, stop - start), **options))
                start = stop
                if progress is not None:
                    progress(done + stop, size)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        last_line = _last_line(block, end) or last_line
        done += end
        # Let go of the piece before the next is read: two are never held.
        del block, buffer
    table = pa.concat_tables(parts)  # the data hold a line, so there is a part
    del parts
    for column in wanted:
        chunks = table.column(column)
        if chunks.null_count:
            return None
        if column in (names[0], names[1], names[2]):
            # pyarrow.compute makes its functions at import, where pyright cannot see them.
            # (A Python 0 compared with pc.equal would import pandas: its min is read.)
            lengths = pc.binary_length(chunks)  # pyright: ignore[reportAttributeAccessIssue]
            if len(lengths) and pc.min(lengths).as_py() == 0:  # pyright: ignore[reportAttributeAccessIssue]
                return None  # an empty field: two delimiters in a row
    values = numpy_of(table.column(names[value_field]))
    if not qrels and not np.isfinite(values).all():
        return None  # the line-by-line reader words the refusal
    if groups:
        # pyarrow.compute makes its functions at import, where pyright cannot see them.
        join = pc.binary_join_element_wise  # pyright: ignore[reportAttributeAccessIssue]
        pairs = join(table.column(names[0]), table.column(names[1]), b" ")
        table = table.drop_columns([names[0], names[1]]).append_column(names[0], pairs)
    query_codes, query_ids = _encode(table, names[0])
    table = table.drop_columns([names[0]])  # frees the query ids before the docnos are coded
    docno_codes, docnos = _encode(table, names[2])
    runid = None
    if not qrels and len(values):
        # The run is named by its last line's sixth field: read from that line
        # alone, not parsed as a column of every line.
        assert delimiter is not None
        runid = bytes(last_line.split(delimiter.encode())[5])
    return TrecFile(
        name,
        query_codes,
        query_ids.to_pylist(),
        docno_codes,
        docnos,
        values,
        runid,
        None,
        None,
    )


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint64(): np.uint64,
    pa.float64(): np.float64,
}


def numpy_of(array: pa.Array | pa.ChunkedArray, *, null: int | None = None) -> np.ndarray:
    """A fixed-width Arrow column as a NumPy array, read from its buffers.

    ``to_numpy`` and ``fill_null`` give the same values, but their first call
    imports pandas (0.2 s) wherever pandas is installed, which a Python script
    calling :func:`lodestar.evaluate` or :func:`lodestar.compare` would pay on
    every run for nothing.

    Args:
      array: The column.
      null: The value of a null item; None if the column holds no null.
    """
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 0:
            return np.zeros(0, _NUMPY_TYPES[array.type])
        array = array.chunk(0) if array.num_chunks == 1 else pa.concat_arrays(array.chunks)
    dtype = np.dtype(_NUMPY_TYPES[array.type])
    validity, values = array.buffers()[:2]
    assert values is not None
    out = np.frombuffer(values, dtype, count=len(array), offset=array.offset * dtype.itemsize)
    if array.null_count:
        assert null is not None and validity is not None, "a null with no value to give it"
        bits = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")
        valid = bits[array.offset : array.offset + len(array)].astype(bool)
        out = np.where(valid, out, np.asarray(null, dtype))
    return out


def binary_array(values: list[bytes]) -> pa.Array:
    """Arrow's binary array of ``values``, built from its buffers (``pa.array`` imports pandas)."""
    lengths = np.fromiter(map(len, values), np.int64, count=len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] < 2**31:
        buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(values))]
        return pa.Array.from_buffers(pa.binary(), len(values), buffers)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))]
    return pa.Array.from_buffers(pa.large_binary(), len(values), buffers).cast(pa.binary())


def _last_line(data: bytes | bytearray, end: int) -> bytes | bytearray:
    """The last non-empty line of ``data[:end]``, without its line end; ``data`` is not copied."""
    while end and data[end - 1 : end] in (b"\n", b"\r"):
        end -= 1
    return data[data.rfind(b"\n", 0, end) + 1 : end]


def _encode(table: pa.Table, column: str) -> tuple[np.ndarray, pa.Array]:
    """int32 codes of a binary column and its distinct values, in order of first appearance.

    The column's chunks are coded in place, with one dictionary shared by
    all of them (pyarrow codes a chunked array that way), so no combined copy
    of the column is made.
    """
    # pyarrow.compute makes its functions at import, where pyright cannot see them.
    encoded = pc.dictionary_encode(table.column(column))  # pyright: ignore[reportAttributeAccessIssue]
    if not encoded.num_chunks:
        return np.zeros(0, np.int32), binary_array([])
    codes = [numpy_of(chunk.indices) for chunk in encoded.chunks]
    dictionary = encoded.chunk(encoded.num_chunks - 1).dictionary
    return np.concatenate(codes).astype(np.int32, copy=False), dictionary


# --------------------------------------------------------------------------
# Any file: line by line
# --------------------------------------------------------------------------


def _read_lines(name: str, data: bytes, *, qrels: bool, groups: bool = False) -> TrecFile:
    """Read ``data`` line by line, refusing the first malformed line with its number."""
    fields = QRELS_FIELDS if qrels else RUN_FIELDS
    value_field = 3 if qrels else 4
    width = len(fields)
    qids, docnos, values, lines = [], [], [], []
    runid = None
    for number, line in enumerate(data.split(b"\n"), 1):
        tokens = line.split()
        if not tokens or tokens[0].startswith(b"#"):
            continue
        if b"\x00" in line:
            raise refuse(name, number, "the line holds a NUL byte, which is not text")
        count = len(tokens)
        if count != width and (qrels or count < width):
            raise refuse(
                name,
                number,
                f"expected {_expected(fields, at_least=not qrels)}, got {count} field"
                + ("s" if count != 1 else ""),
            )
        qids.append(tokens[0] + b" " + tokens[1] if groups else tokens[0])
        docnos.append(tokens[2])
        values.append(tokens[value_field])
        lines.append(number)
        if not qrels:
            runid = tokens[5]
    line_numbers = np.array(lines, np.int64)

    def place(record: int) -> str:
        return f"{name}:{line_numbers[record]}"

    if qrels:
        parsed = _numbers(values, place, kind=int, what="an integer relevance")
    else:
        parsed = _numbers(values, place, kind=float, what="a finite number as the score")
    return _encoded(name, qids, docnos, parsed, runid, line_numbers, data)


def _encoded(name, qids, docnos, values, runid, lines, data) -> TrecFile:
    """A :class:`TrecFile` of the records, ids coded in their order of first appearance."""
    query_ids = list(dict.fromkeys(qids))
    query_code = dict(zip(query_ids, range(len(query_ids)), strict=True))
    vocabulary = list(dict.fromkeys(docnos))
    docno_code = dict(zip(vocabulary, range(len(vocabulary)), strict=True))
    return TrecFile(
        name,
        np.fromiter(map(query_code.__getitem__, qids), np.int32, len(qids)),
        query_ids,
        np.fromiter(map(docno_code.__getitem__, docnos), np.int32, len(docnos)),
        binary_array(vocabulary),
        values,
        runid,
        lines,
        data,
    )


def _numbers(
    tokens: list[bytes], place: Callable[[int], str], *, kind: type, what: str, field=True
):
    """Parse ``tokens`` as ``kind`` (int or float) in bulk; word the first failure.

    Python's ``int`` and ``float`` also accept ``1_000``, which C's ``atol`` and
    ``atof`` (and so trec_eval) read as 1, so digit separators are refused. A
    refusal starts with ``place(i)`` of the ``i``-th token: a file's
    ``path:line``, or an in-memory record's query and document.
    """
    dtype = np.int64 if kind is int else np.float64
    where = (" (field 4)" if kind is int else " (field 5)") if field else ""
    try:
        if b"_" in b" ".join(tokens):
            raise ValueError
        values = np.fromiter(map(kind, tokens), dtype, len(tokens))
    except (ValueError, OverflowError):
        values = None
    if values is not None and (kind is int or bool(np.isfinite(values).all())):
        return values
    for record, token in enumerate(tokens):
        try:
            number = kind(token) if b"_" not in token else None
        except (ValueError, OverflowError):
            number = None
        if number is None or (kind is float and not np.isfinite(number)):
            raise ValueError(f"{place(record)}: expected {what}{where}, got {show(token)!r}")
        if kind is int and abs(number) >= 2**63:
            raise ValueError(f"{place(record)}: relevance {show(token)} is out of range")
    raise AssertionError("unreachable: bulk parse failed but no token did")  # pragma: no cover


# --------------------------------------------------------------------------
# In-memory sources: dicts, DataFrames, Arrow tables
# --------------------------------------------------------------------------


def identifier(value, *, what: str) -> bytes:
    """An id of an in-memory source as bytes: ``str`` in UTF-8, ``bytes``, or an integer.

    Raises:
      TypeError: ``value`` is of another type; the message names ``what``.
    """
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return str(int(value)).encode()
    raise TypeError(f"{what} must be str, bytes or int; got {type(value).__name__} {value!r}")


def from_records(name: str, qids, docnos, values, *, qrels: bool, runid=None) -> TrecFile:
    """A :class:`TrecFile` from parallel sequences of query ids, docnos and values.

    Ids may be ``str`` (UTF-8), ``bytes`` or integers. Values are checked as
    the files' are: an integer relevance in int64's range, a finite score. A
    refused value is named by its query and document.

    Raises:
      ValueError: a value is refused (the message names ``name``, the
        query and the document).
      TypeError: an id is of another type.
    """
    qid_bytes = [identifier(q, what="query ids") for q in qids]
    docno_bytes = [identifier(d, what="document ids") for d in docnos]
    if not (len(qid_bytes) == len(docno_bytes) == len(values)):
        raise ValueError(f"{name}: query ids, document ids and values differ in length")
    raw = np.asarray(values)
    lines = np.arange(1, len(qid_bytes) + 1, dtype=np.int64)
    # An unsigned relevance past int64 (NumPy holds 2**63 + 5 as uint64) is
    # refused below, as the file reader refuses it, rather than wrapped round.
    past_int64 = raw.dtype.kind == "u" and qrels and bool((raw > np.iinfo(np.int64).max).any())
    if (raw.dtype.kind in "iub" and not past_int64) or (
        qrels and raw.dtype.kind == "f" and len(raw) == 0
    ):
        parsed = raw.astype(np.int64 if qrels else np.float64)
    elif raw.dtype.kind == "f" and not qrels:
        parsed = raw.astype(np.float64)
    else:
        parsed = None
    if parsed is None or (not qrels and not np.isfinite(parsed).all()):
        what = "an integer relevance" if qrels else "a finite number as the score"
        tokens = [str(v).encode() for v in values]

        def place(record: int) -> str:
            query, document = show(qid_bytes[record]), show(docno_bytes[record])
            return f"{name}: query {query!r}, document {document!r}"

        parsed = _numbers(tokens, place, kind=int if qrels else float, what=what, field=False)
    if qrels or runid is None:
        runid = None
    else:
        runid = identifier(runid, what="run ids")
    return _encoded(name, qid_bytes, docno_bytes, parsed, runid, lines, b"")
