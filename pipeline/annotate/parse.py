"""One scenario's full JSON export -> `Annotation` records and quarantined problems.

Checks, in order: the task's schema version is known (else the whole export is refused), its row
still exists in build/transcripts/, the annotation's result fits the label config (SDK
LabelInterface), and every field fits the schema (results.decode: labels, people of the session,
required fields, rows the field applies to). Only the latest annotation of a user on a task counts. In an
annotator's own project (`owner`), an annotation by any other account is quarantined whole: reported,
never merged, since it was not an independent answer of the project's annotator. So is an annotation that
another account created or changed (`authorship`: the server's updated_by), before the latest
of the annotator's own is chosen, and every answer of an account not on the roster (`counted`).

A task whose row is gone (the session was re-segmented) keeps its annotations: each is re-anchored on
the current row of the same session that overlaps the task's row most (IoU >= 0.5, `row_anchor`), one
row per annotator, the rows that annotator answered on their own tasks first; what cannot be placed is
quarantined with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, JsonValue, TypeAdapter, ValidationError

from pipeline.annotate.authorship import account_id, authorship_problem
from pipeline.annotate.config import ITEM_CONTROL, SUB_SEPARATOR, build_config
from pipeline.annotate.labelstudio import ResultChecker
from pipeline.annotate.results import TaskFacts, decode
from pipeline.catalog import load_catalog
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Annotation, Record, Scenario, TranscriptRow
from pipeline.row_anchor import anchor
from pipeline.schema import AnnotationSchema
from pipeline.store import sha256_file
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


class Reanchored(Record):
    """An annotation of a task whose row is gone, read as an answer to the current row it overlaps most."""

    task_id: int
    annotator: str
    from_row: str
    row_id: str
    iou: float


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
    reanchored: list[Reanchored] = field(default_factory=list)
    unplaced: int = 0  # annotations of gone rows that no current row could take (quarantined)
    foreign: int = 0  # annotations by another account in the owner's project (quarantined)
    disowned: dict[int, str] = field(default_factory=dict)  # annotation id -> who else made or changed it
    strangers: dict[str, int] = field(default_factory=dict)  # account not on the roster -> its answers (quarantined)
    present: set[int] = field(default_factory=set)  # every annotation id of the export, skipped ones included
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


def parse_inputs(project: Project) -> dict[str, Any]:
    """Everything parsing an export reads besides the export itself: each catalog session's rows (sha256 of
    rows.jsonl, '' = none) and participants, and the schema files. A snapshot parsed with other inputs is
    out of date even when the server's exports are unchanged (rows re-cut and cut back, a schema edited)."""
    catalog = load_catalog(project)
    rows = {}
    for item in catalog:
        path = rows_path(project, item.entry.session_id)
        rows[item.entry.session_id] = sha256_file(path) if path.is_file() else ""
    return {"rows": rows, "participants": {item.entry.session_id: list(item.entry.participants) for item in catalog},
            "schemas": {path.name: sha256_file(path) for path in sorted(project.schemas.glob("*.yaml"))}}


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
                 owner: str | None = None, trusted: Collection[int] = (),
                 counted: Collection[str] | None = None) -> ExportParse:
    """`trusted`: accounts whose changes do not make an annotation another's (the pipeline's admin);
    `counted`: the accounts whose answers count (None: every account)."""
    rows = _Rows(project)
    checkers: dict[str, ResultChecker] = {}
    out = ExportParse()
    seen_annotators: set[str] = set()
    unknown: dict[str, int] = {}
    answered: dict[tuple[str, str], set[str]] = {}  # (session, annotator) -> row ids of their tasks
    gone: list[_Pending] = []  # annotations of tasks whose row no longer exists, placed after the whole export
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
        out.present.update(int(a["id"]) for a in annotations)
        annotations = _own_work(out, task, annotations, users, trusted, scenario, snapshot)
        live = [a for a in annotations if not a.get("was_cancelled")]
        out.cancelled += len(annotations) - len(live)
        kept, older = _latest(live)
        for annotation in older:
            newer = kept[int(annotation["completed_by"])]
            out.superseded.append(f"task {task['id']}: {_who(users, annotation)} saved annotation "
                                  f"{annotation['id']} and later {newer['id']}; {newer['id']} counts")
        session_id, row_id = str(task["data"].get("session_id", "")), str(task["data"].get("row_id", ""))
        for annotation in kept.values():
            annotator = _who(users, annotation)
            if owner is not None and annotator.lower() != owner.lower():
                out.foreign += 1
                _refuse_foreign(out, task, annotation, annotator, owner, scenario, snapshot)
                continue
            if counted is not None and annotator.lower() not in counted:
                out.strangers[annotator] = out.strangers.get(annotator, 0) + 1
                _refuse(out, task, annotation, annotator, scenario, snapshot,
                        f"{annotator} is not on the roster: its answers do not count (if it is a new annotator: "
                        f"`rescue annotators add {annotator}`, then pull again)")
                continue
            seen_annotators.add(annotator)
            answered.setdefault((session_id, annotator), set()).add(row_id)
            pending = _Pending(schema, task, annotation, annotator)
            if row_id in rows.of(session_id):
                _one_annotation(out, pending, checkers[schema.id], rows, scenario, snapshot)
            else:
                gone.append(pending)
    _reanchor(out, gone, answered, checkers, rows, scenario, snapshot)
    if unknown:
        found = ", ".join(f"{version!r} ({count} task(s))" for version, count in sorted(unknown.items()))
        raise RescueError(f"{where} holds annotations in schema version(s) {found}, which annotation_schemas/ does "
                          f"not have (known: {', '.join(sorted(schemas))})",
                          "add that schema version's file to annotation_schemas/ (from git history), then pull again")
    out.annotators = tuple(sorted(seen_annotators))
    out.records.sort(key=lambda pair: pair[0])
    out.quarantine.sort(key=lambda q: (q.task_id, q.annotator, q.field or ""))
    return out


