"""The sentence-embedding adapter (pipeline/text_similarity.py) with the real MiniLM model: each distinct text is
encoded once per process, and a kept vector is the one the model gives for that text."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import text_similarity


def test_each_text_is_encoded_once_and_kept_vectors_are_the_models() -> None:
    texts = ["I feel unheard when you plan without me.", "She wants them to talk more.", "You never listen."]
    model = text_similarity._load()
    encoded: list[str] = []
    real_encode = model.encode

    def counting_encode(batch: list[str], **options: object) -> np.ndarray:  # the real encoder, counted
        encoded.extend(batch)
        return real_encode(batch, **options)

    for text in texts:
        text_similarity._vectors.pop(text, None)
    model.encode = counting_encode
    try:
        first = text_similarity.embed([texts[0], texts[1], texts[0]])
        second = text_similarity.embed([texts[1], texts[2]])
    finally:
        del model.encode  # back to the class's method
    assert encoded == [texts[0], texts[1], texts[2]]  # a repeat within a call and a text seen before: not again
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], second[0])
    alone = np.asarray(real_encode(texts, normalize_embeddings=True, convert_to_numpy=True), dtype=np.float32)
    assert np.allclose(np.vstack([first[0], first[1], second[1]]), alone, atol=1e-5)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)


def test_the_cache_keeps_the_most_recent_texts_only(monkeypatch) -> None:
    monkeypatch.setattr(text_similarity, "CACHE_TEXTS", 2)
    monkeypatch.setattr(text_similarity, "_vectors", type(text_similarity._vectors)())
    text_similarity.embed(["one", "two"])
    text_similarity.embed(["one", "three"])  # "one" used again: "two" is now the oldest, and goes
    assert list(text_similarity._vectors) == ["one", "three"]  # oldest use first
    same, empty = text_similarity.pairwise_similarity(["one", ""], ["one", "two"])  # kept vectors still score
    assert same == pytest.approx(1.0, abs=1e-5) and empty == 0.0
