"""Which draft each task shows: a model's drafts (build/preannotate/<session>/drafts.json) over the transcript's.

A task's draft is its Label Studio prediction (pre-filled in the labelling view) and is recorded in the
task's `meta["draft"]` as a `ShownDraft`: the values, which model version drafted each field and the
model's per-field scores. Label Studio's export lists a task's predictions by id only, so the meta is
how acceptance (pipeline/agreement/acceptance.py) later knows what the annotator saw. A field the model
did not draft, or drafted with a value the schema refuses, keeps the transcript's draft (speaker,
target guess, text); drafts for rows that no longer exist are dropped and counted, never pushed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, JsonValue, ValidationError

from pipeline.annotate.results import TaskFacts, decode, encode
from pipeline.errors import RescueError, describe_validation
from pipeline.preannotate.drafts import RowDraft, SessionDrafts, drafts_path
from pipeline.project import Project
from pipeline.records import Record, TranscriptRow
from pipeline.schema import AnnotationSchema

TRANSCRIPT_VERSION = "transcript"  # Label Studio `model_version` of the drafts made from the transcript
META_KEY = "draft"
_FIX = "run `rescue preannotate` for this session again, or delete the file to push the transcript drafts"


class ShownDraft(Record):
    """What one task pre-fills: stored in the task's meta so that acceptance compares against what was shown."""

    model_version: str = Field(description="the prediction's model_version: the session's drafts' (transcript "
                                           "when it has none); which field came from where is in `versions`")
    values: dict[str, JsonValue] = Field(description="field -> drafted value (annotation format)")
    versions: dict[str, str] = Field(description="field -> the model version that drafted it")
    scores: dict[str, float] = Field(default_factory=dict, description="field -> the model's confidence")
    sources: dict[str, str] = Field(default_factory=dict, description="gated backends: field -> where the drafts "
                                    "of this field came from (model, baseline or nothing: not drafted); empty: "
                                    "ungated, every field the model drafted is its own answer")

    def prediction(self, schema: AnnotationSchema, entities: tuple[str, ...]) -> dict[str, Any] | None:
        """The Label Studio prediction: one result entry per control, each with its field's `score`; the
        prediction's own `score` (one number per prediction) is the mean of the field scores."""
        result: list[dict[str, Any]] = []
        for name in (f.name for f in schema.fields if f.name in self.values):
            entries = encode(schema, {name: self.values[name]}, entities)
            if name in self.scores:
                entries = [{**entry, "score": self.scores[name]} for entry in entries]
            result += entries
        if not result:
            return None
        prediction: dict[str, Any] = {"model_version": self.model_version, "result": result}
        if self.scores:
            prediction["score"] = round(sum(self.scores.values()) / len(self.scores), 6)
        return prediction

    def meta(self) -> dict[str, JsonValue]:
        return json.loads(self.model_dump_json())


def shown_draft_of(meta: Mapping[str, Any]) -> ShownDraft | None:
    """The draft a task's meta records; None for tasks pushed before drafts were recorded (or damaged meta)."""
    raw = meta.get(META_KEY)
    if not isinstance(raw, dict):
        return None
    try:
        return ShownDraft.model_validate(raw)
    except ValidationError:
        return None


@dataclass(frozen=True)
class SessionModelDrafts:
    """One session's model drafts, keyed by row id, with the drafts of vanished rows already left out."""

    model_version: str
    rows: dict[str, RowDraft]
    dropped: int  # drafts whose row no longer exists (re-segmentation): never pushed
    path: Path
    sources: dict[str, str]  # gated field -> model | baseline | nothing (empty: ungated drafts)


def load_model_drafts(project: Project, schema: AnnotationSchema, session_id: str,
                      rows: tuple[TranscriptRow, ...]) -> SessionModelDrafts | None:
    """The session's drafts file, checked; None when the session has none (it keeps the transcript drafts)."""
    path = drafts_path(project.build, session_id)
    if not path.is_file():
        return None
    where = project.rel_or_abs(path)
    try:
        drafts = SessionDrafts.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        detail = describe_validation(exc) if isinstance(exc, ValidationError) else str(exc)
        raise RescueError(f"{where}: not a readable drafts file ({detail})", _FIX) from exc
    if drafts.session_id != session_id:
        raise RescueError(f"{where}: holds drafts of session {drafts.session_id!r}, not {session_id!r}", _FIX)
    if drafts.schema_id != schema.id:
        raise RescueError(f"{where}: drafts made for annotation schema {drafts.schema_id}, but push uses {schema.id}",
                          _FIX)
    current = {row.row_id for row in rows}
    kept = {draft.row_id: draft for draft in drafts.rows if draft.row_id in current}
    return SessionModelDrafts(model_version=drafts.model_version, rows=kept,
                              dropped=sum(1 for draft in drafts.rows if draft.row_id not in current), path=path,
                              sources=dict(drafts.sources()))


