"""`rescue labelstudio up|down|status`, `rescue annotators add|list`, and the one-line errors for a server that
is down or refuses the token. Real Label Studio server, started from a pre-migrated template database."""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate import labelstudio, server
from pipeline.annotate.accounts import passwords_file
from pipeline.cli import main
from pipeline.project import Project
from tests.labelstudio_fixtures import REPO, make_project


@pytest.fixture(scope="module")
def cli_project(labelstudio_template: Path, sample_media: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A project whose build/labelstudio/ is seeded from the template, so `up` takes seconds, not a minute."""
    project = make_project(tmp_path_factory.mktemp("cli-project"), sample_media)
    (project.root / "pyproject.toml").write_text(
        f'[tool.rescue.annotate]\nserver_venv = "{REPO / ".venv-labelstudio"}"\n')
    paths = server.ServerPaths.of(project)
    paths.data.mkdir(parents=True)
    shutil.copyfile(labelstudio_template / server.DB_NAME, paths.database)
    server.write_secret(paths.admin, server.read_secret(labelstudio_template / "admin.json"))
    try:
        yield project
    finally:
        server.stop(paths)


def rescue(project: Project, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--root", str(project.root), *args])
    return result.exit_code, result.stdout, result.stderr


def test_up_status_down(cli_project: Project) -> None:
    paths = server.ServerPaths.of(cli_project)
    code, out, err = rescue(cli_project, "labelstudio", "up")
    assert code == 0, err
    state = server.read_state(paths)
    assert state is not None and state.url.startswith("http://127.0.0.1:") and state.url in out
    assert state.gateway_url.startswith("http://127.0.0.1:") and f"give them {state.gateway_url}" in out
    admin = server.read_secret(paths.admin)
    assert stat.S_IMODE(paths.admin.stat().st_mode) == 0o600
    assert admin["token"] not in out + err and admin["password"] not in out + err
    assert server.healthy(state.url)
    raw = Path(f"/proc/{state.pid}/environ").read_text().split("\0")
    environ = dict(item.split("=", 1) for item in raw if "=" in item)
    assert environ["COLLECT_ANALYTICS"] == "false" and environ["LATEST_VERSION_CHECK"] == "false"
    assert environ["LABEL_STUDIO_BASE_DATA_DIR"] == str(paths.data)
    assert labelstudio.Client(server.connect(cli_project)).whoami()[1] == server.ADMIN_EMAIL

    code, out, _ = rescue(cli_project, "labelstudio", "up")  # already running: the same server
    assert code == 0 and server.read_state(paths) == state
    code, out, _ = rescue(cli_project, "labelstudio", "status")
    assert code == 0 and f"running at {state.url}, pid {state.pid}" in out

    code, out, _ = rescue(cli_project, "labelstudio", "down")
    assert code == 0 and "stopped" in out
    assert not Path(f"/proc/{state.pid}").exists() and not paths.state.exists()
    assert not Path(f"/proc/{state.gateway_pid}").exists()  # the annotators' gateway went with the server
    code, out, _ = rescue(cli_project, "labelstudio", "status")
    assert "not running" in out


def _one_error(err: str) -> tuple[str, str]:
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].strip().startswith("fix: "), err
    return lines[0], lines[1]


def test_standalone_push_without_a_running_server_says_how_to_start_it(cli_project: Project) -> None:
    server.stop(server.ServerPaths.of(cli_project))
    code, _, err = rescue(cli_project, "push", "--standalone")
    error, fix = _one_error(err)
    assert code == 1
    assert error == "error: the embedded Label Studio server is not running"
    assert "rescue labelstudio up" in fix and "LABEL_STUDIO_URL" in fix


def test_external_server_down_or_wrong_token_is_one_clear_line(cli_project: Project,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    state = server.start_project_server(cli_project, server_settings(cli_project))
    monkeypatch.setenv("LABEL_STUDIO_URL", state.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    code, _, err = rescue(cli_project, "pull", "--standalone")
    error, fix = _one_error(err)
    assert code == 1 and f"Label Studio at {state.url} refused the API token (401)" in error
    assert "LABEL_STUDIO_API_KEY" in fix

    monkeypatch.setenv("LABEL_STUDIO_URL", f"http://127.0.0.1:{server.free_port()}")
    code, _, err = rescue(cli_project, "push", "--standalone")
    error, fix = _one_error(err)
    assert code == 1 and "cannot reach Label Studio at http://127.0.0.1:" in error and "LABEL_STUDIO_URL" in fix

    monkeypatch.delenv("LABEL_STUDIO_API_KEY")
    code, _, err = rescue(cli_project, "pull", "--standalone")
    error, fix = _one_error(err)
    assert "LABEL_STUDIO_API_KEY is not" in error and "export LABEL_STUDIO_API_KEY" in fix


def server_settings(project: Project):  # noqa: ANN201
    from pipeline.settings import load_settings

    return load_settings(project.root).annotate


def test_annotators_add_creates_accounts_once_and_keeps_passwords_private(cli_project: Project) -> None:
    state = server.start_project_server(cli_project, server_settings(cli_project))
    code, out, err = rescue(cli_project, "annotators", "add", "Ann@Example.org", "bob@example.org")
    assert code == 0, err
    assert "ann@example.org: created" in out and "bob@example.org: created" in out
    store = passwords_file(cli_project)
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    passwords = json.loads(store.read_text())
    assert set(passwords) == {"ann@example.org", "bob@example.org"}
    assert not any(p in out for p in passwords.values())
    code, out, _ = rescue(cli_project, "annotators", "add", "ann@example.org")
    assert code == 0 and "ann@example.org: exists" in out
    assert json.loads(store.read_text()) == passwords
    code, out, _ = rescue(cli_project, "annotators", "list")
    assert "ann@example.org" in out and "bob@example.org" in out and server.ADMIN_EMAIL in out
    token = labelstudio.login_token(state.url, "bob@example.org", passwords["bob@example.org"])
    me = labelstudio.Client(labelstudio.Connection(state.url, token, "environment")).whoami()
    assert me[1] == "bob@example.org"
    code, _, err = rescue(cli_project, "annotators", "add", "not-an-email")
    assert code == 1 and "'not-an-email' is not an email address" in err


def test_a_test_server_dies_with_the_process_that_started_it(labelstudio_template: Path, tmp_path: Path) -> None:
    """A killed test run must not leave a server behind (the fixtures start servers with die_with_parent)."""
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from pipeline.annotate import server\n"
        "from tests.labelstudio_fixtures import SETTINGS, REPO\n"
        f"paths = server.ServerPaths(Path({str(tmp_path / 'ls')!r}))\n"
        f"state = server.start(paths, SETTINGS, project_root=REPO, "
        f"template=Path({str(labelstudio_template)!r}), die_with_parent=True)\n"
        "print(state.pid, flush=True)\n"
        "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert Path(f"/proc/{pid}").exists()
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists(), "the server outlived the process that started it"


def test_the_server_venv_must_exist(tmp_path: Path) -> None:
    from pipeline.annotate.settings import AnnotateSettings
    from pipeline.errors import RescueError

    with pytest.raises(RescueError, match="the Label Studio server is not installed") as caught:
        server.executable(tmp_path, AnnotateSettings(server_venv=str(tmp_path / "nowhere")))
    assert "make setup" in caught.value.fix
    assert os.access(server.executable(REPO, AnnotateSettings()), os.X_OK)
