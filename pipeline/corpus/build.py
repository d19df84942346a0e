"""`rescue build` after the per-session stages: every corpus step, in order, each skipped when up to date.

    server -> push -> sample-annotations -> pull -> adjudicate (+ sample-adjudications) -> agree -> gold -> freeze

agree runs after the adjudication round trip: its report's acceptance section compares the drafts with the
gold that the adjudicators' answers settle.

The engine plans which of them run (pipeline/engine/plan.py). The steps that read Label Studio need the
`label-studio` resource, which is opened only when one of the planned ones is out of date: the server's
content may have changed (external or running server, or the embedded server's database stamp differs
from the one the last build recorded after stopping it: an input of every such step), or a step's own
inputs changed (`OUT_OF_DATE`: push's rows and settings, no snapshot yet, adjudicate's annotations and
settings). A step that fails
records its error in build/state/corpus/<step>.json and stops the build with one line and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from pipeline.agreement.inputs import snapshot_files
from pipeline.annotate import server as ls_server
from pipeline.annotate.drafted import drafts_origin
from pipeline.catalog import load_catalog
from pipeline.corpus.context import CorpusContext, StepOutcome
from pipeline.corpus.gold_steps import adjudicate_out_of_date, adjudicate_step, agree_step, gold_step
from pipeline.corpus.labelstudio_steps import ServerSession, database_stamp, open_server, quiet_server
from pipeline.corpus.release_step import freeze_step
from pipeline.corpus.server_steps import (annotation_exports, apply_step, pull_step, push_out_of_date, push_step,
                                          snapshot_damage)
from pipeline.corpus.state import StepState, read_state, write_state
from pipeline.errors import RescueError, os_error_message
from pipeline.project import Project
from pipeline.records import Record
from pipeline.runner import build_lock
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.transcripts import rows_path


class CorpusReport(Record):
    steps: tuple[StepOutcome, ...]
    agreement_report: str | None = None
    release: str | None = None
    gold_sessions: tuple[str, ...] = ()
    pending: dict[str, str] = Field(default_factory=dict)
    not_run: str = Field(default="", description="why no corpus step ran at all (nothing to annotate yet)")

    @property
    def did_work(self) -> bool:
        """Whether any output changed (starting the server to look for changes is not work)."""
        return any(step.status == "ran" and step.step != "server" for step in self.steps)


def server_changed(ctx: CorpusContext) -> str | None:
    """Why the server's content may differ from what the last build saw (an input of every step that reads
    the server: the embedded server's database stamp), or None."""
    reason = quiet_server(ctx.project)
    if reason:
        return reason
    last = read_state(ctx.project, "server")
    if last is None or last.status != "done":
        return "no earlier build finished its Label Studio steps"
    if last.detail.get("stamp") != database_stamp(ls_server.ServerPaths.of(ctx.project)):
        return "Label Studio's database changed since the last build"
    return None


# The planned steps that read the server, each with its own out-of-date check (its fingerprint, declared
# with the step): the `label-studio` resource is opened only when one of them is out of date.
OUT_OF_DATE: dict[str, Callable[[CorpusContext], str | None]] = {
    "push": push_out_of_date,
    "pull": lambda ctx: pull_out_of_date(ctx.project),
    "adjudicate": adjudicate_out_of_date,
}


def pull_out_of_date(project: Project) -> str | None:
    """Why pull must export again: no snapshot yet, or the newest one is damaged (snapshots are immutable,
    so only a new export heals it)."""
    files = snapshot_files(project)
    if not files:
        return "no annotation snapshot yet"
    damage = snapshot_damage(files[-1])
    return f"the newest annotation snapshot is damaged ({damage})" if damage else None


def server_needed(ctx: CorpusContext, steps: Collection[str] | None = None) -> str | None:
    """Why the `label-studio` resource must be opened for the planned `steps`, or None when the server's
    database is unchanged and every planned step that reads it is up to date."""
    from pipeline.engine.steps import CORPUS_STEPS, LABEL_STUDIO, STEPS

    readers = [name for name in (CORPUS_STEPS if steps is None else steps) if LABEL_STUDIO in STEPS[name].needs]
    if not readers:
        return None
    changed = server_changed(ctx)
    if changed:
        return changed
    return next((why for name in readers if name in OUT_OF_DATE and (why := OUT_OF_DATE[name](ctx))), None)


def _record_failure(ctx: CorpusContext, state: StepState) -> None:
    """The failed step's state, where the disk lets it be written: on a full disk the error itself matters more."""
    try:
        write_state(ctx.project, state)
    except OSError:
        pass


