"""`rescue build` after the per-session stages: every corpus step, in order, each skipped when up to date.

    server -> push -> sample-annotations -> pull -> adjudicate (+ sample-adjudications) -> agree -> gold -> freeze

agree runs after the adjudication round trip: its report's acceptance section compares the drafts with the
gold that the adjudicators' answers settle.

The Label Studio steps run only when something could have changed there: the rows or the push
settings changed, the agreement inputs changed, the server is external or already running, or the
embedded server's database files differ from when the last build stopped it. A step that fails
records its error in build/state/corpus/<step>.json and stops the build with one line and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from pipeline.agreement.inputs import latest_annotations, snapshot_files
from pipeline.annotate import server as ls_server
from pipeline.catalog import load_catalog
from pipeline.corpus.context import CorpusContext, StepOutcome
from pipeline.corpus.gold_steps import adjudicate_fingerprint, adjudicate_step, agree_step, gold_step
from pipeline.corpus.labelstudio_steps import ServerSession, database_stamp, open_server, quiet_server
from pipeline.corpus.release_step import freeze_step
from pipeline.corpus.server_steps import annotation_exports, apply_step, pull_step, push_fingerprint, push_step
from pipeline.corpus.state import StepState, last_done, read_state, write_state
from pipeline.errors import RescueError, os_error_message
from pipeline.project import Project
from pipeline.records import Record
from pipeline.runner import build_lock
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


def server_needed(ctx: CorpusContext) -> str | None:
    """Why Label Studio must be asked this time, or None when nothing there can have changed."""
    reason = quiet_server(ctx.project)
    if reason:
        return reason
    last = read_state(ctx.project, "server")
    if last is None or last.status != "done":
        return "no earlier build finished its Label Studio steps"
    if last.detail.get("stamp") != database_stamp(ls_server.ServerPaths.of(ctx.project)):
        return "Label Studio's database changed since the last build"
    if last_done(ctx.project, "push", push_fingerprint(ctx)) is None:
        return "rows or push settings changed"
    if not snapshot_files(ctx.project):
        return "no annotation snapshot yet"
    if last_done(ctx.project, "adjudicate", adjudicate_fingerprint(ctx, latest_annotations(ctx.project))) is None:
        return "annotations or agreement settings changed"
    return None


@contextmanager
def _step(ctx: CorpusContext, name: str) -> Iterator[None]:
    """Record a failing step's error and turn it into one RescueError naming the step."""
    ctx.begin(name)
    try:
        yield
    except RescueError as exc:
        write_state(ctx.project, StepState(step=name, status="failed", error=exc.message))
        raise RescueError(f"rescue build, step {name}: {exc.message}", exc.fix) from exc
    except Exception as exc:
        known = os_error_message(exc) if isinstance(exc, OSError) else None
        if known is not None:  # a read-only or full build area: the path and the fix
            write_state(ctx.project, StepState(step=name, status="failed", error=known.message))
            raise RescueError(f"rescue build, step {name}: {known.message}", known.fix) from exc
        # a bug: keep it on record, say how to see the traceback
        write_state(ctx.project, StepState(step=name, status="failed", error=f"internal error: {exc!r}"))
        raise RescueError(f"rescue build, step {name}: internal error {exc!r}",
                          "run `rescue --debug build` for the traceback and report it") from exc


def _label_studio_steps(ctx: CorpusContext, session: ServerSession) -> None:
    with _step(ctx, "push"):
        push_step(ctx, session)
    with _step(ctx, "sample-annotations"):
        exports = annotation_exports(session, ctx)
        if not exports:
            raise RescueError(f"Label Studio at {session.connection.url} has no RESCUE annotation project",
                              "check that the catalog's sessions have rows (`rescue status`) and add the annotators "
                              "(`rescue annotators add EMAIL...`), then build again")
        if apply_step(ctx, session, exports, "annotation"):
            exports = annotation_exports(session, ctx)
    with _step(ctx, "pull"):
        pull_step(ctx, session, exports)


def build_corpus(project: Project, *, on_step: Callable[[StepOutcome], None] = lambda outcome: None,
                 on_begin: Callable[[str], None] = lambda step: None) -> CorpusReport:
    """Run every corpus step that is out of date (the per-session stages must be done)."""
    if not any(path.is_file() and path.stat().st_size for path in
               (rows_path(project, item.entry.session_id) for item in load_catalog(project))):
        return CorpusReport(steps=(), not_run="no catalog session has transcript rows yet: nothing to annotate")
    with build_lock(project):
        ctx = CorpusContext.load(project, on_step=on_step, on_begin=on_begin)
        reason = server_needed(ctx)
        html: Path | None = None
        if reason is None:
            ctx.record("server", "not needed", "Label Studio's database is unchanged since the last build")
            for step in ("push", "sample-annotations", "pull"):
                ctx.record(step, "up to date", "nothing can have changed on the server")
            with _step(ctx, "adjudicate"):
                adjudicate_step(ctx, None)
            with _step(ctx, "agree"):  # after adjudicate: its acceptance section compares drafts with the gold
                html = agree_step(ctx)
        else:
            with _step(ctx, "server"):
                write_state(project, StepState(step="server", status="failed", error="Label Studio steps unfinished"))
                session = open_server(project, ctx.settings.annotate)
            try:
                ctx.record("server", "ran" if session.started_here else "up to date",
                           f"{session.how}; asked because {reason}")
                _label_studio_steps(ctx, session)
                with _step(ctx, "adjudicate"):
                    adjudicate_step(ctx, session)
                with _step(ctx, "agree"):
                    html = agree_step(ctx)
            finally:
                stopped = session.close()
            stamp = database_stamp(session.paths) if stopped else None
            ctx.done("server", "", stamp=stamp, url=session.connection.url, stopped=stopped)
        with _step(ctx, "gold"):
            written, pending = gold_step(ctx)
        with _step(ctx, "freeze"):
            release = freeze_step(ctx)
    return CorpusReport(steps=tuple(ctx.outcomes), agreement_report=project.rel_or_abs(html) if html else None,
                        release=project.rel_or_abs(release) if release else None, gold_sessions=written,
                        pending=pending)
