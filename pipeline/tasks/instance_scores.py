"""Per-instance scores of one evaluation: what `rescue evaluate` averages, one instance at a time.

Each line holds the answer the scorer used (the usable part of the prediction, after the run's unanswered ids were
taken out: None when it counts as missing), the gold, the instance's scores by the same functions as the task's
figures (each task's instance scorer in pipeline/tasks/scorers.py, named by the registry), and `correct`, a yes/no
for filtering: ITP the answer equals the gold, RPP/STP/SSP the gold label ranked first, ER the intensity exact,
VP every gold (source, target) pair found.
ER/VP text similarity and judge grades are added when the evaluation computed them.
"""

from __future__ import annotations

from typing import Any

from pipeline.tasks.judge import JudgeResult
from pipeline.tasks.registry import task_spec


def instance_scores(task: str, ids: list[str], usable: dict[str, dict[str, Any]], gold: dict[str, dict[str, Any]],
                    similarity: dict[str, float] | None, judged: JudgeResult | None) -> list[dict[str, Any]]:
    """One record per scored id, in the order given: {"id", "answer", "gold", "scores", "correct"}."""
    scoring = task_spec(task).scoring
    out = []
    for pid in ids:
        scores, correct = scoring.instance(usable.get(pid) or {}, gold[pid]["gold"])
        if similarity is not None and scoring.text is not None:
            scores[scoring.text.similarity_metric] = similarity[pid]
        if judged is not None and pid in judged.scores:
            scores["judge"] = judged.scores[pid]
        out.append({"id": pid, "answer": usable.get(pid), "gold": gold[pid]["gold"], "scores": scores,
                    "correct": correct})
    return out