def _own_work(out: ExportParse, task: dict[str, Any], annotations: list[dict[str, Any]], users: Mapping[int, str],
              trusted: Collection[int], scenario: Scenario, snapshot: str) -> list[dict[str, Any]]:
    """The annotations nobody else made or changed; the others are quarantined whole, with who did."""
    own = []
    for annotation in annotations:
        problem = authorship_problem(annotation, users, trusted)
        if problem is None:
            own.append(annotation)
            continue
        out.disowned[int(annotation["id"])] = problem
        _refuse(out, task, annotation, _who(users, annotation), scenario, snapshot, problem)
    return own


def _refuse_foreign(out: ExportParse, task: dict[str, Any], annotation: dict[str, Any], annotator: str, owner: str,
                    scenario: Scenario, snapshot: str) -> None:
    reason = (f"made by {annotator} in the own project of {owner}: not merged (labels count only from each "
              f"annotator's own project; {annotator} should label this row in theirs)")
    out.disowned[int(annotation["id"])] = reason  # if it was the owner's before (completed_by changed): kept
    _refuse(out, task, annotation, annotator, scenario, snapshot, reason)


def _refuse(out: ExportParse, task: dict[str, Any], annotation: dict[str, Any], annotator: str, scenario: Scenario,
            snapshot: str, reason: str) -> None:
    """Quarantine the whole annotation with the reason."""
    data = task.get("data") or {}
    out.quarantine.append(QuarantinedAnnotation(
        snapshot=snapshot, scenario=scenario, task_id=int(task["id"]), annotation_id=int(annotation["id"]),
        annotator=annotator, session_id=str(data.get("session_id", "")), row_id=str(data.get("row_id", "")),
        field=None, reason=reason, result=list(annotation.get("result") or [])))


