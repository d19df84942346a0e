"""Shared fixtures: throw-away project roots, real media, the built-in samples made once per run."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.catalog import append_entry
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.store import sha256_file
from tests.media import make_video
from tests.run_once import once_per_run

# The shared fixtures, as plugins (never star-imported into test modules). The expensive ones are session-scoped:
# the speech build of the samples, the migrated Label Studio database, the first corpus build (copied per test).
# tests.markers marks each test by the fixtures it uses (slow, labelstudio, browser); see docs/build.md.
pytest_plugins = ["tests.speech_fixtures", "tests.labelstudio_fixtures", "tests.corpus_fixtures",
                  "tests.release_fixtures", "tests.markers", "tests.xdist_schedule"]

# pytest imports readline early (_pytest/capture.py), and GNU readline sets COLUMNS and LINES in the C environment
# (80x24 where there is no terminal) without os.environ seeing it. Processes started from here inherit them: the
# xdist workers would then find COLUMNS=80 in os.environ and bound every rich console to 80 columns, which the user
# never set (tests/test_console_width.py). What the user did set is in os.environ and stays.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.unsetenv(_name)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """With `-p no:xdist` the `-n 2 --dist loadgroup` of pyproject's addopts name options nobody defines: take them
    and run in one process, as `-n 0` does."""
    if not pluginmanager.has_plugin("xdist"):
        group = parser.getgroup("xdist", "pytest-xdist is disabled (-p no:xdist): one process")
        # "-n" is a short option reserved to plugins (xdist adds it the same way)
        group._addoption("-n", "--numprocesses", dest="numprocesses", default=0, help="ignored without xdist")
        group.addoption("--dist", dest="dist", default="no", help="ignored without xdist")


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
    """The built-in sample sessions, synthesised once per test run, for all xdist workers (a raw_video/ to copy)."""
    from pipeline.sample_sessions import install_samples

    def make(root: Path) -> None:
        (root / "raw_video").mkdir()
        install_samples(Project(root.resolve()))

    return once_per_run(tmp_path_factory, "samples", make) / "raw_video"


@pytest.fixture
def sample_project(project: Project, sample_media: Path) -> Project:
    shutil.copytree(sample_media, project.raw_video, dirs_exist_ok=True)
    return project


def tree_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file under `folder`, to prove outputs were left untouched."""
    return {p.relative_to(folder).as_posix(): sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file()}
