"""Bad audio with the real models: silence, a tone, noise, more voices than the catalog lists, and sessions
long enough to be processed in windows (memory must not grow with the length)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.catalog import append_entry
from pipeline.engine.context import StepContext
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.speech import diarize, transcribe
from pipeline.speech.pyannote_core_adapter import diarization_error
from pipeline.speech.settings import AsrSettings, DiarizationSettings, resolve_asr, resolve_diarization
from pipeline.speech.transcript_stage import plan_speakers
from pipeline.store import sha256_file
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, FAMILY, run_stages

SOUNDS = {
    "silence": "anullsrc=channel_layout=mono:sample_rate=22050",
    "tone": "sine=frequency=440:sample_rate=22050",  # music stand-in
    "noise": "anoisesrc=color=pink:amplitude=0.3:sample_rate=22050",
}


def _session(project: Project, name: str, seconds: int = 20) -> None:
    video = project.raw_video / f"{name}.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc=size=160x90:rate=10:duration={seconds}", "-f", "lavfi", "-t", str(seconds), "-i",
                    SOUNDS[name], "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac",
                    "-shortest", str(video)], check=True)
    append_entry(project, project.main_catalog, CatalogEntry(
        session_id=name, scenario="couple", participants=("Ann", "Bob"), video=project.rel(video),
        sha256=sha256_file(video)))


@pytest.mark.slow  # the real speech models, run by the test itself
def test_silence_tone_and_noise_give_empty_transcripts_with_warnings(project: Project) -> None:
    for name in SOUNDS:
        _session(project, name)
    reports = run_stages(project)
    assert all(not r.failed and len(r.ran) == 3 for r in reports.values()), {n: r.failed for n, r in reports.items()}
    for name in SOUNDS:
        record = transcribe.read_transcription(project, name)
        assert record.segments == 0 and record.words == 0
        expected = "the audio is silent" if name == "silence" else "no speech found"
        assert any(expected in w for w in record.warnings), record.warnings
        assert read_rows(project, name) == []
        summary = json.loads((project.session_dir("transcripts", name) / "summary.json").read_text())
        assert summary["rows"] == 0 and any("no rows" in w for w in summary["warnings"])
    assert diarize.read_turns(project, "silence") == []
    assert any("silent" in w for w in diarize.read_diarization(project, "silence").warnings)


def test_more_voices_than_the_catalog_lists_stop_with_a_clear_message(built_samples: Project) -> None:
    """The couple sample has three voices; pretend the catalog lists only Maya (so 2 speakers expected)."""
    audio = built_samples.session_dir("media", COUPLE) / "audio.wav"
    settings = resolve_diarization(DiarizationSettings())
    result = diarize.diarize_audio(audio, settings, diarize.speaker_bounds(2, settings))
    labels = {t.label for t in result.turns}
    assert len(labels) == 3  # at_least: pyannote may find up to 2 more than the catalog says
    context = StepContext.load(built_samples)
    entry = context.select([COUPLE])[0].model_copy(update={"participants": ("Maya",)})
    from pipeline.speech.transcript_stage import named_segments

    named = named_segments(built_samples, entry, context.settings, [], "whisperx")
    with pytest.raises(RescueError) as caught:
        plan_speakers(built_samples, entry, context.settings, result.turns, "x", named, labels, {})
    message = str(caught.value)  # the first line, then each label's evidence on a line of its own
    assert "no confident name" in caught.value.message and "'Daniel'" not in caught.value.message
    assert "'Daniel'" in message and "not in the catalog's participants" in message
    assert "Maya, Therapist" in caught.value.fix and "rescue speakers" in caught.value.fix


def test_windowed_transcription_matches_the_whole(built_samples: Project) -> None:
    audio = built_samples.session_dir("media", COUPLE) / "audio.wav"
    whole = transcribe.read_segments(built_samples, COUPLE)
    windowed = transcribe.transcribe_audio(audio, resolve_asr(AsrSettings(window_seconds=70)))
    assert windowed.windows == 2
    words = [w for s in windowed.segments for w in s.words]
    assert [w.start for w in words] == sorted(w.start for w in words)  # nothing duplicated out of order
    count = sum(len(s.words) for s in whole)
    assert abs(len(words) - count) <= 0.05 * count


def test_windowed_diarization_links_speakers_across_windows(built_samples: Project) -> None:
    audio = built_samples.session_dir("media", FAMILY) / "audio.wav"
    settings = resolve_diarization(DiarizationSettings(window_seconds=80))
    result = diarize.diarize_audio(audio, settings, diarize.speaker_bounds(4, settings))
    assert result.windows == 2
    truth = json.loads((built_samples.raw_video / f"{FAMILY}.truth.json").read_text())["turns"]
    reference = [(t["start"], t["end"], t["speaker"]) for t in truth]
    duration = transcribe.read_media(built_samples, FAMILY).duration
    score = diarization_error(reference, [(t.start, t.end, t.label) for t in result.turns], duration,
                              collar=0.0, skip_overlap=False)
    assert len({t.label for t in result.turns}) == 4
    assert score["der"] < 0.15, score


_MEASURE = """
import json, resource, sys
from pathlib import Path
from pipeline.speech.settings import AsrSettings, resolve_asr
from pipeline.speech.transcribe import transcribe_audio
result = transcribe_audio(Path(sys.argv[1]), resolve_asr(AsrSettings(window_seconds=300)))
print(json.dumps({"windows": result.windows, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _peak(audio: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(audio)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # the real speech models, run by the test itself
def test_memory_does_not_grow_with_session_length(tmp_path: Path) -> None:
    """Quiet noise (no speech, so only the VAD runs on all of it): 10 and 40 minutes, windows of 5 minutes.
    Reading the whole 40 minutes at once would add >150 MB (float32) on top of the 10-minute peak."""
    short, long = tmp_path / "short.wav", tmp_path / "long.wav"
    for path, seconds in ((short, 600), (long, 2400)):
        subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(path), "synth", str(seconds),
                        "whitenoise", "vol", "0.01"], check=True)
    small, large = _peak(short), _peak(long)
    assert small["windows"] >= 2 and large["windows"] >= 8
    assert large["rss_mb"] - small["rss_mb"] < 60, (small, large)
