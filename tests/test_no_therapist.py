"""Sessions without a therapist (issue 22, part 1): `rescue add-session --no-therapist` writes the catalog's
`therapist` column, the speech stages then expect and name only the participants, and diarization warns when
the voices it finds do not match the number the catalog implies. Real espeak-ng voices, WhisperX and
pyannote.audio, as in the speech tests; no assertion on a model's exact output beyond who speaks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.project import Project
from pipeline.speech import diarize
from tests.two_voices import SPEAKERS, make_two_voice_recording

SESSION = "two_voices/001"


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("two_voices")
    make_two_voice_recording(folder)
    return folder


def _project(tmp_path: Path, recording: Path, name: str) -> Project:
    root = (tmp_path / name).resolve()
    shutil.copytree(recording, root / "raw_video" / "two")
    return Project(root)


def _add(project: Project, *flags: str) -> str:
    result = CliRunner().invoke(main, ["--root", str(project.root), "add-session", "raw_video/two/two_voices.mp4",
                                       "--id", SESSION, "--scenario", "couple", "-p", "Maya", "-p", "Daniel",
                                       "--subtitles", "raw_video/two/two_voices.srt", *flags])
    assert result.exit_code == 0, result.output
    return result.output


def _run(project: Project, command: str) -> str:
    result = CliRunner().invoke(main, ["--root", str(project.root), command])
    assert result.exit_code == 0, result.output
    return result.output


def test_add_session_no_therapist_writes_the_column_and_keeps_other_sessions(project: Project, recording: Path
                                                                             ) -> None:
    shutil.copytree(recording, project.raw_video / "two")
    (project.raw_video / "sessions.csv").write_text(  # an older catalog without the optional column
        "session_id,scenario,participants,video,sha256,subtitles,clip_start,clip_end,source\n"
        "older/001,couple,Ann;Bob,two/two_voices.mp4," + "0" * 64 + ",,,,\"a, quoted source\"\n",
        encoding="utf-8")
    output = _add(project, "--no-therapist")
    assert "2 voice(s), no therapist" in output
    text = (project.raw_video / "sessions.csv").read_text(encoding="utf-8")
    header, older, added = text.splitlines()
    assert header.endswith(",therapist") and older.endswith(',"a, quoted source",') and added.endswith(",no")
    entries = {item.entry.session_id: item.entry for item in load_catalog(project)}
    assert entries[SESSION].therapist is False and entries["older/001"].therapist is True
    assert entries["older/001"].source == "a, quoted source"
    help_text = CliRunner().invoke(main, ["add-session", "--help"]).output
    assert "--no-therapist" in help_text


@pytest.mark.slow  # the real speech models, run by the test itself
def test_no_therapist_session_is_diarized_and_named_as_two_speakers(tmp_path: Path, recording: Path) -> None:
    project = _project(tmp_path, recording, "without")
    _add(project, "--no-therapist")
    output = _run(project, "rows")
    record = diarize.read_diarization(project, SESSION)
    assert record.catalog_speakers == 2 and record.min_speakers == 2  # the bounds follow the catalog
    assert not [w for w in record.warnings if "the catalog implies" in w], record.warnings
    assert "the catalog implies" not in output
    rows = [json.loads(line) for line in (project.build / "transcripts" / SESSION / "rows.jsonl").read_text()
            .splitlines()]
    assert rows and {row["speaker"] for row in rows} == set(SPEAKERS)  # nobody is named Therapist


@pytest.mark.slow  # the real speech models, run by the test itself
def test_diarization_warns_when_the_catalog_implies_a_therapist_nobody_hears(tmp_path: Path, recording: Path
                                                                             ) -> None:
    project = _project(tmp_path, recording, "with")
    _add(project)  # the default: a therapist is implied, so the catalog expects three voices
    output = _run(project, "diarize")
    record = diarize.read_diarization(project, SESSION)
    assert record.catalog_speakers == 3 and record.unbounded_speakers == 2
    warning = next(w for w in record.warnings if "the catalog implies 3" in w)
    assert "found 2 voice(s)" in warning and "--no-therapist" in warning
    assert f"warning {SESSION}: {warning}" in " ".join(output.split()), output  # printed by the build, once
    assert output.count("the catalog implies 3") == 1
