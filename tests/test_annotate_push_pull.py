"""Push and pull against a real Label Studio server: idempotent push (into every annotator's own project),
crash recovery, several annotators, round trip of every schema field, latest-save-wins, quarantine,
immutable snapshots, bad exports. Independence itself: test_annotate_independent.py."""

from __future__ import annotations

import copy
import json
import re
import stat
import threading
from pathlib import Path

import pytest

from pipeline.annotate import server
from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.labelstudio import Client, Connection, login_token
from pipeline.annotate.pull import ANNOTATIONS_FILE, QUARANTINE_FILE, pull_annotations, snapshot_from_exports
from pipeline.annotate.projects import annotator_title, project_title
from pipeline.annotate.push import push_rows
from pipeline.annotate.results import encode
from pipeline.errors import RescueError
from pipeline.records import Annotation, TranscriptRow
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import read_jsonl, sha256_file
from pipeline.transcripts import rows_path, write_rows
from tests.annotate_values import COUPLE_ENTITIES, client_values, therapist_values
from tests.conftest import tree_digest
from tests.labelstudio_fixtures import SETTINGS, LiveServer, add_catalog_copy, write_truth_rows

MAYA = "sample/maya_and_daniel"
TEAM = ("ann@example.org", "bob@example.org", "cem@example.org")


@pytest.fixture(scope="module")
def ls_server(own_ls_server: LiveServer) -> LiveServer:
    """A server of this module's own, not the run's shared one (tests/labelstudio_fixtures.py): the module kills its
    server in the middle of a push and starts it again."""
    return own_ls_server


@pytest.fixture(scope="module")
def schema(ls_server: LiveServer) -> AnnotationSchema:
    return load_schema(ls_server.project.schemas / "rescue-v1.yaml")


@pytest.fixture(scope="module")
def annotators(ls_server: LiveServer) -> dict[str, int]:
    accounts = add_annotators(ls_server.project, ls_server.connection, list(TEAM))
    return {account.email: account.user_id for account in accounts}


@pytest.fixture(scope="module")
def pushed(ls_server: LiveServer, annotators: dict[str, int]) -> dict[str, list[TranscriptRow]]:
    """The couple sample pushed to the three annotators (rows made from the ground truth); other tests add to it."""
    rows = write_truth_rows(ls_server.project, MAYA)
    push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    return {MAYA: rows}


def task_ids(live: LiveServer, scenario: str, schema: AnnotationSchema, annotator: str) -> dict[str, int]:
    """Row id -> task id in `annotator`'s own project of `scenario`."""
    client = live.client
    info = client.find_project(annotator_title(schema, scenario, annotator))
    assert info is not None
    keys = client.task_keys(info.id)
    assert all(len(ids) == 1 for ids in keys.values()), "duplicate tasks"
    return {row_id: ids[0] for row_id, ids in keys.items()}


def test_push_is_idempotent_and_imports_only_new_rows(ls_server: LiveServer, schema: AnnotationSchema,
                                                      pushed: dict[str, list[TranscriptRow]]) -> None:
    project, client = ls_server.project, ls_server.client
    rows = pushed[MAYA]
    assert client.find_project(project_title(schema, "couple")) is None  # no project shared by all annotators
    for email in TEAM:
        couple = client.find_project(annotator_title(schema, "couple", email))
        assert couple is not None and couple.task_number == len(rows) == 23
        assert couple.maximum_annotations == 1 and couple.model_version == "transcript"
        assert client.find_project(annotator_title(schema, "family", email)) is None  # no family rows yet
        assert set(task_ids(ls_server, "couple", schema, email)) == {row.row_id for row in rows}
    detail = client.task_detail(task_ids(ls_server, "couple", schema, TEAM[0])[rows[1].row_id])
    assert detail["overlap"] == 1  # the project's own annotator, nobody else
    draft = {r["from_name"]: r["value"] for r in detail["predictions"][0]["result"]}
    assert draft == {"primary_speaker": {"choices": ["Maya"]}, "target": {"choices": ["Therapist"]},
                     "dialogue_cleaned": {"text": [rows[1].text]}}

    again = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.scenario, p.annotator, p.imported, p.already_present, p.duplicates) for p in again.projects] == [
        ("couple", email, 0, 23, 0) for email in TEAM]
    assert again.sessions_without_rows == ("sample/linda_mark_and_zoe",)

    add_catalog_copy(project, MAYA, "extra/maya_again")
    extra = write_truth_rows(project, MAYA, as_session="extra/maya_again")
    family = write_truth_rows(project, "sample/linda_mark_and_zoe")
    pushed["extra/maya_again"], pushed["sample/linda_mark_and_zoe"] = extra, family
    more = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.scenario, p.imported, p.already_present) for p in more.projects] == [
        ("couple", 23, 23)] * 3 + [("family", 24, 0)] * 3
    for email in TEAM:
        assert set(task_ids(ls_server, "couple", schema, email)) == {r.row_id for r in rows + extra}
    family_task = client.task_detail(task_ids(ls_server, "family", schema, TEAM[2])[family[0].row_id])
    assert [o["value"] for o in family_task["data"]["entities"]] == ["Linda", "Mark", "Zoe", "Therapist", "Family"]


