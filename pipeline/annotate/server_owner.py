"""Who started the embedded Label Studio server, so that a server is never left running unreported.

`build/labelstudio/owner.json` names the server's pid, the command and process that started it (pid
and start time, so a recycled pid is not mistaken for it), when, and whether that command stops it
when done (`rescue build`) or leaves it running on purpose (`rescue labelstudio up`). A server whose
starter meant to stop it but is gone (a build killed with SIGKILL) is an orphan: `rescue status` says
so, and the next build takes it over and stops it at its end. A server whose starter was killed before
it answered (so it was never recorded) is found by its data folder and stopped before a new one starts.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from pipeline.annotate import gateway_process, server
from pipeline.processes import group_alive, process_alive, process_start_ticks, stop_group
from pipeline.records import Record
from pipeline.store import write_text_atomic

OWNER_FILE = "owner.json"


class ServerOwner(Record):
    server_pid: int
    command: str
    starter_pid: int
    starter_ticks: int = 0
    since: str
    stops_when_done: bool

    @property
    def starter_alive(self) -> bool:
        return process_alive(self.starter_pid, self.starter_ticks)

    @property
    def orphaned(self) -> bool:
        """Its starter meant to stop it but is gone."""
        return self.stops_when_done and not self.starter_alive

    def describe(self) -> str:
        alive = "running" if self.starter_alive else "no longer running"
        return f"started by `{self.command}` (pid {self.starter_pid}, {alive}) at {self.since}"


def owner_path(paths: server.ServerPaths) -> Path:
    return paths.base / OWNER_FILE


def record_owner(paths: server.ServerPaths, state: server.ServerState, command: str, *,
                 stops_when_done: bool) -> ServerOwner:
    """This process now answers for the server: it started it or took it over."""
    pid = os.getpid()
    owner = ServerOwner(server_pid=state.pid, command=command, starter_pid=pid,
                        starter_ticks=process_start_ticks(pid) or 0, stops_when_done=stops_when_done,
                        since=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_text_atomic(owner_path(paths), owner.model_dump_json(indent=2) + "\n")
    return owner


def read_owner(paths: server.ServerPaths, state: server.ServerState | None) -> ServerOwner | None:
    """The owner record of the server `state` describes (None when absent, unreadable or about another server)."""
    path = owner_path(paths)
    if state is None or not path.is_file():
        return None
    try:
        owner = ServerOwner.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        return None
    return owner if owner.server_pid == state.pid else None


def forget_owner(paths: server.ServerPaths) -> None:
    owner_path(paths).unlink(missing_ok=True)


def stray_servers(paths: server.ServerPaths) -> list[int]:
    """Process groups of `label-studio` processes serving this data folder other than the recorded, healthy
    server: a server whose starter was killed before it answered /health (so it was never recorded)."""
    recorded = server.running(paths)
    want = f"LABEL_STUDIO_BASE_DATA_DIR={paths.data}".encode()
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if b"label-studio" not in (entry / "cmdline").read_bytes():
                continue
            if want not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            group = os.getpgid(int(entry.name))
        except OSError:  # gone meanwhile, or another user's process
            continue
        if process_alive(int(entry.name)) and (recorded is None or group != recorded.pid):
            groups.add(group)
    return sorted(groups)


def stop_strays(paths: server.ServerPaths) -> list[int]:
    """Stop every stray server of this data folder (call while holding the build lock). Returns their groups."""
    strays = stray_servers(paths)
    for group in strays:
        _stop_group(group)
    return strays


def _stop_group(group: int, grace: float = 15.0) -> None:
    """SIGTERM the process group (Label Studio stops in under 2 s), SIGKILL what is left after `grace`."""
    stop_group(group, lambda: group_alive(group), grace=grace)


def server_report(paths: server.ServerPaths) -> dict[str, object] | None:
    """For `rescue status`: the embedded server if one runs (url, pid, since, who started it, orphan or not)."""
    state = server.running(paths)
    if state is None:
        strays = stray_servers(paths)
        if not strays:
            return None
        return {"url": None, "pid": strays[0], "since": None, "started_by": None, "orphaned": True,
                "message": f"a Label Studio server (process group {', '.join(map(str, strays))}) runs on "
                           f"{paths.data} without a record (its start was interrupted); the next `rescue build` "
                           "or `rescue labelstudio up|down` stops it"}
    owner = read_owner(paths, state)
    gateway = (f"annotators' gateway {state.gateway_url} (pid {state.gateway_pid})"
               if gateway_process.alive(state.gateway_pid) else "no annotators' gateway (restart with `rescue "
                                                                    "labelstudio up`)")
    return {"url": state.url, "pid": state.pid, "since": state.started_at,
            "gateway_url": state.gateway_url if gateway_process.alive(state.gateway_pid) else None,
            "started_by": owner.model_dump(mode="json") | {"alive": owner.starter_alive} if owner else None,
            "orphaned": bool(owner and owner.orphaned),
            "message": f"embedded Label Studio server: running at {state.url}, pid {state.pid}, since "
                       f"{state.started_at}; {gateway}; "
                       + (owner.describe() if owner else "no record of who started it")
                       + ("; orphaned: the next `rescue build` takes it over and stops it, or run "
                          "`rescue labelstudio down`" if owner and owner.orphaned else "")}
