"""Reading a file's bytes: plain or gzip, from a path, a pipe or standard input.

Both readers of the package, the TREC files' (:mod:`lodestar._trec.read`) and
the LETOR files' (:func:`lodestar.datasets.load_svmlight`), read through
:func:`read_bytes`, so that they accept the same files: gzip is recognised by
its first bytes whatever the file's name, several gzip members are read one
after the other, a truncated or corrupt stream is refused naming the file,
and a UTF-8 byte-order mark at the start of the text is dropped.

A regular file is never mapped: another program that truncates a mapped
file under its reader ends the reader with SIGBUS, which Python cannot
catch inside the C code that scans or parses the map. A large plain file is
read a piece at a time instead (:func:`read_pieces`), and every regular file
read is refused if it changed while it was read (decision 0039).
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterator

# progress(done, total): bytes read so far, of all.
Progress = Callable[[int, int], None]
# Files are read and decompressed in blocks of this size, so that a progress
# line can follow a large file.
READ_BLOCK = 1 << 24

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


def read_bytes(
    path: str | os.PathLike,
    *,
    progress: Progress | None = None,
    dash_is_stdin: bool = False,
    refuse_nul: bool = False,
    longest_line: int | None = None,
) -> bytes | bytearray:
    """The file's bytes, decompressed if gzip.

    A file is read in blocks into one ``bytearray`` (decompressed block by
    block if gzip), so that ``progress`` can follow it, each block can be
    checked as it comes, and no second copy of the bytes is ever made.
    Standard input, a pipe (``<(zcat run.gz)``) and a device, whose size is
    unknown, are read in blocks too.

    Args:
      path: The file.
      progress: Called as ``progress(done, total)`` with the bytes of the
        file read so far (compressed bytes, for gzip) and its size, after
        each block.
      dash_is_stdin: Read ``-`` as standard input, as the TREC files of the
        command line and of :func:`lodestar.evaluate` do. Otherwise a path
        names a file, whatever it is.
      refuse_nul: Refuse text holding a NUL byte as soon as a block that is
        read holds one: a text format that refuses NUL bytes anyway then
        refuses ``/dev/zero`` and a gzip bomb of zeros at their first block,
        instead of reading them until memory runs out.
      longest_line: Refuse a line of more than this many bytes (its line end
        not counted) as soon as a block that is read holds one, so that a
        gzip bomb of one endless line costs a block of memory, not the line.

    Raises:
      OSError: the file cannot be read, it is a truncated or corrupt gzip
        stream, or it changed while it was read; the message names the
        file.
      ValueError: with ``refuse_nul``, the text holds a NUL byte (the
        message is ``path:line: the line holds a NUL byte, which is not
        text``); with ``longest_line``, a line is longer (``path:line: the
        line is longer than N bytes``).
      MemoryError: the decompressed data do not fit in memory; the message
        names the file.
    """
    name = os.fspath(path)
    check = None
    if refuse_nul or longest_line is not None:
        check = functools.partial(_check_text, name, refuse_nul, longest_line)
    if dash_is_stdin and name == "-":
        data = _stream(name, sys.stdin.buffer, check)
    else:
        with open(name, "rb") as file:
            if not file.seekable():  # a pipe, as from ``<(zcat run.gz)``: its size is unknown
                data = _stream(name, file, check)
            else:
                before = os.fstat(file.fileno())
                gzipped = file.read(2) == _GZIP_MAGIC
                file.seek(0)
                if gzipped:
                    data = _gunzip(name, file, before.st_size, progress, check)
                else:
                    data = _read_rest(file, bytearray(), check, before.st_size, progress)
                _refuse_if_changed(name, file, before)
    # Every leading byte-order mark goes, not only the first: a file saved
    # twice by a careless editor holds two, and pyarrow's CSV reader drops a
    # mark of its own, so stripping one would leave the two readers apart.
    marks = 0
    while data.startswith(_BOM, marks):
        marks += len(_BOM)
    if marks:
        if isinstance(data, bytearray):
            del data[:marks]  # in place: no copy of a large file
        else:
            data = data[marks:]
    return data


def open_plain(path: str | os.PathLike, *, dash_is_stdin: bool = False) -> io.BufferedReader | None:
    """A plain text file opened for :func:`read_pieces`, or None to read it with :func:`read_bytes`.

    Plain: a regular file that is not empty, not gzip and does not start
    with a byte-order mark. Any other file (and standard input, a pipe)
    gives None, and :func:`read_bytes` reads it, refusing what it refuses.
    """
    name = os.fspath(path)
    if dash_is_stdin and name == "-":
        return None
    # Asked before opening: opening a named pipe (``<(zcat run.gz)``) would
    # take its writer's text, and read_bytes would then wait for more forever.
    if not os.path.isfile(name):
        return None
    try:
        file = open(name, "rb")  # noqa: SIM115 - the caller closes it
    except OSError:
        return None  # read_bytes words the error
    start = file.read(max(len(_GZIP_MAGIC), len(_BOM)))
    if not start or start.startswith((_GZIP_MAGIC, _BOM)):
        file.close()
        return None
    file.seek(0)
    return file


def read_pieces(name: str, file: io.BufferedReader, piece: int) -> Iterator[tuple[bytes, int]]:
    """A plain file's bytes, a piece of about ``piece`` bytes at a time, each cut at a line end.

    Yields ``(block, end)``: the piece is ``block[:end]``, its lines whole;
    the bytes after ``end``, the start of a line, are read again with the
    next piece, so that no piece is copied to be cut. ``end`` is 0 when a
    block of ``piece`` bytes holds no line end. Only one piece needs to be
    held at a time: a reader that parses each and lets it go never holds
    the whole file.

    Raises:
      OSError: the file changed (its size or its modification time) while
        it was read; the message names the file.
    """
    before = os.fstat(file.fileno())
    while block := file.read(piece):
        end = len(block) if len(block) < piece else block.rfind(b"\n") + 1
        if 0 < end < len(block):
            file.seek(end - len(block), os.SEEK_CUR)
        yield block, end
        del block  # not held while the next piece is read
    _refuse_if_changed(name, file, before)


def long_line_at(data, start: int, end: int, longest: int) -> int:
    """Where a line longer than ``longest`` bytes starts in ``data[start:end]``, or -1.

    ``start`` is where a line starts; a line that runs past ``end`` counts
    its bytes up to ``end``. One backward search per ``longest`` bytes, not
    one per line, so that a file of short lines is checked at the speed of
    a scan.
    """
    while end - start > longest:
        newline = data.rfind(b"\n", start, start + longest + 1)
        if newline < 0:
            return start
        start = newline + 1
    return -1


def rereadable(name: str) -> bool:
    """Whether the file can be read a second time (not standard input or a pipe)."""
    return name != "-" and os.path.isfile(name)


def _refuse_if_changed(name: str, file, before: os.stat_result) -> None:
    """Refuse a file whose size or modification time is no longer ``before``'s.

    A file truncated or rewritten while it was read gives a mix of its old
    and new text, or a part of either: a plausible wrong result.
    """
    after = os.fstat(file.fileno())
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise OSError(f"{name}: the file changed while it was read")


def _check_text(
    name: str, refuse_nul: bool, longest_line: int | None, data: bytearray, start: int
) -> None:
    """Refuse ``data`` if its bytes from ``start`` on hold a NUL or end a line that is too long.

    The line found too long is named by its number: the count of line ends
    before it is taken only then.
    """
    if refuse_nul:
        at = data.find(b"\x00", start)
        if at >= 0:
            line = data.count(b"\n", 0, at) + 1
            raise ValueError(f"{name}:{line}: the line holds a NUL byte, which is not text")
    if longest_line is not None:
        # Only the line running into this block is searched back for its
        # start, and no further than a line may be long: where no line end
        # is found there, that line is too long, and the search starts
        # inside it.
        lower = max(start - longest_line - 1, 0)
        line_start = data.rfind(b"\n", lower, start) + 1 or lower
        at = long_line_at(data, line_start, len(data), longest_line)
        if at >= 0:
            line = data.count(b"\n", 0, at) + 1
            raise ValueError(f"{name}:{line}: the line is longer than {longest_line:,} bytes")


def _read_rest(
    file, data: bytearray, check, size: int = 0, progress: Progress | None = None
) -> bytearray:
    """``data`` with the rest of ``file`` appended in blocks, each checked by ``check``.

    ``progress(done, size)`` follows a file of known ``size``; a file that
    grew while it was read, or a device whose size is 0 (``/dev/zero``), is
    read on, checked as it comes.
    """
    while block := file.read(READ_BLOCK):
        data += block
        if check is not None:
            check(data, len(data) - len(block))
        if progress is not None and size:
            progress(min(len(data), size), size)
    return data


def _stream(name: str, file, check) -> bytearray:
    """A stream of unknown size (standard input, a pipe, a device), decompressed if gzip.

    Compressed bytes are read whole and checked as they decompress; text is
    checked block by block as it is read.
    """
    first = file.read(len(_GZIP_MAGIC))
    if first == _GZIP_MAGIC:
        return _gunzip(name, io.BytesIO(first + file.read()), check=check)
    return _read_rest(file, bytearray(first), check)


def _gunzip(
    name: str, file, size: int = 0, progress: Progress | None = None, check=None
) -> bytearray:
    """A gzip stream's bytes (every member), decompressed block by block."""
    data = bytearray()
    try:
        with gzip.GzipFile(fileobj=file, mode="rb") as stream:
            while block := stream.read(READ_BLOCK):
                data += block
                if check is not None:
                    check(data, len(data) - len(block))
                if progress is not None and size:
                    progress(min(file.tell(), size), size)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        reason = "it ends before the compressed stream does"
        if not isinstance(error, EOFError):
            reason = f"the compressed stream is corrupt ({error})"
        raise OSError(f"{name}: cannot read this gzip file: {reason}") from None
    except MemoryError:
        raise MemoryError(f"{name}: the gzip data decompress to more than fits") from None
    return data
