"""Per-session stages run from a command: a progress bar per stage and one summary line each."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.cli.console import console, err_console, line, styled
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.settings import NO_OVERRIDES, SettingsOverrides


def stage_progress() -> Progress:
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[current]}", markup=False), TimeElapsedColumn(), console=err_console,
                    transient=False, disable=not err_console.is_terminal)


def run_stages(project: Project, stage_names: list[str], session_ids: tuple[str, ...], jobs: int,
               overrides: SettingsOverrides = NO_OVERRIDES) -> int:
    """Run stages in order; print a summary line per stage. Returns the number of failed sessions.
    `overrides` (the command's flags) travel with every session's job to whichever worker runs it."""
    from pipeline.runner import Context, run_stage
    from pipeline.stages import STAGES

    context = Context.load(project, overrides)
    entries = context.select(session_ids)
    if not entries:
        raise RescueError("the catalog lists no sessions",
                          "run `rescue sample` for the built-in sample, or `rescue add-session` for your videos")
    failed = ran = 0
    for name in stage_names:
        stage = STAGES[name]
        with stage_progress() as progress:
            task = progress.add_task(name, total=0, current="")
            report = run_stage(
                context, stage, entries, jobs=jobs,
                on_start=lambda n: progress.update(task, total=n),
                on_done=lambda run: progress.update(task, advance=1, current=run.session_id),
                on_progress=lambda sid, done, total, unit: progress.update(
                    task, current=f"{sid}: {done:.0f}/{total:.0f} {unit}"),
            )
        ran += len(report.ran)
        failed += len(report.failed)
        took = f" ({report.elapsed_s:.1f} s)" if report.ran or report.failed else ""
        console.print(f"{name}: {len(report.ran)} ran, {len(report.up_to_date)} up to date, "
                      f"{len(report.failed)} failed, {len(report.blocked)} waiting -> {report.manifest}{took}")
        for session_id, error in report.failed.items():
            err_console.print(line("  ", styled("failed", "red"), f" {session_id}: {error}"))
    if not ran and not failed:
        console.print(f"Nothing to do: all {len(entries)} session(s) are up to date.")
    return failed
