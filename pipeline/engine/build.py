"""`rescue build`: plan the graph, then one loop over it: a step partitioned by session runs for every session
that is out of date through an executor, a corpus step runs once (for the sessions that are ready). One
build lock for the whole run, taken once by the writing command (this loop checks that it is held); the
driver alone records state.

A session that fails or waits holds back only what depends on it: the other sessions complete, and the
corpus steps run for every session that has rows (the report says who waits for what)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from pipeline.engine.context import StepContext, StepOutcome
from pipeline.engine.corpus_run import CorpusReport, CorpusRun
from pipeline.engine.plan import plan
from pipeline.engine.waiting import Waiting, waiting_sessions
from pipeline.errors import RescueError
from pipeline.executors.base import Executor
from pipeline.executors.local import LocalExecutor
from pipeline.lock import require_lock
from pipeline.project import Project
from pipeline.engine.runner import StageReport, run_session_step
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.store import StepRun


FOR_ANNOTATION = ("preannotate",)  # session steps that only annotation needs


class StageCallbacks(NamedTuple):
    """What a session step's run tells the caller as it goes (the CLI draws a progress bar from these)."""

    on_start: Callable[[int], None]  # how many sessions will run
    on_done: Callable[[StepRun], None]  # one session finished
    on_progress: Callable[[str, float, float, str], None]  # (session, done, total, unit) inside a session


QUIET = StageCallbacks(lambda n: None, lambda run: None, lambda sid, done, total, unit: None)


class BuildHooks(Protocol):
    """What a build tells its caller as it goes (the CLI draws progress and prints lines from these)."""

    def stage(self, name: str) -> AbstractContextManager[StageCallbacks]: ...

    def stage_done(self, report: StageReport) -> None: ...

    def corpus_step(self, outcome: StepOutcome) -> None: ...

    def corpus_begin(self, step: str) -> None: ...


class QuietHooks:
    def stage(self, name: str) -> AbstractContextManager[StageCallbacks]:
        return nullcontext(QUIET)

    def stage_done(self, report: StageReport) -> None:
        pass

    def corpus_step(self, outcome: StepOutcome) -> None:
        pass

    def corpus_begin(self, step: str) -> None:
        pass


@dataclass
class BuildReport:
    steps: list[str]  # the plan
    sessions: int  # how many sessions the session steps covered
    stages: list[StageReport] = field(default_factory=list)
    waiting: list[Waiting] = field(default_factory=list)
    corpus: CorpusReport | None = None  # when the corpus steps ran
    corpus_not_run: str = ""  # why the planned corpus steps did not run

    @property
    def failed_sessions(self) -> int:
        return sum(len(report.failed) for report in self.stages)


def run_build(project: Project, session_ids: Iterable[str] = (), only: Iterable[str] = (), *, jobs: int = 1,
              executor: Executor | None = None, annotate: bool = True, hooks: BuildHooks | None = None,
              overrides: SettingsOverrides = NO_OVERRIDES) -> BuildReport:
    """Run the planned steps that are out of date. Per-session steps go to `executor` (default: the local
    one with `jobs` processes); corpus steps run here, unless sessions were named or `annotate` is off.
    `overrides` (a command's flags) travel with every session job to whichever worker runs it."""
    context = StepContext.load(project, overrides)
    registry = context.registry.steps  # the product's steps, plus the extensions this project's catalog calls for
    steps = plan(only, registry)
    if not annotate:  # --no-annotation stops at the rows: the drafts are made for annotation, so they wait too
        steps = [name for name in steps if name not in FOR_ANNOTATION]
    session_ids = tuple(session_ids)
    hooks = hooks or QuietHooks()
    require_lock(project)  # taken once, by the writing command
    entries = context.select(session_ids)
    if not entries:
        raise RescueError("the catalog lists no sessions",
                          "run `rescue sample` for the built-in sample, or `rescue add-session` for your videos")
    report = BuildReport(steps=steps, sessions=len(entries))
    owned = executor is None
    executor = executor or LocalExecutor(jobs)
    corpus: CorpusRun | None = None
    try:
        for name in steps:  # graph order: every session step comes before the corpus steps
            step = registry[name]
            if step.partitioned_by == "session":
                with hooks.stage(name) as callbacks:
                    stage = run_session_step(context, step, entries, executor=executor, **callbacks._asdict())
                report.stages.append(stage)
                hooks.stage_done(stage)
                continue
            if corpus is None:  # the first corpus step: the session steps are through
                if owned:  # a pool's workers (or Ray's) are not needed by the corpus steps
                    executor.close()
                    owned = False
                report.waiting = _waiting(context, entries)
                report.corpus_not_run = "--no-annotation" if not annotate else \
                    "sessions were named" if session_ids else ""
                if report.corpus_not_run:
                    break
                corpus = CorpusRun(context, [n for n in steps if registry[n].scope == "corpus"],
                                   on_step=hooks.corpus_step, on_begin=hooks.corpus_begin)
                if corpus.ctx is None:  # nothing to annotate yet: the report says why
                    break
            corpus.run(name)
    finally:
        if owned:
            executor.close()
        if corpus is not None:
            corpus.close()
    if corpus is None and not report.corpus_not_run:
        report.waiting = _waiting(context, entries)
    report.corpus = corpus.report() if corpus is not None else None
    return report


def _waiting(context: StepContext, entries: list) -> list[Waiting]:  # type: ignore[type-arg]
    return waiting_sessions(context, entries, states=("failed", "blocked"))
