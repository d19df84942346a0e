"""The stored annotation export of the sample sessions, and re-creating it on the current server.

`pipeline/sample/annotations/` holds, per scenario, the full JSON export of the annotation project
(`<scenario>.json`) and of the adjudication project (`<scenario>.adjudication.json`), made once through
a real server by `python -m pipeline.sample.record_annotations`, plus `recording.json` (how it was made,
and the account id -> email map that `completed_by` needs). Applying it re-creates every stored
annotation on the task of the same row (matched by row id) as the same account. A row id that is gone
(re-segmentation moved the row) is re-anchored to the row of the same session with the largest time
overlap, IoU >= 0.5; what cannot be re-anchored is reported, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from typing import Any, Literal

from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.row_anchor import MIN_IOU, Placement, anchor, iou, span_of  # noqa: F401 - also imported from here

Kind = Literal["annotation", "adjudication"]
FORMAT = "rescue-stored-annotations-1"
RECORDING = "recording.json"


def default_folder() -> Traversable:
    return resources.files("pipeline.sample").joinpath("annotations")


def export_name(scenario: str, kind: Kind) -> str:
    return f"{scenario}.json" if kind == "annotation" else f"{scenario}.adjudication.json"


@dataclass(frozen=True)
class StoredAnnotation:
    email: str
    result: list[dict[str, Any]]
    updated_at: str
    annotation_id: int


@dataclass(frozen=True)
class StoredTask:
    session_id: str
    row_id: str
    annotations: tuple[StoredAnnotation, ...]


@dataclass(frozen=True)
class StoredExport:
    scenario: str
    kind: Kind
    tasks: tuple[StoredTask, ...]

    def sessions(self) -> set[str]:
        return {task.session_id for task in self.tasks if task.annotations}


def tasks_of_export(data: Sequence[Mapping[str, Any]], users: Mapping[int, str], *, where: str) -> list[StoredTask]:
    """Tasks of a Label Studio JSON export with their (non-cancelled) annotations as account emails."""
    tasks = []
    for task in data:
        meta, values = task.get("meta") or {}, task.get("data") or {}
        row_id, session_id = meta.get("row_id") or values.get("row_id"), values.get("session_id")
        if not row_id or not session_id:
            raise RescueError(f"{where}: task {task.get('id')} has no row id or session id",
                              "record the export again with `python -m pipeline.sample.record_annotations`")
        kept = []
        for annotation in task.get("annotations") or []:
            if annotation.get("was_cancelled"):
                continue
            who = annotation.get("completed_by")
            user_id = who.get("id") if isinstance(who, dict) else who
            if user_id not in users:
                raise RescueError(f"{where}: annotation {annotation.get('id')} was made by account {user_id!r}, "
                                  "which the recording's user list does not name",
                                  "record the export again with `python -m pipeline.sample.record_annotations`")
            kept.append(StoredAnnotation(users[user_id], list(annotation.get("result") or []),
                                         str(annotation.get("updated_at", "")), int(annotation.get("id", 0))))
        kept.sort(key=lambda a: (a.updated_at, a.annotation_id))  # re-created in save order: the latest still wins
        tasks.append(StoredTask(str(session_id), str(row_id), tuple(kept)))
    return tasks


def load_stored(kind: Kind, folder: Traversable | None = None) -> dict[str, StoredExport]:
    """scenario -> the stored export of that kind (scenarios without a file are left out)."""
    folder = folder or default_folder()
    recording = folder.joinpath(RECORDING)
    if not recording.is_file():
        return {}
    try:
        meta = json.loads(recording.read_text(encoding="utf-8"))
        users = {int(k): str(v) for k, v in meta["users"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RescueError(f"stored sample annotations: {RECORDING} is unreadable ({exc})",
                          "restore pipeline/sample/annotations/ from git") from exc
    if meta.get("format") != FORMAT:
        raise RescueError(f"stored sample annotations: format {meta.get('format')!r}, expected {FORMAT}",
                          "record the export again with `python -m pipeline.sample.record_annotations`")
    found = {}
    for scenario in meta.get("scenarios", []):
        entry = folder.joinpath(export_name(scenario, kind))
        if not entry.is_file():
            continue
        where = f"pipeline/sample/annotations/{export_name(scenario, kind)}"
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise RescueError(f"{where} is not JSON ({exc})", "restore it from git") from exc
        found[scenario] = StoredExport(scenario, kind, tuple(tasks_of_export(data, users, where=where)))
    return found


def of_accounts(stored: StoredExport, emails: set[str]) -> StoredExport:
    """The same export with only the annotations of `emails` (what one annotator's own project receives)."""
    return StoredExport(stored.scenario, stored.kind, tuple(
        StoredTask(t.session_id, t.row_id, tuple(a for a in t.annotations if a.email in emails)) for t in stored.tasks))


def accounts(stored: Mapping[str, StoredExport]) -> set[str]:
    """Every account with a stored annotation."""
    return {a.email for export in stored.values() for task in export.tasks for a in task.annotations}


# -- placing stored rows on current rows (the matching itself lives in pipeline.row_anchor) -------------------

class Unplaced(Record):
    stored_row: str
    session_id: str
    annotations: int
    reason: str


@dataclass
class ApplyPlan:
    creates: list[tuple[int, str, list[dict[str, Any]]]] = field(default_factory=list)  # task id, email, result
    placements: list[Placement] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)
    already: int = 0  # stored annotations whose account already annotated that task


def plan_apply(stored: StoredExport, sessions: set[str], task_of_row: Mapping[str, int],
               held: set[tuple[int, str]]) -> ApplyPlan:
    """What to create for `sessions`: every stored annotation on the task of its (re-anchored) row,
    unless that account already annotated that task (so an interrupted apply resumes without duplicates)."""
    plan = ApplyPlan()
    for session_id in sorted(sessions):
        tasks = {t.row_id: t for t in stored.tasks if t.session_id == session_id and t.annotations}
        rows = [r for r in task_of_row if (span_of(r) or ("",))[0] == session_id]
        placements, problems = anchor(tasks, rows)
        plan.placements += placements
        plan.unplaced += [Unplaced(stored_row=row, session_id=session_id, annotations=len(tasks[row].annotations),
                                   reason=reason) for row, reason in problems]
        for placement in sorted(placements, key=lambda p: task_of_row[p.row_id]):
            task_id = task_of_row[placement.row_id]
            for annotation in tasks[placement.stored_row].annotations:
                if (task_id, annotation.email) in held:
                    plan.already += 1
                else:
                    plan.creates.append((task_id, annotation.email, annotation.result))
    return plan

