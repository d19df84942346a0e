"""How a JSONL file serialises its records, read from its own lines, so a rebuilt record can be written the
same way and compared byte for byte.

Three things decide a line's bytes for a given value: key order, escaping (`ensure_ascii`) and separators.
A line's escaping and separators are the `json.dumps` settings that reproduce it exactly; the file's are
the settings most of its lines use. Key order is read per kind of object (the path with list positions
dropped: ``""``, ``prior_context[]``, ``gold_viewpoints[]`` ...), the order most objects of that kind use.
Majorities, so that one changed line shows up as that line's difference, not as everybody else's.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

SEPARATORS = ((", ", ": "), (",", ":"), (",", ": "), (", ", ":"))
STYLES = tuple((ascii_only, seps) for ascii_only in (True, False) for seps in SEPARATORS)  # json.dumps's first


@dataclass(frozen=True)
class LineStyle:
    ensure_ascii: bool
    separators: tuple[str, str]

    def describe(self) -> str:
        return f"ensure_ascii={self.ensure_ascii}, separators={self.separators!r}"


@dataclass(frozen=True)
class FileStyle:
    line: LineStyle | None  # None: no line is what json.dumps writes with any of STYLES
    key_orders: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"ensure_ascii": self.line.ensure_ascii if self.line else None,
                "separators": list(self.line.separators) if self.line else None,
                "key_order": {kind or "(record)": list(keys) for kind, keys in sorted(self.key_orders.items())}}


def line_styles(value: Any, line: str) -> list[LineStyle]:
    """Every style with which json.dumps writes `value` (in its own key order) as exactly `line`."""
    return [LineStyle(a, s) for a, s in STYLES if json.dumps(value, ensure_ascii=a, separators=s) == line]


def _key_orders(value: Any, kind: str, out: dict[str, Counter]) -> None:
    if isinstance(value, dict):
        out[kind][tuple(value)] += 1
        for key, item in value.items():
            _key_orders(item, f"{kind}.{key}" if kind else key, out)
    elif isinstance(value, list):
        for item in value:
            _key_orders(item, f"{kind}[]", out)


def detect_style(lines: list[tuple[Any, str]]) -> FileStyle:
    """The file's style from its (parsed value, line text) pairs."""
    votes: Counter = Counter()
    orders: dict[str, Counter] = defaultdict(Counter)
    for value, text in lines:
        votes.update(line_styles(value, text))
        _key_orders(value, "", orders)
    best = max(votes.values(), default=0)
    line = next((LineStyle(a, s) for a, s in STYLES if votes[LineStyle(a, s)] == best), None) if best else None
    return FileStyle(line=line, key_orders={kind: c.most_common(1)[0][0] for kind, c in orders.items()})


def ordered(value: Any, style: FileStyle, kind: str = "") -> Any:
    """`value` with every object's keys in the file's order for its kind (unknown keys after, as they were)."""
    if isinstance(value, dict):
        order = {key: n for n, key in enumerate(style.key_orders.get(kind, ()))}
        keys = sorted(value, key=lambda k: order.get(k, len(order)))
        return {k: ordered(value[k], style, f"{kind}.{k}" if kind else k) for k in keys}
    if isinstance(value, list):
        return [ordered(item, style, f"{kind}[]") for item in value]
    return value


def serialise(value: Any, style: FileStyle) -> str | None:
    """`value` written as the file writes its records; None when the file's style is unknown."""
    if style.line is None:
        return None
    return json.dumps(ordered(value, style), ensure_ascii=style.line.ensure_ascii, separators=style.line.separators)


def key_order_differences(expected: Any, found: Any, path: str = "") -> list[str]:
    """Paths of the objects whose keys (the same set) come in another order in `found` than in `expected`."""
    out: list[str] = []
    if isinstance(expected, dict) and isinstance(found, dict):
        if list(expected) != list(found) and set(expected) == set(found):
            out.append(path or "(record)")
        for key in expected:
            if key in found:
                out.extend(key_order_differences(expected[key], found[key], f"{path}.{key}" if path else key))
    elif isinstance(expected, list) and isinstance(found, list):
        for n, (a, b) in enumerate(zip(expected, found)):
            out.extend(key_order_differences(a, b, f"{path}[{n}]"))
    return out


__all__ = ["FileStyle", "LineStyle", "detect_style", "key_order_differences", "line_styles", "ordered", "serialise"]
