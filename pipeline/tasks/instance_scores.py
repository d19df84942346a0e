"""Per-instance scores of one evaluation: what `rescue evaluate` averages, one instance at a time.

Each line holds the answer the scorer used (the usable part of the prediction, after the run's unanswered ids were
taken out: None when it counts as missing), the gold, the instance's scores by the same functions as the task's
figures (pipeline/tasks/metrics.py), and `correct`, a yes/no for filtering: ITP the answer equals the gold,
RPP/STP/SSP the gold label ranked first, ER the intensity exact, VP every gold (source, target) pair found.
ER/VP text similarity and judge grades are added when the evaluation computed them.
"""

from __future__ import annotations

from typing import Any

from pipeline.tasks.judge import JudgeResult
from pipeline.tasks.metrics import intensity_score, rank_metrics

GOLD_LABEL = {"rpp": "relation_label", "stp": "target_label", "ssp": "strategy_label"}


def _scores(task: str, answer: dict[str, Any] | None, gold: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    answer = answer or {}
    if task == "itp":
        right = answer.get("should_speak") == gold["should_speak"]
        return {"correct": float(right)}, right
    if task in GOLD_LABEL:
        ranks = rank_metrics(gold[GOLD_LABEL[task]], answer.get("ranking", []))
        return ranks, ranks["gold_rank"] == 1
    if task == "er":
        predicted = answer.get("intensity")
        exact = predicted == gold["intensity"]
        scores = {"intensity_score": intensity_score(predicted, gold["intensity"]), "intensity_exact": float(exact)}
        return scores, exact
    wanted = {(v["source"], v["target"]) for v in gold["viewpoints"]}
    found = {(v["source"], v["target"]) for v in answer.get("viewpoints", [])}
    recall = len(wanted & found) / len(wanted)
    return {"source_target_recall": recall}, recall == 1.0


def instance_scores(task: str, ids: list[str], usable: dict[str, dict[str, Any]], gold: dict[str, dict[str, Any]],
                    similarity: dict[str, float] | None, judged: JudgeResult | None) -> list[dict[str, Any]]:
    """One record per scored id, in the order given: {"id", "answer", "gold", "scores", "correct"}."""
    out = []
    for pid in ids:
        scores, correct = _scores(task, usable.get(pid), gold[pid]["gold"])
        if similarity is not None:
            scores["emotion_similarity" if task == "er" else "viewpoint_similarity"] = similarity[pid]
        if judged is not None and pid in judged.scores:
            scores["judge"] = judged.scores[pid]
        out.append({"id": pid, "answer": usable.get(pid), "gold": gold[pid]["gold"], "scores": scores,
                    "correct": correct})
    return out
