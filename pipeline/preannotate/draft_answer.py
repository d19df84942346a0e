"""Read a chat model's answer for one row: a `RowDraft`, or the reason it is quarantined.

An answer is used only when it is valid JSON, valid against the row's generated JSON schema (a server
may not enforce structured output) and within the schema's rules that JSON schema cannot express (a
target never holds the speaker, the group label stands alone, support comes from the therapist, no
repeated names: `row_problems`). Harmless differences are normalised first: surrounding spaces,
names in another order than the session's.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from pipeline.llm.client import ChatAnswer
from pipeline.preannotate.draft_schema import CONFIDENCE
from pipeline.preannotate.drafts import RowDraft
from pipeline.records import Scenario, TranscriptRow
from pipeline.label_rules import row_problems
from pipeline.schema import AnnotationSchema

MAX_PROBLEMS = 3


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _tidy(value: Any, entities: tuple[str, ...]) -> Any:
    """Strip text; put name lists in the session's entity order (the order annotators' answers come in)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return {k: _tidy(v, entities) for k, v in value.items()}
    if isinstance(value, list):
        items = [_tidy(v, entities) for v in value]
        if items and all(isinstance(v, str) and v in entities for v in items):
            return sorted(items, key=entities.index)
        return items
    return value


def read_answer(answer: ChatAnswer, json_schema: dict[str, Any], schema: AnnotationSchema, scenario: Scenario,
                participants: tuple[str, ...], row: TranscriptRow, row_count: int) -> RowDraft | str:
    """The row's draft, or why it is quarantined (one line)."""
    if answer.refusal:
        return f"the model refused: {_short(answer.refusal)}"
    if answer.problem:
        return f"not kept: {answer.problem}"
    cut = " (the answer was cut off at max_completion_tokens)" if answer.finish_reason == "length" else ""
    try:
        data = json.loads(answer.content)
    except ValueError as exc:
        return f"not valid JSON{cut}: {exc}; answer starts {_short(answer.content, 80)!r}"
    errors = sorted(Draft202012Validator(json_schema).iter_errors(data), key=lambda e: list(map(str, e.path)))
    if errors:
        said = "; ".join(f"{'.'.join(map(str, e.path)) or 'answer'}: {_short(e.message)}"
                         for e in errors[:MAX_PROBLEMS])
        more = f"; and {len(errors) - MAX_PROBLEMS} more" if len(errors) > MAX_PROBLEMS else ""
        return f"breaks the JSON schema{cut}: {said}{more}"
    entities = schema.entities(scenario, participants)
    confidence = data.pop(CONFIDENCE)
    values = {schema.speaker_field: row.speaker, **_tidy(data, entities)}
    problems = row_problems(schema, scenario, participants, row_count, values)
    if problems:
        more = f"; and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
        return f"breaks the schema's rules: {'; '.join(map(_short, problems[:MAX_PROBLEMS]))}{more}"
    scores = {name: min(1.0, max(0.0, float(score))) for name, score in confidence.items()}
    return RowDraft(row_id=row.row_id, values=values, scores=scores)
