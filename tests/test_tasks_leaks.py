"""No answer leaks: what a model sees (ids, fields, order) must not change when only the gold changes.

The released ITP ids and fields gave the answer away (`__pos_` / `__neg_`, candidate_type,
boundary_type, spec 6.6). These tests change the gold and diff the model-facing records.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.schema import load_schema
from pipeline.tasks.build import build_tasks
from pipeline.tasks.instances import TASKS
from pipeline.tasks.settings import TaskSettings
from tests.tasks_rows import alan_and_evelyn_rows, row, session

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml")
GOLD_ONLY_KEYS = {"gold", "meta", "candidate_type", "boundary_type", "should_speak", "internal_emotion", "intensity",
                  "emotion_description", "viewpoints_attitudes", "viewpoint", "attitude", "support_strategy",
                  "strategy_type", "strategy_content", "relation_cycle_state", "relation_cycle_reason",
                  "relation_pattern", "utterance_type", "target_source", "next_speaker", "next_row_index",
                  "relation_label", "target_label", "strategy_label", "evidence_rows"}


def _rotate(labels: tuple[str, ...], value: str) -> str:
    return labels[(labels.index(value) + 1) % len(labels)] if value in labels else value


def change_gold(rows: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """Every value the task's gold comes from changed; model-facing values and qualifying conditions kept.

    (SSP is given the support target as input, so only STP's change swaps targets.)
    """
    relations, strategies = SCHEMA.labels("relation_pattern", "couple"), SCHEMA.labels("support_strategy", "couple")
    swap = {"Alan": "Evelyn", "Evelyn": "Alan"}
    changed = copy.deepcopy(rows)
    for r in changed:
        for item in r.get("internal_emotion", []) if task == "er" else []:
            item["emotion_description"] = item["emotion_description"] and "feels something else entirely"
            if isinstance(item["intensity"], int) and 0 <= item["intensity"] <= 10:
                item["intensity"] = 10 - item["intensity"]
        for item in r.get("viewpoints_attitudes", []) if task == "vp" else []:
            item.update(viewpoint=item["viewpoint"] + " (changed)", attitude="warm")
        for item in r.get("support_strategy", []):
            if task == "ssp":
                item.update(strategy_type=_rotate(strategies, item["strategy_type"]), strategy_content="changed")
            if task == "stp":
                item["target"] = [swap.get(t, t) for t in item["target"]]
        if r.get("relation_cycle_state") and task == "rpp":
            r["relation_cycle_state"] = _rotate(relations, r["relation_cycle_state"])
        r["utterance_type"] = "" if r["primary_speaker"] == "Therapist" else "other"   # never shown to a model
    return changed


def model_facing(result, task: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [json.dumps(i.model_facing()) for i in result.instances[task]]


@pytest.mark.parametrize("settings", [TaskSettings(), TaskSettings(stp={"multi_target": "subgroup"},
                                                                   rpp={"rows": "any", "drop_out_of_taxonomy": False})])
def test_changing_only_the_gold_changes_no_model_facing_byte(settings: TaskSettings) -> None:
    before = build_tasks([session()], settings, SCHEMA)
    for task in ("er", "vp", "rpp", "stp", "ssp"):
        after = build_tasks([session(change_gold(alan_and_evelyn_rows(), task))], settings, SCHEMA)
        assert model_facing(before, task) == model_facing(after, task), task
        golds = ([i.gold for i in before.instances[task]], [i.gold for i in after.instances[task]])
        assert golds[0] != golds[1], f"{task}: the change must reach the gold, or this test proves nothing"


def test_itp_yes_and_no_instances_look_the_same_to_a_model() -> None:
    # Two sessions identical up to row 4; after it the therapist speaks in one and a client in the other.
    T = "Therapist"
    head = [row(1, "Alan", [T]), row(2, T, ["Alan"]), row(3, "Evelyn", [T]), row(4, "Alan", ["Evelyn"])]
    yes_rows = [*head, row(5, T, ["Alan"]), row(6, "Evelyn", ["Alan"]), row(7, "Alan", ["Evelyn"])]
    no_rows = [*head, row(5, "Evelyn", ["Alan"]), row(6, T, ["Evelyn"]), row(7, "Alan", [T])]
    yes = {i.row_index: i for i in build_tasks([session(yes_rows)], TaskSettings(), SCHEMA).instances["itp"]}
    no = {i.row_index: i for i in build_tasks([session(no_rows)], TaskSettings(), SCHEMA).instances["itp"]}
    assert yes[4].gold == {"should_speak": "yes"} and no[4].gold == {"should_speak": "no"}
    assert yes[4].model_facing() == no[4].model_facing()
    assert yes[4].meta["candidate_type"] != no[4].meta["candidate_type"]      # kept, but only in the gold file
    assert re.fullmatch(r"itp-[0-9a-f]{16}", yes[4].id)


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


@pytest.mark.parametrize("task", TASKS)
def test_model_facing_fields_hold_no_gold_field_and_no_gold_text(task: str) -> None:
    result = build_tasks([session()], TaskSettings(), SCHEMA)
    records = [i.model_facing() for i in result.instances[task]]
    assert records
    assert not _keys(records) & GOLD_ONLY_KEYS
    text = json.dumps(records)
    free_text = [v for i in result.instances[task] for v in (*_strings(i.gold), *_strings(i.meta))
                 if " " in v]   # free text only: label strings legitimately appear in candidate lists
    leaked = [v for v in free_text if v in text]
    assert not leaked
    assert "__pos_" not in text and "__neg_" not in text


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


@pytest.mark.parametrize("task", TASKS)
def test_file_order_follows_model_facing_fields_only(task: str) -> None:
    result = build_tasks([session(), session(sample_id="aaa/000_first")], TaskSettings(), SCHEMA)
    records = [i.model_facing() for i in result.instances[task]]
    key = "decision_after_row" if task == "itp" else "row_index"
    assert records == sorted(records, key=lambda r: (r["sample_id"], r[key]))
