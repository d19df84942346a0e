"""Make-like execution of per-session stages: fingerprint, skip what is up to date, run the rest
atomically (optionally in a process pool), record each outcome, and rebuild the stage's manifest. The build's
one context (`pipeline.engine.context.StepContext`) says what the project, its settings and catalog are."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from pipeline import layout
from pipeline.engine.context import StepContext
from pipeline.engine.session_run import execute_session, input_stamps
from pipeline.engine.session_steps import STAGES, Stage
from pipeline.executors.base import Executor, SessionJob
from pipeline.executors.local import LocalExecutor
from pipeline.lock import build_lock
from pipeline.progress import Reporter
from pipeline.project import Project
from pipeline.records import CatalogEntry, Record
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.step import Inputs, State
from pipeline.store import (
    StepRun,
    outputs_intact,
    sha256_json,
    sweep_leftovers,
    write_record_atomic,
    write_text_atomic,
)


class SessionStatus(Record):
    stage: str
    session_id: str
    state: State
    reason: str = ""
    elapsed_s: float | None = Field(default=None, description="seconds its last run took (None: never ran)")


@dataclass
class StageReport:
    stage: str
    ran: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)
    manifest: str = ""
    elapsed_s: float = 0.0  # wall-clock seconds of this stage in this run, all sessions together
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per session that ran: its record's warnings




def state_path(project: Project, stage: Stage, session_id: str) -> Path:
    return layout.state_file(project, stage.name, session_id)


def read_run(project: Project, stage: Stage, session_id: str) -> StepRun | None:
    path = state_path(project, stage, session_id)
    if not path.exists():
        return None
    try:
        return StepRun.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # unreadable state = never ran; the stage simply runs again


def step_inputs(ctx: StepContext, stage: Stage, entry: CatalogEntry) -> Inputs | None:
    """Everything the stage's output depends on for this session; None while an upstream stage is not done."""
    upstream = {}
    for name in stage.after:
        run = read_run(ctx.project, STAGES[name], entry.session_id)
        if run is None or run.status != "done":
            return None
        # the upstream outputs' content (not their mtimes: a copied or migrated build stays up to date)
        upstream[name] = sha256_json([o.model_dump(exclude={"mtime_ns"}) for o in run.outputs])
    parts = {"settings": stage.settings_of(ctx.settings).model_dump(mode="json"),
             "entry": entry.model_dump(mode="json"), "upstream": upstream}
    return Inputs(stage.name, stage.version, parts, stage.settings, partitioned=True)


def fingerprint(ctx: StepContext, stage: Stage, entry: CatalogEntry) -> str | None:
    """The one fingerprint rule (`pipeline.step.Inputs`) over the session's inputs; None while blocked."""
    inputs = step_inputs(ctx, stage, entry)
    return inputs.fingerprint() if inputs is not None else None


def waiting_for(project: Project, stage: Stage, session_id: str) -> str:
    """Which upstream steps hold this one back for the session, and why: 'rows (failed)'."""
    parts = []
    for name in stage.after:
        run = read_run(project, STAGES[name], session_id)
        if run is None:
            parts.append(f"{name} (not run yet)")
        elif run.status != "done":
            parts.append(f"{name} (failed)")
    return ", ".join(parts) or ", ".join(stage.after)


def session_status(ctx: StepContext, stage: Stage, entry: CatalogEntry) -> SessionStatus:
    run = read_run(ctx.project, stage, entry.session_id)

    def status(state: State, reason: str = "") -> SessionStatus:
        return SessionStatus(stage=stage.name, session_id=entry.session_id, state=state, reason=reason,
                             elapsed_s=run.elapsed_s if run is not None else None)

    inputs = step_inputs(ctx, stage, entry)
    if inputs is None:
        return status("blocked", f"waiting for {waiting_for(ctx.project, stage, entry.session_id)}")
    if run is None:
        return status("pending")
    if run.fingerprint != inputs.fingerprint():
        return status("stale", inputs.changed_since(run))
    if run.status == "failed":
        return status("failed", run.error)
    if run.inputs != input_stamps(ctx.project, stage, entry):
        return status("stale", "a source file changed on disk")
    if not outputs_intact(ctx.project.root, run.outputs):
        return status("stale", "outputs missing or changed")
    return status("done")


def run_session(root: Path, stage_name: str, entry: CatalogEntry, wanted: str,
                on_progress: Reporter | None = None, overrides: SettingsOverrides = NO_OVERRIDES) -> StepRun:
    """Run one stage for one session and record its outcome (the driver's job; see `execute_session`)."""
    job = SessionJob(root, stage_name, entry, wanted, overrides)
    hook = None if on_progress is None else (lambda session, done, total, unit: on_progress(done, total, unit))
    run = execute_session(job, hook)
    write_record_atomic(state_path(Project(root), STAGES[stage_name], entry.session_id), run)
    return run


