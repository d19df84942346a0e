"""The Label Studio session of `rescue build`: the server, the exports and the change check behind pull.

The server: `LABEL_STUDIO_URL` when set, else the embedded one (already running, or started here and
stopped again at the end). When the embedded server is down and its database files have the size
and modification time recorded after the last build stopped it, nothing on the server can have
changed, so the build does not start it at all.

Pull makes a new snapshot only when the server's annotations changed: the exports are compared with
the newest snapshot's stored exports by a digest of what the annotation records are made of (tasks'
ids, row ids and data; annotations' ids, accounts, last writers, times and results). Label Studio's raw exports
cannot be compared byte for byte: they carry relative times ("created_ago": "3 minutes").
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.annotate import gateway_process, server
from pipeline.annotate.labelstudio import Client, Connection
from pipeline.annotate.projects import SHARED, annotation_projects
from pipeline.annotate.settings import AnnotateSettings
from pipeline.errors import RescueError
from pipeline.processes import group_alive
from pipeline.project import Project
from pipeline.schema import SCENARIOS, AnnotationSchema
from pipeline.store import sha256_json

NO_SERVER_FIX = "or run `rescue build --no-annotation` to stop after the transcript rows"


@dataclass
class ServerSession:
    """The server this build talks to; `started_here` servers are stopped by `close`."""

    connection: Connection
    started_here: bool
    paths: server.ServerPaths
    how: str
    _client: Client | None = field(default=None, repr=False)

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = Client(self.connection)
        return self._client

    def close(self) -> bool:
        """Stop the server if this build started it; returns whether it did. Waits until every process
        of its group is gone, so the database files are final when the build records their stamp."""
        if not self.started_here:
            return False
        from pipeline.annotate.server_owner import forget_owner

        state = server.read_state(self.paths)
        stopped = server.stop(self.paths)
        forget_owner(self.paths)
        deadline = time.monotonic() + 15
        while state is not None and group_alive(state.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        return stopped


def database_stamp(paths: server.ServerPaths) -> list[tuple[str, int, int]]:
    """Name, size and mtime of the embedded server's SQLite files: unchanged files = unchanged server."""
    files = sorted(paths.data.glob(f"{server.DB_NAME}*")) if paths.data.is_dir() else []
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files]


def quiet_server(project: Project) -> str | None:
    """Why the server must be asked (external or running), or None when it is the embedded one, stopped."""
    if server.external_connection() is not None:
        return "LABEL_STUDIO_URL is set"
    if server.running(server.ServerPaths.of(project)) is not None:
        return "the embedded server is running"
    return None


def open_server(project: Project, settings: AnnotateSettings) -> ServerSession:
    paths = server.ServerPaths.of(project)
    external = server.external_connection()
    if external is not None:
        return ServerSession(external, False, paths, f"external server {external.url} (LABEL_STUDIO_URL)")
    from pipeline.annotate.server_owner import stop_strays

    stop_strays(paths)  # a server whose start was interrupted, never recorded: it would share the database
    state = server.running(paths)
    started = state is None
    # a running server whose annotators' gateway died (killed, OOM) gets it back: the links this build
    # writes (push, the agreement report) point at the gateway
    gateway_back = not started and not gateway_process.alive(state.gateway_pid)
    if started or gateway_back:
        try:
            state = server.start_project_server(project, settings)
        except RescueError as exc:
            raise RescueError(f"Label Studio: {exc.message}", f"{exc.fix}; {NO_SERVER_FIX}") from exc
    assert state is not None
    how, stop_at_end = _claim_server(paths, state, started)
    if gateway_back:
        how += f"; its annotators' gateway was not running and was started again at {state.gateway_url}"
    return ServerSession(server.connect(project, paths), stop_at_end, paths, how)


def _claim_server(paths: server.ServerPaths, state: server.ServerState, started: bool) -> tuple[str, bool]:
    """Record this build as the server's owner when it started it, or when the build that started it is
    gone (killed): then this build stops it at its end. Returns how the server was found, and whether to stop it."""
    from pipeline.annotate.server_owner import read_owner, record_owner

    where = f"embedded server {state.url}"
    if started:
        record_owner(paths, state, "rescue build", stops_when_done=True)
        return f"{where} (started for this build)", True
    owner = read_owner(paths, state)
    if owner is not None and owner.orphaned:
        record_owner(paths, state, "rescue build", stops_when_done=True)
        return (f"{where} (left running by `{owner.command}`, pid {owner.starter_pid}, which is gone: "
                "taken over, stopped at the end of this build)"), True
    return f"{where} (already running" + (f", {owner.describe()})" if owner else ")"), False


