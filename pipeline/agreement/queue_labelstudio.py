"""The adjudication queue in Label Studio: one project per scenario next to the annotation projects.

push: every queued row becomes a task with the same row view and label config as annotation (built by
`pipeline.annotate`), plus a panel listing each annotator's answer to every field in dispute, and one
prediction per annotator (model version = the annotator's account): the settled fields with their gold
values and the disputed fields as that annotator answered, so the adjudicator starts from an answer,
fixes the disputed fields and submits. Idempotent by row id and field, like `rescue push`: a queued
field that a task of its row already asks for is not asked again; a row whose task asks for other
fields (annotators changed another field after it was queued) gets a new task asking for the new ones,
since an answer counts only for the fields its task lists.

pull: the adjudication projects' exports -> `Annotation` records (parsed and validated by the annotation
stage's parser) of the disputed fields only -> build/adjudication/answers/<UTC time>/annotations.jsonl.
`rescue gold` and `rescue adjudicate` apply the newest such file: its answers count as adjudications.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from pipeline import layout
from pipeline.agreement.adjudication_tasks import record_adjudication_tasks
from pipeline.agreement.gold import QueueItem, run_adjudicate
from pipeline.agreement.settings import AgreementSettings
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.schema import SCENARIOS, AnnotationSchema
from pipeline.store import write_text_atomic

ANSWERS_PANEL = ('  <Header value="Answers to settle (field - annotator: answer)" size="6" />\n'
                 '  <Paragraphs name="adjudication_answers" value="$adjudication_answers" layout="dialogue" '
                 'nameKey="who" textKey="answer" contextScroll="false" />\n')
ROW_VIEW = '<Text name="row" value="$row_text" />\n'


def adjudication_title(schema: AnnotationSchema, scenario: str) -> str:
    from pipeline.annotate.push import project_title

    return f"{project_title(schema, scenario)} - adjudication"  # type: ignore[arg-type]


def adjudication_config(schema: AnnotationSchema, scenario: str) -> str:
    """The annotation config with the answers panel under the row (validated offline like push does)."""
    from pipeline.annotate.config import build_config
    from pipeline.annotate.labelstudio import validate_config

    config = build_config(schema, scenario)  # type: ignore[arg-type]
    at = config.find(ROW_VIEW)
    at = at + len(ROW_VIEW) if at >= 0 else config.index(">") + 2
    config = config[:at] + ANSWERS_PANEL + config[at:]
    validate_config(config, where=f"adjudication config ({scenario})")
    return config


def _shown(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def push_queue(project: Project, settings: AgreementSettings, items: Sequence[QueueItem],
               connection: object | None = None) -> list[str]:
    """Import the queued rows into the adjudication projects; returns one line per scenario."""
    from pipeline.agreement.gold import settle
    from pipeline.annotate.labelstudio import Client
    from pipeline.annotate.push import load_sessions
    from pipeline.annotate.results import encode
    from pipeline.annotate.server import connect
    from pipeline.annotate.tasks import build_task
    from pipeline.settings import load_settings

    annotate = load_settings(project.root).annotate
    settled, schema = settle(project, settings)
    by_row: dict[str, list[QueueItem]] = {}
    for item in items:
        by_row.setdefault(item.row_id, []).append(item)
    sessions, _ = load_sessions(project, tuple(sorted({item.session_id for item in items})))
    client = Client(connection or connect(project))  # type: ignore[arg-type]
    client.whoami()
    lines = []
    for scenario in SCENARIOS:
        chosen = [s for s in sessions if s.entry.scenario == scenario]
        wanted = [(s, i) for s in chosen for i, row in enumerate(s.rows) if row.row_id in by_row]
        if not wanted:
            continue
        title = adjudication_title(schema, scenario)
        info = client.find_project(title) or client.create_project(
            title, f"Adjudication of disputed RESCUE fields ({scenario}, schema {schema.id}); made by `rescue "
                   "adjudicate --push`. Settle the fields listed under the row; the others are already settled.",
            adjudication_config(schema, scenario), 1)
        asked: dict[str, set[str]] = {}  # row id -> the fields its tasks ask for
        for meta in client.task_metas(info.id).values():
            if meta.get("row_id"):
                asked.setdefault(str(meta["row_id"]), set()).update(meta.get("adjudication_fields") or ())
        tasks = []
        for session, index in wanted:
            row = session.rows[index]
            queued = [item for item in by_row[row.row_id] if item.field not in asked.get(row.row_id, set())]
            if not queued:
                continue
            entities = schema.entities(scenario, session.entry.participants,  # type: ignore[arg-type]
                                       therapist=session.entry.therapist)
            task = build_task(schema, session, index, context_rows=annotate.context_rows, media_url=annotate.media_url)
            fields = sorted({item.field for item in queued})
            task["data"]["adjudication_fields"] = fields
            task["data"]["adjudication_answers"] = [
                {"who": f"{item.field} - {answer.annotator}", "answer": _shown(answer.value)}
                for item in queued for answer in item.answers] or [{"who": "", "answer": "(no answers)"}]
            task["meta"]["adjudication_fields"] = fields
            settled_values = {name: outcome.value for name, outcome in settled.outcomes[row.row_id].items()
                              if outcome.status != "pending"}
            annotators = sorted({answer.annotator for item in queued for answer in item.answers})
            task["predictions"] = [
                {"model_version": annotator,
                 "result": encode(schema, {**settled_values, **{item.field: answer.value for item in queued
                                                                for answer in item.answers
                                                                if answer.annotator == annotator}}, entities)}
                for annotator in annotators]
            tasks.append(task)
        for start in range(0, len(tasks), annotate.batch_size):
            client.import_tasks(info.id, tasks[start:start + annotate.batch_size])
        record_adjudication_tasks(project, scenario, info.id, ((task_id, str(meta.get("row_id") or ""))
                                                               for task_id, meta in client.task_metas(info.id).items()))
        again = sum(task["meta"]["row_id"] in asked for task in tasks)
        lines.append(f"{scenario}: {len(tasks)} row(s) imported, {len(wanted) - len(tasks)} already there"
                     + (f" ({again} asked again for fields queued since)" if again else "")
                     + f" -> {client.connection.url}/projects/{info.id}/data")
    return lines


def pull_adjudications(project: Project, settings: AgreementSettings, connection: object | None = None) -> Path:
    """Export the adjudication projects and store their disputed-field answers as a new answers file."""
    from pipeline.agreement.agree import schema_for
    from pipeline.annotate.labelstudio import Client
    from pipeline.annotate.parse import parse_export
    from pipeline.annotate.pull import known_schemas
    from pipeline.annotate.server import connect

    schema = schema_for(project, settings)
    client = Client(connection or connect(project))  # type: ignore[arg-type]
    admin, _ = client.whoami()  # its changes are the pipeline's own (authorship, see pipeline.annotate.parse)
    users = client.users()
    name = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    kept: list[str] = []
    found = False
    for scenario in SCENARIOS:
        info = client.find_project(adjudication_title(schema, scenario))
        if info is None:
            continue
        found = True
        data = client.export_json(info.id)
        exported = json.loads(data)
        disputed = {int(task["id"]): set(task["data"].get("adjudication_fields") or ()) for task in exported}
        record_adjudication_tasks(project, scenario, info.id,
                                  ((int(task["id"]), str(task["data"].get("row_id") or "")) for task in exported))
        parsed = parse_export(project, data, users, scenario=scenario, schemas=known_schemas(project, schema),
                              snapshot=f"adjudication-{name}", where=f"adjudication project {info.id}",
                              trusted=(admin,))
        for _, line in sorted(parsed.records):
            record = Annotation.model_validate_json(line)
            if record.field in disputed.get(record.task_id, set()):
                kept.append(line)
    if not found:
        raise RescueError("Label Studio has no adjudication project yet", "run `rescue adjudicate --push` first")
    path = layout.adjudication_answers_dir(project) / name / "annotations.jsonl"
    if path.exists():
        raise RescueError(f"{path} exists already", "wait a second and pull again")
    write_text_atomic(path, "".join(line + "\n" for line in kept))
    return path


__all__ = ["adjudication_config", "adjudication_title", "pull_adjudications", "push_queue", "run_adjudicate"]
