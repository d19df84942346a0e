"""Is a process still there? Linux /proc facts that a pid alone cannot give: its start time (a pid can be
recycled) and whether it is a zombie (dead, but not yet reaped: an orphan whose new parent never reaps it); and how
a process group the pipeline started (Label Studio, the gateway) is stopped."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; the command name before it may contain spaces."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split() if ")" in stat else None


def process_start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), or None if no such process."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields else None  # field 22 of stat
    except (IndexError, ValueError):
        return None


def is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] == "Z"  # type: ignore[index]


def process_alive(pid: int, started_ticks: int = 0) -> bool:
    """Whether `pid` runs (a zombie does not) and, when `started_ticks` is known, is still the same process."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if is_zombie(pid):
        return False
    ticks = process_start_ticks(pid)
    return not started_ticks or ticks is None or ticks == started_ticks


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (zombies left out): a session's daemons may set groups of their own."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether any process of the process group `pgid` still runs (zombies left out)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields and len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
                return True
    return False


def stop_group(pgid: int, running: Callable[[], bool], *, grace: float, kill: bool = False) -> None:
    """SIGTERM the process group `pgid` (SIGKILL at once with `kill`), then SIGKILL it if `running()` still says
    so after `grace` seconds. `running` is the caller's test: it knows which of its processes must be gone."""
    for sig in ((signal.SIGKILL,) if kill else (signal.SIGTERM, signal.SIGKILL)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while running() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not running():
            return
