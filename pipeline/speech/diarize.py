"""The `diarize` stage: who spoke when, from pyannote.audio. Overlapping turns are kept (and counted).
Long sessions are diarized in windows whose speakers are linked by their centroid embeddings, so memory
does not grow with the session length. Writes build/diarization/<session>/{turns.jsonl, diarization.rttm,
diarization.json}."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.progress import window_reporter
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.settings import Settings
from pipeline.speech import audio as wav
from pipeline.speech.records import DiarizationRecord, LabelStats, SpeakerTurn
from pipeline.speech.model_slot import ModelSlot
from pipeline.speech.settings import DiarizationSettings, resolve_diarization
from pipeline.speech.transcribe import read_media
from pipeline.store import read_jsonl, sha256_file, write_jsonl_atomic, write_record_atomic

AREA = "diarization"
RECORD_NAME = "diarization.json"
TURNS_FILE = "turns.jsonl"
RTTM_FILE = "diarization.rttm"


def read_turns(project: Project, session_id: str) -> list[SpeakerTurn]:
    return read_jsonl(project.session_dir(AREA, session_id) / TURNS_FILE, SpeakerTurn)


def read_diarization(project: Project, session_id: str) -> DiarizationRecord:
    path = project.session_dir(AREA, session_id) / RECORD_NAME
    return DiarizationRecord.model_validate_json(path.read_text(encoding="utf-8"))


def catalog_speakers(entry: CatalogEntry) -> int:
    """Voices the catalog expects: the participants, plus the therapist unless its `therapist` column says no."""
    return len(entry.participants) + (1 if entry.therapist else 0)


def speaker_bounds(expected: int, settings: DiarizationSettings) -> tuple[int | None, int | None, int | None]:
    """(num_speakers, min_speakers, max_speakers) passed to pyannote, from the catalog's count."""
    if settings.speaker_count == "exact":
        return expected, None, None
    if settings.speaker_count == "at_least":
        return None, expected, expected + settings.extra_speakers
    return None, None, None


def _window_linkage(centroids: list[dict[str, np.ndarray]]) -> tuple[list[tuple[int, str]], np.ndarray | None]:
    """The window labels and their average-linkage cosine tree (None for fewer than two labels)."""
    from scipy.cluster.hierarchy import linkage

    keys = [(index, label) for index, window in enumerate(centroids) for label in sorted(window)]
    if len(keys) <= 1:
        return keys, None
    vectors = np.stack([centroids[index][label] for index, label in keys])
    vectors = np.nan_to_num(vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9))
    return keys, linkage(vectors, method="average", metric="cosine")


def unbounded_links(centroids: list[dict[str, np.ndarray]], threshold: float) -> int:
    """How many speakers the windows' labels link into by the threshold alone, before any speaker-count bound."""
    from scipy.cluster.hierarchy import fcluster

    keys, tree = _window_linkage(centroids)
    return len(keys) if tree is None else int(fcluster(tree, threshold, criterion="distance").max())


def link_windows(centroids: list[dict[str, np.ndarray]], threshold: float, bounds: tuple[int | None, ...]
                 ) -> dict[tuple[int, str], int]:
    """Give the same id to window labels whose centroids are close (average-linkage cosine clustering),
    keeping the number of speakers within the bounds."""
    from scipy.cluster.hierarchy import fcluster

    keys, tree = _window_linkage(centroids)
    if tree is None:
        return {key: 0 for key in keys}
    clusters = fcluster(tree, threshold, criterion="distance")
    num, low, high = bounds
    wanted = num or (low if low and clusters.max() < low else high if high and clusters.max() > high else None)
    if wanted:
        clusters = fcluster(tree, min(wanted, len(keys)), criterion="maxclust")
    return {key: int(cluster) for key, cluster in zip(keys, clusters)}


@dataclass
class DiarizeResult:
    turns: list[SpeakerTurn]
    windows: int
    warnings: list[str] = field(default_factory=list)
    loaded: Any = None
    unbounded: int | None = None  # voices the clustering found before the speaker-count bounds (None: unknown)


def _load_pyannote(settings: DiarizationSettings) -> Any:
    from pipeline.speech import pyannote_adapter  # heavy: imported only when a model is needed

    return pyannote_adapter.load(settings)


_SLOT = ModelSlot("pyannote", _load_pyannote)


def loaded_pipeline(settings: DiarizationSettings) -> Any:
    return _SLOT.get(settings)


def _relabel(turns: list[tuple[float, float, Any]]) -> list[SpeakerTurn]:
    """SPEAKER_00, SPEAKER_01... in order of first speech: deterministic names, whatever the window ids."""
    ordered = sorted(turns, key=lambda t: (t[0], t[1], str(t[2])))
    names: dict[Any, str] = {}
    for _, _, key in ordered:
        names.setdefault(key, f"SPEAKER_{len(names):02d}")
    return [SpeakerTurn(start=s, end=e, label=names[k]) for s, e, k in ordered if e > s]