def transcript_values(schema: AnnotationSchema, row: TranscriptRow, entities: tuple[str, ...]) -> dict[str, JsonValue]:
    """Draft values from the transcript for the fields whose schema entry names a `prefill` attribute."""
    values: dict[str, JsonValue] = {}
    for field in schema.fields:
        if not field.annotated or not field.prefill:
            continue
        raw = getattr(row, field.prefill)
        if field.type == "entity":
            if raw in entities:
                values[field.name] = raw
        elif field.type == "entities":
            picked = [name for name in entities if name in raw and name != row.speaker]
            if picked:
                values[field.name] = picked
        elif field.type == "text":
            values[field.name] = str(raw)
    return values


def _refused(schema: AnnotationSchema, values: dict[str, JsonValue], facts: TaskFacts,
             model_fields: set[str]) -> set[str]:
    """The model's fields the schema refuses for this row (unknown label, a stranger's name, a therapist-only
    field on a client row, ...), read back exactly as pull reads an annotation."""
    problems = decode(schema, encode(schema, values, facts.entities), facts).problems
    bad = {name for name, _ in problems if name in model_fields}
    if any(name is None for name, _ in problems) and schema.speaker_field in model_fields:
        bad.add(schema.speaker_field)  # no readable speaker: the transcript's speaker stands
    return bad


def task_draft(schema: AnnotationSchema, row: TranscriptRow, facts: TaskFacts, model: RowDraft | None,
               model_version: str | None, sources: Mapping[str, str] | None = None) -> tuple[ShownDraft, int]:
    """The draft one row's task shows, and how many of the model's fields were refused (they keep the
    transcript's value). `sources`: the drafts' gates (field -> model | baseline | nothing), recorded as shown."""
    base = transcript_values(schema, row, facts.entities)
    annotated = {f.name for f in schema.fields if f.annotated}
    given = {k: v for k, v in (model.values.items() if model else ()) if k in annotated}
    refused = 0
    for _ in range(3):  # dropping the speaker can make other fields (in)applicable: look again
        bad = _refused(schema, {**base, **given}, facts, set(given)) if given else set()
        if not bad:
            break
        refused += len(bad)
        given = {k: v for k, v in given.items() if k not in bad}
    versions = {name: TRANSCRIPT_VERSION for name in base}
    versions.update({name: str(model_version) for name in given})
    scores = {k: float(v) for k, v in (model.scores.items() if model else ()) if k in given}
    # The prediction is named after the session's drafts even where every field fell back to the transcript:
    # Label Studio pre-fills one model_version per project, so a session's rows must share one.
    version = str(model_version) if model_version is not None else TRANSCRIPT_VERSION
    return ShownDraft(model_version=version, values={**base, **given}, versions=versions, scores=scores,
                      sources=dict(sources or {}) if model_version is not None else {}), refused


def drafts_origin(build_dir: Path, session_ids: list[str] | tuple[str, ...]) -> str:
    """One line for push: which backend and model version the sessions' drafts come from (read from each drafts
    file, as push reads them), and which sessions have none and so show the transcript's drafts."""
    versions: dict[tuple[str, str], list[str]] = {}
    for session_id in sorted(session_ids):
        path = drafts_path(build_dir, session_id)
        try:
            drafts = SessionDrafts.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (OSError, ValueError):
            drafts = None  # push itself names an unreadable drafts file
        key = (drafts.backend, drafts.model_version) if drafts else ("none", TRANSCRIPT_VERSION)
        versions.setdefault(key, []).append(session_id)
    parts = [f"backend {backend}, model version {version}: {len(sessions)} session(s)"
             if backend != "none" else f"no drafts file (the transcript's drafts): {len(sessions)} session(s)"
             for (backend, version), sessions in sorted(versions.items())]
    return "drafts from " + "; ".join(parts) if parts else "no sessions with rows: no drafts"
