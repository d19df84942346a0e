"""Annotation integrity against a real Label Studio server, attacked over HTTP as issue 19 describes, with the
second annotator's own API token: an answer another account changed or forged is not taken as the
annotator's (their earlier own version is kept), an account not on the roster gets no project and its answers
do not count, and an answer or a whole project deleted on the server is kept (and reported) until the loss is
accepted. The adjudicator gets no annotation project."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pipeline.agreement.agree import run_agree
from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.carry_forward import KEPT_FILE, KeptAnswer
from pipeline.annotate.integrity_notes import pull_notes, push_notes
from pipeline.annotate.labelstudio import login_token, sign_up
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import ANNOTATIONS_FILE, QUARANTINE_FILE, PullSummary, pull_annotations
from pipeline.annotate.push import load_sessions, push_rows
from pipeline.annotate.results import encode
from pipeline.annotate.roster import load_roster
from pipeline.annotate.tasks import build_task
from pipeline.errors import RescueError
from pipeline.records import Annotation, TranscriptRow
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import read_jsonl
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows

MAYA = "sample/maya_and_daniel"
ANN1, ANN2 = "ann1@example.org", "ann2@example.org"
ADJUDICATOR = "adjudicator@example.org"
PUPPET = "puppet@x.org"


class Http:
    """Raw API calls with one account's own token, as an annotator could make them with curl."""

    def __init__(self, url: str, token: str) -> None:
        self.web = httpx.Client(base_url=url, headers={"Authorization": f"Token {token}"}, timeout=60)

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        response = self.web.request(method, path, json=body)
        assert response.status_code < 300, (method, path, response.status_code, response.text[:300])
        return response


@pytest.fixture(scope="module")
def schema(ls_server: LiveServer) -> AnnotationSchema:
    return load_schema(ls_server.project.schemas / "rescue-v1.yaml")


@pytest.fixture(scope="module")
def accounts(ls_server: LiveServer) -> dict[str, int]:
    made = add_annotators(ls_server.project, ls_server.connection, [ANN1, ANN2])
    made += add_annotators(ls_server.project, ls_server.connection, [ADJUDICATOR], role="adjudicator")
    return {account.email: account.user_id for account in made}


@pytest.fixture(scope="module")
def rows(ls_server: LiveServer, accounts: dict[str, int]) -> list[TranscriptRow]:
    made = write_truth_rows(ls_server.project, MAYA)
    push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    return made


def http_as(live: LiveServer, email: str) -> Http:
    return Http(live.url, login_token(live.url, email, annotator_password(live.project, email)))


def own_tasks(live: LiveServer, schema: AnnotationSchema, email: str) -> dict[str, int]:
    info = live.client.find_project(annotator_title(schema, "couple", email))
    assert info is not None, email
    return {row_id: ids[0] for row_id, ids in live.client.task_keys(info.id).items()}


def answer(schema: AnnotationSchema, row: TranscriptRow, **changes: Any) -> list[dict[str, Any]]:
    return encode(schema, {**client_values(), "primary_speaker": row.speaker, **changes}, COUPLE_ENTITIES)


def pull(live: LiveServer, **kwargs: Any) -> tuple[PullSummary, list[Annotation], list[dict[str, Any]]]:
    summary = pull_annotations(live.project, live.connection, settings=SETTINGS, **kwargs)
    folder = live.project.root / summary.folder
    quarantine = [json.loads(line) for line in (folder / QUARANTINE_FILE).read_text().splitlines()]
    return summary, read_jsonl(folder / ANNOTATIONS_FILE, Annotation), quarantine


def values_of(records: list[Annotation], annotator: str, row: TranscriptRow) -> dict[str, Any]:
    return {r.field: r.value for r in records if (r.annotator, r.row_id) == (annotator, row.row_id)}