def test_the_local_copy_of_the_task_list_counts_only_while_the_server_matches_it(
        ls_server: LiveServer, schema: AnnotationSchema, pushed: dict[str, list[TranscriptRow]]) -> None:
    project, client = ls_server.project, ls_server.client
    idle = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.imported, p.listed) for p in idle.projects] == [(0, False)] * 6
    victim = pushed[MAYA][5]
    client.delete_task(task_ids(ls_server, "couple", schema, TEAM[1])[victim.row_id])  # by hand, behind push's back
    after = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.annotator, p.imported, p.listed, p.duplicates) for p in after.projects if p.scenario == "couple"] == [
        (TEAM[0], 0, False, 0), (TEAM[1], 1, True, 0), (TEAM[2], 0, False, 0)]
    assert victim.row_id in task_ids(ls_server, "couple", schema, TEAM[1])
    checked = push_rows(project, ls_server.connection, settings=SETTINGS, full_check=True)
    assert [(p.imported, p.listed) for p in checked.projects] == [(0, True)] * 6


def test_a_crash_in_the_middle_of_a_push_then_a_re_push_leaves_no_duplicate_and_no_gap(
        ls_server: LiveServer, schema: AnnotationSchema, pushed: dict[str, list[TranscriptRow]]) -> None:
    project = ls_server.project
    new_rows: list[TranscriptRow] = []
    for name in ("crash/one", "crash/two", "crash/three"):
        add_catalog_copy(project, MAYA, name)
        new_rows += write_truth_rows(project, MAYA, as_session=name)
    before = {email: set(task_ids(ls_server, "couple", schema, email)) for email in TEAM}
    small = SETTINGS.model_copy(update={"batch_size": 4})
    batches: list[int] = []

    def kill_during_the_next_batch(label: str, done: int, total: int) -> None:
        batches.append(done)
        if len(batches) == 4:  # three batches are in; SIGKILL the server while the fourth is on its way
            threading.Timer(0.02, server.kill, args=(ls_server.paths,)).start()

    with pytest.raises(RescueError, match="cannot reach Label Studio|refused"):
        push_rows(project, ls_server.connection, settings=small, progress=kill_during_the_next_batch)
    assert server.running(ls_server.paths) is None
    ls_server.start()
    first = TEAM[0]  # the crash hit the first annotator's couple project
    partial = set(task_ids(ls_server, "couple", schema, first)) - before[first]
    assert 12 <= len(partial) < len(new_rows) and len(partial) % 4 == 0  # whole batches only
    again = push_rows(project, ls_server.connection, settings=small)
    couple = {p.annotator: p for p in again.projects if p.scenario == "couple"}
    assert couple[first].imported == len(new_rows) - len(partial)
    assert [couple[email].imported for email in TEAM[1:]] == [len(new_rows)] * 2
    assert all(p.duplicates == 0 for p in again.projects)
    for email in TEAM:
        assert set(task_ids(ls_server, "couple", schema, email)) == before[email] | {r.row_id for r in new_rows}


