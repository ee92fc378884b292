"""Kernels kept on disk as exported programs, so that a new process does not trace them.

JAX's persistent compilation cache saves the XLA compilation, but its key is a
hash of the lowered program, so every process still traces and lowers the
kernel first: 0.6-1.0 s of ``lodestar evaluate -m all_trec`` at TREC depth,
before the cache is read. This store keeps each kernel's lowered program
(:func:`jax.export.export`, serialized as data: a flatbuffer holding StableHLO
bytecode), keyed by what the program is made of (the kernel's static
arguments, the argument types, lodestar's source, JAX's version and the
device). A new process deserializes it, lowers the few lines that call it, and
JAX's own cache then hands back the compiled executable.

What is read from the store is data. Each file begins with a header that
states the key it was made for and a SHA-256 of the program, both checked
before the program is used; a file that fails a check, or whose program fails
to compile or to run, is compiled afresh and replaced, with one note. The
store and JAX's cache hold compiled code, so both are used only in a
directory that the user owns and that no one else may write
(:func:`untrusted`). The least recently used files are removed once the store
passes its size limit. Decision 0038 records the design and its measurements.

It is on where :func:`lodestar.use_compilation_cache` (which the command line
calls) turned JAX's cache on, in the subdirectory :data:`SUBDIRECTORY`, and
only for a call that asks for it: only the TREC layer's batches arrive ranked
(decision 0018).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import importlib.util
import json
import os
import re
import stat
import sys
import tempfile
import threading
import types
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import jax
import numpy as np
from jax.core import Tracer

from lodestar import _native

FORMAT = 2
"""Bumped when what a stored file holds changes."""

MAGIC = b"lodestar kernel\n"
"""The first bytes of every stored file; a JSON header line follows, then the program."""

SUBDIRECTORY = "lodestar-kernels"
"""Where in the compilation cache directory the kernels are kept (JAX's own
cache reads only the ``*-cache`` files at its top level)."""

DEFAULT_MAX_BYTES = 256 * 2**20
"""The default size limit of the store, and of JAX's cache where lodestar sets it."""

_directory: str | None = None
_max_bytes = DEFAULT_MAX_BYTES
# In this process: (kernel, static arguments, argument structure and types) ->
# what runs it, as jit's own cache does for a traced one.
_loaded: dict[Any, Callable] = {}
_lock = threading.Lock()
# The program's guess (expect): the files the last run of the same command
# used, each loading on the loader thread, by path; and what this run uses.
_RECENT = "recent-"
_KEPT_NAME = re.compile(r"[0-9a-f]{64}")
_recent_path: str | None = None
_guessed: list[str] = []
_used: list[str] = []
_expected: dict[str, concurrent.futures.Future] = {}


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


note: Callable[[str], None] = _warn
"""How the store reports a file it did not use (the program prints a ``lodestar:`` note)."""


def untrusted(directory: str | os.PathLike) -> str | None:
    """Why ``directory`` must not hold compiled code for this user, or None if it may.

    Loading a compiled program runs it, so a directory that another user can
    write would let that user run code as this one. As ssh and GnuPG do with
    their own files, the directory must belong to the user (or to root when
    the user is root) and be writable by no group and no one else. Where the
    system has no owners (Windows), any directory may.

    Returns:
      None, or the reason followed by how to fix it, for a note.
    """
    path = os.fspath(directory)
    try:
        status = os.stat(path)
    except OSError as error:
        return f"{path} cannot be read ({error.strerror or error})"
    if not stat.S_ISDIR(status.st_mode):
        return f"{path} is not a directory"
    if not _owners():
        return None
    if status.st_uid != os.geteuid():
        return (
            f"{path} belongs to another user (uid {status.st_uid}); name a directory of "
            "your own with LODESTAR_COMPILATION_CACHE"
        )
    if _others_can_write(status):
        mode = stat.filemode(status.st_mode)
        return f"{path} can be written by other users ({mode}); 'chmod go-w {path}' fixes it"
    return None


def _owners() -> bool:
    """Whether the system has owners of files to check (not Windows)."""
    return hasattr(os, "geteuid")


