"""The freeze's fast paths keep what the slow ones made: Parquet read by Arrow from the JSONL text, and the
figures drawn in a child process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.tasks import figures, parquet_files
from pipeline.tasks.parquet_files import parquet_bytes, same_json


def _read(data: bytes) -> list[dict]:
    import polars as pl

    return pl.read_parquet(io.BytesIO(data)).to_dicts()


def _paths_taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    taken: list[str] = []
    native, python = parquet_files._native_path, parquet_files._python_path

    def spy_native(*args):  # type: ignore[no-untyped-def]
        result = native(*args)
        taken.append("native" if result is not None else "declined")
        return result

    def spy_python(*args):  # type: ignore[no-untyped-def]
        taken.append("python")
        return python(*args)

    monkeypatch.setattr(parquet_files, "_native_path", spy_native)
    monkeypatch.setattr(parquet_files, "_python_path", spy_python)
    return taken


def test_release_shaped_records_take_the_native_path_and_keep_every_value(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _paths_taken(monkeypatch)
    records = [
        {"id": "a", "score": 3, "flag": True, "views": [{"target": "B", "viewpoint": "v"}], "mixed": 7,
         "text": "é \u202e \"quoted\" \\ back", "rows": [[1, 2], []]},
        {"id": "b", "score": 2.5, "views": [{"target": "C", "source": "A", "viewpoint": "w"}], "mixed": "7",
         "text": None, "rows": []},
        {"id": "c", "score": None, "flag": False, "views": [], "mixed": None, "only_here": {"k": [1, 2]}},
    ]
    data, as_json = parquet_bytes(records, "test.parquet")
    assert taken == ["native"]
    assert as_json == ["mixed"]  # a number in one record, text in another: stored as each value's JSON
    for record, back in zip(records, _read(data), strict=True):
        back["mixed"] = None if back["mixed"] is None else json.loads(back["mixed"])
        assert same_json(record, back), back


@pytest.mark.parametrize("records", [
    [{"id": "a", "when": "2020-01-01"}, {"id": "b", "when": "2021-02-03 04:05:06"}],  # Arrow guesses timestamps
    [{"id": "a", "n": 12345678901234567890}],                     # beyond int64: Arrow reads a float
    [{"id": "a", "n": 9007199254740993}, {"id": "b", "n": 0.5}],  # beyond 2**53 in a float column
    [{"id": "a", "deep": [{"x": [12345678901234567891]}]}],
])
def test_values_arrow_would_change_take_the_python_path(records: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _paths_taken(monkeypatch)
    data, as_json = parquet_bytes(records, "test.parquet")
    assert taken == ["declined", "python"]
    for record, back in zip(records, _read(data), strict=True):
        back = {k: json.loads(v) if k in as_json and v is not None else v for k, v in back.items()}
        assert same_json(record, back) and all(type(back[k]) is type(v) for k, v in record.items()
                                               if not isinstance(v, list)), back


def test_native_and_python_paths_store_the_same_values() -> None:
    records = [{"id": str(n), "x": n * 0.5, "names": ["A", "B"][: n % 3], "gold": {"label": "l" * n, "n": n}}
               for n in range(50)]
    native = parquet_files._native_path(records, "".join(parquet_files.dumps(r) + "\n" for r in records).encode())
    assert native is not None
    python = parquet_files._python_path(records, "test.parquet")
    assert _read(native[0]) == _read(python[0]) and native[1] == python[1] == []


JOBS = [("figures/labels_itp.png", "distribution", ("ITP: gold labels", {"couple": {"yes": 3, "no": 2},
                                                                          "family": {"yes": 1}}, "label"))]


def test_figures_drawn_in_a_child_process_are_the_bytes_drawn_here(monkeypatch: pytest.MonkeyPatch) -> None:
    here = figures.render_jobs(JOBS)
    calls: list[int] = []
    monkeypatch.setattr(figures, "render_jobs", lambda jobs: calls.append(1) or {})  # only the child may draw
    with figures.rendering(JOBS) as rendered:
        assert rendered() == here
    assert calls == []


def test_figures_are_drawn_here_when_no_child_can_start(monkeypatch: pytest.MonkeyPatch) -> None:
    here = figures.render_jobs(JOBS)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with figures.rendering(JOBS) as rendered:
        assert rendered() == here


def test_data_files_written_beside_the_main_thread_are_those_written_in_turn(tmp_path: Path) -> None:
    """The release writer writes a JSONL file and its Parquet twin in a background thread: the same files, hashes
    and JSON-text columns as writing them one after the other here."""
    from pipeline.tasks.jsonio import dumps
    from pipeline.tasks.release import ReleaseWriter

    files = {"a.jsonl": [{"id": "a1", "intensity": 3, "words": ["x"]}, {"id": "a2", "intensity": "high", "words": []}],
             "b/c.jsonl": [{"id": f"c{n}", "score": n / 3} for n in range(50)]}
    threaded, in_turn = ReleaseWriter(tmp_path / "threaded"), ReleaseWriter(tmp_path / "in_turn")
    for path, records in files.items():
        threaded.jsonl_and_parquet(path, (dumps(r) + "\n" for r in records), records)
        text = "".join(dumps(r) + "\n" for r in records).encode()
        in_turn.bytes(path, text)
        in_turn.parquet(path.removesuffix(".jsonl") + ".parquet", records, text)
    threaded.close()
    in_turn.close()
    assert threaded.manifest_files() == in_turn.manifest_files()
    assert len(threaded.manifest_files()) == 4
    assert threaded.json_columns == in_turn.json_columns == {"a.parquet": ["intensity"]}
    assert threaded.columns == in_turn.columns


def test_a_failure_in_the_writer_thread_fails_the_freeze_and_stops_the_thread(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from pipeline.errors import RescueError
    from pipeline.tasks import release

    def refuse(records, where, jsonl=None):  # type: ignore[no-untyped-def]
        raise RescueError(f"{where}: record 1 reads back from Parquet changed", "report this record")

    monkeypatch.setattr(release, "parquet_bytes", refuse)
    writer = release.ReleaseWriter(tmp_path)
    writer.jsonl_and_parquet("a.jsonl", ['{"id": "a1"}\n'], [{"id": "a1"}])
    with pytest.raises(RescueError, match="a.parquet: record 1 reads back"):
        writer.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("release-writer")]
    assert (tmp_path / "a.jsonl").read_bytes() == b'{"id": "a1"}\n'  # the JSONL file itself was written


def test_figures_handed_to_a_child_started_before_them_are_the_bytes_drawn_here() -> None:
    """The freeze starts the figures' process before the instances are built (it imports matplotlib meanwhile)
    and hands it the jobs later."""
    here = figures.render_jobs(JOBS)
    with figures.rendering() as drawing:
        assert drawing.child is not None and drawing.child.poll() is None  # waiting for its jobs
        drawing.draw(JOBS)
        assert drawing() == here
    assert drawing.child is None


def test_a_freeze_imports_neither_polars_nor_pyplot_where_arrow_keeps_every_value(tmp_path: Path) -> None:
    """The Parquet twins are written and read back by pyarrow from Arrow's table, and the figures are drawn on a
    bare Figure in a child process: the freezing process loads neither polars (~0.3 s) nor pyplot."""
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pipeline.tasks.release import freeze_release\n"
        "from pipeline.tasks.settings import TaskSettings\n"
        "from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions\n"
        f"freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, Path({str(tmp_path / 'v1')!r}), schema=SCHEMA)\n"
        "print(sorted(m for m in ('polars', 'matplotlib.pyplot', 'pyarrow') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.stdout.strip().splitlines()[-1] == "['pyarrow']"
    assert (tmp_path / "v1" / "tasks" / "er.parquet").is_file()


def test_parquet_column_type_names_are_those_polars_reads() -> None:
    """croissant.json types the columns by these names; they come from the file's footer without polars."""
    import polars as pl

    records = [{"s": "x", "i": 1, "f": 1.5, "b": True, "n": None, "l": [1], "st": {"a": 1}, "ls": [{"a": "b"}]}]
    text = (parquet_files.dumps(records[0]) + "\n").encode()
    native = parquet_files._native_path(records, text)
    assert native is not None
    for data in (native[0], parquet_files._python_path(records, "t.parquet")[0]):
        expected = [(name, type(dtype).__name__) for name, dtype in pl.read_parquet_schema(io.BytesIO(data)).items()]
        assert parquet_files.parquet_columns(data) == expected
