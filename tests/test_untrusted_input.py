"""Bad input refused with one clear line, never a traceback or a silently wrong output (issue 19, part 6):
numbers JSON has no place for in a gold file, a symbolic link in a release, a scores.json with wrong types,
participant lists and names that would harm the annotation server, the reports or a spreadsheet, and
credentials in a base URL (never echoed; the fix names the flag that set it)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.tasks.release import freeze_release
from pipeline.tasks.settings import TaskSettings
from tests.media import make_video
from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions
from tests.release_inputs import published_benchmark


def rescue(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--root", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, " ".join(result.output.split())


# -- numbers that are not JSON in a gold file -------------------------------------------------------------------

@pytest.mark.parametrize("number", ["NaN", "1e309", "-Infinity"])
def test_freeze_refuses_a_number_json_cannot_hold_naming_line_row_and_field(tmp_path: Path, number: str) -> None:
    gold = published_benchmark(tmp_path)
    first, *rest = gold.read_text().splitlines()
    # the second row's end_time: a number every release file would carry
    starts = [m.start() for m in re.finditer(r'"end_time": [0-9.]+', first)]
    cut = starts[1]
    end = first.index(",", cut)
    gold.write_text("\n".join([first[:cut] + f'"end_time": {number}' + first[end:], *rest]) + "\n")
    code, out = rescue(tmp_path, "freeze", "--gold", str(gold), "--version", "r1")
    assert code == 1, out
    sample = json.loads(first)["sample_id"]
    assert f"{gold}: 1 problem(s): line 1 {sample} row 2 end_time: " in out and "is not a finite number" in out
    assert not (tmp_path / "build/release/r1").exists()


# -- a release holds only plain files --------------------------------------------------------------------------

def test_verify_reports_symbolic_links_without_following_a_loop(tmp_path: Path) -> None:
    release = tmp_path / "build/release/v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, release, schema=SCHEMA)
    assert rescue(tmp_path, "verify", str(release))[0] == 0
    os.symlink(".", release / "loop")
    os.symlink("itp.jsonl", release / "tasks/itp-copy.jsonl")   # a link to a listed file is not that file
    os.mkfifo(release / "pipe")
    code, out = rescue(tmp_path, "verify", str(release))
    assert code == 1 and "NOT intact" in out
    assert "not plain loop: a symbolic link (to .)" in out
    assert "not plain tasks/itp-copy.jsonl: a symbolic link (to itp.jsonl)" in out
    assert "not plain pipe: not a plain file or folder" in out
    report = json.loads(CliRunner().invoke(main, ["verify", str(release), "--json"]).output)
    assert [e["path"] for e in report["not_plain"]] == ["loop", "pipe", "tasks/itp-copy.jsonl"]


# -- scores.json read by the leaderboard -----------------------------------------------------------------------

def _scores(model: object, accuracy: object) -> dict[str, object]:
    return {"format": 1, "run_id": "r", "task": "rpp", "mode": "dialogue", "model": model,
            "release": {"version": "v1", "manifest_sha256": "ab" * 32},
            "scores": {"overall": {"instances": 4, "accuracy": accuracy, "macro_f1": 0.5}}}


def test_the_leaderboard_names_a_scores_file_with_wrong_types(tmp_path: Path) -> None:
    runs = tmp_path / "build/runs"
    for name, data in (("good", _scores("model-a", 0.75)), ("object", _scores({"x": 1}, 0.5)),
                       ("text", _scores("model-c", "high"))):
        (runs / name).mkdir(parents=True)
        (runs / name / "scores.json").write_text(json.dumps(data))
    (runs / "nan").mkdir()
    (runs / "nan" / "scores.json").write_text(json.dumps(_scores("model-d", float("nan"))))
    code, out = rescue(tmp_path, "leaderboard", "--format", "markdown")
    assert code == 0, out
    table = out[out.index("## RPP"):]
    assert "{'x': 1}" not in table and "high" not in table and "nan" not in table.lower()
    assert "| r | model-a | dialogue | v1@abababab | | 4 | 0.7500 | 0.5000 |" in table  # the good run alone
    assert f"{runs / 'object' / 'scores.json'} is damaged (model: Input should be a valid string)" in out
    assert f"{runs / 'text' / 'scores.json'} is damaged" in out and "scores.overall.accuracy is 'high'" in out
    assert f"{runs / 'nan' / 'scores.json'} is damaged" in out and "not a finite number" in out


# -- participants ----------------------------------------------------------------------------------------------

def _add(project: Project, scenario: str, names: list[str]) -> tuple[int, str]:
    make_video(project.raw_video / "v.mp4", 2.0)
    flags = [arg for name in names for arg in ("-p", name)]
    return rescue(project.root, "add-session", str(project.raw_video / "v.mp4"), "--id", "v", "--scenario",
                  scenario, *flags)


@pytest.mark.parametrize(("scenario", "names", "problem"), [
    ("family", ["=cmd|calc", "Bob"], "starts with '=': a spreadsheet"),
    ("family", ["@SUM(1+1)", "Bob"], "starts with '@': a spreadsheet"),
    ("family", ["+1", "Bob"], "starts with '+'"),
    ("family", ["-Ann", "Bob"], "starts with '-'"),
    ("family", ["Ann\u202eboB", "Bob"], "direction-override character (U+202E)"),
    ("family", ["Ann\u200bLee", "Bob"], "invisible formatting or direction-override character (U+200B)"),
    ("family", ["Thérapist", "Bob"], "not a participant name ('Thérapist' reads as Therapist)"),
    ("couple", ["FAMÍLY", "Bob"], "Family is a reserved label"),
    ("family", ["../../etc", "Bob"], "contains '/', '\\' or '..'"),
    ("family", ["Ann\\Lee", "Bob"], "contains '/', '\\' or '..'"),
    ("couple", ["Zoe", "Zoë"], "participant names repeat"),
    ("couple", ["Ann"], "a couple session has 2-3 participants (the therapist is not one), not 1"),
    ("couple", ["Ann", "Bob", "Cy", "Di"], "a couple session has 2-3 participants"),
    ("family", ["Ann"], "a family session has 2-12 participants"),
    ("family", [f"P{n}" for n in range(10_000)], "10000 participants: more than 12, the most one session may have"),
], ids=["formula-equals", "formula-at", "formula-plus", "formula-minus", "rtl-override", "zero-width",
        "therapist-accented", "family-accented", "path", "backslash", "repeat-with-accent", "couple-of-one",
        "couple-of-four", "family-of-one", "ten-thousand"])
def test_add_session_refuses_names_and_counts_with_the_reason(project: Project, scenario: str, names: list[str],
                                                              problem: str) -> None:
    code, out = _add(project, scenario, names)
    assert code == 1, out
    assert problem in out, out[:600]
    assert len(out) < 2000  # one line, not one per participant
    assert not project.main_catalog.exists()


def test_good_names_and_counts_still_pass(project: Project) -> None:
    code, out = _add(project, "family", ["Zoë", "Mary-Jane O'Neil", "Ann Lee", "Jo+Al", "Ann@home", "R. J."])
    assert code == 0, out
    assert load_catalog(project)[0].entry.participants[0] == "Zoë"


def test_a_catalog_row_gets_the_same_checks_with_file_and_line(project: Project) -> None:
    code, out = _add(project, "couple", ["Ann", "Bob"])
    assert code == 0, out
    text = project.main_catalog.read_text()
    sha = "0" * 64
    for row, problem in ((f'w,couple,"=HYPERLINK(""x"");Bob",v.mp4,{sha},,,,', "starts with '='"),
                         (f"w,couple,Thérapist;Bob,v.mp4,{sha},,,,", "'Thérapist' reads as Therapist"),
                         (f"w,couple,Ann,v.mp4,{sha},,,,", "a couple session has 2-3 participants"),
                         (f"w,family,{';'.join(f'P{n}' for n in range(13))},v.mp4,{sha},,,,", "13 participants")):
        project.main_catalog.write_text(text + row + "\n")
        with pytest.raises(RescueError) as caught:
            load_catalog(project)
        assert caught.value.message.startswith("raw_video/sessions.csv:3: ") and problem in caught.value.message


# -- credentials in a base URL ---------------------------------------------------------------------------------

def test_a_password_in_a_base_url_is_never_echoed_and_the_fix_names_the_flag(tmp_path: Path) -> None:
    shutil.copytree(Path(__file__).resolve().parents[1] / "annotation_schemas", tmp_path / "annotation_schemas")
    release = tmp_path / "build/release/v1"
    release.mkdir(parents=True)
    code, out = rescue(tmp_path, "run-model", "--task", "itp", "--mode", "dialogue", "--release", str(release),
                       "--model", "m", "--base-url", "http://bob:pw456@127.0.0.1:9/v1")
    assert code == 1 and "base_url must not hold credentials" in out
    assert "pw456" not in out and "bob:***@127.0.0.1:9" in out
    assert "RESCUE_ASR" not in out
    assert "fix: correct the --base-url flag (or base_url in [tool.rescue.run_model])" in out
    code, out = rescue(tmp_path, "run-model", "--task", "itp", "--mode", "dialogue", "--release", str(release),
                       "--model", "m", "--base-url", "ftp://bob:pw456@127.0.0.1/v1")
    assert code == 1 and "is not an http(s) URL" in out and "pw456" not in out
    code, out = rescue(tmp_path, "run-model", "--task", "itp", "--mode", "turn_video_audio", "--release",
                       str(release), "--model", "m", "--media-base-url", "http://bob:pw456@127.0.0.1/media")
    assert code == 1 and "pw456" not in out and "--media-base-url flag" in out