def _others_can_write(status: os.stat_result) -> bool:
    return bool(status.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def keep_in(directory: str | os.PathLike | None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Keep the kernels under ``directory``/:data:`SUBDIRECTORY`; None stops keeping them.

    The subdirectory is made readable and writable by its owner alone; where
    it cannot be made, or is not trusted (:func:`untrusted`), nothing is kept
    and :data:`note` says why. ``max_bytes`` bounds the store: the least
    recently used files are removed past it.
    """
    global _directory, _max_bytes
    _directory = None
    if directory is None:
        return
    store = os.path.join(os.fspath(directory), SUBDIRECTORY)
    try:
        os.makedirs(store, mode=0o700, exist_ok=True)
    except OSError as error:
        note(f"not keeping kernels in {store}: {error.strerror or error}")
        return
    refusal = untrusted(store)
    if refusal is not None:
        note(f"not keeping kernels in {store}: {refusal}")
        return
    _directory, _max_bytes = store, max_bytes


def expect(command: str) -> Callable[[], None]:
    """Guess the kernels of ``command`` from its last run; returns what loads them.

    The program's loader thread calls this once JAX is imported, and calls
    what it returns while the main thread is still reading and joining the
    files: the files the last run of the same ``command`` (a text naming the
    measures and definitions) used are then loaded and compiled by the time
    the evaluation asks for them, or being loaded, and it waits for them
    rather than loading them again. A guess that proves wrong (the run's
    shapes changed) costs the loader thread's time only; a file is used only
    if its header names the key the evaluation asks for. This run's files
    become the next run's guess. Decision 0040.
    """
    global _recent_path
    directory = _directory
    if directory is None:
        return lambda: None
    digest = hashlib.sha256(command.encode()).hexdigest()
    _recent_path = os.path.join(directory, _RECENT + digest)
    try:
        with open(_recent_path, encoding="ascii") as file:
            names = [n for n in file.read().split() if _KEPT_NAME.fullmatch(n)]
    except (OSError, UnicodeDecodeError):
        names = []
    _guessed[:] = names
    pending = {os.path.join(directory, name): concurrent.futures.Future() for name in names}
    _expected.update(pending)

    def load() -> None:
        for path, future in pending.items():
            kept: _Kept | _Rejected | None = None
            try:
                kept = _load(path)
            finally:  # never leave the evaluation waiting
                future.set_result(kept)

    return load


def _remember(path: str) -> None:
    """Add ``path`` to the files this command's next run will expect: those this run used."""
    name = os.path.basename(path)
    if _recent_path is None or name in _used:
        return
    _used.append(name)
    if _used == _guessed[: len(_used)]:  # as guessed: nothing to write
        return
    try:
        _write_atomically(_recent_path, ("\n".join(_used) + "\n").encode("ascii"))
    except OSError:
        return


class _Unstable(Exception):
    """A static argument has no description that is the same in every process."""


def _describe(value: Any) -> str:
    """A text that names ``value`` the same way in every process, or :class:`_Unstable`."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}(" + ",".join(_describe(v) for v in value) + ")"
    if isinstance(value, Mapping):
        items = sorted((_describe(k), _describe(v)) for k, v in value.items())
        return "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
    if isinstance(value, functools.partial):
        return (
            f"partial({_describe(value.func)},{_describe(value.args)},"
            f"{_describe(dict(value.keywords))})"
        )
    if isinstance(value, types.FunctionType):
        # The source digest covers the code; a closure's cells are its values.
        cells = tuple(cell.cell_contents for cell in value.__closure__ or ())
        return f"function:{value.__module__}.{value.__qualname__}{_describe(cells)}"
    if isinstance(value, types.BuiltinFunctionType):
        return f"builtin:{value.__module__}.{value.__qualname__}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return f"{type(value).__module__}.{type(value).__qualname__}{_describe(fields)}"
    if isinstance(value, (np.dtype, np.generic)):
        return f"{type(value).__name__}:{value!r}"
    raise _Unstable(type(value).__qualname__)


@functools.cache
def _source_digest() -> str:
    """A digest of every Python file of the installed lodestar package, and of its kernels."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    # The compiled kernels may be installed apart from the sources (an editable install).
    kernels = importlib.util.find_spec("lodestar._kernels")
    extension = [Path(kernels.origin)] if kernels is not None and kernels.origin else []
    for path in sorted(root.rglob("*.py")) + extension:
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _environment() -> str:
    """What else decides the program: versions, device, flags."""
    import jaxlib

    device = jax.devices()[0]
    return _describe(
        (
            FORMAT,
            sys.version,
            jax.__version__,
            getattr(jaxlib, "__version__", ""),
            device.platform,
            device.device_kind,
            device.client.platform_version,
            jax.device_count(),
            os.environ.get("XLA_FLAGS", ""),
            str(jax.dtypes.canonicalize_dtype(np.float64)),  # x64, thread-local
            str(jax.config.values.get("jax_default_matmul_precision")),
            _native.loaded(),  # which route ranks: the compiled kernels or XLA's sort
            _source_digest(),
        )
    )


def _key(name: str, static: Mapping[str, Any], structure: str, types_: tuple) -> str:
    """The text that names one kernel: every file states the one it was made for."""
    return "\n".join([_environment(), name, _describe(dict(static)), structure, *types_])


def _file_name(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class _Rejected(Exception):
    """A stored file that must not be used; the message says why."""


@dataclasses.dataclass(frozen=True)
class _Kept:
    """A stored kernel that passed its checks: its key, and its program compiled."""

    key: str
    run: Callable


def _read(path: str) -> tuple[str, bytes]:
    """The key a stored file states and its program, checked; :class:`_Rejected` if not sound.

    FileNotFoundError if there is no file.
    """
    with open(path, "rb") as file:
        status = os.fstat(file.fileno())
        if _owners() and (status.st_uid != os.geteuid() or _others_can_write(status)):
            raise _Rejected("it belongs to another user or others can write it")
        data = file.read()
    if not data.startswith(MAGIC):
        raise _Rejected("it is not a kept kernel")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC) : end])
        key, digest, form = header["key"], header["sha256"], header["format"]
    except (ValueError, TypeError, KeyError) as error:
        raise _Rejected("its header is damaged") from error
    if form != FORMAT or not isinstance(key, str):
        raise _Rejected("it was kept by another version of lodestar")
    program = data[end + 1 :]
    if end < 0 or hashlib.sha256(program).hexdigest() != digest:
        raise _Rejected("it is damaged (its checksum does not match)")
    return key, program


