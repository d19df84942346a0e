"""Row clips in a release: the media keys of the ER/VP/SSP records (the seam in `pipeline.tasks.modes`) and
packing the clips those records attach under the release's media/ folder.

Which clip belongs to which gold row is decided elsewhere (`pipeline.tasks.clips` reads the build's
transcripts); here a `ClipIndex` maps (sample_id, row_index) to the clip file, and nothing else is read.
A clip is packed once per row, however many instances attach it: `media/<sample_id>/<NNN>.mp4` (the
transcript stage's file name, NNN = row index). Packing hard-links the build's file where the file system
allows (no bytes copied, no disk used) and copies it where it does not (another device, a file system
without hard links, a link limit). Each packed file is hashed once, streamed, for MANIFEST.json.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.store import sha256_file
from pipeline.tasks.modes import ATTACHMENTS, VIDEO_MODE
from pipeline.tasks.registry import task_spec

MEDIA_FOLDER = "media"
# errors of os.link that mean "this file system or this pair of folders cannot share an inode": copy instead
NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EACCES, errno.ENOSYS}


@dataclass(frozen=True)
class RowClip:
    """One gold row's clip in the build: the file, and the span it was cut to (seconds)."""

    source: Path
    duration_sec: float
    size: int
    mtime_ns: int

    def release_path(self, sample_id: str) -> str:
        return f"{MEDIA_FOLDER}/{sample_id}/{self.source.name}"


ClipIndex = Mapping[tuple[str, int], RowClip]


@dataclass(frozen=True)
class PackedMedia:
    entries: tuple[dict[str, Any], ...]  # MANIFEST.json file entries, one per packed clip
    linked: int
    copied: int


class MediaRecords:
    """Adds the media keys to model-facing records. Row records with the same content are shared between
    instances (one dict per row and attachment position), so the release writer serialises each once."""

    def __init__(self, clips: ClipIndex) -> None:
        self.clips = clips
        self.needed: dict[str, RowClip] = {}  # release path -> clip, for every clip a record attaches
        self._rows: dict[tuple[str, int, int], dict[str, Any]] = {}

    def _clip(self, sample_id: str, row_index: int) -> tuple[str, RowClip]:
        clip = self.clips.get((sample_id, row_index))
        if clip is None:  # the index covers every gold row; a gap is a bug in whoever built it
            raise RescueError(f"gold sample {sample_id} row {row_index} has no clip",
                              "rebuild the rows with clips (`rescue build`), or freeze text-only with --no-media")
        path = clip.release_path(sample_id)
        self.needed[path] = clip
        return path, clip

    def _row(self, sample_id: str, row: dict[str, Any], position: int) -> dict[str, Any]:
        key = (sample_id, row["row_index"], position)
        found = self._rows.get(key)
        if found is None:
            path, clip = self._clip(sample_id, row["row_index"])
            found = self._rows[key] = {**row, "clip_path": path, "clip_duration_sec": clip.duration_sec,
                                       "video_attachment_index": position}
        return found

    def record(self, task: str, record: dict[str, Any]) -> dict[str, Any]:
        """The record with its clips: context rows first, then (ER/VP) the current row, which is the instance."""
        spec = task_spec(task)
        if VIDEO_MODE not in spec.modes:
            return record
        sample_id = record["sample_id"]
        context = [self._row(sample_id, row, n) for n, row in enumerate(record.get("prior_context", []), start=1)]
        attachments = [row["clip_path"] for row in context]
        out = {key: value for key, value in record.items() if key != "prior_context"}
        if spec.own_clip:  # SSP predicts the therapist's next move: its own row's clip would show the answer
            path, clip = self._clip(sample_id, record["row_index"])
            attachments.append(path)
            out.update(clip_path=path, clip_duration_sec=clip.duration_sec,
                       video_attachment_index=len(attachments))
        out[ATTACHMENTS] = attachments
        if "prior_context" in record:
            out["prior_context"] = context  # stays the last key (the writer's fast path)
        return out

    def records(self, task: str, records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.record(task, r) for r in records]


def _place(source: Path, target: Path, link: bool) -> bool:
    """Put `source` at `target`; True when hard-linked, False when copied."""
    if link:
        try:
            os.link(source, target)
            return True
        except OSError as exc:
            if exc.errno not in NO_LINK:
                raise
    shutil.copyfile(source, target)
    return False


def pack_clips(folder: Path, needed: Mapping[str, RowClip], *, link: bool = True) -> PackedMedia:
    """Every needed clip under `folder` (the release's staging folder), hard-linked where possible."""
    entries, linked = [], 0
    for path in sorted(needed):
        clip, target = needed[path], folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            linked += _place(clip.source, target, link)
        except FileNotFoundError as exc:
            raise RescueError(f"clip {clip.source} is gone (it was there when the freeze began)",
                              "run `rescue build` again: it re-cuts the rows' clips and freezes") from exc
        entries.append({"path": path, "sha256": sha256_file(target), "bytes": target.stat().st_size, "rows": None})
    return PackedMedia(entries=tuple(entries), linked=linked, copied=len(entries) - linked)
