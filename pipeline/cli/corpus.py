"""Printing the corpus steps of `rescue build` (pipeline/cli/printing.py prints a whole build)."""

from __future__ import annotations

from rich.console import Console

from pipeline.cli.console import line, styled
from pipeline.engine.corpus_run import CorpusReport
from pipeline.engine.context import StepOutcome

COLOURS = {"ran": "green", "up to date": "dim", "not needed": "dim", "waiting": "yellow", "skipped": "yellow"}


def print_outcome(console: Console, outcome: StepOutcome) -> None:
    colour = COLOURS[outcome.status]
    took = f" ({outcome.elapsed_s:.1f} s)" if outcome.status == "ran" else ""
    console.print(line(f"{outcome.step}: ", styled(outcome.status, colour), f" - {outcome.message}{took}"))
    for note in outcome.notes[:20]:
        console.print(f"  {note}", highlight=False)
    if len(outcome.notes) > 20:
        console.print(f"  ... and {len(outcome.notes) - 20} more", highlight=False)


def print_corpus_report(console: Console, report: CorpusReport) -> None:
    """After the corpus steps' own lines: where the report and the release are, and who is left out."""
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
    elif freeze := next((step for step in report.steps if step.step == "freeze"), None):
        # the freeze step's own words: what an existing release holds and why it was not refreshed
        console.print(f"release: {freeze.message}", highlight=False)
    if report.pending:
        console.print(f"left out of the release, gold pending for {len(report.pending)} session(s):", highlight=False)
        for session_id, why in sorted(report.pending.items()):
            console.print(f"  {session_id}: {why}", highlight=False)
