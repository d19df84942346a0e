"""The `rescue` command: parses arguments, shows progress, prints one-line errors. No logic lives here."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipeline import __version__
from pipeline.cli_executor import with_executor
from pipeline.cli_lock import writer
from pipeline.errors import RescueError, os_error_message
from pipeline.project import Project

from pipeline.console import console, err_console, line, styled  # noqa: F401  (console: speech commands use it)


class RescueGroup(click.Group):
    """Turns RescueError into `error: ... / fix: ...` and exit code 1; `--debug` shows the traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (RescueError, OSError) as exc:
            # An OSError that names its file (a read-only or full build area) is the user's to fix, too.
            error = exc if isinstance(exc, RescueError) else os_error_message(exc)
            if error is None or (ctx.obj or {}).get("debug"):
                raise
            err_console.print(line(styled("error:", "bold red"), " ", error.message))
            if error.fix:
                err_console.print(line("  ", styled("fix:", "bold"), " ", error.fix))
            sys.exit(1)


def _project(ctx: click.Context) -> Project:
    return Project.at(ctx.obj["root"])


@click.group(cls=RescueGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Project root holding raw_video/ and build/ (default: $RESCUE_ROOT or the current folder).")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.version_option(__version__, prog_name="rescue")
@click.pass_context
def main(ctx: click.Context, root: Path | None, debug: bool) -> None:
    """Build the RESCUE benchmark from interview video: ingest, transcribe, annotate, agree, freeze."""
    ctx.obj = {"root": root, "debug": debug}


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[current]}", markup=False), TimeElapsedColumn(), console=err_console,
                    transient=False, disable=not err_console.is_terminal)


