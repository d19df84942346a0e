"""The report's figures as PNG bytes (matplotlib, Agg backend, no timestamps in the files).

- agreement per field with its interval (alpha and Gwet's AC for categorical fields; similarity with
  the unrelated-answers baseline for text fields);
- coincidence ("confusion") matrices of the most confused labels per nominal field;
- an annotator x annotator heatmap of Cohen's kappa, averaged over the categorical fields.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from itertools import combinations
from typing import ParamSpec

import numpy as np

from pipeline.agreement.report_tables import Lookup, measures_in_order
from pipeline.agreement.results import AgreementReport, Confusion

_PNG_META = {"Software": None}
P = ParamSpec("P")


def _small_type(chart: Callable[P, bytes | None]) -> Callable[P, bytes | None]:
    """Draw with 9-point type without touching matplotlib's global settings (the release figures share them)."""
    @functools.wraps(chart)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> bytes | None:
        import matplotlib

        with matplotlib.rc_context({"font.size": 9}):
            return chart(*args, **kwargs)

    return wrapper


def _figure(width: float, height: float, layout: str | None = "constrained"):  # type: ignore[no-untyped-def]
    """A matplotlib Figure on the Agg canvas, without pyplot (no global state, no GUI backend)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout=layout)
    FigureCanvasAgg(figure)
    return figure


def _png(figure) -> bytes:  # type: ignore[no-untyped-def]
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata=_PNG_META)
    return buffer.getvalue()


@_small_type
def agreement_chart(report: AgreementReport, text: bool = False) -> bytes | None:
    """Horizontal interval chart: one line per measure (categorical or text)."""
    look = Lookup(report)
    series = ("similarity", "similarity_baseline") if text else ("alpha", "gwet")
    rows = []
    for measure in measures_in_order(report):
        first = look.get(measure, series[0])
        if first is None or (first.level == "text") != text:
            continue
        rows.append((measure, first, look.get(measure, series[1])))
    if not any(row[1].value is not None for row in rows):
        return None
    figure = _figure(7.5, 0.32 * len(rows) + 1.2)
    axis = figure.add_subplot()
    positions = np.arange(len(rows))[::-1]
    labels = ("mean pairwise similarity", "unrelated answers") if text else ("Krippendorff's alpha", "Gwet's AC1/AC2")
    for offset, part, colour, label in ((0.12, 1, "#1f5fa8", labels[0]), (-0.12, 2, "#d9822b", labels[1])):
        xs, ys, lows, highs = [], [], [], []
        for y, row in zip(positions, rows):
            fig = row[part]
            if fig is None or fig.value is None:
                continue
            xs.append(fig.value)
            ys.append(y + offset)
            # a percentile bootstrap interval of a small sample need not contain the point estimate
            lows.append(max(0.0, fig.value - (fig.low if fig.low is not None else fig.value)))
            highs.append(max(0.0, (fig.high if fig.high is not None else fig.value) - fig.value))
        axis.errorbar(xs, ys, xerr=[lows, highs], fmt="o", color=colour, capsize=3, markersize=4, label=label)
    for y, row in zip(positions, rows):
        if row[1].value is None:
            axis.text(0.0, y, "  not computable", va="center", fontsize=8, color="#a00")
    axis.set_yticks(positions, [row[0] for row in rows])
    axis.axvline(0.8 if not text else 0.0, color="#999", linewidth=0.8, linestyle=":")
    axis.set_xlim(-0.05 if text else min(-0.1, *(r[1].value for r in rows if r[1].value is not None)), 1.02)
    axis.set_xlabel(("similarity" if text else "coefficient") + f" ({report.confidence:.0%} bootstrap interval)")
    axis.legend(loc="lower left", fontsize=8)
    axis.grid(axis="x", alpha=0.3)
    return _png(figure)


@_small_type
def confusion_chart(confusion: Confusion) -> bytes:
    matrix = np.array(confusion.matrix, dtype=float)
    size = len(confusion.labels)
    width, height = 2.9 + 0.6 * size, 2.2 + 0.5 * size
    figure = _figure(width, height, layout=None)  # fixed margins: constrained layout costs more than the drawing
    axis = figure.add_axes((1.9 / width, 1.7 / height, 0.6 * size / width, 0.5 * size / height))
    shown = matrix / matrix.sum() if matrix.sum() else matrix
    image = axis.imshow(shown, cmap="Blues")
    axis.set_xticks(range(size), confusion.labels, rotation=45, ha="right")
    axis.set_yticks(range(size), confusion.labels)
    for i in range(size):
        for j in range(size):
            axis.text(j, i, f"{matrix[i, j]:.0f}", ha="center", va="center", fontsize=7,
                      color="white" if shown[i, j] > shown.max() / 2 else "black")
    axis.set_title(f"{confusion.measure}: coincidences of the most confused values", fontsize=9)
    figure.colorbar(image, cax=figure.add_axes((1 - 0.8 / width, 1.7 / height, 0.12 / width, 0.5 * size / height)),
                    label="share of pairable pairs")
    return _png(figure)


@_small_type
def pair_heatmap(report: AgreementReport) -> bytes | None:
    """Mean Cohen's kappa per annotator pair over the categorical measures (diagonal: 1)."""
    names = list(report.annotators)
    if len(names) < 2:
        return None
    position = {name: i for i, name in enumerate(names)}
    totals = np.zeros((len(names), len(names)))
    counts = np.zeros_like(totals)
    for f in report.figures:
        if f.scope == "pair" and f.metric == "cohen_kappa" and f.value is not None:
            i, j = position[f.annotator], position[f.other]
            for a, b in ((i, j), (j, i)):
                totals[a, b] += f.value
                counts[a, b] += 1
    if not counts.any():
        return None
    mean = np.divide(totals, counts, out=np.full_like(totals, np.nan), where=counts > 0)
    np.fill_diagonal(mean, 1.0)
    figure = _figure(2.5 + 0.9 * len(names), 1.8 + 0.8 * len(names))
    axis = figure.add_subplot()
    image = axis.imshow(mean, cmap="viridis", vmin=min(0.0, float(np.nanmin(mean))), vmax=1.0)
    axis.set_xticks(range(len(names)), names, rotation=45, ha="right")
    axis.set_yticks(range(len(names)), names)
    for i, j in combinations(range(len(names)), 2):
        for a, b in ((i, j), (j, i)):
            if np.isfinite(mean[a, b]):
                axis.text(b, a, f"{mean[a, b]:.2f}\n({int(counts[a, b])} fields)", ha="center", va="center",
                          fontsize=7, color="white" if mean[a, b] < 0.6 else "black")
    axis.set_title("Cohen's kappa per annotator pair (mean over categorical fields)", fontsize=9)
    figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    return _png(figure)
