"""The one adapter for matplotlib (imported lazily, Agg backend): release figures as PNG bytes.

Byte-stable: matplotlib's default style (not the user's matplotlibrc), a fixed size and dpi, and no
`Software` text chunk; Agg writes no time into a PNG. Same matplotlib version + same data = same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_DPI = 100


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def matplotlib_version() -> str:
    from importlib.metadata import version

    return version("matplotlib")


def _png(fig: Any) -> bytes:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def transition_png(labels: list[str], matrix: list[list[float]], counts: list[list[int]], title: str) -> bytes:
    """Heatmap of the row-normalised transition matrix (self-transitions excluded), counts in the cells."""
    plt = _pyplot()
    import matplotlib.style

    with matplotlib.style.context("default"):
        size = max(4.0, 0.75 * len(labels) + 2.5)
        fig, ax = plt.subplots(figsize=(size + 1.2, size))
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
    plt = _pyplot()
    import matplotlib.style

    with matplotlib.style.context("default"):
        fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.0), squeeze=False)
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


@contextmanager
def rendering(jobs: list[tuple[str, str, tuple]]) -> Iterator[Callable[[], dict[str, bytes]]]:
    """Render the jobs in a separate Python process while the caller writes other files (the freeze's critical
    path is its data files); the yielded call waits for the PNGs. The child runs this module alone (not the
    caller's script) with the same interpreter and package, so the bytes are those `render_jobs` makes here;
    where the child cannot start or fails, they are drawn in this process."""
    import os
    import pickle
    import subprocess
    import sys
    from pathlib import Path

    package_parent = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
    child: subprocess.Popen | None = None
    try:
        child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=env)
        assert child.stdin is not None
        child.stdin.write(pickle.dumps(jobs))
        child.stdin.close()
    except OSError:
        child = None

    def result() -> dict[str, bytes]:
        if child is not None:
            assert child.stdout is not None
            data = child.stdout.read()
            if child.wait() == 0:
                try:
                    return pickle.loads(data)
                except (pickle.UnpicklingError, EOFError):
                    pass
        return render_jobs(jobs)

    try:
        yield result
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()


if __name__ == "__main__":  # the child of `rendering`: jobs pickled on stdin, PNG bytes pickled on stdout
    import pickle
    import sys

    sys.stdout.buffer.write(pickle.dumps(render_jobs(pickle.loads(sys.stdin.buffer.read()))))
