"""Per-session exports of the rows: JSON (typed record), SRT and VTT (pysubs2), RTTM (pyannote.core)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pysubs2
from pydantic import Field

from pipeline.records import Record, Scenario, SessionId, TranscriptRow
from pipeline.speech.records import DiarizationRecord, SpeakerAssignment, TranscriptionRecord

JSON_FILE = "transcript.json"
SRT_FILE = "transcript.srt"
VTT_FILE = "transcript.vtt"
RTTM_FILE = "transcript.rttm"


class TranscriptExport(Record):
    """The whole session transcript with the provenance of every model that made it."""

    session_id: SessionId
    scenario: Scenario
    participants: tuple[str, ...]
    transcription: TranscriptionRecord
    diarization: DiarizationRecord
    speakers: tuple[SpeakerAssignment, ...]
    rows: tuple[TranscriptRow, ...] = Field(description="the same rows as rows.jsonl")


def _subtitles(rows: Sequence[TranscriptRow]) -> pysubs2.SSAFile:
    subs = pysubs2.SSAFile()
    for row in rows:
        subs.append(pysubs2.SSAEvent(start=round(row.start * 1000), end=round(row.end * 1000),
                                     text=f"{row.speaker}: {row.text}"))
    return subs


def write_exports(folder: Path, export: TranscriptExport) -> list[str]:
    """Write the four export files into `folder`; returns their names."""
    from pipeline.speech.pyannote_core_adapter import write_rttm

    (folder / JSON_FILE).write_text(export.model_dump_json(indent=2) + "\n", encoding="utf-8")
    subs = _subtitles(export.rows)
    subs.save(str(folder / SRT_FILE), encoding="utf-8", format_="srt")
    subs.save(str(folder / VTT_FILE), encoding="utf-8", format_="vtt")
    # RTTM fields are space-separated: a name with spaces is written with underscores.
    write_rttm(folder / RTTM_FILE, export.session_id,
               [(row.start, row.end, row.speaker.replace(" ", "_")) for row in export.rows])
    return [JSON_FILE, SRT_FILE, VTT_FILE, RTTM_FILE]
