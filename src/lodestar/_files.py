"""Reading a file's bytes: plain or gzip, from a path, a pipe or standard input.

Both readers of the package, the TREC files' (:mod:`lodestar._trec.read`) and
the LETOR files' (:func:`lodestar.datasets.load_svmlight`), read through
:func:`read_bytes`, so that they accept the same files: gzip is recognised by
its first bytes whatever the file's name, several gzip members are read one
after the other, a truncated or corrupt stream is refused naming the file,
and a UTF-8 byte-order mark at the start of the text is dropped.
"""

from __future__ import annotations

import functools
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable

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
) -> bytes | bytearray:
    """The file's bytes, decompressed if gzip.

    A file is read in blocks into one ``bytearray`` (decompressed block by
    block if gzip), so that ``progress`` can follow it and no second copy of
    the bytes is ever made. Standard input, a pipe (``<(zcat run.gz)``) and a
    device, whose size is unknown, are read in blocks too.

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

    Raises:
      OSError: the file cannot be read, or it is a truncated or corrupt gzip
        stream; the message names the file.
      ValueError: with ``refuse_nul``, the text holds a NUL byte; the message
        is ``path:line: the line holds a NUL byte, which is not text``.
      MemoryError: the decompressed data do not fit in memory; the message
        names the file.
    """
    name = os.fspath(path)
    check = functools.partial(_check_text, name) if refuse_nul else None
    if dash_is_stdin and name == "-":
        data = _stream(name, sys.stdin.buffer, check)
    else:
        with open(name, "rb") as file:
            if not file.seekable():  # a pipe, as from ``<(zcat run.gz)``: its size is unknown
                data = _stream(name, file, check)
            else:
                size = os.fstat(file.fileno()).st_size
                gzipped = file.read(2) == _GZIP_MAGIC
                file.seek(0)
                if gzipped:
                    data = _gunzip(name, file, size, progress, check)
                else:
                    data = _read_blocks(file, size, progress, check)
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


def rereadable(name: str) -> bool:
    """Whether the file can be read a second time (not standard input or a pipe)."""
    return name != "-" and os.path.isfile(name)


def _check_text(name: str, data: bytearray, start: int) -> None:
    """Refuse ``data`` if its bytes from ``start`` on hold a NUL, naming the line."""
    at = data.find(b"\x00", start)
    if at >= 0:
        line = data.count(b"\n", 0, at) + 1
        raise ValueError(f"{name}:{line}: the line holds a NUL byte, which is not text")


def _read_rest(file, data: bytearray, check) -> bytearray:
    """``data`` with the rest of ``file`` appended in blocks, each checked by ``check``."""
    while block := file.read(READ_BLOCK):
        data += block
        if check is not None:
            check(data, len(data) - len(block))
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


def _read_blocks(file, size: int, progress: Progress | None, check=None) -> bytearray:
    """A regular file's bytes, read into one bytearray in blocks of :data:`READ_BLOCK`."""
    data = bytearray(size)
    view, done = memoryview(data), 0
    while done < size:
        count = file.readinto(view[done : done + READ_BLOCK])
        if not count:
            break  # the file shrank while it was read
        done += count
        if progress is not None:
            progress(done, size)
    view.release()
    del data[done:]
    # A file that grew while it was read, or a device whose size is 0
    # (/dev/zero): its further bytes as well, checked as they come.
    return _read_rest(file, data, check)


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