def _records(summary_folder: str, live: LiveServer) -> list[Annotation]:
    return read_jsonl(live.project.root / summary_folder / ANNOTATIONS_FILE, Annotation)


def test_each_annotator_gets_back_exactly_what_they_annotated_for_every_field(
        ls_server: LiveServer, schema: AnnotationSchema, pushed: dict, annotators: dict[str, int]) -> None:
    rows = pushed[MAYA]
    ids = {email: task_ids(ls_server, "couple", schema, email) for email in TEAM}  # each in their own project
    therapist_row, client_row = rows[0], rows[1]
    assert (therapist_row.speaker, client_row.speaker) == ("Therapist", "Maya")
    # ann annotates as herself, with her own token; bob and cem through the admin (completed_by)
    ann = Client(Connection(ls_server.url, login_token(ls_server.url, "ann@example.org",
                                                       annotator_password(ls_server.project, "ann@example.org")),
                            "environment"))
    bob_values = {**client_values(), "utterance_type": "defense", "tone_of_voice": "flat",
                  "internal_emotion": [{"person": "Maya", "emotion_description": "feels unheard", "intensity": 9}]}
    cem_values = {**therapist_values(), "relation_cycle_state": "", "support_strategy": []}
    plan = [  # (annotator, row, values, who creates it)
        ("ann@example.org", client_row, client_values(), None),
        ("ann@example.org", therapist_row, therapist_values(), None),
        ("bob@example.org", client_row, bob_values, annotators["bob@example.org"]),
        ("cem@example.org", therapist_row, cem_values, annotators["cem@example.org"]),
    ]
    made: dict[tuple[str, str], int] = {}
    for email, row, values, completed_by in plan:
        result = encode(schema, values, COUPLE_ENTITIES)
        creator = ann if completed_by is None else ls_server.client
        made[(email, row.row_id)] = creator.create_annotation(ids[email][row.row_id], result,
                                                              completed_by=completed_by)

    summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert {(p.annotator, p.annotators) for p in summary.projects if p.scenario == "couple"} == {
        (email, (email,)) for email in TEAM}
    records = _records(summary.folder, ls_server)
    covered: set[str] = set()
    for email, row, values, _ in plan:
        mine = [r for r in records if r.annotator == email and r.row_id == row.row_id]
        expected = {**values, "start_time": row.start, "end_time": row.end}
        assert {r.field: r.value for r in mine} == expected
        for record in mine:
            assert record == Annotation(
                schema_version="rescue-v1", scenario="couple", session_id=MAYA, row_id=row.row_id,
                row_index=row.row_index, annotator=email, field=record.field, value=expected[record.field],
                task_id=ids[email][row.row_id], annotation_id=made[(email, row.row_id)], updated_at=record.updated_at,
                snapshot=summary.snapshot)
        covered |= {r.field for r in mine}
    assert covered == {field.name for field in schema.fields}  # every field of the schema came back


def test_when_a_user_saves_a_task_twice_the_latest_counts(ls_server: LiveServer, schema: AnnotationSchema,
                                                          pushed: dict, annotators: dict[str, int]) -> None:
    row = pushed[MAYA][2]  # Daniel
    task = task_ids(ls_server, "couple", schema, "bob@example.org")[row.row_id]
    values = {**client_values(), "primary_speaker": "Daniel", "target": ["Therapist"],
              "viewpoints_attitudes": [], "utterance_type": "defense"}
    bob = annotators["bob@example.org"]
    first = ls_server.client.create_annotation(task, encode(schema, values, COUPLE_ENTITIES), completed_by=bob)
    second = ls_server.client.create_annotation(
        task, encode(schema, {**values, "utterance_type": "withdrawal"}, COUPLE_ENTITIES), completed_by=bob)
    summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    couple = next(p for p in summary.projects if p.annotator == "bob@example.org" and p.scenario == "couple")
    mine = [r for r in _records(summary.folder, ls_server) if r.task_id == task]
    assert {r.annotation_id for r in mine} == {second}
    assert next(r.value for r in mine if r.field == "utterance_type") == "withdrawal"
    assert couple.superseded >= 1
    assert any(f"task {task}: bob@example.org saved annotation {first} and later {second}" in line
               for line in couple.superseded_detail)


