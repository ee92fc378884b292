"""The ``lodestar`` command: ``lodestar evaluate`` and ``lodestar bench``.

``lodestar evaluate QRELS RUN`` scores a TREC run against its qrels, the way
trec_eval does, with lodestar's exact tie-averaged measures::

    lodestar evaluate qrels.txt run.txt -m ndcg@10 ndcg mrr map P@10 recall@100
    lodestar evaluate --example

The output follows trec_eval's layout, one ``measure<TAB>query<TAB>value``
line per value, with ``all`` for the mean over the evaluated queries;
``--json`` prints the same numbers unrounded as one JSON object. Every
option is described by ``lodestar evaluate --help``, and ``docs/cli.md``
states the conventions (which queries are averaged, ties, and where
trec_eval's definitions differ).

``lodestar bench [options]`` runs the exact-metric benchmark
(``lodestar._bench``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib import resources

from lodestar import _trec

DEFAULT_MEASURES = ("ndcg@10", "ndcg", "mrr", "map", "P@10", "recall@100")
# Progress is shown on a terminal once evaluation has taken this long.
_PROGRESS_AFTER_SECONDS = 1.0


class _Progress:
    """A one-line progress bar on stderr, drawn only when it is wanted.

    ``mode`` "auto" draws on a terminal once the work has run for
    ``_PROGRESS_AFTER_SECONDS``; "always" draws from the start, terminal or
    not; "never" stays silent.
    """

    def __init__(self, total: int, *, mode: str, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.total = max(total, 1)
        self.done = 0
        self.started = time.monotonic()
        self.enabled = mode == "always" or (mode == "auto" and self.stream.isatty())
        self.delay = 0.0 if mode == "always" else _PROGRESS_AFTER_SECONDS
        self.drawn = False

    def __call__(self, steps: int) -> None:
        self.done += steps
        elapsed = time.monotonic() - self.started
        if not self.enabled or elapsed < self.delay:
            return
        filled = round(30 * self.done / self.total)
        self.stream.write(
            f"\revaluating [{'#' * filled}{'.' * (30 - filled)}] "
            f"{self.done}/{self.total} batches, {elapsed:.1f} s"
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _example_paths() -> tuple[str, str]:
    data = resources.files("lodestar") / "data"
    return str(data / "example.qrels"), str(data / "example.run")


def _evaluate_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "evaluate",
        help="score a TREC run against qrels",
        description=(
            "Score a TREC run (qid Q0 docno rank score tag) against qrels (qid iter docno "
            "rel), plain or gzip-compressed. Documents are ranked by score, not by the rank "
            "column. Tied scores are averaged over every order unless --ignore-ties is "
            "given. Only queries in both files are evaluated (all qrels queries with "
            "--complete); unjudged documents are not relevant; a query with no relevant "
            "document scores 0 and stays in the mean."
        ),
    )
    parser.add_argument("qrels", nargs="?", help="the qrels file")
    parser.add_argument("run", nargs="?", help="the run file")
    parser.add_argument(
        "-m",
        "--measures",
        nargs="+",
        metavar="MEASURE",
        help=(
            "measures to compute: ndcg, dcg, mrr, map, P, recall, hits, err, each with an "
            "optional cut-off (ndcg@10, P@5); trec_eval's names (ndcg_cut_10, P_10, "
            f"recip_rank) work too. Default: {' '.join(DEFAULT_MEASURES)}"
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
            "relevant. Add --ignore-ties (and --single-precision for trec_eval 9 and "
            "pytrec_eval) to reproduce its numbers"
        ),
    )
    parser.add_argument(
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        metavar="LEVEL",
        help="relevance at which a document counts as relevant for mrr, map, P, recall, "
        "hits (trec_eval -l; default 1)",
    )
    parser.add_argument(
        "--single-precision",
        action="store_true",
        help="round scores to float32 first, as trec_eval up to 9.0.8 and pytrec_eval do",
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
        help="progress bar on stderr: on a terminal for long runs (auto), always, or never",
    )
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lodestar", description="Exact, tie-averaged ranking metrics."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _evaluate_parser(subparsers)
    subparsers.add_parser(
        "bench",
        help="run the exact-metric benchmark (options: lodestar bench --help)",
        add_help=False,
    )
    return parser


def _note(message: str) -> None:
    print(f"lodestar: {message}", file=sys.stderr)


def _note_dropped(joined: _trec.Joined, complete: bool) -> None:
    """Say which queries are not evaluated, so that no data is dropped silently."""

    def listed(qids: list[bytes]) -> str:
        shown = ", ".join(repr(_trec.show(q)) for q in qids[:5])
        return shown + (f" and {len(qids) - 5} more" if len(qids) > 5 else "")

    if joined.missing_from_qrels:
        count = len(joined.missing_from_qrels)
        _note(
            f"{count} run quer{'y' if count == 1 else 'ies'} without judgments "
            f"not evaluated: {listed(joined.missing_from_qrels)}"
        )
    if joined.missing_from_run:
        count = len(joined.missing_from_run)
        what = "scores 0 (--complete)" if complete else "is not evaluated (see --complete)"
        _note(
            f"{count} judged quer{'y' if count == 1 else 'ies'} missing from the run "
            f"{what}: {listed(joined.missing_from_run)}"
        )


def _format_value(value: float) -> str:
    return f"{value:.4f}"


def _print_table(query_ids, results, *, per_query: bool, out) -> None:
    """trec_eval's layout: ``measure<TAB>query<TAB>value``, ``all`` for the mean."""
    names = list(results)
    width = max([22, *(len(n) for n in names)])
    if per_query:
        for index, qid in enumerate(query_ids):
            for name in names:
                value = _format_value(results[name][index])
                print(f"{name:<{width}}\t{_trec.show(qid)}\t{value}", file=out)
    print(f"{'num_q':<{width}}\tall\t{len(query_ids)}", file=out)
    for name in names:
        print(f"{name:<{width}}\tall\t{_format_value(results[name].mean())}", file=out)


