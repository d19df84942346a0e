"""The embedded Label Studio server: its own venv, SQLite under build/labelstudio/, 127.0.0.1 only.

`start` picks a free port, starts `label-studio start` in a new process group with telemetry off and
a pre-made admin account whose token lives in a 0600 file, and returns once `/health` answers and
the token works. Least privilege: the server's document root for local files is the media root
(build/labelstudio/media/, see media_root.py), never the project; build/labelstudio/ and data/ are
0700 and what the server writes is private to the user (umask 077; files made by older versions are
tightened at start). Annotators reach the server only through the gateway started with it (gateway.py, the URL
in `ServerState.gateway_url`); the server's own port stays on 127.0.0.1 for the pipeline's admin access. `stop`
ends the gateway and the server's process group. `connect` returns where push and pull should go:
`LABEL_STUDIO_URL` + `LABEL_STUDIO_API_KEY` when set (an external server), else the embedded one.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pipeline import layout
from pipeline.annotate import addresses, gateway_process
from pipeline.annotate.labelstudio import Connection, masked_url
from pipeline.annotate.media_root import check_media_root
from pipeline.annotate.settings import AnnotateSettings
from pipeline.errors import RescueError
from pipeline.processes import process_alive, stop_group
from pipeline.project import Project
from pipeline.store import write_text_atomic

ADMIN_EMAIL = "admin@rescue.local"
DB_NAME = "label_studio.sqlite3"
_children: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started, to reap them


def write_secret(path: Path, data: dict[str, str]) -> None:
    """JSON readable by the owner only (0600 from the start: never world-readable, not even briefly)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    os.replace(tmp, path)


def read_secret(path: Path) -> dict[str, str]:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise RescueError(f"{path} is readable by others (mode {mode:o})", f"run `chmod 600 {path}`")
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class ServerPaths:
    """Everything of one embedded server lives under `base` (default build/labelstudio/)."""

    base: Path

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def database(self) -> Path:
        return self.data / DB_NAME

    @property
    def admin(self) -> Path:
        return self.base / "admin.json"

    @property
    def state(self) -> Path:
        return self.base / "server.json"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    @property
    def gateway_log(self) -> Path:
        """The annotators' gateway's refusals (who, method, path, why) and its own errors."""
        return self.base / "gateway.log"

    @property
    def media(self) -> Path:
        """The server's document root for local files: only the media annotators are shown (media_root.py)."""
        return self.base / "media"

    @classmethod
    def of(cls, project: Project) -> ServerPaths:
        return cls(layout.labelstudio_dir(project))


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    url: str
    started_at: str
    gateway_pid: int = 0  # the annotators' gateway (gateway.py); 0 in a state written before it existed
    gateway_url: str = ""  # the URL to give annotators; `url` stays the pipeline's direct admin access


def executable(project_root: Path, settings: AnnotateSettings) -> Path:
    """`label-studio` of the server venv: absolute, or relative to the project root or this code's checkout."""
    venv = Path(settings.server_venv)
    checkout = Path(__file__).resolve().parents[2]
    candidates = [venv] if venv.is_absolute() else [project_root / venv, checkout / venv]
    for candidate in candidates:
        path = candidate / "bin" / "label-studio"
        if path.exists():
            return path
    raise RescueError(f"the Label Studio server is not installed ({candidates[0] / 'bin' / 'label-studio'} is "
                      "missing)", f"run `make setup`, or `python3 -m venv {settings.server_venv} && "
                                  f"{settings.server_venv}/bin/pip install label-studio==1.23.2`")


def admin_credentials(paths: ServerPaths) -> dict[str, str]:
    """The admin account of this data dir; made once, before the first start creates the user."""
    if paths.admin.exists():
        return read_secret(paths.admin)
    if paths.database.exists():
        raise RescueError(f"{paths.admin} is missing but {paths.database} exists: the admin token is lost",
                          f"restore {paths.admin}, or move {paths.data} away to start with an empty server")
    credentials = {"email": ADMIN_EMAIL, "password": secrets.token_urlsafe(18), "token": secrets.token_hex(20)}
    write_secret(paths.admin, credentials)
    return credentials


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, token: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - our own 127.0.0.1 URL
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""
    except (urllib.error.URLError, OSError):
        return 0, b""


def healthy(url: str) -> bool:
    status, body = _get(f"{url}/health", timeout=3.0)
    return status == 200 and b"UP" in body


def _alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None:
        return child.poll() is None
    return process_alive(pid)  # a zombie (an orphaned server nobody reaped) counts as gone


