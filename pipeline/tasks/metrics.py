"""Scoring functions of the six tasks, pure and small (spec section 4). A missing or unusable
prediction is passed in as None / an empty ranking and scores as wrong."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.tasks.jsonio import fixed


def rank_metrics(gold: str, ranking: Sequence[str], depth: int = 3) -> dict[str, float]:
    """gold_rank (0 = absent from the top `depth`), recall@1..3 and reciprocal rank (released rank_metrics)."""
    top = list(ranking)[:depth]
    rank = top.index(gold) + 1 if gold in top else 0
    return {"gold_rank": rank, "recall_at_1": float(rank == 1), "recall_at_2": float(1 <= rank <= 2),
            "recall_at_3": float(1 <= rank <= 3), "mrr": 1.0 / rank if rank else 0.0}


def mean(values: Sequence[float]) -> float:
    return fixed(sum(values) / len(values)) if values else 0.0


def _ratio(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def binary_metrics(golds: Sequence[str], preds: Sequence[str | None], positive: str = "yes") -> dict[str, float | int]:
    """Precision/recall/F1 of the positive class over all instances, plus the negative class, accuracy and
    balanced accuracy. A None prediction counts as the wrong class. Rounded only at the end."""
    tp = fp = tn = fn = 0
    for gold, pred in zip(golds, preds, strict=True):
        said_yes = pred == positive if pred is not None else gold != positive
        if gold == positive:
            tp, fn = tp + said_yes, fn + (not said_yes)
        else:
            fp, tn = fp + said_yes, tn + (not said_yes)
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    precision_no, recall_no = _ratio(tn, tn + fn), _ratio(tn, tn + fp)
    rates = {
        "precision": precision, "recall": recall, "f1": _f1(precision, recall),
        "precision_no": precision_no, "recall_no": recall_no, "f1_no": _f1(precision_no, recall_no),
        "accuracy": _ratio(tp + tn, len(golds)), "balanced_accuracy": (recall + recall_no) / 2,
    }
    return {**{k: fixed(v) for k, v in rates.items()}, "tp": tp, "fp": fp, "tn": tn, "fn": fn}


def macro_f1(golds: Sequence[str], preds: Sequence[str | None], order: Sequence[str]) -> dict:
    """Top-1 precision/recall/F1 per label and their mean, over the labels present in gold or predictions
    (as scikit-learn's macro average does: a label nobody used or needed would add an F1 of 0 for nothing).
    `order` lists the label set in the order to report; labels outside it are ignored (invalid answers)."""
    present = set(golds) | {p for p in preds if p is not None}
    raw = {}
    for label in (label for label in order if label in present):
        tp = sum(1 for g, p in zip(golds, preds) if g == label and p == label)
        predicted = sum(1 for p in preds if p == label)
        support = sum(1 for g in golds if g == label)
        precision, recall = _ratio(tp, predicted), _ratio(tp, support)
        raw[label] = (precision, recall, _f1(precision, recall), support)
    n = len(raw) or 1
    return {"macro_precision": fixed(sum(v[0] for v in raw.values()) / n),
            "macro_recall": fixed(sum(v[1] for v in raw.values()) / n),
            "macro_f1": fixed(sum(v[2] for v in raw.values()) / n),
            "per_label": {label: {"precision": fixed(p), "recall": fixed(r), "f1": fixed(f), "support": support}
                          for label, (p, r, f, support) in raw.items()}}


def intensity_score(pred: int | None, gold: int) -> int:
    """max(1, 5 - |pred - gold|) (the paper's S_int); a missing prediction gets the floor, 1."""
    return 1 if pred is None else max(1, 5 - abs(pred - gold))
