"""Printing the corpus steps of `rescue build` (pipeline/cli/build.py calls `run_corpus`)."""

from __future__ import annotations

from rich.console import Console

from pipeline.cli.console import line, styled
from pipeline.corpus.context import StepOutcome
from pipeline.project import Project

COLOURS = {"ran": "green", "up to date": "dim", "not needed": "dim", "waiting": "yellow", "skipped": "yellow"}


def print_outcome(console: Console, outcome: StepOutcome) -> None:
    colour = COLOURS[outcome.status]
    took = f" ({outcome.elapsed_s:.1f} s)" if outcome.status == "ran" else ""
    console.print(line(f"{outcome.step}: ", styled(outcome.status, colour), f" - {outcome.message}{took}"))
    for note in outcome.notes[:20]:
        console.print(f"  {note}", highlight=False)
    if len(outcome.notes) > 20:
        console.print(f"  ... and {len(outcome.notes) - 20} more", highlight=False)


def run_corpus(project: Project, console: Console, err_console: Console) -> None:
    """Run the corpus steps, printing each as it finishes, then where the report and the release are."""
    from pipeline.corpus.build import build_corpus

    with err_console.status("corpus steps...") as status:
        report = build_corpus(project, on_step=lambda outcome: print_outcome(console, outcome),
                              on_begin=lambda step: status.update(f"corpus step: {step}..."))
    if report.not_run:
        console.print(f"corpus steps not run: {report.not_run}", highlight=False)
        return
    if not report.did_work:
        console.print("Nothing to do: every corpus step is up to date.")
    if report.agreement_report:
        console.print(f"agreement report: {report.agreement_report}", highlight=False)
    if report.release:
        console.print(f"release: {report.release}/ ({len(report.gold_sessions)} session(s); check it with "
                      f"`rescue verify {report.release}`)", highlight=False)
    else:
        console.print("release: not frozen yet (no session has complete gold)", highlight=False)
    if report.pending:
        console.print(f"left out of the release, gold pending for {len(report.pending)} session(s):", highlight=False)
        for session_id, why in sorted(report.pending.items()):
            console.print(f"  {session_id}: {why}", highlight=False)