def test_invalid_annotations_go_to_quarantine_with_task_annotator_and_reason(
        ls_server: LiveServer, schema: AnnotationSchema, pushed: dict, annotators: dict[str, int]) -> None:
    project, client = ls_server.project, ls_server.client
    extra = pushed["extra/maya_again"]
    ids = task_ids(ls_server, "couple", schema, "cem@example.org")
    cem = annotators["cem@example.org"]
    bad = {**client_values(), "utterance_type": "shouting",  # unknown label (the API stores it anyway)
           "body_posture": [{"person": "Bob", "description": "slouching"}],  # not a person of the session
           "support_strategy": [{"provider": "Therapist", "target": ["Maya"], "strategy_type": "track"}]}
    del bad["tone_of_voice"]  # a required field left out
    bad_task = ids[extra[1].row_id]
    client.create_annotation(bad_task, encode(schema, bad, COUPLE_ENTITIES), completed_by=cem)
    gone = extra[3]  # annotated, then the row disappears from the transcript (re-segmentation)
    gone_task = ids[gone.row_id]
    client.create_annotation(gone_task, encode(schema, {**client_values(), "primary_speaker": "Maya"},
                                               COUPLE_ENTITIES), completed_by=cem)
    write_rows(rows_path(project, "extra/maya_again"), [r for r in extra if r.row_id != gone.row_id])

    summary = pull_annotations(project, ls_server.connection, settings=SETTINGS)
    folder = project.root / summary.folder
    lines = [json.loads(line) for line in (folder / QUARANTINE_FILE).read_text().splitlines()]
    assert summary.quarantined == len(lines) > 0
    found = {(q["task_id"], q["annotator"], q["field"]): q["reason"] for q in lines}
    assert "unknown label 'shouting'" in found[(bad_task, "cem@example.org", "utterance_type")]
    assert "names 'Bob', not a person of this session" in found[(bad_task, "cem@example.org", "body_posture")]
    assert found[(bad_task, "cem@example.org", "tone_of_voice")] == "missing required field tone_of_voice"
    assert "therapist rows only" in found[(bad_task, "cem@example.org", "support_strategy")]
    assert "no longer exists" in found[(gone_task, "cem@example.org", None)]
    kept = {r.field for r in _records(summary.folder, ls_server) if r.task_id == bad_task}
    assert {"primary_speaker", "target", "internal_emotion"} <= kept  # the valid fields are not lost
    assert not {"utterance_type", "body_posture", "tone_of_voice"} & kept
    assert not [r for r in _records(summary.folder, ls_server) if r.task_id == gone_task]


def test_snapshots_are_stored_verbatim_read_only_and_never_overwritten(ls_server: LiveServer, pushed: dict) -> None:
    first = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    folder = ls_server.project.root / first.folder
    digest = tree_digest(folder)
    second = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert second.snapshot > first.snapshot and second.folder != first.folder
    assert tree_digest(folder) == digest
    for path in folder.rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o444
    schema = load_schema(ls_server.project.schemas / "rescue-v1.yaml")
    for email in TEAM:
        exported = json.loads((folder / "exports" / "couple" / f"{email}.json").read_text())
        assert {t["id"] for t in exported} == set(task_ids(ls_server, "couple", schema, email).values())
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["snapshot"] == first.snapshot
    # the hash every reader checks the records against (pipeline.agreement.inputs.check_snapshot)
    assert summary["annotations_sha256"] == sha256_file(folder / ANNOTATIONS_FILE)
    for line in (folder / ANNOTATIONS_FILE).read_text().splitlines():  # pydantic's own JSON, byte for byte
        assert Annotation.model_validate_json(line).model_dump_json() == line


