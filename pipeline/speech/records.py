"""Frozen records of the speech stages: per-session summaries (with model provenance) and their parts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.records import Record, SessionId, Word

SourceKind = Literal["whisperx", "subtitles"]
WordTiming = Literal["whisperx-align", "faster-whisper", "none"]


class SpeechSegment(Record):
    """A stretch of speech text: one whisperx chunk (with words) or one subtitle cue (without)."""

    start: float = Field(ge=0)
    end: float = Field(ge=0)
    text: str
    words: tuple[Word, ...] = ()
    speaker_name: str | None = Field(default=None, description="subtitle prefix (`Name:`), as written")
    cue: int | None = Field(default=None, description="1-based cue number in the subtitle file")


class TranscriptionRecord(Record):
    """What `transcribe` produced for one session, and with which models (build/asr/<session>/transcription.json)."""

    session_id: SessionId
    source: SourceKind
    audio: str
    duration: float
    model: str = Field(description="whisper model name, or '' for subtitles")
    model_origin: str = Field(default="", description="where the weights came from (package, hub name, folder)")
    device: str = ""
    compute_type: str = ""
    language: str = ""
    batch_size: int = 0
    beam_size: int = 0
    vad: str = ""
    word_timing: WordTiming
    align_model: str = ""
    packages: dict[str, str] = Field(default_factory=dict, description="versions of the libraries that ran")
    windows: int = Field(0, description="audio windows transcribed (long sessions are split)")
    subtitles: str | None = None
    cues_read: int = 0
    cues_outside: int = Field(0, description="cues outside the session's clip span, left out")
    segments: int
    words: int
    warnings: tuple[str, ...] = ()


class SpeakerTurn(Record):
    start: float = Field(ge=0)
    end: float = Field(gt=0)
    label: str


class LabelStats(Record):
    label: str
    speech_seconds: float
    turns: int
    first_start: float


class DiarizationRecord(Record):
    """What `diarize` produced for one session (build/diarization/<session>/diarization.json)."""

    session_id: SessionId
    pipeline: str
    segmentation_model: str
    embedding_model: str
    clustering: str
    device: str
    packages: dict[str, str] = Field(default_factory=dict)
    catalog_speakers: int = Field(description="participants + Therapist (participants only where the catalog "
                                  "says no therapist speaks)")
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    unbounded_speakers: int | None = Field(None, description="voices the clustering found before the speaker-count "
                                           "bounds were applied (None: not known for this pipeline)")
    labels: tuple[LabelStats, ...]
    speech_seconds: float
    overlap_seconds: float = Field(description="time where two or more labels speak at once (kept, not dropped)")
    windows: int
    turns_sha256: str = Field(description="hash of turns.jsonl: speaker mapping files are tied to it")
    warnings: tuple[str, ...] = ()


class SpeakerAssignment(Record):
    """One diarization label (or subtitle name) and the participant it stands for."""

    key: str = Field(description="a diarization label, or 'name:<subtitle prefix>'")
    name: str
    origin: Literal["mapping file", "automatic", "subtitles"]
    evidence: str = ""


class TranscriptSummary(Record):
    """What `rows` produced for one session (build/transcripts/<session>/summary.json)."""

    session_id: SessionId
    source: SourceKind
    word_timing: WordTiming
    asr_model: str
    diarization_pipeline: str
    rows: int
    words: int
    overlap_rows: int
    speakers: tuple[SpeakerAssignment, ...]
    mapping_file: str | None = Field(description="the speaker mapping file used, if any")
    unused_labels: tuple[str, ...] = Field(default=(), description="diarization labels that received no speech text")
    clips: int
    exports: tuple[str, ...]
    warnings: tuple[str, ...] = ()
