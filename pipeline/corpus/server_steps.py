"""The corpus steps that talk to Label Studio: push, the stored sample annotations, pull, and the
adjudication queue's round trip (push the queue, the stored adjudications, pull the answers).

Push gives every annotator their own projects (independent labels): the roster
(`roster.counted_annotators`), plus, while the stored sample annotations are in play, the sample's annotators
(their projects must exist before their stored answers can land there) but not its adjudicator."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pipeline import layout
from pipeline.agreement.inputs import adjudication_answers, snapshot_files
from pipeline.annotate.drafted import drafts_origin
from pipeline.annotate.guards import guards_of
from pipeline.annotate.integrity_notes import pull_notes, push_notes
from pipeline.annotate.push import draft_notes, push_rows
from pipeline.annotate.roster import counted_annotators, stranger_line
from pipeline.annotate.tasks import session_video
from pipeline.corpus.apply_stored import ApplySummary, apply_stored_export
from pipeline.corpus.context import CorpusContext
from pipeline.corpus.labelstudio_steps import (
    ProjectExport,
    ServerSession,
    adjudication_titles,
    combined_digest,
    export_map,
    fetch_annotation_exports,
    fetch_exports,
    snapshot_digest,
)
from pipeline.corpus.checks import by_server, stored_sample
from pipeline.errors import RescueError
from pipeline.step import LABEL_STUDIO, Inputs, State, Step, StepDetail
from pipeline.corpus.state import (StepRun, file_sha, fingerprint, last_done, last_done_with, read_state, state_path,
                                   write_state)
from pipeline.corpus.stored import Kind, accounts, load_stored
from pipeline.preannotate.drafts import drafts_path
from pipeline.row_anchor import MIN_IOU
from pipeline.store import sha256_json

PUSHED_SETTINGS = {"schema_file", "context_rows", "media_url"}


class PushDetail(StepDetail):
    """What push keeps: the projects it made (title -> [project id, tasks]) and for whom."""

    projects: dict[str, tuple[int, int]] = {}
    annotators: tuple[str, ...] = ()
    imported: int = 0


class ApplyDetail(StepDetail):
    """What applying a stored sample export keeps: what it applied, or (interrupted) the sessions left to do."""

    applied: ApplySummary | None = None
    unfinished: tuple[str, ...] = ()


class PullDetail(StepDetail):
    """What pull keeps: the newest snapshot, the exports' digest it was made from, and how its rows were placed."""

    snapshot: str = ""
    digests: dict[str, str] = {}  # snapshot -> digest of the exports it holds
    reanchored: int = 0
    unplaced: int = 0
    reanchored_detail: tuple[str, ...] = ()
    same_parse: str = ""  # the parse inputs an unchanged export was found to give the same records with


class AdjudicationPullDetail(StepDetail):
    """Where the adjudicators' answers went, and their sha256."""

    answers: str = ""
    answers_sha256: str = ""


def push_inputs(ctx: CorpusContext) -> Inputs:
    media = {sid: session_video(ctx.project, sid) for sid in ctx.rows}
    drafts = {sid: file_sha(drafts_path(ctx.project.build, sid)) for sid in ctx.rows}  # new drafts push again
    settings = ctx.settings.annotate.model_dump(mode="json", include=PUSHED_SETTINGS)
    return Inputs("push", PUSH.version, dict(rows=ctx.rows, media=media, schema=ctx.schema_sha, drafts=drafts,
                                             settings=settings), ("annotate",))


def push_fingerprint(ctx: CorpusContext) -> str:
    return push_inputs(ctx).fingerprint()


def push_out_of_date(ctx: CorpusContext) -> str | None:
    """Why push must run against the server, or None when its inputs are those of its last run."""
    return None if last_done(ctx.project, "push", push_fingerprint(ctx)) else "rows or push settings changed"


