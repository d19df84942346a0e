"""The first read of a verified snapshot, in columns: what `prepare` codes from `Answer`s, without them.

A pull validates every record (types, the schema's kinds) before it writes annotations.jsonl and records
the file's sha256 in summary.json; when the file still has that sha256 (`check_snapshot` says so), its
records are exactly those validated ones. Re-validating millions of them one by one is then the slow part
of agreement at scale, so this reader parses the file with polars in blocks (bounded memory), resolves
repeated saves, orders and numbers rows, annotators and units in columns, and normalises each distinct
value once. It yields the same `Prepared` as `prepare(load_checked_snapshot(...))` (a test compares
them) or None whenever it cannot vouch for that, and the caller then takes the record-by-record path:
a file with an escaped backslash (polars re-serialises nested values without escaping backslashes), a
value outside the schema, another schema version, several snapshots or unknown fields (whose precise
errors the record-by-record path words).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.agreement.inputs import Answer
from pipeline.agreement.plan import Measure, build_plan
from pipeline.agreement.prepared import Prepared
from pipeline.agreement.ratings import (
    MISSING,
    Ratings,
    RowIndex,
    _Coder,
    _scalar,
    item_keys,
)
from pipeline.agreement.settings import AgreementSettings
from pipeline.errors import RescueError
from pipeline.schema import AnnotationSchema

BLOCK_BYTES = 64 << 20  # parse this much JSON at a time: the text is never held whole
_COLUMNS = {"schema_version": pl.Categorical, "scenario": pl.Categorical, "session_id": pl.Categorical,
            "row_id": pl.Categorical, "row_index": pl.Int64, "annotator": pl.Categorical,
            "field": pl.Categorical, "value": pl.String, "task_id": pl.Int64, "annotation_id": pl.Int64,
            "updated_at": pl.String, "snapshot": pl.Categorical}
_LISTS = {"entities", "row_refs", "items"}  # kinds whose value polars hands over as JSON text
_PLACEHOLDER = Answer("", "couple", "", 0, "", "", None, "", 0)  # only ever named in an error we turn into None


class _CannotVouch(Exception):
    """The columnar read cannot promise the record-by-record result: use that path instead."""


def _read(path: Path) -> pl.DataFrame:
    parts = []
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            block += handle.readline()
            if b"\\\\" in block:
                raise _CannotVouch("an escaped backslash")
            parts.append(pl.read_ndjson(io.BytesIO(block), schema=_COLUMNS))
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=_COLUMNS)
    return frame.with_row_index("seq")


def _in_python_order(frame: pl.DataFrame, *names: str) -> pl.DataFrame:
    """The named columns as Enums whose category order is Python's sort order of their values (the
    record-by-record path sorts with Python); an Enum then sorts, and its physical code ranks, that way."""
    return frame.with_columns(pl.col(name).cast(pl.Enum(sorted(frame[name].unique().to_list()))) for name in names)


def _newest(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """One record per (row, annotator, field): the newest save, ties to the later line, as the other path."""
    slot = ["row_id", "annotator", "field"]
    repeated = frame.select(pl.struct(slot).is_duplicated()).to_series()
    if not repeated.any():
        return frame, 0
    losers = (frame.filter(repeated).sort(["updated_at", "annotation_id", "seq"])
              .filter(pl.struct(slot).is_last_distinct().not_())["seq"])
    kept = frame.filter(pl.col("seq").is_in(losers.implode()).not_())
    return kept, frame.height - kept.height


def _row_index(frame: pl.DataFrame) -> RowIndex:
    firsts = frame.select("row_id", "session_id", "row_index", "scenario").unique("row_id", keep="first",
                                                                                   maintain_order=True)
    rows = {r: (s, i) for r, s, i in zip(firsts["row_id"].to_list(), firsts["session_id"].to_list(),
                                          firsts["row_index"].to_list())}
    sessions_first = frame.select("session_id", "scenario").unique("session_id", keep="first", maintain_order=True)
    scenarios = dict(zip(sessions_first["session_id"].to_list(), sessions_first["scenario"].to_list()))
    sessions = tuple(sorted(scenarios))
    number = {s: i for i, s in enumerate(sessions)}
    ordered = sorted(rows.items(), key=lambda item: (scenarios[item[1][0]] != "couple", item[1][0], item[1][1],
                                                     item[0]))
    return RowIndex(row_ids=tuple(r for r, _ in ordered),
                    row_index=np.array([i for _, (_, i) in ordered], dtype=np.int32),
                    row_session=np.array([number[s] for _, (s, _) in ordered], dtype=np.int32),
                    sessions=sessions, session_scenario=tuple(scenarios[s] for s in sessions))


_JSON = json.JSONDecoder(strict=False)  # polars leaves control characters in nested strings unescaped


def _decoded(texts: list[str | None], kind: str) -> list[object]:
    """The field's values as JSON would give them: strings stay, numbers and lists are parsed (all of a
    field's in one call: one parse of a joined array is far cheaper than one per value)."""
    if kind not in _LISTS and kind != "integer":
        return texts  # type: ignore[return-value]
    parsed = iter(_JSON.decode("[" + ",".join(t for t in texts if t is not None) + "]"))
    return [None if t is None else next(parsed) for t in texts]


