"""The sample's per-turn answers placed on the rows the speech stages made, by time overlap.

The reference labels and the simulated annotators answer per script turn; Label Studio tasks are
rows, which come from ASR + diarization and need not match the turns one to one (two turns of one
speaker with a short pause become one row). Each row takes the answers of the truth turn it
overlaps most; row references (`row_refs` fields, e.g. evidence rows) are turned from turn numbers
into the numbers of the rows those turns overlap most. Turns that no row overlaps most are reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import SampleTruth, TranscriptRow, TruthTurn
from pipeline.sample.annotators import ANNOTATORS, reference_labels, simulated_annotations, values_by_row
from pipeline.schema import AnnotationSchema
from pipeline.span import Span


@dataclass(frozen=True)
class TurnMapping:
    """Which turn each row stands for, and which row each turn's number becomes."""

    row_turn: dict[str, int]  # row_id -> turn index (1-based)
    turn_row: dict[int, int]  # turn index -> row_index of the row it overlaps most
    unplaced_turns: tuple[int, ...]  # turns no row stands for (merged into a neighbour's row)


def map_turns(rows: Sequence[TranscriptRow], turns: Sequence[TruthTurn]) -> TurnMapping:
    row_turn: dict[str, int] = {}
    for row in rows:
        span = Span(row.start, row.end)
        best = max(turns, key=lambda t: (span.overlap(t), -t.index))
        if span.overlap(best) > 0:
            row_turn[row.row_id] = best.index
    turn_row: dict[int, int] = {}
    for turn in turns:
        span = Span(turn.start, turn.end)
        best_row = max(rows, key=lambda r: (span.overlap(r), -r.row_index))
        if span.overlap(best_row) > 0:
            turn_row[turn.index] = best_row.row_index
    placed = set(row_turn.values())
    return TurnMapping(row_turn, turn_row, tuple(t.index for t in turns if t.index not in placed))


def _remap_rows(schema: AnnotationSchema, values: dict[str, JsonValue],
                turn_row: dict[int, int]) -> dict[str, JsonValue]:
    """Turn numbers in row_refs fields -> row numbers (sorted, distinct; turns without a row are left out)."""
    out = dict(values)
    for field in schema.fields:
        if field.type == "row_refs" and isinstance(out.get(field.name), list):
            out[field.name] = sorted({turn_row[t] for t in out[field.name] if t in turn_row})  # type: ignore[union-attr]
    return out


def sample_truth(project: Project, session_id: str) -> SampleTruth:
    """The ground truth `rescue sample` wrote next to a sample session's video."""
    for path in sorted((project.raw_video / "sample").glob("*.truth.json")):
        truth = SampleTruth.model_validate_json(path.read_text(encoding="utf-8"))
        if truth.session_id == session_id:
            return truth
    raise RescueError(f"no ground truth for sample session {session_id} under {project.rel_or_abs(project.raw_video)}"
                      "/sample/", "run `rescue sample` to (re)make the sample sessions")


def annotator_answers(session_id: str, truth: SampleTruth, rows: Sequence[TranscriptRow], schema: AnnotationSchema,
                      annotators: Sequence[str] = ANNOTATORS, *, sample: str | None = None,
                      ) -> tuple[dict[tuple[str, str], dict[str, JsonValue]], TurnMapping]:
    """(annotator, row_id) -> field values: each simulated annotator's answers placed on the rows.

    `sample` names the sample whose labels to use when `session_id` is another session showing the
    same sample video (default: the session itself)."""
    mapping = map_turns(rows, truth.turns)
    per_turn = values_by_row(simulated_annotations(sample or session_id, annotators, schema))
    answers = {(annotator, row.row_id): _remap_rows(schema, per_turn[(annotator, mapping.row_turn[row.row_id])],
                                                    mapping.turn_row)
               for annotator in annotators for row in rows if row.row_id in mapping.row_turn}
    return answers, mapping


def reference_answers(session_id: str, truth: SampleTruth, rows: Sequence[TranscriptRow], schema: AnnotationSchema,
                      *, sample: str | None = None) -> tuple[dict[str, dict[str, JsonValue]], TurnMapping]:
    """row_id -> the reference values of the turn the row stands for (what the adjudicator answers)."""
    mapping = map_turns(rows, truth.turns)
    ref = reference_labels(sample or session_id, schema)
    return ({row.row_id: _remap_rows(schema, dict(ref.turns[mapping.row_turn[row.row_id] - 1]), mapping.turn_row)
             for row in rows if row.row_id in mapping.row_turn}, mapping)

