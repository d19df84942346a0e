"""Lay the synthesized turns out on one audio track and record where each one really is."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.records import TruthTurn
from pipeline.sample.script import ScriptTurn

LEAD_IN_S = 1.0
TAIL_S = 1.0
GAPS_S = (0.5, 0.8, 0.6, 1.0)  # cycled, so silences vary but regeneration stays identical
FPS = 10  # the session length is rounded up to whole video frames, so audio and video end together


@dataclass(frozen=True)
class Track:
    samples: np.ndarray  # mono int16
    rate: int
    turns: tuple[TruthTurn, ...]

    @property
    def duration(self) -> float:
        return self.samples.size / self.rate


def lay_out(turns: Sequence[ScriptTurn], clips: Sequence[np.ndarray], rate: int) -> Track:
    """Place each trimmed clip after the previous one plus a gap; truth times are the clips' exact positions."""
    if len(turns) != len(clips):
        raise ValueError("one clip per turn")
    spans: list[tuple[int, int]] = []
    cursor = round(LEAD_IN_S * rate)
    for n, clip in enumerate(clips):
        if n:
            cursor += round(GAPS_S[(n - 1) % len(GAPS_S)] * rate)
        spans.append((cursor, cursor + clip.size))
        cursor += clip.size
    frame_samples = rate // FPS
    if frame_samples * FPS != rate:
        raise ValueError(f"sample rate {rate} is not a whole number of samples per video frame")
    total = math.ceil((cursor + round(TAIL_S * rate)) / frame_samples) * frame_samples
    samples = np.zeros(total, dtype=np.int16)
    truth = []
    for n, (turn, clip, (start, end)) in enumerate(zip(turns, clips, spans, strict=True), start=1):
        samples[start:end] = clip
        # Millisecond times: what SRT can carry, and within 0.5 ms of the real sample positions.
        truth.append(
            TruthTurn(
                index=n,
                speaker=turn.speaker,
                target=turn.target,
                text=turn.text,
                start=round(start / rate, 3),
                end=round(end / rate, 3),
            )
        )
    return Track(samples=samples, rate=rate, turns=tuple(truth))
