"""The agreement report's links to Label Studio (issue 22, part 5), against a real server and its gateway.

Two annotators answer one client row differently in their own projects, the row goes to the adjudication queue,
and the report lists it with three links: each annotator's task and the adjudication task. The links use the
configured address (the gateway, on the port it keeps across restarts), not the server's port of the day, and
each one opens, through the gateway, the task of that row for the one who may see it."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

from pipeline.agreement.agree import run_agree
from pipeline.agreement.gold import run_adjudicate
from pipeline.agreement.queue_labelstudio import push_queue
from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate import server
from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.annotate.results import encode
from pipeline.cli import main
from pipeline.schema import load_schema
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows
from tests.web_session import log_in

ANN_A, ANN_B, ADJUDICATOR = "ann.a@example.org", "ann.b@example.org", "lead@example.org"
AGREEMENT = AgreementSettings(text_similarity=False, bootstrap_samples=50, adjudicators=(ADJUDICATOR,))


@pytest.fixture(scope="module")
def ls_server(own_ls_server: LiveServer) -> LiveServer:
    """A server of this module's own, not the run's shared one (tests/labelstudio_fixtures.py): the module restarts its
    server through `rescue labelstudio down` and `up`."""
    return own_ls_server


def test_report_links_every_annotators_task_and_the_adjudication_task_at_the_kept_address(
        ls_server: LiveServer) -> None:
    project, client = ls_server.project, ls_server.client
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel")
    row = next(r for r in rows if r.speaker != "Therapist")
    accounts = {a.email: a.user_id for a in add_annotators(project, ls_server.connection, [ANN_A, ANN_B])}
    push_rows(project, ls_server.connection, settings=SETTINGS)
    projects, tasks = {}, {}
    for email, label in ((ANN_A, "accusation"), (ANN_B, "defense")):  # they disagree on the row's utterance type
        info = client.find_project(annotator_title(schema, "couple", email))
        assert info is not None
        projects[email], tasks[email] = info.id, client.task_keys(info.id)[row.row_id][0]
        result = encode(schema, {**client_values(), "utterance_type": label}, COUPLE_ENTITIES)
        client.create_annotation(tasks[email], result, completed_by=accounts[email])
    pull_annotations(project, ls_server.connection, settings=SETTINGS)
    add_annotators(project, ls_server.connection, [ADJUDICATOR], role="adjudicator")
    _, items = run_adjudicate(project, AGREEMENT)
    assert (row.row_id, "utterance_type") in {(i.row_id, i.field) for i in items}
    push_queue(project, AGREEMENT, items, ls_server.connection)

    # a restart gives the server a new port; the gateway keeps its own, and the links point there
    first = server.read_state(ls_server.paths)
    assert first is not None and first.gateway_url
    root = ["--root", str(project.root)]
    assert CliRunner().invoke(main, [*root, "labelstudio", "down"]).exit_code == 0
    (project.root / "pyproject.toml").write_text(f'[tool.rescue.agreement]\nadjudicators = ["{ADJUDICATOR}"]\n'
                                                 f'[tool.rescue.annotate]\nserver_venv = "{SETTINGS.server_venv}"\n')
    up = CliRunner().invoke(main, [*root, "labelstudio", "up"])
    assert up.exit_code == 0, up.output
    state = server.read_state(ls_server.paths)
    assert state is not None and state.gateway_url == first.gateway_url and state.url != state.gateway_url

    report = run_agree(project, AGREEMENT, text=False).report
    (shown,) = [d for g in report.disagreements if g.measure == "utterance_type" for d in g.shown]
    assert shown.row_id == row.row_id
    assert [(t.kind, t.annotator) for t in shown.links] == [("annotator", ANN_A), ("annotator", ANN_B),
                                                            ("adjudication", "")]
    for link in shown.links:
        assert link.url.startswith(f"{state.gateway_url}/projects/"), link.url
    page = (project.build / "agreement" / "report.html").read_text(encoding="utf-8")
    assert all(f'href="{link.url}"' in page for link in shown.links) and state.url not in page

    who = {ANN_A: ANN_A, ANN_B: ANN_B}
    for link in shown.links:
        email = who.get(link.annotator, ADJUDICATOR)
        parts = urlsplit(link.url)
        project_id = int(parts.path.split("/")[2])
        (task_id,) = map(int, parse_qs(parts.query)["task"])
        with log_in(state.gateway_url, email, annotator_password(project, email)) as web:
            assert web.get(f"{parts.path}?{parts.query}").status_code == 200  # the labelling page opens
            task = web.get(f"/api/tasks/{task_id}/")
            assert task.status_code == 200, (link, task.text)
            assert task.json()["project"] == project_id and task.json()["data"]["row_id"] == row.row_id
        if link.kind == "annotator":
            assert (project_id, task_id) == (projects[email], tasks[email])
    other = shown.links[1]  # B's task is B's alone: the gateway refuses it to A
    with log_in(state.gateway_url, ANN_A, annotator_password(project, ANN_A)) as web:
        assert web.get(f"/api/tasks/{parse_qs(urlsplit(other.url).query)['task'][0]}/").status_code == 403