def _is_label_studio(pid: int) -> bool:
    """Guards against a recycled pid: only a `label-studio` process is ever signalled."""
    try:
        return b"label-studio" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def read_state(paths: ServerPaths) -> ServerState | None:
    if not paths.state.exists():
        return None
    try:
        return ServerState(**json.loads(paths.state.read_text(encoding="utf-8")))
    except (ValueError, TypeError):
        return None


def running(paths: ServerPaths) -> ServerState | None:
    """The recorded server if its process lives and answers /health; else None."""
    state = read_state(paths)
    if state is None or not _alive(state.pid) or not _is_label_studio(state.pid) or not healthy(state.url):
        return None
    return state


def server_env(paths: ServerPaths, credentials: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LABEL_STUDIO_", "DJANGO_"))}
    env.update({
        "LABEL_STUDIO_BASE_DATA_DIR": str(paths.data),
        "DJANGO_DB": "sqlite",
        "LABEL_STUDIO_USERNAME": credentials["email"],
        "LABEL_STUDIO_PASSWORD": credentials["password"],
        "LABEL_STUDIO_USER_TOKEN": credentials["token"],
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true",
        "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(paths.media),
        # telemetry and update checks off
        "LATEST_VERSION_CHECK": "false",
        "COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
    })
    return env


def _log_tail(paths: ServerPaths, lines: int = 8) -> str:
    if not paths.log.exists():
        return ""
    tail = paths.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return " | ".join(line.strip() for line in tail if line.strip())


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the process that started us dies (Linux prctl)."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def make_private(paths: ServerPaths) -> None:
    """build/labelstudio/ and the server's data 0700, their files 0600 (also what an older version left looser)."""
    paths.base.mkdir(mode=0o700, parents=True, exist_ok=True)
    paths.data.mkdir(mode=0o700, exist_ok=True)
    paths.media.mkdir(mode=0o700, exist_ok=True)
    paths.base.chmod(0o700)
    for folder, names, files in os.walk(paths.data):
        os.chmod(folder, 0o700)
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(0o600)
    for path in (paths.log, paths.admin, paths.gateway_log):
        if path.exists() and not path.is_symlink():
            path.chmod(0o600)


def copy_private(source: Path, target: Path) -> None:
    """Copy a file that holds secrets (the template database): 0600 from the start."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out, source.open("rb") as handle:
        shutil.copyfileobj(handle, out)


def start(paths: ServerPaths, settings: AnnotateSettings, *, project_root: Path,
          template: Path | None = None, die_with_parent: bool = False,
          adjudicators: tuple[str, ...] = ()) -> ServerState:
    """Start the server (or return the one already running) and wait until it is healthy.

    `die_with_parent` (tests, benchmarks): the server also stops if this process is killed, so a
    crashed test run leaves no server behind. `rescue labelstudio up` leaves it off: the server
    outlives the command. `adjudicators`: the accounts the gateway admits to the adjudication projects."""
    current = running(paths)
    if current is not None:
        if gateway_process.alive(current.gateway_pid):
            return current
        return _with_gateway(paths, settings, current, die_with_parent, adjudicators)  # its gateway died or predates it
    program = executable(project_root, settings)
    check_media_root(paths.media)
    make_private(paths)
    if template is not None and not paths.database.exists():
        copy_private(template / DB_NAME, paths.database)  # pre-migrated: ~7 s instead of ~70 s
        write_secret(paths.admin, read_secret(template / "admin.json"))
    credentials = admin_credentials(paths)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # the log holds the organisation's invite token (sign-up URLs): private, like everything the server writes
    with os.fdopen(os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            [str(program), "start", "--no-browser", "--internal-host", "127.0.0.1", "-p", str(port)],
            env=server_env(paths, credentials), cwd=paths.base, stdout=log, umask=0o077,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None)  # noqa: PLW1509 - only prctl, no locks
    _children[process.pid] = process
    state = ServerState(pid=process.pid, port=port, url=url,
                        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    deadline = time.monotonic() + settings.start_timeout
    while not healthy(url):
        if process.poll() is not None:
            _children.pop(process.pid, None)
            raise RescueError(f"the Label Studio server exited during start-up (code {process.returncode}): "
                              f"{_log_tail(paths)}", f"see {paths.log}")
        if time.monotonic() > deadline:
            _terminate(process.pid)
            raise RescueError(f"the Label Studio server did not answer {url}/health within "
                              f"{settings.start_timeout:.0f} s", f"see {paths.log}; raise start_timeout in "
                                                                  "[tool.rescue.annotate] on a slow machine")
        time.sleep(0.1)  # /health is cheap, and a build waits for every start
    status, _ = _get(f"{url}/api/current-user/whoami", credentials["token"])
    if status != 200:
        _terminate(process.pid)
        raise RescueError(f"the server at {url} refused the admin token from {paths.admin} ({status})",
                          "another server may hold the port, or the database belongs to other credentials; "
                          f"move {paths.data} away to start afresh")
    try:
        return _with_gateway(paths, settings, state, die_with_parent, adjudicators)
    except RescueError:
        _terminate(process.pid)
        raise


def _with_gateway(paths: ServerPaths, settings: AnnotateSettings, state: ServerState,
                  die_with_parent: bool, adjudicators: tuple[str, ...]) -> ServerState:
    """Start the annotators' gateway in front of the running server and record both in the server's state."""
    port = addresses.gateway_port(paths.base, settings)  # the last start's while free: links keep working
    pid, url = gateway_process.start_gateway(
        upstream=state.url, server_pid=state.pid, host=settings.gateway_host, port=port,
        admin_file=paths.admin, log_file=paths.gateway_log, timeout=settings.start_timeout,
        adjudicators=adjudicators, die_with_parent=die_with_parent)
    state = ServerState(pid=state.pid, port=state.port, url=state.url, started_at=state.started_at,
                        gateway_pid=pid, gateway_url=url)
    if not settings.gateway_port:
        addresses.remember_gateway_port(paths.base, int(url.rpartition(":")[2]))
    write_text_atomic(paths.state, json.dumps(state.__dict__, indent=2) + "\n")
    return state


def _terminate(pid: int, grace: float = 15.0) -> None:
    stop_group(pid, lambda: _alive(pid), grace=grace)
    child = _children.pop(pid, None)
    if child is not None:
        child.wait(timeout=10)


def kill(paths: ServerPaths) -> None:
    """Kill the server at once (SIGKILL): what a crash or power cut does. Used by crash tests."""
    state = read_state(paths)
    if state is not None and _is_label_studio(state.pid):
        try:
            os.killpg(state.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child = _children.pop(state.pid, None)
        if child is not None:
            child.wait(timeout=10)
    if state is not None:
        gateway_process.stop_gateway(state.gateway_pid, kill=True)
    paths.state.unlink(missing_ok=True)


def stop(paths: ServerPaths) -> bool:
    """Stop the recorded server; returns whether one was running."""
    state = read_state(paths)
    if state is None:
        return False
    was_alive = _alive(state.pid) and _is_label_studio(state.pid)
    gateway_process.stop_gateway(state.gateway_pid)  # first: annotators lose access before the server goes
    if was_alive:
        _terminate(state.pid)
    paths.state.unlink(missing_ok=True)
    return was_alive


def start_project_server(project: Project, settings: AnnotateSettings) -> ServerState:
    """Start the project's server; its gateway admits the adjudicators that the settings name and the roster's
    (`rescue annotators add --adjudicator`), the same accounts that push and pull treat as adjudicators."""
    from pipeline.annotate.roster import adjudicator_accounts
    from pipeline.settings import load_settings  # the agreement family's settings name the adjudicators

    adjudicators = adjudicator_accounts(project, load_settings(project.root).agreement.adjudicators)
    return start(ServerPaths.of(project), settings, project_root=project.root, adjudicators=tuple(sorted(adjudicators)))


def external_connection() -> Connection | None:
    url = os.environ.get("LABEL_STUDIO_URL", "").strip().rstrip("/")
    if not url:
        return None
    token = os.environ.get("LABEL_STUDIO_API_KEY", "").strip()
    if not token:
        raise RescueError(f"LABEL_STUDIO_URL is set ({masked_url(url)}) but LABEL_STUDIO_API_KEY is not",
                          "export LABEL_STUDIO_API_KEY=<your access token> (Label Studio: Account & Settings)")
    return Connection(url=url, token=token, source="environment")


def connect(project: Project, paths: ServerPaths | None = None) -> Connection:
    """The server push and pull talk to: the external one from the environment, else the embedded one."""
    external = external_connection()
    if external is not None:
        return external
    paths = paths or ServerPaths.of(project)
    state = running(paths)
    if state is None:
        raise RescueError("the embedded Label Studio server is not running",
                          "run `rescue labelstudio up`, or set LABEL_STUDIO_URL and LABEL_STUDIO_API_KEY to use "
                          "another server")
    return Connection(url=state.url, token=read_secret(paths.admin)["token"], source="embedded")
