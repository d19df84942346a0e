"""Features of a row for the gold-model backend: the MiniLM embedding of its text, the mean embedding of the
rows before it, and who speaks (therapist or client, and the previous row's speaker role).

Embeddings come from the one sentence-embedding adapter (`pipeline.text_similarity`) through the on-disk
cache the agreement step uses (`EmbeddingCache`, keyed by a hash of the text), kept under
build/cache/preannotate/, so a re-run embeds only texts it has not seen.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.agreement.textsim import EmbeddingCache

EXTRA = 4  # therapist row, previous row by the therapist, previous row by the same speaker, family scenario


def embedding_cache_path(cache_dir: Path) -> Path:
    from pipeline.text_similarity import model_info

    info = model_info()
    return cache_dir / f"embeddings-{info['package']}-{info['version']}.npz"


@dataclass
class EmbedStats:
    texts: int = 0
    embedded: int = 0  # texts not in the cache, embedded by the model in this run
    seconds: float = 0.0


def embed_texts(texts: Sequence[str], cache_path: Path | None, stats: EmbedStats | None = None,
                cache: EmbeddingCache | None = None) -> np.ndarray:
    """Unit vectors of `texts`, from the on-disk cache where it has them (pass `cache` to keep it loaded)."""
    from pipeline.text_similarity import embed

    started = time.perf_counter()
    cache = cache or EmbeddingCache(cache_path)
    vectors = cache.embed(list(texts), lambda batch: embed(batch)) if texts else np.zeros((0, 384), np.float32)
    added = cache.added
    cache.save()
    if stats is not None:
        stats.texts += len(texts)
        stats.embedded += added
        stats.seconds += time.perf_counter() - started
    return vectors


def session_features(vectors: np.ndarray, speakers: Sequence[str], therapist: str, family: bool,
                     context_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(classifier features, unit vectors for the nearest-row search) of one session's rows, in order."""
    n, dim = vectors.shape if len(vectors) else (0, 384)
    context = np.zeros((n, dim), dtype=np.float32)
    for i in range(n):
        before = vectors[max(0, i - context_rows):i]
        if len(before):
            context[i] = before.mean(axis=0)
    extra = np.zeros((n, EXTRA), dtype=np.float32)
    for i, speaker in enumerate(speakers):
        previous = speakers[i - 1] if i else ""
        extra[i] = (speaker == therapist, previous == therapist, previous == speaker, family)
    search = np.hstack([vectors, 0.5 * context])
    norms = np.linalg.norm(search, axis=1, keepdims=True)
    search = np.divide(search, norms, out=np.zeros_like(search), where=norms > 0)
    return np.hstack([vectors, context, extra]), search.astype(np.float32)


class Reducer:
    """Principal components of the embedding part of the features (the flags pass through): logistic
    regression on 64 components instead of 768 dimensions trains ~10x faster and overfits less."""

    def __init__(self, features: np.ndarray, dims: int) -> None:
        from sklearn.decomposition import PCA

        embedded = features[:, :-EXTRA]
        # whitened components: unit variance keeps the regression's optimiser well conditioned (fewer iterations)
        self.pca = PCA(n_components=max(1, min(dims, len(features) - 1, embedded.shape[1])), whiten=True,
                       svd_solver="covariance_eigh", random_state=0)  # n >> 768: the covariance route is fastest
        if len(features) > 1:
            self.pca.fit(embedded)
        else:
            self.pca = None  # type: ignore[assignment]

    def __call__(self, features: np.ndarray) -> np.ndarray:
        if self.pca is None or not len(features):
            return features
        return np.hstack([self.pca.transform(features[:, :-EXTRA]), features[:, -EXTRA:]]).astype(np.float32)
