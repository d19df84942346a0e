"""Transcript rows -> Label Studio tasks: the row, its context, its media and the pre-filled draft.

Task unit (see docs/annotation.md): one task per row. Every field of the benchmark is per row, the
agreement is computed per row and field, and a row id is stable across re-runs, so one task per
row makes `maximum_annotations`, idempotent import (by row id) and validation all line up.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from pipeline.annotate.config import CONTEXT_HTML
from pipeline import layout
from pipeline.annotate.drafted import META_KEY, TRANSCRIPT_VERSION, ShownDraft, transcript_values
from pipeline.annotate.results import people_strip
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia, TranscriptRow
from pipeline.schema import AnnotationSchema

PREDICTION_VERSION = TRANSCRIPT_VERSION  # Label Studio `model_version` of the drafts made from the transcript


@dataclass(frozen=True)
class SessionRows:
    """One session's rows with what their tasks need: the catalog entry and the session media."""

    entry: CatalogEntry
    rows: tuple[TranscriptRow, ...]
    session_video: str | None  # relative to the project root; None when the session was not ingested

    @property
    def session_id(self) -> str:
        return self.entry.session_id


def session_video(project: Project, session_id: str) -> str | None:
    path = layout.media_record(project, session_id)
    if not path.exists():
        return None
    return SessionMedia.model_validate_json(path.read_text(encoding="utf-8")).session_video


def media_link(rel: str | None, media_url: str | None, start: float, end: float, *, whole_clip: bool) -> str:
    """A URL the annotator's browser can play: the server's local-files route, or `media_url` + path."""
    if not rel:
        return ""
    base = f"{media_url.rstrip('/')}/{quote(rel)}" if media_url else f"/data/local-files/?d={quote(rel)}"
    return base if whole_clip else f"{base}#t={start:.2f},{end:.2f}"


def clock(seconds: float) -> str:
    """A row time as annotators read it off the player: m:ss, or h:mm:ss past an hour."""
    hours, rest = divmod(int(max(seconds, 0.0)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def context_html(rows: Sequence[TranscriptRow]) -> str:
    """The preceding rows as read-only lines: `#3  0:04-0:07  Maya: text` (escaped; the row is never labelled)."""
    if not rows:
        return "<p><i>(no preceding rows shown)</i></p>"
    lines = (f"<p><b>#{r.row_index}</b> &nbsp;<span class=\"time\">{clock(r.start)}-{clock(r.end)}</span> &nbsp;"
             f"<b>{html.escape(r.speaker)}:</b> {html.escape(r.text)}</p>" for r in rows)
    return "".join(lines)


def build_task(schema: AnnotationSchema, session: SessionRows, index: int, *, context_rows: int,
               media_url: str | None, draft: ShownDraft | None = None) -> dict[str, Any]:
    """The import payload of `session.rows[index]`: data, meta (row id for idempotency; the draft shown) and
    the draft as a prediction (`draft`: see pipeline/annotate/drafted.py; default: the transcript's)."""
    rows = session.rows
    row = rows[index]
    entry = session.entry
    entities = schema.entities(entry.scenario, entry.participants, therapist=entry.therapist)
    before = rows[max(0, index - context_rows):index] if context_rows else ()
    clip = row.clip or session.session_video
    data: dict[str, Any] = {
        "row_id": row.row_id,
        "session_id": entry.session_id,
        "scenario": entry.scenario,
        "schema": schema.id,
        "row_index": row.row_index,
        "heading": (f"{entry.session_id} - row {row.row_index} of {len(rows)} - {row.start:.2f}-{row.end:.2f} s"
                    f" - transcript says: {row.speaker}"),
        "video": media_link(clip, media_url, row.start, row.end, whole_clip=bool(row.clip)),
        CONTEXT_HTML: context_html(before),
        "row_text": f"#{row.row_index} {row.speaker}: {row.text}",
        "entities": [{"value": name} for name in entities],
        "people": people_strip(entities),
        "rows": [{"value": str(r.row_index), "html": html.escape(f"#{r.row_index} {r.speaker}")} for r in rows],
    }
    for field in schema.fields:  # values carried from the transcript rather than annotated (start/end time)
        if not field.annotated and field.prefill:
            data[field.name] = getattr(row, field.prefill)
    task: dict[str, Any] = {"data": data, "meta": {"row_id": row.row_id, "schema": schema.id}}
    if draft is None:
        values = transcript_values(schema, row, entities)
        draft = ShownDraft(model_version=TRANSCRIPT_VERSION, values=values,
                           versions=dict.fromkeys(values, TRANSCRIPT_VERSION))
    prediction = draft.prediction(schema, entities)
    if prediction is not None:
        task["predictions"] = [prediction]
        task["meta"][META_KEY] = draft.meta()
    return task
