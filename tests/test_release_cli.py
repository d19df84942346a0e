"""The task commands as a researcher uses them: freeze from a published-format benchmark file, verify,
evaluate, and compare rebuilt ER/VP instances with the published er.jsonl."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from tests.conftest import tree_digest
from tests.published_files import published as published_records
from tests.published_files import write
from tests.tasks_rows import SAMPLE_ID
from tests.release_inputs import gold_sessions, published_benchmark


def run(root: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["--root", str(root), *args])


def test_freeze_verify_evaluate_from_a_published_benchmark_file(tmp_path: Path) -> None:
    gold = published_benchmark(tmp_path)
    frozen = run(tmp_path, "freeze", "--gold", str(gold), "--version", "r1", "--snapshot", "snap-1",
                 "--model", "asr:whisper-base:1.0.0")
    assert frozen.exit_code == 0, frozen.output
    assert "release r1" in frozen.output and "itp" in frozen.output
    assert "warning" in frozen.output and "'validation' is not in the couple support_strategy set" in frozen.output
    release = tmp_path / "build/release/r1"
    manifest = json.loads((release / "MANIFEST.json").read_text())
    assert manifest["provenance"]["gold_source"] == "benchmark_191.jsonl"
    assert manifest["provenance"]["models"] == [{"role": "asr", "name": "whisper-base", "version": "1.0.0"}]
    again = run(tmp_path, "freeze", "--gold", str(gold), "--version", "r1")
    assert again.exit_code == 1 and "already exists with different content" in again.output   # provenance differs

    assert run(tmp_path, "verify", str(release)).exit_code == 0
    gold_itp = [json.loads(line) for line in (release / "gold/itp.jsonl").read_text().splitlines()]
    predictions = tmp_path / "itp.jsonl"
    predictions.write_text("".join(json.dumps({"id": g["id"], "should_speak": "yes"}) + "\n" for g in gold_itp[:-1]))
    out = tmp_path / "report.json"
    scored = run(tmp_path, "evaluate", "--task", "itp", "--predictions", str(predictions), "--json-out", str(out))
    assert scored.exit_code == 0, scored.output
    assert "overall" in scored.output and "missing_ids" in scored.output and "1 instance(s) without a prediction" in scored.output
    report = json.loads(out.read_text())
    assert report["problems"]["missing_ids"] == [gold_itp[-1]["id"]]
    assert report["scores"]["overall"]["recall"] < 1.0    # the missing yes counts as a miss

    (release / "stats/table3.md").write_text("edited\n")
    broken = run(tmp_path, "verify", str(release))
    assert broken.exit_code == 1 and "changed stats/table3.md" in broken.output and "NOT intact" in broken.output


def test_freeze_refuses_a_bad_gold_file_with_one_line_and_a_fix(tmp_path: Path) -> None:
    bad = tmp_path / "benchmark.jsonl"
    record = gold_sessions()[0].model_dump(mode="json", exclude_unset=True)
    record["rows"][1]["target"] = "Therapist"
    bad.write_text(json.dumps(record) + "\n")
    result = run(tmp_path, "freeze", "--gold", str(bad))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"line 1 {SAMPLE_ID} row 2 target: Input should be a valid list" in result.output
    assert "fix:" in result.output and not (tmp_path / "build/release").exists()
    strict = run(tmp_path, "freeze", "--gold", str(published_benchmark(tmp_path)), "--strict")
    assert strict.exit_code == 1 and "3 problem(s)" in strict.output


def test_compare_released_er_reports_each_difference(tmp_path: Path) -> None:
    assert run(tmp_path, "freeze", "--gold", str(published_benchmark(tmp_path))).exit_code == 0
    release = tmp_path / "build/release/v1"
    published = published_records(release, "er")    # the published layout: inputs, gold and meta in one record
    path = write(tmp_path / "er.jsonl", published)
    same = run(tmp_path, "compare-released", "--task", "er", str(path))
    assert same.exit_code == 0 and "value-identical 3, byte-identical 3" in same.output
    published[0]["gold_intensity_score"] = 3
    published[1]["prior_context"] = published[1]["prior_context"][-3:]
    published[2]["instance_id"] = f"{SAMPLE_ID}__row10"
    path = write(tmp_path / "er.jsonl", published)
    result = run(tmp_path, "compare-released", "--task", "er", str(path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["only_rebuilt"] == [f"{SAMPLE_ID}__row9"] and report["only_published"] == [f"{SAMPLE_ID}__row10"]
    by_path = {d["path"]: d for d in report["differences"]}
    assert by_path[f"er/{SAMPLE_ID}__row6/gold_intensity_score"]["published"] == 3
    assert {k: by_path[f"er/{SAMPLE_ID}__row8/prior_context"][k] for k in ("rebuilt", "published")} == {
        "rebuilt": [1, 2, 3, 4, 5, 6, 7], "published": [5, 6, 7]}


def test_compare_released_reports_every_field_of_the_published_record(tmp_path: Path) -> None:
    assert run(tmp_path, "freeze", "--gold", str(published_benchmark(tmp_path))).exit_code == 0
    release = tmp_path / "build/release/v1"
    er = published_records(release, "er")
    assert len(er[1]["prior_context"]) > 1
    er[0]["couple"] = "someone_else"
    er[0]["source_file"] = "data/elsewhere.json"
    er[1]["prior_context"][1]["tone_of_voice"] = "whispering"  # a cue of one context row
    er[2].pop("body_posture")
    path = write(tmp_path / "er.jsonl", er)
    report = json.loads(run(tmp_path, "compare-released", "--task", "er", str(path), "--json").output)
    by_path = {d["path"]: d for d in report["differences"]}
    ids = [r["instance_id"] for r in er]
    assert set(by_path) == {f"er/{ids[0]}/couple", f"er/{ids[0]}/source_file",
                            f"er/{ids[1]}/prior_context[1].tone_of_voice", f"er/{ids[2]}/body_posture"}
    assert by_path[f"er/{ids[1]}/prior_context[1].tone_of_voice"]["published"] == "whispering"
    assert by_path[f"er/{ids[2]}/body_posture"]["published"] == "(absent)"
    assert report["counts"]["value_identical"] == len(er) - 3

    vp = published_records(release, "vp")
    with_therapist = next(r for r in vp if "Therapist" in r["participants"])
    with_therapist["participants"] = [p for p in with_therapist["participants"] if p != "Therapist"]
    without_attitude = vp[-1]
    assert "attitude" in without_attitude["gold_viewpoints"][0]
    del without_attitude["gold_viewpoints"][0]["attitude"]  # never filled in with "" to look identical
    path = write(tmp_path / "vp.jsonl", vp)
    result = run(tmp_path, "compare-released", "--task", "vp", str(path), "--json")
    assert result.exit_code == 1
    by_path = {d["path"]: d for d in json.loads(result.output)["differences"]}
    assert any(p.startswith(f"vp/{with_therapist['instance_id']}/participants") for p in by_path)
    assert by_path[f"vp/{without_attitude['instance_id']}/gold_viewpoints[0].attitude"]["published"] == "(absent)"


def test_freezing_the_same_gold_by_another_path_spelling_finds_the_release_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    root.mkdir()
    outside = published_benchmark(tmp_path)                  # a published file next to the project
    inside = root / "data" / "benchmark.jsonl"
    inside.parent.mkdir()
    shutil.copyfile(outside, inside)
    monkeypatch.chdir(tmp_path)
    first = run(root, "freeze", "--gold", "benchmark_191.jsonl", "--version", "r1")
    assert first.exit_code == 0, first.output
    release = root / "build/release/r1"
    frozen = tree_digest(release)
    assert json.loads((release / "MANIFEST.json").read_text())["provenance"]["gold_source"] == "benchmark_191.jsonl"
    for spelling in ("./benchmark_191.jsonl", str(outside), "project/data/benchmark.jsonl",
                     "./project/data/../data/benchmark.jsonl", str(inside)):
        again = run(root, "freeze", "--gold", spelling, "--version", "r1")
        assert again.exit_code == 0 and "(unchanged)" in again.output, (spelling, again.output)
        assert tree_digest(release) == frozen                # same gold content: the release is kept as it is
    assert run(root, "freeze", "--gold", str(inside), "--version", "r2").exit_code == 0
    inside_source = json.loads((root / "build/release/r2/MANIFEST.json").read_text())["provenance"]["gold_source"]
    assert inside_source == "data/benchmark.jsonl"           # inside the project: relative to its root
    inside.write_text(inside.read_text().splitlines()[0] + "\n")   # other gold content is still refused
    other = run(root, "freeze", "--gold", str(inside), "--version", "r1")
    assert other.exit_code == 1 and "already exists with different content" in other.output


def test_freeze_license_option_sets_the_card_license(tmp_path: Path) -> None:
    gold = published_benchmark(tmp_path)
    assert run(tmp_path, "freeze", "--gold", str(gold), "--license", "cc-by-nc-4.0").exit_code == 0
    card = (tmp_path / "build/release/v1/README.md").read_text()
    assert "\nlicense: cc-by-nc-4.0\n" in card.split("---")[1]