@contextmanager
def _step(ctx: CorpusContext, name: str) -> Iterator[None]:
    """Record a failing step's error and turn it into one RescueError naming the step."""
    ctx.begin(name)
    try:
        yield
    except RescueError as exc:
        _record_failure(ctx, StepState(step=name, status="failed", error=exc.message))
        raise RescueError(f"rescue build, step {name}: {exc.message}", exc.fix) from exc
    except Exception as exc:
        known = os_error_message(exc, where=ctx.project.build) if isinstance(exc, OSError) else None
        if known is not None:  # a read-only or full build area: the path and the fix
            _record_failure(ctx, StepState(step=name, status="failed", error=known.message))
            raise RescueError(f"rescue build, step {name}: {known.message}", known.fix) from exc
        # a bug: keep it on record, say how to see the traceback
        _record_failure(ctx, StepState(step=name, status="failed", error=f"internal error: {exc!r}"))
        raise RescueError(f"rescue build, step {name}: internal error {exc!r}",
                          "run `rescue --debug build` for the traceback and report it") from exc


def _label_studio_steps(ctx: CorpusContext, session: ServerSession, steps: set[str]) -> None:
    if "push" in steps:
        with _step(ctx, "push"):
            push_step(ctx, session)
    if "sample-annotations" not in steps:
        return
    with _step(ctx, "sample-annotations"):
        exports = annotation_exports(session, ctx)
        if not exports:
            raise RescueError(f"Label Studio at {session.connection.url} has no RESCUE annotation project",
                              "check that the catalog's sessions have rows (`rescue status`) and add the annotators "
                              "(`rescue annotators add EMAIL...`), then build again")
        if apply_step(ctx, session, exports, "annotation"):
            exports = annotation_exports(session, ctx)
    if "pull" in steps:
        with _step(ctx, "pull"):
            pull_step(ctx, session, exports)


def build_corpus(project: Project, *, steps: Collection[str] | None = None,
                 on_step: Callable[[StepOutcome], None] = lambda outcome: None,
                 on_begin: Callable[[str], None] = lambda step: None,
                 overrides: SettingsOverrides = NO_OVERRIDES) -> CorpusReport:
    """Run the corpus `steps` (the engine's plan: the named ones and what they need) that are out of date,
    for the catalog sessions that have rows; a session still waiting for its rows is left out (and reported
    as pending), never a reason to stop the others."""
    from pipeline.engine.steps import CORPUS_STEPS

    steps = set(CORPUS_STEPS if steps is None else steps)
    if not any(path.is_file() and path.stat().st_size for path in
               (rows_path(project, item.entry.session_id) for item in load_catalog(project))):
        return CorpusReport(steps=(), not_run="no catalog session has transcript rows yet: nothing to annotate")
    with build_lock(project):
        ctx = CorpusContext.load(project, overrides, on_step=on_step, on_begin=on_begin)
        reason = server_needed(ctx, steps)
        html: Path | None = None
        if reason is None or "server" not in steps:
            if "server" in steps:
                ctx.record("server", "not needed", "Label Studio's database is unchanged since the last build")
            for step in ("push", "sample-annotations", "pull"):
                if step in steps:
                    ctx.record(step, "up to date", "nothing can have changed on the server",
                               [drafts_origin(project.build, tuple(ctx.rows))] if step == "push" else [])
            if "adjudicate" in steps:
                with _step(ctx, "adjudicate"):
                    adjudicate_step(ctx, None)
            if "agree" in steps:
                with _step(ctx, "agree"):  # after adjudicate: its acceptance section compares drafts with the gold
                    html = agree_step(ctx)
        else:
            with _step(ctx, "server"):
                write_state(project, StepState(step="server", status="failed", error="Label Studio steps unfinished"))
                session = open_server(project, ctx.settings.annotate)
            try:
                ctx.record("server", "ran" if session.started_here else "up to date",
                           f"{session.how}; asked because {reason}")
                _label_studio_steps(ctx, session, steps)
                if "adjudicate" in steps:
                    with _step(ctx, "adjudicate"):
                        adjudicate_step(ctx, session, apply_stored="sample-adjudications" in steps)
                if "agree" in steps:
                    with _step(ctx, "agree"):  # after adjudicate: its acceptance section compares drafts with the gold
                        html = agree_step(ctx)
            finally:
                stopped = session.close()
            stamp = database_stamp(session.paths) if stopped else None
            ctx.done("server", "", stamp=stamp, url=session.connection.url, stopped=stopped)
        written: tuple[str, ...] = ()
        pending: dict[str, str] = {}
        release: Path | None = None
        if "gold" in steps:
            with _step(ctx, "gold"):
                written, pending = gold_step(ctx)
        if "freeze" in steps:
            with _step(ctx, "freeze"):
                release = freeze_step(ctx)
    return CorpusReport(steps=tuple(ctx.outcomes), agreement_report=project.rel_or_abs(html) if html else None,
                        release=project.rel_or_abs(release) if release else None, gold_sessions=written,
                        pending=pending)
