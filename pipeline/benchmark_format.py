"""The released benchmark's row and session format (`benchmark_191.jsonl`, spec section 2).

Gold rows are written in this format and the task builders read it, so a researcher's copy of
the published file and our own gold rows go through the same code. Field order is the released
order, which keeps serialisation stable.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pipeline.records import Scenario


class _Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BackgroundLine(_Item):
    speaker: str
    target: list[str]
    content: str


class PersonNote(_Item):
    person: str
    description: str


class Interaction(_Item):
    initiator: str
    target: list[str]
    description: str


class Emotion(_Item):
    person: str
    emotion_description: str
    intensity: int | float | str | None = Field(description="0-10; released data may hold floats or strings")


class Viewpoint(_Item):
    source: str
    target: str
    viewpoint: str
    attitude: str = ""


class Strategy(_Item):
    provider: str
    target: list[str]
    strategy_type: str
    strategy_content: str = ""


class BenchmarkRow(BaseModel):
    """One annotated row (turn). Relation fields are optional: the released data places them unevenly."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_time: float
    end_time: float
    primary_speaker: str
    target: list[str]
    dialogue_cleaned: str
    utterance_type: str = ""
    background_dialogue: list[BackgroundLine] = []
    tone_of_voice: str = ""
    body_posture: list[PersonNote] = []
    facial_expressions: list[PersonNote] = []
    self_directed_behavior: list[PersonNote] = []
    interaction_behavior: list[Interaction] = []
    internal_emotion: list[Emotion] = []
    viewpoints_attitudes: list[Viewpoint] = []
    support_strategy: list[Strategy] = []
    relation_cycle_state: str | None = None
    relation_cycle_reason: str | None = None
    relation_cycle_evidence_rows: list[int] | None = None
    row_index: int = Field(ge=1)
    relation_pattern: str | None = None
    relation_pattern_reason: str | None = None
    relation_pattern_evidence_rows: list[int] = []


class BenchmarkSession(BaseModel):
    """One sample (session) per line of benchmark.jsonl."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sample_id: str
    scenario: Scenario
    participants: list[str]
    source_file: str = ""
    rows: list[BenchmarkRow]
