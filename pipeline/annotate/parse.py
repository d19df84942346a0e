"""One scenario's full JSON export -> `Annotation` records and quarantined problems.

Checks, in order: the task's schema version is known (else the whole export is refused), its row
still exists in build/transcripts/, the annotation's result fits the label config (SDK
LabelInterface), and every field fits the schema (results.decode: labels, people of the session,
required fields, rows the field applies to). Only the latest annotation of a user on a task counts. In an
annotator's own project (`owner`), an annotation by any other account is quarantined whole: reported,
never merged, since it was not an independent answer of the project's annotator.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, JsonValue, TypeAdapter, ValidationError

from pipeline.annotate.config import ITEM_CONTROL, SUB_SEPARATOR, build_config
from pipeline.annotate.labelstudio import ResultChecker
from pipeline.annotate.results import TaskFacts, decode
from pipeline.catalog import load_catalog
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Annotation, Record, Scenario, TranscriptRow
from pipeline.schema import AnnotationSchema
from pipeline.transcripts import read_rows, rows_path

_REGION = re.compile(r"^Region (\d+):")
_FIELDS = list(Annotation.model_fields)
_HEAD = set(_FIELDS[:_FIELDS.index("field")])  # the record's keys before `field` and after `value`
_TAIL = set(_FIELDS[_FIELDS.index("value") + 1:])
_JSON: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)


class QuarantinedAnnotation(Record):
    """A field (or a whole annotation, `field` None) that could not be turned into a valid record."""

    snapshot: str
    scenario: Scenario
    task_id: int
    annotation_id: int | None
    annotator: str
    session_id: str
    row_id: str
    field: str | None = Field(description="schema field, or None when the whole annotation is refused")
    reason: str
    result: list[dict[str, Any]] = Field(default_factory=list, description="the offending result entries, verbatim")


@dataclass
class ExportParse:
    """What one export gave: records as (sort key, JSON line) pairs (light on memory), and the rest."""

    records: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    quarantine: list[QuarantinedAnnotation] = field(default_factory=list)
    tasks: int = 0
    annotations: int = 0
    cancelled: int = 0
    superseded: list[str] = field(default_factory=list)
    annotators: tuple[str, ...] = ()
    foreign: int = 0  # annotations by another account in the owner's project (quarantined)
    kept: dict[tuple[str, str], tuple[str, int, int]] = field(default_factory=dict)  # (row, annotator) ->
    # (updated_at, annotation id, task id) of the annotation that counts, for merging several exports


def _field_of(entry: Mapping[str, Any]) -> str | None:
    name = str(entry.get("from_name", ""))
    if name == ITEM_CONTROL:
        labels = (entry.get("value") or {}).get("labels") or []
        return str(labels[0]) if len(labels) == 1 else None
    return name.split(SUB_SEPARATOR)[0] or None


class _Rows:
    """Current rows per session, read once; a session without rows has none."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._cache: dict[str, dict[str, TranscriptRow]] = {}
        self.participants = {item.entry.session_id: item.entry.participants for item in load_catalog(project)}

    def of(self, session_id: str) -> dict[str, TranscriptRow]:
        if session_id not in self._cache:
            try:
                exists = rows_path(self.project, session_id).exists()
            except RescueError:  # a session id that is not a valid path: it has no rows
                exists = False
            rows = read_rows(self.project, session_id) if exists else []
            self._cache[session_id] = {row.row_id: row for row in rows}
        return self._cache[session_id]


def _latest(annotations: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], list[dict[str, Any]]]:
    """Per user, the latest annotation (by updated_at, then id); and the older ones it supersedes."""
    kept: dict[int, dict[str, Any]] = {}
    older: list[dict[str, Any]] = []
    for annotation in sorted(annotations, key=lambda a: (str(a.get("updated_at", "")), int(a["id"]))):
        user = int(annotation["completed_by"])
        if user in kept:
            older.append(kept[user])
        kept[user] = annotation
    return kept, older


def _tasks(data: bytes, where: str) -> Iterator[dict[str, Any]]:
    """The export's tasks one at a time (streamed: a full export of the benchmark is ~100 MB)."""
    import ijson

    try:
        yield from ijson.items(data, "item", use_float=True)
    except ijson.JSONError as exc:
        raise RescueError(f"{where} is not a Label Studio JSON export (a list of tasks): {exc}",
                          "pull again; Label Studio sent a broken export") from exc


def parse_export(project: Project, data: bytes, users: Mapping[int, str], *, scenario: Scenario,
                 schemas: Mapping[str, AnnotationSchema], snapshot: str, where: str,
                 owner: str | None = None) -> ExportParse:
    rows = _Rows(project)
    checkers: dict[str, ResultChecker] = {}
    out = ExportParse()
    seen_annotators: set[str] = set()
    unknown: dict[str, int] = {}
    for task in _tasks(data, where):
        out.tasks += 1
        annotations = task.get("annotations") or []
        if not annotations:
            continue
        version = str((task.get("data") or {}).get("schema"))
        schema = schemas.get(version)
        if schema is None:
            unknown[version] = unknown.get(version, 0) + 1
            continue
        if schema.id not in checkers:
            checkers[schema.id] = ResultChecker(build_config(schema, scenario))
        out.annotations += len(annotations)
        live = [a for a in annotations if not a.get("was_cancelled")]
        out.cancelled += len(annotations) - len(live)
        kept, older = _latest(live)
        for annotation in older:
            newer = kept[int(annotation["completed_by"])]
            out.superseded.append(f"task {task['id']}: {_who(users, annotation)} saved annotation "
                                  f"{annotation['id']} and later {newer['id']}; {newer['id']} counts")
        for annotation in kept.values():
            annotator = _who(users, annotation)
            if owner is not None and annotator.lower() != owner.lower():
                out.foreign += 1
                _refuse_foreign(out, task, annotation, annotator, owner, scenario, snapshot)
                continue
            seen_annotators.add(annotator)
            row_id = str((task.get("data") or {}).get("row_id", ""))
            out.kept[(row_id, annotator)] = (str(annotation.get("updated_at", "")), int(annotation["id"]),
                                             int(task["id"]))
            _one_annotation(out, schema, checkers[schema.id], rows, task, annotation, annotator, scenario, snapshot)
    if unknown:
        found = ", ".join(f"{version!r} ({count} task(s))" for version, count in sorted(unknown.items()))
        raise RescueError(f"{where} holds annotations in schema version(s) {found}, which annotation_schemas/ does "
                          f"not have (known: {', '.join(sorted(schemas))})",
                          "add that schema version's file to annotation_schemas/ (from git history), then pull again")
    out.annotators = tuple(sorted(seen_annotators))
    out.records.sort(key=lambda pair: pair[0])
    out.quarantine.sort(key=lambda q: (q.task_id, q.annotator, q.field or ""))
    return out


