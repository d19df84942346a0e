"""`rescue evaluate`: score a predictions file against a frozen release, per scenario and overall.

Metrics (spec section 4): ITP precision/recall/F1 of "yes" plus accuracy and balanced accuracy; RPP
accuracy (= recall@1), recall@2/3, MRR and top-1 macro-F1 over the labels present in gold or
predictions; STP/SSP recall@1/2/3 and MRR;
ER the intensity score max(1, 5 - |pred - gold|). ER/VP text is compared with the offline MiniLM model
(cosine similarity of sentence embeddings), and, when a judge model is given, graded by the paper's LLM
judge rubric (pipeline/tasks/judge.py): ER S_emo 1-5 and S_ER = (S_emo + S_int) / 2; VP source-target
0-2 + viewpoint 0-4 and the paper's 1-5. The report says which text scorer was used.

A model run (`rescue run-model`) also names the instances it got no usable answer for (`unanswered`):
they count as missing. In the video mode only the instances that take part in it are scored (`mode`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.instance_scores import instance_scores
from pipeline.tasks.instances import TASKS
from pipeline.tasks.judge import JudgeOptions, JudgeResult, judge_instances
from pipeline.tasks.manifest import read_listed_jsonl, read_manifest
from pipeline.tasks.metrics import mean
from pipeline.tasks.modes import VIDEO_MODE, canonical_mode, in_mode
from pipeline.tasks.predictions import check_predictions
from pipeline.tasks.registry import task_spec
from pipeline.tasks.stats import SCENARIOS

SIMILARITY_NOTE = ("text similarity = cosine of all-MiniLM-L6-v2 sentence embeddings (offline); the paper used an "
                   "LLM judge (1-5) and BERTScore, which are not reproduced here")

def load_task_files(release: Path, task: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Model-facing and gold records of one task, after checking both files against MANIFEST.json."""
    task_spec(task)  # an unknown task stops here, naming the known ones
    manifest = read_manifest(release)
    return (read_listed_jsonl(release, manifest, f"tasks/{task}.jsonl"),
            read_listed_jsonl(release, manifest, f"gold/{task}.jsonl"))


def _refuse_mostly_unknown(release: Path, task: str, predictions: Path, unknown: list[dict[str, Any]],
                           lines: int) -> None:
    """Most ids unknown means the wrong task or release, not a bad model: stop, and name the likely task."""
    if not unknown or len(unknown) * 2 <= lines:
        return
    wanted = {item["id"] for item in unknown}
    found = {}
    for other in TASKS:
        path = release / "tasks" / f"{other}.jsonl"
        if other != task and path.is_file():
            found[other] = sum(1 for line in path.read_text(encoding="utf-8").splitlines()
                               if line.strip() and json.loads(line).get("id") in wanted)
    likely = max(found, key=lambda t: found[t], default=None)
    hint = (f"{found[likely]} of them are {likely.upper()} instances: pass --task {likely}" if likely and found[likely]
            else f"check that the predictions answer {release}'s {task.upper()} task file (tasks/{task}.jsonl)")
    raise RescueError(f"{len(unknown)} of the {lines} predictions in {predictions} name ids that are not "
                      f"{task.upper()} instances of {release}", hint)


def _score(task: str, ids: list[str], usable: dict[str, dict], gold: dict[str, dict], inputs: dict[str, dict],
           similarity: dict[str, float] | None, judged: JudgeResult | None = None) -> dict[str, Any]:
    scoring = task_spec(task).scoring
    scores: dict[str, Any] = {"instances": len(ids), **scoring.score(ids, usable, gold, inputs)}
    if similarity is not None and scoring.text is not None:
        scores[scoring.text.similarity_metric] = mean([similarity[i] for i in ids])
    if judged is not None and scoring.text is not None:
        scores.update(scoring.text.judged(ids, usable, gold, judged))
    return scores


def _apply_unanswered(unanswered: list[dict[str, Any]], usable: dict[str, dict], scored: list[str]) -> dict[str, Any]:
    """Take the run's unanswered ids out of the usable answers (they count as missing) and count them by reason."""
    wanted = set(scored)
    listed = [u for u in unanswered if u["id"] in wanted]
    by_reason: dict[str, int] = {}
    for item in listed:
        by_reason[item["reason"]] = by_reason.get(item["reason"], 0) + 1
    also_predicted = [u["id"] for u in listed if u["id"] in usable]
    for pid in also_predicted:  # the run itself said this answer was unusable: its line is not scored
        usable.pop(pid)
    return {"count": len(listed), "by_reason": dict(sorted(by_reason.items())), "ids": listed,
            "also_in_predictions": also_predicted,
            "not_instances": [u["id"] for u in unanswered if u["id"] not in wanted]}


def _text_scorer(judge: JudgeOptions | None, text_similarity: bool) -> str:
    if judge is not None:
        return f"judge ({judge.settings.model})"
    return "similarity" if text_similarity else "none"