def _code_field(measures: Sequence[Measure], part: pl.DataFrame, schema: AnnotationSchema) -> list[_Coder]:
    """The record-by-record `extract_field`, fed from columns; each distinct value is normalised once."""
    coders = [_Coder(measure, schema) for measure in measures]
    first = measures[0]
    rows, raters = part["row"].to_list(), part["rater"].to_list()
    scenarios, texts = part["scenario"].to_list(), part["value"].to_list()
    values_in = _decoded(texts, first.kind)
    try:
        if first.kind != "items":
            coder = coders[0]
            normal: dict[str | None, object] = {}
            allowed: set[tuple[object, str]] = set()
            units, unit_list, values = coder.units, coder.unit_list, coder.values
            for row, rater, scenario, text, raw in zip(rows, raters, scenarios, texts, values_in):
                value = normal.get(text, normal)
                if value is normal:
                    value = normal[text] = _scalar(raw, first.kind, _PLACEHOLDER, first.allow_empty)
                if value is MISSING:
                    continue
                if coder.checked and (value, scenario) not in allowed:
                    coder.check(_PLACEHOLDER._replace(scenario=scenario), value)
                    allowed.add((value, scenario))
                unit_list.append(units.setdefault((row, ""), len(units)))
                coder.raters.append(rater)
                values.append(value)
            return coders
        _code_items(coders, first.key, rows, raters, scenarios, values_in)
    except (RescueError, ValueError, AttributeError, TypeError) as exc:
        raise _CannotVouch(str(exc)) from exc
    return coders


def _code_items(coders: list[_Coder], key: str | None, rows: list[int], raters: list[int], scenarios: list[str],
                values_in: list[object]) -> None:
    """`extract_field`'s items branch with its per-value work cached: item sub-values repeat (persons,
    intensities), so each is normalised and checked once per measure and scenario."""
    subs = [(coder, coder.measure.sub, coder.measure.kind, {}, set()) for coder in coders]
    for row, rater, scenario, items in zip(rows, raters, scenarios, values_in):
        if items is None:
            continue
        if items.__class__ is not list:
            raise _CannotVouch("items that are not a list")
        if key is None:
            keys = [str(position) for position in range(len(items))]
        else:
            keys = [str(item.get(key, "")).strip() for item in items]  # AttributeError: an item is not an object
            if len(keys) > 1 and len(set(keys)) != len(keys):
                keys = item_keys(items, key)
        for coder, sub, kind, normal, allowed in subs:
            if sub is None:
                pairs: list[tuple[str, object]] = [("", tuple(sorted(keys)))]
            else:
                pairs = []
                for item_key, item in zip(keys, items):
                    raw = item.get(sub)
                    cacheable = raw.__class__ is not list
                    value = normal.get((raw.__class__, raw), normal) if cacheable else normal  # True is not 1
                    if value is normal:
                        value = _scalar(raw, kind, _PLACEHOLDER)
                        if cacheable:
                            normal[(raw.__class__, raw)] = value
                    pairs.append((item_key, value))
            for item_key, value in pairs:
                if value is MISSING:
                    continue
                if coder.checked and (value, scenario) not in allowed:
                    coder.check(_PLACEHOLDER._replace(scenario=scenario), value)
                    allowed.add((value, scenario))
                coder.unit_list.append(coder.units.setdefault((row, item_key), len(coder.units)))
                coder.raters.append(rater)
                coder.values.append(value)