def _refuse_foreign(out: ExportParse, task: dict[str, Any], annotation: dict[str, Any], annotator: str, owner: str,
                    scenario: Scenario, snapshot: str) -> None:
    data = task.get("data") or {}
    out.quarantine.append(QuarantinedAnnotation(
        snapshot=snapshot, scenario=scenario, task_id=int(task["id"]), annotation_id=int(annotation["id"]),
        annotator=annotator, session_id=str(data.get("session_id", "")), row_id=str(data.get("row_id", "")),
        field=None, reason=f"made by {annotator} in the own project of {owner}: not merged (labels count only from "
                           f"each annotator's own project; {annotator} should label this row in theirs)",
        result=list(annotation.get("result") or [])))


def _who(users: Mapping[int, str], annotation: Mapping[str, Any]) -> str:
    user = int(annotation["completed_by"])
    return users.get(user, f"user-{user}")


def _one_annotation(out: ExportParse, schema: AnnotationSchema, checker: ResultChecker, rows: _Rows,
                    task: dict[str, Any], annotation: dict[str, Any], annotator: str, scenario: Scenario,
                    snapshot: str) -> None:
    data = task["data"]
    session_id, row_id = str(data.get("session_id", "")), str(data.get("row_id", ""))
    result = list(annotation.get("result") or [])

    def quarantine(field_name: str | None, reason: str, entries: list[dict[str, Any]] | None = None) -> None:
        out.quarantine.append(QuarantinedAnnotation(
            snapshot=snapshot, scenario=scenario, task_id=int(task["id"]), annotation_id=int(annotation["id"]),
            annotator=annotator, session_id=session_id, row_id=row_id, field=field_name, reason=reason,
            result=entries if entries is not None else result))

    row = rows.of(session_id).get(row_id)
    if row is None:
        quarantine(None, f"row {row_id} no longer exists in build/transcripts/{session_id}/rows.jsonl")
        return
    if data.get("scenario") != scenario:
        quarantine(None, f"task of scenario {data.get('scenario')!r} in the {scenario} project")
        return
    participants = rows.participants.get(session_id)
    entities = (schema.entities(scenario, participants) if participants is not None
                else tuple(option["value"] for option in data.get("entities", [])))
    decoded = decode(schema, result, TaskFacts(scenario, entities, len(rows.of(session_id))))
    for field_name, reason in decoded.problems:
        quarantine(field_name, reason, [e for e in result if _field_of(e) == field_name] if field_name else None)
    # The SDK's structural check (controls, types, shapes) catches what the schema checks let through.
    flagged = {field_name for field_name, _ in decoded.problems}
    structural: dict[str | None, list[str]] = {}
    for error in checker.errors(result):
        match = _REGION.match(error)
        index = int(match.group(1)) if match else -1
        field_name = _field_of(result[index]) if 0 <= index < len(result) else None
        if field_name not in flagged:
            structural.setdefault(field_name, []).append(error)
    for field_name, errors in structural.items():
        quarantine(field_name, "; ".join(errors), [e for e in result if _field_of(e) == field_name])
        decoded.values.pop(field_name or "", None)
    if schema.speaker_field in structural:
        decoded.values.clear()  # without a sound speaker no field can be trusted
    if not decoded.values:
        return
    values = {f.name: data[f.name] for f in schema.fields if not f.annotated and f.name in data}
    values.update(decoded.values)
    order = {f.name: i for i, f in enumerate(schema.fields)}
    first = next(iter(values))
    try:  # one full validation per annotation; the other fields differ only in field and (checked) value
        template = Annotation(
            schema_version=schema.id, scenario=scenario, session_id=session_id, row_id=row_id,
            row_index=row.row_index, annotator=annotator, field=first, value=values[first], task_id=int(task["id"]),
            annotation_id=int(annotation["id"]), updated_at=str(annotation.get("updated_at", "")), snapshot=snapshot)
    except ValidationError as exc:
        quarantine(None, f"not a valid record: {exc.errors()[0]['msg']}")
        return
    # The record's JSON in pydantic's own format, with only `field` and `value` changing between fields
    # (pull writes ~300,000 of them for the full benchmark; building each as a model took seconds).
    head = template.model_dump_json(include=_HEAD)[:-1]
    tail = template.model_dump_json(include=_TAIL)[1:]
    for name, value in values.items():
        line = f'{head},"field":{_JSON.dump_json(name).decode()},"value":{_JSON.dump_json(value).decode()},{tail}'
        out.records.append(((session_id, row.row_index, annotator, order[name], int(annotation["id"])), line))
