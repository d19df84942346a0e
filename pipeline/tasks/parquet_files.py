"""Parquet copies of the release's JSONL files (the Hugging Face convention), next to them.

One file per JSONL file, the same records in the same order. Each top-level field is one column; nested
fields (lists of dicts, dicts) are kept as Parquet lists and structs, so `datasets` and dataframe readers
see real columns. A field whose values do not fit one Parquet type without changing a value (e.g. the
released row format's `intensity`, a number in some rows and text in others) is stored instead as a text
column holding each value's JSON; those columns are returned, listed in MANIFEST.json and on the card.

Two ways to the same values. The fast one (`_native_path`) hands the JSONL text, as written next to the
file, to Arrow's JSON reader, which refuses a column whose records disagree on a JSON type (that column is
then stored as JSON text), and pyarrow writes that Arrow table and reads the file back: no Python object per
value and no polars (not even imported), so a full-size freeze spends a few tenths of a second here. Where
Arrow would change a value (a date-like text read as a timestamp, an integer beyond 2**53 read as a float) or
the columns come out in another order, the general way (`_python_path`) builds each column from Python values
with polars and checks it value by value.

The bytes depend only on the records and the pyarrow (fast way) or polars (general way) version, both recorded
in MANIFEST.json `tools`: fixed zstd level, no column statistics, no time. Every file is read back before it
is kept and must give the written columns again, within two limits of the format: a key that some records lack
(while others have it) reads back as null in those records, and a column mixing whole and fractional numbers is
a float column (3 reads back as 3.0, the same JSON number).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.jsonio import dumps

COMPRESSION = "zstd"
COMPRESSION_LEVEL = 3


def polars_version() -> str:
    """From the package's metadata: importing polars (~0.3 s) only to name it would slow every freeze."""
    from importlib.metadata import version

    return version("polars")


def pyarrow_version() -> str:
    from importlib.metadata import version

    return version("pyarrow")


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


def _python_path(records: Sequence[dict[str, Any]], where: str) -> tuple[bytes, list[str]]:
    """The records as one Parquet file built column by column from Python values (the slow, general path)."""
    import polars as pl

    names = list(dict.fromkeys(key for record in records for key in record))   # first-seen order
    columns, as_json = [], []
    for name in names:
        series, is_json = _column(name, [record.get(name) for record in records])
        columns.append(series)
        if is_json:
            as_json.append(name)
    frame = pl.DataFrame(columns)
    data = _write(frame)
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


def _write(frame: Any) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL, statistics=False)
    return buffer.getvalue()


# Column(/name/...) in Arrow's message when a value's JSON type differs from the column's
_CONFLICT = re.compile(r"Column\(/([^/)]*)")
# Arrow reads an integer beyond int64 as a float, and a float this large may not be the integer that was written
_EXACT_FLOAT_LIMIT = 2.0 ** 53


def _exact_types(dtype: Any) -> bool:
    """No type that Arrow's JSON reader guesses from text (timestamps from date-like strings)."""
    import pyarrow as pa

    if pa.types.is_struct(dtype):
        return all(_exact_types(dtype.field(i).type) for i in range(dtype.num_fields)) and dtype.num_fields > 0
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _exact_types(dtype.value_type)
    return not (pa.types.is_temporal(dtype) or pa.types.is_decimal(dtype))


