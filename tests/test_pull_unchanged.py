"""Issue 22 part 4: pull writes no new, identical snapshot after a catalog or rows change (against a real
Label Studio server). A new session's tasks change the server's exports, not what the annotators said: the
newest snapshot stands. A changed answer still gives a new snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.carry_forward import previous_snapshot
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.annotate.results import encode
from pipeline.schema import AnnotationSchema, load_schema
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import SETTINGS, LiveServer, add_catalog_copy, write_truth_rows

MAYA = "sample/maya_and_daniel"
ANN = "ann@example.org"


def snapshots(live: LiveServer) -> list[str]:
    return sorted(p.name for p in (live.project.build / "annotations").iterdir() if not p.name.startswith("."))


def test_a_new_sessions_tasks_leave_the_snapshot_and_a_changed_answer_makes_a_new_one(ls_server: LiveServer) -> None:
    project = ls_server.project
    schema: AnnotationSchema = load_schema(project.schemas / "rescue-v1.yaml")
    (account,) = add_annotators(project, ls_server.connection, [ANN])
    rows = write_truth_rows(project, MAYA)
    push_rows(project, ls_server.connection, settings=SETTINGS)
    info = ls_server.client.find_project(annotator_title(schema, "couple", ANN))
    assert info is not None
    tasks = {row_id: ids[0] for row_id, ids in ls_server.client.task_keys(info.id).items()}
    row = next(r for r in rows if r.speaker == "Daniel")
    values = {**client_values(), "primary_speaker": "Daniel", "target": ["Therapist"], "utterance_type": "defense"}
    ls_server.client.create_annotation(tasks[row.row_id], encode(schema, values, COUPLE_ENTITIES),
                                       completed_by=account.user_id)
    base = project.build / "annotations"
    first = pull_annotations(project, ls_server.connection, settings=SETTINGS, same_as=previous_snapshot(base))
    assert not first.unchanged and snapshots(ls_server) == [first.snapshot]
    records = (base / first.snapshot / "annotations.jsonl").read_bytes()

    add_catalog_copy(project, MAYA, "extra/maya_again")  # a catalog change: a new session, its rows, its tasks
    write_truth_rows(project, MAYA, as_session="extra/maya_again")
    push_rows(project, ls_server.connection, settings=SETTINGS)
    again = pull_annotations(project, ls_server.connection, settings=SETTINGS, same_as=previous_snapshot(base))
    assert again.unchanged and again.snapshot == first.snapshot and again.records == first.records
    assert snapshots(ls_server) == [first.snapshot]  # no identical copy
    assert (base / first.snapshot / "annotations.jsonl").read_bytes() == records  # the snapshot is untouched
    assert not [p for p in base.iterdir() if p.name.startswith(".")]  # nor any staging folder left behind

    ls_server.client.create_annotation(tasks[row.row_id], encode(schema, {**values, "utterance_type": "withdrawal"},
                                                                 COUPLE_ENTITIES), completed_by=account.user_id)
    changed = pull_annotations(project, ls_server.connection, settings=SETTINGS, same_as=previous_snapshot(base))
    assert not changed.unchanged and snapshots(ls_server) == sorted([first.snapshot, changed.snapshot])


@pytest.mark.parametrize("file", ["annotations.jsonl", "users.json"])
def test_a_snapshot_that_differs_in_any_stored_part_is_not_taken_as_the_same(ls_server: LiveServer, file: str,
                                                                             tmp_path: Path) -> None:
    """The comparison is exact: the newest snapshot, copied and edited in one byte of one of its parts, no longer
    stands in for the server's exports."""
    import shutil

    base = ls_server.project.build / "annotations"
    newest = previous_snapshot(base)
    assert newest is not None  # the previous test pulled
    edited = tmp_path / newest.name
    shutil.copytree(newest, edited)
    target = edited / file
    target.chmod(0o600)
    target.write_bytes(target.read_bytes().replace(b"@example.org", b"@example.net", 1))
    before = snapshots(ls_server)
    summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS, same_as=edited)
    assert not summary.unchanged and snapshots(ls_server) == sorted([*before, summary.snapshot])
