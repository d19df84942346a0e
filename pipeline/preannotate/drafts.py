"""The drafts one backend wrote for one session: build/preannotate/<session>/drafts.json.

A draft's `values` use the same shape as a pulled annotation's fields (`pipeline/annotate/results`:
field name -> label, list of names, text, or list of item dicts), so push encodes them with the code
that encodes answers, and acceptance compares them with answers field by field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pydantic import Field, JsonValue

from pipeline.records import Record

AREA = "preannotate"
RECORD_NAME = "drafts.json"


class RowDraft(Record):
    row_id: str
    values: dict[str, JsonValue] = Field(description="schema field -> drafted value (annotation format)")
    scores: dict[str, float] = Field(default_factory=dict,
                                     description="schema field -> the backend's confidence in [0, 1]")


class QuarantinedDraft(Record):
    row_id: str
    reason: str = Field(description="why the backend's answer was not used (the row keeps the transcript draft)")


class SessionDrafts(Record):
    session_id: str
    backend: str = Field(description="transcript | gold-model | openai")
    model: str = Field(description="model name (`transcript` for the transcript drafts)")
    schema_id: str
    rows: tuple[RowDraft, ...]
    quarantined: tuple[QuarantinedDraft, ...] = ()

    @property
    def model_version(self) -> str:
        """Label Studio's `model_version` of these drafts: backend, model and schema version."""
        return f"{self.backend}:{self.model}:{self.schema_id}"


def drafts_path(build_dir: Path, session_id: str) -> Path:
    return build_dir / AREA / session_id / RECORD_NAME


class DraftBackend(Protocol):
    """One way to draft a session's rows. Backends live in pipeline/preannotate/<name>_backend.py."""

    name: str

    def model(self) -> str:
        """The model name recorded in `SessionDrafts.model` (and so in `model_version`)."""
        ...
