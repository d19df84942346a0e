"""Placing annotations of rows that moved onto the current rows, by time overlap.

A row id is `<session>@<start ms>-<end ms>` (`records.row_id_for`), so re-segmenting a session changes
the ids of the rows that moved. An annotated row that is gone is placed on the row of the same session
that overlaps it most, when their intersection over union is at least MIN_IOU; each current row takes
at most one annotated row, the same id first. What finds no row comes back with the reason. Used both
for the stored sample annotations (corpus) and for live annotations on pull (annotate).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.records import Record
from pipeline.span import Span

MIN_IOU = 0.5
_SPAN = re.compile(r"^(?P<session>.+)@(?P<start>\d+)-(?P<end>\d+)$")


def span_of(row_id: str) -> tuple[str, float, float] | None:
    """(session, start, end) from a row id made by `row_id_for` (times in ms)."""
    match = _SPAN.match(row_id)
    if match is None:
        return None
    return match["session"], int(match["start"]) / 1000, int(match["end"]) / 1000


def iou(a: tuple[float, float], b: tuple[float, float]) -> float:
    """IoU of two (start, end) pairs, as `span_of` gives them."""
    return Span(*a).iou(Span(*b))


class Placement(Record):
    stored_row: str
    row_id: str
    iou: float


def anchor(stored_rows: Iterable[str], current_rows: Iterable[str]) -> tuple[list[Placement], list[tuple[str, str]]]:
    """Stored row ids -> current row ids of the same session: the same id, else the largest IoU >= 0.5.

    Each current row takes at most one stored row (exact matches first, then by IoU, largest first).
    Returns the placements and (stored row, reason) for each that found no row."""
    current = set(current_rows)
    placements = [Placement(stored_row=r, row_id=r, iou=1.0) for r in sorted(set(stored_rows)) if r in current]
    taken = {p.row_id for p in placements}
    candidates: list[tuple[float, str, str]] = []
    left: list[str] = []
    for stored in sorted(set(stored_rows) - taken):
        span = span_of(stored)
        left.append(stored)
        if span is None:
            continue
        for row in current - taken:
            other = span_of(row)
            if other is not None and other[0] == span[0]:
                score = iou(span[1:], other[1:])
                if score >= MIN_IOU:
                    candidates.append((score, stored, row))
    placed: set[str] = set()
    for score, stored, row in sorted(candidates, key=lambda c: (-c[0], c[1], c[2])):
        if stored in placed or row in taken:
            continue
        placements.append(Placement(stored_row=stored, row_id=row, iou=round(score, 3)))
        placed.add(stored)
        taken.add(row)
    problems = []
    for stored in left:
        if stored in placed:
            continue
        span = span_of(stored)
        if span is None:
            problems.append((stored, "not a row id with a time span"))
            continue
        scores = [(iou(span[1:], o[1:]), row) for row in current if (o := span_of(row)) and o[0] == span[0]]
        best = max(scores, default=(0.0, ""))
        problems.append((stored, f"no free row of the session overlaps it with IoU >= {MIN_IOU} (best: "
                                 f"{best[1] or 'none'}, IoU {best[0]:.2f})"))
    return placements, problems