def _projects_unchanged(server: ServerSession, recorded: dict[str, tuple[int, int]]) -> bool:
    """The projects push made last time (title -> id, tasks) are still there with the same number of tasks."""
    if not recorded:
        return False
    for title, (project_id, tasks) in recorded.items():
        info = server.client.find_project(title)
        if info is None or info.id != project_id or info.task_number != tasks:
            return False
    return True


def push_roster(ctx: CorpusContext, server: ServerSession) -> tuple[str, ...]:
    """Who gets annotation projects in this build (see the module's doc)."""
    roster = set(counted_annotators(ctx.project, ctx.agreement.annotators, ctx.agreement.adjudicators))
    if ctx.settings.build.sample_annotations:
        stored = load_stored("annotation")
        if any(export.sessions() & set(ctx.rows) for export in stored.values()):
            roster = (roster | accounts(stored)) - accounts(load_stored("adjudication"))
    return tuple(sorted(roster))


NOTHING_CHANGED = "nothing can have changed on the server"


def push_step(ctx: CorpusContext) -> None:
    server = ctx.server
    if server is None:  # the server step found nothing there that can have changed
        ctx.record("push", "up to date", NOTHING_CHANGED, [drafts_origin(ctx.project.build, tuple(ctx.rows))])
        return
    inputs = push_inputs(ctx)
    roster = push_roster(ctx, server)
    done = PushDetail.of(last_done_with(ctx.project, inputs))
    if done is not None and done.annotators == roster and _projects_unchanged(server, done.projects):
        guards = guards_of(ctx.project, server.client, ctx.agreement.annotators, ctx.agreement.adjudicators)
        ctx.record("push", "up to date", f"every row already has its task in the projects of {len(roster)} "
                                         "annotator(s)", [drafts_origin(ctx.project.build, tuple(ctx.rows)),
                                                          *(stranger_line(s) for s in guards.strangers)])
        return
    summary = push_rows(ctx.project, server.connection, settings=ctx.settings.annotate, schema=ctx.schema,
                        annotators=roster)
    projects = {p.title: (p.project_id, server.client.project(p.project_id).task_number) for p in summary.projects}
    ctx.done("push", inputs, PushDetail(projects=projects, annotators=roster, imported=summary.imported))
    parts = ", ".join(f"{scenario} {count}" for scenario, count in summary.scenario_imported().items()) or "none"
    notes = [f"{p.title}: {p.stale} task(s) whose row no longer exists (pull re-anchors their annotations by "
             "time overlap, or quarantines them with the reason)" for p in summary.projects if p.stale]
    notes += [f"{p.title}: {p.duplicates} duplicate task(s) for one row (see `rescue push --full-check`)"
              for p in summary.projects if p.duplicates]
    notes += [drafts_origin(ctx.project.build, tuple(ctx.rows)), *draft_notes(summary), *push_notes(summary)]
    if not roster:
        notes.append("no annotators yet: add them with `rescue annotators add EMAIL...`")
    if summary.sessions_without_rows:
        notes.append(f"no rows yet: {', '.join(summary.sessions_without_rows)}")
    already = sum(p.already_present for p in summary.projects)
    ctx.record("push", "ran", f"{summary.imported} task(s) imported ({parts}), {already} already there, in the own "
                              f"projects of {len(roster)} annotator(s) -> {server.connection.url}/projects/", notes)


def _apply_notes(summary: ApplySummary, record: str) -> list[str]:
    notes = []
    if summary.reanchored:  # one line: the per-row pairs are kept in the step's record
        lowest = min(p.iou for p in summary.reanchored)
        notes.append(f"{len(summary.reanchored)} row(s) re-anchored by time overlap (lowest IoU {lowest:.2f}); "
                     f"each pair is in {record}")
    notes += [f"NOT applied: {u.annotations} stored {summary.kind}(s) of row {u.stored_row}: {u.reason}"
              for u in summary.unplaced]
    notes += [f"{session}: {why}" for session, why in sorted(summary.skipped.items())]
    return notes


