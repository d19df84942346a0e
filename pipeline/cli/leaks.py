"""CLI for `rescue audit-leaks`: which instances of a release would show each other their answers. Thin: call,
print (pipeline/tasks/leak_audit.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.options import project_of
from pipeline.cli.tasks import _release_dir


@click.command("audit-leaks")
@click.argument("release", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--batch-size", type=click.IntRange(1, 50), default=5, show_default=True,
              help="The per-sample batch size whose leaks are counted (the paper's grouping, run-model's default).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_leaks(ctx: click.Context, release: Path | None, batch_size: int, as_json: bool) -> None:
    """Report answer leaks between a release's instances (exit 1 if an instance shows its own answer).

    Per task: how many instances would see another's answer if a sample's instances shared one prompt, and in
    the paper's per-sample batches of --batch-size; and, separately, instances whose own record shows their own
    answer (must be 0). `rescue run-model` never sends a leaking request unless run with --batching paper.
    """
    from pipeline.tasks.leak_audit import audit_release

    folder = _release_dir(project_of(ctx), release)
    report = audit_release(folder, batch_size)
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        table = Table(title=f"answer leaks between the instances of {folder}")
        for column in ("task", "instances", "pairs", "exposed: sample in one prompt",
                       f"exposed: batches of {batch_size}", "own answer shown"):
            table.add_column(column, justify="left" if column == "task" else "right")
        for item in report.tasks:
            table.add_row(item.task.upper(), str(item.instances), str(item.pairs),
                          str(item.exposed_if_batched_per_sample), str(item.exposed_in_paper_batches),
                          str(len(item.own_answer_shown)))
        console.print(table)
        console.print("answer row (fields that show it): " + "; ".join(f"{item.task.upper()} {item.answer_row}"
                                                                       for item in report.tasks), highlight=False)
        for item in report.tasks:
            for example in item.examples[:2]:
                console.print(f"{item.task.upper()}: {example}", highlight=False)
        for item in report.tasks:
            for pid in item.own_answer_shown[:5]:
                err_console.print(line(styled("own answer shown", "red"), f" {item.task.upper()} {pid}"))
        console.print(f"instances whose own prompt shows their own answer: {report.own_answer_shown} (must be 0)",
                      highlight=False)
    if report.own_answer_shown:
        sys.exit(1)
