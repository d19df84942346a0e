"""Coding one field's answers into ratings in columns: the work of `ratings.extract_field`, with Python
touching only distinct values (labels, names, numbers, key sets repeat across millions of answers).

Input: the field's answers in the record-by-record path's order (session, row index, row id, annotator),
with `row` (number in the RowIndex), `rater`, `scenario` and `value` (the JSON value as polars reads it:
strings as themselves, numbers and lists as JSON text). Output: the same `Ratings` as `extract_field`,
or `CannotVouch` where only that path can answer (a value outside the schema, a null where a pull never
writes one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from pipeline.agreement.inputs import Answer
from pipeline.agreement.plan import Measure
from pipeline.agreement.ratings import MISSING, Ratings, _Coder, _scalar, _value_order
from pipeline.errors import RescueError
from pipeline.schema import AnnotationSchema

LIST_KINDS = {"entities", "row_refs", "items"}  # kinds whose value polars hands over as JSON text
_PLACEHOLDER = Answer("", "couple", "", 0, "", "", None, "", 0)  # only ever named in an error we turn into CannotVouch
_SUB_TYPES = {"label": pl.String, "entity": pl.String, "text": pl.String, "integer": pl.Float64,
              "entities": pl.List(pl.String)}
_JSON = json.JSONDecoder(strict=False)  # polars leaves control characters in nested strings unescaped
_CONTROL = [chr(c) for c in range(32) if chr(c) not in "\n\r"]  # polars writes these back unescaped


class CannotVouch(Exception):
    """The columnar read cannot promise the record-by-record result: use that path instead."""


def _normalised(values: list[object], kind: str, allow_empty: bool = False) -> list[object]:
    try:
        return [_scalar(value, kind, _PLACEHOLDER, allow_empty) for value in values]
    except RescueError as exc:
        raise CannotVouch(str(exc)) from exc


def _rate(measure: Measure, schema: AnnotationSchema, frame: pl.DataFrame, distinct: list[object],
          annotators: Sequence[str]) -> Ratings:
    """Ratings from `frame` (row, key, rater, scenario, vid: index into `distinct`, normalised values) in
    rating order: MISSING dropped, each value checked against its scenario's domain, units numbered by
    first appearance and values coded in the order `extract_field` codes them."""
    missing = [i for i, value in enumerate(distinct) if value is MISSING]
    if missing:
        frame = frame.filter(pl.col("vid").is_in(missing).not_())
    checker = _Coder(measure, schema)
    if checker.checked:
        for vid, scenario in frame.select("vid", "scenario").unique().iter_rows():
            if distinct[vid] not in checker.allowed[scenario]:
                raise CannotVouch(f"{distinct[vid]!r} is outside the {scenario} domain of {measure.id}")
    frame = frame.with_row_index("i").with_columns(pl.col("i").min().over("row", "key").alias("first"))
    frame = frame.with_columns((pl.col("first").rank("dense") - 1).cast(pl.Int32).alias("unit"))
    units = frame.filter(pl.col("i") == pl.col("first")).select("row", "key")
    if not frame.height:  # nobody answered: empty arrays of the coders' types
        nothing = np.zeros(0, dtype=np.int32)
        return Ratings(measure=measure, values=tuple(checker.declared), declared=len(checker.declared),
                       unit_row=nothing, unit_key=(), unit=nothing, rater=nothing, code=nothing,
                       annotators=tuple(annotators))
    used = frame["vid"].unique().to_list()
    declared = list(checker.declared)
    values = tuple(declared + _value_order({distinct[v] for v in used} - set(declared)))
    code_of = {value: code for code, value in enumerate(values)}
    code_by_vid = np.array([code_of.get(value, -1) for value in distinct], dtype=np.int32)
    return Ratings(measure=measure, values=values, declared=len(declared),
                   unit_row=units["row"].to_numpy().astype(np.int32), unit_key=tuple(units["key"].to_list()),
                   unit=frame["unit"].to_numpy(), rater=frame["rater"].to_numpy().astype(np.int32),
                   code=code_by_vid[frame["vid"].to_numpy()], annotators=tuple(annotators))


def _with_vid(frame: pl.DataFrame, column: str, normalise: Callable[[list[object]], list[object]],
              signature: pl.Expr | None = None) -> tuple[pl.DataFrame, list[object]]:
    """`frame` with `vid` (the distinct raw value's number) and the normalised distinct values. Lists are
    told apart by `signature` (a string per value), since polars cannot key on them cheaply."""
    key = signature if signature is not None else pl.col(column)
    frame = frame.with_columns(key.alias("_sig"))
    raw = frame.select("_sig", column).unique("_sig", maintain_order=True)
    vid = {sig: number for number, sig in enumerate(raw["_sig"].to_list())}
    distinct = normalise(raw[column].to_list())
    frame = frame.with_columns(pl.col("_sig").replace_strict(vid, return_dtype=pl.Int32).alias("vid")).drop("_sig")
    return frame, distinct


def _list_signature(column: str) -> pl.Expr:
    return pl.col(column).list.len().cast(pl.String) + "\x00" + pl.col(column).list.join("\x00")


def code_plain(measure: Measure, schema: AnnotationSchema, part: pl.DataFrame,
               annotators: Sequence[str]) -> Ratings:
    """A plain field: one rating per answer with a value, unit = its row."""
    kind = measure.kind
    frame = part.filter(pl.col("value").is_not_null()).with_columns(pl.lit("").alias("key"))
    parsed = kind in LIST_KINDS or kind == "integer"  # polars hands numbers and lists over as JSON text
    frame, distinct = _with_vid(frame, "value", lambda texts: _normalised(
        [_JSON.decode(t) for t in texts] if parsed else texts, kind, measure.allow_empty))
    return _rate(measure, schema, frame, distinct, annotators)


def code_items(measures: Sequence[Measure], schema: AnnotationSchema, part: pl.DataFrame,
               annotators: Sequence[str]) -> list[Ratings]:
    """An items field: its key set per answer, and per measured sub-field one rating per item, unit =
    (row, item key), with `item_keys`' rule for repeated keys."""
    first = measures[0]
    answers = part.filter(pl.col("value").is_not_null()).with_row_index("a")
    if answers["value"].str.contains("[\x00-\x08\x0b\x0c\x0e-\x1f\t]").any():
        answers = answers.with_columns(pl.col("value").str.replace_many(
            _CONTROL, [f"\\u{ord(c):04x}" for c in _CONTROL]))
    subs = {m.sub: m.kind for m in measures if m.sub is not None}
    if first.key is not None:
        subs.setdefault(first.key, "entity")
    dtype = pl.List(pl.Struct({name: _SUB_TYPES[kind] for name, kind in subs.items()} or {"_": pl.String}))
    try:
        answers = answers.with_columns(pl.col("value").str.json_decode(dtype).alias("items")).drop("value")
    except pl.exceptions.PolarsError as exc:
        raise CannotVouch(f"items of {first.field} that polars cannot read: {exc}") from exc
    items = (answers.with_columns(pl.col("items").list.len().alias("n")).filter(pl.col("n") > 0)
             .explode("items").with_columns(pl.int_range(pl.len()).over("a").alias("pos")).unnest("items"))
    if first.key is None:
        items = items.with_columns(pl.col("pos").cast(pl.String).alias("base"))
    else:
        if items[first.key].null_count():
            raise CannotVouch(f"an item of {first.field} without its key {first.key}")
        bases = items[first.key].unique().to_list()
        items = items.with_columns(pl.col(first.key).replace_strict({b: str(b).strip() for b in bases},
                                                                     return_dtype=pl.String).alias("base"))
    repeat = pl.int_range(pl.len()).over("a", "base")
    items = items.with_columns(pl.when(repeat == 0).then(pl.col("base"))
                               .otherwise(pl.col("base") + "#" + repeat.cast(pl.String)).alias("key"))
    out = []
    for measure in measures:
        if measure.sub is None:  # the set of keys: one rating per answer, [] included
            sets = items.group_by("a").agg(pl.col("key").sort().alias("keys"))
            frame = (answers.select("a", "row", "rater", "scenario").join(sets, on="a", how="left")
                     .sort("a").with_columns(pl.col("keys").fill_null(pl.lit([], dtype=pl.List(pl.String))),
                                             pl.lit("").alias("key")))
            frame, distinct = _with_vid(frame, "keys", lambda keys: [tuple(k) for k in keys], _list_signature("keys"))
        else:
            column = measure.sub
            if items[column].null_count():
                raise CannotVouch(f"an item of {first.field} without {column}")
            frame = items.select("row", "key", "rater", "scenario", column)
            if measure.kind == "entities":
                frame, distinct = _with_vid(frame, column, lambda v, k=measure.kind: _normalised(v, k),
                                            _list_signature(column))
            else:
                if measure.kind == "integer" and frame.select((pl.col(column) % 1 != 0).any()).item():
                    raise CannotVouch(f"a fractional {column}: Python's rounding decides")
                cast = (lambda v: [int(x) for x in v]) if measure.kind == "integer" else (lambda v: v)
                frame, distinct = _with_vid(frame, column, lambda v, k=measure.kind, c=cast: _normalised(c(v), k))
        out.append(_rate(measure, schema, frame.select("row", "key", "rater", "scenario", "vid"), distinct,
                         annotators))
    return out
