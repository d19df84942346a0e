"""The JSON schema a chat model's draft of one row must follow (structured output, strict mode).

Generated from the annotation schema for one session and one kind of row: the label sets of the session's
scenario as enums, the session's closed entity set (participants, therapist, group label) as enums, items
as arrays of objects. Only the fields that apply to the row's speaker are asked for; the speaker itself
comes from the transcript. A `confidence` object asks for the model's own 0-1 score per field (the
drafts' per-field scores; self-reported, not calibrated).
"""

from __future__ import annotations

from typing import Any

from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema, SchemaField, SubField

SCHEMA_NAME = "rescue_row_draft"
CONFIDENCE = "confidence"


def asked_fields(schema: AnnotationSchema, speaker: str) -> tuple[SchemaField, ...]:
    """The annotated fields a model drafts on a row spoken by `speaker` (all that apply, but the speaker)."""
    return tuple(f for f in schema.fields
                 if f.annotated and f.name != schema.speaker_field and f.applies(speaker, schema.therapist))


def _part(schema: AnnotationSchema, part: SchemaField | SubField, scenario: Scenario, entities: tuple[str, ...],
          row_count: int) -> dict[str, Any]:
    kind = part.type
    if kind == "entity":
        return {"type": "string", "enum": list(entities)}
    if kind == "entities":
        return {"type": "array", "items": {"type": "string", "enum": list(entities)}, "minItems": 1}
    if kind == "label":
        assert part.labels is not None
        labels = list(schema.labels(part.labels, scenario))
        return {"type": "string", "enum": labels + ([""] if getattr(part, "allow_empty", False) else [])}
    if kind == "integer":
        return {"type": "integer", "minimum": part.min, "maximum": part.max}
    if kind == "row_refs":
        return {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": row_count}}
    if kind == "text":
        return {"type": "string"}
    raise ValueError(f"field {part.name}: type {kind} is not drafted")


def _field(schema: AnnotationSchema, field: SchemaField, scenario: Scenario, entities: tuple[str, ...],
           row_count: int) -> dict[str, Any]:
    if field.type != "items":
        spec = _part(schema, field, scenario, entities, row_count)
    else:
        names = [sub.name for sub in field.items]
        spec = {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": names,
            "properties": {sub.name: _part(schema, sub, scenario, entities, row_count) for sub in field.items}}}
    if field.description:
        spec["description"] = field.description
    return spec


def row_draft_schema(schema: AnnotationSchema, scenario: Scenario, entities: tuple[str, ...], speaker: str,
                     row_count: int) -> dict[str, Any]:
    fields = asked_fields(schema, speaker)
    if any(f.name == CONFIDENCE for f in fields):
        raise ValueError(f"schema {schema.id} has a field named {CONFIDENCE!r}, which the draft format reserves")
    names = [f.name for f in fields]
    properties: dict[str, Any] = {f.name: _field(schema, f, scenario, entities, row_count) for f in fields}
    properties[CONFIDENCE] = {
        "type": "object", "additionalProperties": False, "required": names,
        "description": "your confidence, 0 to 1, that annotators keep each field's value unchanged",
        # No minimum/maximum: a score out of range is clamped, not a reason to drop the row's draft.
        "properties": {name: {"type": "number"} for name in names}}
    return {"type": "object", "additionalProperties": False, "required": [*names, CONFIDENCE],
            "properties": properties}
