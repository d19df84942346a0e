"""The synthetic sample sessions: real espeak-ng + ffmpeg output, checked against its own ground truth."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import ffmpeg
import numpy as np
import pysubs2
import pytest
from pydantic import ValidationError

from pipeline.errors import RescueError
from pipeline.records import GROUP_LABELS, THERAPIST, SampleTruth
from pipeline.sample import GeneratedSample, make_samples
from pipeline.sample.script import Script, load_script

RATE = 16000
EXPECTED = {
    "sample/maya_and_daniel": ("couple", ("Maya", "Daniel"), (90.0, 120.0)),
    "sample/linda_mark_and_zoe": ("family", ("Linda", "Mark", "Zoe"), (110.0, 150.0)),
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[GeneratedSample]]:
    dest = tmp_path_factory.mktemp("samples")
    started = time.perf_counter()
    samples = make_samples(dest)
    print(f"\nmake_samples: {time.perf_counter() - started:.1f} s")
    return dest, samples


@pytest.fixture(scope="module")
def samples(generated: tuple[Path, list[GeneratedSample]]) -> list[GeneratedSample]:
    return generated[1]


def _ids(samples: list[GeneratedSample]) -> list[str]:
    return [s.truth.session_id for s in samples]


def _decode_audio(video: Path) -> np.ndarray:
    """The MP4's audio as mono 16 kHz float samples, decoded by ffmpeg (so AAC delay/edit lists are honoured)."""
    stream = ffmpeg.input(str(video)).output("pipe:", format="f32le", ac=1, ar=RATE)
    out, _ = stream.run(capture_stdout=True, quiet=True)
    return np.frombuffer(out, dtype=np.float32).astype(np.float64)


def _rms(audio: np.ndarray, start: float, end: float) -> float:
    part = audio[max(0, round(start * RATE)) : round(end * RATE)]
    return float(np.sqrt(np.mean(part**2))) if part.size else 0.0


def _median_f0(audio: np.ndarray, spans: list[tuple[float, float]]) -> float:
    """Median pitch over voiced 40 ms frames, from the strongest autocorrelation peak between 60 and 400 Hz."""
    size, hop = round(0.04 * RATE), round(0.02 * RATE)
    lo, hi = RATE // 400, RATE // 60
    pitches = []
    for start, end in spans:
        part = audio[round(start * RATE) : round(end * RATE)]
        for i in range(0, part.size - size, hop):
            frame = part[i : i + size] - part[i : i + size].mean()
            ac = np.correlate(frame, frame, mode="full")[size - 1 :]
            if ac[0] < 1e-4:  # silence inside the turn (between words)
                continue
            lag = lo + int(np.argmax(ac[lo:hi]))
            if ac[lag] / ac[0] > 0.5:  # clearly periodic: a voiced frame
                pitches.append(RATE / lag)
    assert len(pitches) > 50, "too few voiced frames to estimate pitch"
    return float(np.median(pitches))


def test_two_sessions_with_expected_files(generated: tuple[Path, list[GeneratedSample]]) -> None:
    dest, samples = generated
    assert _ids(samples) == list(EXPECTED)
    for sample in samples:
        stem = sample.truth.session_id.rsplit("/", 1)[-1]
        assert sample.video == dest / f"{stem}.mp4"
        assert sample.subtitles == dest / f"{stem}.srt"
        assert sample.truth_file == dest / f"{stem}.truth.json"
        assert all(p.is_file() and p.stat().st_size > 0 for p in (sample.video, sample.subtitles, sample.truth_file))
        assert SampleTruth.model_validate_json(sample.truth_file.read_text()) == sample.truth
        scenario, participants, (low, high) = EXPECTED[sample.truth.session_id]
        assert (sample.truth.scenario, sample.truth.participants) == (scenario, participants)
        assert low <= sample.truth.duration <= high


def test_truth_turns_are_valid_benchmark_rows(samples: list[GeneratedSample]) -> None:
    for sample in samples:
        truth = sample.truth
        speakers = {THERAPIST, *truth.participants}
        group = GROUP_LABELS[truth.scenario]
        turns = truth.turns
        assert [t.index for t in turns] == list(range(1, len(turns) + 1))
        assert turns[0].start >= 0.5 and turns[-1].end <= truth.duration - 0.5
        for turn in turns:
            assert 0 <= turn.start < turn.end <= truth.duration
            assert turn.speaker in speakers
            assert turn.target and set(turn.target) <= speakers | {group}
            assert turn.speaker not in turn.target
            assert group not in turn.target or turn.target == (group,)
            assert 5 <= len(turn.text.split()) <= 30
        for before, after in itertools.pairwise(turns):
            assert after.start - before.end >= 0.4, f"turns {before.index} and {after.index} overlap or touch"
            # A row changes with the speaker or, for the same speaker, with the target (spec section 2).
            assert after.speaker != before.speaker or after.target != before.target
        same_speaker = sum(a.speaker == b.speaker for a, b in itertools.pairwise(turns))
        assert same_speaker <= len(turns) // 5
        counts = {s: sum(t.speaker == s for t in turns) for s in speakers}
        assert min(counts.values()) >= 3, counts
        assert set(truth.voices) == speakers and len(set(truth.voices.values())) == len(speakers)
        assert any(t.target == (group,) for t in turns) and any(t.target == ("Therapist",) for t in turns)


