"""Subtitles as the text-and-timing source (the paper's way), and bad subtitle files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.records import SampleTruth
from pipeline.speech import transcribe
from pipeline.speech.subtitles import cue_segments, read_subtitles, split_parts
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, run_stages

SUBTITLES = '[tool.rescue.speech]\nsource = "subtitles"\n'


def _srt(path: Path, cues: list[tuple[str, str, str]], encoding: str = "utf-8") -> Path:
    blocks = [f"{i}\n{start} --> {end}\n{text}\n" for i, (start, end, text) in enumerate(cues, start=1)]
    path.write_bytes("\n".join(blocks).encode(encoding))
    return path


def test_subtitle_source_gives_text_timing_and_speakers(copy_built) -> None:
    project = copy_built(clips=False, speech_settings=SUBTITLES)
    reports = run_stages(project, session_ids=(COUPLE,))
    assert reports["diarize"].up_to_date == [COUPLE] and reports["rows"].ran == [COUPLE]
    record = transcribe.read_transcription(project, COUPLE)
    assert (record.source, record.word_timing, record.model, record.cues_read) == ("subtitles", "none", "", 23)
    truth = SampleTruth.model_validate_json((project.raw_video / f"{COUPLE}.truth.json").read_text())
    rows = read_rows(project, COUPLE)
    # Cues are rows' ground truth: same-speaker cues under max_pause apart (10+11, 19+20) form one row.
    assert len(rows) == len(truth.turns) - 2
    cue_spans = {(t.start, t.end) for t in truth.turns}
    for row in rows:
        covered = [t for t in truth.turns if row.start <= t.start and t.end <= row.end]
        assert covered and {t.speaker for t in covered} == {row.speaker}
        assert (row.start, covered[0].end) in cue_spans and (covered[-1].start, row.end) in cue_spans
        assert row.text == " ".join(t.text for t in covered)
        assert row.words == () and not row.overlap and row.speaker_label == ""
    summary = (project.session_dir("transcripts", COUPLE) / "summary.json").read_text()
    assert '"origin": "subtitles"' in summary


def test_overlapping_cues_are_kept_and_marked(copy_built) -> None:
    project = copy_built(clips=False, speech_settings=SUBTITLES)
    srt = project.raw_video / "sample" / "maya_and_daniel.srt"
    text = srt.read_text(encoding="utf-8")
    srt.write_text(text + "\n24\n00:00:03,000 --> 00:00:03,900\nMaya: Mm-hm.\n", encoding="utf-8")
    reports = run_stages(project, session_ids=(COUPLE,))
    assert not any(r.failed for r in reports.values())
    rows = read_rows(project, COUPLE)
    first, second = rows[0], rows[1]
    assert (first.speaker, second.speaker, second.text) == ("Therapist", "Maya", "Mm-hm.")
    assert first.overlap and second.overlap and not rows[2].overlap
    assert first.start < second.start < second.end < first.end
    warnings = transcribe.read_transcription(project, COUPLE).warnings
    assert any("out of time order" in w for w in warnings)


def test_cue_with_two_speakers_is_split_and_named(tmp_path: Path) -> None:
    path = _srt(tmp_path / "a.srt", [("00:00:01,000", "00:00:03,000", "- Maya: Come here.\n- Daniel: No."),
                                     ("00:00:04,000", "00:00:05,000", "[door slams]"),
                                     ("00:00:06,000", "00:00:08,000", "THERAPIST: Let us\nslow down.")])
    read = read_subtitles(path, "a.srt")
    assert read.sound_only == 1 and len(read.cues) == 2
    segments, outside, split = cue_segments(read, clip_start=0.0, duration=10.0)
    assert (outside, split) == (0, 1)
    assert [(s.speaker_name, s.text, s.cue) for s in segments] == [
        ("Maya", "Come here.", 1), ("Daniel", "No.", 1), ("THERAPIST", "Let us slow down.", 3)]
    assert segments[0].start == 1.0 and segments[1].end == 3.0 and segments[0].end == segments[1].start


def test_vtt_voice_tags_become_speakers_and_clip_offsets_apply(tmp_path: Path) -> None:
    path = tmp_path / "a.vtt"
    path.write_text("WEBVTT\n\n00:01:01.000 --> 00:01:03.000\n<v Maya>Hello there.</v>\n\n"
                    "00:02:00.000 --> 00:02:01.000\n<v.loud Daniel>Outside the clip.\n", encoding="utf-8")
    segments, outside, _ = cue_segments(read_subtitles(path, "a.vtt"), clip_start=60.0, duration=30.0)
    assert outside == 1
    assert [(s.start, s.end, s.speaker_name, s.text) for s in segments] == [(1.0, 3.0, "Maya", "Hello there.")]


@pytest.mark.parametrize("cues, expected", [
    ([("00:00:05,000", "00:00:04,000", "Reversed.")],
     "cue 1 ends (00:00:04,000) before or when it starts (00:00:05,000)"),
    ([("00:00:01,000", "00:00:02,000", "Fine."), ("00:00:0x,000", "00:00:05,000", "Broken time.")],
     "cue 1 contains a malformed timing line '00:00:0x,000 --> 00:00:05,000'"),
    ([("00:00:01,000", "00:00:01,000", "Zero length.")], "before or when it starts"),
])
def test_bad_timestamps_are_refused_with_the_cue_named(tmp_path: Path, cues, expected) -> None:
    with pytest.raises(RescueError) as caught:
        read_subtitles(_srt(tmp_path / "bad.srt", cues), "raw_video/bad.srt")
    assert caught.value.message.startswith("raw_video/bad.srt: ") and expected in caught.value.message
    assert "correct that cue" in caught.value.fix


def test_wrong_encoding_is_refused_then_read_with_the_configured_codec(tmp_path: Path) -> None:
    path = _srt(tmp_path / "latin.srt", [("00:00:01,000", "00:00:02,000", "Zoë: Café crème.")], encoding="cp1252")
    with pytest.raises(RescueError) as caught:
        read_subtitles(path, "latin.srt")
    assert "line 3 is not utf-8 (byte 0xeb)" in caught.value.message
    assert "iconv" in caught.value.fix and "subtitle_encoding" in caught.value.fix
    read = read_subtitles(path, "latin.srt", encoding="cp1252")
    assert read.cues[0].parts[0].speaker == "Zoë" and read.cues[0].parts[0].text == "Café crème."


def test_empty_or_foreign_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.srt").write_text("", encoding="utf-8")
    with pytest.raises(RescueError, match="no cues found"):
        read_subtitles(tmp_path / "empty.srt", "empty.srt")
    (tmp_path / "a.ass").write_text("x", encoding="utf-8")
    with pytest.raises(RescueError, match="unsupported subtitle format"):
        read_subtitles(tmp_path / "a.ass", "a.ass")


def test_subtitle_stage_refuses_cues_past_the_end_of_the_audio(copy_built) -> None:
    project = copy_built(clips=False, speech_settings=SUBTITLES)
    srt = project.raw_video / "sample" / "maya_and_daniel.srt"
    srt.write_text(srt.read_text(encoding="utf-8") + "\n24\n01:10:00,000 --> 01:10:02,000\nMaya: Late.\n",
                   encoding="utf-8")
    failed = run_stages(project, ("ingest", "transcribe"), (COUPLE,))["transcribe"].failed[COUPLE]
    assert "cue 24 starts at 4200.000 s, after the end of the session audio" in failed


def test_unknown_subtitle_name_stops_until_mapped(copy_built) -> None:
    project = copy_built(clips=False, speech_settings=SUBTITLES)
    srt = project.raw_video / "sample" / "maya_and_daniel.srt"
    srt.write_text(srt.read_text(encoding="utf-8").replace("Therapist: ", "Dr. Sue: "), encoding="utf-8")
    failed = run_stages(project, session_ids=(COUPLE,))["rows"].failed[COUPLE]
    assert "'Dr. Sue'" in failed and "not catalog names" in failed
    from click.testing import CliRunner

    from pipeline.cli import main

    assert CliRunner().invoke(main, ["--root", str(project.root), "speakers", COUPLE]).exit_code == 0
    path = project.raw_video / "speaker_maps" / f"{COUPLE}.toml"
    text = path.read_text(encoding="utf-8")
    assert '"Dr. Sue" = "?"' in text
    failed = run_stages(project, ("rows",), (COUPLE,))["rows"].failed[COUPLE]
    assert "names.Dr. Sue = '?' is not one of" in failed
    path.write_text(text.replace('"Dr. Sue" = "?"', '"Dr. Sue" = "Therapist"'), encoding="utf-8")
    assert not run_stages(project, ("rows",), (COUPLE,))["rows"].failed
    assert read_rows(project, COUPLE)[0].speaker == "Therapist"


def test_split_parts_keeps_continuation_lines() -> None:
    parts = split_parts("Maya: I went\nhome early.\n- And then?\nNote: this is text")
    assert [(p.speaker, p.text) for p in parts] == [("Maya", "I went home early."), (None, "And then?"),
                                                     ("Note", "this is text")]
