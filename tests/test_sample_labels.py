"""Reference labels of the built-in sample sessions, the simulated annotators derived from them, and what the
real chain makes of both: Label Studio results, consensus and adjudication, gold sessions and the six tasks."""

from __future__ import annotations

import copy
import itertools
import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pipeline.agreement.adjudication import Resolver, resolve
from pipeline.agreement.consensus import Consensus
from pipeline.agreement.gold import text_similarity
from pipeline.agreement.inputs import Answer
from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate.results import TaskFacts, decode, encode
from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import SampleTruth
from pipeline.sample import annotators
from pipeline.sample.annotators import (
    ADJUDICATOR,
    ANNOTATORS,
    NEIGHBOURS,
    SAMPLE_NAMES,
    ReferenceLabels,
    adjudicator_answers,
    disputed_units,
    reference_labels,
    reference_session,
    simulated_annotations,
    values_by_row,
)
from pipeline.label_rules import row_problems
from pipeline.sample.script import load_script
from pipeline.schema import load_schema
from pipeline.tasks.build import build_tasks
from pipeline.tasks.gold_input import check_sessions
from pipeline.tasks.instances import TASKS
from pipeline.tasks.settings import load_task_settings

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml")
CLIENT_ONLY = {"utterance_type", "viewpoints_attitudes"}
THERAPIST_ONLY = {"support_strategy", "relation_cycle_state", "relation_cycle_reason", "relation_cycle_evidence_rows"}


@pytest.fixture(scope="module")
def truths(sample_media: Path) -> dict[str, SampleTruth]:
    """The truth files `rescue sample` wrote next to the real sample videos, by session id."""
    found = [SampleTruth.model_validate_json(p.read_text(encoding="utf-8"))
             for p in sorted((sample_media / "sample").glob("*.truth.json"))]
    return {truth.session_id: truth for truth in found}


def problems_of(ref: ReferenceLabels, values: dict[str, Any]) -> list[str]:
    return row_problems(SCHEMA, ref.scenario, ref.script.participants, len(ref.turns), values)


# -- the reference labels -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_script_turn_has_one_reference_entry_with_its_speaker_target_and_text(name: str) -> None:
    data = json.loads(resources.files("pipeline.sample").joinpath("labels", f"{name}.json").read_text("utf-8"))
    script = load_script(name)
    assert data["session_id"] == script.session_id and "synthetic" in data["note"].lower()
    assert [t["turn_index"] for t in data["turns"]] == list(range(1, len(script.turns) + 1))
    for turn, entry in zip(script.turns, data["turns"]):
        assert (entry["primary_speaker"], entry["target"], entry["dialogue_cleaned"]) == \
            (turn.speaker, list(turn.target), turn.text)


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_reference_labels_fit_the_schema_and_hold_what_the_tasks_need(name: str) -> None:
    ref = reference_labels(name, SCHEMA)
    annotated = {f.name for f in SCHEMA.fields if f.annotated}
    for n, values in enumerate(ref.turns, start=1):
        assert problems_of(ref, values) == [], n
        speaker = values["primary_speaker"]
        expected = annotated - (CLIENT_ONLY if speaker == "Therapist" else THERAPIST_ONLY)
        assert set(values) == expected, n  # every field that applies, and only those
        if speaker != "Therapist":
            assert any(e["person"] == speaker for e in values["internal_emotion"]), n
    clients = [v for v in ref.turns if v["primary_speaker"] != "Therapist"]
    therapist = [v for v in ref.turns if v["primary_speaker"] == "Therapist"]
    assert sum(any(p["source"] == v["primary_speaker"] for p in v["viewpoints_attitudes"]) for v in clients) >= 5
    assert sum(bool(v["relation_cycle_state"]) for v in therapist) >= 5
    assert sum(bool(v["support_strategy"]) for v in therapist) >= 5
    used = {item["strategy_type"] for v in therapist for item in v["support_strategy"]}
    assert len(used) >= 5 and len({v["relation_cycle_state"] for v in therapist} - {""}) >= 3
    assert len({v["utterance_type"] for v in clients}) >= 6


def _client_and_therapist(ref: ReferenceLabels) -> tuple[dict[str, Any], dict[str, Any]]:
    client = next(v for v in ref.turns if v["primary_speaker"] != "Therapist" and v["viewpoints_attitudes"])
    therapist = next(v for v in ref.turns if v["primary_speaker"] == "Therapist" and v["support_strategy"])
    return copy.deepcopy(client), copy.deepcopy(therapist)