def _print_json(query_ids, results, *, per_query: bool, options: dict, out) -> None:
    document = {
        "options": options,
        "num_q": len(query_ids),
        "mean": {name: float(values.mean()) for name, values in results.items()},
    }
    if per_query:
        document["per_query"] = {
            _trec.show(qid): {name: float(values[index]) for name, values in results.items()}
            for index, qid in enumerate(query_ids)
        }
    json.dump(document, out, indent=2)
    print(file=out)


def _evaluate(args: argparse.Namespace, out) -> int:
    if args.example:
        if args.qrels or args.run:
            raise ValueError("--example evaluates the bundled files; give no QRELS or RUN")
        args.qrels, args.run = _example_paths()
    elif not (args.qrels and args.run):
        raise ValueError("give QRELS and RUN, or --example")
    measures = [_trec.parse_measure(text) for text in args.measures or DEFAULT_MEASURES]
    measures = list({m.name: m for m in measures}.values())  # each name once, in order
    for measure in measures:
        _trec.metric_function(measure.kind)
    definitions = _trec.Definitions(
        trec_eval=args.trec_eval,
        relevance_level=args.relevance_level,
        ignore_ties=args.ignore_ties,
    )
    qrels = _trec.read_qrels(args.qrels)
    _trec.check_relevance(qrels, definitions)
    run = _trec.read_run(args.run)
    joined = _trec.join(
        qrels,
        run,
        complete=args.complete,
        docno_order=args.ignore_ties,
        single_precision=args.single_precision,
    )
    del qrels, run
    _note_dropped(joined, args.complete)
    if not joined.query_ids:
        raise ValueError(
            "no query is in both the qrels and the run, so there is nothing to evaluate"
        )
    progress = _Progress(_trec.batch_count(joined.retrieved), mode=args.progress)
    try:
        results = _trec.evaluate(joined, measures, definitions, progress=progress)
    finally:
        progress.close()
    if args.json:
        options = {
            "qrels": args.qrels if not args.example else "example.qrels",
            "run": args.run if not args.example else "example.run",
            "ignore_ties": args.ignore_ties,
            "complete": args.complete,
            "trec_eval": args.trec_eval,
            "relevance_level": args.relevance_level,
            "single_precision": args.single_precision,
        }
        _print_json(joined.query_ids, results, per_query=args.per_query, options=options, out=out)
    else:
        _print_table(joined.query_ids, results, per_query=args.per_query, out=out)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the ``lodestar`` command line.

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
    if argv and argv[0] == "bench":
        # Imported only when asked for: the benchmark pulls in its references.
        from lodestar import _bench

        return _bench.main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        return _evaluate(args, sys.stdout)
    except (ValueError, OSError) as error:
        _note(f"error: {error}")
        return 1
