"""Gold input in the published benchmark.jsonl format: every offending session, row and field is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.schema import load_schema
from pipeline.tasks.gold_input import read_gold_file
from tests.tasks_rows import SAMPLE_ID, session

SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml")


def line_of(sample_id: str = SAMPLE_ID) -> dict:
    return session(sample_id=sample_id).model_dump(mode="json", exclude_unset=True)


def write(tmp_path: Path, records: list) -> Path:  # type: ignore[type-arg]
    path = tmp_path / "benchmark.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_a_valid_file_reads_back_with_label_set_warnings(tmp_path: Path) -> None:
    path = write(tmp_path, [line_of(), line_of("brock_and_kristi/002_s01e02_ct10_segment01")])
    sessions, warnings = read_gold_file(path, SCHEMA)
    assert [s.sample_id for s in sessions] == [SAMPLE_ID, "brock_and_kristi/002_s01e02_ct10_segment01"]
    assert sessions[0] == session()             # lossless round trip
    texts = [str(w) for w in warnings]
    assert f"line 1 {SAMPLE_ID} row 14 support_strategy[0].strategy_type: 'validation' is not in the couple " \
           "support_strategy set" in texts
    assert f"line 1 {SAMPLE_ID} row 14 relation_cycle_state: 'blame_spiral' is not in the couple relation_pattern set" \
        in texts
    assert "line 2 brock_and_kristi/002_s01e02_ct10_segment01 row 15 internal_emotion[0].intensity: 12 is not a " \
           "number in 0-10" in texts
    with pytest.raises(RescueError) as error:
        read_gold_file(path, SCHEMA, strict=True)
    assert "6 problem(s)" in error.value.message and "leave out --strict" in error.value.fix


def test_structural_problems_are_errors_naming_line_sample_row_and_field(tmp_path: Path) -> None:
    bad_type = line_of("a/1")
    bad_type["rows"][2]["internal_emotion"] = [{"person": "Alan", "emotion_description": "x", "intensity": [1]}]
    unknown_key = line_of("a/2")
    unknown_key["rows"][0]["mood"] = "calm"
    out_of_order = line_of("a/3")
    out_of_order["rows"][4]["row_index"] = 9
    missing = line_of("a/4")
    del missing["rows"][1]["dialogue_cleaned"]
    path = write(tmp_path, [bad_type, "{not json", unknown_key, out_of_order, line_of("a/3"), missing])
    with pytest.raises(RescueError) as error:
        read_gold_file(path, SCHEMA)
    message = error.value.message
    assert message.startswith(f"{path}: ")
    assert "line 1 a/1 row 3 internal_emotion[0].intensity:" in message
    assert "line 2 ? line: not JSON" in message
    assert "line 3 a/2 row 1 mood: Extra inputs are not permitted" in message
    assert "line 4 a/3 row 5 row_index: is 9, expected 5" in message
    assert "line 5 a/3 sample_id: repeats the sample of line 4" in message
    assert "line 6 a/4 row 2 dialogue_cleaned: Field required" in message


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(RescueError, match="not found"):
        read_gold_file(tmp_path / "absent.jsonl", SCHEMA)
    with pytest.raises(RescueError, match="holds no sessions"):
        read_gold_file(write(tmp_path, []), SCHEMA)
