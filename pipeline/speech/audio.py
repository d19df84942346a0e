"""Streaming access to a session's 16 kHz mono PCM WAV: windows for long sessions, cut at quiet points,
and a loudness check, all without loading the whole file (memory stays bounded for hours-long sessions)."""

from __future__ import annotations

import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.errors import RescueError

QUIET_FRAME_S = 0.1  # windows are cut at the quietest 100 ms near their planned end
SEARCH_S = 10.0  # ... looking back at most this far
SILENT_DBFS = -60.0  # loudest 100 ms quieter than this: nothing anyone could transcribe
_BLOCK_S = 60.0


@dataclass(frozen=True)
class WavInfo:
    sample_rate: int
    frames: int

    @property
    def duration(self) -> float:
        return self.frames / self.sample_rate


def wav_info(path: Path) -> WavInfo:
    try:
        with wave.open(str(path), "rb") as handle:
            if handle.getnchannels() != 1 or handle.getsampwidth() != 2:
                raise RescueError(f"{path}: expected mono 16-bit PCM WAV", "re-run `rescue ingest` for the session")
            return WavInfo(handle.getframerate(), handle.getnframes())
    except (wave.Error, EOFError, FileNotFoundError) as exc:
        raise RescueError(f"cannot read session audio {path}: {exc}", "re-run `rescue ingest` for the session") from exc


def read_span(path: Path, start: float, end: float) -> np.ndarray:
    """float32 samples in [-1, 1] for [start, end) seconds."""
    with wave.open(str(path), "rb") as handle:
        rate, total = handle.getframerate(), handle.getnframes()
        first = min(total, max(0, round(start * rate)))
        last = total if end == float("inf") else min(total, max(first, round(end * rate)))
        handle.setpos(first)
        data = handle.readframes(last - first)
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def copy_span(source: Path, target: Path, start: float, end: float) -> float:
    """Write [start, end) seconds of the WAV `source` to `target` (same format, samples copied as they are);
    returns the seconds written."""
    with wave.open(str(source), "rb") as handle:
        params = handle.getparams()
        first = min(params.nframes, max(0, round(start * params.framerate)))
        last = min(params.nframes, max(first, round(end * params.framerate)))
        handle.setpos(first)
        data = handle.readframes(last - first)
    with wave.open(str(target), "wb") as out:
        out.setparams(params)
        out.writeframes(data)
    return (last - first) / params.framerate


def _frame_rms(samples: np.ndarray, frame: int) -> np.ndarray:
    usable = samples[: samples.size // frame * frame]
    if usable.size == 0:
        return np.zeros(0)
    return np.sqrt((usable.reshape(-1, frame).astype(np.float64) ** 2).mean(axis=1))


def loudest_dbfs(path: Path) -> float:
    """Level of the loudest 100 ms of the file in dBFS (streamed in one-minute blocks)."""
    info = wav_info(path)
    frame = max(1, round(QUIET_FRAME_S * info.sample_rate))
    loudest = 0.0
    start = 0.0
    while start < info.duration:
        rms = _frame_rms(read_span(path, start, start + _BLOCK_S), frame)
        if rms.size:
            loudest = max(loudest, float(rms.max()))
        start += _BLOCK_S
    return 20 * np.log10(loudest) if loudest > 0 else -np.inf


def plan_windows(path: Path, window_seconds: float) -> list[tuple[float, float]]:
    """Consecutive [start, end) spans covering the file, each at most `window_seconds` long, cut at the quietest
    100 ms within the last SEARCH_S seconds before the planned end (so a word is rarely cut in two)."""
    info = wav_info(path)
    spans: list[tuple[float, float]] = []
    start = 0.0
    while info.duration - start > window_seconds:
        planned = start + window_seconds
        look_from = max(start + window_seconds / 2, planned - SEARCH_S)
        frame = max(1, round(QUIET_FRAME_S * info.sample_rate))
        rms = _frame_rms(read_span(path, look_from, planned), frame)
        cut = planned if rms.size == 0 else look_from + (int(np.argmin(rms)) + 0.5) * QUIET_FRAME_S
        spans.append((round(start, 3), round(cut, 3)))
        start = round(cut, 3)
    spans.append((round(start, 3), round(info.duration, 3)))
    return spans
