"""The label config generated from the schema, the task payloads, and results <-> values (offline, no server)."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from pipeline.annotate.config import EMPTY_CHOICE, build_config, check_schema_for_labelstudio
from pipeline.annotate.labelstudio import ResultChecker, validate_config
from pipeline.annotate.results import TaskFacts, decode, encode
from pipeline.annotate.tasks import PREDICTION_VERSION, SessionRows, build_task, context_html
from pipeline.errors import RescueError
from pipeline.records import CatalogEntry, TranscriptRow, row_id_for
from pipeline.schema import AnnotationSchema, load_schema
from tests.annotate_values import COUPLE_ENTITIES, client_values, therapist_values

SHIPPED = Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml"
FACTS = TaskFacts("couple", COUPLE_ENTITIES, row_count=23)


@pytest.fixture(scope="module")
def schema() -> AnnotationSchema:
    return load_schema(SHIPPED)


def _controls(config: str) -> dict[str, ET.Element]:
    return {e.get("name", ""): e for e in ET.fromstring(config).iter() if e.get("toName")}


def test_config_has_a_control_for_every_annotated_field_and_the_scenario_label_sets(schema: AnnotationSchema) -> None:
    couple, family = build_config(schema, "couple"), build_config(schema, "family")
    controls = _controls(couple)
    items = [label.get("value") for label in controls["item"].iter("Label")]
    for field in schema.fields:
        if not field.annotated:
            assert field.name not in controls
        elif field.type == "items":
            assert field.name in items
            for sub in field.items[1:]:  # the first sub-field is the highlighted person
                assert controls[f"{field.name}__{sub.name}"].get("perRegion") == "true"
        else:
            assert controls[field.name].get("perRegion") is None
    assert controls["primary_speaker"].get("value") == "$entities"  # per-session people, from the task
    assert controls["target"].get("choice") == "multiple"
    assert controls["relation_cycle_evidence_rows"].get("value") == "$rows"
    relation = [c.get("value") for c in controls["relation_cycle_state"].iter("Choice")]
    assert relation == [*schema.labels("relation_pattern", "couple"), EMPTY_CHOICE]
    family_types = [c.get("value") for c in _controls(family)["support_strategy__strategy_type"].iter("Choice")]
    assert family_types == list(schema.labels("support_strategy", "family")) and "goal_align" not in family_types
    assert "goal_align" in couple
    # client-only fields hide on therapist rows and vice versa, keyed on the speaker choice
    assert re.search(r'visibleWhen="choice-unselected" whenTagName="primary_speaker" whenChoiceValue="Therapist">\s*'
                     r'<View idAttr="field-utterance_type"', couple)
    assert re.search(r'visibleWhen="choice-selected" whenTagName="primary_speaker" whenChoiceValue="Therapist">\s*'
                     r'<View idAttr="field-relation_cycle_state"', couple)


def test_offline_validation_refuses_a_broken_config() -> None:
    with pytest.raises(RescueError, match="rejects the label config"):
        validate_config('<View><Choices name="a" toName="missing"><Choice value="x"/></Choices></View>', where="t")
    with pytest.raises(RescueError, match="rejects the label config"):
        validate_config("<View><Text name='t' value='$t'>", where="t")


def _variant(schema: AnnotationSchema, change) -> AnnotationSchema:  # type: ignore[no-untyped-def]
    data = copy.deepcopy(schema.model_dump(mode="json"))
    change(data)
    return AnnotationSchema.model_validate(data)


def test_schemas_the_config_cannot_express_are_refused(schema: AnnotationSchema) -> None:
    reserved = _variant(schema, lambda d: d["fields"][0].update(name="people"))
    with pytest.raises(RescueError, match="'people' is reserved"):
        check_schema_for_labelstudio(reserved)
    no_person = _variant(schema, lambda d: next(f for f in d["fields"] if f["name"] == "body_posture").update(
        items=[{"name": "description", "type": "text"}], key=None))
    with pytest.raises(RescueError, match="needs an entity sub-field"):
        build_config(no_person, "couple")


@pytest.mark.parametrize("values", [client_values(), therapist_values()], ids=["client", "therapist"])
def test_every_field_survives_encode_then_decode(schema: AnnotationSchema, values: dict) -> None:
    result = encode(schema, values, COUPLE_ENTITIES)
    checker = ResultChecker(build_config(schema, "couple"))
    assert checker.errors(result) == [] and checker.sdk_errors(result) == []
    decoded = decode(schema, result, FACTS)
    assert decoded.problems == []
    assert decoded.values == values


def test_the_empty_relation_choice_means_no_clear_pattern(schema: AnnotationSchema) -> None:
    values = {**therapist_values(), "relation_cycle_state": ""}
    result = encode(schema, values, COUPLE_ENTITIES)
    assert {"choices": [EMPTY_CHOICE]} in [r["value"] for r in result]
    assert decode(schema, result, FACTS).values["relation_cycle_state"] == ""


def _problems(schema: AnnotationSchema, values: dict, facts: TaskFacts = FACTS) -> dict:
    decoded = decode(schema, encode(schema, values, COUPLE_ENTITIES), facts)
    return {"problems": dict(decoded.problems), "fields": set(decoded.values)}


def test_bad_fields_are_reported_one_by_one_and_the_rest_is_kept(schema: AnnotationSchema) -> None:
    bad = {**client_values(), "utterance_type": "shouting",
           "internal_emotion": [{"person": "Bob", "emotion_description": "x", "intensity": 3}],
           "support_strategy": [{"provider": "Therapist", "target": ["Maya"], "strategy_type": "track"}]}
    del bad["tone_of_voice"]
    seen = _problems(schema, bad)
    assert "unknown label 'shouting'" in seen["problems"]["utterance_type"]
    assert "'Bob', not a person of this session" in seen["problems"]["internal_emotion"]
    assert seen["problems"]["tone_of_voice"] == "missing required field tone_of_voice"
    assert "for therapist rows only, but this row's speaker is Maya" in seen["problems"]["support_strategy"]
    assert {"primary_speaker", "target", "body_posture", "viewpoints_attitudes"} <= seen["fields"]
    assert not {"utterance_type", "internal_emotion", "tone_of_voice", "support_strategy"} & seen["fields"]


@pytest.mark.parametrize(("change", "field", "reason"), [
    ({"relation_cycle_evidence_rows": [2, 99]}, "relation_cycle_evidence_rows", "'99' is not a row of this session"),
    ({"internal_emotion": [{"person": "Therapist", "emotion_description": "x", "intensity": 11}]},
     "internal_emotion", "11 is outside 0-10"),
    ({"support_strategy": [{"provider": "Therapist", "target": [], "strategy_type": "track"}]},
     "support_strategy", "target is missing"),
    ({"target": ["Maya", "Zoe"]}, "target", "'Zoe' not a person of this session"),
])
def test_value_checks(schema: AnnotationSchema, change: dict, field: str, reason: str) -> None:
    assert reason in _problems(schema, {**therapist_values(), **change})["problems"][field]


def test_without_a_valid_speaker_nothing_is_kept(schema: AnnotationSchema) -> None:
    values = {**client_values(), "primary_speaker": "Zoe"}
    decoded = decode(schema, encode(schema, values, COUPLE_ENTITIES), FACTS)
    assert decoded.values == {}
    assert decoded.problems[0][0] is None and "'Zoe' is not a person" in decoded.problems[0][1]


def test_the_sdk_checker_flags_unknown_controls_and_wrong_types(schema: AnnotationSchema) -> None:
    checker = ResultChecker(build_config(schema, "couple"))
    errors = checker.errors([{"from_name": "mood", "to_name": "row", "type": "choices", "value": {"choices": ["x"]}},
                             {"from_name": "tone_of_voice", "to_name": "row", "type": "choices",
                              "value": {"choices": ["x"]}}])
    assert any("'mood' not found" in e for e in errors)
    assert any("does not match expected type 'textarea'" in e for e in errors)
    assert len(errors) == 2 and len(checker.sdk_errors([{"from_name": "mood", "to_name": "row", "type": "choices",
                                                         "value": {"choices": ["x"]}}])) == 1


def _session(rows: int = 3, clip: bool = False) -> SessionRows:
    entry = CatalogEntry(session_id="s/one", scenario="couple", participants=("Maya", "Daniel"),
                         video="raw_video/one.mp4", sha256="0" * 64)
    made = tuple(TranscriptRow(row_id=row_id_for("s/one", i * 2.0, i * 2.0 + 1.5), session_id="s/one", row_index=i + 1,
                               start=i * 2.0, end=i * 2.0 + 1.5, speaker=("Maya", "Therapist")[i % 2],
                               target=("Therapist",) if i % 2 == 0 else ("Maya", "Therapist"), text=f"line {i + 1}",
                               clip=f"build/clips/{i + 1}.mp4" if clip else None) for i in range(rows))
    return SessionRows(entry, made, "build/media/s/one/video.mp4")


def test_a_task_carries_the_row_its_context_people_and_the_transcript_draft(schema: AnnotationSchema) -> None:
    session = _session()
    task = build_task(schema, session, 1, context_rows=5, media_url=None)
    data = task["data"]
    assert task["meta"] == {"row_id": session.rows[1].row_id, "schema": "rescue-v1", "draft": {  # what it shows
        "model_version": "transcript", "values": {"primary_speaker": "Therapist", "target": ["Maya"],
                                                  "dialogue_cleaned": "line 2"},
        "versions": dict.fromkeys(("primary_speaker", "target", "dialogue_cleaned"), "transcript"), "scores": {},
        "sources": {}}}  # transcript drafts are not gated (gated drafts say model | baseline | nothing per field)
    # the preceding rows as read-only lines with their real times (m:ss), not a Paragraphs list
    assert "context" not in data
    assert data["context_html"] == ("<p><b>#1</b> &nbsp;<span class=\"time\">0:00-0:01</span> &nbsp;<b>Maya:</b> "
                                    "line 1</p>")
    assert data["entities"] == [{"value": n} for n in COUPLE_ENTITIES]
    assert data["people"] == "Maya  Daniel  Therapist  Couple"
    assert [o["value"] for o in data["rows"]] == ["1", "2", "3"]
    assert (data["start_time"], data["end_time"]) == (2.0, 3.5)
    assert data["video"] == "/data/local-files/?d=build/media/s/one/video.mp4#t=2.00,3.50"
    draft = task["predictions"][0]
    assert draft["model_version"] == PREDICTION_VERSION
    values = {r["from_name"]: r["value"] for r in draft["result"]}
    # the speaker's own name is dropped from the target guess: a row is never addressed to its speaker
    assert values == {"primary_speaker": {"choices": ["Therapist"]}, "target": {"choices": ["Maya"]},
                      "dialogue_cleaned": {"text": ["line 2"]}}
    assert ResultChecker(build_config(schema, "couple")).sdk_errors(draft["result"]) == []
    first = build_task(schema, _session(clip=True), 0, context_rows=5, media_url="https://media.example/p")
    assert first["data"]["context_html"] == "<p><i>(no preceding rows shown)</i></p>"
    assert first["data"]["video"] == "https://media.example/p/build/clips/1.mp4"


def test_context_lines_escape_the_transcript_and_show_hours_past_an_hour() -> None:
    row = TranscriptRow(row_id=row_id_for("s/one", 3725.0, 3790.5), session_id="s/one", row_index=9, start=3725.0,
                        end=3790.5, speaker="Maya", target=("Therapist",), text="<b>not bold</b> & more")
    assert context_html([row]) == ("<p><b>#9</b> &nbsp;<span class=\"time\">1:02:05-1:03:10</span> &nbsp;<b>Maya:</b> "
                                   "&lt;b&gt;not bold&lt;/b&gt; &amp; more</p>")


@pytest.mark.parametrize("scenario", ["couple", "family"])
def test_the_form_shows_each_label_definition_as_a_hint_and_in_a_panel(schema: AnnotationSchema,
                                                                      scenario: str) -> None:
    config = build_config(schema, scenario)
    root = ET.fromstring(config)
    assert not list(root.iter("Paragraphs"))  # it showed "00:00:00 - 00:00:00" and a region button per row
    context = next(e for e in root.iter("HyperText") if e.get("name") == "context")
    assert context.get("value") == "$context_html" and context.get("selectionEnabled") == "false"
    controls = _controls(config)
    label_controls = {"utterance_type": "utterance_type", "relation_cycle_state": "relation_pattern",
                      "support_strategy__strategy_type": "support_strategy"}
    for name, set_name in label_controls.items():
        guide = schema.label_guide(set_name, scenario)
        hints = {c.get("value"): c.get("hint") for c in controls[name].iter("Choice")}
        assert {label: hints[label] for label, _ in guide.definitions} == dict(guide.definitions)
        panel = next(v for v in root.iter("View") if v.get("idAttr") == f"definitions-{name}")
        shown = [h.get("value") for h in panel.iter("Header")]
        assert shown[:len(guide.definitions)] == [f"{label}: {text}" for label, text in guide.definitions]
        assert shown[len(guide.definitions):] == [f"Rule - {rule}" for rule in guide.rules]
    assert "(none)" in {c.get("value") for c in controls["relation_cycle_state"].iter("Choice") if c.get("hint")}
    instruction = next(v for v in root.iter("View") if v.get("idAttr") == "items-instruction")
    assert "1. press its kind's key" in ET.tostring(instruction, encoding="unicode")
    assert all(label.get("hint") for label in controls["item"].iter("Label"))


def test_a_schema_file_with_an_unknown_field_type_or_an_empty_label_set_is_refused(tmp_path: Path) -> None:
    for change, expected in [(lambda d: d["fields"][7].update(type="colour"), "fields.7.type"),
                             (lambda d: d["label_sets"]["support_strategy"].update(family=[]),
                              "label set support_strategy (family) is empty")]:
        data = yaml.safe_load(SHIPPED.read_text())
        change(data)
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(RescueError, match=re.escape(expected)) as caught:
            load_schema(path)
        assert str(path) in caught.value.message and caught.value.fix


def _panels(config: str) -> str:
    """Every definition and rule line the form shows, as one text."""
    return "\n".join(e.get("value", "") for e in ET.fromstring(config).iter("Header")
                     if e.get("value", "").startswith("Rule - ") or ": " in e.get("value", ""))


def test_each_scenario_shows_only_its_own_rules(schema: AnnotationSchema) -> None:
    """A couple project shows no family-only rule (labels of the family sets, "family"), and the other way round."""
    for scenario, other in (("couple", "family"), ("family", "couple")):
        shown = _panels(build_config(schema, scenario))
        own = {label for name in ("relation_pattern", "support_strategy") for label in schema.labels(name, scenario)}
        foreign = {label for name in ("relation_pattern", "support_strategy")
                   for label in schema.labels(name, other)} - own
        assert foreign and not [label for label in sorted(foreign) if re.search(rf"\b{label}\b", shown)], scenario
        assert not re.search(rf"\b{other}\b", shown, re.IGNORECASE), scenario
        rules = [rule for name in schema.label_guides for rule in schema.label_guide(name, scenario).rules]
        assert rules and all(f"Rule - {rule}" in shown for rule in rules)  # none of its own got lost


def test_a_session_without_a_therapist_offers_no_therapist(schema: AnnotationSchema) -> None:
    session = _session()
    alone = SessionRows(session.entry.model_copy(update={"therapist": False}), session.rows[:1], None)
    data = build_task(schema, alone, 0, context_rows=5, media_url=None)["data"]
    assert data["entities"] == [{"value": n} for n in ("Maya", "Daniel", "Couple")]
    assert data["people"] == "Maya  Daniel  Couple"
    with_one = build_task(schema, session, 0, context_rows=5, media_url=None)["data"]
    assert {"value": "Therapist"} in with_one["entities"]


def test_list_kinds_take_the_keys_1_to_8_and_the_fields_two_columns(schema: AnnotationSchema) -> None:
    config = build_config(schema, "couple")
    kinds = {label.get("value"): label.get("hotkey") for label in _controls(config)["item"].iter("Label")}
    items = [f.name for f in schema.fields if f.type == "items"]
    assert kinds == {name: str(number) for number, name in enumerate(items, start=1)}
    views = {view.get("idAttr"): view for view in ET.fromstring(config).iter("View") if view.get("idAttr")}
    assert "grid-template-columns: repeat(2" in views["fields"].get("style", "")
    assert "display: flex" in views["row-view"].get("style", "")  # the clip beside the words
    inside = {view.get("idAttr") for view in views["fields"].iter("View")}
    assert {f"field-{f.name}" for f in schema.fields if f.annotated and f.type != "items"} <= inside
