"""Which field holds a row's relation label: one rule for freeze (RPP gold) and for pre-annotation.

Released samples keep the label in `relation_cycle_state` on most rows, but some rows (and whole family
samples) leave the state empty and set only `relation_pattern` on therapist rows. Per row, the first of
`fields` (setting `rpp.label_fields`, state first) whose value is non-empty supplies the label; "" (no
clear pattern) is never an answer of its own when a later field holds one.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.benchmark_format import BenchmarkRow

DEFAULT_FIELDS = ("relation_cycle_state", "relation_pattern")


def relation_label(row: BenchmarkRow, fields: Sequence[str] = DEFAULT_FIELDS) -> tuple[str, str]:
    """(label, field it came from) for one row; ("", "") when none of `fields` holds a non-empty value."""
    for name in fields:
        value = str(getattr(row, name) or "").strip()
        if value:
            return value, name
    return "", ""


__all__ = ["DEFAULT_FIELDS", "relation_label"]
