"""A time span in seconds, and how two spans meet (pyannote-core's `Segment`): the one place that computes
interval overlap and intersection over union, for rows, words, speaker turns, subtitle cues and script turns.

`overlap` and `iou` take anything with `start` and `end` (a `Span`, a row, a word, a turn), so hot loops
over records need not build a Span per record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class Timed(Protocol):
    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Span:
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start

    def overlap(self, other: Timed) -> float:
        """Seconds both spans cover (0 when they are apart or only touch)."""
        return max(0.0, min(self.end, other.end) - max(self.start, other.start))

    def iou(self, other: Timed) -> float:
        """Intersection over union (0 for two empty spans at one point)."""
        union = max(self.end, other.end) - min(self.start, other.start)
        return self.overlap(other) / union if union > 0 else 0.0
