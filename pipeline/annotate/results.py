"""Field values <-> Label Studio `result` lists, both ways, with the schema's checks on the way back.

`encode` turns typed field values into the result entries the generated config produces (used for
the transcript drafts, i.e. predictions, and to annotate through the API). `decode` turns an
exported annotation back into field values and lists every problem it finds, per field, so that a
bad field goes to quarantine without taking the row's other fields with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from pipeline.annotate.config import EMPTY_CHOICE, ITEM_CONTROL, PEOPLE, ROW, anchor, sub_control
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema, SchemaField, SubField

Part = SchemaField | SubField
PEOPLE_SEPARATOR = "  "


def people_strip(entities: Sequence[str]) -> str:
    """The text annotators highlight names in to add list items."""
    return PEOPLE_SEPARATOR.join(entities)


def name_span(people: str, name: str) -> tuple[int, int]:
    """Offsets of `name` as a whole word in the strip; a name not in it gets a span as a sloppy highlight would."""
    position = 0
    for entity in people.split(PEOPLE_SEPARATOR):
        if entity == name:
            return position, position + len(name)
        position += len(entity) + len(PEOPLE_SEPARATOR)
    return 0, len(name)


@dataclass(frozen=True)
class TaskFacts:
    """What checking one task's annotation needs: its session's people and row count."""

    scenario: Scenario
    entities: tuple[str, ...]
    row_count: int


@dataclass
class Decoded:
    values: dict[str, JsonValue] = field(default_factory=dict)
    problems: list[tuple[str | None, str]] = field(default_factory=list)  # (field or None = whole annotation, why)


def _empty(part: Part) -> JsonValue:
    if part.type in ("entities", "row_refs", "items"):
        return []
    if part.type in ("integer", "number"):
        return None
    return ""


# -- encode -----------------------------------------------------------------------------------------------

def _value_of(part: Part, value: JsonValue) -> dict[str, Any] | None:
    """The `value` payload of one control for one field value; None when there is nothing to store."""
    kind = part.type
    if kind == "entity":
        return {"choices": [value]} if value else None
    if kind == "entities":
        return {"choices": list(value)} if value else None  # type: ignore[arg-type]
    if kind == "label":
        if value == "" and getattr(part, "allow_empty", False):
            return {"choices": [EMPTY_CHOICE]}
        return {"choices": [value]} if value else None
    if kind == "row_refs":
        return {"choices": [str(i) for i in value]} if value else None  # type: ignore[union-attr]
    if kind == "text":
        return {"text": [value]} if value else None
    if kind in ("integer", "number"):
        return {"number": value} if value is not None else None
    raise ValueError(f"{part.name}: no control for type {kind}")


_RESULT_TYPE = {"entity": "choices", "entities": "choices", "label": "choices", "row_refs": "choices",
                "text": "textarea", "integer": "number", "number": "number"}


def encode(schema: AnnotationSchema, values: Mapping[str, JsonValue], entities: Sequence[str]) -> list[dict[str, Any]]:
    """Result entries for the given field values (fields not given, or not annotated, are left out)."""
    people = people_strip(entities)
    result: list[dict[str, Any]] = []
    for schema_field in schema.fields:
        if not schema_field.annotated or schema_field.name not in values:
            continue
        value = values[schema_field.name]
        if schema_field.type != "items":
            payload = _value_of(schema_field, value)
            if payload is not None:
                result.append({"id": schema_field.name, "from_name": schema_field.name, "to_name": ROW,
                               "type": _RESULT_TYPE[schema_field.type], "value": payload})
            continue
        person = anchor(schema_field)
        for number, item in enumerate(value or [], start=1):  # type: ignore[arg-type]
            region = f"{schema_field.name}-{number}"
            name = str(item[person.name])  # type: ignore[index]
            start, end = name_span(people, name)
            span = {"start": start, "end": end}
            result.append({"id": region, "from_name": ITEM_CONTROL, "to_name": PEOPLE, "type": "labels",
                           "value": {**span, "text": name, "labels": [schema_field.name]}})
            for sub in schema_field.items:
                if sub is person or sub.name not in item:  # type: ignore[operator]
                    continue
                payload = _value_of(sub, item[sub.name])  # type: ignore[index]
                if payload is None:
                    continue
                extra = {} if sub.type == "text" else {"text": name}
                result.append({"id": region, "from_name": sub_control(schema_field, sub), "to_name": PEOPLE,
                               "type": _RESULT_TYPE[sub.type], "value": {**span, **extra, **payload}})
    return result


# -- decode -----------------------------------------------------------------------------------------------

class _Invalid(Exception):
    pass


def _one(values: list[Any], what: str) -> Any:
    if len(values) != 1:
        raise _Invalid(f"{what}: expected one choice, got {len(values)}")
    return values[0]


def _decode_value(schema: AnnotationSchema, part: Part, payload: Mapping[str, Any], facts: TaskFacts,
                  what: str) -> JsonValue:
    """One control's payload -> the field value; raises _Invalid with the reason."""
    kind = part.type
    people = ", ".join(facts.entities)
    if kind in ("entity", "entities", "label", "row_refs"):
        chosen = payload.get("choices")
        if not isinstance(chosen, list) or not all(isinstance(c, str) for c in chosen):
            raise _Invalid(f"{what}: no list of choices")
        if kind == "entity":
            name = _one(chosen, what)
            if name not in facts.entities:
                raise _Invalid(f"{what}: {name!r} is not a person of this session ({people})")
            return name
        if kind == "entities":
            strangers = [c for c in chosen if c not in facts.entities]
            if strangers:
                raise _Invalid(f"{what}: {', '.join(map(repr, strangers))} not a person of this session ({people})")
            return [e for e in facts.entities if e in chosen]
        if kind == "label":
            assert part.labels is not None
            label = _one(chosen, what)
            allowed = schema.labels(part.labels, facts.scenario)
            if label == EMPTY_CHOICE and getattr(part, "allow_empty", False):
                return ""
            if label not in allowed:
                raise _Invalid(f"{what}: unknown label {label!r} (the {facts.scenario} set {part.labels} has "
                               f"{', '.join(allowed)})")
            return label
        rows: set[int] = set()
        for choice in chosen:
            if not choice.isdigit() or not 1 <= int(choice) <= facts.row_count:
                raise _Invalid(f"{what}: {choice!r} is not a row of this session (1-{facts.row_count})")
            rows.add(int(choice))
        return sorted(rows)
    if kind == "text":
        texts = payload.get("text")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise _Invalid(f"{what}: no text")
        return "\n".join(texts).strip()  # a stray Enter or space around a note is not part of it
    number = payload.get("number")
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise _Invalid(f"{what}: {number!r} is not a number")
    if kind == "integer":
        if number != int(number):
            raise _Invalid(f"{what}: {number!r} is not a whole number")
        number = int(number)
    if (part.min is not None and number < part.min) or (part.max is not None and number > part.max):
        raise _Invalid(f"{what}: {number} is outside {part.min}-{part.max}")
    return number


