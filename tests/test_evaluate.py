"""`rescue evaluate`: the metrics on hand-worked cases, and a precise account of malformed predictions
(unknown ids, labels outside the set, repeats, missing instances - which count as wrong)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.tasks.evaluate import evaluate, score_table
from pipeline.tasks.metrics import binary_metrics, intensity_score, macro_f1, rank_metrics
from pipeline.tasks.predictions import normalise_should_speak
from tests.tasks_rows import SAMPLE_ID
from tests.release_inputs import FAMILY, ids

def write(tmp_path: Path, lines: list) -> Path:  # type: ignore[type-arg]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_metric_functions_on_hand_cases() -> None:
    assert rank_metrics("b", ["a", "b", "c"]) == {"gold_rank": 2, "recall_at_1": 0.0, "recall_at_2": 1.0,
                                                  "recall_at_3": 1.0, "mrr": 0.5}
    assert rank_metrics("d", ["a", "b", "c", "d"])["gold_rank"] == 0          # only the top 3 count
    assert rank_metrics("a", [])["mrr"] == 0.0
    scores = binary_metrics(["yes", "yes", "no", "no", "no"], ["yes", None, "yes", "no", None])
    # tp 1, fn 1 (None on a yes), fp 2 (yes, and None on a no), tn 1
    assert (scores["tp"], scores["fn"], scores["fp"], scores["tn"]) == (1, 1, 2, 1)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.3333, 0.5, 0.4)
    assert (scores["accuracy"], scores["recall_no"], scores["balanced_accuracy"]) == (0.4, 0.3333, 0.4167)
    f1 = macro_f1(["a", "a", "b"], ["a", "b", None], ["a", "b", "c"])
    assert f1["per_label"]["a"] == {"precision": 1.0, "recall": 0.5, "f1": 0.6667, "support": 2}
    assert "c" not in f1["per_label"]  # neither needed nor predicted: not averaged in as an F1 of 0
    assert f1["macro_f1"] == 0.3333  # (0.6667 + 0) / 2
    assert macro_f1(["a", "b"], ["a", "zzz"], ["a", "b"])["per_label"].keys() == {"a", "b"}  # outside the set: ignored
    assert [intensity_score(p, 7) for p in (7, 5, 0, 10, None)] == [5, 3, 1, 2, 1]
    assert [normalise_should_speak(v) for v in (1, 0, True, False, "0", " Yes ", 2, None, "")] == \
        ["yes", "no", "yes", "no", "no", "yes", None, None, None]


def test_itp_scores_and_every_kind_of_malformed_prediction(release: Path, tmp_path: Path) -> None:
    by_row = ids(release, "itp")
    c = {row: by_row[(SAMPLE_ID, row)] for row in (1, 2, 6, 7, 8, 9, 11, 15)}
    f = {row: by_row[(FAMILY, row)] for row in (1, 4)}
    path = write(tmp_path, [
        {"id": c[1], "should_speak": "no"},          # tn
        {"id": c[2], "should_speak": "yes"},         # tp
        {"id": c[6], "should_speak": "no"},          # tn
        {"id": c[7], "should_speak": True},          # fp (true = yes)
        {"id": c[8], "should_speak": "maybe"},       # invalid -> wrong -> fp
        {"id": c[9], "should_speak": "yes"},
        {"id": c[9], "should_speak": "no"},          # repeated: neither answer counts -> fn
        {"id": c[15], "should_speak": "Y"},          # tp
        {"id": f[1], "should_speak": "no"},          # tn
        {"id": f[4], "should_speak": "no"},          # fn
        {"id": "itp-0000000000000000", "should_speak": "yes"},
        "{broken",
        ["not", "an", "object"],
    ])                                               # c[11] missing -> fn
    report = evaluate(release, "itp", path)
    problems = report["problems"]
    # Every line in exactly one bucket: 7 + 1 + 2 + 1 + 2 = 13 lines.
    assert problems["counts"] == {"lines": 13, "valid": 7, "invalid": 1, "repeated": 2, "unknown_ids": 1,
                                  "unreadable_lines": 2, "missing_instances": 1}
    assert problems["unknown_ids"] == [{"line": 11, "id": "itp-0000000000000000"}]
    assert problems["duplicate_ids"] == [{"line": 7, "id": c[9], "first_line": 6}]
    assert problems["invalid"] == [{"line": 5, "id": c[8], "problems": ["should_speak 'maybe' is not yes or no"]}]
    assert [u["line"] for u in problems["unreadable_lines"]] == [12, 13]
    assert problems["missing_ids"] == [c[11]]
    overall = report["scores"]["overall"]
    assert (overall["tp"], overall["fp"], overall["tn"], overall["fn"]) == (2, 2, 3, 3)
    assert (overall["precision"], overall["recall"], overall["f1"]) == (0.5, 0.4, 0.4444)
    assert (overall["accuracy"], overall["recall_no"], overall["balanced_accuracy"]) == (0.5, 0.6, 0.5)
    assert report["scores"]["couple"]["instances"] == 8 and report["scores"]["family"]["accuracy"] == 0.5
    header, rows = score_table(report)
    assert header == ["scope", "n", "P(yes)", "R(yes)", "F1(yes)", "acc", "bal.acc"]
    assert rows[0] == ["overall", "10", "0.5000", "0.4000", "0.4444", "0.5000", "0.5000"]


def test_rpp_ranking_metrics_and_labels_outside_the_set(release: Path, tmp_path: Path) -> None:
    i = ids(release, "rpp")
    path = write(tmp_path, [
        {"id": i[(SAMPLE_ID, 3)], "relation_top3": ["attack_attack", "pursue_withdraw", "mixed_transition"]},  # rank 1
        {"id": i[(SAMPLE_ID, 5)], "relation_top3": ["pursue_withdraw", "banana", "attack_attack"]},            # rank 3
        {"id": i[(SAMPLE_ID, 12)], "relation_top3": ["attack_attack", "attack_attack"]},                       # absent
        {"id": i[(FAMILY, 3)], "relation_top3": ["repair_softening", "cross_generational_coalition"]},         # rank 2
    ])                                                                                   # family row 5 missing
    report = evaluate(release, "rpp", path)
    invalid = {p["id"]: p["problems"] for p in report["problems"]["invalid"]}
    assert invalid[i[(SAMPLE_ID, 5)]][0].startswith("relation_top3: 'banana' is not one of")
    assert invalid[i[(SAMPLE_ID, 12)]] == ["relation_top3: 'attack_attack' is listed twice"]
    overall = report["scores"]["overall"]
    # ranks 1, 3, none, 2, missing: the invalid "banana" keeps its place as a miss
    assert (overall["accuracy"], overall["recall_at_2"], overall["recall_at_3"]) == (0.2, 0.4, 0.6)
    assert overall["mrr"] == round((1 + 1 / 3 + 0 + 1 / 2 + 0) / 5, 4)
    couple = report["scores"]["couple"]
    # top-1 attack_attack, pursue_withdraw, attack_attack vs gold aa, aa, pw: aa P = R = 0.5, others 0; 6 labels
    assert couple["per_label"]["attack_attack"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    # averaged over the labels present in gold or top-1 answers (aa, pw), not the 6 of the couple label set
    assert couple["macro_f1"] == 0.25 and couple["per_label"].keys() == {"attack_attack", "pursue_withdraw"}
    gold = {r["id"]: r["gold"]["relation_label"] for r in map(json.loads, (release / "gold/rpp.jsonl").read_text()
                                                                  .splitlines())}
    used = {gold[i[key]] for key in ((SAMPLE_ID, 3), (SAMPLE_ID, 5), (SAMPLE_ID, 12), (FAMILY, 3), (FAMILY, 5))}
    assert overall["per_label"].keys() == used | {"attack_attack", "pursue_withdraw", "repair_softening"}
    assert overall["macro_f1_labels"] == len(overall["per_label"]) and "present in gold" in report["macro_f1"]


@pytest.mark.parametrize("task", ["stp", "ssp", "rpp", "itp"])
def test_gold_answers_score_perfectly(release: Path, tmp_path: Path, task: str) -> None:
    field, key = {"stp": ("target_top3", "target_label"), "ssp": ("strategy_top3", "strategy_label"),
                  "rpp": ("relation_top3", "relation_label"), "itp": ("should_speak", "should_speak")}[task]
    gold = [json.loads(line) for line in (release / f"gold/{task}.jsonl").read_text().splitlines()]
    answers = [{"id": g["id"], field: g["gold"][key] if task == "itp" else [g["gold"][key]]} for g in gold]
    report = evaluate(release, task, write(tmp_path, answers))
    headline = "f1" if task == "itp" else "recall_at_1"
    assert report["scores"]["overall"][headline] == 1.0
    assert report["problems"]["counts"]["valid"] == len(gold) and report["problems"]["missing_ids"] == []
    if task == "rpp":  # gold copied as predictions: every label present is perfect (was 0.4545 over the whole set)
        assert report["scores"]["overall"]["macro_f1"] == 1.0


def test_stp_labels_must_come_from_the_candidates(release: Path, tmp_path: Path) -> None:
    i = ids(release, "stp")
    path = write(tmp_path, [{"id": i[(SAMPLE_ID, 3)], "target_top3": ["Therapist", "Alan"]}])
    report = evaluate(release, "stp", path)
    assert report["problems"]["invalid"][0]["problems"] == [
        "target_top3: 'Therapist' is not one of ['Alan', 'Evelyn', 'Couple']"]
    assert report["scores"]["overall"]["recall_at_1"] == 0.0      # "Therapist" keeps rank 1 as a miss
    assert report["scores"]["overall"]["mrr"] == round(1 / 2 / 6, 4)  # Alan at rank 2, for 1 of 6 instances


def test_er_and_vp_with_the_offline_minilm_model(release: Path, tmp_path: Path) -> None:
    i = ids(release, "er")
    path = write(tmp_path, [
        {"id": i[(SAMPLE_ID, 6)], "predicted_internal_emotion": "feels mischaracterized",
         "predicted_intensity_score": 7},
        {"id": i[(SAMPLE_ID, 8)], "predicted_internal_emotion": "feels angry", "predicted_intensity_score": "4"},
    ])                                                           # row 9 missing
    report = evaluate(release, "er", path)
    overall = report["scores"]["overall"]
    assert overall["intensity_score"] == round((5 + 1 + 1) / 3, 4)     # 7 vs 7; 4 vs 8 -> max(1, 1); missing -> 1
    assert overall["intensity_exact"] == round(1 / 3, 4)
    assert 1 / 3 - 0.01 < overall["emotion_similarity"] < 2 / 3        # exact text ~1, the missing one 0
    assert "LLM judge" in report["text_similarity"] and report["similarity_model"]["version"] == "0.1.0"
    v = ids(release, "vp")
    path = write(tmp_path, [{"id": v[(SAMPLE_ID, 2)],
                             "predicted_viewpoints": [{"target": "Evelyn", "viewpoint": "she is never happy"}]}])
    vp = evaluate(release, "vp", path)["scores"]["overall"]
    assert vp["source_target_recall"] == 0.2                           # source filled with the speaker, Alan
    assert 0.19 < vp["viewpoint_similarity"] <= 0.2001


def test_a_release_that_does_not_match_its_manifest_is_refused(release: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "v1"
    shutil.copytree(release, copy)
    with (copy / "gold/itp.jsonl").open("a") as handle:
        handle.write("\n")
    with pytest.raises(RescueError, match="differs from the release manifest") as error:
        evaluate(copy, "itp", write(tmp_path, []))
    assert "rescue verify" in error.value.fix
    with pytest.raises(RescueError, match="unknown task"):
        evaluate(release, "xyz", write(tmp_path, []))
    with pytest.raises(RescueError, match=r"predictions file .* not found"):
        evaluate(release, "itp", tmp_path / "absent.jsonl")


def test_predictions_for_another_task_empty_or_one_array_are_refused(release: Path, tmp_path: Path) -> None:
    itp = [{"id": i, "should_speak": "yes"} for i in ids(release, "itp").values()]
    with pytest.raises(RescueError, match=rf"{len(itp)} of the {len(itp)} predictions .* not RPP instances") as error:
        evaluate(release, "rpp", write(tmp_path, itp))
    assert f"{len(itp)} of them are ITP instances: pass --task itp" == error.value.fix
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(RescueError, match="holds no predictions"):
        evaluate(release, "itp", empty)
    array = tmp_path / "array.json"
    array.write_text(json.dumps(itp, indent=2))
    with pytest.raises(RescueError, match="is one JSON array, not JSONL") as error:
        evaluate(release, "itp", array)
    assert "one JSON object per instance on its own line" in error.value.fix
    one_line = tmp_path / "one.jsonl"
    one_line.write_text(json.dumps(itp[0]) + "\n")  # a single prediction is valid JSONL
    assert evaluate(release, "itp", one_line)["problems"]["counts"]["valid"] == 1


def test_the_cli_exits_non_zero_on_predictions_for_another_task(release: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pipeline.cli import main

    path = write(tmp_path, [{"id": i, "should_speak": "no"} for i in ids(release, "itp").values()])
    result = CliRunner().invoke(main, ["evaluate", "--task", "rpp", "--predictions", str(path),
                                       "--release", str(release)])
    assert result.exit_code != 0 and "--task itp" in result.output
    fine = CliRunner().invoke(main, ["evaluate", "--task", "itp", "--predictions", str(path), "--release", str(release)])
    assert fine.exit_code == 0, fine.output
    counts = re.search(r"predictions: (\d+) line\(s\) = (\d+) valid \+ (\d+) invalid \+ (\d+) repeated \+ "
                       r"(\d+) unknown ids \+ (\d+) unreadable lines", fine.output)
    assert counts and int(counts[1]) == sum(map(int, counts.groups()[1:])) == len(ids(release, "itp"))