def apply_step(ctx: CorpusContext, server: ServerSession, exports: Sequence[ProjectExport], kind: Kind) -> int:
    """Re-create the stored sample export of `kind` where the server holds none; returns annotations created."""
    step = "sample-annotations" if kind == "annotation" else "sample-adjudications"
    if not ctx.settings.build.sample_annotations:
        ctx.record(step, "skipped", "sample_annotations = false in [tool.rescue.build]")
        return 0
    stored = load_stored(kind)
    catalog = set(ctx.rows)
    if not any(export.sessions() & catalog for export in stored.values()):
        ctx.record(step, "not needed", "no session of the stored sample export is in the catalog")
        return 0
    previous = read_state(ctx.project, step)
    interrupted = ApplyDetail.of(previous) if previous and previous.status == "failed" else None
    resume = set(interrupted.unfinished) if interrupted else set()

    def started(sessions: set[str]) -> None:  # an interrupted apply is resumed (without duplicates) next time
        unfinished = ApplyDetail(unfinished=tuple(sorted(sessions | resume)))
        write_state(ctx.project, StepRun(step=step, status="failed", error="interrupted while applying",
                                         detail=unfinished.model_dump(mode="json", include={"unfinished"})))

    summary = apply_stored_export(ctx.project, server, exports, stored, catalog, resume, kind=kind, on_start=started)
    ctx.done(step, "", ApplyDetail(applied=summary))
    notes = _apply_notes(summary, ctx.project.rel_or_abs(state_path(ctx.project, step)))
    if summary.created or summary.sessions:
        ctx.record(step, "ran", f"{summary.created} stored {kind}(s) re-created on {len(summary.sessions)} sample "
                                f"session(s) ({len(summary.reanchored)} re-anchored, {len(summary.unplaced)} rows "
                                f"not placed)", notes)
    else:
        ctx.record(step, "up to date", "nothing to apply", notes)
    return summary.created


