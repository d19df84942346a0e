"""Independent labels against a real Label Studio server: every annotator labels the same rows in a project
of their own, so no task an annotator opens holds another annotator's answer; a new annotator gets their
projects on the next push; pull exports every annotator's project (and a shared one of older pushes), and
an annotation another account made in an annotator's project is reported, never merged."""

from __future__ import annotations

import json

import pytest

from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.config import build_config
from pipeline.annotate.labelstudio import Client, Connection, login_token
from pipeline.annotate.projects import annotation_projects, annotator_title, project_title
from pipeline.annotate.pull import ANNOTATIONS_FILE, QUARANTINE_FILE, pull_annotations
from pipeline.annotate.push import load_sessions, push_rows
from pipeline.annotate.roster import counted_annotators
from pipeline.annotate.results import encode
from pipeline.annotate.tasks import build_task
from pipeline.records import Annotation, TranscriptRow
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import read_jsonl
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

MAYA = "sample/maya_and_daniel"
ANN, BOB = "ann@example.org", "bob@example.org"
CEM = "cem.longsurname@psychology.example.org"  # too long for a 50-character title: shortened there


@pytest.fixture(scope="module")
def schema(ls_server: LiveServer) -> AnnotationSchema:
    return load_schema(ls_server.project.schemas / "rescue-v1.yaml")


@pytest.fixture(scope="module")
def accounts(ls_server: LiveServer) -> dict[str, int]:
    made = add_annotators(ls_server.project, ls_server.connection, [ANN, BOB])
    return {account.email: account.user_id for account in made}


@pytest.fixture(scope="module")
def rows(ls_server: LiveServer, accounts: dict[str, int]) -> list[TranscriptRow]:
    made = write_truth_rows(ls_server.project, MAYA)
    push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    return made


def own_tasks(live: LiveServer, schema: AnnotationSchema, email: str) -> dict[str, int]:
    info = live.client.find_project(annotator_title(schema, "couple", email))
    assert info is not None, email
    return {row_id: ids[0] for row_id, ids in live.client.task_keys(info.id).items()}


def as_user(live: LiveServer, email: str) -> Client:
    token = login_token(live.url, email, annotator_password(live.project, email))
    return Client(Connection(live.url, token, "environment"))


def test_each_annotator_has_own_projects_and_never_receives_another_annotators_answer(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow]) -> None:
    client = ls_server.client
    assert counted_annotators(ls_server.project) == (ANN, BOB)  # the roster `rescue annotators add` keeps
    assert client.find_project(project_title(schema, "couple")) is None  # no shared annotation project any more
    mine, theirs = own_tasks(ls_server, schema, ANN), own_tasks(ls_server, schema, BOB)
    assert set(mine) == set(theirs) == {row.row_id for row in rows}  # the same rows, different tasks
    for email in (ANN, BOB):
        info = client.find_project(annotator_title(schema, "couple", email))
        assert info is not None and info.maximum_annotations == 1 and info.task_number == len(rows)

    row = rows[1]
    ann = as_user(ls_server, ANN)
    ann.create_annotation(mine[row.row_id], encode(schema, client_values(), COUPLE_ENTITIES))
    bob = as_user(ls_server, BOB)
    seen = bob.task_detail(theirs[row.row_id])  # what bob's labeling view of the row loads
    assert seen["annotations"] == [] and seen["data"]["row_id"] == row.row_id
    assert client_values()["tone_of_voice"] not in json.dumps(seen)
    assert len(ann.task_detail(mine[row.row_id])["annotations"]) == 1  # ann's answer is there, in her project


def test_a_new_annotator_gets_every_row_on_the_next_push_and_nothing_is_pushed_twice(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow]) -> None:
    again = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert [(p.annotator, p.imported, p.already_present, p.duplicates) for p in again.projects] == [
        (ANN, 0, len(rows), 0), (BOB, 0, len(rows), 0)]
    add_annotators(ls_server.project, ls_server.connection, [CEM])
    later = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert later.annotators == (ANN, BOB, CEM)
    assert [(p.annotator, p.imported, p.already_present) for p in later.projects] == [
        (ANN, 0, len(rows)), (BOB, 0, len(rows)), (CEM, len(rows), 0)]
    assert set(own_tasks(ls_server, schema, CEM)) == {row.row_id for row in rows}
    title = annotator_title(schema, "couple", CEM)
    assert len(title) <= 50 and title.startswith("RESCUE couple - rescue-v1 / cem.long") and "~" in title
    adjudicated = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS, annotators=(ANN, BOB))
    assert [p.annotator for p in adjudicated.projects] == [ANN, BOB]  # an explicit roster limits it
    assert counted_annotators(ls_server.project, adjudicators=(CEM,)) == (ANN, BOB)


