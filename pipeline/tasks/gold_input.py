"""Gold sessions in the released `benchmark.jsonl` format: reading, and checking against the schema.

Structural problems (not JSON, wrong types, unknown keys, repeated samples, rows out of order) are
errors: nothing is built from such a file. Departures from the schema's label sets and entity set are
warnings, because the published file has some (e.g. strategy types outside the taxonomy, spec 6.9) and
the task builders filter them; `strict=True` turns warnings into errors. Every problem names the line,
the sample, the row and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean, parse_intensity

MAX_LISTED = 12
_TYPE_TAGS = {"int", "float", "str", "bool", "none", "list", "dict"}


class NoGoldYet(RescueError):
    """The gold file is there but holds no session: nothing to freeze yet (the build waits)."""


@dataclass(frozen=True)
class GoldProblem:
    severity: Literal["error", "warning"]
    line: int | None
    sample_id: str
    row: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line else []
        where.append(self.sample_id or "?")
        if self.row is not None:
            where.append(f"row {self.row}")
        return f"{' '.join(where)} {self.field}: {self.message}"


def _field_path(loc: Sequence[int | str]) -> tuple[int | None, str]:
    """('rows', 3, 'internal_emotion', 0, 'intensity') -> (row 4, 'internal_emotion[0].intensity')."""
    row = None
    # A union field (e.g. intensity: int | float | str | None) adds the tried type as a last part.
    parts = [p for p in loc if not (isinstance(p, str) and (p in _TYPE_TAGS or "[" in p))]
    if len(parts) >= 2 and parts[0] == "rows" and isinstance(parts[1], int):
        row, parts = parts[1] + 1, parts[2:]
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return row, text or "record"


def _non_finite(value: object, loc: tuple[int | str, ...] = ()) -> Iterator[tuple[tuple[int | str, ...], float]]:
    """Where `value` holds NaN or an infinity (Python's json reads `NaN`, `Infinity` and `1e309` as floats;
    JSON itself has no such numbers, and no release file may hold one)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield loc, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, (*loc, str(key)))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _non_finite(item, (*loc, n))


