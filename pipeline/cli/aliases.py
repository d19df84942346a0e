"""Single-step commands as aliases of the build: `rescue ingest`, `transcribe`, ..., `push`, `pull`, `agree`,
`adjudicate`, `gold` and `freeze` run `rescue build --only STEP...` (the named steps and what they need that
is not up to date), with the build's plan, state, lock and printing.

The annotation family's commands also have a standalone form (`--standalone`, or an option the build cannot
express, e.g. `rescue agree --snapshot OLD`): the step's function on what build/ holds now, recording no
build state."""

from __future__ import annotations

import sys
from collections.abc import Mapping

import click

from pipeline.cli.console import console, err_console
from pipeline.errors import RescueError
from pipeline.executors.base import Executor
from pipeline.project import Project
from pipeline.settings import NO_OVERRIDES, SettingsOverrides

standalone_option = click.option(
    "--standalone", is_flag=True,
    help="Run just this step's function on what is there now (rows, snapshot, running server), outside the build: "
         "no upstream steps, no build state recorded (the next `rescue build` checks the step again).")


def run_stages(project: Project, stage_names: list[str], session_ids: tuple[str, ...], jobs: int,
               overrides: SettingsOverrides = NO_OVERRIDES, executor: Executor | None = None) -> int:
    """Run the named steps (and what they need that is not up to date); returns the number of failed sessions.
    `overrides` (the command's flags) travel with every session's job to whichever worker runs it; `executor`:
    where the jobs run (default: this machine, `jobs` processes)."""
    from pipeline.cli.printing import build_and_print

    return build_and_print(project, console, err_console, session_ids=session_ids, only=stage_names, jobs=jobs,
                           overrides=overrides, executor=executor).failed_sessions


def run_corpus_step(project: Project, step: str, overrides: SettingsOverrides = NO_OVERRIDES,
                    kept: SettingsOverrides = NO_OVERRIDES) -> None:
    """`rescue STEP` as `rescue build --only STEP`; exits 1 when a session step failed. `kept`: the flags among
    `overrides` that change what a step makes, written into the settings file first (pipeline/cli/kept_flags.py)."""
    from pipeline.catalog import load_catalog
    from pipeline.cli.kept_flags import keep_step_flags

    if not load_catalog(project):
        raise RescueError(f"`rescue {step}` runs the build's {step} step, and the catalog lists no sessions",
                          "add sessions (`rescue sample`, `rescue add-session`), or run "
                          f"`rescue {step} --standalone` on what build/ holds")
    if kept:
        keep_step_flags(project, kept, overrides)
    if run_stages(project, [step], (), 1, overrides):
        sys.exit(1)


def standalone_reason(standalone: bool, one_off: Mapping[str, object]) -> str | None:
    """Why a command runs standalone: `--standalone`, or the first option given (label -> value; None, False
    and () are not given) that the build cannot express; None: it runs the build's step."""
    if standalone:
        return "--standalone"
    return next((label for label, value in one_off.items() if value not in (None, False, ())), None)


def ran_as_build_step(project: Project, step: str, overrides: SettingsOverrides, standalone: bool,
                      one_off: Mapping[str, object], kept: SettingsOverrides = NO_OVERRIDES) -> bool:
    """Run the build's `step` unless the command runs standalone (`standalone_reason`: said so on the console);
    True when it ran as the build's step (its `kept` flags written into the settings file first), False when the
    caller runs the function itself (the flags then last this run only: no build state is recorded)."""
    reason = standalone_reason(standalone, one_off)
    if reason is None:
        run_corpus_step(project, step, overrides, kept)
        return True
    console.print(f"standalone run ({reason}): no build state recorded; the next `rescue build` checks this step "
                  "again", highlight=False)
    return False
