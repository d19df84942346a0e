"""The only module that imports pyannote.audio (lazily). Telemetry is switched off before the first import.

Two pipelines:
- production: a pyannote pipeline from the hub (default `pyannote/speaker-diarization-community-1`), with the
  user's token from $HF_TOKEN;
- embedded (no hub): pyannote's own `SpeakerDiarization` running on the segmentation model that the whisperx
  wheel ships (`whisperx/assets/pytorch_model.bin`) and Resemblyzer speaker embeddings, with agglomerative
  clustering (community-1's VBx clustering needs its PLDA, which no package ships).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np

from pipeline.errors import RescueError
from pipeline.speech.settings import EMBEDDED_DIARIZATION, HF_TOKEN_ENV, DiarizationSettings

SAMPLE_RATE = 16_000
_PACKAGES = ("pyannote.audio", "pyannote.core", "torch", "resemblyzer", "whisperx")


def _telemetry_off() -> None:
    os.environ["PYANNOTE_METRICS_ENABLED"] = "false"  # pyannote.audio 4 sends usage metrics unless told not to


def package_versions() -> dict[str, str]:
    found = {}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def embedded_segmentation_path() -> Path:
    """pyannote's speaker-segmentation weights inside the installed whisperx wheel (found, not imported)."""
    spec = importlib.util.find_spec("whisperx")
    if spec is None or not spec.submodule_search_locations:
        raise RescueError("whisperx is not installed (it ships the embedded segmentation model)",
                          "run `make setup` (installs the project's `speech` extra)")
    path = Path(next(iter(spec.submodule_search_locations))) / "assets" / "pytorch_model.bin"
    if not path.is_file():
        raise RescueError(f"{path} is missing from the whisperx package", "reinstall whisperx (`make setup`)")
    return path


@dataclass
class LoadedDiarization:
    settings: DiarizationSettings
    pipeline: Any
    segmentation_model: str
    embedding_model: str
    clustering: str
    embedding: Any = None
    inference_seconds: float = 0.0


def _embedded(settings: DiarizationSettings) -> LoadedDiarization:
    from pyannote.audio import Model
    from pyannote.audio.pipelines import speaker_diarization as module

    from pipeline.speech.resemblyzer_adapter import ResemblyzerEmbedding

    path = embedded_segmentation_path()
    quiet = logging.getLogger("lightning.pytorch.utilities.migration.utils")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # lightning's "automatically upgraded your checkpoint" notice
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = Model.from_pretrained(str(path))
    finally:
        quiet.setLevel(level)
    embedding = ResemblyzerEmbedding(settings.device)
    # SpeakerDiarization's constructor always loads a PLDA and a pyannote/SpeechBrain embedding model by name;
    # agglomerative clustering needs no PLDA and the embedding is Resemblyzer, so both loaders are bypassed
    # while it is built. Everything that runs afterwards is pyannote's own pipeline code.
    with patch.object(module, "get_plda", return_value=None), \
            patch.object(module, "PretrainedSpeakerEmbedding", return_value=embedding):
        pipeline = module.SpeakerDiarization(
            segmentation=model, segmentation_step=settings.segmentation_step, embedding="resemblyzer", plda=None,
            clustering="AgglomerativeClustering", segmentation_batch_size=32, embedding_batch_size=32)
    pipeline.instantiate({
        "segmentation": {"threshold": settings.segmentation_threshold, "min_duration_off": 0.0},
        "clustering": {"method": "centroid", "min_cluster_size": settings.min_cluster_size,
                       "threshold": settings.clustering_threshold},
    })
    version = metadata.version("whisperx")
    clustering = (f"pyannote AgglomerativeClustering(centroid, threshold={settings.clustering_threshold}, "
                  f"min_cluster_size={settings.min_cluster_size})")
    return LoadedDiarization(settings, pipeline, f"pyannote segmentation from whisperx=={version} wheel "
                             "(whisperx/assets/pytorch_model.bin)", embedding.name, clustering, embedding)


def _from_hub(settings: DiarizationSettings) -> LoadedDiarization:
    from pyannote.audio import Pipeline

    token = os.environ.get(HF_TOKEN_ENV) or None
    try:
        pipeline = Pipeline.from_pretrained(settings.pipeline, token=token)
    except Exception as exc:  # offline, gated model without token, unknown name
        pipeline, detail = None, f"{exc.__class__.__name__}: {str(exc)[:200]}"
    else:
        detail = "the hub returned nothing"
    if pipeline is None:
        raise RescueError(
            f"cannot load diarization pipeline {settings.pipeline!r} ({detail})",
            f"set ${HF_TOKEN_ENV} to a Hugging Face token that accepted the model's conditions (needs internet), "
            f"or set [tool.rescue.speech.diarization] pipeline = '{EMBEDDED_DIARIZATION}'")
    return LoadedDiarization(settings, pipeline, f"{settings.pipeline} (segmentation)",
                             f"{settings.pipeline} (embedding)", f"{settings.pipeline} (clustering)")


