"""Fixtures for tests against a real Label Studio server (no mocks).

The first server start migrates an empty SQLite database (~45-70 s); the migrated database, with its
admin account, is kept under build/test-cache/ and copied into each new server's data dir, so later starts
take ~7 s. Every server a fixture starts is stopped in its teardown, also when the test fails. A pytest plugin
(tests/conftest.py registers it): test modules name the fixtures as arguments and import only the helpers
(`LiveServer`, `write_truth_rows`, ...).

One server serves the whole run (`shared_labelstudio`, in the build/labelstudio/ of one project root). Each
module's `ls_server` gets that root emptied for it (the previous module's files moved aside) and the server
wiped back to what a fresh one holds: no project, no account but the admin, none of the previous module's
roster, passwords, task lists or media. A module that stops, kills, restarts or locks down its server overrides
`ls_server` with `own_ls_server`, a fresh server of its own for the module.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from pipeline.annotate import gateway_process, server
from pipeline.annotate.addresses import GATEWAY_PORT_FILE
from pipeline.annotate.labelstudio import Client, Connection
from pipeline.annotate.settings import AnnotateSettings
from pipeline.catalog import append_entry
from pipeline.project import Project
from pipeline.records import CatalogEntry, SampleTruth, TranscriptRow, row_id_for
from pipeline.store import sha256_file
from pipeline.transcripts import rows_path, write_rows

REPO = Path(__file__).resolve().parents[1]
LABEL_STUDIO_VERSION = "1.23.2"
TEMPLATE = REPO / "build" / "test-cache" / f"labelstudio-{LABEL_STUDIO_VERSION}"
SETTINGS = AnnotateSettings(server_venv=str(REPO / ".venv-labelstudio"))
SAMPLE_STEMS = {"sample/maya_and_daniel": "maya_and_daniel", "sample/linda_mark_and_zoe": "linda_mark_and_zoe"}

__all__ = ["labelstudio_template", "shared_labelstudio", "ls_server", "own_ls_server", "LiveServer", "make_project",
           "truth_rows", "write_truth_rows", "add_catalog_copy", "no_external_server", "SETTINGS", "REPO"]


@pytest.fixture(scope="session")
def labelstudio_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated Label Studio database with its admin account, made once and cached under build/. The cache is
    shared by the xdist workers of a run and by concurrent runs in other worktrees (build/test-cache/ may be a
    link): whoever finds it missing migrates it under a file lock beside it, the others wait and take it."""
    TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(TEMPLATE.with_name(f".{TEMPLATE.name}.lock"))):
        if not ((TEMPLATE / server.DB_NAME).exists() and (TEMPLATE / "admin.json").exists()):
            migrate_template(tmp_path_factory.mktemp("ls-template") / "labelstudio")
    return TEMPLATE


