"""Speaker mapping: the automatic proposal, the mapping file `rescue speakers` writes and people edit, and the
clear stops (unmapped label, stale file, bad name). Runs on copies of the really-built couple sample."""

from __future__ import annotations

import re
import tomllib

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.engine.context import StepContext
from pipeline.errors import RescueError
from pipeline.speech import diarize, mapping, transcribe
from pipeline.speech.transcript_stage import plan_speakers
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, run_stages


def _labels_by_name(project) -> dict[str, str]:
    return {row.speaker: row.speaker_label for row in read_rows(project, COUPLE)}


def _edit(path, replace: dict[str, str]) -> None:
    text = path.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def test_speakers_writes_a_confident_proposal_that_build_then_uses(copy_built) -> None:
    project = copy_built(clips=False)
    automatic = read_rows(project, COUPLE)
    result = CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE])
    assert result.exit_code == 0, result.output
    path = project.raw_video / "speaker_maps" / f"{COUPLE}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["session_id"] == COUPLE
    assert data["diarization_sha256"] == diarize.read_diarization(project, COUPLE).turns_sha256
    assert data["labels"] == {label: name for name, label in _labels_by_name(project).items()}
    assert re.search(r'(?m)^SPEAKER_\d+ = "Maya" # proposed Maya, confident', path.read_text(encoding="utf-8"))
    report = run_stages(project, ("rows",), (COUPLE,))["rows"]
    assert report.ran == [COUPLE]  # the new mapping file is an input: the stage re-ran
    rows = read_rows(project, COUPLE)
    assert [(r.speaker, r.text) for r in rows] == [(r.speaker, r.text) for r in automatic]
    summary = project.session_dir("transcripts", COUPLE) / "summary.json"
    assert '"origin": "mapping file"' in summary.read_text()


def test_edited_mapping_file_wins_over_the_proposal(copy_built) -> None:
    project = copy_built(clips=False)
    labels = _labels_by_name(project)
    assert CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(project, COUPLE)
    _edit(path, {f'{labels["Maya"]} = "Maya"': f'{labels["Maya"]} = "Daniel"',
                 f'{labels["Daniel"]} = "Daniel"': f'{labels["Daniel"]} = "Maya"'})
    run_stages(project, ("rows",), (COUPLE,))
    swapped = _labels_by_name(project)
    assert swapped["Maya"] == labels["Daniel"] and swapped["Daniel"] == labels["Maya"]


def test_unmapped_label_stops_with_a_pointer_to_the_mapping_file(copy_built) -> None:
    project = copy_built(clips=False)
    labels = _labels_by_name(project)
    assert CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(project, COUPLE)
    _edit(path, {f'{labels["Daniel"]} = "Daniel"': f'{labels["Daniel"]} = ""'})
    rows_before = (project.session_dir("transcripts", COUPLE) / "rows.jsonl").read_bytes()
    report = run_stages(project, ("rows",), (COUPLE,))["rows"]
    message = report.failed[COUPLE]
    assert labels["Daniel"] in message and "no confident name" in message
    assert f"raw_video/speaker_maps/{COUPLE}.toml" in message and "Maya, Daniel, Therapist" in message
    # the last good rows are kept, untouched
    assert (project.session_dir("transcripts", COUPLE) / "rows.jsonl").read_bytes() == rows_before
    result = CliRunner().invoke(main, ["--root", str(project.root), "rows", COUPLE])
    assert result.exit_code == 1 and labels["Daniel"] in result.output


def test_without_named_subtitles_no_label_is_guessed(copy_built) -> None:
    """A real session without named cues: the proposal is never confident, so the session stops."""
    project = copy_built(clips=False)
    context = StepContext.load(project)
    entry = context.select([COUPLE])[0]
    turns = diarize.read_turns(project, COUPLE)
    labels = {t.label for t in turns}
    with pytest.raises(RescueError) as caught:
        plan_speakers(project, entry, context.settings, turns, "x", named=[], needed=labels, said=[])
    assert "no named subtitle overlaps it" in str(caught.value)  # each label's evidence, below the one line
    assert f"rescue speakers {COUPLE}" in caught.value.fix


def test_mapping_file_for_another_diarization_is_refused_until_refreshed(copy_built) -> None:
    project = copy_built(clips=False)
    assert CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(project, COUPLE)
    sha = diarize.read_diarization(project, COUPLE).turns_sha256
    _edit(path, {sha: "0" * 64})
    report = run_stages(project, ("rows",), (COUPLE,))["rows"]
    assert "another diarization" in report.failed[COUPLE] and "--refresh" in report.failed[COUPLE]
    refused = CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE])
    assert refused.exit_code == 1 and "--refresh" in refused.output
    refreshed = CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE, "--refresh"])
    assert refreshed.exit_code == 0, refreshed.output
    assert path.with_suffix(".toml.bak").read_text(encoding="utf-8").count("0" * 64) == 1
    assert tomllib.loads(path.read_text(encoding="utf-8"))["diarization_sha256"] == sha
    assert not run_stages(project, ("rows",), (COUPLE,))["rows"].failed


def test_a_name_outside_the_catalog_is_refused(copy_built) -> None:
    project = copy_built(clips=False)
    labels = _labels_by_name(project)
    assert CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE]).exit_code == 0
    _edit(mapping.mapping_path(project, COUPLE), {f'{labels["Maya"]} = "Maya"': f'{labels["Maya"]} = "Mia"'})
    failed = run_stages(project, ("rows",), (COUPLE,))["rows"].failed[COUPLE]
    assert "'Mia' is not one of Maya, Daniel, Therapist" in failed


def test_unreadable_mapping_file_names_the_file(copy_built) -> None:
    project = copy_built(clips=False)
    path = mapping.mapping_path(project, COUPLE)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[labels\nSPEAKER_00 = ", encoding="utf-8")
    failed = run_stages(project, ("rows",), (COUPLE,))["rows"].failed[COUPLE]
    assert "not valid TOML" in failed and f"speaker_maps/{COUPLE}.toml" in failed


def test_proposal_reads_subtitle_names_case_insensitively(built_samples) -> None:
    context = StepContext.load(built_samples)
    entry = context.select([COUPLE])[0]
    turns = diarize.read_turns(built_samples, COUPLE)
    segments = transcribe.read_segments(built_samples, COUPLE)
    assert segments
    from pipeline.speech.records import SpeechSegment

    named = [SpeechSegment(start=t.start, end=t.end, text="x", speaker_name="THERAPIST") for t in turns
             if t.label == "SPEAKER_00"]
    proposals = mapping.propose(turns, named, mapping.allowed_names(entry), {}, context.settings.speech.rows)
    assert proposals["SPEAKER_00"].name == "Therapist" and proposals["SPEAKER_00"].confident
    assert not proposals["SPEAKER_01"].confident and proposals["SPEAKER_01"].name == ""
