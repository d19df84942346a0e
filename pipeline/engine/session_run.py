"""One per-session step for one session, as a worker runs it: in a temp folder that replaces the old output
only on success, the outcome returned for the driver to record. Below both the runner (which plans and
records) and the executors (which run jobs), so neither imports the other back."""

from __future__ import annotations

import time
import traceback

from pipeline import __version__
from pipeline.errors import RescueError, os_error_message
from pipeline.progress import Reporter, reporting
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.engine.context import StepContext
from pipeline.executors.base import ProgressHook, SessionJob
from pipeline.settings import load_settings
from pipeline.engine.session_steps import STAGES, Stage
from pipeline.store import FileStamp, StepRun, atomic_dir, describe_outputs


def input_stamps(project: Project, stage: Stage, entry: CatalogEntry) -> tuple[FileStamp, ...]:
    """Size and mtime of source files, so a file replaced behind the catalog's back is noticed."""
    stamps = []
    for path in stage.input_files(project, entry):
        stat = path.stat() if path.exists() else None
        stamps.append(FileStamp(path=project.rel(path), size=stat.st_size if stat else -1,
                                mtime_ns=stat.st_mtime_ns if stat else -1))
    return tuple(stamps)


def execute_session(job: SessionJob, on_progress: ProgressHook | None = None) -> StepRun:
    """Run one step for one session in a temp folder that replaces the old output only on success; the
    outcome is returned, not recorded (an executor's worker runs this; the driver writes state).

    Top-level (picklable) so a process pool can run it; it reloads settings from the job's root itself and
    applies its `overrides` (the run's flags, carried as data).
    `on_progress` hears (session, done, total, unit) from inside the session (in this process only).
    """
    root, stage_name, entry, wanted = job.root, job.step, job.entry, job.fingerprint
    overrides = job.overrides
    reporter: Reporter | None = None if on_progress is None else (
        lambda done, total, unit: on_progress(entry.session_id, done, total, unit))
    started = time.perf_counter()
    project = Project(root)
    stage = STAGES[stage_name]
    ctx = StepContext(project, load_settings(root, overrides), (entry,), overrides)  # the worker's own context
    final = project.session_dir(stage.area, entry.session_id)
    common = dict(step=stage.name, session_id=entry.session_id, fingerprint=wanted, code_version=__version__)
    try:
        inputs = input_stamps(project, stage, entry)
        with atomic_dir(final) as workdir, reporting(reporter):
            record = stage.run(ctx, entry, workdir, final)
        run = StepRun(status="done", outputs=describe_outputs(root, final), inputs=inputs,
                       warnings=tuple(getattr(record, "warnings", ())), **common)
    except RescueError as exc:
        run = StepRun(status="failed", error=str(exc), **common)
    except OSError as exc:  # a read-only or full build area names the path and the fix; others are bugs
        known = os_error_message(exc, where=project.build)
        run = StepRun(status="failed", error=str(known) if known else f"internal error: {exc!r}",
                       traceback=traceback.format_exc(), **common)
    except Exception as exc:  # a bug, not bad input: keep the traceback for the report
        run = StepRun(status="failed", error=f"internal error: {exc!r}", traceback=traceback.format_exc(), **common)
    return run.model_copy(update={"elapsed_s": round(time.perf_counter() - started, 2)})
