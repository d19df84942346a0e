"""Parquet copies of the release's JSONL files (the Hugging Face convention), next to them.

One file per JSONL file, the same records in the same order. Each top-level field is one column; nested
fields (lists of dicts, dicts) are kept as Parquet lists and structs, so `datasets` and dataframe readers
see real columns. A field whose values do not fit one Parquet type without changing a value (e.g. the
released row format's `intensity`, a number in some rows and text in others) is stored instead as a text
column holding each value's JSON; those columns are returned, listed in MANIFEST.json and on the card.

The bytes depend only on the records and the polars version (recorded in MANIFEST.json `tools`): fixed
zstd level, no column statistics, no time. Every file is read back before it is kept and must give each
record's JSON value again, within two limits of the format: a key that some records lack (while others
have it) reads back as null in those records, and a column mixing whole and fractional numbers is a float
column (3 reads back as 3.0, the same JSON number).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.jsonio import dumps

COMPRESSION = "zstd"
COMPRESSION_LEVEL = 3


def polars_version() -> str:
    import polars

    return polars.__version__


def _comparable(item: Any) -> Any:
    """A JSON value with null-valued keys left out: Parquet cannot tell them from absent keys."""
    if isinstance(item, dict):
        return {k: _comparable(v) for k, v in item.items() if v is not None}
    if isinstance(item, list):
        return [_comparable(v) for v in item]
    return item


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: key order ignored, 3 == 3.0, but True is not 1 and "6" is not 6."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers:
        return a == b
    return type(a) is type(b) and a == b


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def same_json(a: Any, b: Any) -> bool:
    return _same(_comparable(a), _comparable(b))


def _first_difference(want: list[Any], got: list[Any]) -> int | None:
    """The index of the first value that `got` does not give again, or None. The same canonical JSON text of
    the whole column is the same values (one C-speed call); only a column that differs is compared value by
    value, where the two limits of the format (module docstring) are allowed."""
    try:
        if _text(want) == _text(got):
            return None
    except (TypeError, ValueError):
        pass
    return next((n for n, (a, b) in enumerate(zip(want, got, strict=True)) if not same_json(a, b)), None)


def _column(name: str, values: list[Any]) -> tuple[Any, bool]:
    """A polars Series of the values, typed if that keeps every value, else JSON text (second item True)."""
    import polars as pl

    try:
        # strict=False lets whole and fractional numbers share a float column; the check below refuses more
        series = pl.DataFrame({name: values}, infer_schema_length=None, strict=False).to_series()
        if _first_difference(values, series.to_list()) is None:
            return series, False
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
        pass
    return pl.Series(name, [None if v is None else dumps(v) for v in values], dtype=pl.String), True


def parquet_bytes(records: Sequence[dict[str, Any]], where: str) -> tuple[bytes, list[str]]:
    """The records as one Parquet file, and the columns stored as JSON text."""
    import polars as pl

    names = list(dict.fromkeys(key for record in records for key in record))   # first-seen order
    columns, as_json = [], []
    for name in names:
        series, is_json = _column(name, [record.get(name) for record in records])
        columns.append(series)
        if is_json:
            as_json.append(name)
    buffer = io.BytesIO()
    frame = pl.DataFrame(columns)
    frame.write_parquet(buffer, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL, statistics=False)
    data = buffer.getvalue()
    read = pl.read_parquet(io.BytesIO(data))
    # Each column already gives its values again (_column), so the file holds the records if it gives the
    # frame back (checked in Rust); only when it does not are the values compared one by one.
    if read.equals(frame, null_equal=True):
        return data, as_json
    for name in names:  # column by column: a record's missing key and its null read back alike (None)
        got = read[name].to_list()
        if name in as_json:
            got = [None if v is None else json.loads(v) for v in got]
        index = _first_difference([record.get(name) for record in records], got)
        if index is not None:
            raise RescueError(f"{where}: record {index + 1} ({records[index].get('id')}) reads back from Parquet "
                              f"changed (field {name})", f"the JSONL file next to {where} is complete; report this "
                                                         "record")
    return data, as_json  # e.g. a column of nulls only reads back with another type but the same values


def parquet_columns(data: bytes) -> list[tuple[str, str]]:
    """The top-level columns of Parquet `data` with their polars type names ('String', 'Int64', 'List', ...)."""
    import polars as pl

    return [(name, type(dtype).__name__) for name, dtype in pl.read_parquet_schema(io.BytesIO(data)).items()]
