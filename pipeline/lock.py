"""One writer per build folder: `build/.lock` (flock), who holds it, and the debris sweep it allows.

Every command that writes under build/ or to the annotation server holds the lock for its whole run
(`rescue build` too, across all its steps): the command takes it, once (`pipeline/cli/lock.py`), and the
build's loop (`run_build`) only checks that it is held (`require_lock`). The lock is re-entrant within one
process, so `run_stage`, the library call of one session step (tests, the demo's recorder), takes it when
no command holds it.
While the lock is held no other writer can be running, so every temp name under build/ is debris of a
killed run: the first acquisition in a process sweeps it (server-owned data and the tests' cache
excepted). The holder (pid, command, start) is written into the lock file while it holds it, so a
refused writer can say who is writing.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.processes import process_alive, process_start_ticks
from pipeline.project import Project
from pipeline.records import Record
from pipeline.store import OLD_MARK, TMP_MARK, remove_path, restore_or_remove_old

LOCK_NAME = ".lock"
# Not ours to sweep: the Label Studio server writes its own files there, without our lock; the tests
# build their cached server template under build/test-cache/ of the repository.
NOT_SWEPT = ("labelstudio/data", "test-cache")


class LockHolder(Record):
    pid: int
    command: str
    since: str
    started_ticks: int = 0


_held: set[Path] = set()  # lock files this process holds, for re-entrant acquisition


def current_command() -> str:
    """`rescue build`, `rescue push`, ... for the lock holder record (the Click command path when known)."""
    try:
        import click

        ctx = click.get_current_context(silent=True)
    except ImportError:  # pragma: no cover - click is a dependency
        ctx = None
    if ctx is not None:
        return " ".join(["rescue", *ctx.command_path.split()[1:]])
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:120] if sys.argv else "python"


def read_holder(project: Project) -> LockHolder | None:
    try:
        return LockHolder.model_validate_json((project.build / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _refusal(project: Project) -> RescueError:
    holder = read_holder(project)
    where = project.rel_or_abs(project.build) + "/"
    if holder is None or not process_alive(holder.pid, holder.started_ticks):
        who = "another rescue command"
        stop = "wait for it to finish (or stop it)"
    else:
        who = f"another rescue command ({holder.command}, pid {holder.pid}, since {holder.since})"
        stop = f"wait for it to finish (or stop it: kill {holder.pid})"
    return RescueError(f"{who} is writing to {where}: one writer at a time",
                       f"{stop}, then run this again; read-only commands (status, verify, evaluate) work meanwhile")


def require_lock(project: Project) -> None:
    """The caller's process holds build/.lock (a writing command took it): the build's loop runs only then."""
    if project.build / LOCK_NAME not in _held:
        raise RuntimeError(f"{project.build / LOCK_NAME} is not held: take it first (`build_lock`, or the CLI's "
                           "@writer), then build")


@contextmanager
def build_lock(project: Project, command: str | None = None) -> Iterator[None]:
    """Hold build/.lock for the block; refuse at once, naming the holder, when another process holds it."""
    path = project.build / LOCK_NAME
    if path in _held:  # this process holds it already (a command's lock, then a library function's)
        yield
        return
    project.build.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise _refusal(project) from exc
        _held.add(path)
        try:
            pid = os.getpid()
            holder = LockHolder(pid=pid, command=command or current_command(), started_ticks=process_start_ticks(pid)
                                or 0, since=datetime.now(timezone.utc).isoformat(timespec="seconds"))
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(holder.model_dump()) + "\n")
            handle.flush()
            sweep_debris(project)
            yield
        finally:
            _held.discard(path)
            handle.truncate(0)  # an idle build/ stays byte-identical from run to run
            fcntl.flock(handle, fcntl.LOCK_UN)


def _is_debris(name: str) -> bool:
    return name.startswith(".") and (TMP_MARK in name or OLD_MARK in name)


def sweep_debris(project: Project) -> list[Path]:
    """Remove every temp name a killed writer left under build/ (a pull's `.<snapshot>.tmp-<pid>/`, a
    freeze's `.staging.tmp-*/`, any `.<name>.tmp-*`), and restore an `.old-` folder whose replacement
    never arrived. Call only while holding the lock. Returns what was removed or restored."""
    build = project.build
    skipped = {build / part for part in NOT_SWEPT}
    found: list[Path] = []
    for folder, dirs, files in os.walk(build):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skipped]
        found += [here / name for name in (*dirs, *files) if _is_debris(name)]
    touched = []
    for path in sorted(found, key=lambda p: len(p.parts), reverse=True):  # innermost first
        if not os.path.lexists(path):
            continue
        if TMP_MARK in path.name:
            remove_path(path)
        else:
            restore_or_remove_old(path)
        touched.append(path)
    return touched
