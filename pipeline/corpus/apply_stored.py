"""Re-create the stored sample annotations on the current server, for sessions it holds none for.

A session qualifies when it is in the catalog, its rows have tasks in the project, and the project
holds no annotation on any of its tasks (live annotations always win over the stored ones), or when
an earlier apply to it was interrupted (`resume`): then only the (task, account) pairs not yet there
are created, so a re-run never duplicates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import Field

from pipeline.annotate.accounts import add_annotators
from pipeline.corpus.labelstudio_steps import ProjectExport, ServerSession, held_annotations
from pipeline.corpus.stored import Placement, StoredExport, Unplaced, plan_apply, span_of
from pipeline.project import Project
from pipeline.records import Record


class ApplySummary(Record):
    kind: str
    sessions: tuple[str, ...] = Field(default=(), description="sessions the stored annotations were applied to")
    created: int = 0
    already: int = Field(default=0, description="stored annotations whose account had already annotated that task")
    reanchored: tuple[Placement, ...] = Field(default=(), description="stored rows placed on a moved row (IoU < 1)")
    unplaced: tuple[Unplaced, ...] = ()
    skipped: dict[str, str] = Field(default_factory=dict, description="session -> why nothing was applied to it")


def apply_stored_export(project: Project, session: ServerSession, exports: Mapping[str, ProjectExport],
                        stored: Mapping[str, StoredExport], catalog: set[str], resume: set[str], *, kind: str,
                        on_start: Callable[[set[str]], None] = lambda sessions: None) -> ApplySummary:
    client = session.client
    users = client.users()
    chosen: dict[str, set[str]] = {}
    rows_of: dict[str, dict[str, int]] = {}
    held_pairs: dict[str, set[tuple[int, str]]] = {}
    skipped: dict[str, str] = {}
    for scenario, saved in sorted(stored.items()):
        wanted = saved.sessions() & catalog
        export = exports.get(scenario)
        if export is None:
            skipped.update({s: f"no {kind} project for {scenario} on the server" for s in wanted})
            continue
        task_of_row, held, pairs = held_annotations(export.tasks, users)
        with_tasks = {(span_of(r) or ("",))[0] for r in task_of_row}
        for session_id in sorted(wanted):
            if session_id not in with_tasks:
                skipped[session_id] = f"none of its rows has a task in the {kind} project"
            elif session_id in held and session_id not in resume:
                skipped[session_id] = f"the server holds {kind}s for it (live work wins over the stored export)"
            else:
                chosen.setdefault(scenario, set()).add(session_id)
        mine = chosen.get(scenario, set())
        rows_of[scenario] = {r: t for r, t in task_of_row.items() if (span_of(r) or ("",))[0] in mine}
        held_pairs[scenario] = pairs
    everyone = {s for sessions in chosen.values() for s in sessions}
    if not everyone:
        return ApplySummary(kind=kind, skipped=skipped)
    on_start(everyone)
    plans = {scenario: plan_apply(stored[scenario], sessions, rows_of[scenario], held_pairs[scenario])
             for scenario, sessions in chosen.items()}
    emails = sorted({email for plan in plans.values() for _, email, _ in plan.creates})
    ids = {email: user_id for user_id, email in users.items()}
    missing = [email for email in emails if email not in ids]
    if missing:
        ids.update({account.email: account.user_id for account in add_annotators(project, session.connection, missing)})
    created = 0
    for plan in plans.values():
        for task_id, email, result in plan.creates:
            client.create_annotation(task_id, result, completed_by=ids[email])
            created += 1
    return ApplySummary(
        kind=kind, sessions=tuple(sorted(everyone)), created=created,
        already=sum(plan.already for plan in plans.values()),
        reanchored=tuple(p for plan in plans.values() for p in plan.placements if p.stored_row != p.row_id),
        unplaced=tuple(u for plan in plans.values() for u in plan.unplaced), skipped=skipped)