def migrate_template(folder: Path) -> None:
    """Start a server on an empty database (Label Studio migrates it), stop it, keep its database and admin."""
    paths = server.ServerPaths(folder)
    try:
        server.start(paths, SETTINGS, project_root=REPO, die_with_parent=True)
    finally:
        server.stop(paths)
    staging = TEMPLATE.with_name(f".{TEMPLATE.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    server.copy_private(paths.database, staging / server.DB_NAME)
    server.write_secret(staging / "admin.json", server.read_secret(paths.admin))
    shutil.rmtree(TEMPLATE, ignore_errors=True)  # an incomplete one (no admin.json): the lock says nobody uses it
    os.replace(staging, TEMPLATE)


@dataclass
class LiveServer:
    """A running embedded server for one project root, with helpers to restart or kill it."""

    project: Project
    paths: server.ServerPaths
    template: Path

    @property
    def connection(self) -> Connection:
        return server.connect(self.project, self.paths)

    @property
    def client(self) -> Client:
        return Client(self.connection)

    @property
    def url(self) -> str:
        state = server.read_state(self.paths)
        assert state is not None
        return state.url

    @property
    def gateway_url(self) -> str:
        """The annotators' gateway in front of the server (what `rescue labelstudio up` tells annotators to open)."""
        state = server.read_state(self.paths)
        assert state is not None and state.gateway_url
        return state.gateway_url

    def start(self) -> server.ServerState:
        return server.start(self.paths, SETTINGS, project_root=REPO, template=self.template, die_with_parent=True)

    def admin(self) -> dict[str, str]:
        return server.read_secret(self.paths.admin)


def make_project(root: Path, sample_media: Path) -> Project:
    """A project root with the sample sessions and the repository's annotation schemas."""
    project = Project(root.resolve())
    shutil.copytree(sample_media, project.raw_video, dirs_exist_ok=True)
    shutil.copytree(REPO / "annotation_schemas", project.schemas, dirs_exist_ok=True)
    return project


def truth_rows(project: Project, session_id: str, *, as_session: str | None = None,
               with_clip: bool = False) -> list[TranscriptRow]:
    """Rows made from a sample session's ground truth (what the speech stages aim to produce)."""
    stem = SAMPLE_STEMS[session_id]
    truth = SampleTruth.model_validate_json((project.raw_video / "sample" / f"{stem}.truth.json").read_text())
    sid = as_session or session_id
    return [TranscriptRow(row_id=row_id_for(sid, t.start, t.end), session_id=sid, row_index=t.index, start=t.start,
                          end=t.end, speaker=t.speaker, target=t.target, text=t.text,
                          clip=f"raw_video/sample/{stem}.mp4" if with_clip else None)
            for t in truth.turns]


def write_truth_rows(project: Project, session_id: str, **kwargs: object) -> list[TranscriptRow]:
    rows = truth_rows(project, session_id, **kwargs)  # type: ignore[arg-type]
    write_rows(rows_path(project, rows[0].session_id), rows)
    return rows


def add_catalog_copy(project: Project, session_id: str, new_id: str) -> CatalogEntry:
    """Another catalog session showing the same sample video (a second couple session for push tests)."""
    stem = SAMPLE_STEMS[session_id]
    video = project.raw_video / "sample" / f"{stem}.mp4"
    truth = SampleTruth.model_validate_json((project.raw_video / "sample" / f"{stem}.truth.json").read_text())
    entry = CatalogEntry(session_id=new_id, scenario=truth.scenario, participants=truth.participants,
                         video=project.rel(video), sha256=sha256_file(video))
    append_entry(project, project.main_catalog, entry)
    return entry


def no_external_server() -> None:
    """The fixtures' servers are embedded ones; a Label Studio URL in the environment would win over them."""
    os.environ.pop("LABEL_STUDIO_URL", None)
    os.environ.pop("LABEL_STUDIO_API_KEY", None)


@pytest.fixture(scope="module")
def own_ls_server(labelstudio_template: Path, sample_media: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A fresh server (data dir copied from the template) for one test module, always stopped after it."""
    project = make_project(tmp_path_factory.mktemp("ls-project"), sample_media)
    live = LiveServer(project, server.ServerPaths.of(project), labelstudio_template)
    no_external_server()
    try:
        live.start()
        yield live
    finally:
        server.stop(live.paths)


# What the shared server keeps in its folder from one module to the next: its database, admin, state, logs and
# gateway port. The rest (roster, passwords, the task lists of `present/`, the media root) is the module's.
SERVER_OWN = frozenset({"data", "admin.json", "server.json", "server.log", "gateway.log", GATEWAY_PORT_FILE})


@pytest.fixture(scope="session")
def shared_labelstudio(labelstudio_template: Path,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[server.ServerPaths]:
    """The one server the modules' `ls_server` share, started once and stopped after the run.

    It lives where a project's embedded server lives (<root>/build/labelstudio/), in the one project root that
    every such module uses in turn: Label Studio serves media only from below the document root it was started
    with (the media root of that folder), compared by path, so each module's project must be at that root."""
    root = (tmp_path_factory.mktemp("ls-shared") / "project").resolve()
    paths = server.ServerPaths.of(Project(root))
    no_external_server()
    try:
        server.start(paths, SETTINGS, project_root=REPO, template=labelstudio_template, die_with_parent=True)
        yield paths
    finally:
        server.stop(paths)


def wipe_to_fresh(live: LiveServer, archive: Path) -> None:
    """Leave the server and its project root as a fresh server's: every Label Studio project and every account but
    the admin deleted, the previous module's files moved to `archive`, a new gateway (the old one remembers which
    project each task id was in, and Label Studio gives deleted tasks' ids again) with an empty log."""
    if server.running(live.paths) is None:  # a module stopped it although it should have used own_ls_server
        live.start()
    client = live.client
    admin_id, _ = client.whoami()
    for info in client.projects_titled(""):
        client.delete_project(info.id)
    token = live.admin()["token"]
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Token {token}"}, timeout=60) as http:
        for user_id in client.users():
            if user_id != admin_id:
                http.delete(f"/api/users/{user_id}/").raise_for_status()
    assert client.projects_titled("") == [] and list(client.users()) == [admin_id]
    root, build, base = live.project.root, live.project.build, live.paths.base
    kept = {root: "build", build: base.name}
    for folder in (root, build, base):
        for entry in sorted(folder.iterdir()):
            if entry.name != kept.get(folder) and not (folder == base and entry.name in SERVER_OWN):
                target = archive / entry.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                entry.rename(target)
    live.paths.media.mkdir(mode=0o700)
    state = server.read_state(live.paths)
    assert state is not None
    gateway_process.stop_gateway(state.gateway_pid)
    os.truncate(live.paths.gateway_log, 0)
    live.start()  # the server runs on; start() gives it a gateway again, at the port the last one had


@pytest.fixture(scope="module")
def ls_server(shared_labelstudio: server.ServerPaths, labelstudio_template: Path, sample_media: Path,
              tmp_path_factory: pytest.TempPathFactory) -> LiveServer:
    """The run's one server, wiped to a fresh one's content, in the shared project root emptied for this module
    (the previous module's files are moved to an `ls-project-done` folder of the run's temporary folder)."""
    root = shared_labelstudio.base.parents[1]
    live = LiveServer(Project(root), shared_labelstudio, labelstudio_template)
    no_external_server()
    wipe_to_fresh(live, tmp_path_factory.mktemp("ls-project-done"))
    make_project(root, sample_media)
    return live
