"""Shared fixtures: throw-away project roots, real media, the built-in samples made once per run."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.catalog import append_entry
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.store import sha256_file
from tests.media import make_video

# The shared fixtures, as plugins (never star-imported into test modules). The expensive ones are session-scoped:
# the speech build of the samples, the migrated Label Studio database, the first corpus build (copied per test).
# tests.markers marks each test by the fixtures it uses (slow, labelstudio, browser); see docs/build.md.
pytest_plugins = ["tests.speech_fixtures", "tests.labelstudio_fixtures", "tests.corpus_fixtures",
                  "tests.release_fixtures", "tests.markers"]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / "raw_video").mkdir()
    return Project(tmp_path.resolve())


@pytest.fixture
def add_video(project: Project) -> Callable[..., CatalogEntry]:
    """Make a lavfi video under raw_video/ and list it in raw_video/sessions.csv."""

    def add(session_id: str, seconds: float = 4.0, *, scenario: str = "couple",
            participants: tuple[str, ...] = ("Ann", "Bob"), **media: object) -> CatalogEntry:
        video = make_video(project.raw_video / f"{session_id.replace('/', '_')}.mp4", seconds, **media)  # type: ignore[arg-type]
        entry = CatalogEntry(session_id=session_id, scenario=scenario, participants=participants,  # type: ignore[arg-type]
                             video=project.rel(video), sha256=sha256_file(video))
        append_entry(project, project.main_catalog, entry)
        return entry

    return add


@pytest.fixture(scope="session")
def sample_media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in sample sessions, synthesised once per test run (a raw_video/ folder to copy)."""
    from pipeline.sample_sessions import install_samples

    root = tmp_path_factory.mktemp("samples")
    (root / "raw_video").mkdir()
    install_samples(Project(root.resolve()))
    return root / "raw_video"


@pytest.fixture
def sample_project(project: Project, sample_media: Path) -> Project:
    shutil.copytree(sample_media, project.raw_video, dirs_exist_ok=True)
    return project


def tree_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`, to prove outputs were left untouched."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}
