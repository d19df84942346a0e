"""The annotators' gateway in front of a real embedded Label Studio server (issue 19, part 5), over HTTP.

It starts and stops with the server (`rescue labelstudio up|status|down`, a server killed outright), lets an
annotator work in their own projects, and refuses every attack call of the issue, replayed as annotator ann2 by
session cookie and by API token, with 403 and a log line; the same calls sent straight to the server's port
succeed, which shows that the refusals are the gateway's and not the server's."""

from __future__ import annotations

import os
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from pipeline.annotate import gateway_process, server
from pipeline.annotate.accounts import add_annotators, annotator_password
from pipeline.annotate.labelstudio import login_token
from pipeline.annotate.projects import annotator_title, is_annotator_project
from pipeline.annotate.push import push_rows
from pipeline.cli import main
from pipeline.errors import RescueError
from pipeline.schema import load_schema
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows
from tests.web_session import log_in

ANN1, ANN2 = "ann1@example.org", "ann2@example.org"


@pytest.fixture(scope="module")
def ls_server(own_ls_server: LiveServer) -> LiveServer:
    """A server of this module's own, not the run's shared one (tests/labelstudio_fixtures.py): the module kills the
    gateway and the server, and starts and stops them through `rescue labelstudio`."""
    return own_ls_server


@dataclass(frozen=True)
class World:
    live: LiveServer
    users: dict[str, int]
    projects: dict[str, int]  # email -> their couple project
    tasks: dict[str, int]  # email -> the task of row 2 in their project
    ann1_annotation: int
    media_url: str

    def password(self, email: str) -> str:
        return annotator_password(self.live.project, email)


@pytest.fixture(scope="module")
def world(ls_server: LiveServer) -> World:
    project = ls_server.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel", with_clip=True)
    add_annotators(project, ls_server.connection, [ANN1, ANN2])
    push_rows(project, ls_server.connection, settings=SETTINGS)
    client = ls_server.client
    users = {email: user_id for user_id, email in client.users().items()}
    projects, tasks = {}, {}
    for email in (ANN1, ANN2):
        info = client.find_project(annotator_title(schema, "couple", email))
        assert info is not None
        projects[email] = info.id
        tasks[email] = client.task_keys(info.id)[rows[1].row_id][0]
    with log_in(ls_server.gateway_url, ANN1, annotator_password(project, ANN1)) as ann1:  # ann1 works as usual
        saved = ann1.post(f"/api/tasks/{tasks[ANN1]}/annotations", params={"project": projects[ANN1]},
                          json={"result": [], "lead_time": 3.5})
    assert saved.status_code == 201, saved.text
    media_url = client.task_detail(tasks[ANN2])["data"]["video"].split("#")[0]
    return World(ls_server, users, projects, tasks, int(saved.json()["id"]), media_url)


def refusals(live: LiveServer) -> list[str]:
    return live.paths.gateway_log.read_text(encoding="utf-8").splitlines()


def test_annotator_titles_belong_to_their_annotator_only() -> None:
    schema = load_schema(Path(__file__).parents[1] / "annotation_schemas" / "rescue-v1.yaml")
    long_email = "a.very.long.annotator.name@some-university.example.org"
    for email in (ANN1, long_email):
        title = annotator_title(schema, "couple", email)
        assert is_annotator_project(title, email) and is_annotator_project(title, email.upper())
        assert not is_annotator_project(title, ANN2)
    assert not is_annotator_project("RESCUE couple - rescue-v1", ANN1)  # the shared project of older pushes
    assert not is_annotator_project("RESCUE couple - rescue-v1 - adjudication", ANN1)
    assert not is_annotator_project(f"Someone else's / {ANN1}", ANN1)