BAD_CLIENT = [
    (lambda v: v.update(utterance_type="blame"), "utterance_type"),
    (lambda v: v.update(target=[v["primary_speaker"]]), "target"),
    (lambda v: v.update(target=["Couple", "Therapist"]), "group label"),
    (lambda v: v.update(target=["Alan"]), "target"),
    (lambda v: v["internal_emotion"][0].update(intensity=11), "intensity"),
    (lambda v: v["internal_emotion"][0].update(intensity="7"), "intensity"),
    (lambda v: v["viewpoints_attitudes"][0].update(target=v["primary_speaker"]), "viewpoints_attitudes[1]"),
    (lambda v: v["viewpoints_attitudes"][0].update(target="Couple"), "group label"),
    (lambda v: v["body_posture"][0].pop("description"), "body_posture[1]"),
    (lambda v: v.update(support_strategy=[{"provider": "Therapist", "target": ["Maya"], "strategy_type": "track",
                                            "strategy_content": "x"}]), "support_strategy"),
    (lambda v: v.update(mood="angry"), "mood"),
    (lambda v: v.pop("tone_of_voice"), "tone_of_voice"),
    (lambda v: v.update(tone_of_voice=" sharp"), "tone_of_voice"),
]
BAD_THERAPIST = [
    (lambda v: v.update(relation_cycle_state="escalation_conflict"), "relation_cycle_state"),  # a family label
    (lambda v: v["support_strategy"][0].update(strategy_type="boundary"), "strategy_type"),  # family only
    (lambda v: v["support_strategy"][0].update(target=["Therapist"]), "support_strategy[1]"),
    (lambda v: v["support_strategy"][0].update(provider="Maya"), "provider"),
    (lambda v: v.update(relation_cycle_evidence_rows=[2, 99]), "relation_cycle_evidence_rows"),
    (lambda v: v.update(relation_cycle_evidence_rows=[5, 2]), "relation_cycle_evidence_rows"),
    (lambda v: v.update(utterance_type="accusation"), "utterance_type"),
    (lambda v: v.update(interaction_behavior=[{"initiator": "Therapist", "target": ["Therapist"],
                                               "description": "nods"}]), "interaction_behavior[1]"),
    (lambda v: v.update(target=["Daniel", "Maya"]), "entity order"),
    (lambda v: v.update(internal_emotion=[v["internal_emotion"][0]] * 2 if v["internal_emotion"] else
                        [{"person": "Maya", "emotion_description": "hurt", "intensity": 5}] * 2), "same person"),
]


@pytest.mark.parametrize(("mutate", "expected"), BAD_CLIENT + BAD_THERAPIST)
def test_the_label_validator_rejects_what_the_schema_forbids(mutate: Any, expected: str) -> None:
    ref = reference_labels("couple", SCHEMA)
    client, therapist = _client_and_therapist(ref)
    values = client if (mutate, expected) in BAD_CLIENT else therapist
    assert problems_of(ref, values) == []
    mutate(values)
    found = problems_of(ref, values)
    assert found and any(expected in p for p in found), found


def test_a_label_file_that_strays_from_its_script_is_refused_naming_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    text, session_id = annotators._labels_text("couple")
    data = json.loads(text)
    data["turns"][3]["dialogue_cleaned"] = "Something nobody said."
    data["turns"][5]["relation_cycle_state"] = "stonewalling"
    monkeypatch.setattr(annotators, "_labels_text", lambda name: (json.dumps(data), session_id))
    with pytest.raises(RescueError) as caught:
        reference_labels("couple", SCHEMA)
    assert "labels/couple.json" in caught.value.message and "turn 4 dialogue_cleaned" in caught.value.message
    assert "turn 6 relation_cycle_state" in caught.value.message


def test_unknown_sample_names_are_refused() -> None:
    with pytest.raises(RescueError):
        simulated_annotations("sample/someone_else")


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_reference_and_simulated_rows_survive_the_label_studio_round_trip(name: str) -> None:
    ref = reference_labels(name, SCHEMA)
    facts = TaskFacts(scenario=ref.scenario, entities=ref.entities, row_count=len(ref.turns))
    rows = [*ref.turns, *values_by_row(simulated_annotations(name, schema=SCHEMA)).values()]
    for values in rows:
        decoded = decode(SCHEMA, encode(SCHEMA, values, ref.entities), facts)
        assert decoded.problems == []
        assert {k: decoded.values[k] for k in values} == values


# -- gold sessions and tasks --------------------------------------------------------------------------------

def test_reference_sessions_are_valid_gold_timed_by_the_sample_truth(truths: dict[str, SampleTruth]) -> None:
    assert len(truths) == 2
    for session_id, truth in truths.items():
        session = reference_session(session_id, truth, SCHEMA)
        again = BenchmarkSession.model_validate_json(session.model_dump_json())
        assert again == session and check_sessions([session], SCHEMA) == []
        assert session.participants == list(truth.participants)
        for row, turn in zip(session.rows, truth.turns, strict=True):
            assert (row.start_time, row.end_time, row.primary_speaker) == (turn.start, turn.end, turn.speaker)
            if row.primary_speaker == "Therapist":
                assert row.utterance_type == "" and row.relation_cycle_state is not None
            else:
                assert row.utterance_type and row.relation_cycle_state is None and not row.support_strategy


