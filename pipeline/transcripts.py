"""Where a session's rows live, shared by the stages that write them (speech) and read them (annotate)."""

from __future__ import annotations

from pathlib import Path

from pipeline import layout
from pipeline.project import Project
from pipeline.records import TranscriptRow
from pipeline.store import read_jsonl, write_jsonl_atomic

ROWS_FILE = "rows.jsonl"


MIN_CLIP = 0.05  # seconds: a row's clip is never shorter (a zero-length cut would be an empty file)


def clip_end(start: float, end: float, media_duration: float) -> float:
    """Where a row's clip ends: the row's end, clipped to the session, at least MIN_CLIP after its start."""
    return max(min(end, media_duration), start + MIN_CLIP)


def rows_path(project: Project, session_id: str) -> Path:
    """build/transcripts/<session_id>/rows.jsonl: one TranscriptRow per line, in row_index order."""
    return layout.session_area(project, layout.TRANSCRIPTS_AREA, session_id) / ROWS_FILE


def read_rows(project: Project, session_id: str) -> list[TranscriptRow]:
    return read_jsonl(rows_path(project, session_id), TranscriptRow)


def write_rows(path: Path, rows: list[TranscriptRow]) -> None:
    write_jsonl_atomic(path, sorted(rows, key=lambda row: row.row_index))