def _compile(program: bytes) -> Callable:
    """The exported ``program``, compiled for the types it was exported for.

    JAX's persistent cache holds the compilation of these few lines once any
    process compiled them, so a kept kernel compiles from there.
    """
    _native.loaded()  # a program holding the kernels' custom calls needs them registered
    exported = jax.export.deserialize(bytearray(program))
    shapes = [jax.ShapeDtypeStruct(aval.shape, aval.dtype) for aval in exported.in_avals]
    args, kwargs = jax.tree.unflatten(exported.in_tree, shapes)
    return jax.jit(exported.call).lower(*args, **kwargs).compile()


def _load(path: str) -> _Kept | _Rejected | None:
    """The kernel stored at ``path``, compiled; why it was rejected; or None if it is absent."""
    try:
        key, program = _read(path)
        if _describe(_source_digest()) not in key:
            # Kept by another build (a run's guess from before an update): not
            # compiled, which would cost the loader's time and, where it
            # names kernels this build lacks, JAX's warnings.
            raise _Rejected("it was made for another kernel, by another build of lodestar")
        kept = _Kept(key, _compile(program))
    except FileNotFoundError:
        return None
    except _Rejected as rejected:
        return rejected
    except Exception as error:  # noqa: BLE001  a program JAX cannot load: compiled again
        return _Rejected(f"it cannot be loaded ({type(error).__name__}: {error})")
    try:
        os.utime(path)  # recently used: the last to be pruned
    except OSError:
        pass
    return kept


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, readable by the owner alone."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _save(path: str, key: str, program: bytes) -> None:
    """Keep ``program`` at ``path`` with its key and checksum, then prune the store."""
    header = json.dumps(
        {"format": FORMAT, "key": key, "sha256": hashlib.sha256(program).hexdigest()}
    )
    try:
        _write_atomically(path, MAGIC + header.encode() + b"\n" + program)
    except OSError:
        return
    _prune(os.path.dirname(path), _max_bytes, keep=path)


