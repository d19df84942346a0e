"""The make-like runner as a user meets it through `rescue ingest`/`status`: skipping, staleness, crash
recovery. (`rescue build` runs the same runner over every stage; the sample build tests cover it.)"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.engine.context import StepContext
from pipeline.engine.runner import build_lock, run_stage
from pipeline.engine.session_steps import INGEST
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia
from pipeline.store import read_jsonl
from tests.conftest import tree_digest

RESCUE = [sys.executable, "-m", "pipeline"]


def rescue(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RESCUE, "--root", str(project.root), *args], capture_output=True, text=True,
                          timeout=600)


def states(project: Project, stage: str = "ingest") -> dict[str, str]:
    result = rescue(project, "status", "--json")
    assert result.returncode == 0, result.stderr
    return {row["session_id"]: row["state"] for row in json.loads(result.stdout)["sessions"] if row["stage"] == stage}


def test_second_run_does_no_work_and_says_so(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    add_video("b", 3.0)
    first = rescue(project, "ingest")
    assert first.returncode == 0, first.stderr
    assert "ingest: 2 ran, 0 up to date, 0 failed" in first.stdout
    outputs = tree_digest(project.build)
    second = rescue(project, "ingest")
    assert second.returncode == 0
    assert "ingest: 0 ran, 2 up to date" in second.stdout
    assert "Nothing to do: all 2 session(s) are up to date." in second.stdout
    assert tree_digest(project.build) == outputs
    assert states(project) == {"a": "done", "b": "done"}


def test_changes_make_exactly_the_affected_work_stale(project: Project,
                                                      add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    entry_b = add_video("b", 3.0)
    assert rescue(project, "ingest").returncode == 0

    # A source file touched on disk: only that session is re-checked (and re-hashed) by ingest.
    os.utime(project.abs(entry_b.video), ns=(1, 1))
    assert states(project) == {"a": "done", "b": "stale"}
    assert "ingest: 1 ran, 1 up to date" in rescue(project, "ingest").stdout

    # A setting that ingest depends on: every session.
    (project.root / "pyproject.toml").write_text("[tool.rescue.ingest]\nkeyframe_interval = 1.0\n")
    assert states(project) == {"a": "stale", "b": "stale"}
    assert "ingest: 2 ran" in rescue(project, "ingest").stdout
    media = read_jsonl(project.build / "manifests" / "ingest.jsonl", SessionMedia)
    assert [len(m.keyframes) for m in media] == [3, 3]

    # Deleted outputs are noticed and rebuilt.
    (project.build / "media" / "a" / "audio.wav").unlink()
    assert states(project)["a"] == "stale"
    assert "ingest: 1 ran" in rescue(project, "ingest", "a").stdout


def test_removed_session_keeps_its_outputs_and_status_says_so(project: Project,
                                                             add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    add_video("b", 2.0)
    assert rescue(project, "ingest").returncode == 0
    lines = project.main_catalog.read_text().splitlines()
    project.main_catalog.write_text("\n".join(line for line in lines if not line.startswith("b,")) + "\n")
    assert rescue(project, "ingest").returncode == 0
    assert (project.build / "media" / "b" / "audio.wav").exists()
    assert [m.session_id for m in read_jsonl(project.build / "manifests" / "ingest.jsonl", SessionMedia)] == ["a"]
    assert "no longer in the catalog: b" in rescue(project, "status").stdout


def test_killed_ingest_is_completed_by_a_rerun_without_leftovers(project: Project,
                                                                add_video: Callable[..., CatalogEntry]) -> None:
    for name in ("k1", "k2", "k3"):
        add_video(name, 40.0, size="640x360")
    process = subprocess.Popen([*RESCUE, "--root", str(project.root), "ingest"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    media = project.build / "media"
    seen_partial = False
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if media.exists() and any(".tmp-" in p.name for p in media.iterdir()):
            seen_partial = True
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    process.wait()
    assert seen_partial, "ingest finished before it could be killed mid-session"
    assert any(".tmp-" in p.name for p in media.iterdir())  # the kill really left debris

    rerun = rescue(project, "ingest")
    assert rerun.returncode == 0, rerun.stderr
    assert not [p for p in project.build.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]
    assert sorted(p.name for p in media.iterdir()) == ["k1", "k2", "k3"]
    manifest = read_jsonl(project.build / "manifests" / "ingest.jsonl", SessionMedia)
    assert [m.session_id for m in manifest] == ["k1", "k2", "k3"]
    assert states(project) == {"k1": "done", "k2": "done", "k3": "done"}


def test_parallel_run_matches_serial_run(project: Project, add_video: Callable[..., CatalogEntry],
                                             tmp_path: Path) -> None:
    for name in ("p1", "p2", "p3"):
        add_video(name, 3.0)
    assert rescue(project, "ingest", "--jobs", "2").returncode == 0
    parallel = (project.build / "manifests" / "ingest.jsonl").read_bytes()
    other = Project(tmp_path / "serial")
    other.root.mkdir()
    subprocess.run(["cp", "-a", str(project.raw_video), str(other.root)], check=True)
    assert rescue(other, "ingest").returncode == 0
    assert (other.build / "manifests" / "ingest.jsonl").read_bytes() == parallel


def test_a_second_writer_is_refused_while_one_runs(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    from tests.lock_holder import start_holder

    add_video("a", 2.0)
    context = StepContext.load(project)
    holder = start_holder(project)  # another process (the lock is re-entrant within one)
    try:
        with pytest.raises(RescueError, match="another rescue command .* is writing"):
            run_stage(context, INGEST, list(context.catalog))
    finally:
        holder.kill()
        holder.wait()
    with build_lock(project):  # in one process, the command's lock and the stage's are the same
        assert run_stage(context, INGEST, list(context.catalog)).ran == ["a"]


def test_each_stage_and_session_reports_how_long_it_took(project: Project,
                                                         add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    first = rescue(project, "ingest")
    assert first.returncode == 0, first.stderr
    took = re.search(r"ingest: 1 ran, 0 up to date, 0 failed, 0 waiting -> \S+ \((\d+\.\d) s\)", first.stdout)
    assert took and float(took[1]) > 0, first.stdout
    status = json.loads(rescue(project, "status", "--json").stdout)
    (row,) = [r for r in status["sessions"] if r["stage"] == "ingest"]
    assert 0 < row["elapsed_s"] <= float(took[1]) + 0.1  # one session's run, inside the stage's time
    never = [r for r in status["sessions"] if r["stage"] == "transcribe"]
    assert never and never[0]["elapsed_s"] is None
    assert "(" not in rescue(project, "ingest").stdout.splitlines()[0]  # nothing ran: no time to report


def test_corpus_steps_report_their_own_time(sample_project: Project) -> None:
    import shutil

    from pipeline.cli.console import console
    from pipeline.cli.corpus import print_outcome
    from pipeline.engine.context import StepContext
    from pipeline.engine.status import corpus_status
    from tests.labelstudio_fixtures import REPO

    shutil.copytree(REPO / "annotation_schemas", sample_project.schemas)
    ctx = StepContext.load(sample_project)
    ctx.begin("gold")
    time.sleep(1.0)
    ctx.done("gold", "fp")
    ctx.record("gold", "ran", "2 session(s)")
    ctx.record("freeze", "up to date", "release v1")  # decided at once: its own time, not gold's
    gold, freeze = ctx.outcomes
    assert gold.elapsed_s >= 1.0 and freeze.elapsed_s < 1.0
    with console.capture() as captured:
        print_outcome(console, gold)
        print_outcome(console, freeze)
    assert captured.get().splitlines() == [f"gold: ran - 2 session(s) ({gold.elapsed_s:.1f} s)",
                                           "freeze: up to date - release v1"]
    (state,) = corpus_status(sample_project)
    assert state["step"] == "gold" and state["elapsed_s"] >= 1.0
