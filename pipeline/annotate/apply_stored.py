"""Re-create the stored sample annotations on the current server, for sessions it holds none for.

A session qualifies when it is in the catalog, its rows have tasks in the scenario's projects, and none
of those projects holds an annotation on any of its tasks (live annotations always win over the stored
ones), or when an earlier apply to it was interrupted (`resume`): then only the (task, account) pairs not
yet there are created, so a re-run never duplicates. Each stored annotation lands in its account's own
project (independent labels); where that account has none, in a project every account answers in (the
adjudication projects, or the shared annotation project of older pushes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import Field

from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.roster import add_to_roster
from pipeline.annotate.build_session import ProjectExport, ServerSession, held_annotations
from pipeline.annotate.stored import ApplyPlan, Placement, StoredExport, Unplaced, of_accounts, plan_apply, span_of
from pipeline.errors import RescueError
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


def _session(row_id: str) -> str:
    return (span_of(row_id) or ("",))[0]


def _targets(saved: StoredExport, exports: Sequence[ProjectExport], kind: str) -> list[tuple[ProjectExport, set[str]]]:
    """Which project receives which accounts' stored annotations: their own, else the shared one."""
    emails = {a.email for task in saved.tasks for a in task.annotations}
    own = {e.annotator: e for e in exports if e.annotator is not None}
    shared = next((e for e in exports if e.annotator is None), None)
    homeless = emails - set(own)
    if homeless and shared is None:
        raise RescueError(f"no {kind} project of {', '.join(sorted(homeless))} for {saved.scenario} on the server, "
                          "so their stored annotations have nowhere to go",
                          "run `rescue push` (it makes every annotator's projects), then build again")
    targets = [(own[email], {email}) for email in sorted(emails & set(own))]
    return targets + ([(shared, homeless)] if homeless and shared is not None else [])


def apply_stored_export(project: Project, session: ServerSession, exports: Sequence[ProjectExport],
                        stored: Mapping[str, StoredExport], catalog: set[str], resume: set[str], *, kind: str,
                        on_start: Callable[[set[str]], None] = lambda sessions: None) -> ApplySummary:
    client = session.client
    users = client.users()
    chosen: dict[str, set[str]] = {}
    skipped: dict[str, str] = {}
    for scenario, saved in sorted(stored.items()):
        wanted = saved.sessions() & catalog
        mine = [e for e in exports if e.scenario == scenario]
        if not mine:
            skipped.update({s: f"no {kind} project for {scenario} on the server" for s in wanted})
            continue
        with_tasks: set[str] = set()
        held: set[str] = set()
        for export in mine:
            task_of_row, sessions, _ = held_annotations(export.tasks, users)
            with_tasks |= {_session(r) for r in task_of_row}
            held |= sessions
        for session_id in sorted(wanted):
            if session_id not in with_tasks:
                skipped[session_id] = f"none of its rows has a task in the {kind} projects"
            elif session_id in held and session_id not in resume:
                skipped[session_id] = f"the server holds {kind}s for it (live work wins over the stored export)"
            else:
                chosen.setdefault(scenario, set()).add(session_id)
    everyone = {s for sessions in chosen.values() for s in sessions}
    if not everyone:
        return ApplySummary(kind=kind, skipped=skipped)
    plans: list[ApplyPlan] = []
    for scenario, sessions in sorted(chosen.items()):
        for export, emails in _targets(stored[scenario], [e for e in exports if e.scenario == scenario], kind):
            task_of_row, _, pairs = held_annotations(export.tasks, users)
            rows = {r: t for r, t in task_of_row.items() if _session(r) in sessions}
            plans.append(plan_apply(of_accounts(stored[scenario], emails), sessions, rows, pairs))
    on_start(everyone)
    emails = sorted({email for plan in plans for _, email, _ in plan.creates})
    ids = {email: user_id for user_id, email in users.items()}
    missing = [email for email in emails if email not in ids]
    role = "adjudicator" if kind == "adjudication" else "annotator"
    if missing:
        ids.update({account.email: account.user_id
                    for account in add_annotators(project, session.connection, missing, role=role)})
    add_to_roster(project, [(email, ids[email]) for email in emails], role)  # the demo's accounts count
    created = 0
    for plan in plans:
        for task_id, email, result in plan.creates:
            client.create_annotation(task_id, result, completed_by=ids[email])
            created += 1
    return ApplySummary(
        kind=kind, sessions=tuple(sorted(everyone)), created=created, already=sum(plan.already for plan in plans),
        reanchored=tuple(sorted({p for plan in plans for p in plan.placements if p.stored_row != p.row_id},
                                key=lambda p: p.stored_row)),
        unplaced=_merged_unplaced(u for plan in plans for u in plan.unplaced), skipped=skipped)


def _merged_unplaced(found: Iterable[Unplaced]) -> tuple[Unplaced, ...]:
    """One line per stored row: each annotator's project reports the same row with its own annotations."""
    merged: dict[str, Unplaced] = {}
    for item in found:
        before = merged.get(item.stored_row)
        merged[item.stored_row] = item if before is None else before.model_copy(
            update={"annotations": before.annotations + item.annotations})
    return tuple(merged[row] for row in sorted(merged))