def _large_floats(array: Any) -> bool:
    """Any float value, at any depth, at or beyond 2**53 in magnitude (it may stand for another integer)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    for chunk in chunks:
        kind = chunk.type
        if pa.types.is_struct(kind):
            if any(_large_floats(chunk.field(i)) for i in range(kind.num_fields)):
                return True
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            if _large_floats(chunk.flatten()):
                return True
        elif (pa.types.is_floating(kind) and chunk.null_count < len(chunk)
              and pc.max(pc.abs(chunk)).as_py() >= _EXACT_FLOAT_LIMIT):
            return True
    return False


def _arrow_table(jsonl: bytes) -> Any:
    """The JSONL text read by Arrow in one block (one type per column, decided over every record), or an
    `ArrowInvalid` naming the column whose records disagree on a JSON type."""
    import pyarrow.json as pj

    # One thread: the text is one block anyway, and the release writer already converts beside the main thread
    options = pj.ReadOptions(use_threads=False, block_size=max(len(jsonl) + 1, 1 << 20))
    return pj.read_json(io.BytesIO(jsonl), read_options=options)


def _arrow_write(table: Any) -> bytes:
    """The Arrow table as Parquet, with the same settings as `_write` (polars) uses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL, write_statistics=False)
    return sink.getvalue().to_pybytes()


def _native_path(records: Sequence[dict[str, Any]], jsonl: bytes) -> tuple[bytes, list[str]] | None:
    """The records as Parquet straight from their JSONL text (Arrow's JSON reader, then pyarrow's writer), with no
    Python object per value; None where only the Python path can keep every value.

    Arrow's reader is strict: a column whose records hold two JSON types (a number and a text, an object and a
    list) is refused, naming the column, which is then stored as JSON text as on the Python path. Whole and
    fractional numbers share a float column (the format's limit, module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not records:
        return None
    as_json: list[str] = []
    text = jsonl
    while True:
        try:
            table = _arrow_table(text)
            break
        except pa.ArrowInvalid as exc:
            match = _CONFLICT.search(str(exc))
            name = match.group(1) if match else None
            if name is None or name in as_json or not any(name in record for record in records):
                return None
            as_json.append(name)
            text = "".join(dumps({k: (dumps(v) if k in as_json and v is not None else v) for k, v in r.items()})
                           + "\n" for r in records).encode("utf-8")
    if not all(_exact_types(field.type) for field in table.schema) or any(map(_large_floats, table.columns)):
        return None
    order = list(dict.fromkeys(key for record in records for key in record))
    if table.column_names != order:
        return None
    try:
        data = _arrow_write(table)
        back = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)  # read_table imports pyarrow.dataset
    except (pa.ArrowException, TypeError, ValueError):
        return None
    if not back.equals(table):  # the read-back check: same types and values (nulls where they were), in C++
        return None
    return data, [name for name in order if name in as_json]


def parquet_bytes(records: Sequence[dict[str, Any]], where: str, jsonl: bytes | None = None) -> tuple[bytes, list[str]]:
    """The records as one Parquet file, and the columns stored as JSON text. `jsonl`: the records' JSONL text
    as written next to it (one record a line), which Arrow reads without building Python values."""
    if jsonl is None:
        jsonl = "".join(dumps(record) + "\n" for record in records).encode("utf-8")
    return _native_path(records, jsonl) or _python_path(records, where)


def _polars_name(dtype: Any) -> str:
    """The polars type name that polars reads an Arrow type as ('String', 'Int64', 'List', ...)."""
    import pyarrow as pa

    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return "String"
    if pa.types.is_boolean(dtype):
        return "Boolean"
    if pa.types.is_integer(dtype):
        return f"{'Int' if pa.types.is_signed_integer(dtype) else 'UInt'}{dtype.bit_width}"
    if pa.types.is_floating(dtype):
        return "Float64" if pa.types.is_float64(dtype) else "Float32"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_list_view(dtype):
        return "List"
    names = {"struct": "Struct", "null": "Null", "fixed_size_list": "Array"}
    return names.get(str(dtype).split("<")[0], str(dtype))


def parquet_columns(data: bytes) -> list[tuple[str, str]]:
    """The top-level columns of Parquet `data` with their polars type names ('String', 'Int64', 'List', ...), read
    from the file's footer with pyarrow (polars is not imported for it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    return [(field.name, _polars_name(field.type)) for field in pq.read_schema(pa.BufferReader(data))]
