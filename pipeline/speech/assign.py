"""Words -> diarization labels, by time overlap. Sorted sweep, so hours-long sessions stay fast."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from pipeline.records import Word
from pipeline.span import Span
from pipeline.speech.records import SpeakerTurn

FAR_SECONDS = 1.0  # a word further than this from every turn is counted in the warnings


def label_for_span(start: float, end: float, turns: Sequence[SpeakerTurn], starts: Sequence[float],
                   longest: float) -> tuple[str | None, float]:
    """The label overlapping [start, end] the most; if none overlaps, the nearest turn's label.
    Returns (label, distance to it in seconds; 0 when it overlaps)."""
    if not turns:
        return None, float("inf")
    high = bisect.bisect_right(starts, end)
    span = Span(start, end)
    overlap: dict[str, float] = {}
    nearest, distance = None, float("inf")
    index = high - 1
    while index >= 0 and turns[index].start >= start - longest - FAR_SECONDS:
        turn = turns[index]
        shared = span.overlap(turn)  # a word of no length inside a turn shares 0 s and still counts
        if shared > 0 or (end == start and turn.start <= start <= turn.end):
            overlap[turn.label] = overlap.get(turn.label, 0.0) + max(shared, 1e-9)
        gap = max(turn.start - end, start - turn.end, 0.0)
        if gap < distance:
            nearest, distance = turn.label, gap
        index -= 1
    if index >= 0 and nearest is None:  # nothing within reach: the last turn that started before
        nearest, distance = turns[index].label, max(start - turns[index].end, 0.0)
    if high < len(turns) and turns[high].start - end < distance:
        nearest, distance = turns[high].label, turns[high].start - end
    if overlap:
        return max(sorted(overlap), key=lambda label: overlap[label]), 0.0
    return nearest, distance


def assign_words(words: Sequence[Word], turns: Sequence[SpeakerTurn]) -> tuple[list[Word], int]:
    """Each word gets the label of the turn it overlaps most (else the nearest turn). Returns the words
    with `speaker_label` set and how many were further than FAR_SECONDS from any turn."""
    ordered = sorted(turns, key=lambda t: (t.start, t.end))
    starts = [t.start for t in ordered]
    longest = max((t.end - t.start for t in ordered), default=0.0)
    out, far = [], 0
    for word in words:
        label, distance = label_for_span(word.start, word.end, ordered, starts, longest)
        far += distance > FAR_SECONDS
        out.append(word.model_copy(update={"speaker_label": label}))
    return out, far


def others_overlap(start: float, end: float, label: str, turns: Sequence[SpeakerTurn]) -> float:
    """Seconds of [start, end] during which a turn of another label is active (overlapped speech)."""
    spans = sorted((max(start, t.start), min(end, t.end)) for t in turns
                   if t.label != label and t.end > start and t.start < end)
    total, reach = 0.0, start
    for lo, hi in spans:
        lo = max(lo, reach)
        if hi > lo:
            total += hi - lo
            reach = hi
    return total