def diarize_audio(audio: Path, settings: DiarizationSettings, bounds: tuple[int | None, ...]) -> DiarizeResult:
    """Diarize a 16 kHz mono WAV window by window. `settings` must be resolved."""
    from pipeline.speech import pyannote_adapter

    level = wav.loudest_dbfs(audio)
    if level < wav.SILENT_DBFS:
        return DiarizeResult([], 0, [f"the audio is silent (loudest 100 ms at {level:.0f} dBFS): no speaker turns"])
    loaded = loaded_pipeline(settings)
    spans = wav.plan_windows(audio, settings.window_seconds)
    raw: list[tuple[float, float, tuple[int, str]]] = []
    centroids: list[dict[str, np.ndarray]] = []
    unbounded: int | None = None
    num, low, high = bounds
    for index, (start, end) in enumerate(spans):
        turns, window_centroids, unbounded = pyannote_adapter.diarize(
            loaded, wav.read_span(audio, start, end), start, num_speakers=num, min_speakers=low, max_speakers=high,
            progress=window_reporter(start, end, spans[0][0], spans[-1][1]))
        raw.extend((s, min(e, end), (index, label)) for s, e, label in turns)
        centroids.append(window_centroids)
    ids = {}
    if len(spans) > 1:
        ids = link_windows(centroids, settings.clustering_threshold, bounds)
        unbounded = unbounded_links(centroids, settings.clustering_threshold)  # voices across the windows
    turns = _relabel([(s, e, ids.get(key, key)) for s, e, key in raw])
    warnings = [] if turns else ["no speech found by the diarization pipeline: no speaker turns"]
    return DiarizeResult(turns, len(spans), warnings, loaded, unbounded if turns else None)


def speaker_count_warnings(entry: CatalogEntry, expected: int, labels: int, unbounded: int | None) -> list[str]:
    """A warning when diarization finds another number of voices than the catalog implies: more labels than
    the catalog lists, or (before the bounds made the count fit) more or fewer voices by the clustering alone."""
    if not labels:
        return []
    who = f"{', '.join(entry.participants)}{' + Therapist' if entry.therapist else ', no therapist'}"
    fix = ("check the catalog: its participants, and its therapist column (`rescue add-session --no-therapist`, "
           "or therapist = no in sessions.csv, for a session where no therapist speaks)")
    if labels != expected:
        return [f"heard {labels} speaker(s), the catalog implies {expected} ({who}); {fix}"]
    if unbounded is not None and unbounded != expected:
        return [f"the clustering found {unbounded} voice(s) before the speaker count was bounded, the catalog "
                f"implies {expected} ({who}), and the turns were split into {labels} label(s) to fit; {fix}"]
    return []


def overlap_seconds(turns: list[SpeakerTurn]) -> float:
    """Time during which two or more turns are active."""
    events = sorted([(t.start, 1) for t in turns] + [(t.end, -1) for t in turns])
    total, active, last = 0.0, 0, 0.0
    for time, step in events:
        if active >= 2:
            total += time - last
        active += step
        last = time
    return round(total, 3)


def label_stats(turns: list[SpeakerTurn]) -> tuple[LabelStats, ...]:
    stats: dict[str, list[float]] = {}
    for turn in turns:
        entry = stats.setdefault(turn.label, [0.0, 0, turn.start])
        entry[0] += turn.end - turn.start
        entry[1] += 1
    return tuple(LabelStats(label=label, speech_seconds=round(v[0], 3), turns=int(v[1]), first_start=v[2])
                 for label, v in sorted(stats.items()))


def diarize_session(project: Project, entry: CatalogEntry, settings: Settings, workdir: Path,
                    final_dir: Path) -> DiarizationRecord:
    from pipeline.speech import pyannote_adapter
    from pipeline.speech.pyannote_core_adapter import write_rttm

    media = read_media(project, entry.session_id)
    resolved = resolve_diarization(settings.speech.diarization)
    expected = catalog_speakers(entry)
    bounds = speaker_bounds(expected, resolved)
    result = diarize_audio(project.abs(media.audio), resolved, bounds)
    write_jsonl_atomic(workdir / TURNS_FILE, result.turns)
    write_rttm(workdir / RTTM_FILE, entry.session_id, [(t.start, t.end, t.label) for t in result.turns])
    stats = label_stats(result.turns)
    warnings = list(result.warnings)
    warnings += speaker_count_warnings(entry, expected, len(stats), result.unbounded)
    loaded = result.loaded
    record = DiarizationRecord(
        session_id=entry.session_id, pipeline=resolved.pipeline,
        segmentation_model=loaded.segmentation_model if loaded else "",
        embedding_model=loaded.embedding_model if loaded else "", clustering=loaded.clustering if loaded else "",
        device=resolved.device, packages=pyannote_adapter.package_versions(), catalog_speakers=expected,
        num_speakers=bounds[0], min_speakers=bounds[1], max_speakers=bounds[2], labels=stats,
        speech_seconds=round(sum(t.end - t.start for t in result.turns), 3),
        overlap_seconds=overlap_seconds(result.turns), windows=result.windows, unbounded_speakers=result.unbounded,
        turns_sha256=sha256_file(workdir / TURNS_FILE), warnings=tuple(warnings))
    write_record_atomic(workdir / RECORD_NAME, record)
    return record
