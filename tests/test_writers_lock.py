"""One writer at a time, and no debris: every writing command takes build/.lock (a real second process
holds it here), and what a writer killed with SIGKILL leaves under build/ is swept by the next writer."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate import server
from pipeline.cli import main
from pipeline.project import Project
from pipeline.records import CatalogEntry
from tests.lock_holder import start_holder

REPO = Path(__file__).resolve().parents[1]
RESCUE = [sys.executable, "-m", "pipeline"]

WRITERS = [
    ["build"], ["ingest"], ["transcribe"], ["diarize"], ["rows"], ["speakers"], ["score-transcript"],
    ["push"], ["pull"], ["agree"], ["adjudicate"], ["gold"], ["freeze"],
    ["labelstudio", "up"], ["labelstudio", "down"], ["annotators", "add", "new@example.org"],
]


@pytest.fixture
def holder(project: Project) -> Iterator[subprocess.Popen[str]]:
    process = start_holder(project)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("command", WRITERS, ids=" ".join)
def test_every_writer_is_refused_while_another_process_holds_the_lock(
        project: Project, holder: subprocess.Popen[str], command: list[str]) -> None:
    before = sorted(p.name for p in project.build.iterdir())
    try:
        result = CliRunner().invoke(main, ["--root", str(project.root), *command])
    finally:
        server.stop(server.ServerPaths.of(project))  # had `labelstudio up` not been refused
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert re.fullmatch(rf"error: another rescue command \(rescue build, pid {holder.pid}, since [0-9T:+-]+\) "
                        r"is writing to build/: one writer at a time", lines[0]), lines
    assert f"kill {holder.pid}" in lines[1] and "Traceback" not in result.output
    assert sorted(p.name for p in project.build.iterdir()) == before  # refused before writing anything


def test_read_only_commands_run_while_a_writer_holds_the_lock(project: Project, holder: subprocess.Popen[str],
                                                             add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    result = CliRunner().invoke(main, ["--root", str(project.root), "status"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["--root", str(project.root), "labelstudio", "status"])
    assert result.exit_code == 0 and "not running" in result.stdout


def test_the_lock_is_free_again_when_its_holder_is_killed(project: Project,
                                                           add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    process = start_holder(project)
    process.send_signal(signal.SIGKILL)
    process.wait()
    result = CliRunner().invoke(main, ["--root", str(project.root), "ingest"])
    assert result.exit_code == 0, result.output


# -- debris of writers killed with SIGKILL ---------------------------------------------------------------------

def kill_mid_pull(project: Project) -> Path:
    """A real pull (`snapshot_from_exports`) killed with SIGKILL after it stored its first export."""
    shutil.copytree(REPO / "annotation_schemas", project.schemas, dirs_exist_ok=True)
    script = ("import sys, time\n"
              "from pathlib import Path\n"
              "from pipeline.annotate.pull import snapshot_from_exports\n"
              "from pipeline.project import Project\n"
              "from pipeline.schema import load_schema\n"
              f"project = Project(Path({str(project.root)!r}))\n"
              "def exports():\n"
              "    yield 'couple', b'[]'\n"
              "    print('stored', flush=True)\n"
              "    time.sleep(600)  # the family export never arrives: killed here\n"
              "    yield 'family', b'[]'\n"
              "schema = load_schema(project.schemas / 'rescue-v1.yaml')\n"
              "snapshot_from_exports(project, exports(), {1: 'ann@example.org'}, schema=schema, source='test')\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "stored"
    process.send_signal(signal.SIGKILL)
    process.wait()
    left = [p for p in (project.build / "annotations").iterdir() if ".tmp-" in p.name]
    assert [p.name.endswith(f".tmp-{process.pid}") for p in left] == [True]  # the kill really left debris
    assert (left[0] / "exports" / "couple" / "shared.json").is_file()  # a scenario key: the shared project
    return left[0]


def kill_mid_freeze(project: Project) -> Path:
    """A real `rescue freeze` killed with SIGKILL while it renders the release into its temp folder."""
    from tests.release_inputs import gold_sessions

    gold = project.root / "gold.jsonl"
    sessions = gold_sessions()
    gold.write_text("".join(s.model_dump_json() + "\n" for s in sessions), encoding="utf-8")
    release = project.build / "release"
    process = subprocess.Popen([*RESCUE, "--root", str(project.root), "freeze", "--gold", str(gold)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    left: list[Path] = []
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        left = [p for p in release.iterdir() if ".tmp-" in p.name] if release.is_dir() else []
        if left:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.002)
    process.wait()
    assert left, "freeze finished before it could be killed mid-release"
    assert all(p.exists() for p in left)  # the kill really left debris
    return left[0]


def test_debris_of_a_killed_pull_and_freeze_is_swept_by_the_next_writer(
        project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    pull_debris = kill_mid_pull(project)
    freeze_debris = kill_mid_freeze(project)
    # what the build's own freeze step (`.staging.tmp-*`) and any other atomic write leave look the same:
    staging = project.build / "release" / ".staging.tmp-0badf00d" / "v1"
    staging.mkdir(parents=True)
    (project.build / "gold").mkdir()
    (project.build / ".gold.tmp-1a2b3c4d").mkdir()
    server_owned = project.build / "labelstudio" / "data" / ".media.tmp-1"
    server_owned.mkdir(parents=True)  # the Label Studio server's own files are not ours to sweep

    result = CliRunner().invoke(main, ["--root", str(project.root), "ingest"])  # any writer sweeps
    assert result.exit_code == 0, result.output
    assert not pull_debris.exists() and not freeze_debris.exists() and not staging.parent.exists()
    assert not (project.build / ".gold.tmp-1a2b3c4d").exists()
    assert [p for p in project.build.rglob("*") if ".tmp-" in p.name] == [server_owned]
    assert (project.build / "media" / "a" / "audio.wav").is_file()


def test_a_reader_never_sweeps(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    """Only a lock holder sweeps: a temp folder may belong to a writer that is still running."""
    add_video("a", 2.0)
    pending = project.build / "annotations" / f".20261130T100000Z.tmp-{os.getpid()}"
    pending.mkdir(parents=True)
    assert CliRunner().invoke(main, ["--root", str(project.root), "status"]).exit_code == 0
    assert pending.is_dir()
