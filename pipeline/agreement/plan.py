"""The agreement plan: which measures the schema asks for, each with its level and value domain.

A *measure* is one thing annotators can agree on. Plain fields give one measure each (`utterance_type`,
`target`). An `items` field gives one measure for the set of item keys per row (`internal_emotion`:
which persons have an emotion) and one per sub-field, compared between items that share a key
(`internal_emotion.intensity` over units (row, person)). The key sub-field itself is covered by the
set measure; sub-fields with agreement `none` are not measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.records import Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema, SchemaField, SubField

Level = str  # nominal | ordinal | interval | set | text


@dataclass(frozen=True)
class Measure:
    id: str  # "target", "internal_emotion", "internal_emotion.intensity"
    field: str
    sub: str | None  # sub-field name for item measures
    level: Level
    kind: str  # the schema type of the compared value (label, entity, entities, integer, text, row_refs, items)
    key: str | None  # for items fields: the sub-field that matches items across annotators
    applies_to: str
    label_set: str | None = None
    allow_empty: bool = False
    minimum: int | None = None
    maximum: int | None = None

    @property
    def categorical(self) -> bool:
        return self.level in {"nominal", "ordinal", "interval", "set"}

    def domain(self, schema: AnnotationSchema, scenario: Scenario | None = None) -> tuple[object, ...] | None:
        """The declared values in order (labels of the scenario, or of all scenarios; integers min..max);
        None where the values are open (names, sets, text)."""
        if self.label_set:
            scenarios = (scenario,) if scenario else SCENARIOS
            labels: list[object] = [""] if self.allow_empty else []
            for name in scenarios:
                labels += [label for label in schema.labels(self.label_set, name) if label not in labels]
            return tuple(labels)
        if self.kind == "integer" and self.minimum is not None and self.maximum is not None:
            return tuple(range(self.minimum, self.maximum + 1))
        return None


def _field_measure(field: SchemaField) -> Measure:
    if field.type == "items":
        return Measure(id=field.name, field=field.name, sub=None, level="set", kind="items", key=field.key,
                       applies_to=field.applies_to)
    return Measure(id=field.name, field=field.name, sub=None, level=field.agreement, kind=field.type, key=None,
                   applies_to=field.applies_to, label_set=field.labels, allow_empty=field.allow_empty,
                   minimum=field.min, maximum=field.max)


def _sub_measure(field: SchemaField, sub: SubField) -> Measure:
    return Measure(id=f"{field.name}.{sub.name}", field=field.name, sub=sub.name, level=sub.agreement,
                   kind=sub.type, key=field.key, applies_to=field.applies_to, label_set=sub.labels,
                   minimum=sub.min, maximum=sub.max)


def build_plan(schema: AnnotationSchema) -> tuple[Measure, ...]:
    """Every measure of the schema, in schema order (a field, then its sub-fields)."""
    measures: list[Measure] = []
    for field in schema.fields:
        if not field.annotated or field.agreement == "none":
            continue
        measures.append(_field_measure(field))
        for sub in field.items:
            if sub.agreement != "none" and sub.name != field.key:
                measures.append(_sub_measure(field, sub))
    return tuple(measures)
