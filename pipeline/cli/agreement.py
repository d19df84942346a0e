"""The thin CLI of the agreement family: `rescue agree`, `rescue adjudicate`, `rescue gold`.
Heavy imports (numpy, scipy, matplotlib, the text model) stay inside the functions."""

from __future__ import annotations

from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline import layout
from pipeline.cli.aliases import ran_as_build_step, standalone_option
from pipeline.cli.console import console, err_console
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of

_snapshot = click.option("--snapshot", default=None, metavar="NAME",
                         help="Annotation snapshot folder under build/annotations/ (default: the newest; "
                              "standalone).")
_skip = click.option("--skip-other-versions", is_flag=True,
                     help="Leave out records of another schema version instead of stopping (they are counted; "
                          "standalone).")
_no_text = click.option("--no-text", is_flag=True,
                        help="Skip the text model: free-text fields are not compared (agree) or must match exactly "
                             "(adjudicate, gold); the settings' text_similarity = false for this run.")


def _overrides(ctx: click.Context, **flags: Any):  # noqa: ANN202 - SettingsOverrides, imported lazily
    """This run's overrides with the flags given (None = not given) under `[tool.rescue.agreement]`."""
    from pipeline.settings import SettingsOverrides

    return overrides_of(ctx) | SettingsOverrides.of("agreement", flags)


def _settings(ctx: click.Context, **flags: Any):  # noqa: ANN202 - AgreementSettings, imported lazily
    """`[tool.rescue.agreement]` with the flags given (None = not given) as overrides of this run."""
    from pipeline.settings import load_settings

    return load_settings(project_of(ctx).root, _overrides(ctx, **flags)).agreement


def _as_build_step(ctx: click.Context, step: str, standalone: bool, one_off: dict[str, object],
                   **flags: Any) -> bool:
    """`ran_as_build_step` with the flags given as `[tool.rescue.agreement]` overrides; run as the build's step,
    they are kept in the settings file (kept_flags: the next build makes the same report and gold)."""
    from pipeline.settings import SettingsOverrides

    return ran_as_build_step(project_of(ctx), step, _overrides(ctx, **flags), standalone, one_off,
                             kept=SettingsOverrides.of("agreement", flags))


class _Bar:
    """One rich progress bar whose task is renamed as the work moves on (embedding, bootstrap, ...)."""

    def __init__(self) -> None:
        self.progress = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=err_console, transient=True,
                                 disable=not err_console.is_terminal)
        self.task = self.progress.add_task("reading", total=None)

    def __call__(self, what: str, done: int, total: int) -> None:
        self.progress.update(self.task, description=what, completed=done, total=total)


@click.command()
@_snapshot
@_skip
@_no_text
@click.option("--bootstrap", type=click.IntRange(min=0), default=None,
              help="Bootstrap resamples for the intervals (default from settings: 1000; 0 = none).")
@click.option("--seed", type=int, default=None, help="Bootstrap seed (default from settings; recorded in the report).")
@click.option("--open", "open_report", is_flag=True, help="Open report.html in the default browser afterwards.")
@standalone_option
@click.pass_context
@writer
def agree(ctx: click.Context, snapshot: str | None, skip_other_versions: bool, no_text: bool, bootstrap: int | None,
          seed: int | None, open_report: bool, standalone: bool) -> None:
    """Inter-annotator agreement per field, scenario, session, annotator and pair -> build/agreement/.

    This is `rescue build --only agree`: the steps it needs first where out of date (the server is opened only
    when something there can have changed), its state recorded, skipped when up to date. Standalone
    (--standalone, --snapshot or --skip-other-versions): that snapshot as it is, no build state recorded."""
    from pipeline.agreement.agree import run_agree

    project = project_of(ctx)
    if _as_build_step(ctx, "agree", standalone, {"--snapshot": snapshot, "--skip-other-versions": skip_other_versions},
                      text_similarity=False if no_text else None, bootstrap_samples=bootstrap, seed=seed):
        if open_report:
            click.launch(str(layout.agreement_dir(project) / "report.html"))
        return
    settings = _settings(ctx, bootstrap_samples=bootstrap, seed=seed)
    bar = _Bar()
    with bar.progress:
        output = run_agree(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions,
                           text=False if no_text else None, progress=bar)
    report = output.report
    console.print(f"agreement of {len(report.annotators)} annotator(s) on {report.rows} rows of {report.sessions} "
                  f"session(s), snapshot {report.snapshot}", highlight=False)
    for note in report.notes:
        err_console.print(f"  note: {note.message}", highlight=False)
    for name in ("report.html", "agreement.md", "agreement.csv"):
        console.print(f"  {project.rel_or_abs(output.folder / name)}", highlight=False)
    if open_report:
        click.launch(str(output.html))


