"""What a backend drafts: one session's rows with its scenario and people, from the project or from a gold file."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.benchmark_format import BenchmarkSession
from pipeline.records import Scenario, TranscriptRow, row_id_for
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean


@dataclass(frozen=True)
class DraftSession:
    session_id: str
    scenario: Scenario
    participants: tuple[str, ...]
    rows: tuple[TranscriptRow, ...]
    schema: AnnotationSchema

    @property
    def entities(self) -> tuple[str, ...]:
        return self.schema.entities(self.scenario, self.participants)


def session_from_gold(gold: BenchmarkSession, schema: AnnotationSchema) -> DraftSession:
    """A gold session as the transcript would give it: speaker, times and text only (no target guess, as the
    rows step makes none), so evaluating a backend on it sees no label."""
    rows = tuple(TranscriptRow(row_id=row_id_for(gold.sample_id, row.start_time, max(row.end_time, row.start_time
                                                                                    + 0.001)),
                               session_id=gold.sample_id, row_index=row.row_index, start=row.start_time,
                               end=max(row.end_time, row.start_time + 0.001), speaker=clean(row.primary_speaker),
                               text=clean(row.dialogue_cleaned))
                 for row in gold.rows)
    return DraftSession(gold.sample_id, gold.scenario, tuple(clean(p) for p in gold.participants), rows, schema)
