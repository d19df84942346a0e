"""A synthetic recording in which only two people speak (no therapist): the couple sample's client turns in
their espeak-ng voices, laid out on one track like the samples, as an MP4 with a plain video stream, with an
SRT of `Speaker: text` cues and the true turns."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from pipeline.records import THERAPIST, TruthTurn
from pipeline.sample.script import load_script
from pipeline.sample.subtitles import write_srt
from pipeline.sample.track import lay_out
from pipeline.sample.voices import SAMPLE_RATE, synthesize

SPEAKERS = ("Maya", "Daniel")


def make_two_voice_recording(folder: Path, turns: int = 12) -> tuple[Path, Path, tuple[TruthTurn, ...]]:
    """`two_voices.mp4` and `two_voices.srt` in `folder`: the first `turns` client turns of the couple script."""
    script = load_script("couple")
    chosen = [turn for turn in script.turns if turn.speaker != THERAPIST][:turns]
    assert {turn.speaker for turn in chosen} == set(SPEAKERS)
    track = lay_out(chosen, [synthesize(turn.text, script.voices[turn.speaker]) for turn in chosen], SAMPLE_RATE)
    folder.mkdir(parents=True, exist_ok=True)
    video, subtitles = folder / "two_voices.mp4", folder / "two_voices.srt"
    with tempfile.TemporaryDirectory(prefix="two-voices-") as tmp:
        audio = Path(tmp) / "audio.wav"
        import wave

        with wave.open(str(audio), "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(track.rate)
            wav.writeframes(track.samples.astype("<i2").tobytes())
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                        f"color=c=gray:size=160x90:rate=10:duration={track.duration}", "-i", str(audio),
                        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac",
                        "-shortest", str(video)], check=True)
    write_srt(subtitles, track.turns)
    return video, subtitles, track.turns
