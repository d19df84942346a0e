"""Free-text agreement: mean pairwise cosine similarity of the annotators' texts per unit.

Texts are embedded with the offline MiniLM model through `pipeline.text_similarity` (the one adapter
that imports it). Two empty texts count as identical (1.0), an empty and a non-empty text as 0.0.
Embeddings are cached on disk by text hash, so a re-run after a new pull embeds only new texts.
Next to each mean the report gives its spread across units and a baseline: the similarity of answers
to *different* units, i.e. what unrelated answers of this field score.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from itertools import combinations
from pathlib import Path

import numpy as np

from pipeline.agreement import metrics as m
from pipeline.agreement.ratings import Ratings
from pipeline.store import write_bytes_atomic

Key = tuple[str, str, str]
Embedder = Callable[[list[str]], np.ndarray]
BASELINE_PAIRS = 20_000
EMBED_BATCH = 1024


def _digest(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Text hash -> float16 unit vector, stored as one .npz file; rewritten atomically when texts are added."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.vectors: dict[bytes, np.ndarray] = {}
        self.added = 0
        if path is not None and path.is_file():
            with np.load(path) as data:
                # Keys are stored as uint8 rows: numpy's bytes dtype would drop trailing zero bytes.
                self.vectors = dict(zip((bytes(row) for row in data["keys"]), data["vectors"]))

    def embed(self, texts: Sequence[str], embedder: Embedder, progress: Callable[[int, int], None] | None = None
              ) -> np.ndarray:
        keys = [_digest(text) for text in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.vectors}.items())
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start:start + EMBED_BATCH]
            vectors = embedder([text for _, text in batch])
            self.vectors.update({key: vector.astype(np.float16) for (key, _), vector in zip(batch, vectors)})
            self.added += len(batch)
            if progress:
                progress(min(start + EMBED_BATCH, len(todo)), len(todo))
        if not keys:
            return np.zeros((0, 1), dtype=np.float32)
        return np.vstack([self.vectors[key] for key in keys]).astype(np.float32)

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        import io

        keys = sorted(self.vectors)
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 20),
                 vectors=np.vstack([self.vectors[k] for k in keys]))
        write_bytes_atomic(self.path, buffer.getvalue())
        self.added = 0


class TextEvaluator(m.TableSums):
    """Mean pairwise similarity of one text measure for any weighting of the rows (see categorical.py)."""

    weighted = True

    def __init__(self, ratings: Ratings, n_rows: int, vectors: np.ndarray, seed: int) -> None:
        self.ratings = r = ratings
        self.n_rows = n_rows
        self.empty = np.array([text == "" for text in r.values], dtype=bool)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else np.ones((0, 1))
        self.vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        pairs = m.make_pairs(r.unit, len(r.unit_row))
        upper = pairs.left < pairs.right
        left, right = pairs.left[upper], pairs.right[upper]
        unit, size = pairs.unit[upper], pairs.size[upper]
        sim = self.similarity(r.code[left], r.code[right])
        unit_mean = np.bincount(unit, weights=sim / (size * (size - 1) / 2), minlength=len(r.unit_row))
        has = np.bincount(unit, minlength=len(r.unit_row)) > 0
        main = m.Table(n_rows)
        main.add("units", r.unit_row[has], np.ones(int(has.sum())))
        main.add("sum", r.unit_row[has], unit_mean[has])
        main.add("sum2", r.unit_row[has], unit_mean[has] ** 2)
        self.tables = {"main": main, "rest": m.Table(n_rows)}
        rows = r.unit_row[unit]
        first, second = r.rater[left], r.rater[right]
        self.raters = sorted(set(first.tolist()) | set(second.tolist()))
        for a, b in combinations(self.raters, 2):
            mine = ((first == a) & (second == b)) | ((first == b) & (second == a))
            table = self.tables[f"pair:{a}:{b}"] = m.Table(n_rows)
            table.add("n", rows[mine], np.ones(int(mine.sum())))
            table.add("sum", rows[mine], sim[mine])
        for a in self.raters:
            mine = (first == a) | (second == a)
            with_a = np.unique(unit[mine])  # each unit counts once: a's mean similarity with the others
            self.tables["rest"].add(f"units:{a}", r.unit_row[with_a], np.ones(len(with_a)))
            self.tables["rest"].add(f"sum:{a}", rows[mine], sim[mine] / (size[mine] - 1))
        self.baseline = self._baseline(seed)
        self._packed: dict[tuple[int, int], m.Packed] = {}

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        both, one = self.empty[a] & self.empty[b], self.empty[a] ^ self.empty[b]
        cosine = np.einsum("ij,ij->i", self.vectors[a], self.vectors[b]).astype(np.float64)
        return np.where(both, 1.0, np.where(one, 0.0, cosine))

    def _baseline(self, seed: int) -> float | None:
        r = self.ratings
        if len(r.unit_row) < 2:
            return None
        rng = np.random.default_rng(seed)
        i = rng.integers(0, len(r.code), BASELINE_PAIRS)
        j = rng.integers(0, len(r.code), BASELINE_PAIRS)
        keep = r.unit[i] != r.unit[j]
        return float(self.similarity(r.code[i[keep]], r.code[j[keep]]).mean()) if keep.any() else None

    def finish(self, sums: dict[str, m.Sums], fixed: dict[str, m.Sums] | None = None, detail: bool = True,
               q: int | None = None) -> dict[Key, np.ndarray]:
        main = sums["main"]
        mean = m.safe_divide(main["sum"], main["units"])
        second = m.safe_divide(main["sum2"], main["units"])
        result: dict[Key, np.ndarray] = {
            ("field", "", "similarity"): mean, ("field", "", "units"): main["units"],
            ("field", "", "spread"): np.sqrt(np.maximum(second - mean**2, 0.0))}
        if not detail:
            return result
        names = self.ratings.annotators
        for a, b in combinations(self.raters, 2):
            pair = sums[f"pair:{a}:{b}"]
            who = f"{names[a]}|{names[b]}"
            result[("pair", who, "similarity")] = m.safe_divide(pair["sum"], pair["n"])
            result[("pair", who, "units")] = pair["n"]
        rest = sums["rest"]
        for a in self.raters:
            result[("annotator", names[a], "similarity")] = m.safe_divide(rest[f"sum:{a}"], rest[f"units:{a}"])
            result[("annotator", names[a], "units")] = rest[f"units:{a}"]
        return result
