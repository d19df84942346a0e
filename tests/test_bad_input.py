"""Bad input gets a clear error (issue 9, part 6): participant names, one video under several ids, a
catalog `video` that is a folder, a read-only build area, boolean predictions, and annotator text that
would run as a spreadsheet formula or as HTML in the agreement tables."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.errors import RescueError
from pipeline.media.register import register_session
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.settings import IngestSettings
from tests.media import make_video

RULE = "rule: a participant name is one name on one line"


def rescue(project: Project, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--root", str(project.root), *args])
    return result.exit_code, result.stdout, result.stderr


# -- participant names -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("names", "problem"), [
    (["Ann;Bob", "Carl"], "contains ';'"),
    (["Ann\nBob"], "line break"),
    (["<b>Ann</b>"], "'<' or '>'"),
    (["therapist", "Bob"], "Therapist is a reserved label"),
    (["FAMILY"], "Family is a reserved label"),
    (["Ann  Lee"], "doubled spaces"),
    (["Ann\tLee"], "control character"),
    ([" Ann"], "starts or ends with a space"),
    (["Ann", "ann"], "participant names repeat"),
], ids=["semicolon", "newline", "html", "therapist-lowercase", "group-uppercase", "double-space", "tab",
        "leading-space", "repeat-in-another-case"])
def test_add_session_refuses_bad_participant_names_with_the_rule(project: Project, names: list[str],
                                                                 problem: str) -> None:
    make_video(project.raw_video / "v.mp4", 2.0)
    flags = [arg for name in names for arg in ("-p", name)]
    code, out, err = rescue(project, "add-session", str(project.raw_video / "v.mp4"), "--id", "v",
                            "--scenario", "family", *flags)
    assert code == 1, out
    assert problem in err and "Traceback" not in err
    if problem != "participant names repeat":
        assert RULE in err
    assert not project.main_catalog.exists()  # nothing was added


def test_good_names_pass_and_a_catalog_with_a_bad_name_names_file_and_line(project: Project) -> None:
    make_video(project.raw_video / "v.mp4", 2.0)
    code, out, err = rescue(project, "add-session", str(project.raw_video / "v.mp4"), "--id", "v",
                            "--scenario", "family", "-p", "Zoë", "-p", "Mary-Jane O'Neil", "-p", "Ann Lee")
    assert code == 0, err
    assert load_catalog(project)[0].entry.participants == ("Zoë", "Mary-Jane O'Neil", "Ann Lee")
    text = project.main_catalog.read_text()
    project.main_catalog.write_text(text + f'w,couple,"Ann;<i>Bob</i>",v.mp4,{"0" * 64},,,,\n')
    with pytest.raises(RescueError, match=r"raw_video/sessions.csv:3: .*'<i>Bob</i>' is not allowed") as caught:
        load_catalog(project)
    assert RULE in caught.value.message


# -- one video under several ids -------------------------------------------------------------------------------

def test_the_same_video_under_several_ids_is_warned_about(project: Project) -> None:
    (project.root / "pyproject.toml").write_text("[tool.rescue.ingest]\nmin_clip_seconds = 1\n")
    video = make_video(project.raw_video / "v.mp4", 4.0)
    shutil.copyfile(video, project.raw_video / "copy.mp4")

    def add(session_id: str, path: Path, *clip: str) -> str:
        code, _, err = rescue(project, "add-session", str(path), "--id", session_id, "--scenario", "couple",
                              "-p", "Ann", "-p", "Bob", *(("--clip", *clip) if clip else ()))
        assert code == 0, err
        return err

    assert "warning" not in add("first", video, "0", "2")
    assert "warning" not in add("second", video, "2", "4")  # distinct clips of one video are fine
    warned = add("again", video, "1", "3")
    assert "warning: sessions again and first show the same video (raw_video/v.mp4)" in warned
    assert "sessions again and second" in warned
    warned = add("copied", project.raw_video / "copy.mp4")
    assert "raw_video/copy.mp4 and raw_video/v.mp4 have the same sha256" in warned
    code, out, _ = rescue(project, "status")
    assert code == 0 and out.count("warning: sessions") == 5  # again-first, again-second, copied x3


# -- a catalog `video` that is a folder ------------------------------------------------------------------------

def test_a_video_that_is_a_folder_is_called_a_folder(project: Project) -> None:
    (project.raw_video / "episode").mkdir()
    project.main_catalog.write_text("session_id,scenario,participants,video,sha256\n"
                                    f"s1,couple,Ann;Bob,episode,{'0' * 64}\n")
    code, out, err = rescue(project, "ingest")
    assert code == 1
    assert "s1: session s1: video raw_video/episode is a folder, not a video file" in err
    with pytest.raises(RescueError, match="video .*episode is a folder, not a file"):
        register_session(project, video=project.raw_video / "episode", session_id="s2", scenario="couple",
                         participants=["Ann"], settings=IngestSettings())


# -- a read-only build area ------------------------------------------------------------------------------------

@contextmanager
def unwritable(folder: Path) -> Iterator[None]:
    """Make `folder` and everything in it unwritable for this user: `chmod` for a normal user; as root
    (which ignores modes) the immutable flag, as a read-only area really behaves for everyone."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
        undo = ["chmod", "-R", "u+w", str(folder)]
    else:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "-R", "+i", str(folder)]).returncode:
            pytest.skip("running as root on a filesystem without the immutable flag: cannot make a folder read-only")
        undo = ["chattr", "-R", "-i", str(folder)]
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


