"""The first corpus build (pytest plugin, registered in tests/conftest.py): the two sample sessions built through
the speech stages (`built_samples`), then `rescue build` with a real Label Studio server the build starts and
stops (seeded from the tests' migrated template), the stored sample annotations, agreement, gold and freeze.

That build is the suite's most expensive step (about 40 s on two cores), so it runs once per test run, for all
xdist workers (`built_corpus`, read-only) and each test that writes gets its own copy (`corpus_copy`): a `cp -a` of the
built project, which keeps the hard links of the Label Studio media root as the build made them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate import server
from pipeline.cli import main
from pipeline.project import Project
from pipeline.tasks.instances import TASKS
from tests.labelstudio_fixtures import REPO, no_external_server
from tests.run_once import once_per_run


def seed_server(project: Project, template: Path) -> None:
    """Start the project's embedded server from the migrated template database (as server.start(template=) does)."""
    paths = server.ServerPaths.of(project)
    paths.data.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template / server.DB_NAME, paths.database)
    server.write_secret(paths.admin, server.read_secret(template / "admin.json"))


def copy_project(built: Project, root: Path, template: Path) -> Project:
    """The built speech project with the repository's schemas and a seeded (not yet started) server."""
    shutil.copytree(built.root, root, symlinks=True, dirs_exist_ok=True)
    shutil.copytree(REPO / "annotation_schemas", root / "annotation_schemas")
    project = Project(root.resolve())
    seed_server(project, template)
    return project


def build(project: Project, *args: str) -> str:
    result = CliRunner().invoke(main, ["--root", str(project.root), "build", *args])
    assert result.exit_code == 0, result.output
    return result.output


def instance_lines(release: Path) -> dict[tuple[str, str], str]:
    """(file, instance id) -> the instance's JSON line, for every task and gold file of a release."""
    found = {}
    for kind in ("tasks", "gold"):
        for task in TASKS:
            for line in (release / kind / f"{task}.jsonl").read_text(encoding="utf-8").splitlines():
                found[(f"{kind}/{task}", json.loads(line)["id"])] = line
    return found


def copy_tree(source: Path, target: Path) -> None:
    """A fast, faithful copy of a project: `cp -a` keeps modes, times, symlinks and the hard links within it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(target)], check=True)


@dataclass(frozen=True)
class BuiltCorpus:
    """The project after its first `rescue build`, and what that build printed. Read-only: copy it to change it."""

    project: Project
    first_build_output: str


FIRST_BUILD_OUTPUT = "first_build_output.txt"  # beside the project, so copies of the project do not carry it


# The template comes first: a worker that finds built_samples being made by the other worker migrates the Label
# Studio template meanwhile (on a fresh clone both take a minute or more) instead of waiting and then migrating.
@pytest.fixture(scope="session")
def built_corpus(labelstudio_template: Path, built_samples: Project,
                 tmp_path_factory: pytest.TempPathFactory) -> BuiltCorpus:
    """Made once per run, by the first xdist worker that asks (tests/run_once.py); the others read the same one."""
    no_external_server()

    def make(folder: Path) -> None:
        project = copy_project(built_samples, folder / "project", labelstudio_template)
        try:
            output = build(project)
            assert server.running(server.ServerPaths.of(project)) is None  # the build stopped the server it started
        finally:
            server.stop(server.ServerPaths.of(project))  # the build stops its own server; this is for a failed build
        (folder / FIRST_BUILD_OUTPUT).write_text(output, encoding="utf-8")

    folder = once_per_run(tmp_path_factory, "built-corpus", make)
    return BuiltCorpus(Project((folder / "project").resolve()),
                       (folder / FIRST_BUILD_OUTPUT).read_text(encoding="utf-8"))


@pytest.fixture
def corpus_copy(built_corpus: BuiltCorpus, tmp_path: Path) -> Iterator[Project]:
    """A private copy of the built corpus, safe to build again; a server started in it is stopped after the test."""
    no_external_server()
    root = (tmp_path / "corpus").resolve()
    copy_tree(built_corpus.project.root, root)
    project = Project(root)
    try:
        yield project
    finally:
        server.stop(server.ServerPaths.of(project))
