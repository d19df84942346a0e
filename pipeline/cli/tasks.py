"""CLI for the task family: `rescue freeze`, `verify`, `evaluate`, `compare-released`. Thin: parse,
call the library, print. Heavy imports stay inside the functions so `rescue --help` stays fast."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from pipeline import layout
from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.tasks.instances import TASKS  # the names only: the registry stays unimported for --help

if TYPE_CHECKING:
    from pipeline.settings import SettingsOverrides
    from pipeline.tasks.compare import Comparison
    from pipeline.tasks.judge import JudgeOptions

TASK_CHOICE = click.Choice(TASKS)


def _release_dir(project: Project, given: Path | None) -> Path:
    """The given release, else the only one under build/release/."""
    if given:
        return given
    base = layout.releases_dir(project)
    found = sorted(p for p in base.iterdir() if (p / "MANIFEST.json").is_file()) if base.is_dir() else []
    if len(found) != 1:
        raise RescueError(f"{'no release' if not found else f'{len(found)} releases'} under {base}",
                          "pass --release build/release/<version>" if found else "run `rescue freeze` first")
    return found[0]


def _model(value: str) -> dict[str, str]:
    parts = value.split(":", 2)
    if len(parts) != 3 or not all(parts):
        raise click.BadParameter(f"{value!r}: use ROLE:NAME:VERSION, e.g. asr:whisper-base:1.0.0")
    return {"role": parts[0], "name": parts[1], "version": parts[2]}


def _print_warnings(warnings: Sequence[object], where: str, shown: int = 20) -> None:
    for warning in warnings[:shown]:
        err_console.print(line(styled("warning", "yellow"), f" {warning}"))
    if len(warnings) > shown:
        err_console.print(line(styled("warning", "yellow"), f" ... and {len(warnings) - shown} more ({where})"))


@click.command()
@click.option("--gold", "gold_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Freeze this gold file (the released benchmark.jsonl format, e.g. a published one). Without it: "
                   "the build's freeze step (`rescue build --only freeze`) on build/gold/benchmark.jsonl.")
@click.option("--version", "version", default=None,
              help="Release version: build/release/<version> (default: release_version of [tool.rescue.build]).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Release folder (default build/release/<version>); its name is the version.")
@click.option("--settings", "settings_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Task-construction settings (default annotation_schemas/tasks-v1.yaml).")
@click.option("--strict", is_flag=True, help="Refuse gold rows with labels outside the schema's label sets.")
@click.option("--force", is_flag=True, help="Replace an existing release folder whose content differs (the old one "
                                           "moves to build/release/superseded/<version>-<UTC time>/).")
@click.option("--allow-shrink", is_flag=True,
              help="Replace the release even when the new one holds fewer sessions or instances (refused otherwise, "
                   "saying what would be lost; the old one moves to build/release/superseded/).")
@click.option("--snapshot", "snapshots", multiple=True, help="Annotation snapshot id the gold came from (repeat).")
@click.option("--model", "models", multiple=True, help="ROLE:NAME:VERSION of a model used upstream (repeat).")
@click.option("--license", "license_id", default=None,
              help="The card's `license:` field: the source videos' licence (e.g. cc-by-nc-4.0; default: "
                   "release_license of [tool.rescue.build]); the project does not own it.")
@click.option("--media/--no-media", "media", default=None,
              help="Pack the row clips ER, VP and SSP attach (media/, the turn_video_audio mode) or make a "
                   "text-only release. Default: release_media of [tool.rescue.build] (on) for the build's "
                   "gold; off with --gold FILE (a gold file from elsewhere has no clips; --media then packs "
                   "this project's clips of its sessions, or says why it cannot).")
@click.pass_context
@writer
def freeze(ctx: click.Context, gold_path: Path | None, version: str | None, out: Path | None,
           settings_path: Path | None, strict: bool, force: bool, allow_shrink: bool, snapshots: tuple[str, ...],
           models: tuple[str, ...], license_id: str | None, media: bool | None) -> None:
    """Build the six task files (ER, VP, RPP, ITP, STP, SSP) and freeze a release with manifest and card."""
    from pipeline.settings import SettingsOverrides, load_settings
    from pipeline.tasks.coverage import describe_label_sources
    from pipeline.tasks.freeze_gold import ReleaseDefaults, freeze_gold, read_gold_input

    project = project_of(ctx)
    if gold_path is None:
        _freeze_step(project, dict(version=version, out=out, settings=settings_path, strict=strict, force=force,
                                   snapshot=snapshots, model=models, license=license_id),
                     SettingsOverrides.of("build", {"release_media": media, "allow_shrink": allow_shrink or None}),
                     overrides_of(ctx))
        return
    release = ReleaseDefaults.of(load_settings(project.root), version, license_id)
    with console.status(f"reading {gold_path}"):
        given = read_gold_input(project, gold_path, settings_path, strict=strict)
    with console.status(f"building tasks from {len(given.sessions)} sessions"):
        summary = freeze_gold(project, given, release, snapshots=snapshots, models=[_model(m) for m in models],
                              out=out, overwrite=force, media=bool(media), allow_shrink=allow_shrink)
    _print_warnings(given.warnings, "MANIFEST.json counts them")
    _print_warnings(summary.coverage_warnings, "MANIFEST.json coverage lists them")
    console.print(describe_label_sources(summary.label_sources), highlight=False)
    if summary.shrunk:
        console.print(f"--allow-shrink: {summary.shrunk.describe()}", highlight=False)
    if summary.superseded:
        console.print(f"the previous {summary.version} was kept as {project.rel_or_abs(Path(summary.superseded))}/",
                      highlight=False)
    table = Table(title=f"release {summary.version}: {summary.path}" + (" (unchanged)" if summary.unchanged else ""))
    for column in ("task", "couple", "family", "all"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for task, counts in summary.instances.items():
        table.add_row(task, *(str(counts[k]) for k in ("couple", "family", "all")))
    console.print(table)
    if media:
        console.print(summary.media_note, highlight=False)
    else:
        console.print("text-only release (no media/ folder; --media packs the row clips)", highlight=False)


def _freeze_step(project: Project, file_only: dict[str, object], flags: SettingsOverrides,
                 environment: SettingsOverrides) -> None:
    """`rescue freeze` without --gold: the build's freeze step, through the engine (same state, same lock);
    --media/--no-media is kept in the settings file (kept_flags), --allow-shrink is for this run only."""
    given = [f"--{name}" for name, value in file_only.items() if value not in (None, False, ())]
    if given:
        raise RescueError(f"{', '.join(given)} only apply to freezing a gold file (`rescue freeze --gold FILE`)",
                          "the build's freeze step takes release_version and release_license from "
                          "[tool.rescue.build] in pyproject.toml; or name the gold file with --gold")
    from pipeline.cli.kept_flags import keep_step_flags
    from pipeline.cli.printing import build_and_print

    overrides = keep_step_flags(project, flags, environment)
    if build_and_print(project, console, err_console, only=["freeze"], overrides=overrides).failed_sessions:
        sys.exit(1)


@click.command()
@click.argument("release", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(release: Path, as_json: bool) -> None:
    """Recompute every hash in RELEASE/MANIFEST.json; report changed, missing and extra files
    and any symbolic link or other non-plain entry (exit 1 if any)."""
    from pipeline.tasks.verify import verify_release

    report = verify_release(release)
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        for change in report.changed:
            console.print(line(styled("changed", "red"), f" {change.path}: {change.problem}"))
        for path in report.missing:
            console.print(line(styled("missing", "red"), f" {path}"))
        for path in report.extra:
            console.print(line(styled("extra", "red"), f"   {path}"))
        for entry in report.not_plain:
            console.print(line(styled("not plain", "red"), f" {entry.path}: {entry.problem}"))
        verdict = "intact" if report.ok else "NOT intact"
        console.print(f"{release}: {report.checked} files listed, {verdict}", highlight=False)
    if not report.ok:
        sys.exit(1)


def _print_problems(problems: dict) -> None:
    counts = problems["counts"]
    details = {"unreadable_lines": lambda p: f"line {p['line']}: {p['problem']}",
               "unknown_ids": lambda p: f"line {p['line']}: unknown id {p['id']}",
               "duplicate_ids": lambda p: f"line {p['line']}: {p['id']} repeats line {p['first_line']}",
               "invalid": lambda p: f"line {p['line']} {p['id']}: {'; '.join(p['problems'])}",
               "missing_ids": lambda p: f"no prediction for {p}"}
    for key, show in details.items():
        for item in problems[key][:5]:
            err_console.print(line(styled(key, "yellow"), f" {show(item)}"))
        if len(problems[key]) > 5:
            err_console.print(line(styled(key, "yellow"), f" ... {len(problems[key]) - 5} more (see --json-out)"))
    parts = " + ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in
                       ("valid", "invalid", "repeated", "unknown_ids", "unreadable_lines"))
    err_console.print(f"predictions: {counts['lines']} line(s) = {parts}; {counts['missing_instances']} instance(s) "
                      "without a prediction. Missing, repeated and invalid answers count as wrong.", highlight=False)


def _judge_options(project: Project, model: str | None, base_url: str | None, no_judge: bool) -> JudgeOptions | None:
    """The judge's settings: [tool.rescue.judge] with the flags on top; None when no judge model is named."""
    from pydantic import ValidationError

    from pipeline.errors import describe_validation
    from pipeline.llm.cache import AREA
    from pipeline.settings import load_settings
    from pipeline.tasks.judge import JudgeOptions
    from pipeline.tasks.judge_settings import SECTION, JudgeSettings

    if no_judge:
        return None
    given = {k: v for k, v in {"model": model, "base_url": base_url}.items() if v}
    try:
        settings = JudgeSettings.model_validate({**load_settings(project.root).judge.model_dump(), **given})
    except ValidationError as exc:
        raise RescueError(f"judge settings ({SECTION} and --judge-* flags): {describe_validation(exc)}",
                          "fix --judge-base-url or the section in pyproject.toml") from exc
    return JudgeOptions(settings, project.build / AREA if settings.cache else None) if settings.model else None