@pytest.mark.parametrize(("method", "path", "reason"), [
    ("GET", "/api/invite", "user management"), ("POST", "/api/users", "user management"),
    ("PATCH", "/api/users/1", "user management"), ("POST", "/user/signup/", "sign-up"),
    ("POST", "/api/current-user/reset-token/", "tokens"), ("GET", "/api/current-user/token", "tokens"),
    ("POST", "/api/projects", "project creation"), ("PATCH", "/api/projects/7", "project settings"),
    ("DELETE", "/api/annotations/5", "deletion"), ("DELETE", "/api/projects/7", "deletion"),
    ("GET", "/api/projects/7/export", "exports"), ("POST", "/api/projects/7/exports", "exports"),
    ("POST", "/api/projects/7/import", "imports"), ("POST", "/api/storages/localfiles", "storages"),
    ("POST", "/api/dm/actions", "allow-list"), ("GET", "/api/organizations/1/memberships", "user management"),
])
def test_the_allow_list_has_no_route_for_what_must_be_refused(method: str, path: str, reason: str) -> None:
    from pipeline.annotate import gateway_rules

    assert gateway_rules.find_route(method, path) is None
    assert reason in gateway_rules.refusal_reason(method, path)


def test_a_gateway_host_that_is_not_an_address_of_this_machine_is_one_clear_error(tmp_path: Path) -> None:
    for host in ("192.0.2.1", "no-such-host.invalid"):  # TEST-NET-1: never this machine's address
        with pytest.raises(RescueError) as caught:
            gateway_process.start_gateway(upstream="http://127.0.0.1:1", server_pid=os.getpid(), host=host, port=0,
                                          admin_file=tmp_path / "admin.json", log_file=tmp_path / "gateway.log",
                                          timeout=5)
        assert repr(host) in caught.value.message and "gateway_host" in caught.value.fix


def test_a_busy_gateway_port_is_one_clear_error(ls_server: LiveServer) -> None:
    state = server.read_state(ls_server.paths)
    assert state is not None
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RescueError) as caught:
            gateway_process.start_gateway(upstream=state.url, server_pid=state.pid, host="127.0.0.1", port=port,
                                          admin_file=ls_server.paths.admin, log_file=ls_server.paths.gateway_log,
                                          timeout=60, die_with_parent=True)
    assert f"127.0.0.1:{port}" in caught.value.message and "gateway_port" in caught.value.fix


def _gone(pid: int) -> bool:
    """Wait (bounded) until the process has ended: the gateway notices its server's end by itself."""
    deadline = time.monotonic() + 60
    while gateway_process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not gateway_process.alive(pid)


def test_the_gateway_starts_and_stops_with_the_server(ls_server: LiveServer) -> None:
    project, paths = ls_server.project, ls_server.paths
    root = ["--root", str(project.root)]
    runner = CliRunner()
    before = server.read_state(paths)
    assert before is not None and gateway_process.alive(before.gateway_pid)
    assert runner.invoke(main, [*root, "labelstudio", "down"]).exit_code == 0
    assert not gateway_process.alive(before.gateway_pid) and server.read_state(paths) is None

    port = server.free_port()  # the gateway's address is a setting
    (project.root / "pyproject.toml").write_text(f'[tool.rescue.annotate]\ngateway_host = "127.0.0.1"\n'
                                                 f"gateway_port = {port}\n")
    up = runner.invoke(main, [*root, "labelstudio", "up"])
    (project.root / "pyproject.toml").unlink()
    assert up.exit_code == 0, up.output
    state = server.read_state(paths)
    assert state is not None and state.gateway_url == f"http://127.0.0.1:{port}"
    assert f"give them {state.gateway_url}" in up.output and state.gateway_url != state.url
    assert httpx.get(f"{state.gateway_url}/health").status_code == 200
    status = runner.invoke(main, [*root, "labelstudio", "status"])
    assert f"annotators' gateway {state.gateway_url} (pid {state.gateway_pid})" in status.output, status.output

    os.kill(state.gateway_pid, signal.SIGKILL)  # a gateway that died: the next start gives the server a new one
    assert _gone(state.gateway_pid)
    again = ls_server.start()
    assert again.pid == state.pid and again.gateway_pid != state.gateway_pid
    assert gateway_process.alive(again.gateway_pid)

    os.killpg(again.pid, signal.SIGKILL)  # the server killed outright (a killed build's orphan, a crash)
    assert _gone(again.gateway_pid)
    server.stop(paths)
    ls_server.start()