def _run_stages(project: Project, stage_names: list[str], session_ids: tuple[str, ...], jobs: int,
                executor: Any = None) -> int:
    """Run stages in order (on `executor`, default the local one with `jobs` processes); print a summary line
    per stage. Returns the number of failed sessions."""
    from pipeline.runner import Context, run_stage
    from pipeline.stages import STAGES

    context = Context.load(project)
    entries = context.select(session_ids)
    if not entries:
        raise RescueError("the catalog lists no sessions",
                          "run `rescue sample` for the built-in sample, or `rescue add-session` for your videos")
    failed = ran = 0
    for name in stage_names:
        stage = STAGES[name]
        with _progress() as progress:
            task = progress.add_task(name, total=0, current="")
            report = run_stage(
                context, stage, entries, jobs=jobs, executor=executor,
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


_jobs = click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Sessions processed in parallel (separate processes).")


@main.command()
@click.argument("session_ids", nargs=-1)
@_jobs
@click.option("--no-annotation", is_flag=True,
              help="Stop after the transcript rows: no Label Studio, agreement, gold or release.")
@click.pass_context
@with_executor
@writer
def build(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, no_annotation: bool, executor: Any) -> None:
    """Run every stage that is out of date, like make: per session (all, or the given SESSION_IDS) ingest,
    transcribe, diarize, rows; then for the corpus push, pull, agree, adjudicate, gold, freeze."""
    from pipeline.stages import STAGES

    project = _project(ctx)
    if _run_stages(project, list(STAGES), session_ids, jobs, executor):
        err_console.print("corpus steps not run: fix the failed sessions first (`rescue status` shows why)")
        sys.exit(1)
    if no_annotation or session_ids:
        console.print("corpus steps not run (" + ("--no-annotation" if no_annotation else "sessions were named")
                      + "); `rescue build` runs them for the whole catalog")
        return
    from pipeline.corpus.commands import run_corpus  # corpus steps (pipeline/corpus): push ... freeze

    run_corpus(project, console, err_console)


@main.command()
@click.argument("session_ids", nargs=-1)
@_jobs
@click.pass_context
@with_executor
@writer
def ingest(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, executor: Any) -> None:
    """Validate, hash and probe source videos; extract 16 kHz mono WAV, keyframes and clips."""
    if _run_stages(_project(ctx), ["ingest"], session_ids, jobs, executor):
        sys.exit(1)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show, per session and stage, what is done, stale, failed, pending or waiting."""
    from pipeline.runner import Context, orphans, session_status
    from pipeline.stages import STAGES

    context = Context.load(_project(ctx))
    rows = [session_status(context, stage, entry) for entry in context.catalog for stage in STAGES.values()]
    kept = {name: orphans(context, stage) for name, stage in STAGES.items()}
    from pipeline.corpus.state import corpus_status  # corpus steps of `rescue build` (pipeline/corpus)

    corpus = corpus_status(context.project)
    from pipeline.annotate.server import ServerPaths
    from pipeline.annotate.server_owner import server_report
    from pipeline.catalog import shared_videos

    labelstudio = server_report(ServerPaths.of(context.project))
    reused = shared_videos(context.catalog)
    if as_json:
        click.echo(json.dumps({"sessions": [row.model_dump() for row in rows],
                               "not_in_catalog": kept, "corpus": corpus, "labelstudio": labelstudio,
                               "shared_videos": reused}, indent=2))
        return
    table = Table(title=f"{len(context.catalog)} session(s) in the catalog")
    table.add_column("session")
    for name in STAGES:
        table.add_column(name)
    colours = {"done": "green", "stale": "yellow", "failed": "red", "pending": "cyan", "blocked": "dim"}
    for entry in context.catalog:
        cells = [r for r in rows if r.session_id == entry.session_id]
        table.add_row(entry.session_id, *(styled(c.state, colours[c.state]) for c in cells))
    console.print(table)
    for stage in STAGES.values():
        console.print(line("  ", styled(stage.name, "bold"), f": {stage.summary}"))
    for row in rows:
        if row.state in {"failed", "stale"} and row.reason:
            console.print(f"  {row.session_id} {row.stage}: {row.reason}", highlight=False)
    for name, sessions in kept.items():
        if sessions:
            console.print(f"  {name}: outputs kept for sessions no longer in the catalog: {', '.join(sessions)}")
    if corpus:
        steps = [part for c in corpus for part in
                 (", " if c is not corpus[0] else "", f"{c['step']} ",
                  styled(c["status"], "green" if c["status"] == "done" else "red"))]
        console.print(line("corpus steps, last run: ", *steps))
        for c in corpus:
            if c["error"]:
                console.print(f"  {c['step']}: {c['error']}", highlight=False)
    if labelstudio:
        colour = "yellow" if labelstudio["orphaned"] else "green"
        console.print(styled(labelstudio["message"], colour))
    for warning in reused:
        console.print(line(styled("warning:", "yellow"), f" {warning}"))


@main.command()
@click.option("--force", is_flag=True, help="Regenerate even if the sample files are present and intact.")
@click.pass_context
def sample(ctx: click.Context, force: bool) -> None:
    """Make the built-in synthetic sample sessions (couple + family) in raw_video/sample/."""
    from pipeline.sample_sessions import install_samples

    project = _project(ctx)
    with console.status("synthesising sample sessions (espeak-ng, OpenCV, ffmpeg)..."):
        entries, made = install_samples(project, force=force)
    verb = "made" if made else "already present (use --force to remake)"
    console.print(f"sample sessions {verb}:", highlight=False)
    for entry in entries:
        console.print(f"  {entry.session_id}  {entry.video}  ({entry.scenario}: {', '.join(entry.participants)})",
                      highlight=False)


@main.command("add-session")
@click.argument("video", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--id", "session_id", required=True, help="Session id, e.g. alan_and_evelyn/001_s01e01_ct25_segment04.")
@click.option("--scenario", required=True, type=click.Choice(["couple", "family"]))
@click.option("--participant", "-p", "participants", multiple=True, required=True,
              help="An on-screen client's name (repeat for each; the therapist is implicit).")
@click.option("--subtitles", type=click.Path(dir_okay=False, path_type=Path), help="SRT/VTT file inside raw_video/.")
@click.option("--clip", nargs=2, type=str, default=None, metavar="START END",
              help="Cut the session from the video: seconds or HH:MM:SS[.mmm].")
@click.option("--source", default="", help="Free-text provenance (show, episode, licence).")
@click.option("--catalog", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Catalog file to append to (default raw_video/sessions.csv).")
@click.pass_context
def add_session(ctx: click.Context, video: Path, session_id: str, scenario: str, participants: tuple[str, ...],
                subtitles: Path | None, clip: tuple[str, str] | None, source: str, catalog: Path | None) -> None:
    """Validate a video inside raw_video/, hash it and add it to the catalog.

    A relative VIDEO, --subtitles or --catalog path is read from the project root (--root), else from the
    current folder."""
    from pipeline.catalog import parse_time
    from pipeline.media.register import register_session
    from pipeline.settings import load_settings

    project = _project(ctx)
    try:
        span = (parse_time(clip[0]), parse_time(clip[1])) if clip else None
    except ValueError as exc:
        raise RescueError(f"--clip {' '.join(clip or ())}: not seconds or HH:MM:SS", "e.g. --clip 12.5 150") from exc
    entry = register_session(
        project, video=video, session_id=session_id, scenario=scenario, participants=list(participants),
        settings=load_settings(project.root).ingest, subtitles=subtitles, clip=span, source=source,
        catalog=catalog,
    )
    console.print(f"added {entry.session_id} ({entry.video}, sha256 {entry.sha256[:12]}…); "
                  "run `rescue build` to process it", highlight=False)
    from pipeline.catalog import load_catalog, shared_videos

    for warning in shared_videos((item.entry for item in load_catalog(project)), entry.session_id):
        err_console.print(line(styled("warning:", "yellow"), f" {warning}"))


from pipeline.tasks.commands import compare_released, evaluate, freeze, verify  # noqa: E402  (task family)

main.add_command(freeze)
main.add_command(verify)
main.add_command(evaluate)
main.add_command(compare_released)

from pipeline.annotate.commands import annotators_group, labelstudio_group, pull, push  # noqa: E402  (annotation)

main.add_command(labelstudio_group)
main.add_command(annotators_group)
main.add_command(push)
main.add_command(pull)

from pipeline.agreement.commands import adjudicate, agree, gold  # noqa: E402  (agreement)

main.add_command(agree)
main.add_command(adjudicate)
main.add_command(gold)

from pipeline.speech.commands import diarize, rows, score_transcript, speakers, transcribe  # noqa: E402  (speech)

main.add_command(transcribe)
main.add_command(diarize)
main.add_command(rows)
main.add_command(speakers)
main.add_command(score_transcript)
