"""RPP's label source is decided per row (issue 20, part 4): on a sample that mixes both fields, as
`family_therapy/003` is released (therapist rows with `relation_cycle_state` "" and `relation_pattern` set),
every row takes the first non-empty of `rpp.label_fields`, with that field's reason and evidence, and the
freeze reports per sample how many instances each field supplied."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.tasks.build import build_tasks
from pipeline.tasks.coverage import coverage_warnings
from pipeline.tasks.settings import TaskSettings
from tests.tasks_rows import SAMPLE_ID, row, session
from tests.release_inputs import SCHEMA
from tests.release_inputs import run, write_gold

MIXED = "family_therapy/003/merged"
T = "Therapist"


def mixed_session():  # type: ignore[no-untyped-def]
    rows = [
        row(1, "Ana", ["Tom"], relation_pattern="escalation_conflict"),         # a client row: never an RPP row
        row(2, T, ["Ana"], relation_cycle_state="escalation_conflict", relation_cycle_reason="state 2",
            relation_cycle_evidence_rows=[1]),
        row(3, "Tom", [T]),
        row(4, T, ["Tom"], relation_cycle_state="", relation_pattern="pursue_withdraw",     # as rows 23, 78, ...
            relation_pattern_reason="pattern 4", relation_pattern_evidence_rows=[3]),
        row(5, "Ana", [T]),
        row(6, T, ["Ana"], relation_pattern="mutual_disengagement", relation_pattern_reason="pattern 6"),  # null
        row(7, T, ["Tom"], relation_cycle_state="repair_softening", relation_cycle_reason="state 7",
            relation_pattern="escalation_conflict", relation_pattern_reason="pattern 7"),      # the state wins
        row(8, T, ["Tom"], relation_cycle_state="", relation_pattern=""),                      # no clear pattern
        row(9, T, ["Ana"], relation_cycle_state="", relation_pattern="not_in_the_taxonomy"),
    ]
    return session(rows, MIXED, "family", ["Ana", "Tom"])


def test_a_mixed_sample_takes_each_rows_label_from_its_own_first_non_empty_field() -> None:
    result = build_tasks([session(), mixed_session()], TaskSettings(), SCHEMA)
    mixed = {i.row_index: i for i in result.instances["rpp"] if i.sample_id == MIXED}
    assert {k: i.gold["relation_label"] for k, i in mixed.items()} == {
        2: "escalation_conflict", 4: "pursue_withdraw", 6: "mutual_disengagement", 7: "repair_softening"}
    assert [(mixed[k].meta["reason"], mixed[k].meta["evidence_rows"]) for k in (2, 4, 6, 7)] == [
        ("state 2", [1]), ("pattern 4", [3]), ("pattern 6", []), ("state 7", [])]
    assert result.label_sources == {MIXED: {"relation_cycle_state": 2, "relation_pattern": 2},
                                    SAMPLE_ID: {"relation_cycle_state": 3}}
    assert [i.row_index for i in result.instances["rpp"] if i.sample_id == SAMPLE_ID] == [3, 5, 12]  # couple: same
    assert result.dropped["rpp"]["no relation label (empty = no clear pattern)"] == 1 + 2   # row 8; couple 10, 16
    assert result.dropped["rpp"]["label outside the scenario's relation_pattern set"] == 1 + 1  # row 9; couple 14
    only_state = build_tasks([mixed_session()], TaskSettings(rpp={"label_fields": ["relation_cycle_state"]}), SCHEMA)
    assert [i.row_index for i in only_state.instances["rpp"]] == [2, 7]
    assert only_state.label_sources == {MIXED: {"relation_cycle_state": 2}}


def test_freeze_reports_per_sample_how_many_labels_each_field_gave(tmp_path: Path) -> None:
    gold = write_gold(tmp_path / "gold.jsonl", [session(), mixed_session()])
    result = run(tmp_path, "freeze", "--gold", str(gold))
    assert result.exit_code == 0, result.output
    assert (f"rpp labels per row: relation_cycle_state 5 in 2 sample(s), relation_pattern 2 in 1 sample(s) "
            f"({MIXED}: 2)") in result.output
    release = tmp_path / "build/release/v1"
    manifest = json.loads((release / "MANIFEST.json").read_text())
    assert manifest["coverage"]["rpp_label_rows"] == {MIXED: {"relation_cycle_state": 2, "relation_pattern": 2},
                                                      SAMPLE_ID: {"relation_cycle_state": 3}}
    gold_rpp = [json.loads(line) for line in (release / "gold/rpp.jsonl").read_text().splitlines()]
    assert [(g["row_index"], g["gold"]["relation_label"]) for g in gold_rpp if g["sample_id"] == MIXED] == [
        (2, "escalation_conflict"), (4, "pursue_withdraw"), (6, "mutual_disengagement"), (7, "repair_softening")]
    assert "each row's label read from the first of" in (release / "README.md").read_text()


def test_a_sample_without_rpp_instances_says_whether_any_row_had_a_label() -> None:
    outside = session([row(1, "Ana", [T]), row(2, T, ["Ana"], relation_cycle_state="", relation_pattern="nope")],
                      "family_therapy/010/merged", "family", ["Ana"])
    unlabelled = session([row(1, "Ana", [T]), row(2, T, ["Ana"])], "family_therapy/011/merged", "family", ["Ana"])
    result = build_tasks([outside, unlabelled], TaskSettings(), SCHEMA)
    notes = [n for n in coverage_warnings(result, TaskSettings()) if "RPP" in n]
    assert notes == [("family_therapy/010/merged: no RPP instance (1 RPP row(s) labelled from relation_pattern: "
                      "no label in the scenario's set)"),
                     ("family_therapy/011/merged: no RPP instance (no RPP row has a label in relation_cycle_state or "
                      "relation_pattern)")]
