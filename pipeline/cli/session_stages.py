"""Per-session steps run from a single-step command (`rescue ingest`, `transcribe`, ...): `rescue build --only
STEP...` for the named sessions, printed as the build prints them."""

from __future__ import annotations

from pipeline.cli.console import console, err_console
from pipeline.executors.base import Executor
from pipeline.project import Project
from pipeline.settings import NO_OVERRIDES, SettingsOverrides


def run_stages(project: Project, stage_names: list[str], session_ids: tuple[str, ...], jobs: int,
               overrides: SettingsOverrides = NO_OVERRIDES, executor: Executor | None = None) -> int:
    """Run the named steps (and what they need that is not up to date); returns the number of failed sessions.
    `overrides` (the command's flags) travel with every session's job to whichever worker runs it; `executor`:
    where the jobs run (default: this machine, `jobs` processes)."""
    from pipeline.cli.printing import build_and_print

    return build_and_print(project, console, err_console, session_ids=session_ids, only=stage_names, jobs=jobs,
                           overrides=overrides, executor=executor).failed_sessions
