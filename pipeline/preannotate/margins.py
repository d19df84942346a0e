"""The margin between two ways of answering a field (a backend's drafts and the majority baseline, say) with a
bootstrap confidence interval over sessions: what `--evaluate` prints and what the gold-model's gate decides by.

Resampled unit: the session (sample), not the row. The question is whether drafts help on the next session;
rows of one session share its people, topic and annotators, so a row bootstrap would count a session's 25
correlated rows as 25 independent pieces of evidence and give intervals that are too narrow. A percentile
interval over few sessions is still optimistic (with 2 sessions it excludes 0 exactly when both sessions show
the gain), so a margin is called significant only with at least `min_sessions` sessions (GateSettings).

Each unit's answers are reduced to additive counts per session (a mean measure: the sum of row scores and the
row count; macro-F1: per label the true positives, predictions and gold rows), so a resample is a weighted
sum of those counts (weights: how often each session was drawn) and 1000 resamples of 7,000 rows take
milliseconds. Seeded: the same answers give the same interval.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from pipeline.records import Record


@dataclass(frozen=True)
class Tally:
    """One unit's answers as additive counts per session (rows of `counts`: sessions)."""

    kind: Literal["mean", "macro_f1"]
    counts: np.ndarray  # mean: (sessions, 2) sum, rows; macro_f1: (sessions, 3 * labels) tp, predicted, gold

    def rows_per_session(self) -> np.ndarray:
        if self.kind == "mean":
            return self.counts[:, 1]
        return self.counts[:, 2 * (self.counts.shape[1] // 3):].sum(axis=1)

    def value(self, weights: np.ndarray) -> np.ndarray:
        """The measure for each row of `weights` (resamples x sessions); NaN where a resample has no rows."""
        total = weights @ self.counts
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "mean":
                return np.where(total[:, 1] > 0, total[:, 0] / total[:, 1], np.nan)
            labels = self.counts.shape[1] // 3
            tp, predicted, gold = total[:, :labels], total[:, labels:2 * labels], total[:, 2 * labels:]
            precision = np.where(predicted > 0, tp / predicted, 0.0)
            recall = np.where(gold > 0, tp / gold, 0.0)
            f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
            present = (predicted + gold) > 0  # as macro_f1: labels nobody used or needed are left out
            n = present.sum(axis=1)
            return np.where(n > 0, (f1 * present).sum(axis=1) / np.maximum(n, 1), np.nan)


def mean_tally(scores: Sequence[float], sessions: Sequence[int], n_sessions: int) -> Tally:
    counts = np.zeros((n_sessions, 2))
    np.add.at(counts, (np.asarray(sessions, dtype=int), 0), np.asarray(scores, dtype=float))
    np.add.at(counts, (np.asarray(sessions, dtype=int), 1), 1.0)
    return Tally("mean", counts)


def label_tally(golds: Sequence[str], preds: Sequence[str | None], sessions: Sequence[int], n_sessions: int) -> Tally:
    labels = sorted({*golds, *(p for p in preds if p is not None)})
    index = {label: i for i, label in enumerate(labels)}
    n = len(labels)
    counts = np.zeros((n_sessions, 3 * n))
    for gold, pred, session in zip(golds, preds, sessions):
        counts[session, 2 * n + index[gold]] += 1
        if pred is not None:
            counts[session, n + index[pred]] += 1
            if pred == gold:
                counts[session, index[gold]] += 1
    return Tally("macro_f1", counts)


def combined(tallies: Sequence[Tally], weights: np.ndarray) -> np.ndarray:
    """The mean over units of each unit's measure (a field with several units: its items' keys, texts, ...)."""
    values = np.vstack([t.value(weights) for t in tallies])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample where no unit has rows: NaN, dropped below
        return np.nanmean(values, axis=0)


class Margin(Record):
    """a - b on one field or unit, with its bootstrap interval over sessions."""

    value: float | None = Field(description="a - b on all rows (None: no rows)")
    low: float | None = Field(description="lower bound of the bootstrap interval (None: fewer than 2 sessions)")
    high: float | None = None
    level: float = Field(0.95, description="the interval's confidence level")
    sessions: int = Field(description="sessions resampled (those with rows for the field)")
    rows: int = 0

    def significant(self, min_sessions: int) -> bool:
        """The interval lies above 0 and rests on enough sessions to mean it."""
        return self.sessions >= min_sessions and self.low is not None and self.low > 0

    def describe(self) -> str:
        if self.value is None:
            return "no rows"
        interval = "no interval" if self.low is None else f"{self.level:.0%} CI [{self.low:+.4f}, {self.high:+.4f}]"
        return f"{self.value:+.4f} ({interval}, {self.sessions} sessions, {self.rows} rows)"


def margin(a: Sequence[Tally], b: Sequence[Tally], rows: int, *, samples: int, seed: int, level: float) -> Margin:
    """a - b with a percentile interval from `samples` resamples of the sessions (with replacement). Sessions
    without rows for these units are left out before resampling."""
    if not a or not rows:
        return Margin(value=None, low=None, high=None, level=level, sessions=0, rows=rows)
    keep = np.flatnonzero(sum(t.rows_per_session() for t in (*a, *b)) > 0)
    a = [Tally(t.kind, t.counts[keep]) for t in a]
    b = [Tally(t.kind, t.counts[keep]) for t in b]
    n = len(keep)
    value = float((combined(a, np.ones((1, n))) - combined(b, np.ones((1, n))))[0])
    if n < 2:
        return Margin(value=round(value, 4), low=None, high=None, level=level, sessions=n, rows=rows)
    weights = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=samples).astype(float)
    diffs = combined(a, weights) - combined(b, weights)
    diffs = diffs[~np.isnan(diffs)]
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return Margin(value=round(value, 4), low=round(float(low), 4), high=round(float(high), 4), level=level,
                  sessions=n, rows=rows)


__all__ = ["Margin", "Tally", "combined", "label_tally", "margin", "mean_tally"]