def evaluate(release: Path, task: str, predictions: Path, *, text_similarity: bool = True,
             judge: JudgeOptions | None = None, mode: str | None = None,
             unanswered: list[dict[str, Any]] | None = None, limit: int | None = None,
             per_instance: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Scores per scenario and overall, plus a precise account of every problem in the predictions.

    `mode`: the input mode of a model run; in the video mode only instances that take part in it are scored.
    `limit`: a run made with `--limit N` answered the task file's first N instances: only those are scored.
    `unanswered`: {"id", "reason"} of instances a run got no usable answer for (they count as missing;
    the predictions file may then be empty). `judge`: grade ER/VP text with an LLM judge. `per_instance`: a list
    to fill with each scored instance's answer, gold and scores (pipeline/tasks/instance_scores.py)."""
    inputs_list, gold_list = load_task_files(release, task)
    inputs = {r["id"]: r for r in inputs_list}
    gold = {r["id"]: r for r in gold_list}
    mode = canonical_mode(mode) if mode else None
    ids = [i for i in inputs if mode is None or in_mode(task, inputs[i], mode)]
    in_the_mode = len(ids)
    if limit:
        covered = {r["id"] for r in inputs_list[:limit]}
        ids = [i for i in ids if i in covered]
    spec = task_spec(task)
    check = check_predictions(spec.prediction.parse, predictions, inputs, allow_empty=unanswered is not None)
    _refuse_mostly_unknown(release, task, predictions, check.unknown_ids, check.lines)
    scored = set(ids)
    check.missing_ids = [i for i in check.missing_ids if i in scored]
    left_unanswered = _apply_unanswered(unanswered, check.usable, ids) if unanswered is not None else None
    text, rubric = spec.scoring.text, spec.scoring.judge
    similarity = text.similarities(ids, check.usable, gold) if text and text_similarity else None
    judged = judge_instances(rubric, ids, check.usable, gold, inputs, judge) if judge and rubric else None
    scopes: dict[str, Any] = {"overall": _score(task, ids, check.usable, gold, inputs, similarity, judged)}
    for scenario in SCENARIOS:
        chosen = [i for i in ids if gold[i]["scenario"] == scenario]
        if chosen:
            scopes[scenario] = _score(task, chosen, check.usable, gold, inputs, similarity, judged)
    if per_instance is not None:
        per_instance += instance_scores(task, ids, check.usable, gold, similarity, judged)
    report: dict[str, Any] = {"task": task, "release": str(release), "predictions": str(predictions),
                              "scores": scopes, "problems": check.summary(),
                              "scoring": "missing, repeated and unusable predictions count as wrong"}
    if mode is not None:
        report["mode"] = mode
        report["instances_in_mode"] = len(ids)
        report["left_out_by_mode"] = len(inputs) - len(ids)
        if mode == VIDEO_MODE and len(ids) < len(inputs):
            report["mode_note"] = (f"{len(inputs) - len(ids)} of the {len(inputs)} {task.upper()} instances have no "
                                   f"clip to attach and are not part of {VIDEO_MODE}: scored over the other {len(ids)}")
    if limit:
        report["limit"] = limit
        report["left_out_by_limit"] = in_the_mode - len(ids)
        report["limit_note"] = (f"a --limit {limit} run: scored over {len(ids)} of the {in_the_mode} instances "
                                "(the task file's first ones); not comparable with a run over the whole task")
    if left_unanswered is not None:
        report["unanswered"] = left_unanswered
    report.update(spec.scoring.notes)
    if text is not None:
        report["text_scorer"] = _text_scorer(judge, text_similarity)
        report["text_similarity"] = SIMILARITY_NOTE if text_similarity else "not computed (--no-similarity)"
        if text_similarity:
            from pipeline.text_similarity import model_info

            report["similarity_model"] = model_info()
        if judged is not None and judge is not None:
            report["judge"] = judged.describe(judge.settings)
    return report


SHORT = {"precision": "P(yes)", "recall": "R(yes)", "f1": "F1(yes)", "accuracy": "acc", "balanced_accuracy": "bal.acc",
         "recall_at_1": "R@1", "recall_at_2": "R@2", "recall_at_3": "R@3", "mrr": "MRR", "macro_f1": "macro-F1",
         "intensity_score": "S_int", "intensity_exact": "exact int.", "emotion_similarity": "text sim.",
         "source_target_recall": "src-tgt recall", "viewpoint_similarity": "text sim.", "er_score": "S_ER",
         "emotion_score": "S_emo (judge)", "viewpoint_total_score": "judge 0-6", "viewpoint_judge_score": "judge 1-5",
         "judge_unscored": "unjudged"}


def cell(value: Any) -> str:
    """A metric for a table: 4 decimals, counts as they are, `-` where there is none (nothing judged)."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.4f}"


def score_table(report: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header (short metric names) and rows, one per scope, of the headline metrics for a terminal table."""
    columns = [c for c in task_spec(report["task"]).scoring.headline if c in report["scores"]["overall"]]
    header = ["scope", "n", *(SHORT[c] for c in columns)]
    rows = [[scope, str(values["instances"]), *(cell(values[c]) for c in columns)]
            for scope, values in report["scores"].items()]
    return header, rows
