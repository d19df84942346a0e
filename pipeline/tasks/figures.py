"""The one adapter for matplotlib (imported lazily, Agg canvas): release figures as PNG bytes.

Byte-stable: matplotlib's default style (not the user's matplotlibrc), a fixed size and dpi, and no
`Software` text chunk; Agg writes no time into a PNG. Same matplotlib version + same data = same bytes.

Drawn with as few matplotlib objects as the picture needs: rectangles and texts placed in inches on a bare
`Figure`, no pyplot and no Axes. An Axes brings tick objects, locators and layout passes that cost most of a
figure's time (8 figures took ~1.1 s of CPU with Axes, a fifth of a full-size freeze); every count is written
on its bar or cell, so axes' ticks would add nothing.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_DPI = 100
_BAR = "#4c72b0"


def _import_matplotlib() -> None:
    """What drawing needs, imported (the child of `rendering` does it while its jobs are still being made)."""
    from importlib import import_module

    for module in ("matplotlib.backends.backend_agg", "matplotlib.figure", "matplotlib.patches", "matplotlib.style"):
        import_module(module)  # backend_agg: savefig's PNG canvas


def matplotlib_version() -> str:
    from importlib.metadata import version

    return version("matplotlib")


class _Sheet:
    """A bare figure on which texts and rectangles are placed in inches from its bottom-left corner."""

    def __init__(self, width: float, height: float) -> None:
        from matplotlib.figure import Figure

        self.fig = Figure(figsize=(width, height), dpi=_DPI)
        self.inches = self.fig.dpi_scale_trans

    def text(self, x: float, y: float, text: str, size: float, **style: Any) -> None:
        self.fig.text(x, y, text, fontsize=size, transform=self.inches, **style)

    def box(self, x: float, y: float, width: float, height: float, color: Any) -> None:
        from matplotlib.patches import Rectangle

        self.fig.add_artist(Rectangle((x, y), width, height, facecolor=color, edgecolor="none",
                                      transform=self.inches))

    def png(self) -> bytes:
        buffer = io.BytesIO()
        self.fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
        return buffer.getvalue()


def transition_png(labels: list[str], matrix: list[list[float]], counts: list[list[int]], title: str) -> bytes:
    """Heatmap of the row-normalised transition matrix (self-transitions excluded): each cell's share and count
    written in it, a 0-1 colour key on the right."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"):
        # Sized from the labels: an 8-point character is ~0.07 in wide, and ~0.05 in tall when turned 45 degrees
        longest = max(map(len, labels), default=0)
        cell, left, bottom = 0.75, 0.55 + 0.07 * longest, 0.6 + 0.05 * longest
        grid = cell * len(labels)
        width, height = left + max(grid, 3.0) + 1.0, bottom + max(grid, 2.0) + 0.6
        sheet = _Sheet(width, height)
        grid_top = bottom + grid
        blues = matplotlib.colormaps["Blues"]
        for i, row in enumerate(matrix):
            y = grid_top - (i + 1) * cell
            sheet.text(left - 0.06, y + cell / 2, labels[i], 8, ha="right", va="center")
            for j, value in enumerate(row):
                x = left + j * cell
                if i == j:
                    sheet.text(x + cell / 2, y + cell / 2, "–", 8, ha="center", va="center", color="grey")
                    continue  # excluded
                sheet.box(x, y, cell, cell, blues(value))
                if counts[i][j]:
                    sheet.text(x + cell / 2, y + cell / 2, f"{value:.2f}\n({counts[i][j]})", 6, ha="center",
                               va="center", color="white" if value > 0.6 else "black")
        for j, label in enumerate(labels):
            sheet.text(left + (j + 0.5) * cell, bottom - 0.06, label, 8, ha="right", va="top", rotation=45,
                       rotation_mode="anchor")
        if labels:
            key = left + grid + 0.2
            for step in range(10):
                sheet.box(key, bottom + step * grid / 10, 0.18, grid / 10, blues((step + 0.5) / 10))
            sheet.text(key + 0.24, bottom, "0", 7, va="bottom")
            sheet.text(key + 0.24, grid_top, "1", 7, va="top")
            sheet.text(key + 0.5, (bottom + grid_top) / 2, "share of transitions out of the row label", 7,
                       rotation=90, ha="center", va="center")
        sheet.text(left + grid / 2, 0.1, "next label", 10, ha="center", va="bottom")
        sheet.text(0.1, (bottom + grid_top) / 2, "label", 10, ha="left", va="center", rotation=90)
        sheet.text(width / 2, height - 0.15, title, 9, ha="center", va="top")
        return sheet.png()


