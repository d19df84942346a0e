"""Canonical JSON for frozen files: key order as built, UTF-8, no NaN, floats as Python's shortest repr
(the same float always prints the same digits), a newline after every line. Nothing here adds a time."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False)


def dumps(value: Any) -> str:
    """Same text as json.dumps(value, ensure_ascii=False); one shared encoder (a new one per call is slow)."""
    return _ENCODER.encode(value)


def context_lines(records: Iterable[dict[str, Any]], key: str = "prior_context") -> Iterator[str]:
    """JSON lines of records whose last key `key` lists shared row dicts, each row serialised once.

    Context rows repeat across the instances of a session (ER with full context: ~25 times each), so
    serialising every row once and splicing makes the same text as `dumps` in a fraction of the time.
    """
    memo: dict[int, str] = {}
    for record in records:
        if not record or next(reversed(record)) != key:
            yield dumps(record) + "\n"
            continue
        head = dumps({k: v for k, v in record.items() if k != key})
        rows = []
        for row in record[key]:
            text = memo.get(id(row))
            if text is None:
                text = memo[id(row)] = dumps(row)
            rows.append(text)
        yield f"{head[:-1]}, {dumps(key)}: [{', '.join(rows)}]}}\n"


def pretty_bytes(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, allow_nan=False, indent=2) + "\n").encode("utf-8")


def fixed(value: float, digits: int = 4) -> float:
    """A derived statistic rounded to fixed decimals, so tiny summation-order noise never reaches a file."""
    return round(float(value), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
