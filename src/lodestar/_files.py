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
import mmap
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


# A plain file at least this large is mapped rather than read (map_plain).
MAP_THRESHOLD = 1 << 20


def map_plain(path: str | os.PathLike, *, dash_is_stdin: bool = False) -> mmap.mmap | None:
    """A read-only map of a large plain text file, or None to read it with :func:`read_bytes`.

    Mapped: a regular file of at least :data:`MAP_THRESHOLD` bytes, not gzip,
    with no byte-order mark and no NUL byte, where the system can drop
    mapped pages (``MADV_DONTNEED``). Its pages are the page cache's: a
    reader that hands each part to :func:`release` once parsed never holds
    the whole file in its own memory (377 MB of a ten-million-line run). Any
    other file (and standard input, a pipe, a small file) gives None, and
    :func:`read_bytes` reads it, refusing what it refuses.
    """
    name = os.fspath(path)
    if (dash_is_stdin and name == "-") or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    # Asked before opening: opening a named pipe (``<(zcat run.gz)``) would
    # take its writer's text, and read_bytes would then wait for more forever.
    if not os.path.isfile(name):
        return None
    try:
        with open(name, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size == 0 or size < MAP_THRESHOLD:
                return None
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError:
        return None  # read_bytes words the error
    if mapped[: len(_GZIP_MAGIC)] == _GZIP_MAGIC or mapped[: len(_BOM)] == _BOM:
        mapped.close()
        return None
    if mapped.find(b"\x00") >= 0:
        mapped.close()
        return None
    release(mapped)
    return mapped


def release(data, start: int = 0, end: int | None = None) -> None:
    """Drop the pages of ``data[start:end]`` from this process, if ``data`` is a memory map.

    The pages stay in the system's page cache, so reading them again costs
    no disk access; only the whole pages inside the range are dropped.
    """
    if not isinstance(data, mmap.mmap):
        return
    end = len(data) if end is None else end
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    last = end // mmap.PAGESIZE * mmap.PAGESIZE if end < len(data) else len(data)
    if last > first:
        data.madvise(mmap.MADV_DONTNEED, first, last - first)


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
