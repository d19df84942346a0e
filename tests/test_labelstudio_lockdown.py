"""Least privilege around the embedded Label Studio, tested over HTTP as a logged-in annotator against a real
server: only the media that tasks show are served (no secret file, nothing a symlink leads to, nothing
outside the media root), clips and session videos still play, server data and logs are private to the user,
and a password in LABEL_STUDIO_URL never shows."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from pipeline.annotate import server
from pipeline.annotate.accounts import add_annotators, annotator_password, passwords_file
from pipeline.annotate.build_session import open_server
from pipeline.annotate.labelstudio import Connection
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.push import push_rows
from pipeline.cli import main
from pipeline.engine.context import StepContext
from pipeline.engine.runner import run_stage
from pipeline.engine.session_steps import INGEST
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.schema import load_schema
from pipeline.transcripts import rows_path, write_rows
from tests.labelstudio_fixtures import SETTINGS, LiveServer, truth_rows
from tests.media import make_video

MAYA = "sample/maya_and_daniel"
ANN = "ann@example.org"
OUTSIDE_SECRET = b"outside-the-project: not for annotators"


@pytest.fixture(scope="module")
def ls_server(own_ls_server: LiveServer) -> LiveServer:
    """A server of this module's own, not the run's shared one (tests/labelstudio_fixtures.py): the module stops its
    server, plants a symlink in its media root and checks its folder's modes."""
    return own_ls_server