def _prune(directory: str, max_bytes: int, *, keep: str) -> None:
    """Remove the least recently used files of the store until it holds at most ``max_bytes``."""
    try:
        files = [e for e in os.scandir(directory) if e.is_file(follow_symlinks=False)]
        entries = [(s.st_mtime, s.st_size, e.path) for e in files for s in (e.stat(),)]
    except OSError:
        return
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= max_bytes:
            return
        if path == keep:
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size


def _export(jitted, args, static) -> bytes:
    """The program ``jitted`` lowers to for ``args``, serialized."""
    exporter = jax.export.export(jitted, disabled_checks=_native.export_checks())
    return bytes(exporter(*args, **static).serialize())


def _on_default_device(leaf) -> bool:
    if isinstance(leaf, Tracer):
        return False
    if isinstance(leaf, jax.Array):
        return leaf.devices() == {jax.devices()[0]}
    return True


def _signature(leaf) -> tuple:
    """What decides ``leaf``'s type to JAX, once the x64 setting is known."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype)
    if isinstance(leaf, jax.Array):
        return (leaf.shape, leaf.dtype, leaf.weak_type)
    return (type(leaf),)  # a Python scalar: weakly typed by its class


_Kernel = TypeVar("_Kernel", bound=Callable)


def stored(jitted: _Kernel) -> _Kernel:
    """``jitted`` (a :func:`jax.jit` function), kept on disk when called with ``store=True``.

    A call with ``store=True`` (a keyword this wrapper takes away) runs the
    stored program for its static arguments and argument types, loading it
    or exporting and keeping it the first time; every other call, and every
    call while no directory is set, inside a trace or on another device, is
    the jitted function's own. Static arguments are passed by keyword.
    """
    name = f"{jitted.__module__}.{jitted.__qualname__}"

    @functools.wraps(jitted)
    def run(*args, store: bool = False, **static):
        directory = _directory
        if not store or directory is None:  # every call but the TREC layer's: no more work
            return jitted(*args, **static)
        leaves, structure = jax.tree.flatten(args)
        if not all(map(_on_default_device, leaves)):
            return jitted(*args, **static)
        # The in-process key is cheap to make, since it is made on every call
        # (a TREC-depth `-m all_trec` calls with 180 leaves, 47 times); the
        # file's key spells the types out, once.
        x64 = jax.dtypes.canonicalize_dtype(np.float64) == np.float64  # thread-local
        in_process = (name, tuple(sorted(static.items())), structure, x64, *map(_signature, leaves))
        compiled = _loaded.get(in_process)
        if compiled is not None:
            return compiled(*args)
        with _lock:
            compiled = _loaded.get(in_process)
            if compiled is not None:
                return compiled(*args)
            try:
                types_ = tuple(str(jax.typeof(leaf)) for leaf in leaves)
                key = _key(name, static, str(structure), types_)
            except (_Unstable, TypeError, OverflowError):  # not a kernel a file can name
                return jitted(*args, **static)
            path = os.path.join(directory, _file_name(key))
            guessed = _expected.pop(path, None)
            found = guessed.result() if guessed is not None else _load(path)
            if isinstance(found, _Kept) and found.key != key:
                found = _Rejected("it was made for another kernel")
            if isinstance(found, _Kept):
                try:
                    result = found.run(*args)
                except Exception as error:  # noqa: BLE001  compiled afresh below
                    found = _Rejected(f"it failed when run ({type(error).__name__}: {error})")
                else:
                    _remember(path)
                    _loaded[in_process] = found.run
                    return result
            if isinstance(found, _Rejected):
                note(f"not using the kept kernel {path}: {found}; compiling it again")
            try:
                program = _export(jitted, args, static)
                compiled = _compile(program)
            except Exception:  # noqa: BLE001  a kernel that cannot be exported is not kept
                compiled = functools.partial(jitted, **static)
            else:
                _save(path, key, program)
                _remember(path)
            _loaded[in_process] = compiled
        return compiled(*args)

    return run  # type: ignore[return-value]
