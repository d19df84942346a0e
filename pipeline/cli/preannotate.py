"""`rescue preannotate`: run the step (per session), or `--evaluate` a backend on held-out gold. Parsing and
printing only; flags reach the step as settings overrides carried by each session's job, and --backend /
--train-gold are kept in pyproject.toml (pipeline/cli/kept_flags.py) so the next push drafts the same way."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from pipeline.cli.aliases import run_stages
from pipeline.cli.console import console
from pipeline.cli.kept_flags import keep_step_flags, relative_to_root
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.errors import RescueError
from pipeline.preannotate.drafts import SessionDrafts
from pipeline.preannotate.settings import BACKEND_NAMES
from pipeline.project import Project
from pipeline.settings import SettingsOverrides

_jobs = click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Sessions processed in parallel (separate processes).")


def _margin_cell(margin: dict) -> str:  # type: ignore[type-arg]
    if margin["value"] is None:
        return ""
    interval = "" if margin["low"] is None else f" [{margin['low']:+.3f}, {margin['high']:+.3f}]"
    return f"{margin['value']:+.3f}{interval}"


def _print_evaluation(result: dict) -> None:  # type: ignore[type-arg]
    from rich.table import Table

    table = Table(title=f"{result['backend']} ({result['model']}) vs majority baseline: {result['rows']} rows of "
                        f"{result['test_gold']}")
    for column in ("field", "rows", "measure", "backend", "baseline", "margin [CI]", ""):
        table.add_column(column)
    for name, unit in result["units"].items():
        measures = sorted(unit["backend"], key=lambda m: m != unit["primary"])
        for measure in measures:
            value = unit["backend"][measure]
            primary = measure == unit["primary"]
            mark = ("better" if unit["beats_baseline"] else "not better") if primary else ""
            table.add_row(name if primary else "", str(unit["rows"]) if primary else "", measure, f"{value:.3f}",
                          f"{unit['baseline'].get(measure, float('nan')):.3f}",
                          _margin_cell(unit["margin"]) if primary else "", mark)
    console.print(table)
    console.print(f"margin = backend - baseline; {result['better_rule']} ({result['sessions']} test session(s))")
    for gate in result.get("gates", ()):  # a gated backend's drafts, scored above: where each field came from
        console.print(f"drafted from {gate['source']}: {gate['field']} ({gate['reason']})", markup=False)
    if result["quarantined"]:
        console.print(f"{result['quarantined']} draft(s) quarantined (kept the transcript values)")


def drafts_summary(project: Project, session_ids: tuple[str, ...]) -> list[str]:
    """What the sessions' drafts are, one line per model version: backend, model version, training gold, rows
    drafted, and that they reach Label Studio at the next push (the step itself only writes files)."""
    from pipeline.catalog import load_catalog
    from pipeline.preannotate.drafts import read_drafts

    wanted = set(session_ids) or {item.entry.session_id for item in load_catalog(project)}
    by_version: dict[str, list[SessionDrafts]] = {}
    for session_id in sorted(wanted):
        try:
            drafts = read_drafts(project.build, session_id)
        except ValueError:
            continue  # an unreadable drafts file: the step's own failure line says so
        if drafts is not None:
            by_version.setdefault(drafts.model_version, []).append(drafts)
    lines = []
    for version, sessions in by_version.items():
        first = sessions[0]
        gold = {project.rel_or_abs(Path(name)) if Path(name).is_absolute() else name: sha[:12]
                for name, sha in first.training_gold.items()}
        trained = (f", trained on {', '.join(f'{name} (sha256 {sha})' for name, sha in gold.items())}" if gold
                   else "")
        rows = sum(len(d.rows) for d in sessions)
        quarantined = sum(len(d.quarantined) for d in sessions)
        kept = f", {quarantined} kept the transcript draft (quarantined)" if quarantined else ""
        lines.append(f"drafts by backend {first.backend}, model version {version}{trained}: {rows} row(s) drafted in "
                     f"{len(sessions)} session(s){kept}; they reach Label Studio at the next `rescue push` (or "
                     "`rescue build`)")
    return lines


@click.command()
@click.argument("session_ids", nargs=-1)
@click.option("--backend", type=click.Choice(BACKEND_NAMES), help="Draft backend (default: settings, else transcript).")
@click.option("--train-gold", "train_gold", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="gold-model training file in the released format (repeat for several; default: settings, "
                   "else build/gold/benchmark.jsonl).")
@click.option("--evaluate", "evaluate", is_flag=True,
              help="Score the backend against --test-gold instead of drafting the sessions.")
@click.option("--test-gold", type=click.Path(dir_okay=False, path_type=Path), help="Held-out gold for --evaluate.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --evaluate: also write the scores as JSON to this file.")
@_jobs
@click.pass_context
@writer
def preannotate(ctx: click.Context, session_ids: tuple[str, ...], backend: str | None, train_gold: tuple[Path, ...],
                evaluate: bool, test_gold: Path | None, json_file: Path | None, jobs: int) -> None:
    """Draft every label field of each session's rows for annotators to correct (build/preannotate/), or with
    --evaluate score a backend per field on held-out gold next to a majority baseline."""
    project = project_of(ctx)
    flags = SettingsOverrides.of("preannotate", {"backend": backend,
                                                 "train_gold": [relative_to_root(project, p) for p in train_gold]
                                                 or None})
    overrides = overrides_of(ctx) | flags
    if not evaluate:
        if test_gold or json_file:
            raise RescueError("--test-gold and --json belong to --evaluate", "add --evaluate, or leave them out")
        overrides = keep_step_flags(project, flags, overrides_of(ctx))  # the next push drafts the same way
        failed = run_stages(project, ["preannotate"], session_ids, jobs, overrides)
        for line in drafts_summary(project, session_ids):
            console.print(line, highlight=False)
        if failed:
            sys.exit(1)
        return
    from pipeline.preannotate.evaluate import evaluate_backend
    from pipeline.schema import load_schema
    from pipeline.settings import load_settings

    settings = load_settings(project.root, overrides)
    if test_gold is None or not settings.preannotate.train_gold:
        raise RescueError("--evaluate needs --test-gold and training gold (--train-gold, or [tool.rescue."
                          "preannotate] train_gold): the backend learns from it and the baseline counts it",
                          "rescue preannotate --evaluate --train-gold A.jsonl --test-gold B.jsonl")
    schema = load_schema(project.schemas / settings.annotate.schema_file)
    test = test_gold if test_gold.is_absolute() else Path.cwd() / test_gold
    result = evaluate_backend(project, settings.preannotate, schema, test.resolve()).as_json()
    _print_evaluation(result)
    if json_file:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        json_file.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
