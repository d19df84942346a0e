"""Each task's own scoring (spec section 4), over the ids of one scope: `rescue evaluate` (pipeline/tasks/
evaluate.py) adds the common parts (instance count, text similarity, judge means) and the task registry
(pipeline/tasks/registry.py) names which scorer each task uses.

A scorer takes (ids, usable answers by id, gold records by id, model-facing records by id) and returns the
metrics in the order scores.json keeps them. An instance scorer takes one usable answer ({} when there is none)
and its gold, and returns that instance's scores and whether it counts as right (sample_scores.jsonl's
`correct`): the averaged metrics are the means of the instance scores, so the two cannot disagree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.tasks.judge import JudgeResult
from pipeline.tasks.metrics import binary_metrics, intensity_score, macro_f1, mean, rank_metrics

Answers = dict[str, dict[str, Any]]
Scorer = Callable[[list[str], Answers, Answers, Answers], dict[str, Any]]
InstanceScorer = Callable[[dict[str, Any], dict[str, Any]], tuple[dict[str, float], bool]]


def should_speak_instance(answer: dict[str, Any], gold: dict[str, Any]) -> tuple[dict[str, float], bool]:
    right = answer.get("should_speak") == gold["should_speak"]
    return {"correct": float(right)}, right


def score_should_speak(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    return binary_metrics([gold[i]["gold"]["should_speak"] for i in ids],
                          [usable.get(i, {}).get("should_speak") for i in ids])


@dataclass(frozen=True)
class RankScorer:
    """Recall@1/2/3 and MRR of the ranking against the gold label `gold_key`; with `candidates`, also
    accuracy (= recall@1) and top-1 macro-F1 over the candidate labels (RPP)."""

    gold_key: str
    candidates: str | None = None

    def instance(self, answer: dict[str, Any], gold: dict[str, Any]) -> tuple[dict[str, float], bool]:
        """Right: the gold label ranked first."""
        ranks = rank_metrics(gold[self.gold_key], answer.get("ranking", []))
        return ranks, ranks["gold_rank"] == 1

    def __call__(self, ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
        key = self.gold_key
        ranks = [self.instance(usable.get(i, {}), gold[i]["gold"])[0] for i in ids]
        scores = {name: mean([r[name] for r in ranks]) for name in ("recall_at_1", "recall_at_2", "recall_at_3",
                                                                     "mrr")}
        if self.candidates is not None:
            scores["accuracy"] = scores["recall_at_1"]
            labels = list(dict.fromkeys(label for i in ids for label in inputs[i][self.candidates]))
            top1 = [(usable.get(i, {}).get("ranking") or [None])[0] for i in ids]
            scores.update(macro_f1([gold[i]["gold"][key] for i in ids], top1, labels))
            scores["macro_f1_labels"] = len(scores["per_label"])
        return scores


def _means(instance: InstanceScorer, ids: list[str], usable: Answers, gold: Answers,
           names: tuple[str, ...]) -> dict[str, Any]:
    scores = [instance(usable.get(i, {}), gold[i]["gold"])[0] for i in ids]
    return {name: mean([s[name] for s in scores]) for name in names}


def intensity_instance(answer: dict[str, Any], gold: dict[str, Any]) -> tuple[dict[str, float], bool]:
    """Right: the intensity exact."""
    predicted = answer.get("intensity")
    exact = predicted == gold["intensity"]
    return {"intensity_score": intensity_score(predicted, gold["intensity"]), "intensity_exact": float(exact)}, exact


def score_intensity(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    return _means(intensity_instance, ids, usable, gold, ("intensity_score", "intensity_exact"))


def source_target_instance(answer: dict[str, Any], gold: dict[str, Any]) -> tuple[dict[str, float], bool]:
    """Right: every gold (source, target) pair found."""
    wanted = {(v["source"], v["target"]) for v in gold["viewpoints"]}
    found = {(v["source"], v["target"]) for v in answer.get("viewpoints", [])}
    recall = len(wanted & found) / len(wanted)
    return {"source_target_recall": recall}, recall == 1.0


def score_source_target(ids: list[str], usable: Answers, gold: Answers, inputs: Answers) -> dict[str, Any]:
    return _means(source_target_instance, ids, usable, gold, ("source_target_recall",))


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