def _parsed_with(snapshot: Path) -> object:
    """The parse inputs a snapshot records (`parsed_with.json`); None when it has none or it is unreadable."""
    from pipeline.annotate.pull import INPUTS_FILE

    try:
        return json.loads((snapshot / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a snapshot from before parsed_with.json: parsed again once


def _same_guards(snapshot: Path, counted: tuple[str, ...], accept_deleted: bool) -> bool:
    """The snapshot counted the same roster, and nothing it keeps waits for the loss `accept_deleted` accepts."""
    try:
        summary = json.loads((snapshot / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if summary.get("counted") != list(counted):
        return False
    return not (accept_deleted and any(k.get("kind") != "changed" for k in summary.get("kept") or ()))


def sample_annotations_step(ctx: CorpusContext) -> None:
    """Re-create the stored sample annotations where the server holds none (the demo's data)."""
    if ctx.server is None:
        ctx.record("sample-annotations", "up to date", NOTHING_CHANGED)
        return
    if apply_step(ctx, ctx.server, annotation_exports_of(ctx), "annotation"):
        ctx.exports = annotation_exports(ctx.server, ctx)


def annotation_exports_of(ctx: CorpusContext) -> list[ProjectExport]:
    """The annotation projects' exports, fetched once per build (again after stored annotations landed)."""
    assert ctx.server is not None
    if ctx.exports is None:
        ctx.exports = annotation_exports(ctx.server, ctx)
    if not ctx.exports:
        raise RescueError(f"Label Studio at {ctx.server.connection.url} has no RESCUE annotation project",
                          "check that the catalog's sessions have rows (`rescue status`) and add the annotators "
                          "(`rescue annotators add EMAIL...`), then build again")
    return ctx.exports


def pull_step(ctx: CorpusContext) -> str | None:
    """A new snapshot unless the newest one was parsed from the same exports with the same rows, participants
    and schemas (rows re-cut and cut back leave the exports as they were: the parse must still run again)."""
    from pipeline.annotate.parse import parse_inputs
    from pipeline.annotate.pull import ExportKey, snapshot_from_exports

    server = ctx.server
    if server is None:
        ctx.record("pull", "up to date", NOTHING_CHANGED)
        return None
    exports = annotation_exports_of(ctx)
    digest = combined_digest(export_map(exports))
    inputs = parse_inputs(ctx.project)
    guards = guards_of(ctx.project, server.client, ctx.agreement.annotators, ctx.agreement.adjudicators)
    accept = ctx.settings.annotate.accept_deleted
    files = snapshot_files(ctx.project)
    previous = PullDetail.of(read_state(ctx.project, "pull")) or PullDetail()
    damage = snapshot_damage(files[-1]) if files else None
    latest = files[-1].parent if files and damage is None else None
    inputs_sha = sha256_json(inputs)
    if latest is not None:
        latest_digest = previous.digests.get(latest.name) or snapshot_digest(latest)
        detail = previous if previous.snapshot == latest.name else PullDetail()
        same_inputs = (_parsed_with(latest) == json.loads(json.dumps(inputs))
                       or detail.same_parse == inputs_sha)  # parsed with these inputs to the same records
        if latest_digest == digest and same_inputs and _same_guards(latest, guards.counted, accept):
            ctx.done("pull", digest, detail.model_copy(update={"snapshot": latest.name,
                                                               "digests": {latest.name: digest}}))
            ctx.record("pull", "up to date", f"annotations and rows unchanged since snapshot {latest.name}")
            return latest.name
    summary = snapshot_from_exports(
        ctx.project, [(ExportKey(e.scenario, e.annotator, e.project_id), e.data) for e in exports],  # type: ignore[arg-type]
        guards.users, schema=ctx.schema, source=server.connection.url, guards=guards, accept_deleted=accept,
        same_as=latest)
    if summary.unchanged:  # new tasks or drafts, the same answers: the newest snapshot stands (no identical copy)
        kept = previous if previous.snapshot == summary.snapshot else PullDetail()
        ctx.done("pull", digest, kept.model_copy(update={"snapshot": summary.snapshot,
                                                         "digests": {summary.snapshot: digest},
                                                         "same_parse": inputs_sha}))
        ctx.record("pull", "up to date", f"the server's exports changed (tasks or drafts), its annotations did not: "
                                         f"no new snapshot, {summary.snapshot} stands ({summary.records} record(s))")
        return summary.snapshot
    reanchored = sum(p.reanchored for p in summary.projects)
    unplaced = sum(p.unplaced for p in summary.projects)
    ctx.done("pull", digest, PullDetail(snapshot=summary.snapshot, digests={summary.snapshot: digest},
                                        reanchored=reanchored, unplaced=unplaced,
                                        reanchored_detail=tuple(line for p in summary.projects
                                                                for line in p.reanchored_detail)))
    notes = []
    if damage is not None:  # snapshots are immutable: the damaged one stays as it is, a newer one takes its place
        notes.append(f"{damage}: left as it is, a new snapshot exported in its place")
    if reanchored or unplaced:
        notes.append(f"rows re-cut since annotation: {reanchored} annotation(s) re-anchored on the row they overlap "
                     f"most (IoU >= {MIN_IOU}), {unplaced} not placed (reasons in {summary.folder}/quarantine.jsonl; "
                     f"each re-anchored pair in {ctx.project.rel_or_abs(state_path(ctx.project, 'pull'))})")
    if summary.quarantined:
        notes.append(f"{summary.quarantined} field(s) quarantined: see {summary.folder}/quarantine.jsonl")
    notes += pull_notes(summary)
    annotations = summary.annotations
    ctx.record("pull", "ran", f"snapshot {summary.snapshot}: {annotations} annotation(s) -> {summary.records} "
                              f"record(s) in {summary.folder}/", notes)
    return summary.snapshot


def pull_check(ctx: CorpusContext) -> tuple[State, str]:
    """The server's content (its exports), then whether the newest snapshot is there and intact."""
    state, reason = by_server("pull")(ctx)
    if state == "done" and (why := pull_out_of_date(ctx)):
        return "stale", why
    return state, reason


def pull_out_of_date(ctx: CorpusContext) -> str | None:
    """Why pull must export again: no snapshot yet, or the newest one is damaged (snapshots are immutable,
    so only a new export heals it)."""
    files = snapshot_files(ctx.project)
    if not files:
        return "no annotation snapshot yet"
    damage = snapshot_damage(files[-1])
    return f"the newest annotation snapshot is damaged ({damage})" if damage else None


def snapshot_damage(annotations: Path) -> str | None:
    """Why the snapshot file `annotations` is not what its pull wrote (cut or edited), or None when intact."""
    from pipeline.agreement.inputs import check_snapshot
    from pipeline.errors import RescueError

    try:
        check_snapshot(annotations)
    except RescueError as exc:
        return exc.message
    return None


def annotation_exports(server: ServerSession, ctx: CorpusContext) -> list[ProjectExport]:
    return fetch_annotation_exports(server.client, ctx.schema)


def adjudication_round_trip(ctx: CorpusContext, server: ServerSession, *, push: bool,
                            apply_stored: bool = True) -> tuple[bool, list[str]]:
    """Push the queue (`push`: it was just rewritten), apply stored adjudications, pull new answers.

    Returns whether anything changed and notes. The answers are pulled only when the adjudication
    projects' content, or the rows and schemas the answers are parsed with, differ from the last pull
    (a pull always writes a new answers file)."""
    from pipeline.agreement.gold import QueueItem
    from pipeline.agreement.queue_labelstudio import pull_adjudications, push_queue
    from pipeline.annotate.parse import parse_inputs
    from pipeline.store import read_jsonl

    notes: list[str] = []
    changed = False
    if push:
        items = read_jsonl(layout.adjudication_dir(ctx.project) / "queue.jsonl", QueueItem)
        notes += push_queue(ctx.project, ctx.agreement, items, server.connection)
    exports = fetch_exports(server.client, adjudication_titles(ctx.schema))
    if exports and apply_stored and apply_step(ctx, server, exports, "adjudication"):
        exports = fetch_exports(server.client, adjudication_titles(ctx.schema))
    digest = fingerprint("adjudication-pull", "2", exports=combined_digest(export_map(exports)),
                         parsed_with=parse_inputs(ctx.project)) if exports else ""
    previous = read_state(ctx.project, "adjudication-pull")
    answers = adjudication_answers(ctx.project)
    if exports and (previous is None or previous.fingerprint != digest or answers is None):
        answers = pull_adjudications(ctx.project, ctx.agreement, server.connection)
        notes.append(f"adjudicators' answers -> {ctx.project.rel_or_abs(answers)}")
        changed = True
    if exports:
        ctx.done("adjudication-pull", digest, AdjudicationPullDetail(
            answers=ctx.project.rel_or_abs(answers) if answers else "",
            answers_sha256=file_sha(answers) if answers else ""))
    return changed, notes


LS = (LABEL_STUDIO,)
# push version "3": tasks record the draft they show in their meta (pipeline/annotate/drafted.py)
PUSH = Step("push", push_step, after=("server",), settings=("annotate",), sources="annotation_schemas/",
            outputs=("Label Studio projects and tasks", "build/labelstudio/media/"),
            summary="rows -> tasks in every annotator's own project (matched by row id, never duplicated)",
            version="3", needs=LS, after_sessions=True, server_check=push_out_of_date,
            check=by_server("push", push_inputs))
SAMPLE_ANNOTATIONS = Step(
    "sample-annotations", sample_annotations_step, after=("push",), settings=("build",),
    sources="pipeline/sample/annotations/", outputs=("Label Studio annotations",),
    summary="re-create the stored sample annotations where the server holds none (re-anchored by time overlap)",
    needs=LS, check=stored_sample("sample-annotations", "annotation"))
PULL = Step("pull", pull_step, after=("sample-annotations",), settings=("annotate",), sources="Label Studio exports",
            outputs=("build/annotations/<snapshot>/",),
            summary="a new immutable snapshot when the exports or the rows changed (re-anchoring, quarantine)",
            version="1", needs=LS, server_check=pull_out_of_date, check=pull_check)