def load(settings: DiarizationSettings) -> LoadedDiarization:
    """Load the configured pipeline on the configured device. `settings` must be resolved (no 'auto')."""
    _telemetry_off()
    import torch

    loaded = _embedded(settings) if settings.pipeline == EMBEDDED_DIARIZATION else _from_hub(settings)
    loaded.pipeline.to(torch.device(settings.device))
    return loaded


# Share of a window's time in pyannote's steps that report batches (segmentation, then embeddings): the
# embeddings dominate on a CPU. Only for the progress bar: an estimate, never used for results.
_STEP_SHARE = {"segmentation": (0.0, 0.3), "embeddings": (0.3, 1.0)}


def _hook(progress: Callable[[float], None]) -> Callable[..., None]:
    """pyannote's pipeline hook (step name, artifact, file, total, completed) -> the fraction of the window."""
    def hook(step: str, artifact: object, file: object = None, total: int | None = None,
             completed: int | None = None) -> None:
        if step in _STEP_SHARE and total and completed is not None:
            low, high = _STEP_SHARE[step]
            progress(low + (high - low) * completed / total)

    return hook


class _UnboundedCount:
    """Wraps a pipeline's `clustering.cluster` (pyannote's AgglomerativeClustering) to also cluster the same
    embeddings once without the speaker-count bounds: how many voices the threshold alone finds, which the
    bounds may have pushed up (`min_speakers`) or down. One more linkage over the embeddings: cheap."""

    def __init__(self, clustering: Any) -> None:
        self.clustering, self.found = clustering, None
        self.original = getattr(clustering, "cluster", None)

    def __call__(self, embeddings: np.ndarray, min_clusters: int | None = None, max_clusters: int | None = None,
                 num_clusters: int | None = None) -> np.ndarray:
        assert self.original is not None
        free = self.original(np.array(embeddings, copy=True), min_clusters=1, max_clusters=len(embeddings))
        self.found = int(len(np.unique(free)))
        return self.original(embeddings, min_clusters=min_clusters, max_clusters=max_clusters,
                             num_clusters=num_clusters)

    def counting(self) -> Any:
        """A context that routes the pipeline's clustering through this wrapper (nothing for other clusterings)."""
        from contextlib import nullcontext

        if self.original is None or not isinstance(self.clustering, _agglomerative()):
            return nullcontext()
        return patch.object(self.clustering, "cluster", self)


def _agglomerative() -> type:
    from pyannote.audio.pipelines.clustering import AgglomerativeClustering

    return AgglomerativeClustering


def diarize(loaded: LoadedDiarization, samples: np.ndarray, offset: float, *, num_speakers: int | None,
            min_speakers: int | None, max_speakers: int | None,
            progress: Callable[[float], None] = lambda fraction: None
            ) -> tuple[list[tuple[float, float, str]], dict[str, np.ndarray], int | None]:
    """Speaker turns (start, end, label) of float32 16 kHz `samples`, shifted by `offset`, overlapping turns
    kept; one centroid embedding per label (to link labels across windows); and the number of voices the
    clustering found before the speaker-count bounds were applied (None where the pipeline's clustering is
    not pyannote's agglomerative one, e.g. a hub pipeline's VBx)."""
    import torch

    began = time.perf_counter()
    file = {"waveform": torch.from_numpy(np.ascontiguousarray(samples))[None], "sample_rate": SAMPLE_RATE,
            "uri": "session"}
    unbounded = _UnboundedCount(getattr(loaded.pipeline, "clustering", None))
    with warnings.catch_warnings(), unbounded.counting():
        warnings.simplefilter("ignore")  # e.g. "detected number of speakers outside the given bounds"
        output = loaded.pipeline(file, num_speakers=num_speakers, min_speakers=min_speakers,
                                 max_speakers=max_speakers, hook=_hook(progress))
    progress(1.0)
    loaded.inference_seconds += time.perf_counter() - began
    annotation = getattr(output, "speaker_diarization", output)
    turns = [(round(segment.start + offset, 3), round(segment.end + offset, 3), str(label))
             for segment, _, label in annotation.itertracks(yield_label=True)]
    embeddings = getattr(output, "speaker_embeddings", None)
    centroids = {}
    if embeddings is not None:
        for label, vector in zip(annotation.labels(), embeddings):
            centroids[str(label)] = np.asarray(vector, dtype=np.float64)
    return turns, centroids, unbounded.found
