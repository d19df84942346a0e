"""`rescue build` (the step graph: session steps, then the corpus steps), `rescue graph` and `rescue ingest`."""

from __future__ import annotations

import sys

import click

from pipeline.cli.aliases import run_stages
from pipeline.cli.console import console, err_console
from pipeline.cli.executor import with_executor
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.executors.base import Executor
from pipeline.settings import SettingsOverrides

jobs_option = click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                           help="Sessions processed in parallel (separate processes).")


@click.command()
@click.argument("session_ids", nargs=-1)
@jobs_option
@click.option("--only", "only", multiple=True, metavar="STEP",
              help="Run only this step (repeat) and what it needs that is not up to date; `rescue graph` lists them.")
@click.option("--no-annotation", is_flag=True,
              help="Stop after the transcript rows: no Label Studio, agreement, gold or release.")
@click.option("--allow-shrink", is_flag=True,
              help="Let the freeze step replace the release with one holding fewer sessions or instances "
                   "(refused otherwise, saying what would be lost); allow_shrink of [tool.rescue.build] for one run.")
@click.pass_context
@with_executor
@writer
def build(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, only: tuple[str, ...],
          no_annotation: bool, allow_shrink: bool, executor: Executor) -> None:
    """Run every step that is out of date, like make: per session (all, or the given SESSION_IDS) ingest,
    transcribe, diarize, rows; then for the corpus push, pull, agree, adjudicate, gold, freeze. A session that
    fails holds back only what depends on it: the corpus steps run for the sessions that are ready."""
    from pipeline.cli.printing import build_and_print

    shrink = SettingsOverrides.of("build", {"allow_shrink": allow_shrink or None})
    report = build_and_print(project_of(ctx), console, err_console, session_ids=session_ids, only=only, jobs=jobs,
                             annotate=not no_annotation, overrides=overrides_of(ctx) | shrink, executor=executor)
    if report.failed_sessions:
        sys.exit(1)


@click.command()
@click.pass_context
def graph(ctx: click.Context) -> None:
    """Print the project's step graph (Mermaid), generated from the step declarations."""
    from pipeline.catalog import load_catalog
    from pipeline.engine.graph import mermaid
    from pipeline.engine.steps import registry

    catalog = load_catalog(project_of(ctx))
    click.echo(mermaid(registry(item.entry for item in catalog).steps), nl=False)


@click.command()
@click.argument("session_ids", nargs=-1)
@jobs_option
@click.pass_context
@with_executor
@writer
def ingest(ctx: click.Context, session_ids: tuple[str, ...], jobs: int, executor: Executor) -> None:
    """Validate, hash and probe source videos; extract 16 kHz mono WAV, keyframes and clips."""
    if run_stages(project_of(ctx), ["ingest"], session_ids, jobs, overrides_of(ctx), executor=executor):
        sys.exit(1)
