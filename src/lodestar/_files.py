"""Reading a file's bytes: plain or gzip, from a path, a pipe or standard input.

Both readers of the package, the TREC files' (:mod:`lodestar._trec.read`) and
the LETOR files' (:func:`lodestar.datasets.load_svmlight`), read through
:func:`read_bytes`, so that they accept the same files: gzip is recognised by
its first bytes whatever the file's name, several gzip members are read one
after the other, a truncated or corrupt stream is refused naming the file,
and a UTF-8 byte-order mark at the start of the text is dropped.
"""

from __future__ import annotations

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
    path: str | os.PathLike, *, progress: Progress | None = None, dash_is_stdin: bool = False
) -> bytes | bytearray:
    """The file's bytes, decompressed if gzip.

    A file is read in blocks into one ``bytearray`` (decompressed block by
    block if gzip), so that ``progress`` can follow it and no second copy of
    the bytes is ever made. Standard input and a pipe (``<(zcat run.gz)``),
    whose size is unknown, are read whole.

    Args:
      path: The file.
      progress: Called as ``progress(done, total)`` with the bytes of the
        file read so far (compressed bytes, for gzip) and its size, after
        each block.
      dash_is_stdin: Read ``-`` as standard input, as the TREC files of the
        command line and of :func:`lodestar.evaluate` do. Otherwise a path
        names a file, whatever it is.

    Raises:
      OSError: the file cannot be read, or it is a truncated or corrupt gzip
        stream; the message names the file.
      MemoryError: the decompressed data do not fit in memory; the message
        names the file.
    """
    name = os.fspath(path)
    if dash_is_stdin and name == "-":
        data = _whole(name, sys.stdin.buffer.read())
    else:
        with open(name, "rb") as file:
            if not file.seekable():  # a pipe, as from ``<(zcat run.gz)``: its size is unknown
                data = _whole(name, file.read())
            else:
                size = os.fstat(file.fileno()).st_size
                gzipped = file.read(2) == _GZIP_MAGIC
                file.seek(0)
                if gzipped:
                    data = _gunzip(name, file, size, progress)
                else:
                    data = _read_blocks(file, size, progress)
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


def _whole(name: str, data: bytes) -> bytes | bytearray:
    """Bytes read whole (standard input, a pipe), decompressed if gzip."""
    return _gunzip(name, io.BytesIO(data)) if data.startswith(_GZIP_MAGIC) else data


def _read_blocks(file, size: int, progress: Progress | None) -> bytearray:
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
    # A file that grew while it was read: its new end as well.
    data += file.read()
    return data


def _gunzip(name: str, file, size: int = 0, progress: Progress | None = None) -> bytearray:
    """A gzip stream's bytes (every member), decompressed block by block."""
    data = bytearray()
    try:
        with gzip.GzipFile(fileobj=file, mode="rb") as stream:
            while block := stream.read(READ_BLOCK):
                data += block
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
