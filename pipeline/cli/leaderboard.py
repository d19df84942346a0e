"""CLI for `rescue leaderboard`: every scored model run under build/runs/, one table per task. Thin: read, print."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.options import project_of


@click.command()
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of model runs (default build/runs/).")
@click.option("--format", "fmt", type=click.Choice(["terminal", "markdown", "csv"]), default="terminal",
              show_default=True, help="terminal tables, Markdown tables, or one CSV (one line per run, scope, metric).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the Markdown or CSV here instead of printing it.")
@click.pass_context
def leaderboard(ctx: click.Context, runs_dir: Path | None, fmt: str, out: Path | None) -> None:
    """Compare scored model runs: per task, rows per model and input mode, the paper's metrics per scenario."""
    from pipeline.layout import runs_dir as default_runs
    from pipeline.store import write_text_atomic
    from pipeline.tasks.leaderboard import SCOPES, read_leaderboard, scope_view, to_csv, to_markdown

    folder = runs_dir or default_runs(project_of(ctx))
    board = read_leaderboard(folder)
    for warning in board.warnings:
        err_console.print(line(styled("warning", "yellow"), f" {warning}"))
    if not board.tables:
        err_console.print(f"no scored runs under {folder}: score one with `rescue evaluate --run {folder}/<run_id>`",
                          highlight=False)
    if fmt == "terminal":
        for table in board.tables:  # one table per task and scope: all scopes side by side rarely fit
            for scope in (s for s in SCOPES if any(c[0] == s for c in table.columns)):
                header, rows = scope_view(table, scope)
                shown = Table(title=f"{table.task.upper()} {scope}")
                for column in header:
                    metric = column not in ("model", "mode", "release", "scorer", "run")
                    shown.add_column(column, justify="right" if metric else "left", overflow="fold")
                for row in rows:
                    shown.add_row(*row)
                console.print(shown)
        return
    text = to_markdown(board) if fmt == "markdown" else to_csv(board)
    if out:
        write_text_atomic(out, text)
    else:
        click.echo(text, nl=False)
