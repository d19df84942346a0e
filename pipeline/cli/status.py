"""`rescue status`: per session and stage, and per corpus step, what is done, stale (and why), failed, pending or
blocked, computed without running anything;
the annotation server; videos several sessions share. Reads only: it takes no lock."""

from __future__ import annotations

import json

import click
from rich.table import Table

from pipeline.cli.console import console, line, styled
from pipeline.cli.options import overrides_of, project_of


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of a table.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show, per session and stage, what is done, stale, failed, pending or waiting."""
    from pipeline.engine.status import status_table
    from pipeline.cli.printing import waiting_line
    from pipeline.engine.session_steps import STAGES

    table_data = status_table(project_of(ctx), overrides_of(ctx))
    context, rows, kept, corpus = table_data.context, table_data.sessions, table_data.not_in_catalog, table_data.corpus
    from pipeline.annotate.server import ServerPaths
    from pipeline.annotate.server_owner import server_report
    from pipeline.catalog import shared_videos

    labelstudio = server_report(ServerPaths.of(context.project))
    reused = shared_videos(context.catalog)
    if as_json:
        click.echo(json.dumps({**table_data.as_json(), "labelstudio": labelstudio, "shared_videos": reused},
                              indent=2))
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
    if corpus:  # every corpus step's state now (computed: nothing runs), and why where it is not done
        steps = [part for c in corpus for part in
                 (", " if c is not corpus[0] else "", f"{c['step']} ", styled(str(c["state"]), colours[c["state"]]))]
        console.print(line("corpus steps: ", *steps))
        for c in corpus:
            if c["state"] in {"stale", "failed"} and c["reason"]:
                console.print(f"  {c['step']}: {c['reason']}", highlight=False)
    printed = {row.session_id for row in rows if row.state == "failed" and row.reason}  # their error is above
    for waiting in table_data.waiting:
        console.print(waiting_line(waiting, printed))
    if labelstudio:
        colour = "yellow" if labelstudio["orphaned"] else "green"
        console.print(styled(labelstudio["message"], colour))
    for warning in reused:
        console.print(line(styled("warning:", "yellow"), f" {warning}"))