def prepare_verified(path: Path, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
                     skip_other_versions: bool) -> Prepared | None:
    """`prepare(load_checked_snapshot(path, ...))` for a snapshot whose sha256 matched its pull's record;
    None when only the record-by-record path can answer (see the module's docstring)."""
    try:
        return _prepare(path, schema, settings, use_text, skip_other_versions)
    except _CannotVouch:
        return None


def _prepare(path: Path, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
             skip_other_versions: bool) -> Prepared:
    frame = _read(path)
    snapshots = frame["snapshot"].unique().to_list()
    if len(snapshots) > 1:
        raise _CannotVouch("several snapshots")
    versions = dict(frame.filter(pl.col("schema_version") != schema.id).group_by("schema_version").len().iter_rows())
    if versions and not skip_other_versions:
        raise _CannotVouch("other schema versions")
    frame = frame.drop("snapshot")  # every step below copies what is left: keep it small
    if versions:
        frame = frame.filter(pl.col("schema_version") == schema.id)
    frame = frame.drop("schema_version")
    if set(frame["field"].unique().to_list()) - {f.name for f in schema.fields}:
        raise _CannotVouch("unknown fields")
    frame, duplicates = _newest(frame)
    frame = frame.drop("updated_at", "annotation_id", "seq")
    total = frame.height
    adjudicating = pl.col("annotator").is_in(list(settings.adjudicators))
    if frame.select(adjudicating.any()).item():
        frame = frame.filter(adjudicating.not_())
    frame = (_in_python_order(frame, "session_id", "row_id", "field", "annotator")
             .sort(["session_id", "row_index", "row_id", "field", "annotator"]))
    rows = _row_index(frame)
    annotators = tuple(sorted(frame["annotator"].unique().to_list()))
    # row_id's code is its rank in Python order; the RowIndex orders rows scenario first: look its number up
    row_number = np.argsort(np.array(rows.row_ids, dtype=object), kind="stable").astype(np.int32)
    frame = frame.with_columns(
        pl.Series("row", row_number[frame["row_id"].to_physical().to_numpy()]),
        pl.col("annotator").to_physical().cast(pl.Int32).alias("rater"),  # annotators are sorted: code = number
        pl.col("scenario").cast(pl.String))
    kinds = {f.name: f.type for f in schema.fields}
    empty = pl.col("value").is_null() | (pl.col("value") == "") | (
        pl.col("field").cast(pl.String).is_in([n for n, k in kinds.items() if k in _LISTS]) & (pl.col("value") == "[]"))
    counted = dict(frame.filter(empty.not_()).group_by("annotator").len().iter_rows())
    per_annotator = {a: counted.get(a, 0) for a in annotators}
    last = frame.select("row_id", "annotator", "task_id").unique(["row_id", "annotator"], keep="last",
                                                                  maintain_order=True)
    task_ids = dict(zip(zip(last["row_id"].to_list(), last["annotator"].to_list()), last["task_id"].to_list()))
    measures = [m for m in build_plan(schema) if use_text or m.level != "text"]
    by_field: dict[str, list[Measure]] = {}
    for measure in measures:
        by_field.setdefault(measure.field, []).append(measure)
    coded: dict[str, Ratings] = {}
    present = set(frame["field"].unique().to_list())
    for field, group in by_field.items():
        part = frame.filter(pl.col("field") == field) if field in present else frame.clear()
        part = part.select("row", "rater", "scenario", "value")
        for coder in _code_field(group, part, schema):
            coded[coder.measure.id] = coder.ratings(annotators)
    return Prepared(snapshot=snapshots[0] if snapshots else path.parent.name, path=path, duplicates=duplicates,
                    other_versions=versions, answers_total=total, answers_used=frame.height, rows=rows,
                    annotators=annotators, per_annotator=per_annotator,
                    ratings={m.id: coded[m.id] for m in measures}, task_ids=task_ids)