@pytest.fixture(scope="module")
def saved(ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int],
          rows: list[TranscriptRow]) -> dict[tuple[str, int], int]:
    """Both annotators answered rows 1-5, each with their own token in their own project; then a pull."""
    made = {}
    for email in (ANN1, ANN2):
        web, tasks = http_as(ls_server, email), own_tasks(ls_server, schema, email)
        for index in range(1, 6):
            row = rows[index]
            body = {"result": answer(schema, row), "lead_time": 3.0}
            created = web.call("POST", f"/api/tasks/{tasks[row.row_id]}/annotations", body).json()
            made[(email, index)] = int(created["id"])
    summary, records, _ = pull(ls_server)
    assert {r.annotator for r in records} == {ANN1, ANN2} and not summary.kept
    return made


def test_the_roster_keeps_who_joined_when_and_the_adjudicator_gets_no_annotation_project(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow]) -> None:
    roster = {entry.email: entry for entry in load_roster(ls_server.project)}
    assert {e: (roster[e].role, roster[e].user_id) for e in roster} == {
        ANN1: ("annotator", accounts[ANN1]), ANN2: ("annotator", accounts[ANN2]),
        ADJUDICATOR: ("adjudicator", accounts[ADJUDICATOR])}
    assert all(entry.joined.startswith("20") for entry in roster.values())
    summary = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert summary.annotators == (ANN1, ANN2)
    assert ls_server.client.find_project(annotator_title(schema, "couple", ADJUDICATOR)) is None
    assert not summary.strangers  # the adjudicator is on the roster: no stranger


