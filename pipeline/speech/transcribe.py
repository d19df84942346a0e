"""The `transcribe` stage: a session's speech as text segments, from WhisperX (words with times) or from the
catalog's subtitles (cues with speaker prefixes). Writes build/asr/<session>/{segments.jsonl,transcription.json}."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.progress import window_reporter
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia
from pipeline.settings import Settings, load_settings
from pipeline.speech import audio as wav
from pipeline.speech.records import SourceKind, SpeechSegment, TranscriptionRecord
from pipeline.speech.model_slot import ModelSlot
from pipeline.speech.settings import AsrSettings, SpeechSettings, resolve_asr
from pipeline.speech.subtitles import cue_segments, read_subtitles
from pipeline.store import read_jsonl, write_jsonl_atomic, write_record_atomic

AREA = "asr"
RECORD_NAME = "transcription.json"
SEGMENTS_FILE = "segments.jsonl"


def read_media(project: Project, session_id: str) -> SessionMedia:
    path = layout.media_record(project, session_id)
    if not path.exists():
        raise RescueError(f"session {session_id}: {project.rel(path)} is missing", f"run `rescue ingest {session_id}`")
    return SessionMedia.model_validate_json(path.read_text(encoding="utf-8"))


def read_segments(project: Project, session_id: str) -> list[SpeechSegment]:
    return read_jsonl(project.session_dir(AREA, session_id) / SEGMENTS_FILE, SpeechSegment)


def read_transcription(project: Project, session_id: str) -> TranscriptionRecord:
    path = project.session_dir(AREA, session_id) / RECORD_NAME
    return TranscriptionRecord.model_validate_json(path.read_text(encoding="utf-8"))


def source_for(entry: CatalogEntry, speech: SpeechSettings) -> SourceKind:
    """Which text source a session uses: a setting, plus whether the catalog lists subtitles."""
    if speech.source == "subtitles":
        if not entry.subtitles:
            raise RescueError(f"session {entry.session_id}: [tool.rescue.speech] source = 'subtitles' but the "
                              "catalog lists no subtitles for it",
                              "add the SRT/VTT in the catalog's subtitles column, or set source = 'auto'")
        return "subtitles"
    if speech.source == "auto" and entry.subtitles:
        return "subtitles"
    return "whisperx"


def transcribe_inputs(project: Project, entry: CatalogEntry) -> list[Path]:
    """The subtitle file is an input only where it is the text source (editing it then re-runs the stage)."""
    speech = load_settings(project.root).speech
    if entry.subtitles and speech.source in {"subtitles", "auto"}:
        return [project.abs(entry.subtitles)]
    return []


@dataclass
class AsrResult:
    segments: list[SpeechSegment]
    windows: int
    warnings: list[str] = field(default_factory=list)
    loaded: Any = None


def _load_whisperx(settings: AsrSettings) -> Any:
    from pipeline.speech import whisperx_adapter  # heavy: imported only when a model is needed

    return whisperx_adapter.load(settings)


_SLOT = ModelSlot("whisperx", _load_whisperx)


def loaded_asr(settings: AsrSettings) -> Any:
    return _SLOT.get(settings)


def transcribe_audio(audio: Path, settings: AsrSettings) -> AsrResult:
    """WhisperX over a 16 kHz mono WAV, window by window (bounded memory). `settings` must be resolved."""
    from pipeline.speech import whisperx_adapter

    level = wav.loudest_dbfs(audio)
    if level < wav.SILENT_DBFS:
        return AsrResult([], 0, [f"the audio is silent (loudest 100 ms at {level:.0f} dBFS): empty transcript"])
    loaded = loaded_asr(settings)
    spans = wav.plan_windows(audio, settings.window_seconds)
    segments: list[SpeechSegment] = []
    for start, end in spans:
        segments.extend(whisperx_adapter.transcribe(loaded, wav.read_span(audio, start, end), start,
                                                    progress=window_reporter(start, end, spans[0][0], spans[-1][1])))
    warnings = list(loaded.warnings)
    if not segments:
        warnings.append("no speech found (the voice-activity detector heard none, or only music/noise): "
                        "empty transcript")
    return AsrResult(segments, len(spans), warnings, loaded)


def _from_subtitles(project: Project, entry: CatalogEntry, media: SessionMedia, speech: SpeechSettings,
                    common: dict) -> tuple[list[SpeechSegment], TranscriptionRecord]:
    assert entry.subtitles is not None
    path = project.abs(entry.subtitles)
    read = read_subtitles(path, entry.subtitles, speech.subtitle_encoding)
    if not entry.is_clip:
        late = next((cue for cue in read.cues if cue.start >= media.duration + 1.0), None)
        if late is not None:
            raise RescueError(f"{entry.subtitles}: cue {late.number} starts at {late.start:.3f} s, after the end of "
                              f"the session audio ({media.duration:.3f} s)",
                              "correct the subtitle timing, or cut the session with clip_start/clip_end")
    segments, outside, split = cue_segments(read, media.clip_start, media.duration)
    warnings = []
    if read.reordered:
        warnings.append("cues were out of time order; sorted by start time")
    if read.sound_only:
        warnings.append(f"{read.sound_only} cue(s) held only sound descriptions ([music], ♪) and are not speech")
    if split:
        warnings.append(f"{split} cue(s) hold several speakers; their times are divided by text length")
    if outside:
        warnings.append(f"{outside} cue(s) lie outside the session's clip and were left out")
    if not segments:
        warnings.append("no subtitle cue falls inside the session: empty transcript")
    record = TranscriptionRecord(**common, source="subtitles", model="", word_timing="none",
                                 subtitles=entry.subtitles, cues_read=len(read.cues) + read.sound_only,
                                 cues_outside=outside, segments=len(segments), words=0, warnings=tuple(warnings))
    return segments, record


def transcribe_session(project: Project, entry: CatalogEntry, settings: Settings,
                       workdir: Path, final_dir: Path) -> TranscriptionRecord:
    media = read_media(project, entry.session_id)
    speech = settings.speech
    common = dict(session_id=entry.session_id, audio=media.audio, duration=round(media.duration, 3))
    if source_for(entry, speech) == "subtitles":
        segments, record = _from_subtitles(project, entry, media, speech, common)
    else:
        from pipeline.speech.whisperx_adapter import package_versions, resolve_model

        asr = resolve_asr(speech.asr)
        result = transcribe_audio(project.abs(media.audio), asr)
        loaded = result.loaded
        record = TranscriptionRecord(
            **common, source="whisperx", model=asr.model, model_origin=resolve_model(asr.model)[1],
            device=asr.device, compute_type=asr.compute_type, language=asr.language, batch_size=asr.batch_size,
            beam_size=asr.beam_size, vad=asr.vad,
            word_timing=loaded.word_timing if loaded else "faster-whisper",
            align_model=loaded.align_model if loaded else "", packages=package_versions(), windows=result.windows,
            segments=len(result.segments), words=sum(len(s.words) for s in result.segments),
            warnings=tuple(result.warnings),
        )
        segments = result.segments
    write_jsonl_atomic(workdir / SEGMENTS_FILE, segments)
    write_record_atomic(workdir / RECORD_NAME, record)
    return record
