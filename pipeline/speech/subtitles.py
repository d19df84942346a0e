"""Subtitles (SRT/VTT, parsed by pysubs2) as a text-and-timing source, as the paper used them.

Checks what pysubs2 lets through silently: a malformed timing line is swallowed into the previous cue's
text, and WebVTT voice tags (`<v Maya>`) are dropped; so timing lines inside text are refused and voice
tags become `Maya:` prefixes before parsing. Times are shifted to the session clip (time 0 = clip_start).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pysubs2

from pipeline.errors import RescueError
from pipeline.speech.records import SpeechSegment

_FORMATS = {".srt": "srt", ".vtt": "vtt"}
_VOICE_TAG = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>]+)>")
_TIMING_LINE = re.compile(r"\d+:\d+.*-->")
# "Maya: text", "- Maya: text", "DR. SUE JOHNSON: text" -- a short name before a colon at a line start.
_PREFIX = re.compile(r"^\s*-?\s*([^\W\d_][\w.'’ -]{0,40}?)\s*:\s+(\S.*)$")
_DASH = re.compile(r"^\s*-\s+")
_SOUND_ONLY = re.compile(r"^(\s*(\[[^\]]*\]|\([^)]*\)|[♪♫♬#*]+)\s*)+$")
_FIX_TIMING = "correct that cue in the subtitle file (HH:MM:SS,mmm --> HH:MM:SS,mmm, end after start)"


@dataclass(frozen=True)
class CuePart:
    speaker: str | None
    text: str


@dataclass(frozen=True)
class Cue:
    number: int  # 1-based, in file order
    start: float
    end: float
    parts: tuple[CuePart, ...]


@dataclass(frozen=True)
class SubtitleRead:
    cues: tuple[Cue, ...]
    sound_only: int  # cues with only sound descriptions ([music], ♪), left out of the speech
    reordered: bool


def _clock(ms: int) -> str:
    hours, rest = divmod(max(ms, 0), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours:02d}:{minutes:02d}:{rest // 1000:02d},{rest % 1000:03d}"


def _decode(path: Path, where: str, encoding: str) -> str:
    data = path.read_bytes()
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in {"utf-8", "utf8"} else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RescueError(
            f"{where}: line {line} is not {encoding} (byte 0x{data[exc.start]:02x})",
            "re-save it as UTF-8 (e.g. `iconv -f WINDOWS-1252 -t UTF-8 in.srt > out.srt`), or set "
            "[tool.rescue.speech] subtitle_encoding to the file's encoding",
        ) from exc
    except LookupError as exc:
        raise RescueError(f"unknown subtitle_encoding {encoding!r}", "use a Python codec name, e.g. 'cp1252'") from exc


def split_parts(text: str) -> tuple[CuePart, ...]:
    """Lines of a cue -> parts, one per speaker: a `Name:` prefix or a leading dash starts a new part."""
    parts: list[CuePart] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _PREFIX.match(line)
        if match:
            parts.append(CuePart(match.group(1).strip(), match.group(2).strip()))
        elif _DASH.match(line) or not parts:
            parts.append(CuePart(None, _DASH.sub("", line).strip()))
        else:
            parts[-1] = CuePart(parts[-1].speaker, f"{parts[-1].text} {line.strip()}")
    return tuple(part for part in parts if part.text and not _SOUND_ONLY.match(part.text))


def read_subtitles(path: Path, where: str, encoding: str = "utf-8") -> SubtitleRead:
    """Parse and check a subtitle file; every problem names the file, the cue and the fix."""
    kind = _FORMATS.get(path.suffix.lower())
    if kind is None:
        raise RescueError(f"{where}: unsupported subtitle format {path.suffix!r}", "give an .srt or .vtt file")
    if not path.is_file():
        raise RescueError(f"{where}: subtitle file not found",
                          "place it there, or clear the catalog's subtitles column")
    text = _decode(path, where, encoding)
    if kind == "vtt":
        text = _VOICE_TAG.sub(lambda m: f"{m.group(1).strip()}: ", text)
    try:
        subs = pysubs2.SSAFile.from_string(text, format_=kind)
    except Exception as exc:  # pysubs2 raises several kinds on broken files
        raise RescueError(f"{where}: cannot parse as {kind.upper()}: {exc}", _FIX_TIMING) from exc
    cues: list[Cue] = []
    sound_only = 0
    for number, event in enumerate((e for e in subs if not e.is_comment), start=1):
        plain = event.plaintext
        stray = next((line for line in plain.splitlines() if _TIMING_LINE.search(line)), None)
        if stray is not None:
            raise RescueError(f"{where}: cue {number} contains a malformed timing line {stray.strip()!r}", _FIX_TIMING)
        start, end = event.start / 1000, event.end / 1000
        if end <= start:
            raise RescueError(f"{where}: cue {number} ends ({_clock(event.end)}) before or when it starts "
                              f"({_clock(event.start)})", _FIX_TIMING)
        parts = split_parts(plain)
        if not parts:
            sound_only += 1
            continue
        cues.append(Cue(number, start, end, parts))
    if not cues and not sound_only:
        raise RescueError(f"{where}: no cues found", f"check that it is a valid {kind.upper()} file")
    ordered = sorted(cues, key=lambda cue: (cue.start, cue.number))
    return SubtitleRead(tuple(ordered), sound_only, ordered != cues)


def cue_segments(read: SubtitleRead, clip_start: float, duration: float) -> tuple[list[SpeechSegment], int, int]:
    """Cues -> segments in session time, one per speaker part. Returns (segments, cues outside the session,
    cues split between speakers). A cue with several speakers is divided in proportion to text length,
    since subtitles give no finer timing."""
    segments: list[SpeechSegment] = []
    outside = split = 0
    for cue in read.cues:
        start, end = cue.start - clip_start, cue.end - clip_start
        if end <= 0 or start >= duration:
            outside += 1
            continue
        start, end = max(0.0, start), min(duration, end)
        total = sum(len(part.text) for part in cue.parts)
        split += len(cue.parts) > 1
        at = start
        for part in cue.parts:
            stop = end if part is cue.parts[-1] else at + (end - start) * len(part.text) / total
            segments.append(SpeechSegment(start=round(at, 3), end=round(stop, 3), text=part.text,
                                          speaker_name=part.speaker, cue=cue.number))
            at = stop
    return segments, outside, split
