"""`rescue compare-released` (issue 20, part 2): published records the release reproduces are identical at
both levels (exit 0), and each single mutation of a real-shaped published file is caught at the right level
(values or bytes) with the path to it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.tasks.compare import compare_released
from pipeline.tasks.context import row_record
from pipeline.tasks.published_format import NOT_COMPARED, published_record
from tests.published_files import COMPACT, authors_clip, freeze, gold_sessions, published, release_records, write
from tests.tasks_rows import SAMPLE_ID

ER = [f"{SAMPLE_ID}__row{k}" for k in (6, 8, 9)]
VP = [f"{SAMPLE_ID}__row{k}" for k in (2, 6, 7, 8, 9)]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return freeze(tmp_path_factory.mktemp("compare") / "v1")


def run(root: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["--root", str(root), *args])


# -- identical ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", [COMPACT, {}], ids=["compact-utf8", "json.dumps-defaults"])
@pytest.mark.parametrize("task", ["er", "vp"])
def test_the_releases_own_records_in_the_published_format_are_identical(release: Path, tmp_path: Path,
                                                                         task: str, style: dict) -> None:
    records = published(release, task)
    assert [r["instance_id"] for r in records] == (ER if task == "er" else VP)
    path = write(tmp_path / f"{task}.jsonl", records, style)
    report = compare_released(release, task, path)
    assert report.identical == {"values": True, "bytes": True}, report.model_dump_json(indent=1)
    assert report.counts["value_identical"] == report.counts["byte_identical"] == len(records)
    assert report.style["ensure_ascii"] is (style == {})       # read from the file's own lines
    contexts = sum(len(r["prior_context"]) for r in records)
    assert {k.key: k.values for k in report.not_compared} == {
        "clip_path": len(records), "clip_duration_sec": len(records),
        "prior_context[].clip_path": contexts, "prior_context[].clip_duration_sec": contexts}
    assert all(k.why == "a text-only release has no clips" for k in report.not_compared)
    result = run(tmp_path, "compare-released", "--task", task, str(path), "--release", str(release))
    assert result.exit_code == 0, result.output
    assert "IDENTICAL (values and bytes)" in result.output and "not compared: clip_path" in result.output


def test_a_published_record_written_from_the_spec_by_hand_is_identical(release: Path, tmp_path: Path) -> None:
    """The published ER record built here from the gold rows and the spec's key list (section 4, ER), not
    by the pipeline's writer: the comparer's key mapping is checked against an independent one."""
    rows = {r.row_index: r for r in gold_sessions()[0].rows}

    def context_row(k: int) -> dict[str, Any]:
        path, duration = authors_clip(SAMPLE_ID, k)
        return {**row_record(rows[k]), "clip_path": path, "clip_duration_sec": duration}

    records = []
    for gold in release_records(release, "gold", "er"):
        k, current = gold["row_index"], row_record(rows[gold["row_index"]])
        path, duration = authors_clip(SAMPLE_ID, k)
        records.append({
            "sample_id": SAMPLE_ID, "couple": "alan_and_evelyn", "row_index": k, "timestamp": current["timestamp"],
            "speaker": current["primary_speaker"], "target": current["target"], "dialogue": current["dialogue_cleaned"],
            **{key: current[key] for key in ("background_dialogue", "tone_of_voice", "body_posture",
                                             "facial_expressions", "self_directed_behavior", "interaction_behavior")},
            "prior_context": [context_row(j) for j in range(1, k)],
            "gold_internal_emotion": gold["gold"]["internal_emotion"],
            "gold_intensity_score": gold["gold"]["intensity"],
            "clip_path": path, "clip_duration_sec": duration, "task": "er", "instance_id": f"{SAMPLE_ID}__row{k}",
            "scenario": "couple", "source_sample_id": SAMPLE_ID,
            "source_file": f"data/therapy_merged_all/{SAMPLE_ID}.json"})
    report = compare_released(release, "er", write(tmp_path / "er.jsonl", records))
    assert report.identical == {"values": True, "bytes": True}, report.model_dump_json(indent=1)
    assert report.counts["byte_identical"] == 3


# -- one mutation at a time -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mutation:
    name: str
    task: str
    change: Callable[[list[dict[str, Any]]], str]  # the published records -> the file's text
    values: frozenset[str] = frozenset()    # paths reported as value differences (or records only on one side)
    duplicates: frozenset[str] = frozenset()
    bytes: frozenset[str] = frozenset()     # paths reported as byte differences
    why: str = ""                           # words the byte difference must give


def text(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, **COMPACT) + "\n" for r in records)


def edit(n: int, how: Callable[[dict[str, Any]], Any]) -> Callable[[list[dict[str, Any]]], str]:
    def change(records: list[dict[str, Any]]) -> str:
        how(records[n])
        return text(records)
    return change


def on_text(how: Callable[[list[str]], list[str]]) -> Callable[[list[dict[str, Any]]], str]:
    return lambda records: "".join(line + "\n" for line in how(text(records).splitlines()))


def paths(task: str, *relative: str) -> frozenset[str]:
    return frozenset(f"{task}/{p}" for p in relative)


def moved_first(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {key: record[key], **{k: v for k, v in record.items() if k != key}}


def swap_context_keys(record: dict[str, Any]) -> None:
    record["prior_context"][1] = moved_first(record["prior_context"][1], "tone_of_voice")


def reorder_top(records: list[dict[str, Any]]) -> str:
    records[1] = moved_first(records[1], "couple")
    return text(records)


def duplicated_first_changed(records: list[dict[str, Any]]) -> str:
    changed = copy.deepcopy(records[0])
    changed["gold_internal_emotion"] = "feels heard"
    return text([changed, *records])


def one_line(n: int, **style: Any) -> Callable[[list[dict[str, Any]]], str]:
    return lambda records: "".join(json.dumps(r, **(style if i == n else COMPACT)) + "\n"
                                   for i, r in enumerate(records))


E0, E1, E2, V0 = ER[0], ER[1], ER[2], VP[0]
MUTATIONS = [
    Mutation("gold emotion changed", "er", edit(0, lambda r: r.update(gold_internal_emotion="feels calm")),
             paths("er", f"{E0}/gold_internal_emotion")),
    Mutation("intensity 7 -> 7.0", "er", edit(0, lambda r: r.update(gold_intensity_score=7.0)),
             paths("er", f"{E0}/gold_intensity_score")),
    Mutation("intensity 7 -> '7'", "er", edit(0, lambda r: r.update(gold_intensity_score="7")),
             paths("er", f"{E0}/gold_intensity_score")),
    Mutation("context row_index 1 -> true", "er", edit(1, lambda r: r["prior_context"][0].update(row_index=True)),
             paths("er", f"{E1}/prior_context[0].row_index")),
    Mutation("row_index 8 -> 8.0", "er", edit(1, lambda r: r.update(row_index=8.0)), paths("er", f"{E1}/row_index")),
    Mutation("couple changed", "er", edit(0, lambda r: r.update(couple="someone_else")), paths("er", f"{E0}/couple")),
    Mutation("couple removed", "er", edit(0, lambda r: r.pop("couple")), paths("er", f"{E0}/couple")),
    Mutation("source_file changed", "er", edit(1, lambda r: r.update(source_file="data/elsewhere.json")),
             paths("er", f"{E1}/source_file")),
    Mutation("source_file removed", "er", edit(1, lambda r: r.pop("source_file")), paths("er", f"{E1}/source_file")),
    Mutation("source_sample_id changed", "er", edit(2, lambda r: r.update(source_sample_id="alan_and_evelyn/002")),
             paths("er", f"{E2}/source_sample_id")),
    Mutation("source_sample_id removed", "er", edit(2, lambda r: r.pop("source_sample_id")),
             paths("er", f"{E2}/source_sample_id")),
    Mutation("sample_id changed", "er", edit(2, lambda r: r.update(sample_id="x/y")), paths("er", f"{E2}/sample_id")),
    Mutation("task changed", "er", edit(0, lambda r: r.update(task="ER")), paths("er", f"{E0}/task")),
    Mutation("scenario changed", "er", edit(0, lambda r: r.update(scenario="family")), paths("er", f"{E0}/scenario")),
    Mutation("top-level key added", "er", edit(0, lambda r: r.update(split="test")), paths("er", f"{E0}/split")),
    Mutation("dialogue changed", "er", edit(1, lambda r: r.update(dialogue=r["dialogue"] + ".")),
             paths("er", f"{E1}/dialogue")),
    Mutation("target item changed", "er", edit(1, lambda r: r["target"].__setitem__(0, "Evelyn")),
             paths("er", f"{E1}/target[0]")),
    Mutation("context cue changed", "er", edit(1, lambda r: r["prior_context"][2].update(tone_of_voice="whispering")),
             paths("er", f"{E1}/prior_context[2].tone_of_voice")),
    Mutation("context item changed", "er",
             edit(2, lambda r: r["prior_context"][1]["body_posture"][0].update(description="slumped")),
             paths("er", f"{E2}/prior_context[1].body_posture[0].description")),
    Mutation("prior_context removed", "er", edit(1, lambda r: r.pop("prior_context")),
             paths("er", f"{E1}/prior_context")),
    Mutation("context row dropped", "er", edit(0, lambda r: r["prior_context"].pop(0)),
             paths("er", f"{E0}/prior_context")),
    Mutation("key added in a context row", "er", edit(0, lambda r: r["prior_context"][0].update(utterance_type="q")),
             paths("er", f"{E0}/prior_context[0].utterance_type")),
    Mutation("context clip_path removed", "er", edit(0, lambda r: r["prior_context"][3].pop("clip_path")),
             paths("er", f"{E0}/prior_context[3].clip_path")),
    Mutation("clip_duration_sec removed", "er", edit(2, lambda r: r.pop("clip_duration_sec")),
             paths("er", f"{E2}/clip_duration_sec")),
    Mutation("record duplicated, first copy changed", "er", duplicated_first_changed,
             paths("er", f"{E0}/gold_internal_emotion"), duplicates=paths("er", E0)),
    Mutation("record duplicated unchanged", "er", lambda records: text([*records, records[1]]),
             duplicates=paths("er", E1)),
    Mutation("record dropped", "er", lambda records: text(records[:2]), paths("er", E2)),
    Mutation("record added", "er", lambda records: text([*records, {**records[0], "instance_id": "a/b__row1"}]),
             paths("er", "a/b__row1")),
    Mutation("instance_id changed", "er", edit(2, lambda r: r.update(instance_id=f"{SAMPLE_ID}__row10")),
             paths("er", E2, f"{SAMPLE_ID}__row10")),
    Mutation("instance_id removed", "er", edit(0, lambda r: r.pop("instance_id")), paths("er", E0, "line1")),
    Mutation("a key given twice in one object", "er",
             on_text(lambda lines: [lines[0].replace('"couple":', '"couple":"x","couple":', 1), *lines[1:]]),
             paths("er", f"{E0}/couple")),
    Mutation("gold viewpoint target changed", "vp", edit(0, lambda r: r["gold_viewpoints"][0].update(target="Alan")),
             paths("vp", f"{V0}/gold_viewpoints[0].target")),
    Mutation("key added in a gold viewpoint", "vp", edit(0, lambda r: r["gold_viewpoints"][0].update(score=1)),
             paths("vp", f"{V0}/gold_viewpoints[0].score")),
    Mutation("attitude removed from a gold viewpoint", "vp", edit(0, lambda r: r["gold_viewpoints"][0].pop("attitude")),
             paths("vp", f"{V0}/gold_viewpoints[0].attitude")),
    Mutation("gold viewpoint added", "vp", edit(0, lambda r: r["gold_viewpoints"].append(r["gold_viewpoints"][0])),
             paths("vp", f"{V0}/gold_viewpoints[1]")),
    Mutation("Therapist left out of participants", "vp",
             edit(0, lambda r: r.update(participants=[p for p in r["participants"] if p != "Therapist"])),
             paths("vp", f"{V0}/participants[1]", f"{V0}/participants[2]")),
    # byte level only: the same values, other bytes
    Mutation("key order changed", "er", reorder_top, bytes=paths("er", E1), why="key order of (record) differs"),
    Mutation("key order inside a context row", "er", edit(1, swap_context_keys), bytes=paths("er", E1),
             why="key order of prior_context[1] differs"),
    Mutation("escaping changed", "er", one_line(0, ensure_ascii=True, separators=(",", ":")), bytes=paths("er", E0),
             why="written with ensure_ascii=True"),
    Mutation("separators changed", "er", one_line(2, ensure_ascii=False), bytes=paths("er", E2),
             why="separators=(', ', ': ')"),
    Mutation("an ASCII letter escaped", "er",
             on_text(lambda lines: [lines[0].replace('"couple":"alan', '"couple":"\\u0061lan', 1), *lines[1:]]),
             bytes=paths("er", E0), why="spelled otherwise"),
    Mutation("a clip duration spelled 4.50", "er",
             on_text(lambda lines: [lines[0], lines[1].replace('"clip_duration_sec":4.5', '"clip_duration_sec":4.50',
                                                               1), lines[2]]),
             bytes=paths("er", E1), why="spelled otherwise"),
    Mutation("blank line", "er", on_text(lambda lines: [lines[0], "", *lines[1:]]), bytes=paths("er", "line2"),
             why="blank line"),
    Mutation("CRLF line ending", "er", on_text(lambda lines: [lines[0] + "\r", *lines[1:]]),
             bytes=paths("er", "line1"), why="CRLF"),
    Mutation("no final newline", "er", lambda records: text(records).rstrip("\n"), bytes=paths("er", "line3"),
             why="no newline at the end"),
]


def test_the_mutation_table_is_big_enough() -> None:
    assert len(MUTATIONS) >= 25 and len({m.name for m in MUTATIONS}) == len(MUTATIONS)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_each_single_mutation_is_caught_at_its_level_with_its_path(release: Path, tmp_path: Path,
                                                                    mutation: Mutation) -> None:
    path = tmp_path / f"{mutation.task}.jsonl"
    path.write_text(mutation.change(published(release, mutation.task)), encoding="utf-8")
    report = compare_released(release, mutation.task, path)
    dump = report.model_dump_json(indent=1)
    assert {d.path for d in report.differences} == mutation.values, dump
    assert {d.path for d in report.duplicates} == mutation.duplicates, dump
    assert {d.path for d in report.byte_differences} == mutation.bytes, dump
    assert all(mutation.why in d.why for d in report.byte_differences), dump
    assert report.identical["values"] is not (mutation.values or mutation.duplicates)
    assert report.identical["bytes"] is False


def test_the_report_names_kind_and_both_values_and_the_cli_exits_1(release: Path, tmp_path: Path) -> None:
    records = published(release, "er")
    records[0]["gold_intensity_score"] = float(records[0]["gold_intensity_score"])
    records[1]["prior_context"] = records[1]["prior_context"][-3:]
    path = write(tmp_path / "er.jsonl", records)
    report = compare_released(release, "er", path)
    by_path = {d.path: d for d in report.differences}
    intensity = by_path[f"er/{E0}/gold_intensity_score"]
    assert (intensity.kind, intensity.line, type(intensity.rebuilt), type(intensity.published)) == ("type", 1, int,
                                                                                                    float)
    rows = by_path[f"er/{E1}/prior_context"]
    assert (rows.rebuilt, rows.published) == ([1, 2, 3, 4, 5, 6, 7], [5, 6, 7])
    result = run(tmp_path, "compare-released", "--task", "er", str(path), "--release", str(release))
    assert result.exit_code == 1 and "NOT identical" in result.output
    assert f"er/{E0}/gold_intensity_score (line 1): type: rebuilt 7 (int), published 7.0 (float)" in result.output
    shown = json.loads(run(tmp_path, "compare-released", "--task", "er", str(path), "--release", str(release),
                           "--json").output)
    assert shown["identical"] == {"values": False, "bytes": False} and shown["counts"]["value_differences"] == 2


def test_level_values_accepts_other_bytes_and_a_broken_line_is_one_clear_error(release: Path, tmp_path: Path) -> None:
    path = tmp_path / "er.jsonl"
    path.write_text(one_line(0, ensure_ascii=True, separators=(",", ":"))(published(release, "er")))
    assert run(tmp_path, "compare-released", "--task", "er", str(path), "--release", str(release)).exit_code == 1
    values = run(tmp_path, "compare-released", "--task", "er", str(path), "--release", str(release),
                 "--level", "values")
    assert values.exit_code == 0 and "identical values, NOT identical bytes" in values.output
    path.write_text(path.read_text() + "{not json\n")
    broken = run(tmp_path, "compare-released", "--task", "er", str(path), "--release", str(release))
    assert broken.exit_code == 1 and "line 4 is not JSON" in broken.output and "Traceback" not in broken.output


def test_a_media_releases_own_clip_keys_are_not_published_keys(release: Path) -> None:
    """A media release's records carry their own clips (pipeline/tasks/modes.py); the published record made
    from one is the same as from the text-only record: the clip keys stay not compared, the attachment keys
    (not in the published format) are left out, nothing else changes."""
    record, gold = release_records(release, "tasks", "er")[0], release_records(release, "gold", "er")[0]
    clip = {"clip_path": "media/x/006.mp4", "clip_duration_sec": 4.5}
    with_media = {**record, **clip, "video_attachment_index": 6, "video_attachments": ["media/x/001.mp4"],
                  "prior_context": [{**row, **clip, "video_attachment_index": n}
                                    for n, row in enumerate(record["prior_context"], start=1)]}
    assert published_record("er", with_media, gold) == published_record("er", record, gold)
    assert published_record("er", record, gold)["clip_path"] is NOT_COMPARED
