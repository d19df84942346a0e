"""Check one row's field values against the declarative annotation schema (annotation_schemas/*.yaml) and the
benchmark's relational rules.

Used for the sample sessions' reference labels, for what the simulated annotators answer and for model drafts
(pipeline/preannotate). The checks are the schema's (field names, types, label sets per scenario, the
session's closed entity set, item sub-fields, integer ranges, which rows a field applies to) plus the
benchmark's relational rules (spec section 2): a target never holds the speaker, the group label stands
alone, a viewpoint is about someone else, support comes from the therapist, evidence rows exist. Name lists
must be in the session's entity order (the order the Label Studio round trip gives back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema, SchemaField, SubField

# (items field, entity sub-field, name-list or entity sub-field that must not contain / equal it)
_NOT_SELF = (("interaction_behavior", "initiator", "target"), ("background_dialogue", "speaker", "target"),
             ("viewpoints_attitudes", "source", "target"))


class _Check:
    def __init__(self, schema: AnnotationSchema, scenario: Scenario, participants: Sequence[str], rows: int) -> None:
        self.schema = schema
        self.scenario = scenario
        self.entities = schema.entities(scenario, tuple(participants))
        self.group = schema.group_labels[scenario]
        self.rows = rows
        self.problems: list[str] = []

    def bad(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def value(self, part: SchemaField | SubField, value: Any, where: str, *, required: bool) -> None:
        kind = part.type
        if kind == "entity":
            if value not in self.entities:
                self.bad(where, f"{value!r} is not one of {', '.join(self.entities)}")
        elif kind in ("entities", "row_refs"):
            self.listing(part, value, where)
        elif kind == "label":
            assert part.labels is not None
            allowed = self.schema.labels(part.labels, self.scenario)
            if not (value in allowed or (value == "" and getattr(part, "allow_empty", False))):
                self.bad(where, f"{value!r} is not in the {self.scenario} label set {part.labels}")
        elif kind == "text":
            if not isinstance(value, str):
                self.bad(where, f"{value!r} is not text")
            elif value != value.strip() or (required and not value):
                self.bad(where, "is empty or has leading/trailing spaces")
        elif kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int) or not part.min <= value <= part.max:  # type: ignore[operator]
                self.bad(where, f"{value!r} is not a whole number in {part.min}-{part.max}")
        else:
            self.bad(where, f"type {kind} is not annotated")

    def listing(self, part: SchemaField | SubField, value: Any, where: str) -> None:
        if not isinstance(value, list) or len(set(map(str, value))) != len(value):
            self.bad(where, f"{value!r} is not a list without repeats")
            return
        if part.type == "row_refs":
            if any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= self.rows for v in value):
                self.bad(where, f"{value} holds something that is not a row 1-{self.rows}")
            elif value != sorted(value):
                self.bad(where, f"{value} is not in row order")
            return
        if not value:
            self.bad(where, "names no one")
        elif any(name not in self.entities for name in value):
            self.bad(where, f"{value} holds a name outside {', '.join(self.entities)}")
        elif self.group in value and len(value) > 1:
            self.bad(where, f"the group label {self.group} must stand alone")
        elif value != sorted(value, key=self.entities.index):
            self.bad(where, f"{value} is not in the session's entity order {list(self.entities)}")

    def items(self, field: SchemaField, value: Any, where: str) -> None:
        if not isinstance(value, list):
            self.bad(where, f"{value!r} is not a list of items")
            return
        names = [sub.name for sub in field.items]
        keys = []
        for number, item in enumerate(value, start=1):
            at = f"{where}[{number}]"
            if not isinstance(item, dict) or sorted(item) != sorted(names):
                self.bad(at, f"must be an object with exactly {', '.join(names)}")
                continue
            for sub in field.items:
                self.value(sub, item[sub.name], f"{at}.{sub.name}", required=True)  # an empty note says nothing
            if field.key:
                keys.append(item[field.key])
            for owner, person, other in _NOT_SELF:
                if field.name == owner:
                    against = item[other] if isinstance(item[other], list) else [item[other]]
                    if item[person] in against:
                        self.bad(at, f"{other} holds its own {person} {item[person]!r}")
            if field.name == "viewpoints_attitudes" and item["target"] == self.group:
                self.bad(at, f"target must be one on-screen person, not the group label {self.group}")
            if field.name == "support_strategy":
                if item["provider"] != self.schema.therapist:
                    self.bad(at, f"provider must be {self.schema.therapist}")
                if self.schema.therapist in item["target"]:
                    self.bad(at, f"target must not hold {self.schema.therapist}")
        if len(set(map(str, keys))) != len(keys):
            self.bad(where, f"two items share the same {field.key}")


def row_problems(schema: AnnotationSchema, scenario: Scenario, participants: Sequence[str], row_count: int,
                 values: Mapping[str, Any], *, complete: bool = True) -> list[str]:
    """Every problem of one row's field values ('field: why'); [] when they fit the schema.

    complete: every annotated field that applies to the row must be given (not only the required ones).
    Fields that do not apply to the row may be absent or empty, never filled.
    """
    check = _Check(schema, scenario, participants, row_count)
    annotated = {f.name: f for f in schema.fields if f.annotated}
    for name in values:
        if name not in annotated:
            check.bad(name, f"is not an annotated field of schema {schema.id}")
    speaker = values.get(schema.speaker_field)
    if speaker not in (*participants, schema.therapist):
        check.bad(schema.speaker_field, f"{speaker!r} is not a participant or {schema.therapist}")
        return check.problems
    for field in annotated.values():
        present = field.name in values
        value = values.get(field.name)
        if not field.applies(speaker, schema.therapist):
            if present and value not in ("", [], None):
                check.bad(field.name, f"is for {field.applies_to} rows only, but the speaker is {speaker}")
            continue
        if not present:
            if complete or field.required:
                check.bad(field.name, "is missing")
            continue
        if field.type == "items":
            check.items(field, value, field.name)
        else:
            check.value(field, value, field.name, required=field.required)
    target = values.get("target")
    if isinstance(target, list) and speaker in target:
        check.bad("target", f"holds the speaker {speaker}")
    return check.problems