def test_a_patch_by_another_annotator_is_quarantined_with_who_and_the_earlier_own_version_is_kept(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    row, target = rows[1], saved[(ANN1, 1)]
    before = values_of(pull(ls_server)[1], ANN1, row)
    http_as(ls_server, ANN2).call("PATCH", f"/api/annotations/{target}",
                                  {"result": answer(schema, row, target=["Daniel"])})
    summary, records, quarantine = pull(ls_server)
    assert values_of(records, ANN1, row) == before  # ann1's own last version, not ann2's change
    assert before["target"] != ["Daniel"]
    (refused,) = [q for q in quarantine if q["annotation_id"] == target]
    assert refused["annotator"] == ANN1 and refused["field"] is None
    assert refused["reason"].startswith(f"changed by {ANN2} at ") and "updated_by" in refused["reason"]
    (kept,) = [k for k in summary.kept if k.annotation_id == target]
    assert (kept.kind, kept.annotator, kept.row_id) == ("changed", ANN1, row.row_id)
    assert f"changed by {ANN2}" in kept.reason
    assert any(f"changed by {ANN2}" in note for note in pull_notes(summary))
    assert sum(p.disowned for p in summary.projects) == 1


def test_a_forged_post_crediting_another_annotator_is_not_taken_as_theirs(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    row = rows[2]
    task = own_tasks(ls_server, schema, ANN1)[row.row_id]
    forged = http_as(ls_server, ANN2).call("POST", f"/api/tasks/{task}/annotations", {
        "result": answer(schema, row, dialogue_cleaned="FORGED-BY-B"), "completed_by": accounts[ANN1]}).json()
    assert forged["completed_by"] == accounts[ANN1]  # the server credits ann1, as the issue found
    summary, records, quarantine = pull(ls_server)
    mine = [r for r in records if (r.annotator, r.row_id) == (ANN1, row.row_id)]
    assert {r.annotation_id for r in mine} == {saved[(ANN1, 2)]}  # ann1's real answer still counts
    assert "FORGED-BY-B" not in (ls_server.project.root / summary.folder / ANNOTATIONS_FILE).read_text()
    (refused,) = [q for q in quarantine if q["annotation_id"] == forged["id"]]
    assert refused["reason"].startswith(f"changed by {ANN2} at ") and f"credited to {ANN1}" in refused["reason"]


def test_a_puppet_account_gets_no_project_and_its_answers_do_not_count(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    ann2 = http_as(ls_server, ANN2)
    invite = ann2.call("GET", "/api/invite").json()["token"]
    assert sign_up(ls_server.url, invite, PUPPET, "puppet-pass-4821") == "created"
    pushed = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert pushed.annotators == (ANN1, ANN2)
    assert ls_server.client.find_project(annotator_title(schema, "couple", PUPPET)) is None
    (stranger,) = pushed.strangers
    assert stranger.email == PUPPET and stranger.joined.startswith("20")
    assert any(PUPPET in note and "not on the roster" in note for note in push_notes(pushed))

    # ann2 makes the puppet the project push refused, and the puppet answers there with its own token
    (session,), _ = load_sessions(ls_server.project, (MAYA,))
    info = ann2.call("POST", "/api/projects", {"title": annotator_title(schema, "couple", PUPPET),
                                               "label_config": ls_server.client.find_project(
                                                   annotator_title(schema, "couple", ANN1)).label_config}).json()
    imported = ann2.call("POST", f"/api/projects/{info['id']}/import?return_task_ids=true", [  # type: ignore[arg-type]
        build_task(schema, session, index, context_rows=2, media_url=None) for index in range(1, 6)]).json()
    puppet = Http(ls_server.url, login_token(ls_server.url, PUPPET, "puppet-pass-4821"))
    for task_id, index in zip(imported["task_ids"], range(1, 6)):
        puppet.call("POST", f"/api/tasks/{task_id}/annotations", {"result": answer(schema, rows[index],
                                                                                    utterance_type="defense")})
    summary, records, quarantine = pull(ls_server)
    assert PUPPET not in {r.annotator for r in records}
    assert len([q for q in quarantine if q["annotator"] == PUPPET and "not on the roster" in q["reason"]]) == 5
    assert [s.email for s in summary.strangers] == [PUPPET]
    assert any(PUPPET in note and "5 answer(s) quarantined" in note for note in pull_notes(summary))

    report = run_agree(ls_server.project, AgreementSettings(bootstrap_samples=0, text_similarity=False)).report
    assert report.annotators == (ANN1, ANN2)  # the count is unchanged: 2, not 3
    assert any(n.kind == "not_on_roster" and PUPPET in n.message for n in report.notes)


def test_a_deleted_annotation_is_reported_and_kept_until_the_loss_is_accepted(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    row, target = rows[3], saved[(ANN1, 3)]
    before = values_of(pull(ls_server)[1], ANN1, row)
    http_as(ls_server, ANN2).call("DELETE", f"/api/annotations/{target}")
    first, records, _ = pull(ls_server)
    assert values_of(records, ANN1, row) == before
    (kept,) = [k for k in first.kept if k.annotation_id == target]
    assert (kept.kind, kept.annotator, kept.row_id, set(kept.fields)) == ("deleted", ANN1, row.row_id, set(before))
    assert any(f"{ANN1}, row {row.row_id}" in note and "gone from the server" in note for note in pull_notes(first))
    folder = ls_server.project.root / first.folder
    assert [KeptAnswer.model_validate_json(line).annotation_id for line in (folder / KEPT_FILE).read_text()
            .splitlines()].count(target) == 1

    second, records, _ = pull(ls_server)  # still kept, missed since the same time
    assert values_of(records, ANN1, row) == before
    assert [k.missed_at for k in second.kept if k.annotation_id == target] == [kept.missed_at]

    accepted, records, _ = pull(ls_server, accept_deleted=True)
    assert values_of(records, ANN1, row) == {}
    assert accepted.accept_deleted and [k.annotation_id for k in accepted.accepted_deleted] == [target]
    recorded = json.loads((ls_server.project.root / accepted.folder / "summary.json").read_text())
    assert recorded["accept_deleted"] is True and recorded["accepted_deleted"][0]["row_id"] == row.row_id
    after, records, _ = pull(ls_server)
    assert values_of(records, ANN1, row) == {} and not [k for k in after.kept if k.annotation_id == target]


def test_a_deleted_project_stops_push_and_pull_keeps_its_answers(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    _, records, _ = pull(ls_server)
    ann2_answers = {row.row_id: values_of(records, ANN2, row) for row in rows[1:6]}
    info = ls_server.client.find_project(annotator_title(schema, "couple", ANN2))
    assert info is not None
    http_as(ls_server, ANN1).call("DELETE", f"/api/projects/{info.id}")

    with pytest.raises(RescueError) as refused:
        push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert f"the couple project of {ANN2} (id {info.id}) is gone from the server" in refused.value.message
    assert "--recreate-deleted" in refused.value.fix
    assert ls_server.client.find_project(annotator_title(schema, "couple", ANN2)) is None  # not re-created

    summary, records, _ = pull(ls_server)
    assert {row.row_id: values_of(records, ANN2, row) for row in rows[1:6]} == ann2_answers
    kinds = {k.kind for k in summary.kept if k.annotator == ANN2}
    assert kinds == {"project_deleted"} and len([k for k in summary.kept if k.annotator == ANN2]) == 5

    again = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS, recreate_deleted=True)
    assert [line for line in again.recreated if ANN2 in line and "made again, empty" in line]
    assert set(own_tasks(ls_server, schema, ANN2)) == {row.row_id for row in rows}
    noted = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)  # until the next pull: said again
    assert [line for line in noted.recreated if ANN2 in line and "replaced by a new project" in line]
    later, records, _ = pull(ls_server)  # the new project holds nothing yet: the old answers stay kept
    assert {row.row_id: values_of(records, ANN2, row) for row in rows[1:6]} == ann2_answers
    assert all(count >= 0 for p in later.projects for count in (p.records, p.quarantined, p.superseded))



def test_a_patch_that_names_the_annotator_as_its_writer_or_a_task_import_with_their_answer_is_still_caught(
        ls_server: LiveServer, schema: AnnotationSchema, accounts: dict[str, int], rows: list[TranscriptRow],
        saved: dict[tuple[str, int], int]) -> None:
    """Label Studio 1.23's Annotation.save() stamps updated_by with the request's user, whatever the body says;
    an annotation imported with a task has no updated_by at all (the pipeline never imports annotations)."""
    row, target = rows[4], saved[(ANN1, 4)]
    before = values_of(pull(ls_server)[1], ANN1, row)
    ann2 = http_as(ls_server, ANN2)
    ann2.call("PATCH", f"/api/annotations/{target}", {
        "result": answer(schema, row, dialogue_cleaned="SILENT-CHANGE"), "updated_by": accounts[ANN1],
        "completed_by": accounts[ANN1]})
    (session,), _ = load_sessions(ls_server.project, (MAYA,))
    project_id = ls_server.client.find_project(annotator_title(schema, "couple", ANN1)).id  # type: ignore[union-attr]
    smuggled = {**build_task(schema, session, 6, context_rows=2, media_url=None),
                "annotations": [{"result": answer(schema, rows[6], dialogue_cleaned="IMPORTED-AS-ANN1"),
                                 "completed_by": accounts[ANN1]}]}
    ann2.call("POST", f"/api/projects/{project_id}/import", [smuggled])  # type: ignore[arg-type]

    summary, records, quarantine = pull(ls_server)
    assert values_of(records, ANN1, row) == before
    text = (ls_server.project.root / summary.folder / ANNOTATIONS_FILE).read_text()
    assert "SILENT-CHANGE" not in text and "IMPORTED-AS-ANN1" not in text
    reasons = {q["annotation_id"]: q["reason"] for q in quarantine}
    assert reasons[target].startswith(f"changed by {ANN2} at ")
    assert [r for r in reasons.values() if r.startswith(f"imported with its task, credited to {ANN1}")]
