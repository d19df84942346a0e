"""Names carried from an old speaker mapping to a new diarization (`rescue speakers --refresh`): a new label
takes an old name when most of its speech overlaps, in time, the turns of old labels that had that name.

The turns a mapping file was written for are kept as build/speaker_maps/<session>/<diarization_sha256>.jsonl
(a byte copy of that diarization's turns.jsonl, so its hash proves which diarization it is)."""

from __future__ import annotations

import bisect
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.project import Project
from pipeline.span import Span
from pipeline.speech.records import SpeakerTurn
from pipeline.store import read_jsonl, sha256_file

AREA = "speaker_maps"


@dataclass(frozen=True)
class Carried:
    name: str
    share: float  # of the new label's speech time that overlaps old labels with this name
    old_labels: tuple[str, ...]


def archive_path(project: Project, session_id: str, turns_sha256: str) -> Path:
    return project.session_dir(AREA, session_id) / f"{turns_sha256}.jsonl"


def archive_turns(project: Project, session_id: str, turns_file: Path, turns_sha256: str) -> None:
    """Keep a copy of the turns a mapping file is written for (once per diarization)."""
    target = archive_path(project, session_id, turns_sha256)
    if not target.exists() or sha256_file(target) != turns_sha256:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.tmp-copy")
        shutil.copyfile(turns_file, partial)
        partial.replace(target)


def archived_turns(project: Project, session_id: str, turns_sha256: str) -> list[SpeakerTurn] | None:
    """The turns of an earlier diarization, or None when no intact copy was kept."""
    path = archive_path(project, session_id, turns_sha256)
    if not path.is_file() or sha256_file(path) != turns_sha256:
        return None
    return read_jsonl(path, SpeakerTurn)


def carry_names(old_turns: Sequence[SpeakerTurn], old_names: dict[str, str], new_turns: Sequence[SpeakerTurn],
                min_share: float) -> dict[str, Carried]:
    """New label -> the old name whose labels' turns overlap at least `min_share` of its speech time. Old labels
    without a name count as no one; a new label that overlaps two names evenly, or nothing, is not carried."""
    named = sorted((t for t in old_turns if old_names.get(t.label)), key=lambda t: t.start)
    starts = [t.start for t in named]
    longest = max((t.end - t.start for t in named), default=0.0)
    overlap: dict[str, dict[str, float]] = {}
    sources: dict[str, dict[str, set[str]]] = {}
    speech: dict[str, float] = {}
    for turn in new_turns:
        span = Span(turn.start, turn.end)
        speech[turn.label] = speech.get(turn.label, 0.0) + turn.end - turn.start
        index = bisect.bisect_left(starts, turn.end) - 1
        while index >= 0 and named[index].start >= turn.start - longest:
            old = named[index]
            shared = span.overlap(old)
            if shared > 0:
                name = old_names[old.label]
                per = overlap.setdefault(turn.label, {})
                per[name] = per.get(name, 0.0) + shared
                sources.setdefault(turn.label, {}).setdefault(name, set()).add(old.label)
            index -= 1
    carried = {}
    for label, per in overlap.items():
        best = max(sorted(per), key=lambda name: per[name])
        share = min(1.0, per[best] / speech[label]) if speech[label] else 0.0  # overlapped old turns may count twice
        if share >= min_share:
            carried[label] = Carried(best, round(share, 3), tuple(sorted(sources[label][best])))
    return carried