def _print_run_notes(report: dict) -> None:
    unanswered = report.get("unanswered")
    if unanswered and unanswered["count"]:
        reasons = "; ".join(f"{n} {reason}" for reason, n in unanswered["by_reason"].items())
        err_console.print(line(styled("unanswered", "yellow"), f" {unanswered['count']} instance(s) the run got no "
                               f"usable answer for (scored as missing): {reasons}"))
    if report.get("batching_note"):
        err_console.print(line(styled(f"batching {report['batching']}", "yellow"), f" {report['batching_note']}"))
    if report.get("mode_note"):
        console.print(f"mode: {report['mode_note']}", highlight=False)
    if report.get("limit_note"):
        err_console.print(line(styled("partial", "yellow"), f" {report['limit_note']}"))
    judge = report.get("judge")
    if judge:
        console.print(f"judge {judge['model']} at {judge['endpoint_host']} ({judge['prompt_version']}): "
                      f"{judge['judged']} judged, {judge['floor_without_answer']} without an answer (floor score), "
                      f"{len(judge['unscored'])} unscored; {judge['requests']} requests, {judge['from_cache']} "
                      "from the cache", highlight=False)
        for item in judge["unscored"][:5]:
            err_console.print(line(styled("unjudged", "yellow"), f" {item['id']}: {item['problem']}"))


