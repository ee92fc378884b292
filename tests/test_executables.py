"""Kernels kept on disk as exported programs (lodestar._executables, decision 0038).

A second ``lodestar evaluate`` of a run of the same shape loads the kept
program without tracing the kernel, and prints what the first printed. What
the store reads is data, checked against the key it was made for: a planted,
swapped, damaged or ill-fitting file must never run code or change an answer,
and a directory that other users can write is not used at all.
"""

import functools
import hashlib
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from lodestar import _executables, _registry

SRC = str(Path(__file__).resolve().parents[1] / "src")
DATA = Path(SRC) / "lodestar" / "data"
ARGUMENTS = ["evaluate", str(DATA / "example.qrels"), str(DATA / "example.run")]
ALL_TREC = [*ARGUMENTS, "-m", "all_trec", "--trec-eval"]


def _program(arguments, cache, **env):
    """Run the program with ``cache`` as its cache: the finished process."""
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "LODESTAR_COMPILATION_CACHE": str(cache),
        "JAX_LOG_COMPILES": "1",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-m", "lodestar", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _traced(done) -> int:
    """How many of the evaluation's kernels the process traced."""
    return len(re.findall(r"Finished tracing.* evaluate_formulas ", done.stderr))


def _notes(done) -> list[str]:
    """The program's notes on stderr, less the example's own (queries not evaluated)."""
    return [
        line
        for line in done.stderr.splitlines()
        if line.startswith("lodestar:") and "not evaluated" not in line
    ]


def _lodestar(arguments, cache, **env):
    """Run the program with ``cache`` as its cache: ``(stdout, the kernels it traced)``."""
    done = _program(arguments, cache, **env)
    return done.stdout, _traced(done)


def _kept(cache):
    directory = Path(cache) / _executables.SUBDIRECTORY
    return sorted(p for p in directory.iterdir() if not p.name.startswith(_executables._RECENT))


# Runs the program, saying on stderr which thread loads each kept kernel. Each
# line is one write: print's separate writes of its parts interleave when both
# threads load at once ("LOADLOAD ..."), and a line would be lost.
_WATCHED = """
import sys, threading
from lodestar import _executables, cli
load = _executables._load
def watched(path):
    line = f"LOAD {threading.current_thread().name} {path.rsplit('/', 1)[-1]}\\n"
    sys.stderr.write(line)
    return load(path)
_executables._load = watched
sys.argv = ["lodestar", *sys.argv[1:]]
cli.console()
"""