def test_an_annotator_reads_and_saves_in_their_own_projects_through_the_gateway(world: World) -> None:
    live = world.live
    with log_in(live.gateway_url, ANN2, world.password(ANN2)) as ann2:
        own_project, own_task = world.projects[ANN2], world.tasks[ANN2]
        titles = [p["title"] for p in ann2.get("/api/projects").json()["results"]]
        assert titles and all(title.endswith(f" / {ANN2}") for title in titles), titles  # nobody else's projects
        assert ann2.get(f"/projects/{own_project}/data", params={"task": own_task}).status_code == 200
        listed = ann2.get("/api/tasks", params={"project": own_project, "page_size": 100})
        assert listed.status_code == 200 and own_task in [t["id"] for t in listed.json()["tasks"]]
        assert ann2.get(f"/api/tasks/{own_task}", params={"project": own_project}).status_code == 200
        assert [u["id"] for u in ann2.get("/api/users", params={"project": own_project}).json()] == \
            [world.users[ANN2]]
        media = ann2.get(world.media_url)
        video = live.project.raw_video / "sample" / "maya_and_daniel.mp4"
        assert media.status_code == 200 and media.content == video.read_bytes()

        saved = ann2.post(f"/api/tasks/{own_task}/annotations", params={"project": own_project},
                          json={"result": [], "lead_time": 2.0, "draft_id": 0})
        assert saved.status_code == 201, saved.text
        mine = saved.json()["id"]
        (stored,) = live.client.task_detail(own_task)["annotations"]
        assert stored["completed_by"]["id"] == world.users[ANN2]
        updated = ann2.patch(f"/api/annotations/{mine}", params={"project": own_project},
                             json={"result": [], "lead_time": 4.0})
        assert updated.status_code == 200, updated.text
        draft = ann2.post(f"/api/tasks/{own_task}/drafts", json={"result": [], "lead_time": 1.0})  # autosave
        assert draft.status_code == 201, draft.text
        assert ann2.patch(f"/api/drafts/{draft.json()['id']}", json={"result": [], "lead_time": 2.0}).is_success
        edit_draft = ann2.post(f"/api/tasks/{own_task}/annotations/{mine}/drafts", json={"result": []})
        assert edit_draft.status_code == 201, edit_draft.text
        with log_in(live.gateway_url, ANN1, world.password(ANN1)) as ann1:  # someone else's draft
            assert ann1.patch(f"/api/drafts/{draft.json()['id']}", json={"result": []}).status_code == 403
            assert ann1.get(f"/api/drafts/{draft.json()['id']}").status_code == 403
        in_ann1s_name = ann2.patch(f"/api/annotations/{mine}", json={"result": [], "completed_by": world.users[ANN1]})
        assert in_ann1s_name.status_code == 403
        assert ann2.get(f"/projects/{world.projects[ANN1]}/data").status_code == 403
        assert ann2.get("/api/tasks", params={"project": world.projects[ANN1]}).status_code == 403
        assert ann2.get(f"/api/tasks/{world.tasks[ANN1]}").status_code == 403
        assert ann2.get("/api/tasks").status_code == 403  # every project's tasks at once
    with httpx.Client(base_url=live.gateway_url, follow_redirects=False, timeout=60) as anonymous:
        assert anonymous.get("/api/projects").status_code == 401
        assert anonymous.get(f"/projects/{own_project}/data").headers["location"].startswith("/user/login/")
        assert anonymous.get("/user/login/").status_code == 200


