"""A reader for NIST STM reference transcripts (the usual companion of RTTM in ASR and diarization scoring):

    <recording> <channel> <speaker> <begin> <end> [<label>] <transcript>

`;;` lines are comments; the optional `<o,f0,male>`-style label is skipped; segments whose transcript is
`ignore_time_segment_in_scoring`, or whose speaker is `excluded_region` / `inter_segment_gap`, are left out (they
are not scored). MeetEval's STM reader (used by pyannote.database) is the reference; it is not a dependency here,
so this small reader does the same with errors naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import RescueError

IGNORE_TEXT = "ignore_time_segment_in_scoring"
NOT_SPEAKERS = frozenset({"excluded_region", "inter_segment_gap"})
_FIX = "each STM line is: recording channel speaker begin end [<label>] words (see docs/speech.md)"


@dataclass(frozen=True)
class StmSegment:
    recording: str
    channel: str
    speaker: str
    start: float
    end: float
    text: str


def _seconds(value: str, what: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise RescueError(f"{where}: {what} time {value!r} is not a number", _FIX) from None


def read_stm(path: Path, encoding: str = "utf-8") -> list[StmSegment]:
    """The scored segments of an STM file, in file order."""
    try:
        lines = path.read_text(encoding=encoding).splitlines()
    except UnicodeDecodeError as exc:
        raise RescueError(f"{path}: not {encoding} text ({exc.reason} at byte {exc.start})",
                          "re-save the file as UTF-8") from exc
    segments = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(";;"):
            continue
        where = f"{path}:{number}"
        fields = stripped.split(None, 5)
        if len(fields) < 5:
            raise RescueError(f"{where}: expected at least 5 fields, found {len(fields)}", _FIX)
        recording, channel, speaker, begin, end = fields[:5]
        start, finish = _seconds(begin, "begin", where), _seconds(end, "end", where)
        if finish < start:
            raise RescueError(f"{where}: the segment ends ({finish}) before it begins ({start})", _FIX)
        text = fields[5] if len(fields) > 5 else ""
        if text.startswith("<"):
            closing = text.find(">")
            if closing < 0:
                raise RescueError(f"{where}: the label field {text.split()[0]!r} has no closing '>'", _FIX)
            text = text[closing + 1:].strip()
        if text.casefold() == IGNORE_TEXT or speaker.casefold() in NOT_SPEAKERS:
            continue
        segments.append(StmSegment(recording, channel, speaker, start, finish, text))
    return segments
