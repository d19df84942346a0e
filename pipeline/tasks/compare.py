"""Check a release's ER/VP instances against the published er.jsonl / vp.jsonl, at two levels.

Each rebuilt instance is turned into the published record (`pipeline.tasks.published_format`) and paired
with the published record of the same `instance_id`. Reported, each with its path
(`er/<instance_id>/gold_viewpoints[1].target`):

- value level: every value, type (3 is not 3.0, true is not 1), key and list item that differs, in the
  parsed JSON; records only in one file; an instance id (or a key in one object) given more than once, in
  either file: every copy is compared, none wins;
- byte level, for records equal in value: the rebuilt record serialised the way the published file
  serialises its records (key order, escaping, separators read from its own lines, `pipeline.tasks.json_style`)
  against the bytes of its line; plus blank lines, CRLF endings and a missing final newline.

What the release cannot rebuild (`clip_path`, `clip_duration_sec`) is listed as not compared: the key must be
present, its value is not compared (and is taken from the published line for the byte level).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.tasks.evaluate import load_task_files
from pipeline.tasks.json_style import FileStyle, detect_style, key_order_differences, line_styles, ordered, serialise
from pipeline.tasks.manifest import read_manifest
from pipeline.tasks.published_format import NOT_COMPARED, PUBLISHED_TASKS, published_record

ABSENT = "(absent)"
WHY_NOT_COMPARED = {
    False: "a text-only release has no clips",
    True: "the published clips are paths on the authors' machine with their cut's durations; the release's "
          "clips are its own files (release-relative paths, its own cut)",
}


class Difference(Record):
    path: str
    kind: str
    line: int | None = None  # the published file's line (None: the record is only in the release)
    rebuilt: Any = None
    published: Any = None


class ByteDifference(Record):
    path: str
    line: int
    why: str


class Duplicate(Record):
    path: str
    file: Literal["published", "rebuilt"]
    lines: tuple[int, ...]


class NotComparedKey(Record):
    key: str
    values: int
    why: str


class Comparison(Record):
    task: str
    release: str
    published: str
    counts: dict[str, int]
    identical: dict[str, bool]
    style: dict[str, Any]
    not_compared: tuple[NotComparedKey, ...]
    only_rebuilt: tuple[str, ...]
    only_published: tuple[str, ...]
    duplicates: tuple[Duplicate, ...]
    differences: tuple[Difference, ...]
    byte_differences: tuple[ByteDifference, ...]


class _Object(dict):  # type: ignore[type-arg]
    """A parsed JSON object that remembers keys its text gave more than once (json keeps only the last)."""

    repeated: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    out = _Object(pairs)
    counts = Counter(key for key, _ in pairs)
    out.repeated = tuple(key for key, n in counts.items() if n > 1)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> Any:
    """`value` for the report: JSON, with each not-compared value spelled out."""
    if value is NOT_COMPARED:
        return str(NOT_COMPARED)
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _same(mine: Any, theirs: Any) -> bool:
    if type(mine) is not type(theirs):
        return False
    return mine == theirs or (isinstance(mine, float) and math.isnan(mine) and math.isnan(theirs))  # NaN is NaN


class _Walk:
    """Every value-level difference between a rebuilt and a published record, by path inside the record."""

    def __init__(self) -> None:
        self.found: list[tuple[str, str, Any, Any]] = []
        self.skipped: Counter = Counter()

    def add(self, path: str, kind: str, mine: Any, theirs: Any) -> None:
        self.found.append((path, kind, _shown(mine), theirs))

    def walk(self, mine: Any, theirs: Any, path: str = "", kind: str = "") -> None:
        if mine is NOT_COMPARED:
            self.skipped[kind] += 1
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            for key in getattr(theirs, "repeated", ()):
                self.add(_join(path, key), "key given more than once in the published object", mine.get(key, ABSENT),
                         theirs[key])
            for key, value in mine.items():
                if key not in theirs:
                    self.add(_join(path, key), "key missing from the published record", value, ABSENT)
                else:
                    self.walk(value, theirs[key], _join(path, key), _join(kind, key))
            for key in theirs:
                if key not in mine:
                    self.add(_join(path, key), "key only in the published record", ABSENT, theirs[key])
        elif isinstance(mine, list) and isinstance(theirs, list):
            self._list(mine, theirs, path, kind)
        elif not _same(mine, theirs):
            self.add(path, "type" if type(mine) is not type(theirs) else "value", mine, theirs)

    def _list(self, mine: list[Any], theirs: list[Any], path: str, kind: str) -> None:
        if kind == "prior_context" and all(isinstance(r, dict) for r in [*mine, *theirs]):
            mine_rows, their_rows = [r.get("row_index") for r in mine], [r.get("row_index") for r in theirs]
            if mine_rows != their_rows:  # other rows altogether: name the rows, not every field of them
                self.add(path, "other context rows (row_index of each)", mine_rows, their_rows)
                return
        for n in range(max(len(mine), len(theirs))):
            if n < len(mine) and n < len(theirs):
                self.walk(mine[n], theirs[n], f"{path}[{n}]", f"{kind}[]")
            elif n < len(mine):
                self.add(f"{path}[{n}]", "item missing from the published list", mine[n], ABSENT)
            else:
                self.add(f"{path}[{n}]", "item only in the published list", ABSENT, theirs[n])


def _filled(mine: Any, theirs: Any) -> Any:
    """The rebuilt record with each not-compared value taken from the published one (for the byte level)."""
    if mine is NOT_COMPARED:
        return theirs
    if isinstance(mine, dict) and isinstance(theirs, dict):
        return {k: _filled(v, theirs.get(k)) for k, v in mine.items()}
    if isinstance(mine, list) and isinstance(theirs, list):
        return [_filled(a, b) for a, b in zip(mine, theirs)]
    return mine


def _why_bytes(expected: str | None, value: Any, text: str, filled: Any, style: FileStyle) -> str:
    if style.line is None or expected is None:
        return ("no line of the published file is what json.dumps writes (ensure_ascii true or false, separators "
                "', '/': ' or ','/':'), so its serialisation is unknown")
    reasons = []
    orders = key_order_differences(ordered(filled, style), value)
    if orders:
        reasons.append(f"key order of {', '.join(orders[:5])} differs from the file's other records")
    own = line_styles(value, text)
    if own and style.line not in own:
        reasons.append(f"written with {own[0].describe()}, the file's other lines with {style.line.describe()}")
    elif not own:
        same_order = json.dumps(value, ensure_ascii=style.line.ensure_ascii, separators=style.line.separators)
        at = next((n for n, (a, b) in enumerate(zip(same_order, text)) if a != b), min(len(same_order), len(text)))
        reasons.append(f"spelled otherwise from character {at}: {text[max(0, at - 15):at + 25]!r} where the "
                       f"file's way gives {same_order[max(0, at - 15):at + 25]!r}")
    return "; ".join(reasons)


def _read_published(path: Path, task: str) -> tuple[list[tuple[int, Any, str]], list[ByteDifference]]:
    """(line number, parsed value, line text) per record line, and the file-level byte findings."""
    try:
        data = path.read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise RescueError(f"{path} not found", f"pass the published {task}.jsonl") from exc
    except UnicodeDecodeError as exc:
        raise RescueError(f"{path} is not UTF-8 text ({exc})", f"pass the published {task}.jsonl unchanged") from exc
    lines = data.split("\n")
    findings = []
    if lines[-1] == "":
        lines.pop()
    elif data:
        findings.append(ByteDifference(path=f"{task}/line{len(lines)}", line=len(lines),
                                       why="no newline at the end of the file"))
    records = []
    for number, text in enumerate(lines, start=1):
        if text.endswith("\r"):
            findings.append(ByteDifference(path=f"{task}/line{number}", line=number, why="CRLF line ending"))
            text = text[:-1]
        if not text.strip():
            findings.append(ByteDifference(path=f"{task}/line{number}", line=number, why="blank line"))
            continue
        try:
            records.append((number, json.loads(text, object_pairs_hook=_object), text))
        except json.JSONDecodeError as exc:
            raise RescueError(f"{path} line {number} is not JSON ({exc})",
                              f"pass the published {task}.jsonl unchanged") from exc
    return records, findings


def _rebuilt(release: Path, task: str) -> tuple[dict[str, dict[str, Any]], list[Duplicate]]:
    """Published-format records of the release by instance id (the first of a repeated id), and repeats."""
    inputs, golds = load_task_files(release, task)
    if len(inputs) != len(golds) or any(r.get("id") != g.get("id") for r, g in zip(inputs, golds)):
        raise RescueError(f"{release}: tasks/{task}.jsonl and gold/{task}.jsonl do not hold the same ids line by line",
                          f"run `rescue verify {release}`, and freeze the release again")
    records: dict[str, dict[str, Any]] = {}
    lines: dict[str, list[int]] = {}
    for number, (record, gold) in enumerate(zip(inputs, golds), start=1):
        lines.setdefault(str(record.get("id")), []).append(number)
        records.setdefault(str(record.get("id")), published_record(task, record, gold))
    repeats = [Duplicate(path=f"{task}/{i}", file="rebuilt", lines=tuple(n)) for i, n in lines.items() if len(n) > 1]
    return records, repeats


def compare_released(release: Path, task: str, released_path: Path) -> Comparison:
    if task not in PUBLISHED_TASKS:
        raise RescueError(f"only ER and VP were published as task files, not {task!r}", "use --task er or --task vp")
    ours, duplicates = _rebuilt(release, task)
    records, byte_differences = _read_published(released_path, task)
    style = detect_style([(value, text) for _, value, text in records])
    differences: list[Difference] = []
    by_id: dict[str, list[int]] = {}
    skipped: Counter = Counter()
    value_identical = byte_identical = 0
    for number, value, text in records:
        instance_id = value.get("instance_id") if isinstance(value, dict) else None
        if not isinstance(instance_id, str):
            differences.append(Difference(path=f"{task}/line{number}", kind="published record without a string "
                                          "instance_id: pairs with nothing", line=number, published=value))
            continue
        by_id.setdefault(instance_id, []).append(number)
        if instance_id not in ours:
            continue
        walk = _Walk()
        walk.walk(ours[instance_id], value)
        skipped.update(walk.skipped)
        differences.extend(Difference(path=f"{task}/{instance_id}/{p}", kind=k, line=number, rebuilt=r, published=t)
                           for p, k, r, t in walk.found)
        if walk.found:
            continue
        value_identical += 1
        filled = _filled(ours[instance_id], value)
        expected = serialise(filled, style)
        if expected == text:
            byte_identical += 1
        else:
            byte_differences.append(ByteDifference(path=f"{task}/{instance_id}", line=number,
                                                   why=_why_bytes(expected, value, text, filled, style)))
    duplicates += [Duplicate(path=f"{task}/{i}", file="published", lines=tuple(n)) for i, n in by_id.items()
                   if len(n) > 1]
    only_rebuilt, only_published = sorted(set(ours) - set(by_id)), sorted(set(by_id) - set(ours))
    differences += [Difference(path=f"{task}/{i}", kind="record only in the release") for i in only_rebuilt]
    differences += [Difference(path=f"{task}/{i}", kind="record only in the published file", line=by_id[i][0])
                    for i in only_published]
    same_values = not differences and not duplicates
    media = bool(read_manifest(release).get("media"))
    return Comparison(
        task=task, release=str(release), published=str(released_path),
        counts={"rebuilt": len(ours), "published": len(records),
                "paired": sum(len(by_id[i]) for i in ours if i in by_id),
                "only_rebuilt": len(only_rebuilt), "only_published": len(only_published),
                "duplicates": len(duplicates), "value_identical": value_identical, "byte_identical": byte_identical,
                "value_differences": len(differences), "byte_differences": len(byte_differences)},
        identical={"values": same_values, "bytes": same_values and not byte_differences},
        style=style.as_json(),
        not_compared=tuple(NotComparedKey(key=k, values=n, why=WHY_NOT_COMPARED[media])
                           for k, n in sorted(skipped.items())),
        only_rebuilt=tuple(only_rebuilt), only_published=tuple(only_published), duplicates=tuple(duplicates),
        differences=tuple(differences), byte_differences=tuple(byte_differences))


__all__ = ["ByteDifference", "Comparison", "Difference", "Duplicate", "NotComparedKey", "compare_released"]