def test_adjudicators_are_admitted_to_the_adjudication_projects_and_annotators_are_not(world: World) -> None:
    live = world.live
    project, paths = live.project, live.paths
    adjudicator = "adj@example.org"
    add_annotators(project, live.connection, [adjudicator])
    adjudication = live.client.create_project("RESCUE couple - rescue-v1 - adjudication", "",
                                              '<View><Text name="row" value="$text"/></View>', 1)
    root = ["--root", str(project.root)]
    assert CliRunner().invoke(main, [*root, "labelstudio", "down"]).exit_code == 0
    (project.root / "pyproject.toml").write_text(f'[tool.rescue.agreement]\nadjudicators = ["{adjudicator}"]\n')
    try:
        up = CliRunner().invoke(main, [*root, "labelstudio", "up"])
    finally:
        (project.root / "pyproject.toml").unlink()
    assert up.exit_code == 0, up.output
    with log_in(live.gateway_url, adjudicator, annotator_password(project, adjudicator)) as adj:
        assert [p["id"] for p in adj.get("/api/projects").json()["results"]] == [adjudication.id]
        assert adj.get(f"/api/projects/{adjudication.id}").status_code == 200
        assert adj.get("/api/tasks", params={"project": world.projects[ANN1]}).status_code == 403
    with log_in(live.gateway_url, ANN2, world.password(ANN2)) as ann2:
        assert ann2.get(f"/api/projects/{adjudication.id}").status_code == 403  # every annotator's answers are there
    assert f" 403 {ANN2} GET /api/projects/{adjudication.id}: " in paths.gateway_log.read_text(encoding="utf-8")



def test_the_rosters_adjudicators_are_admitted_without_a_setting(world: World) -> None:
    """`rescue annotators add --adjudicator` is enough: the gateway admits the roster's adjudicators, as push and
    pull count them, with no [tool.rescue.agreement] adjudicators line."""
    live = world.live
    project = live.project
    root = ["--root", str(project.root)]
    adjudicator = "roster-adj@example.org"
    added = CliRunner().invoke(main, [*root, "annotators", "add", "--adjudicator", adjudicator])
    assert added.exit_code == 0 and "on the roster as adjudicator" in added.output, added.output
    title = "RESCUE couple - rescue-v1 - adjudication"
    adjudication = live.client.find_project(title) or live.client.create_project(
        title, "", '<View><Text name="row" value="$text"/></View>', 1)
    assert not (project.root / "pyproject.toml").exists()
    assert CliRunner().invoke(main, [*root, "labelstudio", "down"]).exit_code == 0
    up = CliRunner().invoke(main, [*root, "labelstudio", "up"])  # the gateway reads who adjudicates as it starts
    assert up.exit_code == 0, up.output
    with log_in(live.gateway_url, adjudicator, annotator_password(project, adjudicator)) as adj:
        assert adj.get(f"/api/projects/{adjudication.id}").status_code == 200
        assert adj.get("/api/tasks", params={"project": world.projects[ANN1]}).status_code == 403

@dataclass(frozen=True)
class Attack:
    what: str
    method: str
    path: str
    json: dict | None = None


def the_issues_attacks(world: World) -> list[Attack]:
    """Every call the issue made as ann2, in an order the direct replay can follow (deletions last)."""
    ann1_project = world.projects[ANN1]
    return [
        Attack("change ann1's annotation", "PATCH", f"/api/annotations/{world.ann1_annotation}",
               {"result": [], "lead_time": 99.0}),
        Attack("save an annotation in ann1's name", "POST",
               f"/api/tasks/{world.tasks[ANN1]}/annotations?project={ann1_project}",
               {"result": [], "completed_by": world.users[ANN1]}),
        Attack("read the invite link", "GET", "/api/invite"),
        Attack("create an account", "POST", "/api/users", {"email": "puppet@x.org", "username": "puppet"}),
        Attack("edit the admin's profile", "PATCH", "/api/users/1", {"first_name": "owned-by-ann2"}),
        Attack("export ann1's project", "GET", f"/api/projects/{ann1_project}/export?exportType=JSON"),
        Attack("export ann2's own project", "GET", f"/api/projects/{world.projects[ANN2]}/export?exportType=JSON"),
        Attack("create a project", "POST", "/api/projects", {"title": "RESCUE couple - rescue-v1 / ann2@x"}),
        Attack("change ann2's own project's settings", "PATCH", f"/api/projects/{world.projects[ANN2]}",
               {"maximum_annotations": 5}),
        Attack("reset ann2's token", "POST", "/api/current-user/reset-token/"),
        Attack("delete ann1's annotation", "DELETE", f"/api/annotations/{world.ann1_annotation}"),
        Attack("delete ann1's project", "DELETE", f"/api/projects/{ann1_project}"),
    ]