def parse_session_line(text: str, line: int) -> tuple[BenchmarkSession | None, list[GoldProblem]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [GoldProblem("error", line, "", None, "line", f"not JSON ({exc.msg} at column {exc.colno})")]
    sample_id = str(data.get("sample_id", "")) if isinstance(data, dict) else ""
    not_numbers = [GoldProblem("error", line, sample_id, *_field_path(loc), f"{value} is not a finite number "
                               "(NaN, Infinity or a number too large for a float): JSON has no such value")
                   for loc, value in _non_finite(data)]
    if not_numbers:
        return None, not_numbers
    try:
        return BenchmarkSession.model_validate(data), []
    except ValidationError as exc:
        problems: dict[tuple[int | None, str], GoldProblem] = {}
        for err in exc.errors():
            row, field = _field_path(err["loc"])
            message = err["msg"].removeprefix("Value error, ")
            problems.setdefault((row, field), GoldProblem("error", line, sample_id, row, field, message))
        return None, list(problems.values())


def check_session(session: BenchmarkSession, schema: AnnotationSchema, line: int | None = None) -> list[GoldProblem]:
    """Order and label-set checks of one parsed session (see the module doc for error vs warning)."""
    problems: list[GoldProblem] = []
    sid, scenario = session.sample_id, session.scenario

    def add(severity: Literal["error", "warning"], row: int | None, field: str, message: str) -> None:
        problems.append(GoldProblem(severity, line, sid, row, field, message))

    if not session.rows:
        add("error", None, "rows", "the session has no rows")
    therapist, group = schema.therapist, schema.group_labels[scenario]
    entities = {*(clean(p) for p in session.participants), therapist, group}
    utterance_types = set(schema.labels("utterance_type", scenario))
    strategies = set(schema.labels("support_strategy", scenario))
    relations = set(schema.labels("relation_pattern", scenario))
    numbered = True
    for position, row in enumerate(session.rows, start=1):
        n = row.row_index
        if n != position and numbered:  # one report per session: every later row would repeat it
            add("error", position, "row_index", f"is {n}, expected {position} (rows are numbered 1, 2, ... in order)")
            numbered = False
        if row.end_time <= row.start_time:
            add("warning", n, "end_time", f"{row.end_time} is not after start_time {row.start_time}")
        speaker = clean(row.primary_speaker)
        if speaker not in entities:
            add("warning", n, "primary_speaker", f"{speaker!r} is not a participant, {therapist} or {group}")
        for name in row.target:
            if clean(name) not in entities:
                add("warning", n, "target", f"{name!r} is not a participant, {therapist} or {group}")
        if speaker in {clean(t) for t in row.target}:
            add("warning", n, "target", f"contains the speaker {speaker!r}")
        if row.utterance_type and row.utterance_type not in utterance_types:
            add("warning", n, "utterance_type", f"{row.utterance_type!r} is not in the utterance_type label set")
        for i, item in enumerate(row.internal_emotion):
            if parse_intensity(item.intensity) is None:
                add("warning", n, f"internal_emotion[{i}].intensity", f"{item.intensity!r} is not a number in 0-10")
        for i, item in enumerate(row.support_strategy):
            if item.strategy_type and item.strategy_type not in strategies:
                add("warning", n, f"support_strategy[{i}].strategy_type",
                    f"{item.strategy_type!r} is not in the {scenario} support_strategy set")
        for name in ("relation_cycle_state", "relation_pattern"):
            value = getattr(row, name)
            if value and value not in relations:
                add("warning", n, name, f"{value!r} is not in the {scenario} relation_pattern set")
    return problems


def check_sessions(sessions: Iterable[BenchmarkSession], schema: AnnotationSchema,
                   lines: Sequence[int | None] | None = None) -> list[GoldProblem]:
    problems: list[GoldProblem] = []
    first_line: dict[str, int | None] = {}
    for i, session in enumerate(sessions):
        line = lines[i] if lines else None
        if session.sample_id in first_line:
            seen = first_line[session.sample_id]
            problems.append(GoldProblem("error", line, session.sample_id, None, "sample_id",
                                        f"repeats the sample of line {seen}" if seen else "repeats an earlier sample"))
            continue
        first_line[session.sample_id] = line
        problems.extend(check_session(session, schema, line))
    return problems


def raise_for_errors(problems: Sequence[GoldProblem], source: str, strict: bool = False) -> None:
    """RescueError listing the errors (and, if strict, the warnings) of a gold input; else nothing."""
    bad = [p for p in problems if p.severity == "error" or strict]
    if not bad:
        return
    listed = "; ".join(str(p) for p in bad[:MAX_LISTED])
    more = f"; and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
    raise RescueError(f"{source}: {len(bad)} problem(s): {listed}{more}",
                      "fix the named rows and fields (format: the released row format; labels: "
                      "annotation_schemas/rescue-v1.yaml)"
                      + ("" if not strict else ", or leave out --strict to accept label-set warnings"))


def read_gold_file(path: Path, schema: AnnotationSchema, strict: bool = False
                   ) -> tuple[list[BenchmarkSession], list[GoldProblem]]:
    """Sessions of a benchmark.jsonl file (one session per line) and its warnings; errors raise RescueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RescueError(f"gold file {path} not found",
                          "run the agreement/adjudication stage, or pass the published benchmark file") from exc
    except UnicodeDecodeError as exc:
        raise RescueError(f"gold file {path} is not UTF-8 text", "convert it to UTF-8") from exc
    sessions: list[BenchmarkSession] = []
    lines: list[int] = []
    problems: list[GoldProblem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        session, parse_problems = parse_session_line(raw, number)
        problems.extend(parse_problems)
        if session is not None:
            sessions.append(session)
            lines.append(number)
    if not sessions and not problems:  # the gold step writes an empty file while no session is complete
        raise NoGoldYet(f"gold file {path} holds no sessions: no session has complete gold yet",
                        "finish annotating and adjudicating (`rescue gold` lists the pending sessions and why), "
                        "or pass --gold with a benchmark file")
    problems.extend(check_sessions(sessions, schema, lines))
    raise_for_errors(problems, str(path), strict)
    return sessions, [p for p in problems if p.severity == "warning"]
