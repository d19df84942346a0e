"""Agreement report, adjudication and gold as make-like corpus steps over the newest annotation snapshot.

Each is skipped only when its inputs' fingerprint matches its last run and every output file still has
the sha256 that run recorded; an output that was damaged, cut or edited is rebuilt (and said so)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline import layout
from pipeline.agreement.adjudication_tasks import TASKS_FILE
from pipeline.agreement.inputs import adjudication_answers, latest_annotations
from pipeline.annotate.adjudication_round_trip import adjudication_round_trip
from pipeline.corpus.checks import over_snapshot
from pipeline.step import LABEL_STUDIO, Context, Inputs, Step, StepDetail, file_sha
from pipeline.store import read_jsonl

if TYPE_CHECKING:
    from pipeline.agreement.gold import QueueItem


def _settings_json(ctx: Context) -> dict[str, object]:
    return ctx.agreement.model_dump(mode="json")


AGREEMENT = ("agreement",)  # the settings section of agree, adjudicate and gold (their declarations name it)


class AgreeDetail(StepDetail):
    snapshot: str = ""  # the annotation snapshot the report is of


class AdjudicateDetail(StepDetail):
    queue: int = 0  # fields in the adjudication queue


class GoldDetail(StepDetail):
    sessions: tuple[str, ...] = ()  # the sessions written as gold
    benchmark_sha256: str = ""


def agree_inputs(ctx: Context, snapshot: Path) -> Inputs:
    answers = adjudication_answers(ctx.project)
    # the report links each dispute to its adjudication task: a new or re-asked task changes the report
    tasks = layout.adjudication_dir(ctx.project) / TASKS_FILE
    linked = {"adjudication_tasks": file_sha(tasks)} if tasks.is_file() else {}  # absent: the fingerprint as before
    return Inputs("agree", AGREE.version, dict(annotations=file_sha(snapshot), settings=_settings_json(ctx),
                                     schema=ctx.schema_sha, adjudications=file_sha(answers) if answers else "",
                                     **linked),
                  AGREEMENT)


def agree_fingerprint(ctx: Context, snapshot: Path) -> str:
    return agree_inputs(ctx, snapshot).fingerprint()


def adjudicate_inputs(ctx: Context, snapshot: Path) -> Inputs:
    return Inputs("adjudicate", ADJUDICATE.version, dict(annotations=file_sha(snapshot), rows=ctx.rows,
                                          settings=_settings_json(ctx), schema=ctx.schema_sha), AGREEMENT)


def adjudicate_fingerprint(ctx: Context, snapshot: Path) -> str:
    return adjudicate_inputs(ctx, snapshot).fingerprint()


def adjudicate_out_of_date(ctx: Context) -> str | None:
    """Why adjudicate must run (and take its queue through the server), or None when it is up to date."""
    fp = adjudicate_fingerprint(ctx, latest_annotations(ctx.project))
    return None if ctx.last_done("adjudicate", fp) else "annotations or agreement settings changed"


def gold_inputs(ctx: Context, snapshot: Path) -> Inputs:
    answers = adjudication_answers(ctx.project)
    return Inputs("gold", GOLD.version, dict(annotations=file_sha(snapshot),
                                             adjudications=file_sha(answers) if answers else "", rows=ctx.rows,
                                             settings=_settings_json(ctx), schema=ctx.schema_sha), AGREEMENT)


def gold_fingerprint(ctx: Context, snapshot: Path) -> str:
    return gold_inputs(ctx, snapshot).fingerprint()


def agree_outputs(ctx: Context) -> list[Path]:
    folder = layout.agreement_dir(ctx.project)
    return _outputs(folder) + [folder / "report.html"]


def adjudicate_outputs(ctx: Context) -> list[Path]:
    return _outputs(layout.adjudication_dir(ctx.project), "queue.jsonl", "summary.json")


def gold_outputs(ctx: Context) -> list[Path]:
    return _outputs(layout.gold_dir(ctx.project), layout.GOLD_FILE, "provenance.jsonl", "summary.json")


def _outputs(folder: Path, *names: str) -> list[Path]:
    """The named files of `folder`, and every file below it when no name is given."""
    if names:
        return [folder / name for name in names]
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else [folder / "report.html"]


def _damage_note(damaged: list[str]) -> list[str]:
    return [f"{', '.join(damaged[:3])}{' ...' if len(damaged) > 3 else ''}: not what the last run wrote "
            "(missing, cut or edited), so the step ran again"] if damaged else []


def agree_step(ctx: Context) -> Path:
    """build/agreement/ for the newest snapshot; returns the HTML report."""
    from pipeline.agreement.agree import run_agree

    snapshot = latest_annotations(ctx.project)
    folder = layout.agreement_dir(ctx.project)
    html = folder / "report.html"
    inputs = agree_inputs(ctx, snapshot)
    done = ctx.last_done_with(inputs)
    damaged = ctx.damaged(done, agree_outputs(ctx)) if done else []
    if done is not None and not damaged:
        ctx.record("agree", "up to date", f"report of snapshot {snapshot.parent.name}")
        ctx.build.agreement_report = html
        return html
    output = run_agree(ctx.project, ctx.agreement)
    report = output.report
    ctx.done("agree", inputs, AgreeDetail(snapshot=snapshot.parent.name), files=_outputs(folder))
    ctx.record("agree", "ran", f"{len(report.annotators)} annotator(s), {report.rows} row(s) of {report.sessions} "
                               f"session(s) -> {ctx.project.rel_or_abs(output.html)}",
               _damage_note(damaged) + [note.message for note in report.notes])
    ctx.build.agreement_report = output.html
    return output.html


def adjudicate_step(ctx: Context) -> None:
    """The queue of what consensus cannot settle; with the server open, its round trip through Label Studio
    (where the demo's extension applies the stored sample adjudications)."""
    from pipeline.agreement.gold import QueueItem, run_adjudicate

    server = ctx.build.server
    snapshot = latest_annotations(ctx.project)
    inputs = adjudicate_inputs(ctx, snapshot)
    done = ctx.last_done_with(inputs)
    outputs = adjudicate_outputs(ctx)
    damaged = ctx.damaged(done, outputs) if done else []
    kept = AdjudicateDetail.of(done)
    queue_file = outputs[0]
    items = None
    if done is None or damaged or kept is None:
        _, items = run_adjudicate(ctx.project, ctx.agreement)
        count, fresh = len(items), True
    else:
        count, fresh = kept.queue, False
    changed, notes = (adjudication_round_trip(ctx, server, push=fresh and count > 0)
                      if server else (False, []))
    notes = _damage_note(damaged) + notes
    where = ctx.project.rel_or_abs(queue_file)
    message = f"{count} field(s) in the adjudication queue ({where})"
    if changed:  # new adjudicated answers: what they settled, counted field by field (never a difference of totals)
        before = queued_fields(items if items is not None else read_jsonl(queue_file, QueueItem))
        _, items = run_adjudicate(ctx.project, ctx.agreement)
        after = queued_fields(items)
        count = len(items)
        message = (f"{len(before - after)} of {len(before)} queued field(s) settled by the adjudicators' answers; "
                   f"{count} field(s) left in the adjudication queue ({where})")
        if after - before:
            notes.append(f"{len(after - before)} of them newly queued after the adjudicators' answers (an adjudicated "
                         "speaker can make more fields apply to a row)")
    ctx.done("adjudicate", inputs, AdjudicateDetail(queue=count), files=outputs)
    ctx.record("adjudicate", "ran" if fresh or changed else "up to date", message, notes)


def queued_fields(items: Iterable[QueueItem]) -> set[tuple[str, str, str]]:
    """(session, row, field) of every queue item: what 'settled' and 'newly queued' are counted on."""
    return {(item.session_id, item.row_id, item.field) for item in items}


def gold_step(ctx: Context) -> tuple[tuple[str, ...], dict[str, str]]:
    """build/gold/; returns the sessions written and the pending ones (every catalog session not written)."""
    from pipeline.agreement.gold import GoldSummary, run_gold

    snapshot = latest_annotations(ctx.project)
    inputs = gold_inputs(ctx, snapshot)
    folder = layout.gold_dir(ctx.project)
    summary_file, gold_file = folder / "summary.json", layout.gold_file(ctx.project)
    outputs = gold_outputs(ctx)
    done = ctx.last_done_with(inputs)
    damaged = ctx.damaged(done, outputs) if done else []
    if done is not None and not damaged:
        summary = GoldSummary.model_validate_json(summary_file.read_text(encoding="utf-8"))
        status = "up to date"
    else:
        summary = run_gold(ctx.project, ctx.agreement)
        ctx.done("gold", inputs, GoldDetail(sessions=summary.sessions_written,
                                            benchmark_sha256=summary.benchmark_sha256), files=outputs)
        status = "ran"
    pending = pending_sessions(ctx, summary.sessions_written, summary.sessions_pending)
    ctx.build.gold_sessions, ctx.build.pending = summary.sessions_written, pending
    sources = ", ".join(f"{k} {v}" for k, v in summary.fields_by_source.items())
    ctx.record("gold", status, f"{len(summary.sessions_written)} session(s), {summary.rows_written} row(s) -> "
                               f"{ctx.project.rel_or_abs(gold_file)}; {len(pending)} session(s) pending",
               _damage_note(damaged) + ([f"fields settled by: {sources}"] if sources else []))
    return summary.sessions_written, pending


def pending_sessions(ctx: Context, written: tuple[str, ...], reasons: dict[str, str]) -> dict[str, str]:
    """Every catalog session that has no gold, with the reason (never left out silently)."""
    pending = {}
    for session_id, rows_sha in sorted(ctx.rows.items()):
        if session_id in written:
            continue
        if session_id in reasons:
            pending[session_id] = reasons[session_id]
        elif not rows_sha:
            pending[session_id] = "no transcript rows yet"
        else:
            pending[session_id] = "no annotations pulled yet (annotate its rows in Label Studio, then `rescue build`)"
    return pending


ADJUDICATE = Step("adjudicate", adjudicate_step, after=("pull",), settings=AGREEMENT, sources="annotation_schemas/",
                  outputs=("build/adjudication/queue.jsonl", "build/adjudication/summary.json"),
                  summary="consensus; the queue of what it cannot settle, round trip through Label Studio",
                  needs=(LABEL_STUDIO,), server_check=adjudicate_out_of_date,
                  check=over_snapshot("adjudicate", adjudicate_inputs, adjudicate_outputs, server=True))
# version "2": the report's acceptance section compares the drafts with the gold, which adjudications settle too
AGREE = Step("agree", agree_step, after=("adjudicate",), settings=AGREEMENT,
             sources="annotation_schemas/", outputs=("build/agreement/",), version="2",
             summary="agreement report of the newest snapshot, with the drafts' acceptance against the settled gold",
             check=over_snapshot("agree", agree_inputs, agree_outputs))
GOLD = Step("gold", gold_step, after=("adjudicate",), settings=AGREEMENT, sources="",
            outputs=("build/gold/benchmark.jsonl", "build/gold/provenance.jsonl", "build/gold/summary.json"),
            summary="gold rows per session; every session without gold is listed with the reason",
            check=over_snapshot("gold", gold_inputs, gold_outputs))
