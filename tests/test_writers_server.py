"""No orphan server: a `rescue build` killed with SIGKILL leaves its embedded Label Studio server running;
`rescue status` reports it and who started it, and the next build takes it over and stops it when done.
A server `rescue labelstudio up` started is reused by a build and left running, as asked.

Real components: the sample sessions built once through the real speech stages (`built_samples`), a
real `rescue build` process killed with SIGKILL, a real Label Studio server (seeded from the tests'
migrated template database).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate import gateway_process, server
from pipeline.annotate.server_owner import ServerOwner, owner_path, stop_strays, stray_servers
from pipeline.cli import main
from pipeline.processes import process_alive
from pipeline.project import Project
from tests.corpus_fixtures import copy_project


@pytest.fixture(scope="module")
def corpus(built_samples: Project, labelstudio_template: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Project]:
    os.environ.pop("LABEL_STUDIO_URL", None)
    os.environ.pop("LABEL_STUDIO_API_KEY", None)
    project = copy_project(built_samples, tmp_path_factory.mktemp("orphan"), labelstudio_template)
    paths = server.ServerPaths.of(project)  # seeded from the template: a start in seconds, not a minute
    try:
        yield project
    finally:
        server.stop(paths)  # the builds stop their servers; this is for failed tests
        stop_strays(paths)


def rescue(project: Project, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--root", str(project.root), *args])
    return result.exit_code, result.stdout, result.stderr


def kill_build_when(project: Project, ready: Callable[[], bool]) -> int:
    """Start a real `rescue build`; SIGKILL it as soon as `ready()`. Returns its pid."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABEL_STUDIO_")}
    build = subprocess.Popen([sys.executable, "-m", "pipeline", "--root", str(project.root), "build"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = False
    try:
        deadline = time.monotonic() + 300
        while build.poll() is None and time.monotonic() < deadline and not seen:
            seen = ready()
            time.sleep(0.02)
    finally:
        build.send_signal(signal.SIGKILL)
        build.wait()
    assert seen, "the build never reached the point where it was to be killed"
    return build.pid


def test_a_build_killed_while_its_server_starts_leaves_no_unreported_server(corpus: Project) -> None:
    paths = server.ServerPaths.of(corpus)
    kill_build_when(corpus, lambda: bool(stray_servers(paths)) and not paths.state.exists())
    (group,) = stray_servers(paths)
    assert process_alive(group) and server.read_state(paths) is None  # running, but never recorded

    code, out, _ = rescue(corpus, "status")
    assert code == 0
    assert f"a Label Studio server (process group {group}) runs on {paths.data} without a record" in out
    assert json.loads(rescue(corpus, "status", "--json")[1])["labelstudio"]["orphaned"] is True
    assert rescue(corpus, "labelstudio", "down")[0] == 0  # down stops it, too
    assert not process_alive(group) and stray_servers(paths) == []


def gateways_of(paths: server.ServerPaths, settle_on: list[int]) -> list[int]:
    """Pids of annotators' gateways (gateway.py) of this project's server that still run, once they are
    `settle_on` or 30 s have passed (a gateway whose server ended needs a moment to notice and exit)."""
    deadline = time.monotonic() + 30
    while (found := _gateways(paths)) != settle_on and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def _gateways(paths: server.ServerPaths) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if gateway_process.MODULE.encode() in argv and str(paths.admin).encode() in argv \
                and process_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_a_killed_build_leaves_its_server_reported_and_the_next_build_stops_it(corpus: Project) -> None:
    paths = server.ServerPaths.of(corpus)
    kill_build_when(corpus, lambda: bool(stray_servers(paths)) and not paths.state.exists())
    (interrupted,) = stray_servers(paths)
    build_pid = kill_build_when(corpus, lambda: owner_path(paths).is_file() and paths.state.exists())
    state = server.read_state(paths)
    assert state is not None
    assert not process_alive(interrupted)  # the second build stopped the first one's unrecorded server
    assert server.running(paths) == state  # the orphan: it outlived the build that started it
    assert gateways_of(paths, [state.gateway_pid]) == [state.gateway_pid]  # with its annotators' gateway (the interrupted one's went)
    owner = ServerOwner.model_validate_json(owner_path(paths).read_text())
    assert (owner.server_pid, owner.starter_pid, owner.command) == (state.pid, build_pid, "rescue build")

    code, out, _ = rescue(corpus, "status")
    assert code == 0
    assert f"embedded Label Studio server: running at {state.url}, pid {state.pid}, since {state.started_at}" in out
    assert f"started by `rescue build` (pid {build_pid}, no longer running)" in out
    assert "orphaned: the next `rescue build` takes it over and stops it" in out
    code, out, _ = rescue(corpus, "status", "--json")
    reported = json.loads(out)["labelstudio"]
    assert reported["pid"] == state.pid and reported["orphaned"] is True
    assert reported["started_by"]["starter_pid"] == build_pid and reported["started_by"]["alive"] is False

    code, out, err = rescue(corpus, "build")
    assert code == 0, out + err
    assert f"server: ran - embedded server {state.url} (left running by `rescue build`, pid {build_pid}, " \
           "which is gone: taken over, stopped at the end of this build)" in out
    assert "release: build/release/v1/" in out
    assert not process_alive(state.pid) and server.running(paths) is None
    assert gateways_of(paths, []) == []  # the orphan's gateway stopped with it
    assert not owner_path(paths).exists() and not paths.state.exists()
    assert "embedded Label Studio server" not in rescue(corpus, "status")[1]
    debris = [p for p in corpus.build.rglob("*") if (".tmp-" in p.name or ".old-" in p.name)
              and not p.is_relative_to(paths.data)]
    assert debris == []


def test_a_server_started_by_labelstudio_up_is_reused_and_left_running(corpus: Project) -> None:
    paths = server.ServerPaths.of(corpus)
    code, _, err = rescue(corpus, "labelstudio", "up")
    assert code == 0, err
    state = server.read_state(paths)
    assert state is not None
    code, out, err = rescue(corpus, "build")
    assert code == 0, out + err
    assert f"embedded server {state.url} (already running, started by `rescue labelstudio up`" in out
    assert server.running(paths) == state  # left running, as `labelstudio up` asked
    code, out, _ = rescue(corpus, "status")
    assert "started by `rescue labelstudio up`" in out and "orphaned" not in out
    assert rescue(corpus, "labelstudio", "down")[0] == 0
    assert server.running(paths) is None and not owner_path(paths).exists()