def _who(users: Mapping[int, str], annotation: Mapping[str, Any]) -> str:
    user = account_id(annotation["completed_by"])
    return users.get(user, f"user-{user}")


@dataclass(frozen=True)
class _Pending:
    """One annotator's latest annotation of one task, with the schema version of that task."""

    schema: AnnotationSchema
    task: dict[str, Any]
    annotation: dict[str, Any]
    annotator: str

    @property
    def session_id(self) -> str:
        return str(self.task["data"].get("session_id", ""))

    @property
    def row_id(self) -> str:
        return str(self.task["data"].get("row_id", ""))


def _quarantine(out: ExportParse, pending: _Pending, scenario: Scenario, snapshot: str, field_name: str | None,
                reason: str, entries: list[dict[str, Any]] | None = None) -> None:
    out.quarantine.append(QuarantinedAnnotation(
        snapshot=snapshot, scenario=scenario, task_id=int(pending.task["id"]),
        annotation_id=int(pending.annotation["id"]), annotator=pending.annotator, session_id=pending.session_id,
        row_id=pending.row_id, field=field_name, reason=reason,
        result=entries if entries is not None else list(pending.annotation.get("result") or [])))


def _reanchor(out: ExportParse, gone: list[_Pending], answered: Mapping[tuple[str, str], set[str]],
              checkers: Mapping[str, ResultChecker], rows: _Rows, scenario: Scenario, snapshot: str) -> None:
    """Place each annotation of a gone row on a current row of its session by time overlap, as the stored
    sample annotations are (`row_anchor.anchor`): per annotator, so the rows they answered on their own
    tasks keep those answers, and each current row takes at most one gone row of theirs."""
    groups: dict[tuple[str, str], list[_Pending]] = {}
    for pending in gone:
        groups.setdefault((pending.session_id, pending.annotator), []).append(pending)
    for (session_id, annotator), items in sorted(groups.items()):
        current = rows.of(session_id)
        placements, problems = anchor(answered[(session_id, annotator)], current)
        placed = {p.stored_row: p for p in placements}
        reasons = dict(problems)
        for pending in items:
            placement = placed.get(pending.row_id)
            if placement is None:
                out.unplaced += 1
                _quarantine(out, pending, scenario, snapshot, None,
                            f"row {pending.row_id} no longer exists in build/transcripts/{session_id}/rows.jsonl "
                            f"and was not re-anchored: {reasons.get(pending.row_id, 'no row of the session')}")
                continue
            out.reanchored.append(Reanchored(task_id=int(pending.task["id"]), annotator=annotator,
                                             from_row=pending.row_id, row_id=placement.row_id, iou=placement.iou))
            _one_annotation(out, pending, checkers[pending.schema.id], rows, scenario, snapshot,
                            row=current[placement.row_id])


def _one_annotation(out: ExportParse, pending: _Pending, checker: ResultChecker, rows: _Rows, scenario: Scenario,
                    snapshot: str, *, row: TranscriptRow | None = None) -> None:
    """Records of one annotation; `row` is the current row it was re-anchored on (else the task's own row)."""
    schema, task, annotation, annotator = pending.schema, pending.task, pending.annotation, pending.annotator
    data = task["data"]
    session_id = pending.session_id
    result = list(annotation.get("result") or [])

    def quarantine(field_name: str | None, reason: str, entries: list[dict[str, Any]] | None = None) -> None:
        _quarantine(out, pending, scenario, snapshot, field_name, reason, entries)

    moved = row is not None
    row = row or rows.of(session_id)[pending.row_id]
    row_id = row.row_id
    out.kept[(row_id, annotator)] = (str(annotation.get("updated_at", "")), int(annotation["id"]), int(task["id"]))
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
    # Values carried from the transcript (start/end time): a re-anchored answer takes its current row's.
    values = {f.name: getattr(row, f.prefill) if moved and f.prefill else data[f.name]
              for f in schema.fields if not f.annotated and f.name in data}
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
