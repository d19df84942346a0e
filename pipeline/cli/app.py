"""The `rescue` group: `--root`, `--debug`, `--version`, one-line errors; every command is registered here
from its family's module (pipeline/cli/<family>.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from pipeline import __version__
from pipeline.cli import (
    agreement,
    annotate,
    build,
    leaderboard,
    leaks,
    preannotate,
    runmodel,
    sessions,
    showrun,
    speech,
    status,
    tasks,
)
from pipeline.cli.console import err_console, line, styled
from pipeline.cli.options import environment_overrides
from pipeline.errors import RescueError, os_error_message
from pipeline.project import Project


class RescueGroup(click.Group):
    """Turns RescueError into `error: ... / fix: ...` and exit code 1; `--debug` shows the traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (RescueError, OSError) as exc:
            # An OSError that names its file (a read-only or full build area) is the user's to fix, too; a full
            # disk always is: without a file name, the build folder is where this command was writing.
            error = exc if isinstance(exc, RescueError) else os_error_message(exc, where=_build_folder(ctx))
            if error is None or (ctx.obj or {}).get("debug"):
                raise
            err_console.print(line(styled("error:", "bold red"), " ", error.message))
            if error.fix:
                err_console.print(line("  ", styled("fix:", "bold"), " ", error.fix))
            for detail in getattr(error, "details", ()):
                err_console.print(f"    {detail}", highlight=False)
            sys.exit(1)


def _build_folder(ctx: click.Context) -> Path | None:
    try:
        return Project.at((ctx.obj or {}).get("root")).build
    except (RescueError, OSError):
        return None


@click.group(cls=RescueGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Project root holding raw_video/ and build/ (default: $RESCUE_ROOT or the current folder).")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.version_option(__version__, prog_name="rescue")
@click.pass_context
def main(ctx: click.Context, root: Path | None, debug: bool) -> None:
    """Build the RESCUE benchmark from interview video: ingest, transcribe, annotate, agree, freeze."""
    # The environment is read here, once: stages get settings overrides as data (pipeline/cli/options.py).
    ctx.obj = {"root": root, "debug": debug, "overrides": environment_overrides(os.environ)}


for command in (
    build.build, build.graph, build.ingest, status.status, sessions.sample, sessions.add_session,        # the build
    tasks.freeze, tasks.verify, tasks.evaluate, tasks.compare_released,                       # tasks and release
    leaks.audit_leaks,                                                                        # answer leaks
    runmodel.run_model, showrun.show_run,                                                     # model runs
    leaderboard.leaderboard,                                                                  # scored runs
    annotate.labelstudio_group, annotate.annotators_group, annotate.push, annotate.pull,      # annotation
    agreement.agree, agreement.adjudicate, agreement.gold,                                    # agreement
    speech.transcribe, speech.diarize, speech.rows, speech.speakers, speech.score_transcript,  # speech
    preannotate.preannotate,                                                                  # drafts
):
    main.add_command(command)
