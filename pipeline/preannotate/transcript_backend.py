"""The `transcript` backend: the drafts push has always sent (speaker, target guess, text from the rows step)."""

from __future__ import annotations

from pydantic import JsonValue

from pipeline.annotate.drafted import TRANSCRIPT_VERSION
from pipeline.annotate.drafted import transcript_values as prefilled
from pipeline.preannotate.drafts import RowDraft, SessionDrafts
from pipeline.preannotate.session import DraftSession
from pipeline.records import TranscriptRow

NAME = "transcript"


def transcript_values(session: DraftSession, row: TranscriptRow) -> dict[str, JsonValue]:
    """The schema's `prefill` fields of one row (the same values push's task builder pre-fills)."""
    return prefilled(session.schema, row, session.entities)


class TranscriptBackend:
    name = NAME

    def model(self) -> str:
        return TRANSCRIPT_VERSION

    def draft(self, session: DraftSession) -> SessionDrafts:
        rows = tuple(RowDraft(row_id=row.row_id, values=transcript_values(session, row)) for row in session.rows)
        return SessionDrafts(session_id=session.session_id, backend=NAME, model=self.model(),
                             schema_id=session.schema.id, rows=rows)
