"""Each task's own scoring (spec section 4), over the ids of one scope: `rescue evaluate` (pipeline/tasks/
evaluate.py) adds the common parts (instance count, text similarity, judge means) and the task registry
(pipeline/tasks/registry.py) names which scorer each task uses.

A scorer takes (ids, usable answers by id, gold records by id, model-facing records by id) and returns the
metrics in the order scores.json keeps them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.tasks.judge import JudgeResult
from pipeline.tasks.metrics import binary_metrics, intensity_score, macro_f1, mean, rank_metrics

Answers = dict[str, dict[str, Any]]
Scorer = Callable[[list[str], Answers, Answers, Answers], dict[str, Any]]


def score_should_speak(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    return binary_metrics([gold[i]["gold"]["should_speak"] for i in ids],
                          [usable.get(i, {}).get("should_speak") for i in ids])


@dataclass(frozen=True)
class RankScorer:
    """Recall@1/2/3 and MRR of the ranking against the gold label `gold_key`; with `candidates`, also
    accuracy (= recall@1) and top-1 macro-F1 over the candidate labels (RPP)."""

    gold_key: str
    candidates: str | None = None

    def __call__(self, ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
        key = self.gold_key
        ranks = [rank_metrics(gold[i]["gold"][key], usable.get(i, {}).get("ranking", [])) for i in ids]
        scores = {name: mean([r[name] for r in ranks]) for name in ("recall_at_1", "recall_at_2", "recall_at_3",
                                                                     "mrr")}
        if self.candidates is not None:
            scores["accuracy"] = scores["recall_at_1"]
            labels = list(dict.fromkeys(label for i in ids for label in inputs[i][self.candidates]))
            top1 = [(usable.get(i, {}).get("ranking") or [None])[0] for i in ids]
            scores.update(macro_f1([gold[i]["gold"][key] for i in ids], top1, labels))
            scores["macro_f1_labels"] = len(scores["per_label"])
        return scores


def score_intensity(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    predicted = [usable.get(i, {}).get("intensity") for i in ids]
    golds = [gold[i]["gold"]["intensity"] for i in ids]
    return {"intensity_score": mean([intensity_score(p, g) for p, g in zip(predicted, golds)]),
            "intensity_exact": mean([float(p == g) for p, g in zip(predicted, golds)])}


def score_source_target(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    recalls = []
    for i in ids:
        wanted = {(v["source"], v["target"]) for v in gold[i]["gold"]["viewpoints"]}
        found = {(v["source"], v["target"]) for v in usable.get(i, {}).get("viewpoints", [])}
        recalls.append(len(wanted & found) / len(wanted))
    return {"source_target_recall": mean(recalls)}


def emotion_similarities(ids: list[str], usable: Answers, gold: Answers) -> dict[str, float]:
    from pipeline import text_similarity  # loads the sentence-embedding model: only when text is scored

    pairs = [(usable.get(i, {}).get("emotion", ""), gold[i]["gold"]["internal_emotion"]) for i in ids]
    return dict(zip(ids, text_similarity.pairwise_similarity([p for p, _ in pairs], [g for _, g in pairs])))


def viewpoint_similarities(ids: list[str], usable: Answers, gold: Answers) -> dict[str, float]:
    from pipeline import text_similarity  # loads the sentence-embedding model: only when text is scored

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


def _avg(values: list[float]) -> float | None:
    return mean(values) if values else None


def emotion_judge_means(scored: list[str], grades: list[dict[str, int]], usable: Answers,
                        gold: Answers) -> dict[str, Any]:
    emotion = [g["emotion_score"] for g in grades]
    intensity = [intensity_score(usable.get(i, {}).get("intensity"), gold[i]["gold"]["intensity"]) for i in scored]
    return {"emotion_score": _avg(emotion), "er_score": _avg([(e + n) / 2 for e, n in zip(emotion, intensity)])}


def viewpoint_judge_means(scored: list[str], grades: list[dict[str, int]], usable: Answers,
                          gold: Answers) -> dict[str, Any]:
    return {"source_target_score": _avg([g["source_target_score"] for g in grades]),
            "viewpoint_score": _avg([g["viewpoint_score"] for g in grades]),
            "viewpoint_total_score": _avg([g["source_target_score"] + g["viewpoint_score"] for g in grades]),
            "viewpoint_judge_score": _avg([g["overall_score"] for g in grades])}


@dataclass(frozen=True)
class TextScoring:
    """How a free-text task (ER/VP) is scored beyond its formula: offline similarity and the LLM judge."""

    similarity_metric: str  # the scores.json key of the mean similarity
    similarities: Callable[[list[str], Answers, Answers], dict[str, float]]
    judge_means: Callable[[list[str], list[dict[str, int]], Answers, Answers], dict[str, Any]]

    def judged(self, ids: list[str], usable: Answers, gold: Answers, judged: JudgeResult) -> dict[str, Any]:
        """Means of the judge's scores over the ids it scored (None when it scored none); unscored ids are
        counted."""
        scored = [i for i in ids if i in judged.scores]
        grades = [judged.scores[i] for i in scored]
        return {"judge_scored": len(scored), "judge_unscored": len(ids) - len(scored),
                **self.judge_means(scored, grades, usable, gold)}
