"""The `openai` pre-annotation backend: drafts every label field of a session's rows with a chat model.

Any OpenAI-compatible endpoint (pipeline/llm). One request per row: the row's answer schema depends on
who speaks it (therapist and client rows have different fields), a bad answer costs one row and not a
batch, a row's cache entry survives edits elsewhere in the session (beyond its context window), and the
repeated system prompt is what providers' prefix caches are for. Rows whose answer is unusable, or that
the budget left unsent, are quarantined with the reason and keep the transcript draft.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.llm.cache import AREA as CACHE_AREA
from pipeline.llm.client import ChatClient, ChatRunStats, NotSent
from pipeline.llm.content import data_url
from pipeline.llm.request import ChatRequest, ResponseSchema
from pipeline.preannotate.draft_answer import read_answer
from pipeline.preannotate.draft_prompt import row_messages
from pipeline.preannotate.draft_schema import SCHEMA_NAME, row_draft_schema
from pipeline.preannotate.drafts import QuarantinedDraft, RowDraft, SessionDrafts
from pipeline.preannotate.openai_settings import SECTION, OpenAIDraftSettings
from pipeline.preannotate.session import DraftSession
from pipeline.project import Project
from pipeline.records import CatalogEntry, Keyframe, SessionMedia, TranscriptRow
from pipeline.schema import AnnotationSchema

BACKEND = "openai"
NOT_SENT = "not drafted"  # quarantine reasons of rows the client did not send start with this


@dataclass(frozen=True)
class DraftRun:
    drafts: SessionDrafts
    stats: ChatRunStats  # requests, cache hits, tries, waits, tokens and cost: for the step's record

    @property
    def budget_stopped(self) -> bool:
        return any(q.reason.startswith(NOT_SENT) for q in self.drafts.quarantined)


def _row_keyframes(media: SessionMedia, row: TranscriptRow, limit: int) -> list[Keyframe]:
    """The keyframes inside the row's span; the nearest one when none falls inside."""
    inside = [k for k in media.keyframes if row.start <= k.time <= row.end]
    if not inside and media.keyframes:
        middle = (row.start + row.end) / 2
        inside = [min(media.keyframes, key=lambda k: abs(k.time - middle))]
    return inside[:limit]


def row_requests(project: Project, entry: CatalogEntry, settings: OpenAIDraftSettings, schema: AnnotationSchema,
                 rows: Sequence[TranscriptRow]) -> list[tuple[ChatRequest, dict]]:
    """One request per row, in row order, each with the JSON schema its answer must follow."""
    media = None
    if settings.keyframes:
        from pipeline.speech.transcribe import read_media

        media = read_media(project, entry.session_id)
    entities = schema.entities(entry.scenario, entry.participants)
    out = []
    for position, row in enumerate(rows):
        images = ([data_url(project.abs(k.path)) for k in _row_keyframes(media, row, settings.max_keyframes)]
                  if media is not None else [])
        messages = row_messages(schema, entry.scenario, entry.session_id, entry.participants, rows, position,
                                settings.context_before, settings.context_after, images)
        json_schema = row_draft_schema(schema, entry.scenario, entities, row.speaker, len(rows))
        out.append((ChatRequest(messages, ResponseSchema(SCHEMA_NAME, json_schema), label=row.row_id), json_schema))
    return out


def draft_session_run(project: Project, entry: CatalogEntry, settings: OpenAIDraftSettings,
                      schema: AnnotationSchema, rows: Sequence[TranscriptRow], *,
                      environ: Mapping[str, str] | None = None) -> DraftRun:
    client = ChatClient(settings, project.build / CACHE_AREA, section=SECTION, environ=environ)
    rows = sorted(rows, key=lambda r: r.row_index)
    requests = row_requests(project, entry, settings, schema, rows)
    outcomes, stats = client.complete_all([request for request, _ in requests])
    drafted: list[RowDraft] = []
    quarantined: list[QuarantinedDraft] = []
    for row, (_, json_schema), outcome in zip(rows, requests, outcomes):
        if isinstance(outcome, NotSent):
            quarantined.append(QuarantinedDraft(row_id=row.row_id, reason=f"{NOT_SENT}: {outcome.reason}"))
            continue
        result = read_answer(outcome, json_schema, schema, entry.scenario, entry.participants, row, len(rows))
        if isinstance(result, str):
            quarantined.append(QuarantinedDraft(row_id=row.row_id, reason=result))
        else:
            drafted.append(result)
    drafts = SessionDrafts(session_id=entry.session_id, backend=BACKEND, model=settings.model, schema_id=schema.id,
                           rows=tuple(drafted), quarantined=tuple(quarantined))
    return DraftRun(drafts, stats)


def draft_session(project: Project, entry: CatalogEntry, settings: OpenAIDraftSettings, schema: AnnotationSchema,
                  rows: Sequence[TranscriptRow]) -> SessionDrafts:
    """The backend's entry point for the preannotate step."""
    return draft_session_run(project, entry, settings, schema, rows).drafts


class OpenAIBackend:
    """The `openai` entry of the backend registry (pipeline/preannotate/backends.py)."""

    name = BACKEND

    def __init__(self, project: Project, settings: OpenAIDraftSettings, schema: AnnotationSchema) -> None:
        self.project, self.settings, self.schema = project, settings, schema

    def model(self) -> str:
        return self.settings.model

    def draft(self, session: DraftSession) -> SessionDrafts:
        # a DraftSession carries what the prompt needs of a catalog entry: id, scenario, participants
        return draft_session(self.project, session, self.settings, self.schema, session.rows)  # type: ignore[arg-type]
