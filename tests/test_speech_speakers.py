"""Speakers on a recording without named subtitles: what the user gets to decide the mapping (audio snippets of
each label's longest turns, first words of several turns), names carried over on `rescue speakers --refresh`,
and the likely-split warning. Runs on copies of the really-built samples whose subtitles lose their `Name:`
prefixes (only the rows stage depends on them, so the real transcription and diarization are kept)."""

from __future__ import annotations

import re
import tomllib
import wave
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.engine.context import StepContext
from pipeline.project import Project
from pipeline.speech import audio as wav
from pipeline.speech import diarize, mapping
from pipeline.speech.records import SpeakerTurn
from pipeline.store import sha256_file, write_jsonl_atomic, write_record_atomic
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, run_stages

# a snippet line in the mapping file's comments: "#   <path>  m:ss.s-m:ss.s  "words""
SNIPPET = re.compile(r'^#\s+(\S+\.wav)\s+(\d+):(\d+\.\d)-(\d+):(\d+\.\d)\s+"(.*)"$')


@pytest.fixture
def unnamed(copy_built) -> Project:
    project = copy_built(clips=False)
    srt = project.raw_video / "sample" / "maya_and_daniel.srt"
    srt.write_text(re.sub(r"(?m)^\w+: ", "", srt.read_text(encoding="utf-8")), encoding="utf-8")
    return project


def _seconds(minutes: str, seconds: str) -> float:
    return int(minutes) * 60 + float(seconds)


def _wav_samples(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as handle:
        assert (handle.getframerate(), handle.getnchannels()) == (16_000, 1)
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")


def _snippets_by_label(project: Project) -> dict[str, list[tuple[Path, float, float, str]]]:
    """Parse the comment block above each label in the mapping file."""
    found: dict[str, list[tuple[Path, float, float, str]]] = {}
    label = None
    for line in mapping.mapping_path(project, COUPLE).read_text(encoding="utf-8").splitlines():
        head = re.match(r"^# (SPEAKER_\d+): ", line)
        if head:
            label = head.group(1)
            found[label] = []
        match = SNIPPET.match(line)
        if match and label:
            path, m1, s1, m2, s2, words = match.groups()
            found[label].append((project.abs(path), _seconds(m1, s1), _seconds(m2, s2), words))
    return found


def test_rows_stop_leaves_audio_snippets_of_every_label(unnamed: Project) -> None:
    failed = run_stages(unnamed, ("rows",), (COUPLE,))["rows"].failed[COUPLE]
    assert "no confident name" in failed
    folder = unnamed.build / "snippets" / COUPLE
    assert f"build/snippets/{COUPLE}" in failed  # the stop names where to listen
    labels = {t.label for t in diarize.read_turns(unnamed, COUPLE)}
    for label in labels:
        files = sorted(folder.glob(f"{label}-*.wav"))
        assert 1 <= len(files) <= 3, label
        for file in files:
            samples = _wav_samples(file)
            assert 0 < samples.size <= 5.0 * 16_000 + 1


def test_speakers_file_lists_snippets_and_first_words_of_several_turns(unnamed: Project) -> None:
    result = CliRunner().invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE])
    assert result.exit_code == 0, result.output
    turns = diarize.read_turns(unnamed, COUPLE)
    audio = unnamed.session_dir("media", COUPLE) / "audio.wav"
    listed = _snippets_by_label(unnamed)
    assert set(listed) == {t.label for t in turns}
    for label, snippets in listed.items():
        mine = sorted((t.end - t.start for t in turns if t.label == label), reverse=True)
        assert len(snippets) == min(3, len(mine)), label
        assert sum(bool(words) for *_, words in snippets) >= min(2, len(mine))  # words of several turns
        for path, start, end, _ in snippets:
            # each snippet lies inside one of the label's turns (times printed to 0.1 s) ...
            assert any(t.start - 0.05 <= start and end <= t.end + 0.05 for t in turns if t.label == label)
            # ... and is exactly the session audio of that span
            samples = _wav_samples(path)
            reference = wav.read_span(audio, start - 0.05, end + 0.05)
            expected = (reference * 32768).astype("<i2")
            assert 0.5 * (end - start) * 16_000 <= samples.size <= expected.size
            hits = np.flatnonzero(expected == samples[0])  # candidate offsets of the first sample
            assert any(np.array_equal(expected[i: i + samples.size], samples) for i in hits)


