"""The Label Studio labelling config, generated from the declarative annotation schema.

Task unit: one task per transcript row. The annotator sees the session clip cued to the row, the
preceding rows as context, the row's transcript, and one control per schema field, pre-filled from
the transcript where the schema says `prefill`. Per-session people (participants, the therapist,
the group label) differ while a project config is per scenario, so every person-valued control takes
its options from the task (`value="$entities"`). List-valued fields (`type: items`) are regions:
the annotator picks the field's label and highlights a name in the row's people strip; the region
is the item, the highlighted name its first person sub-field, and the other sub-fields are
per-region controls shown while the region is selected.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

from pipeline.errors import RescueError
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema, SchemaField, SubField

# Object tags and task-data keys; field names must not clash with them.
VIDEO, CONTEXT, ROW, PEOPLE = "video", "context", "row", "people"
ITEM_CONTROL = "item"
SUB_SEPARATOR = "__"
ENTITY_OPTIONS, ROW_OPTIONS, HEADING, ROW_TEXT = "entities", "rows", "heading", "row_text"
# The preceding rows, an HTML string (pipeline.annotate.tasks). Tasks imported before this key existed carry a
# list under `context` instead and have no preceding rows under this config (docs/annotation.md).
CONTEXT_HTML = "context_html"
# The list-item interaction, spelled out in order right above the kinds (shown in the form).
ITEMS_INSTRUCTION = ("To add an item: 1. press its kind's key (the number on the kind below) or click the kind "
                     "(hover a kind for what it means); 2. double-click the person's name in the People line; "
                     "3. click the new item in the Regions list (right): its first text box takes your typing at "
                     "once; fill in its other details, then click the item again to close it. Delete an item "
                     "there too.")
SIDE_BY_SIDE = "display: flex; gap: 16px; align-items: flex-start"
TWO_COLUMNS = "display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); column-gap: 24px; align-items: start"
ITEM_HOTKEYS = "123456789"  # the list kinds' keys, in schema order (Label Studio gives other controls the rest)
EMPTY_CHOICE = "(none)"  # the choice that stands for "" where a label field allows empty
RESERVED = {VIDEO, CONTEXT, CONTEXT_HTML, ROW, PEOPLE, ITEM_CONTROL, ENTITY_OPTIONS, ROW_OPTIONS, HEADING, ROW_TEXT,
            "row_id", "session_id", "scenario", "schema", "row_index"}


def sub_control(field: SchemaField, sub: SubField) -> str:
    return f"{field.name}{SUB_SEPARATOR}{sub.name}"


def anchor(field: SchemaField) -> SubField:
    """The sub-field an item's highlighted name fills: the item's first person (`entity`) sub-field."""
    for sub in field.items:
        if sub.type == "entity":
            return sub
    raise RescueError(f"schema field {field.name}: an items field needs an entity sub-field to anchor its regions",
                      "add a person sub-field (type entity) to its items")


def check_schema_for_labelstudio(schema: AnnotationSchema) -> None:
    """Refuse schemas the generator cannot map: clashing names, items without a person anchor."""
    for field in schema.fields:
        if field.name in RESERVED or SUB_SEPARATOR in field.name:
            raise RescueError(f"schema field name {field.name!r} is reserved by the Label Studio config",
                              f"rename it (reserved: {', '.join(sorted(RESERVED))}; no '{SUB_SEPARATOR}')")
        if field.type == "items":
            anchor(field)


@dataclass(frozen=True)
class _Builder:
    schema: AnnotationSchema
    scenario: Scenario

    def choices(self, parent: ET.Element, name: str, to_name: str, *, multiple: bool = False,
                dynamic: str | None = None, labels: tuple[str, ...] = (), required: bool = False,
                per_region: bool = False, hints: dict[str, str] | None = None) -> ET.Element:
        attrs = {"name": name, "toName": to_name, "showInline": "true"}
        if multiple:
            attrs["choice"] = "multiple"
        if dynamic:
            attrs["value"] = f"${dynamic}"
        if required:
            attrs["required"] = "true"
        if per_region:
            attrs["perRegion"] = "true"
        element = ET.SubElement(parent, "Choices", attrs)
        for label in labels:
            hint = (hints or {}).get(label)
            ET.SubElement(element, "Choice", {"value": label, **({"hint": hint} if hint else {})})
        return element

    def control(self, parent: ET.Element, part: SchemaField | SubField, name: str, to_name: str, *,
                required: bool, per_region: bool) -> None:
        kind = part.type
        if kind in ("entity", "entities"):
            self.choices(parent, name, to_name, multiple=kind == "entities", dynamic=ENTITY_OPTIONS,
                         required=required, per_region=per_region)
        elif kind == "label":
            assert part.labels is not None
            guide = self.schema.label_guide(part.labels, self.scenario)
            labels = self.schema.labels(part.labels, self.scenario)
            hints = dict(guide.definitions)
            if getattr(part, "allow_empty", False):
                labels = (*labels, EMPTY_CHOICE)
                hints[EMPTY_CHOICE] = "no clear pattern (stored as an empty label)"
            self.choices(parent, name, to_name, labels=labels, required=required, per_region=per_region,
                         hints=hints)
            self.definitions(parent, part.labels, name)
        elif kind == "row_refs":
            self.choices(parent, name, to_name, multiple=True, dynamic=ROW_OPTIONS, required=required,
                         per_region=per_region)
        elif kind == "text":
            attrs = {"name": name, "toName": to_name, "editable": "true", "maxSubmissions": "1",
                     "rows": "2", "showSubmitButton": "false"}
            if required:
                attrs["required"] = "true"
            if per_region:
                attrs["perRegion"] = "true"
            ET.SubElement(parent, "TextArea", attrs)
        elif kind in ("integer", "number"):
            attrs = {"name": name, "toName": to_name, "step": "1" if kind == "integer" else "any"}
            attrs.update({key: str(value) for key, value in (("min", part.min), ("max", part.max))
                          if value is not None})
            if required:
                attrs["required"] = "true"
            if per_region:
                attrs["perRegion"] = "true"
            ET.SubElement(parent, "Number", attrs)
        else:  # pragma: no cover - the schema loader only admits the types above
            raise RescueError(f"schema field type {kind!r} has no Label Studio control", "use a documented type")

    def definitions(self, parent: ET.Element, set_name: str, name: str) -> None:
        """A collapsed panel under a label control: every label's definition, then the rules for choosing."""
        guide = self.schema.label_guide(set_name, self.scenario)
        if not guide.definitions and not guide.rules:
            return
        collapse = ET.SubElement(parent, "Collapse", {"bordered": "true"})
        panel = ET.SubElement(collapse, "Panel", {"value": f"Definitions and rules: {name}"})
        view = ET.SubElement(panel, "View", {"idAttr": f"definitions-{name}", "style": "font-size: 13px"})
        for label, text in guide.definitions:
            ET.SubElement(view, "Header", {"value": f"{label}: {text}", "size": "6", "underline": "false"})
        for rule in guide.rules:
            ET.SubElement(view, "Header", {"value": f"Rule - {rule}", "size": "6", "underline": "false"})

    def role_view(self, parent: ET.Element, field: SchemaField) -> ET.Element:
        """Fields for client or therapist rows show only while the speaker choice says so."""
        if field.applies_to == "all":
            return parent
        visible = "choice-selected" if field.applies_to == "therapist" else "choice-unselected"
        return ET.SubElement(parent, "View", {"visibleWhen": visible, "whenTagName": self.schema.speaker_field,
                                              "whenChoiceValue": self.schema.therapist})

    def scalar(self, parent: ET.Element, field: SchemaField) -> None:
        view = ET.SubElement(self.role_view(parent, field), "View", {"idAttr": f"field-{field.name}"})
        title = f"{field.name}{' *' if field.required else ''}"
        ET.SubElement(view, "Header", {"value": f"{title} - {field.description}" if field.description else title,
                                       "size": "6"})
        # LS `required` only where the field applies to every row: a hidden control must not block submit.
        self.control(view, field, field.name, ROW, required=field.required and field.applies_to == "all",
                     per_region=False)

    def items(self, parent: ET.Element, fields: list[SchemaField]) -> None:
        view = ET.SubElement(parent, "View", {"idAttr": "field-items"})
        ET.SubElement(view, "Header", {"size": "5", "value": "List items (posture, emotions, strategies, ...)"})
        instruction = ET.SubElement(view, "View", {"idAttr": "items-instruction"})
        ET.SubElement(instruction, "Header", {"size": "6", "value": ITEMS_INSTRUCTION})
        ET.SubElement(view, "Header", {"size": "6", "value": "People (highlight one name per item):"})
        ET.SubElement(view, "Text", {"name": PEOPLE, "value": f"${PEOPLE}", "granularity": "word"})
        labels = ET.SubElement(view, "Labels", {"name": ITEM_CONTROL, "toName": PEOPLE, "choice": "single"})
        for number, field in enumerate(fields, start=1):
            role = "" if field.applies_to == "all" else f" ({field.applies_to} rows)"
            ET.SubElement(labels, "Label", {"value": field.name, "hint": f"{field.description}{role}",
                                            **({"hotkey": str(number)} if number <= len(ITEM_HOTKEYS) else {})})
        for field in fields:
            details = ET.SubElement(view, "View", {"visibleWhen": "region-selected", "whenLabelValue": field.name,
                                                   "idAttr": f"field-{field.name}"})
            person = anchor(field)
            for sub in field.items:
                if sub is person:
                    continue
                ET.SubElement(details, "Header", {"value": f"{field.name}: {sub.name}", "size": "6"})
                self.control(details, sub, sub_control(field, sub), PEOPLE, required=False, per_region=True)

    def build(self) -> str:
        root = ET.Element("View")
        ET.SubElement(root, "Header", {"value": f"${HEADING}"})
        # Compact: the clip beside the words, the fields in two columns (the form was ~3,000 px tall in one column).
        top = ET.SubElement(root, "View", {"idAttr": "row-view", "style": SIDE_BY_SIDE})
        ET.SubElement(ET.SubElement(top, "View", {"style": "flex: 0 0 400px"}), "Video",
                      {"name": VIDEO, "value": f"${VIDEO}", "height": "225"})
        words = ET.SubElement(top, "View", {"style": "flex: 1 1 0; min-width: 0"})
        ET.SubElement(words, "Header", {"value": "Preceding rows", "size": "6"})
        # Plain read-only lines with each row's real time (a Paragraphs tag showed 00:00:00 and region buttons).
        ET.SubElement(words, "HyperText", {"name": CONTEXT, "value": f"${CONTEXT_HTML}", "inline": "true",
                                           "selectionEnabled": "false", "saveTextResult": "no"})
        ET.SubElement(words, "Header", {"value": "This row", "size": "6"})
        ET.SubElement(words, "Text", {"name": ROW, "value": f"${ROW_TEXT}"})
        items = [f for f in self.schema.fields if f.annotated and f.type == "items"]
        grid = ET.SubElement(root, "View", {"idAttr": "fields", "style": TWO_COLUMNS})
        for field in self.schema.fields:
            if field.annotated and field.type != "items":
                self.scalar(grid, field)
        if items:
            self.items(root, items)
        ET.indent(root, space="  ")
        return ET.tostring(root, encoding="unicode")


def build_config(schema: AnnotationSchema, scenario: Scenario) -> str:
    """The label config (XML) of one scenario's project, validated offline with the SDK."""
    from pipeline.annotate import labelstudio

    check_schema_for_labelstudio(schema)
    config = _Builder(schema, scenario).build()
    labelstudio.validate_config(config, where=f"generated config for {schema.id} ({scenario})")
    return config
