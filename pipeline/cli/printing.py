"""How `rescue build` and the single-step commands read on the console: a progress bar per session step,
one summary line per step, the corpus steps' lines, and who waits for what. The CLI only calls these."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text
from rich.status import Status
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.cli.console import line, styled
from pipeline.cli.corpus import print_corpus_report, print_outcome
from pipeline.engine.context import StepOutcome
from pipeline.engine.build import BuildReport, StageCallbacks, run_build
from pipeline.engine.waiting import Waiting, describe
from pipeline.executors.base import Executor
from pipeline.project import Project
from pipeline.engine.runner import StageReport
from pipeline.settings import NO_OVERRIDES, SettingsOverrides


class ConsoleHooks:
    def __init__(self, console: Console, err_console: Console) -> None:
        self.console, self.err_console = console, err_console
        self.status: Status | None = None
        self.warned: set[tuple[str, str]] = set()  # (session, warning) shown in this build: a later step repeats some

    def _progress(self) -> Progress:
        return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                        MofNCompleteColumn(), TextColumn("{task.fields[current]}", markup=False), TimeElapsedColumn(),
                        console=self.err_console, transient=False, disable=not self.err_console.is_terminal)

    @contextmanager
    def stage(self, name: str) -> Iterator[StageCallbacks]:
        with self._progress() as progress:
            task = progress.add_task(name, total=0, current="")
            yield StageCallbacks(lambda n: progress.update(task, total=n),
                                 lambda done: progress.update(task, advance=1, current=done.session_id),
                                 lambda sid, done, total, unit: progress.update(
                                     task, current=f"{sid}: {done:.0f}/{total:.0f} {unit}"))

    def stage_done(self, report: StageReport) -> None:
        print_stage(self.console, self.err_console, report, self.warned)

    def corpus_step(self, outcome: StepOutcome) -> None:
        print_outcome(self.console, outcome)

    def corpus_begin(self, step: str) -> None:
        if self.status is None:  # a spinner while corpus steps run (the session steps draw their own bars)
            self.status = self.err_console.status("corpus steps...")
            self.status.start()
        self.status.update(f"corpus step: {step}...")

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()


def print_stage(console: Console, err_console: Console, report: StageReport,
                warned: set[tuple[str, str]] | None = None) -> None:
    """The step's summary line, its failures, and the warnings of the sessions it ran (each once per build:
    `rows` repeats the warnings of transcribe and diarize in its own summary)."""
    took = f" ({report.elapsed_s:.1f} s)" if report.ran or report.failed else ""
    console.print(f"{report.stage}: {len(report.ran)} ran, {len(report.up_to_date)} up to date, "
                  f"{len(report.failed)} failed, {len(report.blocked)} waiting -> {report.manifest}{took}")
    for session_id, error in report.failed.items():
        err_console.print(line("  ", styled("failed", "red"), f" {session_id}: {error}"))
    warned = set() if warned is None else warned
    for session_id, warnings in report.warnings.items():
        for warning in warnings:
            if (session_id, warning) not in warned:
                warned.add((session_id, warning))
                err_console.print(line("  ", styled("warning", "yellow"), f" {session_id}: {warning}"))


def waiting_line(waiting: Waiting, printed: set[str]) -> Text:
    """The `waiting:` line of a session; a failure whose error was printed above (`printed`: those sessions) is
    not printed a second time."""
    if waiting.state == "failed" and waiting.session_id in printed:
        waiting = waiting.model_copy(update={"reason": "the error above"})
    return line(styled("waiting:", "yellow"), f" {describe(waiting)}")


def build_and_print(project: Project, console: Console, err_console: Console, *, session_ids: Iterable[str] = (),
                    only: Iterable[str] = (), jobs: int = 1, executor: Executor | None = None,
                    annotate: bool = True, overrides: SettingsOverrides = NO_OVERRIDES) -> BuildReport:
    """Run the build, printing as it goes; returns the report (the caller exits 1 when sessions failed)."""
    hooks = ConsoleHooks(console, err_console)
    try:
        report = run_build(project, session_ids, only, jobs=jobs, executor=executor, annotate=annotate, hooks=hooks,
                           overrides=overrides)
    finally:
        hooks.close()
    ran = sum(len(r.ran) for r in report.stages)
    if report.stages and not ran and not report.failed_sessions:
        console.print(f"Nothing to do: all {report.sessions} session(s) are up to date.")
    failed_here = {session_id for stage in report.stages for session_id in stage.failed}
    for waiting in report.waiting:
        err_console.print(waiting_line(waiting, failed_here))
    if report.corpus_not_run:
        console.print(f"corpus steps not run ({report.corpus_not_run}); `rescue build` runs them for the whole catalog")
    elif report.corpus is not None:
        print_corpus_report(console, report.corpus)  # type: ignore[arg-type]
    return report
