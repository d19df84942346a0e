"""Answers -> coded ratings per measure: who gave which value to which unit.

A unit is a row (plain fields and the key set of an items field) or a (row, item key) pair (item
sub-fields). Values are normalised by the measure's kind and coded as integers into the measure's
value list, declared values first (labels in schema order, integers min..max), so every coefficient
works on small integer arrays. An answer that does not fit the schema is an error naming the record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.agreement.inputs import Answer
from pipeline.agreement.plan import Measure
from pipeline.errors import RescueError
from pipeline.schema import AnnotationSchema

_FIX_VALUE = "correct the answer in Label Studio and pull again (the pull validates against the schema)"


class Missing:
    """Marker for an answer that carries no value (an unset label, an empty name list)."""


MISSING = Missing()


@dataclass(frozen=True)
class RowIndex:
    """Every row that has answers, in (session, row_index) order, with its session and scenario."""

    row_ids: tuple[str, ...]
    row_index: np.ndarray
    row_session: np.ndarray
    sessions: tuple[str, ...]
    session_scenario: tuple[str, ...]

    @property
    def row_scenario(self) -> np.ndarray:
        scenario_code = np.array([0 if s == "couple" else 1 for s in self.session_scenario], dtype=np.int8)
        return scenario_code[self.row_session] if len(self.sessions) else np.zeros(0, dtype=np.int8)

    def scenario_slices(self) -> dict[str, slice]:
        """The contiguous row range of each scenario present (rows are ordered couple first)."""
        codes = self.row_scenario
        out = {}
        for code, name in enumerate(("couple", "family")):
            where = np.flatnonzero(codes == code)
            if len(where):
                out[name] = slice(int(where[0]), int(where[-1]) + 1)
        return out


@dataclass(frozen=True)
class Ratings:
    """The coded ratings of one measure. Arrays hold one entry per rating (unit, rater, code)."""

    measure: Measure
    values: tuple[object, ...]  # code -> value
    declared: int  # the first `declared` values are the schema's domain (q for Gwet's AC1)
    unit_row: np.ndarray  # unit -> row number in the RowIndex
    unit_key: tuple[str, ...]  # unit -> item key ("" for row-level measures)
    unit: np.ndarray
    rater: np.ndarray
    code: np.ndarray
    annotators: tuple[str, ...]

    @property
    def n_units(self) -> int:
        return len(self.unit_row)


def build_row_index(answers: Sequence[Answer]) -> RowIndex:
    rows: dict[str, tuple[str, int]] = {}
    scenarios: dict[str, str] = {}
    for answer in answers:
        rows.setdefault(answer.row_id, (answer.session_id, answer.row_index))
        scenarios.setdefault(answer.session_id, answer.scenario)
    return row_index_of(rows, scenarios)


def row_index_of(rows: dict[str, tuple[str, int]], scenarios: dict[str, str]) -> RowIndex:
    """The RowIndex of rows (row id -> (session, row index)) whose sessions have these scenarios."""
    sessions = tuple(sorted(scenarios))
    session_number = {s: i for i, s in enumerate(sessions)}
    # Rows sorted by scenario first: each scenario is then one contiguous slice (see bootstrap.py).
    ordered = sorted(rows.items(), key=lambda item: (scenarios[item[1][0]] != "couple", item[1][0],
                                                     item[1][1], item[0]))
    return RowIndex(
        row_ids=tuple(row_id for row_id, _ in ordered),
        row_index=np.array([index for _, (_, index) in ordered], dtype=np.int32),
        row_session=np.array([session_number[s] for _, (s, _) in ordered], dtype=np.int32),
        sessions=sessions,
        session_scenario=tuple(scenarios[s] for s in sessions),
    )


def _bad(answer: Answer, what: str) -> RescueError:
    return RescueError(f"annotation {answer.annotation_id} ({answer.session_id} row {answer.row_index}, "
                       f"{answer.annotator}, {answer.field}): {what}", _FIX_VALUE)


def _scalar(value: object, kind: str, answer: Answer, allow_empty: bool = False) -> object:
    """One value of a label, entity, integer, text, entities or row_refs kind, normalised."""
    if value is None:
        return MISSING
    if kind in {"label", "entity"}:
        if not isinstance(value, str):
            raise _bad(answer, f"expected a {kind} string, got {value!r}")
        value = value.strip()
        return value if value or allow_empty else MISSING
    if kind == "text":
        if not isinstance(value, str):
            raise _bad(answer, f"expected text, got {value!r}")
        return " ".join(value.split())
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(answer, f"expected a whole number, got {value!r}")
        return round(value)
    if kind in {"entities", "row_refs"}:
        if not isinstance(value, list):
            raise _bad(answer, f"expected a list, got {value!r}")
        try:
            members = tuple(sorted({str(v).strip() if kind == "entities" else int(v)  # type: ignore[arg-type]
                                    for v in value}))
        except (TypeError, ValueError) as exc:
            raise _bad(answer, f"expected a list of {'names' if kind == 'entities' else 'row numbers'}, "
                               f"got {value!r}") from exc
        # An empty name list is an unanswered field; an empty row list says "no evidence rows".
        return members if members or kind == "row_refs" else MISSING
    raise _bad(answer, f"unsupported kind {kind}")


def item_keys(items: list[dict[str, object]], key: str | None) -> list[str]:
    """Stable keys for the items of one answer: the key sub-field, `#n` for its n-th repeat (n >= 1);
    the position when the field has no key."""
    if key is None:
        return [str(position) for position in range(len(items))]
    bases = [str(item.get(key, "")).strip() for item in items]
    if len(set(bases)) == len(bases):  # the usual case: no key repeats
        return bases
    keys: list[str] = []
    seen: dict[str, int] = {}
    for base in bases:
        count = seen.get(base, 0)
        seen[base] = count + 1
        keys.append(base if count == 0 else f"{base}#{count}")
    return keys


def _items(value: object, answer: Answer) -> list[dict[str, object]] | Missing:
    if value is None:
        return MISSING
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _bad(answer, f"expected a list of items, got {value!r}")
    return value


def _value_order(values: Iterable[object]) -> list[object]:
    return sorted(values, key=lambda v: (len(v), v) if isinstance(v, tuple) else (0, v))  # type: ignore[arg-type]


class _Coder:
    """Collects the coded ratings of one measure while the answers of its field are read once."""

    def __init__(self, measure: Measure, schema: AnnotationSchema) -> None:
        self.measure = measure
        self.allowed = {scenario: frozenset(measure.domain(schema, scenario) or ())
                        for scenario in ("couple", "family")}
        self.checked = bool(measure.label_set) or measure.kind == "integer"
        self.declared = list(measure.domain(schema) or ())
        self.units: dict[tuple[int, str], int] = {}
        self.unit_list: list[int] = []
        self.raters: list[int] = []
        self.values: list[object] = []

    def check(self, answer: Answer, value: object) -> None:
        if value in self.allowed[answer.scenario]:
            return
        if self.measure.label_set:
            raise _bad(answer, f"{value!r} is not a {answer.scenario} label of {self.measure.label_set}")
        raise _bad(answer, f"{value!r} is outside {self.measure.minimum}..{self.measure.maximum}")

    def ratings(self, annotators: Sequence[str]) -> Ratings:
        extra = _value_order(set(self.values) - set(self.declared))
        values = tuple(self.declared + extra)
        code_of = {value: i for i, value in enumerate(values)}
        ordered_units = sorted(self.units.items(), key=lambda item: item[1])
        return Ratings(
            measure=self.measure, values=values, declared=len(self.declared),
            unit_row=np.array([row for (row, _), _ in ordered_units], dtype=np.int32),
            unit_key=tuple(key for (_, key), _ in ordered_units),
            unit=np.array(self.unit_list, dtype=np.int32),
            rater=np.array(self.raters, dtype=np.int32),
            code=np.array([code_of[v] for v in self.values], dtype=np.int32),
            annotators=tuple(annotators))


def extract_field(measures: Sequence[Measure], answers: Sequence[Answer], row_number: dict[str, int],
                  rater_number: dict[str, int], schema: AnnotationSchema) -> list[_Coder]:
    """Code the answers of one field (already filtered to it) for each of its measures, in one pass."""
    coders = [_Coder(measure, schema) for measure in measures]
    if not coders:
        return coders
    first = measures[0]
    if first.kind != "items":  # plain field: one measure, one value per answer
        coder = coders[0]
        units, unit_list, raters, values = coder.units, coder.unit_list, coder.raters, coder.values
        for answer in answers:
            value = _scalar(answer.value, first.kind, answer, first.allow_empty)
            if value is MISSING:
                continue
            if coder.checked:
                coder.check(answer, value)
            unit_list.append(units.setdefault((row_number[answer.row_id], ""), len(units)))
            raters.append(rater_number[answer.annotator])
            values.append(value)
        return coders
    for answer in answers:
        items = _items(answer.value, answer)
        if items is MISSING:
            continue
        row, rater = row_number[answer.row_id], rater_number[answer.annotator]
        keys = item_keys(items, first.key)  # type: ignore[arg-type]
        for coder in coders:
            sub = coder.measure.sub
            if sub is None:
                pairs: list[tuple[str, object]] = [("", tuple(sorted(keys)))]
            else:
                kind = coder.measure.kind
                pairs = [(key, _scalar(item.get(sub), kind, answer))  # type: ignore[union-attr]
                         for key, item in zip(keys, items)]
            for key, value in pairs:
                if value is MISSING:
                    continue
                if coder.checked:
                    coder.check(answer, value)
                coder.unit_list.append(coder.units.setdefault((row, key), len(coder.units)))
                coder.raters.append(rater)
                coder.values.append(value)
    return coders


def extract_all(measures: Sequence[Measure], answers: Sequence[Answer], rows: RowIndex, annotators: Sequence[str],
                schema: AnnotationSchema) -> dict[str, Ratings]:
    by_field: dict[str, list[Answer]] = {}
    for answer in answers:
        by_field.setdefault(answer.field, []).append(answer)
    row_number = {row_id: i for i, row_id in enumerate(rows.row_ids)}
    rater_number = {name: i for i, name in enumerate(annotators)}
    fields: dict[str, list[Measure]] = {}
    for measure in measures:
        fields.setdefault(measure.field, []).append(measure)
    out: dict[str, Ratings] = {}
    for field, group in fields.items():
        for coder in extract_field(group, by_field.get(field, []), row_number, rater_number, schema):
            out[coder.measure.id] = coder.ratings(annotators)
    return {measure.id: out[measure.id] for measure in measures}
