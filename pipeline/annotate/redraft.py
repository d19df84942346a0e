"""Drafts on tasks that already exist: a re-push with new drafts replaces the prediction of every task nobody
has annotated yet, and never touches a task that has an annotation (submitted or skipped).

An annotated task keeps the prediction it had: that is the draft its annotator saw and started from, and
its meta records it for acceptance; replacing it would rewrite what the annotation is measured against.
Label Studio pre-fills only the predictions whose model_version is the project's, so the project's
version is set to the model version most unannotated tasks carry (the transcript's only when no model
drafted any); tasks drafted by another version (say, a session that has no drafts file next to one that
has) are counted as `hidden` and named by push.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.annotate.drafted import META_KEY, TRANSCRIPT_VERSION, ShownDraft, SessionModelDrafts, shown_draft_of, task_draft
from pipeline.annotate.labelstudio import Client, ProjectInfo, TaskPredictions
from pipeline.annotate.results import TaskFacts
from pipeline.annotate.tasks import SessionRows
from pipeline.schema import AnnotationSchema


@dataclass(frozen=True)
class PlannedDraft:
    draft: ShownDraft
    entities: tuple[str, ...]


@dataclass(frozen=True)
class DraftPlan:
    """The draft every pushed row shows (row id -> draft)."""

    rows: dict[str, PlannedDraft]
    refused: int  # model fields the schema refused (the row keeps the transcript's value there)
    model_drafts: bool  # whether any pushed session has a drafts file


def plan_drafts(schema: AnnotationSchema, sessions: Sequence[SessionRows],
                drafts: dict[str, SessionModelDrafts]) -> DraftPlan:
    rows: dict[str, PlannedDraft] = {}
    refused = 0
    for session in sessions:
        entry = session.entry
        entities = schema.entities(entry.scenario, entry.participants, therapist=entry.therapist)
        facts = TaskFacts(entry.scenario, entities, len(session.rows))
        model = drafts.get(session.session_id)
        for row in session.rows:
            draft, bad = task_draft(schema, row, facts, model.rows.get(row.row_id) if model else None,
                                    model.model_version if model else None, model.sources if model else None)
            rows[row.row_id] = PlannedDraft(draft, entities)
            refused += bad
    return DraftPlan(rows=rows, refused=refused, model_drafts=bool(drafts))


@dataclass(frozen=True)
class Redraft:
    replaced: int  # unannotated tasks whose prediction this push replaced
    kept_annotated: int  # annotated tasks whose draft differs from the new one: left as they are
    version: str  # the project's model_version after this push
    hidden: int  # unannotated tasks whose draft has another version than the project's (not pre-filled)


def _in_step(task: TaskPredictions, wanted: ShownDraft) -> bool:
    return shown_draft_of(task.meta) == wanted and [v for _, v in task.predictions] == [wanted.model_version]


def _current_version(task: TaskPredictions) -> str:
    shown = shown_draft_of(task.meta)
    if shown is not None:
        return shown.model_version
    return task.predictions[-1][1] if task.predictions else ""


def project_version(versions: Counter[str]) -> str:
    """A model's version over the transcript's (someone ran preannotate to have them shown), then the one most
    unannotated tasks carry, then by name."""
    if not versions:
        return ""
    return max(versions, key=lambda v: (v != TRANSCRIPT_VERSION, versions[v], v))


def refresh_drafts(client: Client, info: ProjectInfo, schema: AnnotationSchema, plan: DraftPlan) -> Redraft:
    """Bring every unannotated task's prediction in step with the plan; set the project's model_version."""
    replaced = kept = 0
    versions: Counter[str] = Counter()
    for task in client.task_predictions(info.id):
        planned = plan.rows.get(str(task.meta.get("row_id", "")))
        if task.annotated:
            if planned is not None and shown_draft_of(task.meta) != planned.draft:
                kept += 1
            continue
        if planned is None:  # a row of a session not pushed now, or one that no longer exists: left alone
            if _current_version(task):
                versions[_current_version(task)] += 1
            continue
        if not _in_step(task, planned.draft):
            wanted = planned.draft.prediction(schema, planned.entities)
            if wanted is not None:
                meta = {**task.meta, META_KEY: planned.draft.meta()}
                client.replace_prediction(task.task_id, [pid for pid, _ in task.predictions], wanted, meta)
                replaced += 1
        versions[planned.draft.model_version] += 1
    version = project_version(versions) or info.model_version
    if version and version != info.model_version:
        client.update_project(info.id, model_version=version)  # Label Studio pre-fills this version only
    hidden = sum(count for v, count in versions.items() if v != version)
    return Redraft(replaced=replaced, kept_annotated=kept, version=version, hidden=hidden)
