"""One row's gold-model draft from its heads' predictions and its nearest gold rows.

Labels and sets come from the heads; list items are copied from the nearest gold row that has an item with
the predicted key (same person role, strategy type, viewpoint target), with names swapped through the roles,
then given the predicted targets and intensity; text fields (tone_of_voice, reasons, item descriptions)
come from the nearest gold rows, their participant names swapped for this session's. Evidence rows keep
their distance to the row. The speaker and the dialogue stay the transcript's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from pipeline.annotate.config import anchor
from pipeline.preannotate.gold_heads import split_set
from pipeline.preannotate.roles import RoleMap
from pipeline.schema import AnnotationSchema, SchemaField


@dataclass(frozen=True)
class GoldRow:
    """A training row: its role-encoded values, row index, roles and how similar it is to the row drafted."""

    values: dict[str, JsonValue]
    row_index: int
    roles: RoleMap
    similarity: float


@dataclass(frozen=True)
class Prediction:
    value: str
    score: float


def _first(neighbours: Sequence[GoldRow], has) -> GoldRow | None:  # type: ignore[no-untyped-def]
    return next((n for n in neighbours if has(n)), None)


def _items(schema: AnnotationSchema, f: SchemaField, heads: dict[str, Prediction], neighbours: Sequence[GoldRow],
           roles: RoleMap, entities: Sequence[str]) -> tuple[list[JsonValue], float] | None:
    keys = heads.get(f.name)
    if keys is None:
        return None
    key = f.key or anchor(f).name
    person = anchor(f)
    score = keys.score
    shared = {h: p for h, p in heads.items() if h.startswith(f"{f.name}.")}
    items: list[JsonValue] = []
    for wanted in split_set(keys.value):
        source = _first(neighbours, lambda n: any(i.get(key) == wanted  # type: ignore[union-attr]
                                                  for i in n.values.get(f.name) or []))  # type: ignore[union-attr]
        if source is None:
            continue
        item = dict(next(i for i in source.values[f.name] if i.get(key) == wanted))  # type: ignore[union-attr]
        out: dict[str, JsonValue] = {}
        for sub in f.items:
            value = item.get(sub.name)
            prediction = shared.get(f"{f.name}.{sub.name}")
            if sub.type == "entity":
                value = roles.name(str(value)) if value else None
                if value is None or (sub is not person and value == out.get(person.name)):
                    break  # a role this session lacks, or a viewpoint of someone about themself
            elif sub.type == "entities":
                chosen = split_set(prediction.value) if prediction else list(value or [])  # type: ignore[arg-type]
                value = [n for n in roles.names(chosen, entities) if n != out.get(person.name)]
                if not value:
                    break
            elif sub.type == "integer":
                value = int(prediction.value) if prediction and not items else value
                if value is None:
                    break
            elif sub.type == "text":
                value = roles.swap_in_text(str(value or ""), source.roles).strip()
            out[sub.name] = value
        else:
            if all(o.get(key) != out.get(key) for o in items):  # type: ignore[union-attr]
                items.append(out)
    score = min([score, *(p.score for p in shared.values())]) if items else score
    return items, score


def assemble(schema: AnnotationSchema, speaker: str, row_index: int, row_count: int, base: dict[str, JsonValue],
             heads: dict[str, Prediction], neighbours: Sequence[GoldRow], roles: RoleMap, entities: Sequence[str]
             ) -> tuple[dict[str, JsonValue], dict[str, float]]:
    """Draft values and per-field scores of one row; `base` holds the transcript's values (kept)."""
    values, scores = dict(base), {}
    for f in schema.fields:
        if not f.annotated or not f.applies(speaker, schema.therapist) or f.prefill and f.type != "entities":
            continue
        if f.type == "label" and f.name in heads:
            values[f.name], scores[f.name] = heads[f.name].value, round(heads[f.name].score, 4)
        elif f.type == "entities" and f.name in heads:
            names = [n for n in roles.names(split_set(heads[f.name].value), entities) if n != speaker]
            if names:
                values[f.name], scores[f.name] = names, round(heads[f.name].score, 4)
        elif f.type == "items":
            made = _items(schema, f, heads, neighbours, roles, entities)
            if made is not None:
                values[f.name], scores[f.name] = made[0], round(made[1], 4)
        elif f.type == "text":
            source = _first(neighbours, lambda n: bool(n.values.get(f.name)))
            if source is not None:
                values[f.name] = roles.swap_in_text(str(source.values[f.name]), source.roles).strip()
                scores[f.name] = round(max(0.0, source.similarity), 4)
        elif f.type == "row_refs":
            source = _first(neighbours, lambda n: f.name in n.values)
            if source is not None:
                moved = {row_index + (r - source.row_index) for r in source.values[f.name]}  # type: ignore[union-attr]
                values[f.name] = sorted(r for r in moved if 1 <= r <= row_count)
                scores[f.name] = round(max(0.0, source.similarity), 4)
    return values, scores