def _is_empty(value: JsonValue) -> bool:
    return value in ("", None, [])


def _decode_items(schema: AnnotationSchema, schema_field: SchemaField, regions: list[dict[str, Any]],
                  subs: Mapping[str, dict[str, dict[str, Any]]], facts: TaskFacts) -> list[JsonValue]:
    person = anchor(schema_field)
    items: list[JsonValue] = []
    for number, region in enumerate(regions, start=1):
        name = str(region["value"].get("text", "")).strip()
        what = f"{schema_field.name} item {number} ({name!r})"
        if name not in facts.entities:
            raise _Invalid(f"{what}: names {name!r}, not a person of this session ({', '.join(facts.entities)})")
        item: dict[str, JsonValue] = {}
        given = subs.get(region["id"], {})
        for sub in schema_field.items:
            if sub is person:
                item[sub.name] = name
                continue
            payload = given.get(sub_control(schema_field, sub))
            if payload is None:
                if sub.type in ("text",):
                    item[sub.name] = ""
                    continue
                raise _Invalid(f"{what}: {sub.name} is missing")
            value = _decode_value(schema, sub, payload, facts, f"{what} {sub.name}")
            if sub.type == "entities" and not value:
                raise _Invalid(f"{what}: {sub.name} is empty")
            item[sub.name] = value
        items.append(item)
    return items


