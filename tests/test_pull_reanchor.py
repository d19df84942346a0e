"""Live annotations on rows that moved (issue 9, part 4): pull re-anchors an annotation whose task's row no
longer exists onto the current row of the same session with the largest time overlap (IoU >= 0.5), one
stored row per current row and annotator, exactly as the stored sample annotations are re-anchored; what
cannot be placed is quarantined with the reason. Crafted exports and rows: no server is needed to parse."""

from __future__ import annotations

import json
import shutil
from typing import Any

from pipeline.annotate.parse import parse_export
from pipeline.annotate.results import encode
from pipeline.project import Project
from pipeline.records import Annotation, TranscriptRow, row_id_for
from pipeline.row_anchor import span_of
from pipeline.schema import load_schema
from pipeline.transcripts import rows_path, write_rows
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import REPO

SESSION = "sample/maya_and_daniel"
USERS = {2: "ann1@example.org", 3: "ann2@example.org"}


def _task(task_id: int, row_id: str, annotations: list[tuple[int, int]], schema_id: str) -> dict[str, Any]:
    result = encode(load_schema(REPO / "annotation_schemas" / "rescue-v1.yaml"), client_values(), COUPLE_ENTITIES)
    span = span_of(row_id)
    assert span is not None
    return {"id": task_id, "meta": {"row_id": row_id},
            "data": {"row_id": row_id, "session_id": SESSION, "scenario": "couple", "schema": schema_id,
                     "entities": [{"value": name} for name in COUPLE_ENTITIES], "start_time": span[1],
                     "end_time": span[2]},
            "annotations": [{"id": annotation_id, "completed_by": user, "result": result, "was_cancelled": False,
                             "updated_at": f"2026-11-30T10:00:0{annotation_id % 10}Z"}
                            for annotation_id, user in annotations]}


def test_annotations_of_moved_rows_follow_them_and_the_rest_is_quarantined_with_the_reason(project: Project) -> None:
    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    spans = [(1.0, 5.0), (6.3, 10.2), (21.5, 30.0)]
    rows = [TranscriptRow(row_id=row_id_for(SESSION, start, end), session_id=SESSION, row_index=n, start=start,
                          end=end, speaker="Maya", target=("Daniel",), text=f"row {n}")
            for n, (start, end) in enumerate(spans, 1)]
    write_rows(rows_path(project, SESSION), rows)
    kept, moved, current, gone = (rows[0].row_id, row_id_for(SESSION, 6.0, 10.0), rows[1].row_id,
                                  row_id_for(SESSION, 20.0, 22.0))
    export = [_task(1, kept, [(11, 2), (12, 3)], schema.id),
              _task(2, moved, [(21, 2), (22, 3)], schema.id),  # the row moved by 0.3 s: IoU 3.7 / 4.2
              _task(3, current, [(31, 3)], schema.id),  # ann2 already answered the moved row's new task
              _task(4, gone, [(41, 2)], schema.id)]  # nothing overlaps it by half
    parsed = parse_export(project, json.dumps(export).encode(), USERS, scenario="couple",
                          schemas={schema.id: schema}, snapshot="s1", where="crafted export")

    records = [Annotation.model_validate_json(line) for _, line in parsed.records]
    fields = len({r.field for r in records if r.task_id == 1 and r.annotator == USERS[2]})
    by_task: dict[tuple[int, str], set[str]] = {}
    for record in records:
        by_task.setdefault((record.task_id, record.annotator), set()).add(record.row_id)
        assert record.row_index == {r.row_id: r.row_index for r in rows}[record.row_id]
    assert by_task == {(1, USERS[2]): {kept}, (1, USERS[3]): {kept}, (2, USERS[2]): {current},
                       (3, USERS[3]): {current}}
    assert len(records) == 4 * fields
    assert [(r.task_id, r.annotator, r.from_row, r.row_id) for r in parsed.reanchored] == [
        (2, USERS[2], moved, current)]
    assert abs(parsed.reanchored[0].iou - 3.7 / 4.2) < 1e-3
    times = {(r.field, r.value) for r in records if r.task_id == 2 and r.field in ("start_time", "end_time")}
    assert times == {("start_time", 6.3), ("end_time", 10.2)}  # the current row's span, not the task's

    quarantined = {(q.task_id, q.annotator): q for q in parsed.quarantine}
    assert set(quarantined) == {(2, USERS[3]), (4, USERS[2])}  # never dropped silently
    assert all(q.field is None and q.row_id in {moved, gone} for q in quarantined.values())
    assert "no free row" in quarantined[(2, USERS[3])].reason and current in quarantined[(2, USERS[3])].reason
    assert "IoU 0.05" in quarantined[(4, USERS[2])].reason
    assert parsed.unplaced == 2


def test_rows_of_another_session_never_take_an_annotation(project: Project) -> None:
    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    other = "sample/other"
    write_rows(rows_path(project, SESSION), [TranscriptRow(
        row_id=row_id_for(SESSION, 1.0, 5.0), session_id=SESSION, row_index=1, start=1.0, end=5.0, speaker="Maya",
        target=("Daniel",), text="row 1")])
    write_rows(rows_path(project, other), [TranscriptRow(
        row_id=row_id_for(other, 6.0, 10.0), session_id=other, row_index=1, start=6.0, end=10.0, speaker="Maya",
        target=("Daniel",), text="row 1")])
    parsed = parse_export(project, json.dumps([_task(1, row_id_for(SESSION, 6.0, 10.0), [(11, 2)], schema.id)]
                                              ).encode(), USERS, scenario="couple", schemas={schema.id: schema},
                          snapshot="s1", where="crafted export")
    assert parsed.records == [] and parsed.reanchored == [] and parsed.unplaced == 1
    (problem,) = parsed.quarantine
    assert "no longer exists" in problem.reason and "IoU 0.00" in problem.reason