# -- exports and their digest ----------------------------------------------------------------------------------

def _annotation_key(annotation: Mapping[str, Any]) -> list[Any]:
    who, writer = annotation.get("completed_by"), annotation.get("updated_by")
    return [annotation.get("id"), who.get("id") if isinstance(who, dict) else who, annotation.get("updated_at"),
            bool(annotation.get("was_cancelled")), annotation.get("result"),
            writer.get("id") if isinstance(writer, dict) else writer]  # who changed it last: authorship


def export_digest(data: bytes) -> str:
    """What the parsed records depend on, hashed; insensitive to Label Studio's relative-time fields."""
    tasks = json.loads(data)
    return sha256_json(sorted(
        [task.get("id"), task.get("meta"), task.get("data"),
         sorted((_annotation_key(a) for a in task.get("annotations") or []), key=lambda k: str(k[0]))]
        for task in tasks))


@dataclass(frozen=True)
class ProjectExport:
    scenario: str
    project_id: int
    data: bytes
    annotator: str | None = None  # whose own project; None: a project every account answers in

    @property
    def tasks(self) -> list[dict[str, Any]]:
        return json.loads(self.data)

    @property
    def name(self) -> str:
        """As in a snapshot's exports/ folder (`<scenario>/<annotator>`), the key of its digest."""
        return f"{self.scenario}/{self.annotator or SHARED}"


def fetch_exports(client: Client, titles: Mapping[str, str]) -> list[ProjectExport]:
    """The full JSON export of the project titled `titles[scenario]`, per scenario that has one."""
    found = []
    for scenario in SCENARIOS:
        title = titles.get(scenario)
        info = client.find_project(title) if title else None
        if info is not None:
            found.append(ProjectExport(scenario, info.id, client.export_json(info.id)))
    return found


def fetch_annotation_exports(client: Client, schema: AnnotationSchema) -> list[ProjectExport]:
    """The full JSON export of every annotation project (each annotator's, and a shared one of older pushes)."""
    return [ProjectExport(p.scenario, p.info.id, client.export_json(p.info.id), p.annotator)
            for p in annotation_projects(client, schema)]


def export_map(exports: Sequence[ProjectExport]) -> dict[str, bytes]:
    return {export.name: export.data for export in exports}


def combined_digest(exports: Mapping[str, bytes]) -> str:
    return sha256_json({name: export_digest(data) for name, data in sorted(exports.items())})


def snapshot_digest(folder: Path) -> str | None:
    """The digest of a stored snapshot's exports (build/annotations/<snapshot>/exports/<scenario>/*.json)."""
    root = folder / "exports"
    files = sorted(root.rglob("*.json"))
    if not files:
        return None
    return combined_digest({path.relative_to(root).with_suffix("").as_posix(): path.read_bytes() for path in files})


def held_annotations(tasks: Sequence[Mapping[str, Any]], users: Mapping[int, str]
                     ) -> tuple[dict[str, int], set[str], set[tuple[int, str]]]:
    """From an export: row id -> task id, sessions with any annotation, and (task id, account) pairs."""
    task_of_row: dict[str, int] = {}
    sessions: set[str] = set()
    pairs: set[tuple[int, str]] = set()
    for task in tasks:
        row_id = (task.get("meta") or {}).get("row_id") or (task.get("data") or {}).get("row_id")
        if row_id:
            task_of_row.setdefault(str(row_id), int(task["id"]))
        for annotation in task.get("annotations") or []:
            sessions.add(str((task.get("data") or {}).get("session_id", "")))
            who = annotation.get("completed_by")
            user_id = who.get("id") if isinstance(who, dict) else who
            pairs.add((int(task["id"]), users.get(user_id, f"account {user_id}")))
    return task_of_row, sessions, pairs


def adjudication_titles(schema: AnnotationSchema) -> dict[str, str]:
    from pipeline.agreement.queue_labelstudio import adjudication_title

    return {scenario: adjudication_title(schema, scenario) for scenario in SCENARIOS}
