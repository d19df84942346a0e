"""Expensive session fixtures made once per test run, also when pytest-xdist runs the suite on several workers.

Each xdist worker is its own process with its own session fixtures, so a plain session fixture is paid once per
worker. `once_per_run` is the pattern xdist documents: the first worker to ask makes the thing in the folder that
all workers of the run share (`tmp_path_factory.getbasetemp().parent`) while it holds a file lock; the others wait
for the lock and find it made. Without xdist (`-n 0`, `-p no:xdist`) it is made in the run's own temporary folder.
A maker that fails leaves a `.failed` note, so the other workers fail at once with its error instead of paying
for the same failure again.
"""

from __future__ import annotations

import os
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE = ".done"
FAILED = ".failed"


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of this test run that every worker sees (the session's own one without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `<run folder>/<name>`, filled by `make(folder)` by the first worker that asks; read-only after."""
    return once_in(run_folder(tmp_path_factory), name, make)


def once_in(shared: Path, name: str, make: Callable[[Path], None]) -> Path:
    """`shared/<name>`, made by `make` unless another process made it (or is making it: then wait for it).

    `make` works in the folder where it stays (paths inside what it makes may be absolute); the folder counts as
    made only once `make` returned (a `.<name>.done` note beside it, so copies of the folder do not carry it), and
    a failed attempt's folder is removed."""
    folder = shared / name
    done, failed = shared / f".{name}{DONE}", shared / f".{name}{FAILED}"
    with FileLock(str(shared / f".{name}.lock")):
        if done.exists():
            return folder
        if failed.exists():
            pytest.fail(f"{name}: making it failed in another worker of this run:\n{failed.read_text()}")
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            make(folder)
        except BaseException:
            failed.write_text(traceback.format_exc(), encoding="utf-8")
            shutil.rmtree(folder, ignore_errors=True)
            raise
        done.touch()
    return folder
