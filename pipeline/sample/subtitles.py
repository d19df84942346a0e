"""Write the truth turns as an SRT file: one cue per turn, `Speaker: text`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pysubs2

from pipeline.records import TruthTurn


def write_srt(dest: Path, turns: Iterable[TruthTurn]) -> None:
    subs = pysubs2.SSAFile()
    for turn in turns:
        # Truth times are whole milliseconds already; round() only guards against float noise.
        start, end = round(turn.start * 1000), round(turn.end * 1000)
        subs.append(pysubs2.SSAEvent(start=start, end=end, text=f"{turn.speaker}: {turn.text}"))
    subs.save(str(dest), encoding="utf-8", format_="srt")