def write_manifest(ctx: StepContext, stage: Stage) -> Path:
    """build/manifests/<stage>.jsonl: the records of every catalog session whose stage is done."""
    lines = []
    for entry in ctx.catalog:
        record = ctx.project.session_dir(stage.area, entry.session_id) / stage.record_name
        if session_status(ctx, stage, entry).state == "done" and record.exists():
            lines.append(stage.record_type.model_validate_json(record.read_text(encoding="utf-8")).model_dump_json())
    path = layout.manifest_file(ctx.project, stage.name)
    text = "".join(line + "\n" for line in lines)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        write_text_atomic(path, text)
    return path


def run_stage(ctx: StepContext, stage: Stage, entries: list[CatalogEntry], *, jobs: int = 1,
              executor: Executor | None = None,
              on_start: Callable[[int], None] = lambda n: None,
              on_done: Callable[[StepRun], None] = lambda run: None,
              on_progress: Callable[[str, float, float, str], None] = lambda session, done, total, unit: None
              ) -> StageReport:
    """`run_session_step` for a caller that does not hold the build lock yet (a library call, a test)."""
    with build_lock(ctx.project):
        return run_session_step(ctx, stage, entries, jobs=jobs, executor=executor, on_start=on_start,
                                on_done=on_done, on_progress=on_progress)


def run_session_step(ctx: StepContext, stage: Stage, entries: list[CatalogEntry], *, jobs: int = 1,
                     executor: Executor | None = None,
                     on_start: Callable[[int], None] = lambda n: None,
                     on_done: Callable[[StepRun], None] = lambda run: None,
                     on_progress: Callable[[str, float, float, str], None] = lambda session, done, total, unit: None
                     ) -> StageReport:
    """Run `stage` for each entry that is not up to date; failures are recorded, not raised. The caller holds
    the build lock (`rescue build` takes it once). `on_progress` hears (session, done, total, unit) from inside
    each session's run when sessions run one at a time; with a process pool (`jobs` > 1) only whole sessions
    are reported (`on_done`)."""
    started = time.perf_counter()  # debris of killed runs: swept once, by the build lock (pipeline/lock.py)
    report = StageReport(stage.name)
    todo: list[tuple[CatalogEntry, str]] = []
    digests: dict[str, dict[str, str]] = {}
    for entry in entries:
        status = session_status(ctx, stage, entry)
        if status.state == "done":
            report.up_to_date.append(entry.session_id)
            _record_output_times(ctx.project, stage, entry.session_id)
        elif status.state == "blocked":
            report.blocked.append(entry.session_id)
        else:
            inputs = step_inputs(ctx, stage, entry)
            todo.append((entry, inputs.fingerprint() if inputs else ""))
            digests[entry.session_id] = inputs.digests() if inputs else {}
    on_start(len(todo))
    jobs_todo = [SessionJob(ctx.project.root, stage.name, entry, wanted, ctx.overrides) for entry, wanted in todo]

    def finished(run: StepRun) -> None:  # the driver alone records outcomes, with a digest per named input
        run = run.model_copy(update={"input_digests": digests.get(run.session_id, {})})
        write_record_atomic(state_path(ctx.project, stage, run.session_id), run)
        on_done(run)

    owned = executor is None
    executor = executor or LocalExecutor(jobs)
    try:
        runs = executor.run(jobs_todo, on_done=finished, on_progress=on_progress)
    finally:
        if owned:
            executor.close()
    # A worker killed mid-job (then retried, e.g. on Ray) left a temp folder; no attempt runs now, we hold the lock.
    sweep_leftovers(ctx.project.build / stage.area)
    for run in runs:
        if run.status == "done":
            report.ran.append(run.session_id)
            if run.warnings:
                report.warnings[run.session_id] = run.warnings
        else:
            report.failed[run.session_id] = run.error
    report.manifest = ctx.project.rel(write_manifest(ctx, stage))
    report.elapsed_s = round(time.perf_counter() - started, 2)
    return report


def _record_output_times(project: Project, stage: Stage, session_id: str) -> None:
    """A record of an earlier build holds no output mtimes, so every check re-hashes its outputs; once they
    were found intact (by hash), record their mtimes so later checks need only a stat."""
    run = read_run(project, stage, session_id)
    if run is None or all(output.mtime_ns >= 0 for output in run.outputs):
        return
    outputs = tuple(output.model_copy(update={"mtime_ns": (project.root / output.path).stat().st_mtime_ns})
                    for output in run.outputs)
    write_record_atomic(state_path(project, stage, session_id), run.model_copy(update={"outputs": outputs}))


def orphans(ctx: StepContext, stage: Stage) -> list[str]:
    """Sessions with stored state that the catalog no longer lists (their outputs are kept)."""
    base = layout.state_dir(ctx.project, stage.name)
    if not base.exists():
        return []
    listed = {entry.session_id for entry in ctx.catalog}
    found = (p.relative_to(base).as_posix().removesuffix(".json") for p in base.rglob("*.json"))
    return sorted(sid for sid in found if sid not in listed)