def distribution_png(title: str, panels: dict[str, dict[str, int]], xlabel: str) -> bytes:
    """Bar charts of gold label counts, one panel per scenario, each bar's count written on it."""
    import matplotlib.style

    with matplotlib.style.context("default"):
        longest = max((len(key) for counts in panels.values() for key in counts), default=0)
        turned = longest > 3  # long labels are turned 45 degrees (~0.05 in of height per 8-point character)
        bottom = 0.55 + (0.05 * longest if turned else 0.2)
        width, height = 5.0 * max(1, len(panels)), bottom + 3.0
        sheet = _Sheet(width, height)
        top = height - 0.85
        for n, (scenario, counts) in enumerate(panels.items()):
            left, right = 5.0 * n + 0.45, 5.0 * n + 4.85
            keys = list(counts)
            slot = (right - left) / max(1, len(keys))
            highest = max(counts.values(), default=0) or 1
            for x, key in enumerate(keys):
                middle = left + (x + 0.5) * slot
                bar = (top - bottom) * counts[key] / highest
                sheet.box(middle - 0.4 * slot, bottom, 0.8 * slot, bar, _BAR)
                sheet.text(middle, bottom + bar + 0.03, str(counts[key]), 7, ha="center", va="bottom")
                sheet.text(middle, bottom - 0.06, key, 8, ha="right" if turned else "center", va="top",
                           rotation=45 if turned else 0, rotation_mode="anchor")
            sheet.box(left, bottom - 0.01, right - left, 0.01, "black")  # the baseline
            sheet.text((left + right) / 2, top + 0.3, f"{scenario} (n = {sum(counts.values())})", 9, ha="center",
                       va="bottom")
            sheet.text((left + right) / 2, 0.08, xlabel, 8, ha="center", va="bottom")
            sheet.text(left - 0.3, (bottom + top) / 2, "instances", 8, ha="center", va="center", rotation=90)
        sheet.text(width / 2, height - 0.12, title, 10, ha="center", va="top")
        return sheet.png()


def render_jobs(jobs: list[tuple[str, str, tuple]]) -> dict[str, bytes]:
    """Render (path, kind, args) jobs; kind is 'transition' or 'distribution'."""
    kinds = {"transition": transition_png, "distribution": distribution_png}
    return {path: kinds[kind](*args) for path, kind, args in jobs}


class Drawing:
    """Figures drawn in a child process, started before its jobs are known so that matplotlib's import overlaps
    the caller's work (`draw` hands the jobs over; calling the object waits for the PNGs). The child runs this
    module alone (not the caller's script) with the same interpreter and package, so the bytes are those
    `render_jobs` makes here; where the child cannot start or fails, they are drawn in this process."""

    def __init__(self) -> None:
        import os
        import subprocess
        import sys
        from pathlib import Path

        package_parent = str(Path(__file__).resolve().parents[2])
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
        self.jobs: list[tuple[str, str, tuple]] | None = None
        self.child: subprocess.Popen | None = None
        try:
            self.child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError:
            self.child = None

    def draw(self, jobs: list[tuple[str, str, tuple]]) -> None:
        import pickle

        self.jobs = jobs
        if self.child is not None:
            assert self.child.stdin is not None
            try:
                self.child.stdin.write(pickle.dumps(jobs))
                self.child.stdin.close()
            except OSError:  # the child died (then the figures are drawn here)
                self.stop()

    def __call__(self) -> dict[str, bytes]:
        import pickle

        if self.jobs is None:
            raise RuntimeError("Drawing called before draw(jobs)")
        if self.child is not None:
            assert self.child.stdout is not None
            data = self.child.stdout.read()
            if self.child.wait() == 0:
                try:
                    return pickle.loads(data)
                except (pickle.UnpicklingError, EOFError):
                    pass
        return render_jobs(self.jobs)

    def stop(self) -> None:
        """End the child if it still runs (the caller failed, or the child can no longer be fed); a later call
        draws the figures here."""
        child, self.child = self.child, None
        if child is not None:
            if child.poll() is None:
                child.kill()
                child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None:
                    pipe.close()


@contextmanager
def rendering(jobs: list[tuple[str, str, tuple]] | None = None) -> Iterator[Drawing]:
    """A `Drawing` (its child started now), given `jobs` now if known; the child is ended when the block ends."""
    drawing = Drawing()
    try:
        if jobs is not None:
            drawing.draw(jobs)
        yield drawing
    finally:
        drawing.stop()


if __name__ == "__main__":  # the child of `Drawing`: jobs pickled on stdin, PNG bytes pickled on stdout
    import pickle
    import sys

    _import_matplotlib()  # while the parent still builds what the jobs are drawn from
    sys.stdout.buffer.write(pickle.dumps(render_jobs(pickle.loads(sys.stdin.buffer.read()))))