def decode(schema: AnnotationSchema, result: Sequence[Mapping[str, Any]], facts: TaskFacts) -> Decoded:
    """Field values of one annotation, and the problems of the fields that could not be read."""
    out = Decoded()
    scalars: dict[str, list[Mapping[str, Any]]] = {}
    regions: dict[str, list[dict[str, Any]]] = {}  # items field -> its regions, in result order
    region_field: dict[str, str] = {}
    subs: dict[str, dict[str, dict[str, Any]]] = {}  # region id -> sub control -> payload
    fields = {f.name: f for f in schema.fields}
    for entry in result:
        name, value = str(entry.get("from_name", "")), entry.get("value") or {}
        if name == ITEM_CONTROL:
            labels = value.get("labels") or []
            if len(labels) != 1 or labels[0] not in fields or fields[labels[0]].type != "items":
                out.problems.append((None, f"list item with label(s) {labels!r}, not one list field of the schema"))
                continue
            regions.setdefault(labels[0], []).append(dict(entry))
            region_field[str(entry.get("id"))] = labels[0]
        elif "__" in name:
            subs.setdefault(str(entry.get("id")), {})[name] = value
        elif name in fields and fields[name].annotated and fields[name].type != "items":
            scalars.setdefault(name, []).append(value)
        else:
            out.problems.append((None, f"result for {name!r}, which is not a field of schema {schema.id}"))
    for region_id, controls in subs.items():
        owner = region_field.get(region_id)
        for control in controls:
            if owner is None or not control.startswith(f"{owner}__"):
                target = fields.get(control.split("__")[0])
                out.problems.append((target.name if target else None,
                                     f"detail {control!r} belongs to no {control.split('__')[0]} item"))
    speaker_field = fields[schema.speaker_field]
    try:
        speaker = _decode_value(schema, speaker_field, _single(scalars.get(speaker_field.name), speaker_field.name),
                                facts, speaker_field.name)
    except _Invalid as exc:
        out.problems.append((None, f"{exc} - without a valid speaker no field can be checked"))
        return out
    for schema_field in schema.fields:
        if not schema_field.annotated:
            continue
        try:
            if schema_field.type == "items":
                value: JsonValue = _decode_items(schema, schema_field, regions.get(schema_field.name, []), subs, facts)
            else:
                payloads = scalars.get(schema_field.name)
                value = (_empty(schema_field) if not payloads else
                         _decode_value(schema, schema_field, _single(payloads, schema_field.name), facts,
                                       schema_field.name))
        except _Invalid as exc:
            out.problems.append((schema_field.name, str(exc)))
            continue
        if not schema_field.applies(str(speaker), schema.therapist):
            if not _is_empty(value):
                out.problems.append((schema_field.name, f"{schema_field.name} is for {schema_field.applies_to} rows "
                                                        f"only, but this row's speaker is {speaker}"))
            continue
        if schema_field.required and _is_empty(value) and not (schema_field.allow_empty and value == ""
                                                               and scalars.get(schema_field.name)):
            out.problems.append((schema_field.name, f"missing required field {schema_field.name}"))
            continue
        out.values[schema_field.name] = value
    return out


def _single(payloads: list[Mapping[str, Any]] | None, name: str) -> Mapping[str, Any]:
    if not payloads:
        raise _Invalid(f"missing required field {name}")
    if len(payloads) > 1:
        raise _Invalid(f"{name}: {len(payloads)} results for one field")
    return payloads[0]
