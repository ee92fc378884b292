"""Comparing several runs: :func:`compare_scores` and the :class:`Comparison` it reports."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from lodestar import _validation
from lodestar.stats import _checks, _corrections, _student_t, _tests

_TESTS = ("t", "randomization", "bootstrap")
_CORRECTIONS = ("holm", "bonferroni", "none")
_STYLES = ("table", "markdown", "latex")


_SUPERSCRIPTS = dict(
    zip("abcdefghijklmnopqrstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ\U000107a5ʳˢᵗᵘᵛʷˣʸᶻ", strict=True)
)
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_MARKDOWN_SPECIAL = {"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _escape(text: str, table: Mapping[str, str]) -> str:
    return "".join(table.get(character, character) for character in text)


def _wrap(note: str) -> str:
    """``note`` in lines of at most 79 characters, never breaking ``p ≤ alpha``."""
    kept = note.replace(" ≤ ", "\0≤\0").replace("adjusted p", "adjusted\0p")
    return textwrap.fill(kept, width=79).replace("\0", " ")


def _readonly(array) -> np.ndarray:
    array = np.array(array)
    array.flags.writeable = False
    return array


@dataclasses.dataclass(frozen=True, eq=False)
class Comparison:
    """Every pair of several runs tested on several measures: :func:`compare_scores`.

    Arrays indexed by runs follow the order of ``runs``, and measures that
    of ``measures``. Entry ``[i, j, k]`` of a pairwise array compares run
    ``i`` with run ``j`` on measure ``k``; the diagonal compares a run with
    itself (difference 0, p-value 1, never significant). The arrays are
    read-only NumPy float64 (``significant`` is boolean).

    Attributes:
      runs: The run names, in the order given.
      measures: The measure names, in the order of the first run.
      queries: The number of queries every array covers.
      test: ``"t"``, ``"randomization"`` or ``"bootstrap"``.
      correction: ``"holm"``, ``"bonferroni"`` or ``"none"``.
      alpha: The significance level.
      permutations: The number of sign flips (``2**queries`` when exact) for
        the randomization test, else None.
      exact: Whether the randomization test enumerated every sign flip; None
        for the other tests.
      samples: The number of bootstrap resamples, else None.
      seed: The seed of the randomization (Monte Carlo) or bootstrap test,
        else None.
      means: ``(runs, measures)`` the mean of each run on each measure.
      mean_differences: ``(runs, runs, measures)`` the mean per-query
        difference, run ``i`` minus run ``j``.
      effect_sizes: ``(runs, runs, measures)`` Cohen's d_z of those
        differences (``mean / sd``; 0 when they are all 0, +-inf when all equal).
      statistics: ``(runs, runs, measures)`` the test's statistic, antisymmetric:
        Student's t of the differences for the t-test and the bootstrap
        (whose resampled t's it is compared with), the mean difference for
        the randomization test.
      p_values: ``(runs, runs, measures)`` two-sided p-values, symmetric.
      adjusted_p_values: ``(runs, runs, measures)`` the p-values corrected over
        the ``runs * (runs - 1) / 2`` pairs of each measure, symmetric.
      significant: ``(runs, runs, measures)`` whether the adjusted p-value is
        at most ``alpha``, symmetric; which run is better is the sign of
        ``mean_differences``.
      confidence: The level of the intervals, ``1 - alpha``; None for the
        randomization test, which has no interval.
      low: ``(runs, runs, measures)`` the lower end of the interval of each
        mean difference, else None: Student's t-interval
        ``mean ± t(1 - alpha/2, n - 1) sd / sqrt(n)`` for the t-test, the
        percentile interval of the resampled means for the bootstrap (which
        covers less than its level on few queries: about 88% for 95% at 10
        queries). Not corrected for multiple comparisons.
      high: The upper ends, likewise; ``low[j, i] = -high[i, j]``.
    """

    runs: tuple[str, ...]
    measures: tuple[str, ...]
    queries: int
    test: str
    correction: str
    alpha: float
    permutations: int | None
    exact: bool | None
    samples: int | None
    seed: int | None
    means: np.ndarray
    mean_differences: np.ndarray
    effect_sizes: np.ndarray
    statistics: np.ndarray
    p_values: np.ndarray
    adjusted_p_values: np.ndarray
    significant: np.ndarray
    confidence: float | None
    low: np.ndarray | None
    high: np.ndarray | None

    @property
    def better(self) -> np.ndarray:
        """``(runs, runs, measures)``: run ``i`` is significantly better than run ``j``."""
        return self.significant & (self.mean_differences > 0)

    def better_than(self, run: str, measure: str) -> tuple[str, ...]:
        """The runs that ``run`` is significantly better than on ``measure``.

        Args:
          run: A run name.
          measure: A measure name.

        Returns:
          Their names, in the order of ``runs``.

        Raises:
          KeyError: an unknown run or measure.

        Example:
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> stats.compare_scores(scores).better_than("dense", "map")
          ('bm25',)
        """
        i = self._index(self.runs, run, "run")
        k = self._index(self.measures, measure, "measure")
        return tuple(name for j, name in enumerate(self.runs) if self.better[i, j, k])

    @staticmethod
    def _index(names, name, kind):
        try:
            return names.index(name)
        except ValueError:
            raise KeyError(f"No {kind} named {name!r}; the {kind}s are {list(names)}.") from None

    @property
    def pairs(self) -> int:
        """How many pairs of runs each measure's correction covers."""
        return len(self.runs) * (len(self.runs) - 1) // 2

    def to_dict(self) -> dict:
        """Everything as plain Python values, ready for ``json.dumps``.

        Returns:
          A dict with the settings (``runs``, ``measures``, ``queries``,
          ``test``, ``correction``, ``alpha``, ``permutations``, ``exact``,
          ``samples``, ``seed``), ``means`` as ``{run: {measure: mean}}``, and
          ``pairs``: one entry per pair of runs (``i < j`` in run order) and
          measure, with ``runs`` (the two names), ``measure``,
          ``mean_difference`` (first minus second), ``low`` and ``high`` (its
          interval at level ``confidence``, None for the randomization test),
          ``effect_size``, ``statistic``, ``p_value``, ``adjusted_p_value``,
          ``significant`` and ``better`` (the significantly better run's name,
          or None). The settings include ``confidence``. An infinite effect
          size or statistic is written as None, so the result is strict JSON.

        Example:
          >>> import json
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> report = stats.compare_scores(scores).to_dict()
          >>> pair = report["pairs"][0]
          >>> pair["runs"], pair["better"], f"{pair['p_value']:.2e}"
          (['bm25', 'dense'], 'dense', '8.92e-05')
          >>> _ = json.dumps(report, allow_nan=False)
        """

        def number(x):
            x = float(x)
            return x if math.isfinite(x) else None

        pairs = []
        for i in range(len(self.runs)):
            for j in range(i + 1, len(self.runs)):
                for k, measure in enumerate(self.measures):
                    better = None
                    if self.better[i, j, k]:
                        better = self.runs[i]
                    elif self.better[j, i, k]:
                        better = self.runs[j]
                    pairs.append(
                        {
                            "runs": [self.runs[i], self.runs[j]],
                            "measure": measure,
                            "mean_difference": number(self.mean_differences[i, j, k]),
                            "low": None if self.low is None else number(self.low[i, j, k]),
                            "high": None if self.high is None else number(self.high[i, j, k]),
                            "effect_size": number(self.effect_sizes[i, j, k]),
                            "statistic": number(self.statistics[i, j, k]),
                            "p_value": number(self.p_values[i, j, k]),
                            "adjusted_p_value": number(self.adjusted_p_values[i, j, k]),
                            "significant": bool(self.significant[i, j, k]),
                            "better": better,
                        }
                    )
        return {
            "runs": list(self.runs),
            "measures": list(self.measures),
            "queries": self.queries,
            "test": self.test,
            "correction": self.correction,
            "alpha": self.alpha,
            "permutations": self.permutations,
            "exact": self.exact,
            "samples": self.samples,
            "seed": self.seed,
            "confidence": self.confidence,
            "means": {
                run: {m: number(self.means[i, k]) for k, m in enumerate(self.measures)}
                for i, run in enumerate(self.runs)
            },
            "pairs": pairs,
        }

    # ------------------------------------------------------------------ #
    # The report
    # ------------------------------------------------------------------ #

    def _labels(self) -> list[str]:
        if len(self.runs) <= 26:
            return [chr(ord("a") + i) for i in range(len(self.runs))]
        return [str(i + 1) for i in range(len(self.runs))]

    def _marks(self, i: int, k: int) -> list[str]:
        labels = self._labels()
        return [labels[j] for j in range(len(self.runs)) if self.better[i, j, k]]

    def note(self, style: str = "table") -> str:
        """The sentence under the table: what the superscripts mean and how they were tested.

        Args:
          style: ``"table"``, ``"markdown"`` or ``"latex"`` (``p`` and ``≤`` are
            typeset in math mode for LaTeX).

        Returns:
          One sentence naming the test, the correction, alpha and the number of
          queries.

        Raises:
          InvalidParameterError: an unknown ``style``.

        Example:
          >>> from lodestar import stats
          >>> scores = {"a": {"map": [0.2, 0.3, 0.1]}, "b": {"map": [0.5, 0.6, 0.4]}}
          >>> print(stats.compare_scores(scores).note())
          Superscripts mark the runs that a run is significantly better than
          (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 1 pair
          of runs per measure; 3 queries.
        """
        style = _validation.check_option(style, name="style", options=_STYLES, caller="note")
        if self.test == "t":
            test = "two-sided paired t-test"
        elif self.test == "randomization" and self.exact:
            test = f"two-sided paired randomization test over all {self.permutations:,} sign flips"
        elif self.test == "randomization":
            test = (
                f"two-sided paired randomization test, {self.permutations:,} random sign flips "
                f"(seed {self.seed})"
            )
        else:
            test = f"two-sided paired bootstrap test, {self.samples:,} resamples (seed {self.seed})"
        plural = "" if self.pairs == 1 else "s"
        if self.correction == "none":
            correction, p = "no correction for multiple comparisons", "p"
        else:
            name = "Holm" if self.correction == "holm" else "Bonferroni"
            correction = f"{name} correction over {self.pairs} pair{plural} of runs per measure"
            p = "adjusted p"
        threshold = f"{p} ≤ {self.alpha:g}"
        if style == "latex":
            threshold = f"{p.replace('p', '$p')} \\le {self.alpha:g}$"
        return (
            f"Superscripts mark the runs that a run is significantly better than "
            f"({threshold}): {test}, {correction}; {self.queries:,} queries."
        )

    def format(self, style: str = "table", *, digits: int = 4) -> str:
        r"""The table of means, marked with superscripts, and the note under it.

        One row per run, labelled ``a``, ``b``, ... in run order (``1``, ``2``,
        ... beyond 26 runs), one column per measure. Each mean carries the
        labels of the runs it is significantly better than on that measure,
        after the correction: the report convention of ranx and of many IR
        papers. The plain and Markdown styles add a table of the pairs: for
        each pair of runs (``a − b``: the first minus the second) and measure,
        the mean difference, its interval at level ``1 - alpha`` (t-test and
        bootstrap; not corrected for multiple comparisons), Cohen's d_z, the
        test's statistic, the p-value and the adjusted p-value. The note under
        the tables names the test, the correction, alpha and the number of
        queries (:meth:`note`).

        * ``"table"``: plain text in aligned columns, the labels as Unicode
          superscript letters (``0.4830ᵃᵇ``); beyond 26 runs, ``^(1,2)``.
        * ``"markdown"``: a GitHub table, ``0.4830<sup>ab</sup>``, and the note
          as a paragraph.
        * ``"latex"``: a ``table`` environment with a booktabs ``tabular``
          (``\usepackage{booktabs}``), ``0.4830$^{ab}$``, and the note as the
          caption; the means only, as a paper prints them. Run and measure
          names are escaped.

        Args:
          style: ``"table"``, ``"markdown"`` or ``"latex"``.
          digits: Decimal places of the means, an int in [0, 17].

        Returns:
          The report, lines joined by ``"\n"``, without a final newline.

        Raises:
          InvalidParameterError: an unknown ``style`` or a bad ``digits``.

        Example:
          >>> from lodestar import stats
          >>> scores = {
          ...     "bm25": {"map": [0.2, 0.3, 0.1, 0.4, 0.3]},
          ...     "dense": {"map": [0.5, 0.6, 0.4, 0.8, 0.6]},
          ... }
          >>> print(stats.compare_scores(scores).format())
          #  Run    map
          -  -----  -------
          a  bm25   0.2600
          b  dense  0.5800ᵃ
          <BLANKLINE>
          Pair   Measure  Difference  95% interval        d_z    t       p        adjusted p
          -----  -------  ----------  ------------------  -----  ------  -------  ----------
          a − b  map      -0.3200     [-0.3755, -0.2645]  -7.16  -16.00  8.9e-05  8.9e-05
          <BLANKLINE>
          Superscripts mark the runs that a run is significantly better than
          (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 1 pair
          of runs per measure; 5 queries.
        """
        style = _validation.check_option(style, name="style", options=_STYLES, caller="format")
        digits = _checks.check_int(digits, name="digits", caller="format", low=0, high=17)
        labels = self._labels()
        letters = len(self.runs) <= 26
        cells = []
        for i in range(len(self.runs)):
            row = []
            for k in range(len(self.measures)):
                value = f"{self.means[i, k]:.{digits}f}"
                marks = self._marks(i, k)
                joined = "".join(marks) if letters else ",".join(marks)
                if marks and style == "table":
                    value += (
                        "".join(_SUPERSCRIPTS[c] for c in joined) if letters else f"^({joined})"
                    )
                elif marks and style == "markdown":
                    value += f"<sup>{joined}</sup>"
                elif marks:
                    value += f"$^{{{joined}}}$"
                row.append(value)
            cells.append(row)
        if style == "table":
            return self._plain(labels, cells, digits)
        if style == "markdown":
            return self._markdown(labels, cells, digits)
        return self._latex(labels, cells)

    def _pairs_table(self, labels, digits: int, escape=lambda text: text):
        """``(header, rows)`` of the pairs: difference, interval, d_z, statistic, p-values."""

        def signed(x):
            return f"{x:+.{digits}f}"

        def p_text(x):
            return f"{x:.4f}" if x >= 1e-3 else f"{x:.1e}"

        header = ["Pair", "Measure", "Difference"]
        if self.confidence is not None:
            header.append(f"{self.confidence * 100:g}% interval")
        header += ["d_z", "t" if self.test != "randomization" else "statistic", "p"]
        if self.correction != "none":
            header.append("adjusted p")
        rows = []
        for i in range(len(self.runs)):
            for j in range(i + 1, len(self.runs)):
                for k, measure in enumerate(self.measures):
                    row = [f"{labels[i]} − {labels[j]}", escape(measure)]
                    row.append(signed(self.mean_differences[i, j, k]))
                    if self.low is not None and self.high is not None:
                        row.append(f"[{signed(self.low[i, j, k])}, {signed(self.high[i, j, k])}]")
                    row.append(f"{self.effect_sizes[i, j, k]:.2f}")
                    statistic = self.statistics[i, j, k]
                    row.append(
                        f"{statistic:.2f}" if self.test != "randomization" else signed(statistic)
                    )
                    row.append(p_text(self.p_values[i, j, k]))
                    if self.correction != "none":
                        row.append(p_text(self.adjusted_p_values[i, j, k]))
                    rows.append(row)
        return header, rows

    @staticmethod
    def _aligned(header, rows) -> list[str]:
        widths = [max(len(r[c]) for r in (header, *rows)) for c in range(len(header))]
        rule = ["-" * w for w in widths]

        def line(values):
            return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

        return [line(header), line(rule), *(line(r) for r in rows)]

    def _plain(self, labels, cells, digits: int) -> str:
        header = ["#", "Run", *self.measures]
        rows = [[labels[i], run, *cells[i]] for i, run in enumerate(self.runs)]
        means = self._aligned(header, rows)
        pairs = self._aligned(*self._pairs_table(labels, digits))
        return "\n".join([*means, "", *pairs, "", _wrap(self.note("table"))])

    def _markdown(self, labels, cells, digits: int) -> str:
        header = ["#", "Run", *(_escape(m, _MARKDOWN_SPECIAL) for m in self.measures)]
        lines = ["| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join(["---", "---", *(["---:"] * len(self.measures))]) + "|")
        for i, run in enumerate(self.runs):
            values = [labels[i], _escape(run, _MARKDOWN_SPECIAL), *cells[i]]
            lines.append("| " + " | ".join(values) + " |")
        header, rows = self._pairs_table(
            labels, digits, lambda text: _escape(text, _MARKDOWN_SPECIAL)
        )
        lines += ["", "| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join(["---", "---", *(["---:"] * (len(header) - 2))]) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join([*lines, "", self.note("markdown")])

    def _latex(self, labels, cells) -> str:
        measures = [_escape(m, _LATEX_SPECIAL) for m in self.measures]
        lines = [
            "\\begin{table}",
            "\\centering",
            "\\begin{tabular}{ll" + "l" * len(self.measures) + "}",
            "\\toprule",
            " & ".join(["\\#", "Run", *measures]) + " \\\\",
            "\\midrule",
        ]
        for i, run in enumerate(self.runs):
            lines.append(" & ".join([labels[i], _escape(run, _LATEX_SPECIAL), *cells[i]]) + " \\\\")
        lines += [
            "\\bottomrule",
            "\\end{tabular}",
            f"\\caption{{{self.note('latex')}}}",
            "\\end{table}",
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format("table")


def _check_scores(scores) -> tuple[list[str], list[str], np.ndarray]:
    """``(runs, measures, values)`` with ``values`` float64 ``(runs, measures, queries)``."""
    caller = "compare_scores"
    if not isinstance(scores, Mapping):
        raise TypeError(
            f"{caller} expects scores as a mapping {{run: {{measure: per-query values}}}}; "
            f"got {type(scores).__name__}."
        )
    runs = list(scores)
    if len(runs) < 2:
        raise ValueError(f"{caller} needs at least 2 runs to compare; got {len(runs)}.")
    measures = None
    values = []
    first = None  # (run, measure, queries) of the first array, for messages
    for run in runs:
        if not isinstance(run, str):
            raise TypeError(f"{caller} expects run names as str; got {run!r}.")
        per_measure = scores[run]
        if not isinstance(per_measure, Mapping):
            raise TypeError(
                f"The scores of run {run!r} must be a mapping {{measure: per-query values}}; "
                f"got {type(per_measure).__name__}."
            )
        names = list(per_measure)
        if not names:
            raise ValueError(f"Run {run!r} has no measures.")
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"{caller} expects measure names as str; got {name!r}.")
        if measures is None:
            measures = names
        elif set(names) != set(measures):
            raise ValueError(
                f"Run {run!r} has measures {sorted(names)}, but run {runs[0]!r} has "
                f"{sorted(measures)}; every run needs the same measures."
            )
        row = []
        for measure in measures:
            where = f"The scores of run {run!r} on measure {measure!r}"
            raw = per_measure[measure]
            dtype = _checks.dtype_of(raw)
            if not (
                jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.bool_)
            ) or jnp.issubdtype(dtype, jnp.complexfloating):
                raise ValueError(f"{where} must be real numbers; got dtype {dtype}.")
            array = np.asarray(raw, dtype=np.float64)
            if array.ndim != 1:
                raise ValueError(
                    f"{where} must be 1-D, one value per query; got shape {array.shape}."
                )
            if first is None:
                first = (run, measure, array.shape[0])
            elif array.shape[0] != first[2]:
                raise ValueError(
                    f"{where} cover {array.shape[0]} queries, but those of run {first[0]!r} "
                    f"on measure {first[1]!r} cover {first[2]}; every array must hold the "
                    f"same queries in the same order."
                )
            if np.isnan(array).any():
                raise ValueError(f"{where} contain NaN.")
            if np.isinf(array).any():
                raise ValueError(f"{where} contain infinity.")
            row.append(array)
        values.append(row)
    # Every run (there are at least 2) has a measure, so both are set.
    assert measures is not None and first is not None
    queries = first[2]
    if queries < 2:
        raise ValueError(f"{caller} needs at least 2 queries; got {queries}.")
    return runs, measures, np.array(values, dtype=np.float64)


def compare_scores(
    scores: Mapping[str, Mapping[str, object]],
    *,
    test: str = "t",
    alpha: float = 0.05,
    correction: str = "holm",
    permutations: int = 100_000,
    samples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Test every pair of runs on every measure, corrected per measure.

    For each measure, each of the ``k (k - 1) / 2`` pairs of the ``k`` runs is
    tested once with the chosen two-sided test (the p-value of ``(i, j)`` is
    that of ``(j, i)``), and the correction is applied over those pairs: each
    measure is its own family. A run is significantly better than another on
    a measure when the adjusted p-value is at most ``alpha`` and its mean is
    higher. The randomization and bootstrap tests share one set of sign flips
    or resamples across every pair and measure (one matrix product per
    chunk), and a pair's p-value is the one :func:`randomization_test` or
    :func:`bootstrap_test` gives for it alone with the same seed.

    Args:
      scores: ``{run: {measure: per-query values}}``; every run has the same
        measures, and every array is 1-D over the same queries in the same
        order (at least 2). Runs keep the mapping's order; measures, the first
        run's order.
      test: ``"t"`` (:func:`paired_t_test`), ``"randomization"``
        (:func:`randomization_test`) or ``"bootstrap"`` (:func:`bootstrap_test`).
      alpha: The significance level, in (0, 1).
      correction: ``"holm"`` (:func:`holm`), ``"bonferroni"`` (:func:`bonferroni`)
        or ``"none"``.
      permutations: Sign flips for the randomization test, an int >= 1; the
        test is exact when ``2**queries`` is at most this.
      samples: Resamples for the bootstrap test, an int >= 1.
      seed: The seed of the randomization and bootstrap tests, an int in
        ``[0, 2**32 - 1]``.

    Returns:
      A :class:`Comparison`, with :meth:`Comparison.format` for the report and
      :meth:`Comparison.to_dict` for JSON.

    Raises:
      InvalidParameterError: an option outside its range or choices.
      TypeError: ``scores`` is not a mapping of mappings with str names.
      ValueError: fewer than 2 runs or 2 queries, runs with different
        measures, an array that is not 1-D or holds another number of
        queries, or NaN or infinity (the message names the run and measure).

    Example:
      Three runs on two measures over six queries:

      >>> from lodestar import stats
      >>> scores = {
      ...     "bm25":   {"ndcg@10": [0.31, 0.42, 0.25, 0.50, 0.38, 0.29],
      ...                "map":     [0.20, 0.33, 0.18, 0.41, 0.30, 0.22]},
      ...     "dense":  {"ndcg@10": [0.45, 0.51, 0.40, 0.62, 0.49, 0.41],
      ...                "map":     [0.31, 0.38, 0.25, 0.49, 0.37, 0.28]},
      ...     "hybrid": {"ndcg@10": [0.52, 0.58, 0.47, 0.69, 0.55, 0.50],
      ...                "map":     [0.36, 0.41, 0.30, 0.55, 0.40, 0.33]},
      ... }
      >>> print(stats.compare_scores(scores).format(digits=3))
      #  Run     ndcg@10  map
      -  ------  -------  -------
      a  bm25    0.358    0.273
      b  dense   0.480ᵃ   0.347ᵃ
      c  hybrid  0.552ᵃᵇ  0.392ᵃᵇ
      <BLANKLINE>
      Pair   Measure  Difference  95% interval      d_z    t       p        adjusted p
      -----  -------  ----------  ----------------  -----  ------  -------  ----------
      a − b  ndcg@10  -0.122      [-0.144, -0.099]  -5.69  -13.95  3.4e-05  3.4e-05
      a − b  map      -0.073      [-0.095, -0.052]  -3.55  -8.70   3.3e-04  5.7e-04
      a − c  ndcg@10  -0.193      [-0.219, -0.168]  -7.98  -19.55  6.5e-06  1.9e-05
      a − c  map      -0.118      [-0.148, -0.088]  -4.14  -10.14  1.6e-04  4.8e-04
      b − c  ndcg@10  -0.072      [-0.082, -0.061]  -7.29  -17.85  1.0e-05  2.0e-05
      b − c  map      -0.045      [-0.058, -0.032]  -3.67  -9.00   2.8e-04  5.7e-04
      <BLANKLINE>
      Superscripts mark the runs that a run is significantly better than
      (adjusted p ≤ 0.05): two-sided paired t-test, Holm correction over 3 pairs of
      runs per measure; 6 queries.

    References:
      Smucker, Allan & Carterette, "A comparison of statistical significance
      tests for information retrieval evaluation", CIKM 2007.
      https://doi.org/10.1145/1321440.1321528

      Holm, "A simple sequentially rejective multiple test procedure",
      Scand. J. Statist. 6(2), 1979.

      Bassani, "ranx: A blazing-fast Python library for ranking evaluation and
      comparison", ECIR 2022 (the report's superscript convention).
    """
    caller = "compare_scores"
    test = _validation.check_option(test, name="test", options=_TESTS, caller=caller)
    alpha = _checks.check_unit_interval(alpha, name="alpha", caller=caller)
    correction = _validation.check_option(
        correction, name="correction", options=_CORRECTIONS, caller=caller
    )
    permutations = _checks.check_int(permutations, name="permutations", caller=caller, low=1)
    samples = _checks.check_int(samples, name="samples", caller=caller, low=1)
    seed = _checks.check_int(seed, name="seed", caller=caller, low=0, high=_checks.MAX_SEED)
    runs, measures, values = _check_scores(scores)
    k, n = len(runs), values.shape[-1]
    first, second = np.triu_indices(k, 1)
    # The report records the settings of the test that ran, None for the others'.
    flips = exact = samples_drawn = seed_used = None
    confidence = None if test == "randomization" else 1.0 - alpha
    with jax.enable_x64(True):
        a = jnp.asarray(values[first])  # (pairs, measures, queries)
        b = jnp.asarray(values[second])
        statistic, t_p, mean, effect = _tests.t_kernel(a - b)
        if test == "t":
            p = t_p
            # The t-interval: the standard error from the sample sd, as t's.
            spread = np.std(values[first] - values[second], axis=-1, ddof=1) / math.sqrt(n)
            half = _student_t.two_sided_critical_value(alpha, n - 1) * spread
            low, high = np.asarray(mean) - half, np.asarray(mean) + half
        elif test == "randomization":
            _, p, _, _, flips, exact = _tests.randomization(a, b, seed, permutations)
            seed_used = None if exact else seed
            statistic, low, high = mean, None, None
        else:
            statistic, p, _, low, high, _ = _tests.bootstrap(
                a, b, seed, samples, confidence, caller=caller
            )
            samples_drawn, seed_used = samples, seed
        if correction == "holm":
            adjusted = _corrections.holm(p.T).T
        elif correction == "bonferroni":
            adjusted = _corrections.bonferroni(p.T).T
        else:
            adjusted = p
        mean, effect, statistic, p, adjusted = (
            np.asarray(x) for x in (mean, effect, statistic, p, adjusted)
        )
        if low is not None and high is not None:
            low, high = np.asarray(low), np.asarray(high)

    def square(upper, lower_sign, diagonal):
        full = np.full((k, k, len(measures)), diagonal, dtype=upper.dtype)
        full[first, second] = upper
        full[second, first] = upper if lower_sign > 0 else -upper
        return _readonly(full)

    def interval(ends, other_ends):
        """One end of the intervals: ``ends`` above the diagonal, ``-other_ends`` below."""
        full = np.zeros((k, k, len(measures)))
        full[first, second] = ends
        full[second, first] = -other_ends
        return _readonly(full)

    p_values = square(p, 1, 1.0)
    adjusted_p_values = square(adjusted, 1, 1.0)
    return Comparison(
        runs=tuple(runs),
        measures=tuple(measures),
        queries=n,
        test=test,
        correction=correction,
        alpha=alpha,
        permutations=flips,
        exact=exact,
        samples=samples_drawn,
        seed=seed_used,
        means=_readonly(values.mean(axis=-1)),
        mean_differences=square(mean, -1, 0.0),
        effect_sizes=square(effect, -1, 0.0),
        statistics=square(statistic, -1, 0.0),
        p_values=p_values,
        adjusted_p_values=adjusted_p_values,
        significant=square(adjusted <= alpha, 1, False),
        confidence=confidence,
        low=None if low is None or high is None else interval(low, high),
        high=None if low is None or high is None else interval(high, low),
    )
