"""The corpus steps of `rescue build` (`CorpusRun`): the build's loop (pipeline/engine/build.py) runs them in
turn, each step's function called with the build's one `StepContext`, each skipping itself when it is up to date.

    server -> push -> pull -> adjudicate -> agree -> gold -> freeze

(a demo project also gets sample-annotations after push and sample-adjudications after adjudicate, the
extension of pipeline/annotate/sample_steps.py).

The steps that read Label Studio need the `label-studio` resource, which the `server` step opens only when
one of the planned ones is out of date: the server's content may have changed (external or running server,
or the embedded server's database stamp differs from the one the last build recorded after stopping it), or
a step's own inputs changed (its declared `server_check`: push's rows and settings, no snapshot yet,
adjudicate's annotations and settings). The loop closes the server after the last planned step that reads
it. The server is a `Resource` (pipeline/step.py) its step package declares; the engine reaches it, like every
step, through the registry (pipeline/engine/steps.py). A step that fails records its error in
build/state/corpus/<step>.json and stops the build with one line and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from pipeline.engine.context import StepContext, StepOutcome
from pipeline.engine.steps import LABEL_STUDIO, RESOURCES
from pipeline.errors import RescueError, os_error_message
from pipeline.project import Project
from pipeline.records import Record
from pipeline.store import StepRun


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


def server_needed(ctx: StepContext, steps: Collection[str] | None = None) -> str | None:
    """Why the `label-studio` resource must be opened for the planned `steps`, or None when the server's
    database is unchanged and every planned step that reads it is up to date."""
    registry = ctx.registry.steps
    readers = [registry[name] for name in (ctx.registry.corpus if steps is None else steps)
               if LABEL_STUDIO in registry[name].needs]
    if not readers:
        return None
    changed = RESOURCES[LABEL_STUDIO].changed(ctx)
    if changed:
        return changed
    return next((why for step in readers if step.server_check and (why := step.server_check(ctx))), None)


def _record_failure(ctx: StepContext, state: StepRun) -> None:
    """The failed step's state, where the disk lets it be written: on a full disk the error itself matters more."""
    try:
        ctx.write_run(state)
    except OSError:
        pass


@contextmanager
def _step(ctx: StepContext, name: str) -> Iterator[None]:
    """Record a failing step's error and turn it into one RescueError naming the step."""
    ctx.begin(name)
    try:
        yield
    except RescueError as exc:
        _record_failure(ctx, StepRun(step=name, status="failed", error=exc.message))
        raise RescueError(f"rescue build, step {name}: {exc.message}", exc.fix) from exc
    except Exception as exc:
        known = os_error_message(exc, where=ctx.project.build) if isinstance(exc, OSError) else None
        if known is not None:  # a read-only or full build area: the path and the fix
            _record_failure(ctx, StepRun(step=name, status="failed", error=known.message))
            raise RescueError(f"rescue build, step {name}: {known.message}", known.fix) from exc
        # a bug: keep it on record, say how to see the traceback
        _record_failure(ctx, StepRun(step=name, status="failed", error=f"internal error: {exc!r}"))
        raise RescueError(f"rescue build, step {name}: internal error {exc!r}",
                          "run `rescue --debug build` for the traceback and report it") from exc


class CorpusRun:
    """The corpus steps of one build, run one at a time by the build's loop (`run`), each step's function
    called with the build's one `StepContext`; `close` stops a server a failed step left open. The caller
    holds the build lock. The steps run for the catalog sessions that have rows; a session still waiting for
    its rows is left out (and reported as pending), never a reason to stop the others."""

    def __init__(self, context: StepContext, planned: list[str], *,
                 on_step: Callable[[StepOutcome], None] = lambda outcome: None,
                 on_begin: Callable[[str], None] = lambda step: None) -> None:
        self.project, self.planned = context.project, planned
        self.ctx: StepContext | None = None
        self.not_run = ""
        if not context.any_rows():
            self.not_run = "no catalog session has transcript rows yet: nothing to annotate"
            return
        ctx = self.ctx = context.for_corpus()
        build = ctx.build
        build.writes, build.on_step, build.on_begin, build.planned = True, on_step, on_begin, frozenset(planned)
        build.server_reason = server_needed(ctx, planned) if "server" in planned else None

    def run(self, name: str) -> None:
        ctx = self.ctx
        assert ctx is not None, self.not_run
        with _step(ctx, name):
            ctx.registry.steps[name].run(ctx)
        later = self.planned[self.planned.index(name) + 1:]
        if ctx.build.server is not None and not any(LABEL_STUDIO in ctx.registry.steps[step].needs for step in later):
            RESOURCES[LABEL_STUDIO].close(ctx)  # the last step that reads the server is done: stop it, record its stamp

    def close(self) -> None:
        if self.ctx is not None:
            RESOURCES[LABEL_STUDIO].close(self.ctx, record=False)  # a step failed while the server was open

    def report(self) -> CorpusReport:
        ctx = self.ctx
        if ctx is None:
            return CorpusReport(steps=(), not_run=self.not_run)
        build = ctx.build
        return CorpusReport(steps=tuple(build.outcomes), agreement_report=_rel(self.project, build.agreement_report),
                            release=_rel(self.project, build.release), gold_sessions=build.gold_sessions,
                            pending=build.pending)


def _rel(project: Project, path: Path | None) -> str | None:
    return project.rel_or_abs(path) if path else None