def test_refresh_carries_names_to_relabelled_voices_and_marks_the_rest_unknown(unnamed: Project) -> None:
    """A new diarization (crafted from the real one: labels renamed, edges moved, half of one voice's longest turn
    split off as a small new label, and a new label where no one spoke before) keeps the names the user gave,
    by time overlap with the old labels' turns; only the label that overlaps nothing is left unknown."""
    runner = CliRunner()
    assert runner.invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(unnamed, COUPLE)
    old_turns = diarize.read_turns(unnamed, COUPLE)
    old_labels = sorted({t.label for t in old_turns})
    names = {label: ["Daniel", "Therapist", "Maya"][i % 3] for i, label in enumerate(old_labels)}
    text = path.read_text(encoding="utf-8")
    for label in old_labels:
        text = re.sub(rf'(?m)^{label} = ""', f'{label} = "{names[label]}"', text)
    path.write_text(text, encoding="utf-8")
    rename = dict(zip(old_labels, [f"SPEAKER_{i:02d}" for i in reversed(range(len(old_labels)))]))
    longest = max((t for t in old_turns if t.label == old_labels[0]), key=lambda t: t.end - t.start)
    middle = (longest.start + longest.end) / 2
    new_turns = []
    for turn in old_turns:
        start, end = turn.start + 0.1, turn.end + 0.1
        if turn == longest:
            new_turns += [SpeakerTurn(start=start, end=middle, label=rename[turn.label]),
                          SpeakerTurn(start=middle, end=end, label="SPEAKER_09")]
        else:
            new_turns.append(SpeakerTurn(start=start, end=end, label=rename[turn.label]))
    ordered = sorted(old_turns, key=lambda t: t.start)
    reach, gaps = 0.0, []
    for turn in ordered:
        gaps.append((turn.start - reach, reach, turn.start))
        reach = max(reach, turn.end)
    _, gap_start, gap_end = max(gaps)
    assert gap_end - gap_start > 0.4, "the sample has pauses between turns"
    new_turns.append(SpeakerTurn(start=gap_start + 0.2, end=gap_end - 0.1, label="SPEAKER_08"))
    folder = unnamed.session_dir("diarization", COUPLE)
    write_jsonl_atomic(folder / "turns.jsonl", sorted(new_turns, key=lambda t: t.start))
    record = diarize.read_diarization(unnamed, COUPLE)
    write_record_atomic(folder / "diarization.json",
                        record.model_copy(update={"turns_sha256": sha256_file(folder / "turns.jsonl")}))
    from pipeline.speech.speaker_map import write_speaker_map

    context = StepContext.load(unnamed)
    result = write_speaker_map(unnamed, context.select([COUPLE])[0], context.settings, refresh=True)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for old, new in rename.items():
        assert data["labels"][new] == names[old], (old, new)
        assert result.carried[new].old_labels == (old,)
    assert data["labels"]["SPEAKER_09"] == names[old_labels[0]]  # the same voice, cut in two
    assert data["labels"]["SPEAKER_08"] == "" and "SPEAKER_08" not in result.carried
    written = path.read_text(encoding="utf-8")
    assert re.search(r'(?m)^SPEAKER_08 = "" # no name proposed', written)
    assert f"carried from {old_labels[0]}" in written
    assert path.with_suffix(".toml.bak").exists()
    rest = sum(t.end - t.start for t in new_turns if t.label == rename[old_labels[0]])
    if (longest.end - middle) / (longest.end - middle + rest) < context.settings.speech.rows.split_max_share:
        assert any(w.startswith("SPEAKER_09 ") for w in result.warnings), result.warnings


def test_refresh_without_the_old_turns_says_names_could_not_be_carried(unnamed: Project) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(unnamed, COUPLE)
    path.write_text(path.read_text(encoding="utf-8").replace(
        diarize.read_diarization(unnamed, COUPLE).turns_sha256, "0" * 64), encoding="utf-8")
    result = runner.invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE, "--refresh"])
    assert result.exit_code == 0, result.output
    assert "no copy of the turns" in result.output and "0" * 12 in result.output


def test_after_filling_the_file_the_build_finishes(unnamed: Project) -> None:
    assert CliRunner().invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(unnamed, COUPLE)
    labels = sorted(tomllib.loads(path.read_text(encoding="utf-8"))["labels"])
    text = path.read_text(encoding="utf-8")
    for label, name in zip(labels, ["Therapist", "Maya", "Daniel", "Maya"]):
        text = re.sub(rf'(?m)^{label} = ""', f'{label} = "{name}"', text)
    path.write_text(text, encoding="utf-8")
    report = run_stages(unnamed, ("rows",), (COUPLE,))["rows"]
    assert not report.failed, report.failed
    assert read_rows(unnamed, COUPLE)


def test_the_rows_stop_is_one_short_line_printed_once_with_each_labels_evidence_below(unnamed: Project) -> None:
    """Issue 22: the stop was one very long line (every label's evidence inline), printed again by `waiting:`."""
    result = CliRunner().invoke(main, ["--root", str(unnamed.root), "rows", COUPLE])
    assert result.exit_code == 1
    output = result.output
    assert output.count("no confident name") == 1, output
    (first,) = [text for text in output.splitlines() if "no confident name" in text]
    assert "s of speech" not in first and f"build/snippets/{COUPLE}/" in first and "rescue speakers" in first
    for label in {t.label for t in diarize.read_turns(unnamed, COUPLE)}:
        assert re.search(rf"(?m)^    {label}: \d+\.\d s of speech", output), (label, output)
    assert f"waiting: {COUPLE} waits at rows (failed: the error above)" in output


def test_a_filled_in_speaker_file_keeps_saying_what_was_proposed_and_speakers_shows_the_names(
        unnamed: Project) -> None:
    """Issue 22: the comments said "UNKNOWN: fill in" after the names were filled in, and `rescue speakers`
    still printed them as unknown."""
    runner = CliRunner()
    assert runner.invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE]).exit_code == 0
    path = mapping.mapping_path(unnamed, COUPLE)
    text = path.read_text(encoding="utf-8")
    labels = sorted({t.label for t in diarize.read_turns(unnamed, COUPLE)})
    assert "fill in" not in text and "UNKNOWN" not in text
    names = {label: ("Maya", "Daniel", "Therapist")[i % 3] for i, label in enumerate(labels)}
    for label, name in names.items():  # what a person does: write the name, leave the comment as it is
        assert re.search(rf'(?m)^{label} = "" # no name proposed -- ', text), label
        text = text.replace(f'{label} = "" #', f'{label} = "{name}" #')
    path.write_text(text, encoding="utf-8")
    again = runner.invoke(main, ["--root", str(unnamed.root), "speakers", COUPLE])
    assert again.exit_code == 0, again.output
    for label, name in names.items():
        assert f"ok {label} -> {name}: yours, kept from the file" in again.output, again.output
    assert "?? " not in again.output and "(unknown)" not in again.output
    assert tomllib.loads(path.read_text(encoding="utf-8"))["labels"] == names
    assert "fill in" not in path.read_text(encoding="utf-8")