def test_srt_matches_truth(samples: list[GeneratedSample]) -> None:
    for sample in samples:
        subs = pysubs2.load(str(sample.subtitles), encoding="utf-8")
        assert len(subs) == len(sample.truth.turns)
        for cue, turn in zip(subs, sample.truth.turns, strict=True):
            assert abs(cue.start / 1000 - turn.start) <= 0.001
            assert abs(cue.end / 1000 - turn.end) <= 0.001
            assert cue.plaintext == f"{turn.speaker}: {turn.text}"


def test_media_streams(samples: list[GeneratedSample]) -> None:
    for sample in samples:
        probe = ffmpeg.probe(str(sample.video))
        video = [s for s in probe["streams"] if s["codec_type"] == "video"]
        audio = [s for s in probe["streams"] if s["codec_type"] == "audio"]
        assert len(video) == 1 and len(audio) == 1
        v, a = video[0], audio[0]
        assert (v["codec_name"], v["width"], v["height"], v["pix_fmt"]) == ("h264", 640, 360, "yuv420p")
        num, den = map(int, v["avg_frame_rate"].split("/"))
        assert abs(num / den - 10) < 0.01
        assert a["codec_name"] == "aac"
        duration = sample.truth.duration
        assert abs(float(v["duration"]) - duration) <= 0.15
        assert abs(float(a["duration"]) - duration) <= 0.15
        assert abs(float(v["duration"]) - float(a["duration"])) <= 0.1
        assert abs(float(probe["format"]["duration"]) - duration) <= 0.15


def test_speech_is_exactly_where_the_truth_says(samples: list[GeneratedSample]) -> None:
    for sample in samples:
        audio = _decode_audio(sample.video)
        turns = sample.truth.turns
        assert abs(audio.size / RATE - sample.truth.duration) <= 0.15
        speech = [_rms(audio, t.start + 0.02, t.end - 0.02) for t in turns]
        bounds = [0.0, *itertools.chain.from_iterable((t.start, t.end) for t in turns), sample.truth.duration]
        gaps = [_rms(audio, a + 0.05, b - 0.05) for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
        assert min(speech) > 30 * max(gaps), (min(speech), max(gaps))
        # The edges are tight (~20 ms): near-silence (< -30 dB) from 20 to 70 ms outside each turn, and sound
        # (> -40 dB; words may fade out softly) in its first and last 40 ms.
        for turn, level in zip(turns, speech, strict=True):
            assert _rms(audio, turn.start - 0.07, turn.start - 0.02) < 0.03 * level, f"sound before turn {turn.index}"
            assert _rms(audio, turn.end + 0.02, turn.end + 0.07) < 0.03 * level, f"sound after turn {turn.index}"
            assert _rms(audio, turn.start, turn.start + 0.04) > 0.01 * level, f"turn {turn.index} starts late"
            assert _rms(audio, turn.end - 0.04, turn.end) > 0.01 * level, f"turn {turn.index} ends early"


def test_speakers_have_distinct_voices(samples: list[GeneratedSample]) -> None:
    for sample in samples:
        audio = _decode_audio(sample.video)
        speakers = (THERAPIST, *sample.truth.participants)
        f0 = {
            s: _median_f0(audio, [(t.start, t.end) for t in sample.truth.turns if t.speaker == s]) for s in speakers
        }
        for a, b in itertools.combinations(speakers, 2):
            ratio = max(f0[a], f0[b]) / min(f0[a], f0[b])
            assert ratio >= 1.15, f"{sample.truth.session_id}: {a} and {b} sound alike (median F0 {f0})"


def test_regeneration_is_byte_identical(
    generated: tuple[Path, list[GeneratedSample]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    first_dir, first = generated
    second = make_samples(tmp_path_factory.mktemp("again"))
    assert [s.truth for s in second] == [s.truth for s in first]
    for a, b in zip(first, second, strict=True):
        for name in ("video", "subtitles", "truth_file"):
            path_a, path_b = getattr(a, name), getattr(b, name)
            assert path_a.read_bytes() == path_b.read_bytes(), f"{path_a.name} differs between runs"


def test_missing_tools_raise_rescue_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: neither espeak-ng nor ffmpeg can be found
    with pytest.raises(RescueError) as caught:
        make_samples(tmp_path / "out")
    assert "espeak-ng" in caught.value.message and "apt-get install espeak-ng ffmpeg" in caught.value.fix


def test_scripts_are_data_and_are_validated() -> None:
    raw = json.loads(Path(__file__).parents[1].joinpath("pipeline/sample/scripts/couple.json").read_text())
    assert load_script("couple") == Script.model_validate(raw)
    raw["turns"][0] = {"speaker": "Maya", "target": ["Maya"], "text": "I am talking to myself here today."}
    with pytest.raises(ValidationError, match="never the speaker"):
        Script.model_validate(raw)