def test_a_truth_of_another_session_is_refused(truths: dict[str, SampleTruth]) -> None:
    family = next(t for t in truths.values() if t.scenario == "family")
    with pytest.raises(RescueError, match="does not match"):
        reference_session("couple", family, SCHEMA)


def test_reference_sessions_give_instances_of_all_six_tasks_in_both_scenarios(truths: dict[str, SampleTruth]) -> None:
    sessions = [reference_session(session_id, truth, SCHEMA) for session_id, truth in truths.items()]
    built = build_tasks(sessions, load_task_settings(), SCHEMA)
    counts = {task: Counter(i.scenario for i in built.instances[task]) for task in TASKS}
    for task in TASKS:
        assert counts[task]["couple"] > 0 and counts[task]["family"] > 0, (task, counts[task])
    # ITP needs both classes: therapist entries after client rows, and client rows followed by client rows.
    assert {i.gold["should_speak"] for i in built.instances["itp"]} == {"yes", "no"}


# -- the simulated annotators -------------------------------------------------------------------------------

def test_simulated_annotators_are_deterministic() -> None:
    for name in SAMPLE_NAMES:
        first = simulated_annotations(name, schema=SCHEMA)
        assert first == simulated_annotations(name, schema=SCHEMA)
        assert {a.annotator for a in first} == set(ANNOTATORS)
    renamed = simulated_annotations("couple", ("a@x.org", "b@x.org", "c@x.org"), schema=SCHEMA)
    assert [a.value for a in renamed] == [a.value for a in simulated_annotations("couple", schema=SCHEMA)]


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_every_simulated_answer_fits_the_schema(name: str) -> None:
    ref = reference_labels(name, SCHEMA)
    rows = values_by_row(simulated_annotations(name, schema=SCHEMA))
    assert len(rows) == len(ANNOTATORS) * len(ref.turns)
    for (annotator, turn), values in rows.items():
        assert set(values) == set(ref.turns[turn - 1]), (annotator, turn)
        assert problems_of(ref, values) == [], (annotator, turn)


def test_neighbour_labels_stay_inside_each_scenario_label_set() -> None:
    for set_name, per_scenario in NEIGHBOURS.items():
        for scenario, table in per_scenario.items():
            labels = SCHEMA.labels(set_name, scenario)  # type: ignore[arg-type]
            assert set(table) == set(labels), (set_name, scenario)
            for label, options in table.items():
                assert set(options) <= set(labels) and label not in options and len(set(options)) == 2


def units(ref: ReferenceLabels, rows: dict[tuple[str, int], dict[str, Any]]) -> dict[str, list[tuple[Any, list[Any]]]]:
    """Comparable units by agreement level: (reference value, the annotators' values). Item parts are compared
    between items with the same key (missing item -> None); an item's key label by position."""
    out: dict[str, list[tuple[Any, list[Any]]]] = {}
    level = {"label": "nominal", "entities": "set", "row_refs": "set", "text": "text", "integer": "interval"}
    for turn, values in enumerate(ref.turns, start=1):
        for field in SCHEMA.fields:
            if field.name not in values or field.type == "entity":
                continue
            given = [rows[(a, turn)][field.name] for a in ANNOTATORS]
            if field.type != "items":
                out.setdefault(level[field.type], []).append((values[field.name], given))
                continue
            key = field.key
            out.setdefault("set", []).append((sorted(str(i[key]) for i in values[field.name]),
                                              [sorted(str(i[key]) for i in g) for g in given]))
            for position, item in enumerate(values[field.name]):
                for sub in field.items:
                    if sub.type == "entity":
                        continue
                    if sub.name == key:
                        answers = [g[position][key] if position < len(g) else None for g in given]
                    else:
                        answers = [next((i[sub.name] for i in g if i[key] == item[key]), None) for g in given]
                    out.setdefault(level[sub.type], []).append((item[sub.name], answers))
    return out


