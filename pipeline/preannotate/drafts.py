"""The drafts one backend wrote for one session: build/preannotate/<session>/drafts.json.

A draft's `values` use the same shape as a pulled annotation's fields (`pipeline/annotate/results`:
field name -> label, list of names, text, or list of item dicts), so push encodes them with the code
that encodes answers, and acceptance compares them with answers field by field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import Field, JsonValue

from pipeline.preannotate.margins import Margin
from pipeline.records import Record

if TYPE_CHECKING:
    from pipeline.preannotate.session import DraftSession

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


Source = Literal["model", "baseline", "nothing"]


class FieldGate(Record):
    """Where one field's drafts come from, and why (pipeline/preannotate/gate.py)."""

    field: str
    source: Source = Field(description="model: the backend's own answer; baseline: the majority answer of the "
                                       "training gold for the row's scenario and kind of speaker; nothing: not drafted")
    reason: str
    measure: str = Field(description="what the scores measure (the mean over the field's scored units)")
    scores: dict[str, float | None] = Field(description="model / baseline / nothing: cross-validated score")
    against: Literal["baseline", "nothing"] = Field(description="the better of baseline and nothing, which the "
                                                                "model must beat")
    margin: Margin = Field(description="model - `against`, with its bootstrap interval over sessions")


class SessionDrafts(Record):
    session_id: str
    backend: str = Field(description="transcript | gold-model | openai")
    model: str = Field(description="model name (`transcript` for the transcript drafts)")
    schema_id: str
    rows: tuple[RowDraft, ...]
    quarantined: tuple[QuarantinedDraft, ...] = ()
    training_gold: dict[str, str] = Field(default_factory=dict,
                                          description="learned backends: training gold file -> its sha256")
    notes: tuple[str, ...] = Field((), description="how the drafts were made (e.g. which fields are calibrated)")
    gates: tuple[FieldGate, ...] = Field((), description="gated backends (gold-model): per field, whether its drafts "
                                                         "come from the model, the baseline or nothing, and why")

    def sources(self) -> dict[str, Source]:
        """Field -> where its drafts come from; empty for an ungated backend (every drafted field is its own)."""
        return {gate.field: gate.source for gate in self.gates}

    @property
    def model_version(self) -> str:
        """Label Studio's `model_version` of these drafts: backend, model and schema version."""
        return f"{self.backend}:{self.model}:{self.schema_id}"


def drafts_path(build_dir: Path, session_id: str) -> Path:
    return build_dir / AREA / session_id / RECORD_NAME


def read_drafts(build_dir: Path, session_id: str) -> SessionDrafts | None:
    """The session's drafts, or None when the step has not written any."""
    path = drafts_path(build_dir, session_id)
    if not path.exists():
        return None
    return SessionDrafts.model_validate_json(path.read_text(encoding="utf-8"))


def drafts_for_rows(drafts: SessionDrafts, row_ids: Iterable[str]) -> tuple[list[RowDraft], int]:
    """The drafts of rows that still exist, in the drafts' order, and how many were dropped because their row
    vanished (re-segmentation after the drafts were made). Push and acceptance match drafts to rows here, so
    a draft is never sent for a row that is gone."""
    current = set(row_ids)
    kept = [draft for draft in drafts.rows if draft.row_id in current]
    return kept, len(drafts.rows) - len(kept)


class DraftBackend(Protocol):
    """One way to draft a session's rows. Backends live in pipeline/preannotate/<name>_backend.py."""

    name: str

    def model(self) -> str:
        """The model name recorded in `SessionDrafts.model` (and so in `model_version`)."""
        ...

    def draft(self, session: DraftSession) -> SessionDrafts:
        """Drafts for every row of `session` (a row the backend cannot draft keeps the transcript draft and is
        listed in `quarantined`). Backends are made by `pipeline.preannotate.backends.make_backend`."""
        ...
