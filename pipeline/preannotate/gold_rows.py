"""Gold rows for learning and scoring drafts: training files read strictly, rows turned into annotation values.

A training file is any gold file in the released benchmark row format (the project's own
build/gold/benchmark.jsonl or a published file). It is read with the gold reader of the task builders,
strictly: a label outside the schema's label sets, a name outside the session's entity set or a key of
another format version is an error naming the file, line, sample, row and field (a model must not learn
labels annotators cannot give). A project gold file whose summary names another schema version is refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import JsonValue

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.errors import RescueError
from pipeline.relation_label import relation_label
from pipeline.schema import AnnotationSchema, SchemaField
from pipeline.store import sha256_file
from pipeline.tasks.context import clean, parse_intensity
from pipeline.tasks.gold_input import read_gold_file

GOLD_SUMMARY = "summary.json"  # written next to build/gold/benchmark.jsonl by the gold step


def _check_schema_version(path: Path, schema: AnnotationSchema) -> None:
    summary = path.parent / GOLD_SUMMARY
    if not summary.is_file():
        return
    try:
        schema_id = json.loads(summary.read_text(encoding="utf-8")).get("schema_id")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return  # not the gold step's summary: nothing to compare
    if schema_id and schema_id != schema.id:
        raise RescueError(f"gold file {path}: made with annotation schema {schema_id} ({summary}), but the "
                          f"project uses {schema.id}",
                          "rebuild the gold with the current schema (`rescue gold`), or train on a file made "
                          "with it")


def read_training_gold(paths: Sequence[Path], schema: AnnotationSchema) -> tuple[list[BenchmarkSession],
                                                                                dict[str, str]]:
    """Every session of the training files (strict: see the module doc) and each file's sha256."""
    sessions: list[BenchmarkSession] = []
    hashes: dict[str, str] = {}
    for path in paths:
        _check_schema_version(path, schema)
        read, _ = read_gold_file(path, schema, strict=True)
        sessions.extend(read)
        hashes[str(path)] = sha256_file(path)
    return sessions, hashes


def session_entities(session: BenchmarkSession, schema: AnnotationSchema) -> tuple[str, ...]:
    return schema.entities(session.scenario, tuple(clean(p) for p in session.participants))


def _names(value: Sequence[str], entities: tuple[str, ...]) -> list[str]:
    """Names in the session's entity order (the order a Label Studio round trip gives back)."""
    given = {clean(v) for v in value}
    return [e for e in entities if e in given]


def _items(field: SchemaField, raw: Sequence[object], entities: tuple[str, ...]) -> list[JsonValue]:
    out: list[JsonValue] = []
    for obj in raw:
        data = obj.model_dump() if hasattr(obj, "model_dump") else dict(obj)  # type: ignore[call-overload]
        item: dict[str, JsonValue] = {}
        for sub in field.items:
            value = data.get(sub.name)
            if sub.type == "entity":
                item[sub.name] = clean(value)
            elif sub.type == "entities":
                item[sub.name] = _names(value or [], entities)
            elif sub.type == "integer":
                item[sub.name] = parse_intensity(value)
            else:
                item[sub.name] = clean(value)
        out.append(item)
    return out


# The schema's relation fields and the released row's fields of the same role when the label sits in
# relation_pattern (freeze's per-row rule, pipeline/relation_label.py): reason and evidence follow the label.
RELATION_FIELDS = {"relation_cycle_state": "relation_pattern", "relation_cycle_reason": "relation_pattern_reason",
                   "relation_cycle_evidence_rows": "relation_pattern_evidence_rows"}


def _relation_source(row: BenchmarkRow) -> dict[str, object]:
    """The row's fields with the relation fields taken from where its label sits: the state where it is set,
    else the pattern (relation_label); a row with neither keeps its state fields as they are."""
    data = row.model_dump()
    _, source = relation_label(row)
    if source == "relation_pattern":
        data.update({state: data.get(pattern) for state, pattern in RELATION_FIELDS.items()})
    return data


def gold_values(schema: AnnotationSchema, row: BenchmarkRow, entities: tuple[str, ...]) -> dict[str, JsonValue]:
    """The annotated fields of a gold row that apply to its speaker, as a pulled annotation holds them.
    A relation field the released data leaves out (None) is left out, not taken as an answer. The relation
    label (with its reason and evidence rows) is read where freeze reads it: the row's relation_cycle_state
    where set, else its relation_pattern (pipeline/relation_label.py)."""
    data = _relation_source(row)
    speaker = clean(row.primary_speaker)
    values: dict[str, JsonValue] = {}
    for field in schema.fields:
        if not field.annotated or field.name not in data or not field.applies(speaker, schema.therapist):
            continue
        raw = data[field.name]
        if raw is None:
            continue
        if field.type == "entity":
            values[field.name] = clean(raw)
        elif field.type == "entities":
            values[field.name] = _names(raw, entities)
        elif field.type == "items":
            values[field.name] = _items(field, getattr(row, field.name), entities)
        elif field.type == "row_refs":
            values[field.name] = sorted({int(i) for i in raw})
        else:
            values[field.name] = clean(raw) if isinstance(raw, str) else raw
    return values
