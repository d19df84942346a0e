"""Several exports -> one set of records: the latest save of an annotator's answer to a row counts.

Within one project `parse` keeps a user's latest annotation of a task. Across projects the same can
happen only when a server holds both an annotator's own project and the shared project of older pushes
with an answer of theirs to the same row: then, too, the later save counts, and the older is named.
Annotation ids are unique across the whole server, so they identify what to drop.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pipeline.annotate.parse import ExportParse

Key = TypeVar("Key", bound=Hashable)


@dataclass
class Merged:
    lines: list[str] = field(default_factory=list)  # record JSON lines, sorted by session, row, annotator, field
    keys: list[tuple[Any, ...]] = field(default_factory=list)  # each line's sort key
    records: dict[Hashable, int] = field(default_factory=dict)  # export key -> records it gave after merging
    detail: dict[Hashable, list[str]] = field(default_factory=dict)  # export key -> its annotations a later
    # save in another project replaced, one line each


def merge_latest(parsed: Mapping[Key, ExportParse]) -> Merged:
    merged = Merged(records={key: 0 for key in parsed}, detail={key: [] for key in parsed})
    best: dict[tuple[str, str], tuple[str, int, int, Key]] = {}
    dropped: set[int] = set()
    for key, result in parsed.items():
        for (row_id, annotator), (updated, annotation_id, task_id) in result.kept.items():
            mine = (updated, annotation_id, task_id, key)
            other = best.get((row_id, annotator))
            if other is None:
                best[(row_id, annotator)] = mine
                continue
            newer, older = (mine, other) if (updated, annotation_id) > other[:2] else (other, mine)
            best[(row_id, annotator)] = newer
            dropped.add(older[1])
            merged.detail[older[3]].append(
                f"task {older[2]}: {annotator} saved annotation {older[1]} of row {row_id} here and later "
                f"{newer[1]} in another project (task {newer[2]}); {newer[1]} counts")
    pairs = []
    for key, result in parsed.items():
        kept = [pair for pair in result.records if pair[0][-1] not in dropped]
        merged.records[key] = len(kept)
        pairs += kept
    pairs.sort(key=lambda pair: pair[0])
    merged.keys = [key for key, _ in pairs]
    merged.lines = [line for _, line in pairs]
    return merged
