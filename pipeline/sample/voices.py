"""Speech for one turn: espeak-ng synthesis to WAV, then trimming to the real speech extent."""

from __future__ import annotations

import io
import wave

import numpy as np

from pipeline.errors import RescueError
from pipeline.sample import tools
from pipeline.sample.script import Voice

SAMPLE_RATE = 22050  # espeak-ng's native rate; resampling would only blur the timing truth
TRIM_FRAME_S = 0.005  # 5 ms frames: trimmed edges land within 5 ms of the first/last audible sound
TRIM_DB = -40.0  # frames quieter than this, relative to the loudest frame, count as silence


def synthesize(text: str, voice: Voice) -> np.ndarray:
    """Mono int16 samples at SAMPLE_RATE, with espeak-ng's leading/trailing silence trimmed away."""
    espeak = tools.require("espeak-ng")
    args = [espeak, "-v", voice.voice, "-p", str(voice.pitch), "-s", str(voice.speed), "--stdout", text]
    data = tools.run(args, f"synthesizing {text[:40]!r} with voice {voice.settings!r}")
    try:
        with wave.open(io.BytesIO(data)) as wav:
            rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
            samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16)
    except (wave.Error, EOFError) as exc:
        # espeak-ng exits 0 with empty output for an unknown voice, so an unreadable WAV means "bad voice".
        what = f"synthesizing with voice {voice.settings!r}"
        raise tools.failure("espeak-ng", what, f"no usable audio ({exc})") from exc
    if (rate, channels, width) != (SAMPLE_RATE, 1, 2):
        raise RescueError(
            f"espeak-ng produced {rate} Hz, {channels} channel(s), {8 * width}-bit audio; "
            f"expected {SAMPLE_RATE} Hz mono 16-bit",
            tools.INSTALL_FIX,
        )
    speech = trim_silence(samples, rate)
    if speech.size == 0:
        raise tools.failure("espeak-ng", f"synthesizing with voice {voice.settings!r}", "the audio is silent")
    return speech


def trim_silence(samples: np.ndarray, rate: int) -> np.ndarray:
    """Cut leading/trailing near-silence, judged by frame RMS energy against the loudest frame."""
    frame = max(1, round(TRIM_FRAME_S * rate))
    usable = samples[: samples.size // frame * frame].astype(np.float64)
    if usable.size == 0:
        return samples[:0]
    rms = np.sqrt((usable.reshape(-1, frame) ** 2).mean(axis=1))
    loud = np.flatnonzero(rms > rms.max() * 10 ** (TRIM_DB / 20))
    if rms.max() == 0 or loud.size == 0:
        return samples[:0]
    return samples[loud[0] * frame : (loud[-1] + 1) * frame]
