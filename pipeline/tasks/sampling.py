"""Sampling rules of the released scripts, as small pure functions over sequences.

Both samplers take positions round(r * (n - 1) / (limit - 1)) for r = 0 .. limit - 1, drop repeats and
top up from the start in original order. Python's round() sends halves to the even integer (round(2.5)
== 2), which decides some positions, so it is used on purpose. They differ only at limit == 1:
ER/VP's `pick_evenly` takes the first item, ITP's `even_sample` the middle one (spec 6.16).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def even_positions(n: int, limit: int) -> list[int]:
    """Indices (0-based, sorted by rank) chosen from n items for `limit` slots, before de-duplication."""
    return [round(rank * (n - 1) / (limit - 1)) for rank in range(limit)]


def _spread(items: Sequence[T], limit: int) -> list[T]:
    chosen: list[int] = []
    for position in even_positions(len(items), limit):
        if position not in chosen:
            chosen.append(position)
    for position in range(len(items)):
        if len(chosen) >= limit:
            break
        if position not in chosen:
            chosen.append(position)
    return [items[i] for i in chosen[:limit]]


def pick_evenly(items: Sequence[T], limit: int) -> list[T]:
    """ER/VP checkpoint picking: all items if limit <= 0 or n <= limit; limit 1 -> the first item."""
    if limit <= 0 or len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    return _spread(items, limit)


def even_sample(items: Sequence[T], limit: int) -> list[T]:
    """ITP class sampling: all items if limit <= 0 or n <= limit; limit 1 -> the middle item (n // 2)."""
    if limit <= 0 or len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[len(items) // 2]]
    return _spread(items, limit)


def early_cutoff(total_rows: int, fraction: float) -> int:
    """Rows dropped from the start before ER checkpoints: min(R - 1, ceil(R * fraction)); 0 for R <= 1.

    Candidates need row_index >= drop + 1, i.e. they lie in the last (1 - fraction) of the sample.
    """
    if total_rows <= 1:
        return 0
    return min(total_rows - 1, math.ceil(total_rows * fraction))