@pytest.fixture(scope="module")
def outside_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private file of the user outside the project (what a stray symlink could lead to)."""
    path = tmp_path_factory.mktemp("outside") / "notes.txt"
    path.write_bytes(OUTSIDE_SECRET)
    return path


@pytest.fixture(scope="module")
def media(ls_server: LiveServer) -> dict[str, tuple[str, Path]]:
    """Maya's session ingested for real (its session video is the source video), its rows pushed, the first
    row with a clip of its own under build/. Returns kind -> (the task's media URL, the file it must serve)."""
    project = ls_server.project
    context = StepContext.load(project)
    report = run_stage(context, INGEST, [e for e in context.catalog if e.session_id == MAYA])
    assert report.ran == [MAYA], report
    clip = make_video(project.build / "transcripts" / MAYA / "clips" / "row1.mp4", 2.0)
    rows = truth_rows(project, MAYA)
    rows[0] = rows[0].model_copy(update={"clip": project.rel(clip)})
    write_rows(rows_path(project, MAYA), rows)
    add_annotators(project, ls_server.connection, [ANN])
    push_rows(project, ls_server.connection, settings=SETTINGS, annotators=(ANN,))
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    client = ls_server.client
    info = client.find_project(annotator_title(schema, "couple", ANN))  # the annotator's own project
    assert info is not None
    keys = client.task_keys(info.id)
    urls = {kind: client.task_detail(keys[rows[index].row_id][0])["data"]["video"].split("#")[0]
            for kind, index in (("clip", 0), ("session video", 1))}
    return {"clip": (urls["clip"], clip),
            "session video": (urls["session video"], project.raw_video / "sample" / "maya_and_daniel.mp4")}


@pytest.fixture
def annotator(ls_server: LiveServer, media: dict) -> Iterator[httpx.Client]:
    """A browser-like session of an annotator (logged in through the login form, as the browser tests do)."""
    with httpx.Client(base_url=ls_server.url, follow_redirects=False, timeout=60) as web:
        web.get("/user/login/")
        form = {"email": ANN, "password": annotator_password(ls_server.project, ANN),
                "csrfmiddlewaretoken": web.cookies.get("csrftoken", "")}
        response = web.post("/user/login/", data=form, headers={"Referer": f"{ls_server.url}/user/login/"})
        assert response.status_code in (302, 303), "annotator login failed"
        assert web.get("/api/current-user/whoami").json()["email"] == ANN
        yield web


def local_file(web: httpx.Client, d: str) -> httpx.Response:
    return web.get("/data/local-files/", params={"d": d})


def test_an_annotator_gets_the_clip_and_the_session_video_of_a_task(
        annotator: httpx.Client, media: dict[str, tuple[str, Path]]) -> None:
    for kind, (url, path) in media.items():
        assert url.startswith("/data/local-files/?d="), (kind, url)
        response = annotator.get(url)
        assert response.status_code == 200, (kind, url)
        assert response.content == path.read_bytes(), kind


def test_an_annotator_gets_no_secret_file_and_nothing_outside_the_project(
        ls_server: LiveServer, annotator: httpx.Client, outside_file: Path) -> None:
    project, paths = ls_server.project, ls_server.paths
    admin = ls_server.admin()
    env_file = paths.data / ".env"
    assert env_file.exists() and b"SECRET_KEY" in env_file.read_bytes()
    secrets_of = {  # file -> bytes that must never reach an annotator
        paths.admin: [admin["password"].encode(), admin["token"].encode()],
        passwords_file(project): [annotator_password(project, ANN).encode()],
        paths.database: [b"SQLite format 3", admin["token"].encode()],
        env_file: [env_file.read_bytes().strip()],
        paths.log: [b"GET /"],
        outside_file: [OUTSIDE_SECRET],
    }
    (project.raw_video / "sample" / "notes.mp4").symlink_to(outside_file)  # a stray link among the videos
    (project.raw_video / "passwd").symlink_to("/etc/passwd")
    tried = 0
    for path, secrets in secrets_of.items():
        names = [str(path), os.path.relpath(path, paths.base / "media"), os.path.relpath(path, paths.base)]
        if path.is_relative_to(project.root):
            names.append(project.rel(path))
        else:
            names += ["raw_video/sample/notes.mp4", "build/labelstudio/media/raw_video/sample/notes.mp4"]
        for name in names:
            response = local_file(annotator, name)
            tried += 1
            assert response.status_code != 200, name
            assert not any(secret in response.content for secret in secrets), name
    response = local_file(annotator, "raw_video/passwd")
    assert response.status_code != 200 and b"root:" not in response.content
    assert tried >= 20


def test_push_refuses_a_row_whose_media_is_a_secret_or_leads_out_of_the_project(
        ls_server: LiveServer, media: dict, outside_file: Path) -> None:
    project = ls_server.project
    link = project.build / "transcripts" / MAYA / "clips" / "stray.mp4"
    link.symlink_to(outside_file)
    rows = truth_rows(project, MAYA)
    try:
        for clip, expected in [("build/labelstudio/admin.json", "build/labelstudio/, the annotation server's"),
                               ("build/labelstudio/data/label_studio.sqlite3", "build/labelstudio/"),
                               ("raw_video/sessions.csv", "not a media file"),
                               ("build/labelstudio/media/raw_video/sample/maya_and_daniel.mp4", "build/labelstudio/"),
                               (project.rel(link), "leads out of the project"),
                               ("../outside.mp4", "escapes")]:
            bad = [rows[0].model_copy(update={"clip": clip}), *rows[1:]]
            write_rows(rows_path(project, MAYA), bad)
            with pytest.raises(RescueError, match="media") as caught:
                push_rows(project, ls_server.connection, settings=SETTINGS)
            assert expected in caught.value.message and MAYA in caught.value.message, caught.value.message
            assert caught.value.fix
        served = ls_server.paths.base / "media"
        assert not [p for p in served.rglob("*") if p.is_symlink() or p.name in ("admin.json", "stray.mp4")]
    finally:
        link.unlink()
        write_rows(rows_path(project, MAYA), [rows[0].model_copy(update={"clip": media["clip"][0].split("d=")[1]}),
                                              *rows[1:]])


def test_media_are_served_again_after_an_upgrade_or_a_lost_media_root(
        ls_server: LiveServer, annotator: httpx.Client, media: dict[str, tuple[str, Path]]) -> None:
    """Task URLs name paths relative to the project root, as before the media root existed: a project pushed by an
    older version keeps its tasks; the next push (importing nothing) publishes their media."""
    root = ls_server.paths.media

    def lose_the_media_root() -> None:
        shutil.rmtree(root)
        root.mkdir(mode=0o700)
        assert annotator.get(media["clip"][0]).status_code == 404

    def served() -> None:
        for url, path in media.values():
            response = annotator.get(url)
            assert response.status_code == 200 and response.content == path.read_bytes()

    lose_the_media_root()
    again = push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    assert again.imported == 0
    served()
    lose_the_media_root()
    result = CliRunner().invoke(main, ["--root", str(ls_server.project.root), "labelstudio", "up"])
    assert result.exit_code == 0, result.output  # the server already runs: `up` publishes the media, starts nothing
    served()
    assert not [p for p in root.rglob("*") if p.is_symlink()]


def _private(paths: server.ServerPaths) -> list[str]:
    """Everything of the server that group or others could read or enter."""
    loose = []
    for path in [paths.base, paths.data, *paths.data.rglob("*"), paths.log, paths.admin]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        wanted = 0o700 if path.is_dir() else 0o600
        if mode != wanted:
            loose.append(f"{path} {mode:o}")
    return loose


def test_server_data_and_logs_are_private_and_a_planted_symlink_stops_the_server(
        ls_server: LiveServer, annotator: httpx.Client, media: dict, outside_file: Path) -> None:
    paths = ls_server.paths
    assert _private(paths) == []
    server.stop(paths)
    for path in [paths.data, *paths.data.rglob("*")]:  # as an older version left them
        path.chmod(0o755 if path.is_dir() else 0o644)
    paths.log.chmod(0o644)
    planted = paths.base / "media" / "raw_video" / "sample" / "planted.mp4"
    planted.symlink_to(outside_file)
    with pytest.raises(RescueError, match="symlink") as caught:
        ls_server.start()
    assert str(planted) in caught.value.message and caught.value.fix
    assert server.running(paths) is None
    planted.unlink()
    ls_server.start()
    assert _private(paths) == []
    with pytest.raises(RescueError, match="symlink"):  # planted while the server runs: the next push refuses
        planted.symlink_to(outside_file)
        push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    planted.unlink()


# -- a password in LABEL_STUDIO_URL --------------------------------------------------------------------------------

PASSWORD = "hunter2-Secret"


def _runs(project: Project) -> dict[str, str]:
    runner = CliRunner()
    outputs = {}
    for args in (["labelstudio", "status"], ["push", "--standalone"], ["pull", "--standalone"],
                 ["annotators", "add", "x@example.org"], ["annotators", "list"]):
        result = runner.invoke(main, ["--root", str(project.root), *args])
        assert result.exit_code == 1, (args, result.output)
        outputs[" ".join(args)] = result.output
    return outputs


def test_a_password_in_label_studio_url_is_masked_everywhere(ls_server: LiveServer, media: dict,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    project = ls_server.project
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    for host in (f"127.0.0.1:{server.free_port()}", ls_server.url.removeprefix("http://")):  # down, then refusing
        monkeypatch.setenv("LABEL_STUDIO_URL", f"http://rescue:{PASSWORD}@{host}")
        for command, output in _runs(project).items():
            assert "error:" in output, (command, output)
            assert PASSWORD not in output, (command, output)
            assert f"http://rescue:***@{host}" in output, (command, output)
        connection = server.external_connection()
        assert connection is not None and PASSWORD not in repr(connection) + connection.url
        how = open_server(project, SETTINGS).how  # what `rescue build` reports and records as its server
        assert PASSWORD not in how and f"rescue:***@{host}" in how
    for path in project.build.rglob("*"):
        if path.is_file() and not path.is_relative_to(ls_server.paths.data):
            assert PASSWORD.encode() not in path.read_bytes(), path
    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://{PASSWORD}@127.0.0.1:1")  # a token as the user name
    assert PASSWORD not in server.external_connection().url  # type: ignore[union-attr]
    monkeypatch.delenv("LABEL_STUDIO_API_KEY")
    with pytest.raises(RescueError) as caught:
        server.external_connection()
    assert PASSWORD not in caught.value.message and "LABEL_STUDIO_API_KEY is not" in caught.value.message
    assert Connection("http://u:pw@h:1", "t", "environment").url == "http://u:***@h:1"