def _send(web: httpx.Client, attack: Attack) -> httpx.Response:
    return web.request(attack.method, attack.path, json=attack.json)


def _sign_up(base_url: str, invite: str) -> httpx.Response:
    """The sign-up page's form with the invite link ann2 read, posted as a new visitor's browser does."""
    with httpx.Client(base_url=base_url, follow_redirects=False, timeout=60) as visitor:
        visitor.get("/user/login/")  # a CSRF cookie (through the gateway the sign-up page itself is refused)
        visitor.get("/user/signup/", params={"token": invite})
        return visitor.post("/user/signup/", params={"token": invite},
                            data={"email": "puppet2@x.org", "password": "Puppet-pass-2026",
                                  "csrfmiddlewaretoken": visitor.cookies.get("csrftoken", "")},
                            headers={"Referer": f"{base_url}/user/signup/"})


def _stored(annotations: list[dict]) -> list[dict]:
    """The annotations as stored: without `created_ago`, which the server words from the clock at each request."""
    return [{key: value for key, value in item.items() if key != "created_ago"} for item in annotations]


def test_every_attack_of_the_issue_is_refused_through_the_gateway_and_works_straight_on_the_server(
        world: World) -> None:
    live = world.live
    client = live.client
    invite = client.invite_token()
    attacks = the_issues_attacks(world)
    ann1_before = _stored(client.task_detail(world.tasks[ANN1])["annotations"])
    users_before = client.users()

    token = login_token(live.url, ANN2, world.password(ANN2))
    with log_in(live.gateway_url, ANN2, world.password(ANN2)) as by_cookie, \
            httpx.Client(base_url=live.gateway_url, timeout=60, follow_redirects=False,
                         headers={"Authorization": f"Token {token}"}) as by_token:
        for web in (by_cookie, by_token):
            for attack in attacks:
                answer = _send(web, attack)
                assert answer.status_code == 403, (attack.what, answer.status_code, answer.text[:200])
            assert web.get("/api/tasks", params={"project": world.projects[ANN2]}).status_code == 200  # still works
    assert _sign_up(live.gateway_url, invite).status_code == 403
    logged = refusals(live)
    for attack in attacks:
        line = f" 403 {ANN2} {attack.method} {attack.path.split('?')[0]}: "
        assert sum(line in entry for entry in logged) == 2, (attack.what, line)  # once by cookie, once by token
    assert any(" 403 anonymous POST /user/signup/: " in entry for entry in logged)
    assert not any(invite in entry or token in entry for entry in logged)  # the log holds no secret

    # nothing reached the server: ann1's answer, the accounts and every project are as they were
    assert _stored(client.task_detail(world.tasks[ANN1])["annotations"]) == ann1_before
    assert client.users() == users_before
    assert client.project(world.projects[ANN1]).id == world.projects[ANN1]

    # the same calls straight to the server's port succeed: the test is real, the server alone would take them
    with log_in(live.url, ANN2, world.password(ANN2)) as direct:
        for attack in attacks:
            answer = _send(direct, attack)
            assert answer.is_success, (attack.what, answer.status_code, answer.text[:200])
    assert _sign_up(live.url, invite).status_code in (302, 303)
    assert "puppet2@x.org" in client.users().values()
