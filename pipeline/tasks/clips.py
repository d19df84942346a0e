"""Which clip the transcripts stage cut for each gold row: the `ClipIndex` a media release is packed from.

The gold step writes one gold row per transcript row, with the transcript row's `row_index`, `start` and
`end` (pipeline/agreement/gold.py `gold_row`), and the sample id is the session id. So a gold row is matched
to the transcript row of the same session and row index, and their times must agree: if they do not (the
rows were rebuilt after the gold was made, or the gold came from elsewhere), the clip would show another
stretch of the session, and that is an error naming the row, never a silently wrong clip.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline import layout
from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import SessionMedia
from pipeline.store import sha256_json
from pipeline.tasks.media import RowClip
from pipeline.transcripts import clip_end, read_rows, rows_path

TIME_TOLERANCE = 0.0005  # seconds: both sides hold the same float; this only absorbs a decimal round trip
NO_MEDIA_FIX = ("freeze it text-only: `rescue freeze --no-media` (with --gold FILE), or release_media = false in "
                "[tool.rescue.build] for `rescue build`")


def clip_duration(start: float, end: float, media_duration: float) -> float:
    """The span the transcripts stage cut for a row (seconds, 3 decimals)."""
    return round(clip_end(start, end, media_duration) - start, 3)


def _media_duration(project: Project, session_id: str) -> float:
    path = layout.media_record(project, session_id)
    if not path.is_file():
        raise RescueError(f"gold sample {session_id}: {project.rel_or_abs(path)} is missing, so its clips cannot be "
                          "checked", f"run `rescue build` to ingest it again, or {NO_MEDIA_FIX}")
    return SessionMedia.model_validate_json(path.read_text(encoding="utf-8")).duration


def session_clips(project: Project, session: BenchmarkSession) -> dict[tuple[str, int], RowClip]:
    sid = session.sample_id
    rows_file = rows_path(project, sid)
    if not rows_file.is_file():
        raise RescueError(f"gold sample {sid} has no transcript rows in this project ({project.rel_or_abs(rows_file)}):"
                          " a media release packs the clips the transcripts stage cut, and a gold file made "
                          "elsewhere (e.g. the published benchmark) has none", NO_MEDIA_FIX)
    by_index = {row.row_index: row for row in read_rows(project, sid)}
    duration = _media_duration(project, sid)
    found = {}
    for gold in session.rows:
        row = by_index.get(gold.row_index)
        where = f"gold sample {sid} row {gold.row_index}"
        if row is None:
            raise RescueError(f"{where}: {project.rel_or_abs(rows_file)} has no row {gold.row_index}",
                              f"rebuild the gold from the current rows (`rescue build`), or {NO_MEDIA_FIX}")
        if abs(row.start - gold.start_time) > TIME_TOLERANCE or abs(row.end - gold.end_time) > TIME_TOLERANCE:
            raise RescueError(f"{where} spans {gold.start_time:.3f}-{gold.end_time:.3f} s but transcript row "
                              f"{row.row_id} spans {row.start:.3f}-{row.end:.3f} s: its clip would show other speech",
                              f"rebuild the gold from the current rows (`rescue build`), or {NO_MEDIA_FIX}")
        if row.clip is None:
            raise RescueError(f"{where}: the rows were made without clips ([tool.rescue.speech.rows] clips = false)",
                              f"set clips = true and run `rescue build`, or {NO_MEDIA_FIX}")
        source = project.abs(row.clip)
        try:
            stat = source.stat()
        except FileNotFoundError as exc:
            raise RescueError(f"{where}: clip {row.clip} is missing",
                              f"run `rescue build` to cut the rows' clips again, or {NO_MEDIA_FIX}") from exc
        found[(sid, gold.row_index)] = RowClip(source=source, size=stat.st_size, mtime_ns=stat.st_mtime_ns,
                                               duration_sec=clip_duration(row.start, row.end, duration))
    return found


def clip_index(project: Project, sessions: Sequence[BenchmarkSession]) -> dict[tuple[str, int], RowClip]:
    """Every gold row's clip (errors name the sample, the row and the fix)."""
    index: dict[tuple[str, int], RowClip] = {}
    for session in sessions:
        index.update(session_clips(project, session))
    return index


def clips_signature(project: Project, index: dict[tuple[str, int], RowClip]) -> str:
    """A cheap digest that changes when any clip is rewritten (path, size, modification time), for the freeze
    step's fingerprint; `rescue verify` checks the packed clips' content."""
    return sha256_json(sorted((project.rel_or_abs(c.source), c.size, c.mtime_ns) for c in index.values()))
