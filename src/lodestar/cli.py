"""The ``lodestar`` command: ``lodestar evaluate`` scores TREC runs the way trec_eval does.

``lodestar evaluate QRELS RUN`` scores a run against its qrels with lodestar's
exact, tie-averaged measures::

    lodestar evaluate qrels.txt run.txt -m ndcg@10 ndcg mrr map P@10 recall@100
    lodestar evaluate -m ndcg_cut.10 -m map -q qrels.txt run.txt   # trec_eval's habits
    lodestar evaluate --example

The output follows trec_eval's layout, one ``measure<TAB>query<TAB>value``
line per value, with ``all`` for the value over the evaluated queries;
``--json`` prints the same numbers unrounded as one JSON object. Every option
is described by ``lodestar evaluate --help``, and ``docs/cli.md`` states the
conventions (which queries are averaged, ties, and where trec_eval's
definitions differ).

Exit status: 0 on success, 1 when the input is refused (the reason, with the
file and line, is on stderr), 2 for a usage error (an unknown option or
measure, a missing file), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import errno
import functools
import json
import math
import os
import signal
import sys
from importlib import resources

import pyarrow as pa

from lodestar import _interrupt, _startup, _terminal, evaluation

__all__ = ["main"]

DEFAULT_MEASURES = ("ndcg@10", "ndcg", "mrr", "map", "P@10", "recall@100")
_MEASURE_OPTIONS = ("-m", "--measures")


class UsageError(Exception):
    """A mistake in the command line itself (exit status 2)."""


def _example_paths() -> tuple[str, str]:
    data = resources.files("lodestar") / "data"
    return str(data / "example.qrels"), str(data / "example.run")


# The bundled comparison (examples/make_compare_example.py wrote it): 30
# queries, three runs of increasing quality, scores that tie.
_COMPARE_EXAMPLE_RUNS = ("bm25.run", "dense.run", "hybrid.run")


def _compare_example_paths() -> tuple[str, list[str]]:
    data = resources.files("lodestar") / "data"
    return str(data / "compare.qrels"), [str(data / run) for run in _COMPARE_EXAMPLE_RUNS]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lodestar")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        import lodestar

        return lodestar.__version__


def _evaluate_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "evaluate",
        help="score a TREC run against qrels",
        description=(
            "Score a TREC run (qid Q0 docno rank score runid) against qrels (qid iter docno "
            "rel), plain or gzip-compressed; '-' reads the run from standard input. "
            "Documents are ranked by score, not by the rank column. Tied scores are "
            "averaged over every order unless --ignore-ties is given. Only queries in "
            "both files are evaluated (all qrels queries with -c); unjudged documents are "
            "not relevant; a query with no relevant document scores 0 and stays in the mean."
        ),
    )
    parser.add_argument("qrels", nargs="?", help="the qrels file")
    parser.add_argument("run", nargs="?", help="the run file")
    parser.add_argument(
        *_MEASURE_OPTIONS,
        action="append",
        dest="measures",
        metavar="MEASURE",
        help=(
            "a measure to compute; repeat -m or give several names after one: ndcg, dcg, "
            "mrr, map, P, recall, hits, err, each with an optional cut-off (ndcg@10, P@5); "
            "trec_eval's names work as in trec_eval (ndcg_cut.10,20, P_10, recip_rank; a "
            "bare P or ndcg_cut is the family at trec_eval's default cut-offs). Default: "
            f"{' '.join(DEFAULT_MEASURES)}"
        ),
    )
    parser.add_argument(
        "-q", "--per-query", action="store_true", help="also print each query's values"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object, values unrounded"
    )
    parser.add_argument(
        "--ignore-ties",
        action="store_true",
        help=(
            "rank tied scores the way trec_eval does (by descending docno) instead of "
            "averaging over every order"
        ),
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="evaluate every qrels query; those missing from the run score 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--trec-eval",
        action="store_true",
        help=(
            "trec_eval's definitions: NDCG's ideal over all judged documents, AP and "
            "recall over all relevant judged documents, negative relevance read as not "
            "judged. Add --ignore-ties (and --single-precision for trec_eval 9 and "
            "pytrec_eval) to reproduce its numbers"
        ),
    )
    parser.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        metavar="LEVEL",
        help="judgment at which a document counts as relevant for the binary measures "
        "(trec_eval -l; default 1; 0 counts every judged document)",
    )
    parser.add_argument(
        "-M",
        "--max-documents",
        type=int,
        metavar="N",
        help="only the first N documents of each ranking count (trec_eval -M)",
    )
    parser.add_argument(
        "-J",
        "--judged-only",
        action="store_true",
        help="drop every unjudged retrieved document before ranking (trec_eval -J)",
    )
    parser.add_argument(
        "-R",
        "--rel-format",
        choices=("qrels", "qrels_jg"),
        default="qrels",
        help="the qrels' format: qrels (qid iter docno rel), or qrels_jg (qid group docno "
        "rel), for the measures averaged over judgment groups: map_avgjg, P_avgjg, "
        "Rprec_mult_avgjg, or -m qrels_jg (trec_eval -R)",
    )
    parser.add_argument(
        "-N",
        "--num-documents",
        type=int,
        metavar="N",
        help="the number of documents in the collection, for utility (trec_eval -N)",
    )
    parser.add_argument(
        "--err-max-label",
        type=float,
        metavar="GRADE",
        help="ERR's top grade (default: the largest relevance in the qrels file; the TREC "
        "Web track's gdeval uses 4)",
    )
    parser.add_argument(
        "--single-precision",
        action="store_true",
        help="round scores to float32 first, as trec_eval up to 9.0.8 and pytrec_eval do",
    )
    parser.add_argument(
        "--tie-range",
        action="store_true",
        help="also print the range ties leave each value, [lowest, highest] over their orders "
        "(none for G and infAP)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="draw a histogram of the per-query values of each measure into FILE (.png, "
        ".pdf, .svg; needs matplotlib: pip install 'lodestar[plot]')",
    )
    parser.add_argument(
        "--example",
        action="store_true",
        help="evaluate the small qrels and run shipped with lodestar",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "always", "never"),
        default="auto",
        help="progress on stderr: on a terminal for long stages (auto), always, or never",
    )
    return parser


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _compare_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compare",
        help="test whether runs differ significantly",
        description=(
            "Evaluate several runs against the same qrels and test every pair of runs on "
            "every measure, paired over the queries that every run was evaluated on, with a "
            "correction across the pairs of each measure. The table marks each run's mean "
            "with the runs it is significantly better than (ranx's convention)."
        ),
    )
    parser.add_argument("qrels", nargs="?", metavar="QRELS", help="the qrels file")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="two or more run files")
    parser.add_argument(
        *_MEASURE_OPTIONS,
        action="append",
        dest="measures",
        metavar="MEASURE",
        help="measures, as for evaluate (default: ndcg@10 map)",
    )
    parser.add_argument(
        "--test",
        choices=("t", "randomization", "bootstrap"),
        default="t",
        help="paired t-test, Fisher's randomization test or the paired bootstrap (default t)",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    parser.add_argument(
        "--correction",
        choices=("holm", "bonferroni", "none"),
        default="holm",
        help="family-wise correction across the pairs of each measure (default holm)",
    )
    parser.add_argument(
        "--permutations", type=int, default=100_000, help="randomization test's sign flips"
    )
    parser.add_argument("--samples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random tests (0)")
    parser.add_argument(
        "--format",
        choices=("table", "markdown", "latex"),
        default="table",
        help="how to print the report (default table)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the means, p-values and effect sizes as JSON"
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="test over every qrels query; one missing from a run scores 0",
    )
    parser.add_argument("--ignore-ties", action="store_true", help="as for evaluate")
    parser.add_argument("--trec-eval", action="store_true", help="as for evaluate")
    parser.add_argument(
        "-l", "--relevance-level", type=int, default=1, metavar="LEVEL", help="as for evaluate"
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="draw the sorted per-query differences of every run against the first into "
        "FILE (needs matplotlib: pip install 'lodestar[plot]')",
    )
    parser.add_argument(
        "--example",
        action="store_true",
        help="compare the three small runs shipped with lodestar (bm25, dense, hybrid)",
    )
    parser.add_argument(
        "--progress", choices=("auto", "always", "never"), default="auto", help="as for evaluate"
    )
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lodestar", description="Exact, tie-averaged ranking metrics.")
    parser.add_argument("--version", action="version", version=f"lodestar {_version()}")
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    _evaluate_parser(subparsers)
    _compare_parser(subparsers)
    return parser


def _is_measure(token: str) -> bool:
    try:
        evaluation.parse(token)
    except ValueError:
        return False
    return True


def _split_measures(argv: list[str]) -> list[str]:
    """``-m a b c FILE`` as ``-m a -m b -m c FILE``: names after ``-m`` stop at a non-name.

    trec_eval takes one name per ``-m`` and its files anywhere; lodestar also
    takes several names after one ``-m``. A token after ``-m`` is a measure
    name while it reads as one, so ``-m ndcg_cut.10 qrels run`` leaves the
    files alone.
    """
    out, index = [], 0
    while index < len(argv):
        token = argv[index]
        out.append(token)
        index += 1
        if token in _MEASURE_OPTIONS and index < len(argv):
            out.append(argv[index])
            index += 1
            while (
                index < len(argv) and not argv[index].startswith("-") and _is_measure(argv[index])
            ):
                out.extend((token, argv[index]))
                index += 1
    return out


def _note_dropped(joined: evaluation.Joined, complete: bool) -> None:
    """Say which queries are not evaluated, so that no data is dropped silently."""

    def listed(qids: list[bytes]) -> str:
        shown = ", ".join(repr(evaluation.show(q)) for q in qids[:5])
        return shown + (f" and {len(qids) - 5} more" if len(qids) > 5 else "")

    if joined.missing_from_qrels:
        count = len(joined.missing_from_qrels)
        _terminal.note(
            f"{count} run quer{'y' if count == 1 else 'ies'} without judgments "
            f"not evaluated: {listed(joined.missing_from_qrels)}"
        )
    if joined.missing_from_run:
        count = len(joined.missing_from_run)
        what = "scores 0 (-c)" if complete else "is not evaluated (see -c)"
        _terminal.note(
            f"{count} judged quer{'y' if count == 1 else 'ies'} missing from the run "
            f"{what}: {listed(joined.missing_from_run)}"
        )


def _format_value(value: float, integer: bool) -> str:
    if integer and float(value).is_integer():
        return str(int(value))
    # + 0.0 turns a negative zero (a product with a negative weight of 0) into 0.
    return f"{value + 0.0:6.4f}"


def _write_table(
    out,
    joined,
    requests,
    results,
    *,
    per_query: bool,
    extremes=None,
    trec_order=False,
    max_documents: int | None = None,
) -> None:
    """trec_eval's layout: ``measure<TAB>query<TAB>value``, ``all`` for the aggregate.

    Query ids are written as the bytes they were read as, as trec_eval
    writes them. With ``extremes`` (the lowest and highest per-query values
    over the orders of the ties, for the measures that have them), a fourth
    column gives the range ties leave: ``[low, high]``.
    ``runid`` and ``relstring`` lines appear where they were asked for, and
    ``num_q`` after ``runid``: always, or with ``trec_order`` (trec_eval's
    report) only when asked for, as trec_eval prints it. Geometric means (``gm_map``,
    ``gm_bpref``) have an ``all`` line only, as in trec_eval. With
    ``trec_order`` the lines follow trec_eval's order of measures, and
    the ``all`` values are trec_eval's sums, in query order
    (:func:`lodestar.evaluation.aggregate`).
    """
    write = out.buffer.write if hasattr(out, "buffer") else lambda b: out.write(b.decode())
    query_ids = joined.query_ids
    if trec_order:
        requests = evaluation.in_trec_order(requests)
    relstrings = {}
    for r in requests:
        if r.family == "relstring":
            assert r.k is not None  # the names give every relstring its length
            length = r.k if max_documents is None else min(r.k, max_documents)
            relstrings[r.name] = evaluation.relstrings(joined, length)

    def line(request, qid: bytes, value, bounds: tuple = ()) -> bytes:
        integer = request.measure.counts
        text = b"%-22s\t%s\t%s" % (
            request.name.encode(),
            qid,
            _format_value(value, integer).encode(),
        )
        if bounds:
            low, high = sorted(bounds)
            text += b"\t[%s, %s]" % (
                _format_value(low, integer).encode(),
                _format_value(high, integer).encode(),
            )
        return text + b"\n"

    lines = []
    if per_query:
        for index, qid in enumerate(query_ids):
            for request in requests:
                if request.name in relstrings:
                    text = relstrings[request.name][index]
                    lines.append(b"%-22s\t%s\t'%s'\n" % (request.name.encode(), qid, text))
                    continue
                if request.measure is None or request.measure.aggregate == "geometric":
                    continue
                bounds = ()
                if extremes is not None and request.name in extremes[0]:
                    bounds = tuple(e[request.name][index] for e in extremes)
                lines.append(line(request, qid, results[request.name][index], bounds))
    if any(r.family == "runid" for r in requests):
        runid = joined.runid if joined.runid is not None else b""
        lines.append(b"%-22s\tall\t%s\n" % (b"runid", runid))
    if not trec_order or any(r.family == "num_q" for r in requests):
        lines.append(b"%-22s\tall\t%d\n" % (b"num_q", len(query_ids)))
    for request in requests:
        if request.measure is None:
            continue
        value = evaluation.aggregate(request, results[request.name], trec_eval=trec_order)
        bounds = ()
        if extremes is not None and request.name in extremes[0]:
            bounds = tuple(
                evaluation.aggregate(request, e[request.name], trec_eval=trec_order)
                for e in extremes
            )
        lines.append(line(request, b"all", value, bounds))
    write(b"".join(lines))


def _json_key(qid: bytes) -> str:
    """A query id as a JSON key: its UTF-8 text, other bytes as lone surrogates.

    ``surrogateescape`` is one-to-one, so distinct ids stay distinct keys, and
    ``key.encode("utf-8", "surrogateescape")`` gives the bytes back.
    """
    return qid.decode("utf-8", "surrogateescape")


def _write_json(
    out, query_ids, requests, results, *, per_query: bool, options: dict, extremes=None
) -> None:
    mean = functools.partial(evaluation.aggregate, trec_eval=options["trec_eval"])
    document = {
        "options": options,
        "num_q": len(query_ids),
        "mean": {r.name: mean(r, results[r.name]) for r in requests},
    }
    if per_query:
        document["per_query"] = {
            _json_key(qid): {r.name: float(results[r.name][index]) for r in requests}
            for index, qid in enumerate(query_ids)
        }
    if extremes is not None:
        low, high = extremes
        ranged = [r for r in requests if r.name in low]
        ranges: dict[str, dict] = {
            "mean": {r.name: sorted((mean(r, low[r.name]), mean(r, high[r.name]))) for r in ranged}
        }
        if per_query:
            ranges["per_query"] = {
                _json_key(qid): {
                    r.name: sorted((float(low[r.name][i]), float(high[r.name][i]))) for r in ranged
                }
                for i, qid in enumerate(query_ids)
            }
        document["tie_range"] = ranges
    out.write(json.dumps(_finite_or_null(document), indent=2, allow_nan=False) + "\n")


def _finite_or_null(value):
    """``value`` with every NaN or infinite float as None: JSON has no NaN.

    Python's ``json`` would write ``NaN`` and ``Infinity``, which strict
    parsers (``jq``, JavaScript, Go) refuse; ``null`` is what JSON has for a
    value that is not a number.
    """
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _judgment_groups(args) -> bool:
    """Whether the qrels name judgment groups (``-R qrels_jg``; ``compare`` has no ``-R``)."""
    return getattr(args, "rel_format", "qrels") == "qrels_jg"


def _requests(args) -> list[evaluation.Request]:
    groups = _judgment_groups(args)
    try:
        return evaluation.parse_measures(
            args.measures or (["qrels_jg"] if groups else DEFAULT_MEASURES),
            judgment_groups=groups,
            option="-R qrels_jg",
            sets="-m qrels_jg",
        )
    except ValueError as error:
        raise UsageError(str(error)) from None


def _open(path: str, reader, progress: _terminal.Progress):
    """``reader(path)``, with its reading and parsing on the progress line, in bytes."""
    stage = ""

    def report(now: str, done: int, total: int) -> None:
        nonlocal stage
        if now != stage:
            stage = now
            progress.begin(f"{now} {path}", total, unit="bytes")
        progress(done, total)

    progress.begin(f"reading {path}")
    try:
        return reader(path, progress=report)
    except OSError as error:
        # A path that names no readable file is the caller's mistake (status
        # 2), however the system words it; a failure while reading is not.
        if error.errno not in _PATH_ERRORS:
            raise
        raise UsageError(f"cannot read {path!r}: {error.strerror}") from None


# ENOENT, EISDIR, EACCES, ENOTDIR, ELOOP, ENAMETOOLONG: the path itself is wrong.
_PATH_ERRORS = frozenset(
    (errno.ENOENT, errno.EISDIR, errno.EACCES, errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG)
)


def _check_standard_input_once(paths: list[str]) -> None:
    """:func:`lodestar.evaluation.check_standard_input_once`, as a usage error."""
    try:
        evaluation.check_standard_input_once(paths)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _check_evaluate_arguments(args: argparse.Namespace) -> None:
    """Refuse what evaluate's options cannot mean, before any file is read.

    Raises:
      UsageError: as described, naming the option.
    """
    if args.example:
        if args.qrels or args.run:
            raise UsageError("--example evaluates the bundled files; give no QRELS or RUN")
        args.qrels, args.run = _example_paths()
    elif not (args.qrels and args.run):
        raise UsageError("give QRELS and RUN, or --example")
    _check_standard_input_once([args.qrels, args.run])
    if args.max_documents is not None and args.max_documents < 1:
        raise UsageError(f"-M takes a number of documents of at least 1; got {args.max_documents}")
    if args.judged_only and args.max_documents is not None:
        # trec_eval cuts at -M, then drops the unjudged; over tied scores the
        # cut's expectation and the drop do not commute.
        raise UsageError("-J and -M together are not supported; give one of them")
    if args.num_documents is not None and args.num_documents < 0:
        raise UsageError(f"-N takes a number of documents of at least 0; got {args.num_documents}")
    if args.num_documents is not None and args.num_documents > evaluation.LARGEST_WHOLE_NUMBER:
        # trec_eval reads -N as a C long; utility's kernel reads it as int64.
        raise UsageError(
            f"-N takes a number of documents of at most 2**63 - 1; got {args.num_documents}"
        )
    try:
        evaluation.check_relevance_level(args.relevance_level)
    except ValueError as error:
        raise UsageError(f"-l: {error}") from None
    ceiling = args.err_max_label
    if ceiling is not None and not (math.isfinite(ceiling) and ceiling > 0):
        raise UsageError(f"--err-max-label takes a finite grade above 0; got {ceiling!r}")


def _json_options(args: argparse.Namespace, runid: bytes | None) -> dict:
    """The options of an evaluation, as the JSON report records them."""
    return {
        "qrels": args.qrels if not args.example else "example.qrels",
        "run": args.run if not args.example else "example.run",
        "runid": evaluation.show(runid) if runid is not None else None,
        "ignore_ties": args.ignore_ties,
        "complete": args.complete,
        "trec_eval": args.trec_eval,
        "relevance_level": args.relevance_level,
        "max_documents": args.max_documents,
        "err_max_label": args.err_max_label,
        "judged_only": args.judged_only,
        "num_documents": args.num_documents,
        "single_precision": args.single_precision,
        "tie_range": args.tie_range,
        "rel_format": args.rel_format,
    }


def _kernel_guess(command: str, requests, definitions, args) -> str:
    """What decides a command's kernels before its files are read, for the loader's guess."""
    names = [r.name for r in requests]
    options = [getattr(args, name, None) for name in ("complete", "tie_range", "single_precision")]
    return repr((command, names, tuple(definitions), options, _judgment_groups(args)))


def _run_evaluate(args: argparse.Namespace, out) -> int:
    _check_evaluate_arguments(args)
    requests = _requests(args)
    if args.json and evaluation.names_relstring(args.measures or ()):
        raise UsageError("relstring is a line of the table; --json does not print it")
    definitions = _definitions(args)
    progress = _start(args, out)
    _startup.start_loading_jax(_kernel_guess("evaluate", requests, definitions, args))
    try:
        qrels = _read_qrels(args, definitions, progress)
        run = _open(args.run, evaluation.read_run, progress)
        progress.begin("evaluating")
        joined, results, extremes, withheld = evaluation.run_joined(
            qrels,
            run,
            requests,
            definitions,
            complete=args.complete,
            judgment_groups=_judgment_groups(args),
            single_precision=args.single_precision,
            tie_range=args.tie_range,
            docno_rank=not args.json and any(r.family == "relstring" for r in requests),
            progress=progress,
            ready=_startup.jax_loaded(progress, "evaluating"),
        )
        # Only now: a measure's tie key is its formula's, which imports JAX's
        # side of lodestar, and the main thread imports none of it while the
        # loader thread may still be importing JAX.
        if args.tie_range:
            _note_measures_without_tie_range(requests)
        if withheld is not None:
            _terminal.note(f"--tie-range: {withheld}")
        _note_dropped(joined, args.complete)
    finally:
        progress.close()
    if args.json:
        _write_json(
            out,
            joined.query_ids,
            evaluation.measure_requests(requests),
            results,
            per_query=args.per_query,
            options=_json_options(args, joined.runid),
            extremes=extremes,
        )
    else:
        _write_table(
            out,
            joined,
            requests,
            results,
            per_query=args.per_query,
            extremes=extremes,
            trec_order=args.trec_eval,
            max_documents=args.max_documents,
        )
    out.flush()
    if args.plot:
        from lodestar import _plots

        _plots.evaluation_histograms(
            args.plot,
            [r.name for r in evaluation.measure_requests(requests)],
            results,
            extremes,
            title=evaluation.show(joined.runid) if joined.runid is not None else args.run,
        )
    return 0


def _note_measures_without_tie_range(requests) -> None:
    """Name the measures that ``--tie-range`` gives no range, and why."""
    measures = evaluation.measure_requests(requests)
    names = [r.name for r in measures if not evaluation.has_tie_range(r)]
    if names:
        _terminal.note(
            f"--tie-range gives no range for {', '.join(names)}: no order of the ties is "
            "known to give their smallest and largest values"
        )


def _definitions(args) -> evaluation.Definitions:
    return evaluation.Definitions(
        trec_eval=args.trec_eval,
        relevance_level=args.relevance_level,
        ignore_ties=args.ignore_ties,
        max_documents=getattr(args, "max_documents", None),
        err_max_label=getattr(args, "err_max_label", None),
        judged_only=getattr(args, "judged_only", False),
        num_documents=getattr(args, "num_documents", None),
    )


def _check_plotting() -> None:
    from lodestar import _plots

    if not _plots.available():
        raise UsageError(_plots.MISSING)


def _start(args, out) -> _terminal.Progress:
    """The progress line of evaluate and compare, once what would fail late is refused.

    Without matplotlib for ``--plot``, or with standard output closed, the
    command fails before it reads a file rather than after the evaluation.
    """
    if args.plot:
        _check_plotting()
    if out is None:
        raise OSError("standard output is closed; there is nowhere to write the results")
    return _terminal.Progress(mode=args.progress)


def _read_qrels(
    args, definitions: evaluation.Definitions, progress: _terminal.Progress
) -> evaluation.TrecFile:
    """The qrels of ``args``, refused if a relevance does not suit ``definitions``."""
    reader = functools.partial(
        evaluation.read_qrels, definitions=definitions, judgment_groups=_judgment_groups(args)
    )
    return _open(args.qrels, reader, progress)


def _run_names(paths: list[str], runs: list[evaluation.TrecFile]) -> list[str]:
    """Each run's name: its runid where every runid is shown distinctly, else its path.

    Runids are compared as they are shown: the byte 0xff is shown as the four
    characters of its escape, which a runid may hold as they are, and two runs
    of the report would have one name.
    """
    shown = [evaluation.show(r.runid) for r in runs if r.runid is not None]
    if len(shown) == len(runs) and len(set(shown)) == len(shown):
        return shown
    return list(paths)


def _run_compare(args: argparse.Namespace, out) -> int:
    if args.example:
        if args.qrels or args.runs:
            raise UsageError("--example compares the bundled files; give no QRELS or RUN")
        args.qrels, args.runs = _compare_example_paths()
    elif not args.qrels:
        raise UsageError("give QRELS and two or more RUNs, or --example")
    if len(args.runs) < 2:
        raise UsageError(f"compare needs at least 2 runs; got {len(args.runs)}")
    _check_standard_input_once([args.qrels, *args.runs])
    # Checked before the runs are read and evaluated, which can take minutes.
    if args.permutations < 1:
        raise UsageError(f"--permutations takes a number of at least 1; got {args.permutations}")
    if args.samples < 1:
        raise UsageError(f"--samples takes a number of at least 1; got {args.samples}")
    if not 0 <= args.seed < 2**32:
        raise UsageError(f"--seed takes a number in [0, 2**32 - 1]; got {args.seed}")
    requests = evaluation.measure_requests(_requests(args))
    if not requests:
        raise UsageError("compare needs at least one measure")
    definitions = _definitions(args)
    progress = _start(args, out)
    _startup.start_loading_jax(_kernel_guess("compare", requests, definitions, args))
    try:
        qrels = _read_qrels(args, definitions, progress)
        runs = []
        for path in args.runs:
            runs.append(_open(path, evaluation.read_run, progress))
        names = _run_names(args.runs, runs)
        if len(set(names)) != len(names):
            raise UsageError("two runs have the same name; give each run once")
        comparison, scores, queries = evaluation.compare_joined(
            qrels,
            dict(zip(names, runs, strict=True)),
            requests,
            definitions,
            complete=args.complete,
            test=args.test,
            alpha=args.alpha,
            correction=args.correction,
            permutations=args.permutations,
            samples=args.samples,
            seed=args.seed,
            progress=progress,
            ready=functools.partial(_startup.jax_loaded, progress),
        )
    finally:
        progress.close()
    which = (
        "every qrels query; a query missing from a run scores 0 (-c)"
        if args.complete
        else "the queries in the qrels and in every run (-c counts the others as 0)"
    )
    if args.json:
        document = comparison.to_dict()
        document["queries_tested"] = which
        # The bundled files by name, as evaluate --example shows them: the
        # installed path says nothing to a reader of the report.
        shown = [os.path.basename(p) if args.example else p for p in (args.qrels, *args.runs)]
        document["runs_files"] = dict(zip(names, shown[1:], strict=True))
        # How the runs were evaluated: two reports made under different
        # definitions must be told apart.
        document["evaluation"] = {
            "qrels": shown[0],
            "trec_eval": args.trec_eval,
            "ignore_ties": args.ignore_ties,
            "complete": args.complete,
            "relevance_level": args.relevance_level,
        }
        out.write(json.dumps(_finite_or_null(document), indent=2, allow_nan=False) + "\n")
    else:
        out.write(comparison.format(args.format) + "\n")
        out.write(f"Queries: {len(queries)}, {which}.\n")
    out.flush()
    if args.plot:
        from lodestar import _plots

        first = names[0]
        panels = {
            f"{r.name}: {other} − {first}": scores[other][r.name] - scores[first][r.name]
            for other in names[1:]
            for r in requests
        }
        _plots.per_topic_differences(args.plot, panels)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``lodestar`` command line in this process.

    Args:
      argv: The arguments after the program name; None reads ``sys.argv``.

    Returns:
      The exit status: 0 on success, 1 when the input is refused (the reason
      is printed on stderr), 2 for a usage error.

    Example:
      >>> from lodestar.cli import main
      >>> main(["evaluate", "--example", "-m", "P@2"])
      num_q                 	all	4
      P@2                   	all	0.4792
      0
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        try:
            args = _parser().parse_args(_split_measures(argv))
        except SystemExit as done:  # --help and --version print, then exit
            return int(done.code or 0)
        if args.command == "compare":
            if not args.measures:
                args.measures = ["ndcg@10", "map"]
            return _run_compare(args, sys.stdout)
        return _run_evaluate(args, sys.stdout)
    except UsageError as error:
        _terminal.note(f"error: {error}")
        command = "compare" if argv[:1] == ["compare"] else "evaluate"
        _terminal.note(f"see 'lodestar {command} --help'")
        return 2
    except (ValueError, OSError) as error:
        _terminal.note(f"error: {error}")
        return 1
    except MemoryError as error:
        _terminal.note(f"error: out of memory{f': {error}' if str(error) else ''}")
        return 1
    except RuntimeError as error:
        # XLA's allocator, out of memory on the device or the host.
        if "RESOURCE_EXHAUSTED" not in str(error):
            raise
        _terminal.note(f"error: out of memory: {str(error).splitlines()[0]}")
        return 1


def console() -> None:
    """The ``lodestar`` program: :func:`main`, behaving as a Unix tool does.

    JAX loads on a thread while the files are read. A closed pipe
    (``lodestar evaluate ... | head -1``) ends the program quietly, as it ends
    trec_eval; Ctrl-C exits with status 130 and one line instead of a
    traceback. It sets float64, JAX's persistent compilation cache, the C
    library's thresholds for large blocks and who handles Ctrl-C (not
    pyarrow) for its own process, which :func:`main` never does.

    Returns:
      Never: it exits the process with :func:`main`'s status (130 when
      interrupted).

    The console script ``lodestar`` and ``python -m lodestar`` call it.
    """
    # Everything is inside the try: Ctrl-C can come at any line, and an
    # interrupt remembered during an import is raised right after it.
    try:
        if hasattr(signal, "SIGPIPE"):
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        _interrupt.install()
        # pyarrow sets a SIGINT handler of its own around each parse, and lost
        # a Ctrl-C that came as a parse ended (1 in 300 at TREC depth): the
        # reader parses in pieces, and Python's handler runs between them.
        pa.enable_signal_handlers(False)
        if "pandas" not in sys.modules:
            sys.meta_path.insert(0, _startup.WithoutPandas())
        _startup.keep_scratch_memory()
        _startup.pause_garbage_collection()
        # A Ctrl-C that a finaliser swallowed while the modules imported.
        _interrupt.raise_if_interrupted()
        _startup.load_in_background()
        status = main()
        # A Ctrl-C that came during an import, and no check raised since.
        _interrupt.raise_if_interrupted()
        # Flushing is inside: the results can still be waiting on a full pipe
        # when Ctrl-C comes.
        status = _flushed(status)
    except BaseException as error:
        # Ctrl-C, or an import it interrupted that raised an error of its own
        # (NumPy's "C-extensions failed"). A second Ctrl-C while the note is
        # written is only remembered (lodestar._interrupt).
        _interrupt.reporting()
        if not _interrupt.caused_by_interrupt(error):
            raise
        _terminal.note("interrupted")
        status = _flushed(130, results=False)
    # The program ends with os._exit once its streams are flushed. Ending the
    # interpreter normally frees the run's arrays and JAX's modules one by
    # one, a sixth of a second on a TREC-depth run that the user waits for
    # (decision 0027); and it crashes (SIGSEGV) while XLA's threads or the
    # host pool still run an interrupted evaluation, or while the loader
    # thread is still importing JAX's C++ libraries. Under a profiler or a
    # coverage tracer, which write their results as the interpreter ends,
    # it ends normally.
    if sys.getprofile() is None and sys.gettrace() is None:
        os._exit(status)
    sys.exit(status)


def _flushed(status: int, *, results: bool = True) -> int:
    """``status`` once stdout and stderr are flushed; 1 if the results could not be written.

    An interrupted program flushes stderr only (``results=False``): its
    results may be what a full pipe is holding up.
    """
    try:
        if results and sys.stdout is not None:
            sys.stdout.flush()
    except OSError as error:
        _terminal.note(f"error: cannot write the results: {error.strerror or error}")
        status = status or 1
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except OSError:
        pass
    return status
