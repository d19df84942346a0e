"""`rescue show-run RUN`: a model run's log per instance, in the terminal or as a self-contained HTML page. Parsing
and printing only (pipeline/runmodel/show.py reads the log, show_html.py renders the page)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.options import project_of
from pipeline.errors import RescueError
from pipeline.store import write_text_atomic

TERMINAL_LIMIT = 20
COLOURS = {"right": "green", "wrong": "red", "unanswered": "yellow", "answered": "default"}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        value = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in value.items() if k != "reason"}
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


@click.command("show-run", help="""Show a model run per instance: the prompt as sent, the raw answer, what was read
from it and, once `rescue evaluate --run` scored the run, the gold and the instance's scores.

RUN is a run folder (build/runs/<run_id>), a run id or the start of one. The terminal shows a table of the first
--limit instances chosen (default 20; 0: all); --full (or --id) adds per instance its target as sent, the media,
the raw answer of its request and what was read from it, after the system message. --html FILE writes every chosen
instance (or the first --limit) to one self-contained page. An unfinished run (killed, or stopped by an error) is
shown from the partial log it left. See docs/run-model.md.""")
@click.argument("run")
@click.option("--wrong", is_flag=True, help="Only instances scored wrong or without an answer (needs a scored run).")
@click.option("--unanswered", is_flag=True, help="Only instances without a usable answer.")
@click.option("--id", "ids", multiple=True, help="Only this instance id (repeat); implies --full.")
@click.option("--sample", default=None, help="Only the instances of this sample id.")
@click.option("--scenario", type=click.Choice(["couple", "family"]), default=None, help="Only this scenario.")
@click.option("--limit", type=click.IntRange(min=0), default=None,
              help=f"At most N instances (terminal default {TERMINAL_LIMIT}, HTML default all; 0: all).")
@click.option("--full", is_flag=True, help="Per instance: the prompt, the raw answer and what was read from it.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the chosen instances as a self-contained HTML page to this file.")
@click.pass_context
def show_run(ctx: click.Context, run: str, wrong: bool, unanswered: bool, ids: tuple[str, ...], sample: str | None,
             scenario: str | None, limit: int | None, full: bool, html_out: Path | None) -> None:
    from pipeline.runmodel.show import choose, load_run, resolve_run

    project = project_of(ctx)
    loaded = load_run(resolve_run(project, run))
    if wrong and loaded.scores is None:
        raise RescueError(f"--wrong needs a scored run, and {loaded.folder} is not scored",
                          f"score it first: rescue evaluate --run {loaded.folder}")
    chosen = choose(loaded.views, wrong=wrong, unanswered=unanswered, ids=ids, sample=sample, scenario=scenario)
    missing = sorted(set(ids) - {v.sample.id for v in chosen}) if ids and not (wrong or unanswered) else []
    if missing:
        raise RescueError(f"{loaded.folder} logs no instance {', '.join(missing[:3])}",
                          "pass ids from the table `rescue show-run RUN` prints")
    if html_out is not None:
        from pipeline.runmodel.show_html import to_html

        page = chosen[:limit] if limit else chosen
        write_text_atomic(html_out, to_html(loaded, page, shown_of=len(loaded.views)))
        console.print(f"wrote {html_out} ({len(page)} of {len(loaded.views)} instance(s))", highlight=False)
        return
    _print(loaded, chosen, TERMINAL_LIMIT if limit is None else limit, full or bool(ids))


def _print(loaded: Any, chosen: list[Any], limit: int, full: bool) -> None:
    record = loaded.record or {}
    name = record.get("run_id", loaded.folder.name)
    facts = ", ".join(str(record[k]) for k in ("task", "mode", "model") if k in record)
    console.print(line(styled(name, "bold"), f"  {facts}  " if facts else "  ",
                       "finished" if loaded.finished else styled("unfinished", "yellow")))
    for note in loaded.notes:
        err_console.print(line(styled("note:", "yellow"), f" {note}"))
    outcomes = Counter(v.outcome for v in loaded.views)
    kinds = Counter(v.sample.reason.split(":", 1)[0] for v in loaded.views if v.outcome == "unanswered")
    console.print(f"{len(loaded.views)} instance(s): " + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))
                  + (f" ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})" if kinds else ""),
                  highlight=False)
    shown = chosen[:limit] if limit else chosen
    table = Table(title=f"{len(shown)} of {len(chosen)} chosen instance(s)", show_lines=False)
    for column in ("n", "id", "sample", "request", "outcome", "answer (or why none)", "gold", "scores"):
        table.add_column(column, overflow="fold")
    for view in shown:
        scored = view.scored or {}
        table.add_row(str(view.sample.n), view.sample.id, view.sample.sample_id,
                      "" if view.sample.request is None else str(view.sample.request),
                      styled(view.outcome, COLOURS[view.outcome]), _cell(view.sample.parsed) or view.sample.reason,
                      _cell(scored.get("gold")), _cell(scored.get("scores")))
    console.print(table)
    if len(chosen) > len(shown):
        console.print(f"{len(chosen) - len(shown)} more: --limit 0 shows all, --html FILE writes a page",
                      highlight=False)
    if full:
        _print_full(shown)


def _print_full(shown: list[Any]) -> None:
    printed: set[str] = set()
    for view in shown:
        request = view.request
        if view.system and view.system not in printed:
            printed.add(view.system)
            console.print(Panel(Text(view.system), title="system message", title_align="left"), soft_wrap=False)
        title = f"{view.sample.id}  ({view.outcome})"
        if request is None:
            console.print(Panel(Text(f"never sent: {view.sample.reason}"), title=title, title_align="left"),
                          soft_wrap=False)
            continue
        mates = [i for i in request.ids if i != view.sample.id]
        parts = [f"request {request.request}: {len(request.ids)} instance(s)"
                 + (f", batch-mates {', '.join(mates)}" if mates else "")
                 + ("; from the cache" if request.cached else "" if request.sent
                    else f"; not sent: {request.not_sent}")]
        parts += [f"media: {url}" for url in view.media]
        parts += ["", "user message: " + view.user.split("\n\n", 1)[0], "its target, as sent:", _pretty(view.target), "",
                  "raw answer of the request" + (f" (finish: {request.finish_reason})" if request.finish_reason
                                                 else "") + ":",
                  request.content or request.refusal or request.problem or request.not_sent or "(empty)"]
        if view.sample.answer_items:
            parts += ["", "given for this id:", json.dumps(view.sample.answer_items, ensure_ascii=False)]
        parts += ["", ("read as: " + json.dumps(view.sample.parsed, ensure_ascii=False)) if view.sample.parsed
                  is not None else f"unanswered: {view.sample.reason}"]
        if view.scored is not None:
            parts += [f"gold: {_cell(view.scored.get('gold'))}", f"scores: {_cell(view.scored.get('scores'))}"]
        console.print(Panel(Text("\n".join(parts)), title=title, title_align="left",
                            border_style=COLOURS[view.outcome].replace("default", "dim")), soft_wrap=False)
