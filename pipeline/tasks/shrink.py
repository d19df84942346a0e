"""The shrink guard of freeze: a release never replaces one that holds more, unless asked (`allow_shrink`).

A release shrinks when a session (sample) of the release it replaces is missing from the new one, or a task
has fewer instances. That is how lost annotations show (a deleted annotation or project on the server, a
row whose dispute went back to the adjudicators): gold is complete for fewer sessions, and a re-freeze would
quietly publish less. What the existing release holds is read from its own data files (benchmark.jsonl and
gold/<task>.jsonl, one line per session and per instance), not from its manifest's counts, so an edited
manifest cannot make a release look bigger or smaller than it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.tasks.instances import TASKS


class ReleaseContents(Record):
    """What a release folder holds: its sessions and its instances per task."""

    version: str
    sessions: tuple[str, ...]
    instances: dict[str, int] = Field(description="task -> instances in gold/<task>.jsonl")

    def describe(self) -> str:
        counts = ", ".join(f"{task.upper()} {self.instances.get(task, 0)}" for task in TASKS)
        return f"{len(self.sessions)} session(s) ({', '.join(self.sessions) or 'none'}), instances {counts}"


class Shrink(Record):
    """What replacing a release would lose."""

    version: str
    lost_sessions: tuple[str, ...]
    fewer_instances: dict[str, tuple[int, int]] = Field(description="task -> (instances before, after)")

    def describe(self) -> str:
        parts = []
        if self.lost_sessions:
            parts.append(f"session(s) {', '.join(self.lost_sessions)} would leave the release")
        if self.fewer_instances:
            parts.append("instances " + ", ".join(f"{task.upper()} {before} -> {after} (-{before - after})"
                                                  for task, (before, after) in self.fewer_instances.items()))
        return "; ".join(parts)


class ReleaseWouldShrink(RescueError):
    """Freeze refused to replace a release with a smaller one; `shrink` says what would be lost."""

    def __init__(self, shrink: Shrink, fix: str) -> None:
        super().__init__(f"release {shrink.version} not replaced: the new one would hold less ({shrink.describe()}); "
                         f"the existing release is left as it is", fix)
        self.shrink = shrink


SHRINK_FIX = ("if the loss is intended, pass --force --allow-shrink (the replaced release is kept under "
              "superseded/); else freeze a gold file that holds every session, or freeze under a new --version")
BUILD_SHRINK_FIX = ("find why the gold lost them (the gold step lists the pending sessions and why; pull reports "
                    "what left the server), restore the answers and build again; if the loss is intended, run "
                    "`rescue freeze --allow-shrink` (or `rescue build --allow-shrink`; the replaced release is "
                    "kept under superseded/)")


def _sample_ids(path: Path) -> tuple[str, ...]:
    found: list[str] = []
    with path.open("rb") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a damaged line: it holds no session the release can lose
            if isinstance(record, dict) and isinstance(record.get("sample_id"), str):
                found.append(record["sample_id"])
    return tuple(sorted(set(found)))


def _lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def release_contents(folder: Path) -> ReleaseContents | None:
    """The sessions and instances `folder` holds; None when it has no benchmark.jsonl (not a release)."""
    benchmark = folder / "benchmark.jsonl"
    if not benchmark.is_file():
        return None
    instances = {task: _lines(folder / "gold" / f"{task}.jsonl") if (folder / "gold" / f"{task}.jsonl").is_file()
                 else 0 for task in TASKS}
    return ReleaseContents(version=folder.name, sessions=_sample_ids(benchmark), instances=instances)


def shrink_of(before: ReleaseContents, sessions: Sequence[str], instances: Mapping[str, int]) -> Shrink | None:
    """What a release of `sessions` with `instances` (task -> count) would lose against `before`; None: nothing."""
    lost = tuple(sorted(set(before.sessions) - set(sessions)))
    fewer = {task: (before.instances[task], instances.get(task, 0)) for task in TASKS
             if instances.get(task, 0) < before.instances.get(task, 0)}
    return Shrink(version=before.version, lost_sessions=lost, fewer_instances=fewer) if lost or fewer else None
