"""Fixtures for tests against a real Label Studio server (no mocks).

The first server start migrates an empty SQLite database (~45-70 s); the migrated database, with its
admin account, is kept under build/test-cache/ and copied into each test module's fresh data dir,
so later starts take ~7 s. Every server a fixture starts is stopped in its teardown, also when the
test fails. A pytest plugin (tests/conftest.py registers it): test modules name the fixtures as arguments and
import only the helpers (`LiveServer`, `write_truth_rows`, ...).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.annotate import server
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

__all__ = ["labelstudio_template", "ls_server", "LiveServer", "make_project", "truth_rows", "write_truth_rows",
           "add_catalog_copy", "SETTINGS", "REPO"]


@pytest.fixture(scope="session")
def labelstudio_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated Label Studio database with its admin account, made once and cached under build/."""
    if (TEMPLATE / server.DB_NAME).exists() and (TEMPLATE / "admin.json").exists():
        return TEMPLATE
    paths = server.ServerPaths(tmp_path_factory.mktemp("ls-template") / "labelstudio")
    try:
        server.start(paths, SETTINGS, project_root=REPO, die_with_parent=True)
    finally:
        server.stop(paths)
    staging = TEMPLATE.with_name(f".{TEMPLATE.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    server.copy_private(paths.database, staging / server.DB_NAME)
    server.write_secret(staging / "admin.json", server.read_secret(paths.admin))
    try:
        os.replace(staging, TEMPLATE)
    except OSError:  # another run made it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    return TEMPLATE


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


@pytest.fixture(scope="module")
def ls_server(labelstudio_template: Path, sample_media: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A fresh server (data dir copied from the template) for one test module, always stopped after it."""
    project = make_project(tmp_path_factory.mktemp("ls-project"), sample_media)
    live = LiveServer(project, server.ServerPaths.of(project), labelstudio_template)
    os.environ.pop("LABEL_STUDIO_URL", None)
    os.environ.pop("LABEL_STUDIO_API_KEY", None)
    try:
        live.start()
        yield live
    finally:
        server.stop(live.paths)
