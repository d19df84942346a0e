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
from pipeline.tasks.instances import TASKS
from pipeline.tasks.judge import JudgeOptions, JudgeResult, judge_instances
from pipeline.tasks.metrics import binary_metrics, intensity_score, macro_f1, mean, rank_metrics
from pipeline.tasks.predictions import check_predictions
from pipeline.tasks.manifest import read_listed_jsonl, read_manifest
from pipeline.tasks.modes import VIDEO_MODE, canonical_mode, in_mode
from pipeline.tasks.stats import SCENARIOS

SIMILARITY_NOTE = ("text similarity = cosine of all-MiniLM-L6-v2 sentence embeddings (offline); the paper used an "
                   "LLM judge (1-5) and BERTScore, which are not reproduced here")

MACRO_F1_NOTE = ("macro-F1 averages top-1 F1 over the labels present in gold or predictions (scikit-learn's "
                 "macro average), not over labels nobody used")


def load_task_files(release: Path, task: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Model-facing and gold records of one task, after checking both files against MANIFEST.json."""
    if task not in TASKS:
        raise RescueError(f"unknown task {task!r}", f"use one of {', '.join(TASKS)}")
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


def _similarities(task: str, ids: list[str], usable: dict[str, dict], gold: dict[str, dict]) -> dict[str, float]:
    from pipeline import text_similarity

    if task == "er":
        pairs = [(usable.get(i, {}).get("emotion", ""), gold[i]["gold"]["internal_emotion"]) for i in ids]
        return dict(zip(ids, text_similarity.pairwise_similarity([p for p, _ in pairs], [g for _, g in pairs])))
    texts = sorted({v["viewpoint"] for i in ids for v in gold[i]["gold"]["viewpoints"]}
                   | {v["viewpoint"] for i in ids for v in usable.get(i, {}).get("viewpoints", [])})
    vectors = dict(zip(texts, text_similarity.embed(texts))) if texts else {}
    result = {}
    for i in ids:
        predicted = [vectors[v["viewpoint"]] for v in usable.get(i, {}).get("viewpoints", [])]
        best = [float(text_similarity.cosine(vectors[g["viewpoint"]], predicted).max()) if predicted else 0.0
                for g in gold[i]["gold"]["viewpoints"]]
        result[i] = sum(best) / len(best) if best else 0.0
    return result


def _judge_means(task: str, ids: list[str], usable: dict[str, dict], gold: dict[str, dict],
                 judged: JudgeResult) -> dict[str, Any]:
    """Means of the judge's scores over the ids it scored (None when it scored none); unscored ids are counted."""
    scored = [i for i in ids if i in judged.scores]
    grades = [judged.scores[i] for i in scored]
    out: dict[str, Any] = {"judge_scored": len(scored), "judge_unscored": len(ids) - len(scored)}

    def avg(values: list[float]) -> float | None:
        return mean(values) if values else None

    if task == "er":
        emotion = [g["emotion_score"] for g in grades]
        intensity = [intensity_score(usable.get(i, {}).get("intensity"), gold[i]["gold"]["intensity"]) for i in scored]
        out["emotion_score"] = avg(emotion)
        out["er_score"] = avg([(e + n) / 2 for e, n in zip(emotion, intensity)])
    else:
        out["source_target_score"] = avg([g["source_target_score"] for g in grades])
        out["viewpoint_score"] = avg([g["viewpoint_score"] for g in grades])
        out["viewpoint_total_score"] = avg([g["source_target_score"] + g["viewpoint_score"] for g in grades])
        out["viewpoint_judge_score"] = avg([g["overall_score"] for g in grades])
    return out


def _score(task: str, ids: list[str], usable: dict[str, dict], gold: dict[str, dict], inputs: dict[str, dict],
           similarity: dict[str, float] | None, judged: JudgeResult | None = None) -> dict[str, Any]:
    scores: dict[str, Any] = {"instances": len(ids)}
    if task == "itp":
        scores.update(binary_metrics([gold[i]["gold"]["should_speak"] for i in ids],
                                     [usable.get(i, {}).get("should_speak") for i in ids]))
    elif task in {"rpp", "stp", "ssp"}:
        key = {"rpp": "relation_label", "stp": "target_label", "ssp": "strategy_label"}[task]
        ranks = [rank_metrics(gold[i]["gold"][key], usable.get(i, {}).get("ranking", [])) for i in ids]
        for name in ("recall_at_1", "recall_at_2", "recall_at_3", "mrr"):
            scores[name] = mean([r[name] for r in ranks])
        if task == "rpp":
            scores["accuracy"] = scores["recall_at_1"]
            labels = list(dict.fromkeys(label for i in ids for label in inputs[i]["candidate_relation_labels"]))
            top1 = [(usable.get(i, {}).get("ranking") or [None])[0] for i in ids]
            scores.update(macro_f1([gold[i]["gold"][key] for i in ids], top1, labels))
            scores["macro_f1_labels"] = len(scores["per_label"])
    elif task == "er":
        predicted = [usable.get(i, {}).get("intensity") for i in ids]
        golds = [gold[i]["gold"]["intensity"] for i in ids]
        scores["intensity_score"] = mean([intensity_score(p, g) for p, g in zip(predicted, golds)])
        scores["intensity_exact"] = mean([float(p == g) for p, g in zip(predicted, golds)])
    else:
        recalls = []
        for i in ids:
            wanted = {(v["source"], v["target"]) for v in gold[i]["gold"]["viewpoints"]}
            found = {(v["source"], v["target"]) for v in usable.get(i, {}).get("viewpoints", [])}
            recalls.append(len(wanted & found) / len(wanted))
        scores["source_target_recall"] = mean(recalls)
    if similarity is not None:
        name = "emotion_similarity" if task == "er" else "viewpoint_similarity"
        scores[name] = mean([similarity[i] for i in ids])
    if judged is not None:
        scores.update(_judge_means(task, ids, usable, gold, judged))
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
             unanswered: list[dict[str, Any]] | None = None, limit: int | None = None) -> dict[str, Any]:
    """Scores per scenario and overall, plus a precise account of every problem in the predictions.

    `mode`: the input mode of a model run; in the video mode only instances that take part in it are scored.
    `limit`: a run made with `--limit N` answered the task file's first N instances: only those are scored.
    `unanswered`: {"id", "reason"} of instances a run got no usable answer for (they count as missing;
    the predictions file may then be empty). `judge`: grade ER/VP text with an LLM judge."""
    inputs_list, gold_list = load_task_files(release, task)
    inputs = {r["id"]: r for r in inputs_list}
    gold = {r["id"]: r for r in gold_list}
    mode = canonical_mode(mode) if mode else None
    ids = [i for i in inputs if mode is None or in_mode(task, inputs[i], mode)]
    in_the_mode = len(ids)
    if limit:
        covered = {r["id"] for r in inputs_list[:limit]}
        ids = [i for i in ids if i in covered]
    check = check_predictions(task, predictions, inputs, allow_empty=unanswered is not None)
    _refuse_mostly_unknown(release, task, predictions, check.unknown_ids, check.lines)
    scored = set(ids)
    check.missing_ids = [i for i in check.missing_ids if i in scored]
    left_unanswered = _apply_unanswered(unanswered, check.usable, ids) if unanswered is not None else None
    similarity = _similarities(task, ids, check.usable, gold) if task in {"er", "vp"} and text_similarity else None
    judged = judge_instances(task, ids, check.usable, gold, inputs, judge) if judge and task in {"er", "vp"} else None
    scopes: dict[str, Any] = {"overall": _score(task, ids, check.usable, gold, inputs, similarity, judged)}
    for scenario in SCENARIOS:
        chosen = [i for i in ids if gold[i]["scenario"] == scenario]
        if chosen:
            scopes[scenario] = _score(task, chosen, check.usable, gold, inputs, similarity, judged)
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
    if task == "rpp":
        report["macro_f1"] = MACRO_F1_NOTE
    if task in {"er", "vp"}:
        report["text_scorer"] = _text_scorer(judge, text_similarity)
        report["text_similarity"] = SIMILARITY_NOTE if text_similarity else "not computed (--no-similarity)"
        if text_similarity:
            from pipeline.text_similarity import model_info

            report["similarity_model"] = model_info()
        if judged is not None and judge is not None:
            report["judge"] = judged.describe(judge.settings)
    return report


HEADLINE = {
    "itp": ("precision", "recall", "f1", "accuracy", "balanced_accuracy"),
    "rpp": ("accuracy", "recall_at_2", "recall_at_3", "mrr", "macro_f1"),
    "stp": ("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
    "ssp": ("recall_at_1", "recall_at_2", "recall_at_3", "mrr"),
    "er": ("er_score", "emotion_score", "intensity_score", "intensity_exact", "emotion_similarity", "judge_unscored"),
    "vp": ("viewpoint_total_score", "viewpoint_judge_score", "source_target_recall", "viewpoint_similarity",
           "judge_unscored"),
}


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
    columns = [c for c in HEADLINE[report["task"]] if c in report["scores"]["overall"]]
    header = ["scope", "n", *(SHORT[c] for c in columns)]
    rows = [[scope, str(values["instances"]), *(cell(values[c]) for c in columns)]
            for scope, values in report["scores"].items()]
    return header, rows