def test_pull_exports_every_annotators_project_and_reports_answers_made_in_someone_elses(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow]) -> None:
    client = ls_server.client
    row = rows[3]
    bob_values = {**client_values(), "primary_speaker": "Daniel", "target": ["Therapist"],
                  "viewpoints_attitudes": [], "utterance_type": "defense"}
    bobs = client.create_annotation(own_tasks(ls_server, schema, BOB)[row.row_id],
                                    encode(schema, bob_values, COUPLE_ENTITIES), completed_by=accounts[BOB])
    cem_task = own_tasks(ls_server, schema, CEM)[row.row_id]
    stray = client.create_annotation(cem_task, encode(schema, client_values(), COUPLE_ENTITIES),
                                     completed_by=accounts[ANN])  # ann's answer saved in cem's project

    summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
    folder = ls_server.project.root / summary.folder
    assert sorted((p.scenario, p.annotator) for p in summary.projects) == [
        ("couple", ANN), ("couple", BOB), ("couple", CEM)]
    for email in (ANN, BOB, CEM):
        assert (folder / "exports" / "couple" / f"{email}.json").is_file()
    records = read_jsonl(folder / ANNOTATIONS_FILE, Annotation)
    assert {(r.annotator, r.row_id) for r in records} == {(ANN, rows[1].row_id), (BOB, row.row_id)}
    assert {r.annotation_id for r in records if r.annotator == BOB} == {bobs}
    assert not [r for r in records if r.annotation_id == stray]  # not merged into ann's answers
    cem = next(p for p in summary.projects if p.annotator == CEM)
    assert cem.foreign == 1 and cem.records == 0
    (line,) = [q for q in map(json.loads, (folder / QUARANTINE_FILE).read_text().splitlines())
               if q["annotation_id"] == stray]
    assert (line["task_id"], line["annotator"], line["field"]) == (cem_task, ANN, None)
    assert f"own project of {CEM}: not merged" in line["reason"]


def test_a_shared_project_of_an_older_push_is_still_pulled_and_the_latest_save_counts(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow]) -> None:
    client = ls_server.client
    (session,), _ = load_sessions(ls_server.project, (MAYA,))
    old = client.create_project(project_title(schema, "couple"), "as pushed before independent labels",
                                build_config(schema, "couple"), 3)
    try:
        only_there, both = rows[5], rows[6]
        created = client.import_tasks(old.id, [build_task(schema, session, index, context_rows=2, media_url=None)
                                               for index in (5, 6)])
        shared = dict(zip((only_there.row_id, both.row_id), created))
        kept = client.create_annotation(shared[only_there.row_id], encode(schema, client_values(), COUPLE_ENTITIES),
                                        completed_by=accounts[BOB])
        earlier = client.create_annotation(shared[both.row_id], encode(schema, client_values(), COUPLE_ENTITIES),
                                           completed_by=accounts[ANN])
        later = client.create_annotation(own_tasks(ls_server, schema, ANN)[both.row_id],
                                         encode(schema, client_values(), COUPLE_ENTITIES), completed_by=accounts[ANN])
        assert {p.annotator for p in annotation_projects(client, schema)} == {None, ANN, BOB, CEM}

        summary = pull_annotations(ls_server.project, ls_server.connection, settings=SETTINGS)
        records = read_jsonl(ls_server.project.root / summary.folder / ANNOTATIONS_FILE, Annotation)
        assert {r.annotation_id for r in records if r.row_id == only_there.row_id} == {kept}  # nothing lost
        mine = {r.annotation_id for r in records if (r.annotator, r.row_id) == (ANN, both.row_id)}
        assert mine == {later}  # one answer per annotator and row: the latest save, wherever it was made
        old_part = next(p for p in summary.projects if p.annotator is None)
        assert old_part.export_file == "exports/couple/shared.json" and old_part.superseded == 1
        assert f"{ANN} saved annotation {earlier} of row {both.row_id} here and later" in old_part.superseded_detail[0]
    finally:
        client.delete_project(old.id)
