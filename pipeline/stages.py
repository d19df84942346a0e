"""The registry of per-session stages, in run order. Later stage families add themselves here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from pipeline.media.ingest import RECORD_NAME as MEDIA_RECORD
from pipeline.media.ingest import ingest_session
from pipeline.project import Project
from pipeline.records import CatalogEntry, Record, SessionMedia
from pipeline.settings import Settings


@dataclass(frozen=True)
class Stage:
    """A per-session stage: a pure function of its catalog entry, settings section and upstream outputs."""

    name: str
    version: str  # bump when the same inputs should give different outputs
    area: str  # outputs go to build/<area>/<session_id>/
    record_name: str  # the session's record in that folder; all of them form build/manifests/<name>.jsonl
    record_type: type[Record]
    after: tuple[str, ...]
    settings_of: Callable[[Settings], BaseModel]
    input_files: Callable[[Project, CatalogEntry], list[Path]]
    run: Callable[[Project, CatalogEntry, Settings, Path, Path], Record]
    summary: str


def _ingest_inputs(project: Project, entry: CatalogEntry) -> list[Path]:
    return [project.abs(p) for p in (entry.video, entry.subtitles) if p]


INGEST = Stage(
    name="ingest",
    version="1",
    area="media",
    record_name=MEDIA_RECORD,
    record_type=SessionMedia,
    after=(),
    settings_of=lambda s: s.ingest,
    input_files=_ingest_inputs,
    run=lambda project, entry, settings, workdir, final: ingest_session(project, entry, settings.ingest, workdir, final),
    summary="validate + hash source, probe, cut clip, 16 kHz mono WAV, keyframes",
)

STAGES: dict[str, Stage] = {stage.name: stage for stage in (INGEST,)}
