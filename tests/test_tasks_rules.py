"""Task-construction rules on hand-made rows; every expected instance below is worked out by hand
from tests/tasks_rows.py (speakers: therapist rows 3, 5, 10, 12, 14, 16; clients elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.schema import load_schema
from pipeline.tasks.build import build_tasks
from pipeline.tasks.context import context_window, parse_intensity, session_view, word_count
from pipeline.tasks.itp import Candidate, balance
from pipeline.tasks.sampling import early_cutoff, even_positions, even_sample, pick_evenly
from pipeline.tasks.settings import ITPSettings, TaskSettings
from tests.tasks_rows import SAMPLE_ID, alan_and_evelyn_rows, emotion, row, session, strategy

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml")


def build(settings: TaskSettings | None = None, sessions=None):  # type: ignore[no-untyped-def]
    return build_tasks(sessions or [session()], settings or TaskSettings(), SCHEMA)


def rows_of(result, task: str) -> list[int]:  # type: ignore[no-untyped-def]
    return [i.row_index for i in result.instances[task]]


# --- the small pure rules -------------------------------------------------------------------------

def test_even_positions_use_bankers_rounding() -> None:
    # 7 items, 5 slots: r * 6 / 4 = 0, 1.5, 3, 4.5, 6 -> round() gives 0, 2, 3, 4, 6 (1.5 -> 2, 4.5 -> 4).
    assert even_positions(7, 5) == [0, 2, 3, 4, 6]
    assert pick_evenly(list("abcdefg"), 5) == ["a", "c", "d", "e", "g"]
    # 6 items, 4 slots (the ITP example): r * 5 / 3 = 0, 1.67, 3.33, 5 -> 0, 2, 3, 5.
    assert even_sample([2, 4, 9, 11, 13, 15], 4) == [2, 9, 11, 15]


def test_limit_one_differs_between_itp_and_er_vp() -> None:
    assert pick_evenly(["a", "b", "c", "d"], 1) == ["a"]        # ER/VP: the first
    assert even_sample(["a", "b", "c", "d"], 1) == ["c"]        # ITP: items[n // 2]
    assert even_sample(["a", "b", "c"], 1) == ["b"]
    assert pick_evenly(["a", "b"], 0) == ["a", "b"] == even_sample(["a", "b"], 0)  # 0 = no cap
    assert pick_evenly(["a", "b"], 5) == ["a", "b"]


def test_early_cutoff() -> None:
    assert early_cutoff(16, 0.3) == 5        # ceil(4.8): rows 6.. qualify (the spec's check)
    assert early_cutoff(10, 0.3) == 3        # ceil(3.0)
    assert early_cutoff(2, 0.3) == 1         # min(R - 1, ceil(0.6) = 1)
    assert early_cutoff(1, 0.3) == 0 == early_cutoff(0, 0.3)
    assert early_cutoff(3, 0.9) == 2         # never drops every row: min(R - 1, 3)


def test_context_window_and_small_parsers() -> None:
    assert list(context_window(6, -1)) == [1, 2, 3, 4, 5]
    assert list(context_window(6, 3)) == [3, 4, 5]
    assert list(context_window(2, 3)) == [1]
    assert list(context_window(6, 0)) == []
    assert word_count("It's because there's a foundation") == 5
    assert word_count("Yeah, right.") == 2
    assert [parse_intensity(v) for v in (7, "7", 8.4, 6.5, 7.5, 12, -1, "high", None)] == [7, 7, 8, 6, 8, None, None,
                                                                                         None, None]


# --- each task on the 16-row sample -------------------------------------------------------------

def test_er_yields_rows_6_8_9_as_in_the_released_file() -> None:
    result = build()
    assert rows_of(result, "er") == [6, 8, 9]
    golds = [(i.gold["internal_emotion"], i.gold["intensity"]) for i in result.instances["er"]]
    # row 6: intensity "7"; row 8: 8.4 -> 8; row 9: the first speaker item has no text, the second 6.5 -> 6
    assert golds == [("feels mischaracterized", 7), ("feels let down", 8), ("feels sad", 6)]
    first = result.instances["er"][0]
    assert first.id == f"{SAMPLE_ID}__row6"
    assert [r["row_index"] for r in first.input["prior_context"]] == [1, 2, 3, 4, 5]   # released: all prior rows
    assert first.input["speaker"] == "Evelyn" and first.input["timestamp"] == "30.000-34.500"
    assert result.dropped["er"] == {"before the early cut-off": 2,               # rows 1, 2
                                    "client row without a usable speaker emotion": 3,  # rows 7, 13, 15
                                    "dialogue under 5 words": 2}                 # rows 4, 11


def test_er_cap_and_context_size() -> None:
    rows = [row(i, "Ann" if i % 2 else "Ben", ["Therapist"], internal_emotion=[emotion("Ann" if i % 2 else "Ben",
                                                                                        f"feels {i}", 5)])
            for i in range(1, 21)]
    settings = TaskSettings(er={"context_size": 2, "checkpoints_per_sample": 5})
    result = build(settings, [session(rows, "ann_and_ben/002_x", participants=["Ann", "Ben"])])
    # drop = ceil(6.0) = 6 -> rows 7..20 qualify (14); 5 evenly: r * 13 / 4 = 0, 3.25, 6.5, 9.75, 13 -> 0, 3, 6, 10, 13
    assert rows_of(result, "er") == [7, 10, 13, 17, 20]
    assert [r["row_index"] for r in result.instances["er"][0].input["prior_context"]] == [5, 6]


def test_vp_takes_the_speakers_own_viewpoints_over_the_whole_sample() -> None:
    result = build()
    assert rows_of(result, "vp") == [2, 6, 7, 8, 9]
    row7 = result.instances["vp"][2]
    # row 7's first item is Alan's view; only Evelyn's own counts
    assert row7.gold["viewpoints"] == [{"source": "Evelyn", "target": "Alan", "viewpoint": "he never follows through",
                                        "attitude": "resentful"}]
    assert row7.input["participants"] == ["Alan", "Therapist", "Evelyn"]   # released vp.jsonl order
    without = build(TaskSettings(vp={"participants_include_therapist": False, "checkpoints_per_sample": 1}))
    assert rows_of(without, "vp") == [2]                                   # limit 1: the first candidate
    assert without.instances["vp"][0].input["participants"] == ["Alan", "Evelyn"]


def test_rpp_therapist_rows_with_an_in_taxonomy_label() -> None:
    result = build()
    assert rows_of(result, "rpp") == [3, 5, 12]      # 10: "" (no clear pattern), 14: out of taxonomy, 16: none
    assert [i.gold["relation_label"] for i in result.instances["rpp"]] == ["attack_attack", "attack_attack",
                                                                           "pursue_withdraw"]
    twelve = result.instances["rpp"][2]
    assert [r["row_index"] for r in twelve.input["prior_context"]] == list(range(1, 12))
    assert "current_turn" not in twelve.input
    assert twelve.input["candidate_relation_labels"] == list(SCHEMA.labels("relation_pattern", "couple"))
    any_rows = build(TaskSettings(rpp={"rows": "any", "include_current_turn": True, "drop_out_of_taxonomy": False}))
    # per row (issue 20): client row 2 sets only relation_pattern, so with rows: any it is an instance too
    assert rows_of(any_rows, "rpp") == [2, 3, 5, 12, 13, 14]
    assert any_rows.instances["rpp"][0].meta["reason"] == "" and any_rows.instances["rpp"][0].gold == {
        "relation_label": "attack_attack"}
    assert any_rows.instances["rpp"][4].input["current_turn"]["row_index"] == 13


def test_itp_worked_example_keeps_positives_2_9_11_15_and_all_negatives() -> None:
    result = build()
    itp = result.instances["itp"]
    assert [(i.row_index, i.gold["should_speak"]) for i in itp] == [
        (1, "no"), (2, "yes"), (6, "no"), (7, "no"), (8, "no"), (9, "yes"), (11, "yes"), (15, "yes")]
    assert [i.meta["boundary_type"] for i in itp if i.gold["should_speak"] == "no"] == [
        "same_speaker_continuation", "same_speaker_continuation", "same_speaker_continuation",
        "same_speaker_continuation"]
    nine = itp[5]
    assert nine.input["decision_after_row"] == 9
    assert [r["row_index"] for r in nine.input["prior_context"]] == [7, 8, 9]   # up to and including row 9, once
    assert nine.meta == {"couple": "alan_and_evelyn", "candidate_type": "actual_therapist_entry",
                         "boundary_type": "therapist_entry", "next_row_index": 10, "next_speaker": "Therapist"}


def test_itp_balancing_cap_and_empty_class() -> None:
    yes = [Candidate(r, "yes", "", "") for r in (2, 4, 9, 11, 13, 15)]
    no = [Candidate(r, "no", "", "") for r in (1, 6, 7, 8)]
    capped = balance(yes, no, ITPSettings(max_candidates_per_class_per_sample=3))
    # cap 3: yes -> r * 5 / 2 = 0, 2.5, 5 -> 0, 2, 5 (2.5 -> 2): rows 2, 9, 15
    #        no  -> r * 3 / 2 = 0, 1.5, 3 -> 0, 2, 3: rows 1, 7, 8
    assert [(c.decision_row, c.should_speak) for c in capped] == [(1, "no"), (2, "yes"), (7, "no"), (8, "no"),
                                                                  (9, "yes"), (15, "yes")]
    assert balance(yes, [], ITPSettings()) == []
    assert len(balance(yes, no, ITPSettings(balance=False))) == 10


def test_stp_targets_candidates_and_collapse() -> None:
    result = build()
    assert [(i.row_index, i.gold["target_label"], i.meta["target_source"]) for i in result.instances["stp"]] == [
        (3, "Alan", "support_strategy"), (5, "Evelyn", "support_strategy"), (12, "Couple", "support_strategy"),
        (14, "Evelyn", "row_target_fallback")]        # row 14's strategy target is only "Therapist"
    candidates = {tuple(i.input["candidate_target_labels"]) for i in result.instances["stp"]}
    assert candidates == {("Alan", "Evelyn", "Couple")}
    assert [r["row_index"] for r in result.instances["stp"][0].input["prior_context"]] == [1, 2]
    subgroup = build(TaskSettings(stp={"multi_target": "subgroup"}))
    assert subgroup.instances["stp"][2].gold["target_label"] == "Alan+Evelyn"
    assert subgroup.instances["stp"][0].input["candidate_target_labels"] == ["Alan", "Evelyn", "Couple", "Alan+Evelyn"]
    every_row = build(TaskSettings(stp={"rows": "therapist"}))      # the paper's "row-level target"
    assert [(i.row_index, i.gold["target_label"]) for i in every_row.instances["stp"]] == [
        (3, "Alan"), (5, "Evelyn"), (10, "Evelyn"), (12, "Couple"), (14, "Evelyn"), (16, "Alan")]


def test_ssp_needs_an_in_taxonomy_strategy() -> None:
    result = build()
    assert [(i.row_index, i.gold["strategy_label"], i.input["known_support_target"])
            for i in result.instances["ssp"]] == [(3, "evoke", "Alan"), (5, "counterbalance", "Evelyn"),
                                                  (12, "reframe", "Couple")]
    assert result.dropped["ssp"] == {"strategy outside the scenario's support_strategy set": 1,   # 14: validation
                                     "therapist row without a support strategy": 2}               # 10, 16
    assert result.instances["ssp"][0].input["candidate_strategy_labels"] == list(
        SCHEMA.labels("support_strategy", "couple"))


def test_ssp_known_target_internal_emotion_walks_back_through_the_context() -> None:
    result = build(TaskSettings(ssp={"include_target_internal_emotion": True}))
    by_row = {i.row_index: i.input.get("known_support_target_internal_emotion") for i in result.instances["ssp"]}
    assert by_row[3] == [{"person": "Alan", "emotion_description": "feels blamed", "intensity": 7}]   # row 2
    assert by_row[5] is None                    # rows 2-4 hold no emotion of Evelyn's
    # Couple: any participant's emotion, the latest row first: row 11 (Alan, intensity 6)
    assert by_row[12] == [{"person": "Alan", "emotion_description": "feels defensive", "intensity": 6}]


def test_family_sample_uses_the_family_label_sets() -> None:
    rows = [
        row(1, "Maria", ["Nick"]), row(2, "Nick", ["Maria"]),
        row(3, "Therapist", ["Maria", "Joel"], support_strategy=strategy(["Maria", "Joel"], "boundary"),
            relation_cycle_state="cross_generational_coalition"),
        row(4, "Joel", ["Therapist"], relation_cycle_state=""),
        row(5, "Therapist", ["Joel"], support_strategy=strategy(["Joel"], "goal_align"),
            relation_cycle_state="attack_attack"),
    ]
    family = session(rows, "family_therapy/006/merged", "family", ["Maria", "Nick", "Joel"])
    result = build(sessions=[family])
    assert [(i.row_index, i.gold["relation_label"]) for i in result.instances["rpp"]] == [
        (3, "cross_generational_coalition")]      # attack_attack is a couple label
    assert [(i.row_index, i.gold["strategy_label"], i.input["known_support_target"])
            for i in result.instances["ssp"]] == [(3, "boundary", "Family")]   # goal_align is not a family strategy
    assert result.instances["rpp"][0].meta["couple"] == "006"
    assert session_view(family, SCHEMA).group_label == "Family"


@pytest.mark.parametrize("task", ["er", "vp", "rpp", "itp", "stp", "ssp"])
def test_instances_are_ordered_by_sample_then_row(task: str) -> None:
    other = session(alan_and_evelyn_rows(), "aaa_and_bbb/000_first")
    result = build(sessions=[session(), other])
    keys = [(i.sample_id, i.row_index) for i in result.instances[task]]
    assert keys == sorted(keys) and keys[0][0] == "aaa_and_bbb/000_first"
