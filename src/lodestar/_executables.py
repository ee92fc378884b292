"""Compiled kernels kept on disk whole, so that a new process neither traces nor lowers them.

JAX's persistent compilation cache saves the XLA compilation, but its key is a
hash of the lowered program, so every process still traces and lowers the
kernel first: 0.7-1.0 s of a 2.8 s ``lodestar evaluate -m all_trec`` at TREC
depth, before the cache is read. This store keys a compiled executable by what
the program is made of instead (the kernel's static arguments, the argument
types, lodestar's source, JAX's version and the device), and loads it with
:func:`jax.experimental.serialize_executable.deserialize_and_load`. Decision
0038 records the measurements.

It is on where :func:`lodestar.use_compilation_cache` (which the command line
calls) turned JAX's cache on, in the subdirectory :data:`SUBDIRECTORY`, and
only for a call that asks for it: a kernel holding a host callback cannot be
serialized, and only the TREC layer's batches arrive ranked (decision 0018).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import os
import pickle
import re
import sys
import tempfile
import threading
import types
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import jax
import numpy as np
from jax.core import Tracer

FORMAT = 1
"""Bumped when what a stored file holds changes."""

SUBDIRECTORY = "lodestar-kernels"
"""Where in the compilation cache directory the kernels are kept (JAX's own
cache reads only the ``*-cache`` files at its top level)."""

_directory: str | None = None
# In this process: (kernel, static arguments, argument structure and types) ->
# the loaded executable, as jit's own cache does for a traced one.
_loaded: dict[Any, Any] = {}
_lock = threading.Lock()
# The program's guess (expect): the files the last run of the same command
# used, each loading on the loader thread, by path; and what this run uses.
_RECENT = "recent-"
_KEPT_NAME = re.compile(r"[0-9a-f]{64}")
_recent_path: str | None = None
_guessed: list[str] = []
_used: list[str] = []
_expected: dict[str, concurrent.futures.Future] = {}


def keep_in(directory: str | os.PathLike | None) -> None:
    """Keep the kernels under ``directory``/:data:`SUBDIRECTORY`; None stops keeping them."""
    global _directory
    _directory = None if directory is None else os.path.join(os.fspath(directory), SUBDIRECTORY)


def expect(command: str) -> Callable[[], None]:
    """Guess the kernels of ``command`` from its last run; returns what loads them.

    The program's loader thread calls this once JAX is imported, and calls
    what it returns while the main thread is still reading and joining the
    files: the files the last run of the same ``command`` (a text naming the
    measures and definitions) used are then loaded by the time the
    evaluation asks for them, or being loaded, and it waits for them rather
    than loading them again. A guess that proves wrong (the run's shapes
    changed) costs the loader thread's time only. This run's files become
    the next run's guess. Decision 0040.
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
            compiled = None
            try:
                compiled = _load(path)
            finally:  # never leave the evaluation waiting
                future.set_result(compiled)

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
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(_recent_path), suffix=".partial")
        with os.fdopen(handle, "w", encoding="ascii") as file:
            file.write("\n".join(_used) + "\n")
        os.replace(temporary, _recent_path)
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
    """A digest of every Python file of the installed lodestar package."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _environment() -> str:
    """What else decides the compiled program: versions, device, flags."""
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
            _source_digest(),
        )
    )


def _file_name(name: str, static: Mapping[str, Any], structure: str, types_: tuple) -> str:
    text = "\n".join([_environment(), name, _describe(dict(static)), structure, *types_])
    return hashlib.sha256(text.encode()).hexdigest()


def _load(path: str):
    """The executable stored at ``path``, or None (absent, unreadable or from elsewhere)."""
    from jax.experimental import serialize_executable

    try:
        with open(path, "rb") as file:
            payload, in_tree, out_tree = pickle.loads(zlib.decompress(file.read()))
        return serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    except Exception:  # noqa: BLE001  absent, damaged or foreign: compiled again
        return None


def _compile(jitted, args, static):
    """Compile afresh: ``(executable, whether it may be kept)``.

    An executable that JAX's own cache handed back, serialized again, loads
    but fails when run ("Function multiply_divide_fusion not found"), so
    JAX's cache is off for this one compilation (a thread-local setting that
    JAX keeps in a private module; where it is missing, nothing is kept).
    """
    from jax._src import config as jax_config

    uncached = getattr(jax_config, "enable_compilation_cache", None)
    if uncached is None:
        return jitted.lower(*args, **static).compile(), False
    with uncached(False):
        return jitted.lower(*args, **static).compile(), True


def _save(path: str, compiled) -> None:
    """Write ``compiled`` to ``path`` atomically; a kernel that cannot be kept is not."""
    from jax.experimental import serialize_executable

    try:
        data = zlib.compress(pickle.dumps(serialize_executable.serialize(compiled)), 1)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except (OSError, ValueError, NotImplementedError, TypeError, pickle.PicklingError):
        return


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
    stored executable for its static arguments and argument types, loading or
    compiling and keeping it the first time; every other call, and every call
    while no directory is set, inside a trace or on another device, is the
    jitted function's own. Static arguments are passed by keyword.
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
        # file's name spells the types out, once.
        x64 = jax.dtypes.canonicalize_dtype(np.float64) == np.float64  # thread-local
        key = (name, tuple(sorted(static.items())), structure, x64, *map(_signature, leaves))
        compiled = _loaded.get(key)
        if compiled is None:
            with _lock:
                compiled = _loaded.get(key)
                if compiled is None:
                    types_ = tuple(str(jax.typeof(leaf)) for leaf in leaves)
                    try:
                        file_name = _file_name(name, static, str(structure), types_)
                    except _Unstable:
                        return jitted(*args, **static)
                    path = os.path.join(directory, file_name)
                    guessed = _expected.pop(path, None)
                    compiled = guessed.result() if guessed is not None else _load(path)
                    if compiled is None:
                        compiled, keepable = _compile(jitted, args, static)
                        if keepable:
                            _save(path, compiled)
                    _remember(path)
                    _loaded[key] = compiled
        return compiled(*args)

    return run  # type: ignore[return-value]