def test_a_read_only_build_area_names_the_path_and_the_fix(project: Project,
                                                            add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    assert rescue(project, "ingest")[0] == 0
    add_video("b", 2.0)
    with unwritable(project.build / "media"):  # the stage's area only: the failure is recorded per session
        code, out, err = rescue(project, "ingest")
    assert code == 1
    assert f"failed b: no access to {project.build / 'media'}" in err
    assert "make it and its folder writable" in err and "internal error" not in out + err
    status = json.loads(rescue(project, "status", "--json")[1])
    reasons = {(r["session_id"], r["stage"]): r["reason"] for r in status["sessions"]}
    assert reasons[("b", "ingest")].startswith(f"no access to {project.build / 'media'}")

    with unwritable(project.build):  # the whole build area: the command stops at once, one line and the fix
        code, out, err = rescue(project, "ingest")
    assert code == 1
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"error: no access to {project.build}/") and "Traceback" not in out + err
    assert lines[1].strip().startswith("fix: make it and its folder writable for this user")
    assert rescue(project, "ingest")[0] == 0  # writable again: the run completes


# -- predictions -----------------------------------------------------------------------------------------------

def test_a_boolean_is_not_an_intensity(tmp_path: Path) -> None:
    from pipeline.tasks.evaluate import evaluate
    from pipeline.tasks.release import freeze_release
    from pipeline.tasks.settings import TaskSettings
    from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions

    release = tmp_path / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, release, schema=SCHEMA)
    first = json.loads((release / "gold" / "er.jsonl").read_text().splitlines()[0])
    predictions = tmp_path / "predictions.jsonl"
    for value in (True, False):
        predictions.write_text(json.dumps({"id": first["id"], "predicted_internal_emotion": "hurt",
                                           "predicted_intensity_score": value}) + "\n")
        report = evaluate(release, "er", predictions, text_similarity=False)
        invalid = report["problems"]["invalid"]
        assert [p["id"] for p in invalid] == [first["id"]]
        assert f"predicted_intensity_score {json.dumps(value)} is a boolean, not a number 0-10" in invalid[0]["problems"]
        assert report["scores"]["overall"]["intensity_exact"] == 0.0


# -- agreement tables ------------------------------------------------------------------------------------------

HOSTILE = ("=HYPERLINK(\"http://evil.example\")@lab.org", "+cmd@lab.org", "-2+3@lab.org", "@SUM(A1)@lab.org",
           "<img src=x onerror=alert(1)>@lab.org")


def test_agreement_csv_and_md_neutralise_annotator_text(project: Project) -> None:
    from pipeline.agreement.agree import run_agree
    from pipeline.agreement.inputs import write_annotations
    from pipeline.agreement.settings import AgreementSettings
    from pipeline.agreement.synthetic import make_annotations, make_sessions
    from pipeline.schema import load_schema

    schema_file = Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml"
    schema = load_schema(schema_file)
    project.schemas.mkdir()
    shutil.copy(schema_file, project.schemas / schema_file.name)
    records = make_annotations(schema, make_sessions(2, family_share=0.5, rows_couple=8, rows_family=8), HOSTILE)
    snapshot = "20261130T100000Z"
    write_annotations(project.build / "annotations" / snapshot / "annotations.jsonl",
                      [r.model_copy(update={"snapshot": snapshot}) for r in records])
    output = run_agree(project, AgreementSettings(bootstrap_samples=20, text_similarity=False), text=False)

    rows = list(csv.DictReader(io.StringIO((output.folder / "agreement.csv").read_text(encoding="utf-8"))))
    numeric = {"value", "low", "high", "spread", "units", "values", "annotators"}
    for row in rows:
        for column, cell in row.items():
            if column not in numeric:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (column, cell)
            elif cell:
                float(cell)  # numbers stay numbers (a negative alpha keeps its minus sign)
    annotators = {row["annotator"] for row in rows} | {row["other"] for row in rows}
    assert {"'" + name for name in HOSTILE[:4]} <= annotators and HOSTILE[4] in annotators

    markdown = (output.folder / "agreement.md").read_text(encoding="utf-8")
    assert "<img" not in markdown and "&lt;img src=x onerror=alert(1)&gt;@lab.org" in markdown
    html_report = (output.folder / "report.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html_report  # the HTML report already escaped it
