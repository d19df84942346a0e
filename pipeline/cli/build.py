"""`rescue build` (every stage, then the corpus steps) and `rescue ingest`."""

from __future__ import annotations

import sys

import click

from pipeline.cli.console import console, err_console
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.cli.session_stages import run_stages

jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                           help="Sessions processed in parallel (separate processes).")


@click.command()
@click.argument("session_ids", nargs=-1)
@jobs_option
@click.option("--no-annotation", is_flag=True,
              help="Stop after the transcript rows: no Label Studio, agreement, gold or release.")
@click.pass_context
@writer
def build(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, no_annotation: bool) -> None:
    """Run every stage that is out of date, like make: per session (all, or the given SESSION_IDS) ingest,
    transcribe, diarize, rows; then for the corpus push, pull, agree, adjudicate, gold, freeze."""
    from pipeline.stages import STAGES

    project = project_of(ctx)
    if run_stages(project, list(STAGES), session_ids, jobs, overrides_of(ctx)):
        err_console.print("corpus steps not run: fix the failed sessions first (`rescue status` shows why)")
        sys.exit(1)
    if no_annotation or session_ids:
        console.print("corpus steps not run (" + ("--no-annotation" if no_annotation else "sessions were named")
                      + "); `rescue build` runs them for the whole catalog")
        return
    from pipeline.cli.corpus import run_corpus  # corpus steps (pipeline/corpus): push ... freeze

    run_corpus(project, console, err_console)


@click.command()
@click.argument("session_ids", nargs=-1)
@jobs_option
@click.pass_context
@writer
def ingest(ctx: click.Context, session_ids: tuple[str, ...], jobs: int) -> None:
    """Validate, hash and probe source videos; extract 16 kHz mono WAV, keyframes and clips."""
    if run_stages(project_of(ctx), ["ingest"], session_ids, jobs, overrides_of(ctx)):
        sys.exit(1)
