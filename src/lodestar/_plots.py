"""The command line's pictures: per-query histograms and per-topic differences.

matplotlib is optional (``pip install 'lodestar[plot]'``). Figures are drawn
with its object API (:class:`matplotlib.figure.Figure`), never through
``pyplot``, so nothing global changes and no display is needed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import numpy as np

MISSING = "--plot needs matplotlib, which is not installed: pip install 'lodestar[plot]'"


def available() -> bool:
    """Whether matplotlib can be imported."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _figure(panels: int, *, width: float = 4.2, height: float = 3.0):
    from matplotlib.figure import Figure

    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def evaluation_histograms(
    path: str | os.PathLike,
    names: Sequence[str],
    values: Mapping[str, np.ndarray],
    extremes=None,
    *,
    title: str = "",
) -> None:
    """One histogram of the per-query values per measure, saved to ``path``.

    With ``extremes`` (the lowest and highest per-query values over the
    orders of the ties, for the measures that have them) each such panel also
    shows the two tie-broken distributions as outlines, and the range of the
    mean as a band around the mean's line.
    """
    figure, axes = _figure(len(names))
    for axis, name in zip(axes, names, strict=True):
        data = np.asarray(values[name], dtype=np.float64)
        ranges = () if extremes is None or name not in extremes[0] else extremes
        stacks = [data, *(np.asarray(e[name]) for e in ranges)]
        low, high = min(float(s.min()) for s in stacks), max(float(s.max()) for s in stacks)
        if low == high:
            low, high = low - 0.5, high + 0.5
        bins = np.linspace(low, high, 21)
        axis.hist(data, bins=bins, color="#4c72b0", alpha=0.8, label="tie-averaged")
        mean = float(data.mean())
        axis.axvline(mean, color="black", linewidth=1, label=f"mean {mean:.4f}")
        if ranges:
            lowest, highest = (np.asarray(e[name], dtype=np.float64) for e in ranges)
            axis.hist(lowest, bins=bins, histtype="step", color="#c44e52", label="ties lowest")
            axis.hist(highest, bins=bins, histtype="step", color="#55a868", label="ties highest")
            band = sorted((float(lowest.mean()), float(highest.mean())))
            axis.axvspan(*band, color="grey", alpha=0.25, label="range of the mean")
        axis.set_title(name)
        axis.set_xlabel("per-query value")
        axis.set_ylabel("queries")
        axis.legend(fontsize="small")
    if title:
        figure.suptitle(title)
    figure.savefig(path)


def per_topic_differences(path: str | os.PathLike, panels: Mapping[str, np.ndarray]) -> None:
    """Per panel, per-query differences between two runs, sorted: the per-topic chart.

    Args:
      path: Where to save the figure.
      panels: Title (``"ndcg@10: B - A"``) to the per-query differences.
        Bars above zero are queries where the first-named run wins.
    """
    figure, axes = _figure(len(panels), width=5.0)
    for axis, (title, differences) in zip(axes, panels.items(), strict=True):
        delta = np.sort(np.asarray(differences, dtype=np.float64))[::-1]
        colours = np.where(delta > 0, "#55a868", np.where(delta < 0, "#c44e52", "#8c8c8c"))
        axis.bar(np.arange(len(delta)), delta, width=1.0, color=colours)
        axis.axhline(0, color="black", linewidth=0.8)
        wins, losses = int((delta > 0).sum()), int((delta < 0).sum())
        axis.set_title(title)
        axis.set_xlabel(f"queries, sorted ({wins} better, {losses} worse)")
        axis.set_ylabel("difference")
    figure.savefig(path)
