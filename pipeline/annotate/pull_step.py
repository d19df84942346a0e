"""The `pull` step: a new immutable annotation snapshot when the server's exports, or the rows and schemas they
are parsed with, changed (re-anchoring moved rows, quarantining what cannot be placed)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.agreement.inputs import snapshot_files
from pipeline.annotate.build_session import (
    ProjectExport,
    ServerSession,
    combined_digest,
    export_map,
    fetch_annotation_exports,
    snapshot_digest,
)
from pipeline.annotate.guards import guards_of
from pipeline.annotate.integrity_notes import pull_notes
from pipeline.annotate.server_step import LS, NOTHING_CHANGED, by_server
from pipeline.errors import RescueError
from pipeline.row_anchor import MIN_IOU
from pipeline.step import Context, State, Step, StepDetail
from pipeline.store import sha256_json


class PullDetail(StepDetail):
    """What pull keeps: the newest snapshot, the exports' digest it was made from, and how its rows were placed."""

    snapshot: str = ""
    digests: dict[str, str] = {}  # snapshot -> digest of the exports it holds
    reanchored: int = 0
    unplaced: int = 0
    reanchored_detail: tuple[str, ...] = ()
    same_parse: str = ""  # the parse inputs an unchanged export was found to give the same records with


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


def annotation_exports_of(ctx: Context) -> list[ProjectExport]:
    """The annotation projects' exports, fetched once per build (again after stored annotations landed)."""
    assert ctx.build.server is not None
    if ctx.build.exports is None:
        ctx.build.exports = annotation_exports(ctx.build.server, ctx)
    if not ctx.build.exports:
        raise RescueError(f"Label Studio at {ctx.build.server.connection.url} has no RESCUE annotation project",
                          "check that the catalog's sessions have rows (`rescue status`) and add the annotators "
                          "(`rescue annotators add EMAIL...`), then build again")
    return ctx.build.exports


def pull_step(ctx: Context) -> str | None:
    """A new snapshot unless the newest one was parsed from the same exports with the same rows, participants
    and schemas (rows re-cut and cut back leave the exports as they were: the parse must still run again)."""
    from pipeline.annotate.parse import parse_inputs
    from pipeline.annotate.pull import ExportKey, snapshot_from_exports

    server = ctx.build.server
    if server is None:
        ctx.record("pull", "up to date", NOTHING_CHANGED)
        return None
    exports = annotation_exports_of(ctx)
    digest = combined_digest(export_map(exports))
    inputs = parse_inputs(ctx.project)
    guards = guards_of(ctx.project, server.client, ctx.agreement.annotators, ctx.agreement.adjudicators)
    accept = ctx.settings.annotate.accept_deleted
    files = snapshot_files(ctx.project)
    previous = PullDetail.of(ctx.last_run("pull")) or PullDetail()
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
                     f"each re-anchored pair in {ctx.project.rel_or_abs(ctx.state_file('pull'))})")
    if summary.quarantined:
        notes.append(f"{summary.quarantined} field(s) quarantined: see {summary.folder}/quarantine.jsonl")
    notes += pull_notes(summary)
    annotations = summary.annotations
    ctx.record("pull", "ran", f"snapshot {summary.snapshot}: {annotations} annotation(s) -> {summary.records} "
                              f"record(s) in {summary.folder}/", notes)
    return summary.snapshot


def pull_check(ctx: Context) -> tuple[State, str]:
    """The server's content (its exports), then whether the newest snapshot is there and intact."""
    state, reason = by_server("pull")(ctx)
    if state == "done" and (why := pull_out_of_date(ctx)):
        return "stale", why
    return state, reason


def pull_out_of_date(ctx: Context) -> str | None:
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

    try:
        check_snapshot(annotations)
    except RescueError as exc:
        return exc.message
    return None


def annotation_exports(server: ServerSession, ctx: Context) -> list[ProjectExport]:
    return fetch_annotation_exports(server.client, ctx.schema)


PULL = Step("pull", pull_step, after=("push",), settings=("annotate",), sources="Label Studio exports",
            outputs=("build/annotations/<snapshot>/",),
            summary="a new immutable snapshot when the exports or the rows changed (re-anchoring, quarantine)",
            version="1", needs=LS, server_check=pull_out_of_date, check=pull_check)