def test_an_export_in_an_unknown_schema_version_is_refused_but_kept(ls_server: LiveServer, schema: AnnotationSchema,
                                                                    pushed: dict) -> None:
    summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    tasks = json.loads((ls_server.project.root / summary.folder / "exports" / "couple" / "cem@example.org.json"
                        ).read_text())
    assert any(t["annotations"] for t in tasks)
    future = copy.deepcopy(tasks)
    for task in future:
        task["data"]["schema"] = "rescue-v9"
    data = json.dumps(future).encode()
    with pytest.raises(RescueError, match="schema version\\(s\\) 'rescue-v9'") as caught:
        snapshot_from_exports(ls_server.project, {"couple": data}, {}, schema=schema, source="a stored file")
    assert "known: rescue-v1" in caught.value.message and "annotation_schemas/" in caught.value.fix
    kept = sorted((ls_server.project.build / "annotations").glob("*/exports/couple/shared.json"))[-1]
    assert kept.read_bytes() == data and not (kept.parent.parent / ANNOTATIONS_FILE).exists()


def test_a_label_config_the_server_rejects_is_one_clear_error(ls_server: LiveServer, schema: AnnotationSchema,
                                                              pushed: dict, annotators: dict[str, int]) -> None:
    row = pushed[MAYA][3]
    task = task_ids(ls_server, "couple", schema, "ann@example.org")[row.row_id]
    ls_server.client.create_annotation(task, encode(schema, client_values(), COUPLE_ENTITIES),
                                       completed_by=annotators["ann@example.org"])
    without = AnnotationSchema.model_validate({**schema.model_dump(mode="json"), "fields": [
        f.model_dump(mode="json") for f in schema.fields if f.name != "utterance_type"]})
    with pytest.raises(RescueError, match="rejected the new label config of project "
                                          "'RESCUE couple - rescue-v1 / ann@example.org'") as e:
        push_rows(ls_server.project, ls_server.connection, settings=SETTINGS, schema=without)
    assert "from_name=utterance_type" in e.value.message and "new version" in e.value.fix


def test_pull_without_projects_says_push_first(ls_server: LiveServer, schema: AnnotationSchema) -> None:
    other = AnnotationSchema.model_validate({**schema.model_dump(mode="json"), "version": "77"})
    with pytest.raises(RescueError, match="has no annotation project 'RESCUE couple - rescue-v77 / "
                                          "<email>'") as caught:
        pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS, schema=other)
    assert "rescue push" in caught.value.fix


def test_the_push_and_pull_commands(ls_server: LiveServer, pushed: dict) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["--root", str(ls_server.project.root), "push", "--standalone"])
    assert result.exit_code == 0, result.stderr
    assert "standalone run (--standalone): no build state recorded" in result.stdout
    for email in TEAM:
        assert f"couple / {email}: 0 task(s) imported, " in result.stdout
    assert "0 duplicate(s)" in result.stdout and "no annotators yet" not in result.stdout
    result = runner.invoke(main, ["--root", str(ls_server.project.root), "pull", "--standalone"])
    assert result.exit_code == 0, result.stderr
    snapshot = re.search(r"snapshot (\d{8}T\d{6}Z) -> (\S+)/", result.stdout)
    assert snapshot and (ls_server.project.root / snapshot.group(2) / ANNOTATIONS_FILE).exists()
    assert re.search(r"couple / cem@example.org: \d+ tasks, \d+ annotations .* -> \d+ records, \d+ quarantined",
                     result.stdout)
    assert "quarantined: see build/annotations/" in result.stdout  # earlier tests left invalid annotations


def test_nothing_leaks_the_admin_token(ls_server: LiveServer, annotators: dict[str, int]) -> None:
    token = ls_server.admin()["token"]
    paths = ls_server.paths
    invite = ls_server.client.invite_token()
    for path in Path(ls_server.project.build).rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_relative_to(paths.data) or path in (paths.admin, paths.log):
            # the server's database holds every token in plain text, its log the invite token: private to the user
            assert mode == (0o700 if path.is_dir() else 0o600), f"{path} mode {mode:o}"
        elif path.is_file():
            assert token.encode() not in path.read_bytes(), path
            assert invite.encode() not in path.read_bytes(), path
    assert stat.S_IMODE(paths.base.stat().st_mode) == stat.S_IMODE(paths.data.stat().st_mode) == 0o700
    assert token not in repr(ls_server.connection)
