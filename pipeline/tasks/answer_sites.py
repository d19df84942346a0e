"""Where each task's answer lives, and which instances of a sample show it to each other.

Instances of one session share rows: an instance's context can hold the row that decides another instance
(who spoke after an ITP decision row; an STP row with its `target`). Shown together in one prompt, the
model reads the other's answer. Each task declares its `AnswerSite` in the task registry
(pipeline/tasks/registry.py): which row holds the answer (the row the instance names in `row_key`, plus
`row_offset`) and which fields of that row's record give it away. Everything else (the batcher, the audit of
each request, the release audit) derives from these declarations; nothing here names a task.

What an instance shows: every row record under `prior_context` / `current_turn`, and the instance itself
as the record of its own row when it carries `row_index` (ER/VP show the current row's fields at the top
level). `own_row_reveals`: what an instance's mere presence says about its own row (an ITP instance
exists only after a row that is not the therapist's), so a batch-mate at the answer row leaks it even
without context rows (context_size 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.tasks.modes import CONTEXT_KEYS


@dataclass(frozen=True)
class AnswerSite:
    row_key: str  # the instance field naming its row
    row_offset: int  # the answer's row = record[row_key] + row_offset
    revealing_fields: tuple[str, ...]  # fields of the answer row's record that show the answer
    own_row_reveals: tuple[str, ...] = ()  # fields of its own row that an instance's presence tells

    def describe(self) -> str:
        row = self.row_key + (f" + {self.row_offset}" if self.row_offset else "")
        return f"{row} ({' / '.join(self.revealing_fields)})"


@dataclass(frozen=True)
class Exposure:
    """One instance's answer row and what it shows: row index -> the fields shown of that row."""

    id: str
    answer_row: int | None
    shown: dict[int, frozenset[str]]


@dataclass(frozen=True, order=True)
class Leak:
    """`seer`'s prompt shows `owner`'s answer (row `row`); seer == owner: the instance sees its own answer."""

    seer: str
    owner: str
    row: int


def _row_index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def shown_rows(record: dict[str, Any]) -> Iterator[tuple[int, Iterable[str]]]:
    """(row index, field names) of every row record an instance shows, itself included when it is one."""
    own = _row_index(record.get("row_index"))
    if own is not None:
        yield own, (k for k in record if k not in CONTEXT_KEYS)
    for key in CONTEXT_KEYS:
        value = record.get(key)
        rows = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
        for row in rows:
            index = _row_index(row.get("row_index")) if isinstance(row, dict) else None
            if index is not None:
                yield index, row.keys()


def exposure(site: AnswerSite, record: dict[str, Any], id_key: str = "id") -> Exposure:
    shown: dict[int, set[str]] = {}
    for index, fields in shown_rows(record):
        shown.setdefault(index, set()).update(fields)
    own = _row_index(record.get(site.row_key))
    if own is not None and site.own_row_reveals:
        shown.setdefault(own, set()).update(site.own_row_reveals)
    answer = own + site.row_offset if own is not None else None
    return Exposure(str(record.get(id_key)), answer, {k: frozenset(v) for k, v in shown.items()})


def shows(site: AnswerSite, seer: Exposure, owner: Exposure) -> bool:
    fields = seer.shown.get(owner.answer_row) if owner.answer_row is not None else None
    return bool(fields and fields & set(site.revealing_fields))


def leaks_among(site: AnswerSite, exposures: Iterable[Exposure]) -> list[Leak]:
    """Every (seer, owner) of instances of ONE sample shown together, self-leaks included, sorted."""
    listed = list(exposures)
    owners: dict[int, list[Exposure]] = {}
    for item in listed:
        if item.answer_row is not None:
            owners.setdefault(item.answer_row, []).append(item)
    revealing = set(site.revealing_fields)
    found = [Leak(seer.id, owner.id, row) for seer in listed for row, fields in seer.shown.items()
             if row in owners and fields & revealing for owner in owners[row]]
    return sorted(found)