@click.command()
@click.option("--task", type=TASK_CHOICE, default=None,
              help="Which task the predictions answer (with --run: taken from run.json).")
@click.option("--predictions", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSONL: one object per instance with `id` and the task's answer fields (docs/tasks.md).")
@click.option("--run", "run_folder", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A model run folder (build/runs/<run_id>, made by `rescue run-model`): scores its predictions, "
                   "counts its unanswered instances as missing, writes scores.json there.")
@click.option("--release", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Release folder (default: the run's release, else the only one under build/release/).")
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the full report (scores, every problem) as JSON here.")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON instead of a table.")
@click.option("--no-similarity", is_flag=True, help="ER/VP: skip the MiniLM text similarity.")
@click.option("--judge-model", default=None,
              help="ER/VP: grade the text with this chat model, the paper's judge rubric (default: model of "
                   "[tool.rescue.judge]; none = no judge).")
@click.option("--judge-base-url", default=None, help="The judge's OpenAI-compatible endpoint (…/v1).")
@click.option("--no-judge", is_flag=True, help="Do not use a judge even if [tool.rescue.judge] names a model.")
@click.pass_context
def evaluate(ctx: click.Context, task: str | None, predictions: Path | None, run_folder: Path | None,
             release: Path | None, json_out: Path | None, as_json: bool, no_similarity: bool,
             judge_model: str | None, judge_base_url: str | None, no_judge: bool) -> None:
    """Score predictions (or a model run folder) for one task, per scenario and overall."""
    from pipeline.store import write_text_atomic
    from pipeline.tasks.evaluate import evaluate as run_evaluate
    from pipeline.tasks.evaluate import score_table

    if (predictions is None) == (run_folder is None):
        raise RescueError("give either --predictions FILE or --run FOLDER", "`rescue evaluate --run build/runs/<id>` "
                          "or `rescue evaluate --task T --predictions FILE`")
    project = project_of(ctx)
    judge = _judge_options(project, judge_model, judge_base_url, no_judge)
    if run_folder is not None:
        from pipeline.tasks.runs import read_run, release_hint, score_run

        run = read_run(run_folder)
        folder = release or release_hint(run, project.root) or _release_dir(project, None)
        report = score_run(run, folder, task=task, text_similarity=not no_similarity, judge=judge)
        task = report["task"]
    else:
        if task is None:
            raise RescueError("--task is required with --predictions", "pass --task er|vp|rpp|itp|stp|ssp")
        folder = _release_dir(project, release)
        report = run_evaluate(folder, task, predictions, text_similarity=not no_similarity,  # type: ignore[arg-type]
                              judge=judge)
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if json_out:
        write_text_atomic(json_out, text)
    if as_json:
        click.echo(text, nl=False)
        return
    _print_problems(report["problems"])
    _print_run_notes(report)
    header, rows = score_table(report)
    title = f"{task.upper()} on {folder}" + (f", {report['model']} in mode {report['mode']}" if run_folder else "")
    table = Table(title=title)
    for column in header:
        table.add_column(column, justify="left" if column == "scope" else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if "text_scorer" in report:
        console.print(f"ER/VP text scorer: {report['text_scorer']}", highlight=False)
    for key in ("macro_f1", "text_similarity"):
        if key in report:
            console.print(f"note: {report[key]}", highlight=False)
    if run_folder is not None:
        console.print(f"scores written to {run_folder / 'scores.json'}", highlight=False)


@click.command("compare-released")
@click.option("--task", required=True, type=click.Choice(["er", "vp"]), help="The published task file's task.")
@click.argument("published", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--release", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Release folder (default: the only one under build/release/).")
@click.option("--level", type=click.Choice(["bytes", "values"]), default="bytes", show_default=True,
              help="What exit 0 needs: identical bytes (and values), or identical values only.")
@click.option("--json", "as_json", is_flag=True, help="Print the full comparison as JSON.")
@click.option("--show", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many differences of each level to print.")
@click.pass_context
def compare_released(ctx: click.Context, task: str, published: Path, release: Path | None, level: str,
                     as_json: bool, show: int) -> None:
    """Compare rebuilt ER/VP instances with the published er.jsonl / vp.jsonl, by value and byte for byte
    (exit 1 unless identical at --level)."""
    from pipeline.tasks.compare import compare_released as run_compare

    report = run_compare(_release_dir(project_of(ctx), release), task, published)
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        _print_comparison(report, show)
    if not report.identical[level]:
        sys.exit(1)


def _print_comparison(report: Comparison, show: int) -> None:
    def shown(value: object) -> str:
        text = json.dumps(value, ensure_ascii=False)
        return (text if len(text) <= 80 else text[:77] + "...") + f" ({type(value).__name__})"

    for difference in report.differences[:show]:
        where = f" (line {difference.line})" if difference.line else ""
        values = ("" if difference.kind.startswith("record only") else
                  f": rebuilt {shown(difference.rebuilt)}, published {shown(difference.published)}")
        console.print(line(styled("differs", "yellow"), f" {difference.path}{where}: {difference.kind}{values}"))
    for duplicate in report.duplicates[:show]:
        console.print(line(styled("duplicate", "yellow"), f" {duplicate.path}: {duplicate.file} file lines "
                                                          f"{', '.join(map(str, duplicate.lines))}"))
    for difference in report.byte_differences[:show]:
        console.print(line(styled("bytes", "yellow"), f" {difference.path} (line {difference.line}): {difference.why}"))
    for key in report.not_compared:
        console.print(f"not compared: {key.key} ({key.values} value(s)): {key.why}", highlight=False)
    counts = report.counts
    console.print(f"{report.task}: {counts['published']} published record(s), {counts['rebuilt']} rebuilt; "
                  f"value-identical {counts['value_identical']}, byte-identical {counts['byte_identical']}; "
                  f"{counts['value_differences']} value difference(s), {counts['duplicates']} duplicate(s), "
                  f"{counts['byte_differences']} byte difference(s)", highlight=False)
    verdict = ("IDENTICAL (values and bytes)" if report.identical["bytes"] else
               "identical values, NOT identical bytes" if report.identical["values"] else "NOT identical")
    console.print(line(styled(verdict, "green" if report.identical["bytes"] else "red"), ""))