@click.command()
@_snapshot
@_skip
@_no_text
@click.option("--pull", "pull_answers", is_flag=True,
              help="First fetch the adjudicators' answers from the Label Studio adjudication projects.")
@click.option("--push/--no-push", "push_queue", default=False, show_default=True,
              help="Also put the queue into a Label Studio adjudication project (one per scenario; standalone).")
@standalone_option
@click.pass_context
@writer
def adjudicate(ctx: click.Context, snapshot: str | None, skip_other_versions: bool, no_text: bool,
               pull_answers: bool, push_queue: bool, standalone: bool) -> None:
    """Settle agreeing answers by consensus; write the rest to build/adjudication/queue.jsonl.

    Answers given in the adjudication projects win over the annotators'. This is `rescue build --only
    adjudicate`: when the server is opened, the queue goes there and the answers come back. Standalone
    (--standalone, --snapshot, --skip-other-versions, --pull, --push): --pull fetches the answers first,
    --push puts the queue there; no build state recorded."""
    from pipeline.agreement.gold import run_adjudicate

    project = project_of(ctx)
    if _as_build_step(ctx, "adjudicate", standalone,
                      {"--snapshot": snapshot, "--skip-other-versions": skip_other_versions, "--pull": pull_answers,
                       "--push": push_queue}, text_similarity=False if no_text else None):
        return
    settings = _settings(ctx, text_similarity=False if no_text else None)
    if pull_answers:
        from pipeline.agreement.queue_labelstudio import pull_adjudications

        with err_console.status("exporting the adjudication projects..."):
            answers = pull_adjudications(project, settings)
        count = sum(1 for line in answers.open(encoding="utf-8") if line.strip())
        console.print(f"{count} adjudicated answer(s) -> {project.rel_or_abs(answers)}", highlight=False)
    with err_console.status("settling answers (consensus rules per field)..."):
        path, items = run_adjudicate(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions)
    rows = len({item.row_id for item in items})
    console.print(f"{len(items)} field(s) of {rows} row(s) need an adjudicator -> {project.rel_or_abs(path)}",
                  highlight=False)
    if push_queue and items:
        from pipeline.agreement.queue_labelstudio import push_queue as push

        with err_console.status("importing the queue into Label Studio..."):
            pushed = push(project, settings, items)
        for line in pushed:
            console.print(f"  {line}", highlight=False)


@click.command()
@_snapshot
@_skip
@_no_text
@standalone_option
@click.pass_context
@writer
def gold(ctx: click.Context, snapshot: str | None, skip_other_versions: bool, no_text: bool, standalone: bool) -> None:
    """Write settled sessions as gold rows (benchmark format) with per-field provenance -> build/gold/.

    This is `rescue build --only gold` (adjudicate and what it needs first, where out of date). Standalone
    (--standalone, --snapshot or --skip-other-versions): that snapshot as it is, no build state recorded."""
    from pipeline.agreement.gold import run_gold

    project = project_of(ctx)
    if _as_build_step(ctx, "gold", standalone, {"--snapshot": snapshot, "--skip-other-versions": skip_other_versions},
                      text_similarity=False if no_text else None):
        return
    settings = _settings(ctx, text_similarity=False if no_text else None)
    with err_console.status("settling answers and writing gold rows..."):
        summary = run_gold(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions)
    console.print(f"gold: {len(summary.sessions_written)} session(s), {summary.rows_written} row(s) -> "
                  f"{project.rel_or_abs(layout.gold_file(project))}; "
                  f"{len(summary.sessions_pending)} session(s) pending, {summary.queue_items} field(s) in the "
                  "adjudication queue", highlight=False)
    for session_id, reason in sorted(summary.sessions_pending.items())[:20]:
        err_console.print(f"  pending {session_id}: {reason}", highlight=False)
    if len(summary.sessions_pending) > 20:
        err_console.print(f"  ... and {len(summary.sessions_pending) - 20} more (build/gold/summary.json)")