def _watched(arguments, cache):
    """Run the program: ``(stdout, [(thread, file name) of every kernel it loads])``."""
    env = {**os.environ, "PYTHONPATH": SRC, "LODESTAR_COMPILATION_CACHE": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _WATCHED, *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    loads = [
        tuple(line.split()[1:]) for line in done.stderr.splitlines() if line.startswith("LOAD ")
    ]
    assert all(len(load) == 2 for load in loads), done.stderr
    return done.stdout, loads


def test_the_loader_thread_loads_the_kernels_the_last_run_used(tmp_path):
    # While the main thread reads and joins, the loader thread loads the
    # kernels that the last run of the same measures used (decision 0040).
    cache = tmp_path / "cache"
    first, _ = _watched(ALL_TREC, cache)
    (kept,) = _kept(cache)
    second, loads = _watched(ALL_TREC, cache)
    assert second == first
    assert loads == [("lodestar-load-jax", kept.name)]


def test_a_wrong_guess_is_loaded_for_nothing_and_replaced(tmp_path):
    # Another run of the same measures has other shapes: the guess is loaded
    # and unused, the run's own kernel compiled and kept, and guessed next.
    cache = tmp_path / "cache"
    _watched(ALL_TREC, cache)
    (small,) = _kept(cache)
    rows = [f"q{q} Q0 d{d} 0 {d % 7} r" for q in range(3) for d in range(300)]
    run = tmp_path / "run"
    run.write_text("\n".join(rows) + "\n")
    other = ["evaluate", str(DATA / "example.qrels"), str(run), "-m", "all_trec", "--trec-eval"]
    expected, _ = _lodestar(other, tmp_path / "fresh")
    out, loads = _watched(other, cache)
    assert out == expected
    (large,) = set(_kept(cache)) - {small}
    assert ("lodestar-load-jax", small.name) in loads
    assert ("MainThread", large.name) in loads
    _, loads = _watched(other, cache)
    assert loads == [("lodestar-load-jax", large.name)]


@pytest.mark.parametrize(
    "text",
    [b"\xff not a list\n", b"../../etc/passwd\n" + b"Z" * 64 + b"\n" + b"0" * 64 + b"\n", b""],
    ids=["bytes", "names", "empty"],
)
def test_a_damaged_guess_is_ignored_and_rewritten(tmp_path, text):
    # Only names of kept kernels are ever loaded, and a guess that names
    # none leaves the main thread to load its kernel, as with no guess.
    cache = tmp_path / "cache"
    expected, _ = _watched(ALL_TREC, cache)
    (kept,) = _kept(cache)
    (recent,) = (cache / _executables.SUBDIRECTORY).glob(_executables._RECENT + "*")
    recent.write_bytes(text)
    out, loads = _watched(ALL_TREC, cache)
    assert out == expected
    assert ("MainThread", kept.name) in loads
    assert all(name in (kept.name, "0" * 64) for _, name in loads)
    assert _watched(ALL_TREC, cache)[1] == [("lodestar-load-jax", kept.name)]


def test_a_second_run_loads_the_kernel_without_tracing_it(tmp_path):
    cache = tmp_path / "cache"
    first, traced = _lodestar(ALL_TREC, cache)
    assert traced >= 1
    assert len(_kept(cache)) == 1
    second, traced = _lodestar(ALL_TREC, cache)
    assert traced == 0
    assert second == first
    # Other measures are another kernel, kept beside it.
    _, traced = _lodestar([*ARGUMENTS, "-m", "ndcg@10"], cache)
    assert traced >= 1
    assert len(_kept(cache)) == 2


def test_a_kernel_that_jax_cache_handed_back_is_compiled_afresh_before_it_is_kept(tmp_path):
    # An executable loaded from JAX's persistent cache, serialized again,
    # loads in a new process and then fails when run ("Function
    # multiply_divide_fusion not found"). Here JAX's cache holds the kernel
    # (a first run filled both) and the kept file is gone, as after an update
    # that changed lodestar's source but not the kernel.
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    for path in _kept(cache):
        path.unlink()
    _lodestar(ALL_TREC, cache)  # compiles and keeps it again
    out, traced = _lodestar(ALL_TREC, cache)  # runs the kept file
    assert traced == 0
    assert out == expected


def _flip_last_byte(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def _with_header(data: bytes, **changes) -> bytes:
    """A kept file's bytes with fields of its header changed, its program as it was."""
    end = data.index(b"\n", len(_executables.MAGIC))
    header = {**json.loads(data[len(_executables.MAGIC) : end]), **changes}
    return _executables.MAGIC + json.dumps(header).encode() + data[end:]


def _of_another_build(data: bytes) -> bytes:
    """A kept file whose key names another build's source digest, its program as it was."""
    end = data.index(b"\n", len(_executables.MAGIC))
    key = json.loads(data[len(_executables.MAGIC) : end])["key"]
    digest = re.search(r"str:'([0-9a-f]{64})'", key)
    assert digest is not None
    return _with_header(data, key=key.replace(digest.group(1), "0" * 64))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: b"not a kernel", "it is not a kept kernel"),
        (lambda data: data[: len(data) // 2], "its checksum does not match"),
        (_flip_last_byte, "its checksum does not match"),
        (lambda data: _executables.MAGIC + b"{not json\n" + data, "its header is damaged"),
        (lambda data: _with_header(data, format=1), "another version of lodestar"),
        (lambda data: _with_header(data, key="another kernel"), "made for another kernel"),
        (_of_another_build, "by another build of lodestar"),
    ],
    ids=["foreign", "truncated", "one-bit", "header", "format", "key", "build"],
)
def test_a_damaged_file_is_compiled_again_and_replaced(tmp_path, damage, reason):
    # Every check runs before the program is used; a file that fails one is
    # compiled afresh and replaced, with one note naming it, and the answer
    # is the right one.
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    (kept,) = _kept(cache)
    sound = kept.read_bytes()
    kept.write_bytes(damage(sound))
    done = _program(ALL_TREC, cache)
    assert _traced(done) >= 1
    assert done.stdout == expected
    (note,) = _notes(done)
    assert note.startswith(f"lodestar: not using the kept kernel {kept}: ")
    assert reason in note and note.endswith("; compiling it again")
    assert kept.read_bytes() == sound
    done = _program(ALL_TREC, cache)
    assert (done.stdout, _traced(done), _notes(done)) == (expected, 0, [])


class _Planted:
    """A pickle that, loaded, creates the file ``marker``: another user's code."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_pickle_never_runs(tmp_path):
    # Another user who can write the store plants a pickle under the name
    # the next run will read (names follow from public versions). Loading
    # it must run nothing: the file is data to the store, not code.
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    (kept,) = _kept(cache)
    marker = tmp_path / "planted-code-ran"
    kept.write_bytes(zlib.compress(pickle.dumps((_Planted(marker), None, None))))
    done = _program(ALL_TREC, cache)
    assert not marker.exists()
    assert done.stdout == expected
    assert "it is not a kept kernel" in _notes(done)[0]


def test_a_kernel_kept_under_another_key_is_not_run(tmp_path):
    # The file that `-m ndcg` kept, copied over the one `-m ndcg_cut.3`
    # kept (same arguments, another formula): the header names another
    # kernel, so it is compiled again, and ndcg_cut.3 is right on this run
    # and every later one. Run, it printed ndcg's 0.5361 for 0.4994.
    cache = tmp_path / "cache"
    cut = [*ARGUMENTS, "-m", "ndcg_cut.3", "--trec-eval"]
    whole = [*ARGUMENTS, "-m", "ndcg", "--trec-eval"]
    expected, _ = _lodestar(cut, cache)
    (cut_file,) = _kept(cache)
    _lodestar(whole, cache)
    (whole_file,) = set(_kept(cache)) - {cut_file}
    shutil.copyfile(whole_file, cut_file)
    done = _program(cut, cache)
    assert "ndcg_cut_3            \tall\t0.4994" in done.stdout
    assert done.stdout == expected
    assert "made for another kernel" in _notes(done)[0]
    assert _program(cut, cache).stdout == expected
    assert _lodestar(whole, cache)[1] == 0


def test_a_kernel_that_fails_when_run_is_compiled_again(tmp_path):
    # A file that passes every check but whose program does not fit the
    # arguments (here another kernel's program, under this kernel's key and
    # with its own checksum) fails at its first call: that call is compiled
    # afresh, with one note, and the file replaced.
    cache = tmp_path / "cache"
    expected, _ = _lodestar(ALL_TREC, cache)
    (every,) = _kept(cache)
    _lodestar([*ARGUMENTS, "-m", "P.5", "--trec-eval"], cache)
    (other,) = set(_kept(cache)) - {every}
    sound = every.read_bytes()
    magic, header, _ = sound.split(b"\n", 2)
    program = other.read_bytes().split(b"\n", 2)[2]
    header = {**json.loads(header), "sha256": hashlib.sha256(program).hexdigest()}
    every.write_bytes(magic + b"\n" + json.dumps(header).encode() + b"\n" + program)
    done = _program(ALL_TREC, cache)
    assert done.stdout == expected
    (note,) = _notes(done)
    assert f"not using the kept kernel {every}: it failed when run (" in note
    assert every.read_bytes() == sound


@pytest.mark.parametrize("writable_by", ["group", "others"])
def test_a_store_that_others_can_write_is_not_used(tmp_path, writable_by):
    # A cache directory in a folder others can write (a shared /tmp folder,
    # a lab's cache): nothing is read from it or written to it, the run
    # compiles as if there were none, and one note says why and how to fix it.
    cache = tmp_path / "cache"
    cache.mkdir()
    mode = {"group": 0o770, "others": 0o707}[writable_by]
    cache.chmod(mode)
    planted = cache / _executables.SUBDIRECTORY
    planted.mkdir()
    done = _program(ALL_TREC, cache)
    assert _notes(done) == [
        f"lodestar: not using the compilation cache: {cache} can be written by other users "
        f"({stat.filemode(stat.S_IFDIR | mode)}); 'chmod go-w {cache}' fixes it"
    ]
    assert list(planted.iterdir()) == []
    assert [p.name for p in cache.iterdir()] == [_executables.SUBDIRECTORY]
    # The store's own directory is checked too.
    cache.chmod(0o700)
    planted.chmod(0o777)
    done = _program(ALL_TREC, cache)
    assert f"not keeping kernels in {planted}: {planted} can be written" in _notes(done)[0]
    assert list(planted.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_store_that_belongs_to_another_user_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    done = _program(ALL_TREC, cache)
    (note,) = _notes(done)
    assert f"{cache} belongs to another user (uid 65534)" in note
    assert "LODESTAR_COMPILATION_CACHE" in note
    assert list(cache.iterdir()) == []


def test_a_new_store_is_private(tmp_path):
    cache = tmp_path / "deeper" / "cache"
    _program([*ARGUMENTS, "-m", "map", "--trec-eval"], cache)
    for directory in (cache, cache / _executables.SUBDIRECTORY):
        assert stat.S_IMODE(directory.stat().st_mode) & 0o077 == 0
    for path in _kept(cache):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_store_keeps_the_most_recently_used_kernels_within_its_size(tmp_path):
    # Three kernels kept, the first used again; a fourth, kept under a limit
    # that holds two, removes the two least recently used.
    def run(measure):
        return [*ARGUMENTS, "-m", measure, "--trec-eval"]

    alone = tmp_path / "alone"
    _lodestar(run("recall.5"), alone)
    (recall_alone,) = _kept(alone)
    cache = tmp_path / "cache"
    kept = {}
    for measure in ("P.5", "map", "ndcg_cut.10"):
        _lodestar(run(measure), cache)
        (kept[measure],) = set(_kept(cache)) - set(kept.values())
    _lodestar(run("P.5"), cache)
    limit = kept["P.5"].stat().st_size + recall_alone.stat().st_size + 1024
    _lodestar(run("recall.5"), cache, LODESTAR_COMPILATION_CACHE_SIZE=str(limit))
    assert set(_kept(cache)) == {kept["P.5"], cache / _executables.SUBDIRECTORY / recall_alone.name}
    assert sum(p.stat().st_size for p in (cache / _executables.SUBDIRECTORY).iterdir()) <= limit


@pytest.mark.parametrize("setting", ["lots", "-5", "0", "1.5G"])
def test_a_size_that_cannot_be_read_is_not_guessed_at(tmp_path, setting):
    done = _program([*ARGUMENTS, "-m", "map"], tmp_path / "cache",
                    LODESTAR_COMPILATION_CACHE_SIZE=setting)  # fmt: skip
    assert _notes(done) == [
        f"lodestar: LODESTAR_COMPILATION_CACHE_SIZE={setting!r} is not a size such as 512M "
        "or 2G; keeping at most 256M"
    ]


def _formula(key):
    return _registry.MEASURES[key].function.formula


def test_static_arguments_are_described_by_what_they_are():
    # The description names the same value the same way in every process
    # (no addresses), and tells apart values that compile differently.
    ndcg = _formula("ndcg")
    describe = _executables._describe
    assert describe(ndcg) == describe(_formula("ndcg"))
    assert " at 0x" not in describe(ndcg)
    assert describe(ndcg) != describe(_formula("dcg"))
    assert describe((1, "a")) != describe(("1", "a"))
    assert describe(1) != describe(1.0) != describe(True)

    def scaled(factor):
        return lambda x: x * factor

    assert describe(scaled(2)) != describe(scaled(3))
    assert describe(functools.partial(max, 1)) != describe(functools.partial(max, 2))
    with pytest.raises(_executables._Unstable):
        describe(object())


def test_the_file_name_follows_the_source_and_the_types(monkeypatch):
    def name(types_):
        key = _executables._key("kernel", {"rank_k": None}, "*", types_)
        return _executables._file_name(key)

    first = name(("float64[2,3]",))
    assert first == name(("float64[2,3]",))
    assert first != name(("float32[2,3]",))
    _executables._source_digest.cache_clear()
    monkeypatch.setattr(_executables, "_source_digest", lambda: "another lodestar")
    assert name(("float64[2,3]",)) != first


def test_nothing_is_kept_unless_asked(tmp_path, monkeypatch):
    # Off by default: a library writes nothing unasked. The public metrics'
    # kernels rank with a host callback and are never kept.
    import jax.numpy as jnp

    from lodestar import metrics

    monkeypatch.setattr(_executables, "_directory", None)
    assert float(metrics.ndcg(jnp.array([1.0, 2.0]), jnp.array([0.0, 1.0]))) == 1.0
    _executables.keep_in(tmp_path)
    try:
        assert float(metrics.ndcg(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 2.0]))) == 1.0
    finally:
        _executables.keep_in(None)
    assert list((tmp_path / _executables.SUBDIRECTORY).iterdir()) == []


@pytest.mark.slow
def test_every_trec_eval_measure_fits_one_batch_in_memory_the_allocator_keeps(tmp_path):
    # A kernel's scratch memory is one allocation per batch. Past 32 MiB, the
    # C library's largest threshold, it is mapped from the system and handed
    # back after every batch, and each batch then faults it in again page by
    # page: at 2**20 items per batch `-m all_trec` took 620 MB per batch and a
    # third of its time at TREC depth (decision 0040).
    import numpy as np

    rng = np.random.default_rng(0)
    run, qrels = tmp_path / "run", tmp_path / "qrels"
    with open(run, "w") as run_file, open(qrels, "w") as qrels_file:
        for query in range(40):
            scores = np.round(rng.random(1000), 2)
            for doc, score in enumerate(scores):
                run_file.write(f"{query} Q0 d{doc} 0 {score} r\n")
            for doc in rng.choice(1000, 100, replace=False):
                qrels_file.write(f"{query} 0 d{doc} {rng.integers(0, 4)}\n")
    cache = tmp_path / "cache"
    for ties in ([], ["--ignore-ties"]):
        _lodestar(["evaluate", str(qrels), str(run), "-m", "all_trec", "--trec-eval", *ties], cache)
    kept = _kept(cache)
    assert len(kept) == 2
    import jax

    with jax.enable_x64(True):
        for path in kept:
            kept = _executables._load(str(path))
            assert isinstance(kept, _executables._Kept)
            assert kept.run.memory_analysis().temp_size_in_bytes < 32 * 2**20


def test_a_kernel_holding_the_compiled_kernels_is_kept_and_reused(tmp_path):
    # Per-level gains (G.1=3) once ranked with a host callback, which
    # jax.export refused, so that nothing was kept. The compiled kernels are
    # custom calls that lodestar exports: the kernel is kept once, and the
    # second run reuses it, with the same output and nothing to say.
    cache = tmp_path / "cache"
    arguments = [*ARGUMENTS, "-m", "G.1=3", "--trec-eval"]
    first = _program(arguments, cache)
    kept = _kept(cache)
    assert len(kept) == 1
    second = _program(arguments, cache)
    assert second.stdout == first.stdout
    assert _kept(cache) == kept
    assert _notes(second) == []


def test_from_python_a_shared_directory_is_a_warning(tmp_path):
    import jax

    import lodestar

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    before = jax.config.values["jax_compilation_cache_dir"]
    with pytest.warns(RuntimeWarning, match=r"can be written by other users .*chmod go-w"):
        assert lodestar.use_compilation_cache(shared) is None
    assert jax.config.values["jax_compilation_cache_dir"] == before
    assert _executables._directory is None


@pytest.mark.parametrize("max_size", [0, -1, 1.5, True, "1G"])
def test_a_size_limit_must_be_a_positive_number_of_bytes(tmp_path, max_size):
    import lodestar

    with pytest.raises(ValueError, match="max_size must be a positive number of bytes"):
        lodestar.use_compilation_cache(tmp_path, max_size=max_size)
