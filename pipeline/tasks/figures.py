"""The one adapter for matplotlib (imported lazily, Agg canvas): release figures as PNG bytes.

Byte-stable: matplotlib's default style (not the user's matplotlibrc), a fixed size and dpi, and no
`Software` text chunk; Agg writes no time into a PNG. Same matplotlib version + same data = same bytes.
Figures are made as bare `matplotlib.figure.Figure` objects, without pyplot (its import and figure manager
cost time and change no pixel: the PNGs are the bytes pyplot made).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_DPI = 100


def _import_matplotlib() -> None:
    """What drawing needs, imported (the child of `rendering` does it while its jobs are still being made)."""
    import matplotlib.backends.backend_agg  # noqa: F401  (savefig's PNG canvas)
    import matplotlib.figure  # noqa: F401
    import matplotlib.style  # noqa: F401


def _subplots(figsize: tuple[float, float], **grid: Any) -> tuple[Any, Any]:
    """A figure and its axes, as pyplot.subplots makes them, but not registered with pyplot."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(**grid)


def matplotlib_version() -> str:
    from importlib.metadata import version

    return version("matplotlib")


def _png(fig: Any) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return buffer.getvalue()


def transition_png(labels: list[str], matrix: list[list[float]], counts: list[list[int]], title: str) -> bytes:
    """Heatmap of the row-normalised transition matrix (self-transitions excluded), counts in the cells."""
    import matplotlib.style

    with matplotlib.style.context("default"):
        size = max(4.0, 0.75 * len(labels) + 2.5)
        fig, ax = _subplots((size + 1.2, size))
        if labels:
            image = ax.imshow(matrix, cmap="Blues", vmin=0.0, vmax=1.0)
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of transitions out of the row label")
            ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
            ax.set_yticks(range(len(labels)), labels, fontsize=8)
            for i, row in enumerate(matrix):
                for j, value in enumerate(row):
                    if i == j:
                        ax.text(j, i, "–", ha="center", va="center", fontsize=8, color="grey")  # excluded
                    elif counts[i][j]:
                        ax.text(j, i, f"{value:.2f}\n({counts[i][j]})", ha="center", va="center", fontsize=6,
                                color="white" if value > 0.6 else "black")
        ax.set_xlabel("next label")
        ax.set_ylabel("label")
        ax.set_title(title, fontsize=9)
        # A fixed layout: tight_layout would double the rendering time of a release.
        fig.subplots_adjust(left=0.28, right=0.92, bottom=0.28, top=0.9)
        return _png(fig)


def distribution_png(title: str, panels: dict[str, dict[str, int]], xlabel: str) -> bytes:
    """Bar charts of gold label counts, one panel per scenario."""
    import matplotlib.style

    with matplotlib.style.context("default"):
        fig, axes = _subplots((5.0 * len(panels), 4.0), nrows=1, ncols=len(panels), squeeze=False)
        for ax, (scenario, counts) in zip(axes[0], panels.items()):
            keys = list(counts)
            ax.bar(range(len(keys)), [counts[k] for k in keys], color="#4c72b0")
            ax.set_xticks(range(len(keys)), keys, rotation=45 if max(map(len, keys), default=0) > 3 else 0,
                          ha="right" if max(map(len, keys), default=0) > 3 else "center", fontsize=8)
            for x, key in enumerate(keys):
                ax.annotate(str(counts[key]), (x, counts[key]), ha="center", va="bottom", fontsize=7)
            ax.set_title(f"{scenario} (n = {sum(counts.values())})", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            ax.set_ylabel("instances", fontsize=8)
        fig.suptitle(title, fontsize=10)
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.3, top=0.85, wspace=0.25)
        return _png(fig)


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
