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
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.agreement.columnar_coding import LIST_KINDS, CannotVouch, code_items, code_plain
from pipeline.agreement.plan import Measure, build_plan
from pipeline.agreement.prepared import Prepared
from pipeline.agreement.ratings import Ratings, RowIndex, row_index_of
from pipeline.agreement.settings import AgreementSettings
from pipeline.schema import AnnotationSchema

BLOCK_BYTES = 64 << 20  # parse this much JSON at a time: the text is never held whole
_COLUMNS = {"schema_version": pl.Categorical, "scenario": pl.Categorical, "session_id": pl.Categorical,
            "row_id": pl.Categorical, "row_index": pl.Int64, "annotator": pl.Categorical,
            "field": pl.Categorical, "value": pl.String, "task_id": pl.Int64, "annotation_id": pl.Int64,
            "updated_at": pl.String, "snapshot": pl.Categorical}


def _read(path: Path) -> pl.DataFrame:
    parts = []
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            block += handle.readline()
            if b"\\\\" in block:
                raise CannotVouch("an escaped backslash")
            try:
                parts.append(pl.read_ndjson(io.BytesIO(block), schema=_COLUMNS))
            except pl.exceptions.PolarsError as exc:  # a line that is not a record: the other path names it
                raise CannotVouch(str(exc)) from exc
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
    return row_index_of(rows, scenarios)


def prepare_verified(path: Path, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
                     skip_other_versions: bool) -> Prepared | None:
    """`prepare(load_checked_snapshot(path, ...))` for a snapshot whose sha256 matched its pull's record;
    None when only the record-by-record path can answer (see the module's docstring)."""
    try:
        return _prepare(path, schema, settings, use_text, skip_other_versions)
    except CannotVouch:
        return None


def _prepare(path: Path, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
             skip_other_versions: bool) -> Prepared:
    frame = _read(path)
    snapshots = frame["snapshot"].unique().to_list()
    if len(snapshots) > 1:
        raise CannotVouch("several snapshots")
    versions = dict(frame.filter(pl.col("schema_version") != schema.id).group_by("schema_version").len().iter_rows())
    if versions and not skip_other_versions:
        raise CannotVouch("other schema versions")
    frame = frame.drop("snapshot")  # every step below copies what is left: keep it small
    if versions:
        frame = frame.filter(pl.col("schema_version") == schema.id)
    frame = frame.drop("schema_version")
    if set(frame["field"].unique().to_list()) - {f.name for f in schema.fields}:
        raise CannotVouch("unknown fields")
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
        pl.col("field").cast(pl.String).is_in([n for n, k in kinds.items() if k in LIST_KINDS]) & (pl.col("value") == "[]"))
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
        if group[0].kind == "items":
            ratings = code_items(group, schema, part, annotators)
        else:
            ratings = [code_plain(group[0], schema, part, annotators)]
        coded.update((r.measure.id, r) for r in ratings)
    return Prepared(snapshot=snapshots[0] if snapshots else path.parent.name, path=path, duplicates=duplicates,
                    other_versions=versions, answers_total=total, answers_used=frame.height, rows=rows,
                    annotators=annotators, per_annotator=per_annotator,
                    ratings={m.id: coded[m.id] for m in measures}, task_ids=task_ids)