def shares(name: str) -> dict[str, tuple[float, float]]:
    """Per level: (share of annotator answers that differ from the reference, mean pairwise agreement)."""
    ref = reference_labels(name, SCHEMA)
    rows = values_by_row(simulated_annotations(name, schema=SCHEMA))
    pairs = list(itertools.combinations(range(len(ANNOTATORS)), 2))
    result = {}
    for lvl, found in units(ref, rows).items():
        off = sum(v != gold for gold, given in found for v in given) / (len(found) * len(ANNOTATORS))
        agree = sum(given[i] == given[j] for _, given in found for i, j in pairs) / (len(found) * len(pairs))
        result[lvl] = (off, agree)
    return result


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_simulated_annotators_disagree_on_a_measurable_share_of_units(name: str) -> None:
    found = shares(name)
    off, agree = found["nominal"]
    assert 0.05 <= off <= 0.30 and 0.70 <= agree <= 0.95, found
    for lvl in ("set", "text", "interval"):
        assert 0.02 <= found[lvl][0] <= 0.35 and found[lvl][1] >= 0.5, (lvl, found)
    ref = reference_labels(name, SCHEMA)
    rows = values_by_row(simulated_annotations(name, schema=SCHEMA))

    def label(values: dict[str, Any], field: str) -> Any:
        return values[field] if field != "support_strategy" else [i["strategy_type"] for i in values[field]]

    for field in ("utterance_type", "relation_cycle_state", "support_strategy"):  # every label field is disputed
        assert any(label(rows[(a, turn)], field) != label(values, field) for turn, values in enumerate(ref.turns, 1)
                   if field in values for a in ANNOTATORS), field


def _answers(ref: ReferenceLabels, given: list[annotators.SimulatedAnnotation]) -> list[Answer]:
    return [Answer(ref.session_id, ref.scenario, f"{ref.session_id}@{a.turn_index}", a.turn_index, a.annotator,
                   a.field, a.value, "2026-01-01T00:00:00Z", number) for number, a in enumerate(given)]


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_consensus_never_settles_on_a_wrong_answer_and_adjudication_restores_the_reference(name: str) -> None:
    """The real consensus rules (text similarity off: differing texts go to adjudication as well)."""
    ref = reference_labels(name, SCHEMA)
    given = simulated_annotations(name, schema=SCHEMA)
    settings = AgreementSettings(adjudicators=(ADJUDICATOR,))
    resolver = Resolver(SCHEMA, settings, Consensus(settings, similarity=None))
    before = [o for fields in resolve(_answers(ref, given), resolver).values() for o in fields.values()]
    settled = [o for o in before if o.status == "consensus"]
    assert settled and all(o.value == ref.turns[o.row_index - 1][o.field] for o in settled)
    no_majority = {o.field for o in before if o.status == "pending" and o.detail.startswith(("tie", "no majority"))}
    assert no_majority & {"utterance_type", "relation_cycle_state", "internal_emotion"}, no_majority

    adjudicated = adjudicator_answers(name, given, schema=SCHEMA)
    assert {(a.turn_index, a.field) for a in adjudicated} == set(disputed_units(given))
    after = [o for fields in resolve(_answers(ref, given + adjudicated), resolver).values() for o in fields.values()]
    assert {o.status for o in after} <= {"consensus", "adjudicated", "not_applicable"}
    for outcome in after:
        values = ref.turns[outcome.row_index - 1]
        if outcome.status == "not_applicable":
            assert outcome.field not in values and outcome.value in ("", [])
        else:
            assert outcome.value == values[outcome.field], (outcome.row_index, outcome.field)

    whole = adjudicator_answers(name, given, whole_rows=True, schema=SCHEMA)
    turns = {turn for turn, _ in disputed_units(given)}
    assert {(a.turn_index, a.field) for a in whole} == {(t, f) for t in turns for f in ref.turns[t - 1]}


def test_with_real_text_similarity_only_a_few_fields_need_adjudication(tmp_path: Path) -> None:
    """The offline MiniLM model settles reworded notes; what is left for the adjudication queue is the
    contested labels and intensities, and nothing is settled on a wrong answer."""
    settings = AgreementSettings(adjudicators=(ADJUDICATOR,))
    given = {name: simulated_annotations(name, schema=SCHEMA) for name in SAMPLE_NAMES}
    disputed = {name: set(disputed_units(answers)) for name, answers in given.items()}
    texts = sorted({text for name, answers in given.items() for a in answers
                    if (a.turn_index, a.field) in disputed[name] for text in _strings(a.value)})
    similarity, _ = text_similarity(Project(tmp_path), settings, texts)  # only differing fields compare texts
    assert similarity is not None
    resolver = Resolver(SCHEMA, settings, Consensus(settings, similarity))
    for name in SAMPLE_NAMES:
        ref = reference_labels(name, SCHEMA)
        outcomes = [o for fields in resolve(_answers(ref, given[name]), resolver).values() for o in fields.values()]
        pending = [o for o in outcomes if o.status == "pending"]
        assert 1 <= len(pending) <= 12, [(o.row_index, o.field) for o in pending]
        assert all(o.value == ref.turns[o.row_index - 1][o.field] for o in outcomes if o.status == "consensus")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []
