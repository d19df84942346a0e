"""The declarative annotation schema (annotation_schemas/*.yaml) as typed records.

Everything that labels rows reads it: the Label Studio config generator, the validator for
pulled annotations, the agreement plan and the task builders' label sets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from pipeline.errors import RescueError, describe_validation
from pipeline.records import Record, Scenario

FieldType = Literal["number", "text", "label", "entity", "entities", "integer", "row_refs", "items"]
ItemType = Literal["text", "label", "entity", "entities", "integer"]
AppliesTo = Literal["all", "client", "therapist"]
Agreement = Literal["nominal", "ordinal", "interval", "set", "text", "none"]
SCENARIOS: tuple[Scenario, ...] = ("couple", "family")
DEFAULT_SCHEMA = "rescue-v1.yaml"


class SubField(Record):
    """One attribute of a list item (e.g. `person`, `intensity` of an `internal_emotion` item)."""

    name: str
    type: ItemType
    labels: str | None = None
    min: int | None = None
    max: int | None = None
    agreement: Agreement = "none"


class SchemaField(Record):
    name: str
    group: str
    type: FieldType
    applies_to: AppliesTo
    agreement: Agreement
    required: bool = False
    annotated: bool = True
    labels: str | None = None
    allow_empty: bool = False
    min: int | None = None
    max: int | None = None
    key: str | None = None
    items: tuple[SubField, ...] = ()
    prefill: str | None = None
    description: str = ""

    @model_validator(mode="after")
    def _check(self) -> SchemaField:
        if self.type == "items" and not self.items:
            raise ValueError(f"field {self.name}: type items needs `items`")
        if self.type != "items" and self.items:
            raise ValueError(f"field {self.name}: only type items may have `items`")
        if self.key is not None and self.key not in {item.name for item in self.items}:
            raise ValueError(f"field {self.name}: key {self.key!r} is not one of its items")
        for part in (self, *self.items):
            if part.type == "label" and not part.labels:
                raise ValueError(f"field {self.name}: {part.name} is a label without `labels`")
            if part.type == "integer" and (part.min is None or part.max is None or part.min > part.max):
                raise ValueError(f"field {self.name}: {part.name} is an integer without a valid min/max")
        return self

    def applies(self, speaker: str, therapist: str) -> bool:
        """Whether this field is filled on a row spoken by `speaker`."""
        if self.applies_to == "all":
            return True
        return (speaker == therapist) == (self.applies_to == "therapist")


LabelScope = Literal["all", "couple", "family"]


class LabelGuideEntry(Record):
    """What the labels of one label set mean (per scope, like the set) and how to choose between them."""

    definitions: dict[LabelScope, dict[str, str]] = {}
    # a list applies to every scenario; a mapping per scope (all, couple, family) keeps a scenario's rules off the
    # other's form and prompts (a couple project must not show family-only precedence)
    rules: tuple[str, ...] | dict[LabelScope, tuple[str, ...]] = ()

    def rules_for(self, scenario: Scenario) -> tuple[str, ...]:
        if isinstance(self.rules, tuple):
            return self.rules
        return (*self.rules.get("all", ()), *self.rules.get(scenario, ()))


class LabelGuide(Record):
    """One scenario's view of a label set's guide, in label-set order: for the annotation form and prompts."""

    label_set: str
    scenario: Scenario
    definitions: tuple[tuple[str, str], ...]  # (label, definition); labels without one are left out
    rules: tuple[str, ...]

    def definition(self, label: str) -> str:
        return dict(self.definitions).get(label, "")


class AnnotationSchema(Record):
    name: str
    version: str
    therapist: str
    speaker_field: str = Field("primary_speaker", description="the entity field that decides a row's applies_to")
    group_labels: dict[Scenario, str]
    label_sets: dict[str, dict[Literal["all", "couple", "family"], tuple[str, ...]]]
    fields: tuple[SchemaField, ...] = Field(min_length=1)
    label_guides: dict[str, LabelGuideEntry] = Field(
        {}, description="definitions and precedence rules per label set (guidance only: no result depends on it)")
    every_label_defined: bool = Field(False, description="refuse a label set label that has no definition")

    @model_validator(mode="after")
    def _check(self) -> AnnotationSchema:
        names = [f.name for f in self.fields]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"field name(s) repeat: {', '.join(repeated)}")
        for set_name, per_scenario in self.label_sets.items():
            if not per_scenario:
                raise ValueError(f"label set {set_name} is empty")
            for scope, labels in per_scenario.items():
                if not labels:
                    raise ValueError(f"label set {set_name} ({scope}) is empty")
                if len(set(labels)) != len(labels):
                    raise ValueError(f"label set {set_name} ({scope}) repeats a label")
            if "all" not in per_scenario and set(per_scenario) != set(SCENARIOS):
                raise ValueError(f"label set {set_name} needs `all` or both couple and family")
        speaker = next((f for f in self.fields if f.name == self.speaker_field), None)
        if speaker is None or speaker.type != "entity" or speaker.applies_to != "all":
            raise ValueError(f"speaker_field {self.speaker_field!r} must name an entity field that applies to all rows")
        for field in self.fields:
            for part in (field, *field.items):
                if part.labels and part.labels not in self.label_sets:
                    raise ValueError(f"field {field.name}: unknown label set {part.labels!r}")
        self._check_guides()
        return self

    def _check_guides(self) -> None:
        """Every definition names a label of its set and scope; with `every_label_defined`, every label has one."""
        for set_name, guide in self.label_guides.items():
            where = f"label_guides.{set_name}"
            if set_name not in self.label_sets:
                raise ValueError(f"{where}: {set_name!r} is not a label set (label_sets: {', '.join(self.label_sets)})")
            for scope, definitions in guide.definitions.items():
                known = self._scope_labels(set_name, scope)
                stray = [label for label in definitions if label not in known]
                if stray:
                    raise ValueError(f"{where}.definitions.{scope}: {', '.join(map(repr, stray))} not in the "
                                     f"{scope} labels of {set_name}")
                blank = [label for label, text in definitions.items() if not text.strip()]
                if blank:
                    raise ValueError(f"{where}.definitions.{scope}: empty definition for {', '.join(map(repr, blank))}")
        if not self.every_label_defined:
            return
        for set_name in self.label_sets:
            for scenario in SCENARIOS:
                guide = self.label_guide(set_name, scenario)
                missing = [label for label in self.labels(set_name, scenario) if not guide.definition(label)]
                if missing:
                    raise ValueError(f"label_guides.{set_name}: no definition for {', '.join(map(repr, missing))} "
                                     f"({scenario}; every_label_defined is true)")

    def _scope_labels(self, set_name: str, scope: LabelScope) -> tuple[str, ...]:
        if scope != "all":
            return self.labels(set_name, scope)
        return tuple(dict.fromkeys(label for scenario in SCENARIOS for label in self.labels(set_name, scenario)))

    @property
    def id(self) -> str:
        return f"{self.name}-v{self.version}"

    def field(self, name: str) -> SchemaField:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(name)

    def labels(self, set_name: str, scenario: Scenario) -> tuple[str, ...]:
        per_scenario = self.label_sets[set_name]
        return per_scenario.get(scenario) or per_scenario["all"]

    def label_guide(self, set_name: str, scenario: Scenario) -> LabelGuide:
        """A label set's definitions (scenario-specific ones win over `all`) and rules, in the set's label order."""
        entry = self.label_guides.get(set_name, LabelGuideEntry())
        merged = {**entry.definitions.get("all", {}), **entry.definitions.get(scenario, {})}
        definitions = tuple((label, merged[label]) for label in self.labels(set_name, scenario) if label in merged)
        return LabelGuide(label_set=set_name, scenario=scenario, definitions=definitions,
                          rules=entry.rules_for(scenario))

    def entities(self, scenario: Scenario, participants: tuple[str, ...], *, therapist: bool = True
                 ) -> tuple[str, ...]:
        """The closed entity set of a session: its participants, the therapist (unless the catalog says the
        session has none) and the group label."""
        return (*participants, *((self.therapist,) if therapist else ()), self.group_labels[scenario])


def load_schema(path: Path) -> AnnotationSchema:
    """Read and validate a schema file; any problem names the file and what to fix."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RescueError(f"annotation schema {path} not found", "restore it from git or pass another schema") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RescueError(f"annotation schema {path} is not valid YAML: {exc}", "fix the YAML syntax") from exc
    try:
        return AnnotationSchema.model_validate(data)
    except ValidationError as exc:
        raise RescueError(f"annotation schema {path}: {describe_validation(exc)}",
                          "see the field types at the top of annotation_schemas/rescue-v1.yaml") from exc
