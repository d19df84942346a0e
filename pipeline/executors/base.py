"""The contract between the engine and an executor."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pipeline.records import CatalogEntry
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.store import StepRun

# (session id, done, total, unit) heard from inside a session's run; executors that cannot relay it stay silent
ProgressHook = Callable[[str, float, float, str], None]


@dataclass(frozen=True)
class SessionJob:
    """One step for one session: everything a worker needs, picklable (it reloads settings from `root` and
    applies `overrides`, the run's flags as data: a worker's environment is not the driver's)."""

    root: Path
    step: str
    entry: CatalogEntry
    fingerprint: str
    overrides: SettingsOverrides = NO_OVERRIDES

    @property
    def session_id(self) -> str:
        return self.entry.session_id


class Executor(Protocol):
    name: str

    def run(self, jobs: Sequence[SessionJob], *, on_done: Callable[[StepRun], None],
            on_progress: ProgressHook) -> list[StepRun]:
        """Run every job (outputs land in the build folder atomically); return one StepRun per job, sorted
        by session id. A job's own failure is a `failed` StepRun, never an exception."""
        ...

    def close(self) -> None:
        ...
