"""The annotation schema file: the shipped schema is complete, and bad schema files are refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.errors import RescueError
from pipeline.schema import load_schema

SHIPPED = Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml"
ROW_FIELDS = [  # every row field of the benchmark (spec section 2) that annotation covers
    "start_time", "end_time", "primary_speaker", "target", "dialogue_cleaned", "utterance_type",
    "background_dialogue", "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior",
    "internal_emotion", "interaction_behavior", "viewpoints_attitudes", "support_strategy",
    "relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows",
]


def test_shipped_schema_covers_every_row_field_with_the_spec_label_sets() -> None:
    schema = load_schema(SHIPPED)
    assert schema.id == "rescue-v1"
    assert [f.name for f in schema.fields] == ROW_FIELDS
    assert len(schema.labels("utterance_type", "couple")) == 10 == len(schema.labels("utterance_type", "family"))
    assert schema.labels("relation_pattern", "couple")[0] == "pursue_withdraw"
    assert len(schema.labels("relation_pattern", "family")) == 8
    assert "goal_align" in schema.labels("support_strategy", "couple")
    assert "goal_align" not in schema.labels("support_strategy", "family")
    assert schema.entities("family", ("Maria", "Nick")) == ("Maria", "Nick", "Therapist", "Family")
    emotion = schema.field("internal_emotion")
    assert emotion.key == "person" and [i.name for i in emotion.items] == ["person", "emotion_description",
                                                                              "intensity"]
    assert (emotion.items[2].min, emotion.items[2].max, emotion.items[2].agreement) == (0, 10, "interval")
    assert schema.field("utterance_type").applies("Maya", "Therapist")
    assert not schema.field("utterance_type").applies("Therapist", "Therapist")
    assert schema.field("support_strategy").applies("Therapist", "Therapist")


def write_variant(tmp_path: Path, change: callable) -> Path:  # type: ignore[valid-type]
    data = yaml.safe_load(SHIPPED.read_text())
    change(data)
    path = tmp_path / "schema.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _field(data: dict, name: str) -> dict:
    return next(f for f in data["fields"] if f["name"] == name)


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: _field(d, "tone_of_voice").update(type="colour"), "fields.7.type"),
    (lambda d: d["label_sets"]["utterance_type"].update(all=[]), "label set utterance_type (all) is empty"),
    (lambda d: d["label_sets"].update(relation_pattern={}), "label set relation_pattern is empty"),
    (lambda d: _field(d, "utterance_type").update(labels="moods"), "unknown label set 'moods'"),
    (lambda d: d["fields"].append(dict(_field(d, "target"))), "field name(s) repeat: target"),
    (lambda d: _field(d, "internal_emotion").update(key="mood"), "key 'mood' is not one of its items"),
    (lambda d: _field(d, "target").update(colour="red"), "Extra inputs are not permitted"),
    (lambda d: d["label_sets"]["support_strategy"].pop("family"), "needs `all` or both couple and family"),
    (lambda d: d["label_guides"]["support_strategy"]["definitions"]["family"].update(goal_align="shared goal"),
     "label_guides.support_strategy.definitions.family: 'goal_align' not in the family labels of support_strategy"),
    (lambda d: d["label_guides"]["relation_pattern"]["definitions"]["couple"].pop("attack_attack"),
     "label_guides.relation_pattern: no definition for 'attack_attack' (couple; every_label_defined is true)"),
    (lambda d: d["label_guides"]["utterance_type"]["definitions"]["all"].update(defense=" "),
     "label_guides.utterance_type.definitions.all: empty definition for 'defense'"),
    (lambda d: d["label_guides"].update(moods={"rules": ["x"]}), "label_guides.moods: 'moods' is not a label set"),
])
def test_bad_schema_is_refused_with_the_file_and_the_problem(tmp_path: Path, change: callable,  # type: ignore[valid-type]
                                                            expected: str) -> None:
    path = write_variant(tmp_path, change)
    with pytest.raises(RescueError) as caught:
        load_schema(path)
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_every_label_has_its_spec_definition_and_the_guide_keeps_label_set_order() -> None:
    schema = load_schema(SHIPPED)
    assert schema.every_label_defined
    for set_name in schema.label_sets:
        for scenario in ("couple", "family"):
            guide = schema.label_guide(set_name, scenario)
            assert [label for label, _ in guide.definitions] == list(schema.labels(set_name, scenario))
            assert guide.rules, f"{set_name} has no rules"
    # scenario-specific meanings (spec section 3): the same label can mean different things per scenario
    couple, family = schema.label_guide("support_strategy", "couple"), schema.label_guide("support_strategy", "family")
    assert couple.definition("join").startswith("build softer empathic contact")
    assert family.definition("join").startswith("build trust and alliance")
    assert family.definition("goal_align") == ""
    assert any("safeguard > counterbalance > track" in rule for rule in couple.rules)
    assert any("not a fallback" in rule for rule in schema.label_guide("relation_pattern", "family").rules)


def test_a_schema_without_label_guides_still_loads(tmp_path: Path) -> None:
    """Guides are optional: a schema file written before they existed keeps loading (same version)."""
    def strip(data: dict) -> None:
        data.pop("label_guides")
        data.pop("every_label_defined")
    schema = load_schema(write_variant(tmp_path, strip))
    assert schema.label_guide("utterance_type", "couple").definitions == ()


def test_missing_and_unparsable_schema(tmp_path: Path) -> None:
    with pytest.raises(RescueError, match="not found"):
        load_schema(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("fields: [unclosed\n")
    with pytest.raises(RescueError, match="not valid YAML"):
        load_schema(tmp_path / "bad.yaml")
