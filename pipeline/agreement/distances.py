"""Distances between coded values, per level of measurement, for alpha and the weighted kappas.

`delta` is Krippendorff's difference function (nominal 0/1, interval squared difference, ordinal by
cumulative frequencies, sets by MASI or Jaccard distance). `weights` are the agreement weights of
Cohen's, Fleiss' and Gwet's weighted coefficients (1 on the diagonal, 0 for total disagreement):
identity for nominal data, linear in rank for ordinal, quadratic for interval and 1 - distance for
sets. Set distances between many distinct sets are the one costly part, so they are computed once per
measure as a dense matrix (up to DENSE_LIMIT distinct sets) and looked up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DENSE_LIMIT = 3000


class Distance:
    """Nominal: every two different values are equally far apart."""

    level = "nominal"

    def __init__(self, values: Sequence[object]) -> None:
        self.size = len(values)

    @property
    def dense(self) -> bool:
        return True

    @property
    def needs_marginals(self) -> bool:
        """Whether delta depends on the value frequencies (ordinal), so D_o cannot be precomputed per unit."""
        return False

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a != b).astype(np.float64)

    def matrix(self, counts: np.ndarray | None = None) -> np.ndarray:
        return 1.0 - np.eye(self.size)

    def expected(self, counts: np.ndarray) -> np.ndarray:
        """sum_k sum_l n_k n_l delta(k, l) for each row of `counts` (shape (B, V) -> (B,))."""
        total = counts.sum(axis=-1)
        return total * total - (counts * counts).sum(axis=-1)

    def weights(self) -> np.ndarray:
        if getattr(self, "_weights", None) is None:
            self._weights = self._make_weights()
        return self._weights

    def _make_weights(self) -> np.ndarray:
        return np.eye(self.size)

    def weight_total(self) -> float:
        """Sum of all agreement weights (T_w in Gwet's chance agreement)."""
        return float(self.weights().sum())


class IntervalDistance(Distance):
    level = "interval"

    def __init__(self, values: Sequence[object]) -> None:
        super().__init__(values)
        self.numbers = np.array([float(v) for v in values], dtype=np.float64)  # type: ignore[arg-type]
        span = float(self.numbers.max() - self.numbers.min()) if self.size else 0.0
        self.span = span if span > 0 else 1.0

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (self.numbers[a] - self.numbers[b]) ** 2

    def matrix(self, counts: np.ndarray | None = None) -> np.ndarray:
        return (self.numbers[:, None] - self.numbers[None, :]) ** 2

    def expected(self, counts: np.ndarray) -> np.ndarray:
        total = counts.sum(axis=-1)
        first = counts @ self.numbers
        second = counts @ (self.numbers**2)
        return 2.0 * (total * second - first * first)

    def _make_weights(self) -> np.ndarray:
        return 1.0 - self.matrix() / self.span**2


class OrdinalDistance(Distance):
    """Krippendorff's ordinal metric: the squared count of values between k and l (inclusive, halved ends)."""

    level = "ordinal"

    @property
    def needs_marginals(self) -> bool:
        return True

    def matrix(self, counts: np.ndarray | None = None) -> np.ndarray:
        n = np.zeros(self.size) if counts is None else np.asarray(counts, dtype=np.float64)
        cumulative = np.concatenate(([0.0], np.cumsum(n)))
        low = np.minimum.outer(np.arange(self.size), np.arange(self.size))
        high = np.maximum.outer(np.arange(self.size), np.arange(self.size))
        between = cumulative[high + 1] - cumulative[low]
        return (between - (n[low] + n[high]) / 2.0) ** 2

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError("ordinal distances depend on the marginals; use matrix(counts)")

    def expected(self, counts: np.ndarray) -> np.ndarray:
        counts = np.atleast_2d(counts)
        return np.array([row @ self.matrix(row) @ row for row in counts])

    def _make_weights(self) -> np.ndarray:
        span = max(self.size - 1, 1)
        return 1.0 - np.abs(np.subtract.outer(np.arange(self.size), np.arange(self.size))) / span


class SetDistance(Distance):
    """MASI (Passonneau 2006) or Jaccard distance between sets; two empty sets are identical."""

    level = "set"

    def __init__(self, values: Sequence[object], kind: str = "masi") -> None:
        super().__init__(values)
        self.kind = kind
        self.sets = [tuple(v) for v in values]  # type: ignore[arg-type]
        universe = sorted({member for members in self.sets for member in members}, key=str)
        position = {member: i for i, member in enumerate(universe)}
        self.bits = np.zeros((self.size, max(len(universe), 1)), dtype=np.float32)
        for row, members in enumerate(self.sets):
            self.bits[row, [position[m] for m in members]] = 1.0
        self.sizes = self.bits.sum(axis=1).astype(np.float64)
        self._matrix = self._block(np.arange(self.size)) if self.dense else None

    @property
    def dense(self) -> bool:
        return self.size <= DENSE_LIMIT

    def _block(self, rows: np.ndarray) -> np.ndarray:
        inter = (self.bits[rows] @ self.bits.T).astype(np.float64)
        size_a = self.sizes[rows][:, None]
        size_b = self.sizes[None, :]
        union = size_a + size_b - inter
        jaccard = np.divide(inter, union, out=np.ones_like(inter), where=union > 0)
        if self.kind == "jaccard":
            return 1.0 - jaccard
        same = (inter == size_a) & (inter == size_b)
        subset = (inter == size_a) | (inter == size_b)
        monotonicity = np.where(same, 1.0, np.where(subset, 2 / 3, np.where(inter > 0, 1 / 3, 0.0)))
        return 1.0 - jaccard * monotonicity

    def matrix(self, counts: np.ndarray | None = None) -> np.ndarray:
        if self._matrix is None:
            raise ValueError(f"{self.size} distinct sets are too many for a dense distance matrix")
        return self._matrix

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self._matrix is not None:
            return self._matrix[a, b]
        out = np.empty(len(a))
        order = np.argsort(a, kind="stable")
        for start in range(0, len(a), 512):  # row blocks of the sorted first codes
            chunk = order[start:start + 512]
            rows, inverse = np.unique(a[chunk], return_inverse=True)
            out[chunk] = self._block(rows)[inverse, b[chunk]]
        return out

    def expected(self, counts: np.ndarray) -> np.ndarray:
        counts = np.atleast_2d(np.asarray(counts, dtype=np.float64))
        if self._matrix is not None:
            return ((counts @ self._matrix) * counts).sum(axis=1)
        total = np.zeros(len(counts))
        for start in range(0, self.size, 512):
            rows = np.arange(start, min(start + 512, self.size))
            total += ((counts @ self._block(rows).T) * counts[:, rows]).sum(axis=1)
        return total

    def _make_weights(self) -> np.ndarray:
        return 1.0 - self.matrix()

    def weight_total(self) -> float:
        if self._matrix is not None:
            return float((1.0 - self._matrix).sum())
        return float(sum((1.0 - self._block(np.arange(s, min(s + 512, self.size)))).sum()
                         for s in range(0, self.size, 512)))


def distance_for(level: str, values: Sequence[object], set_distance: str = "masi") -> Distance:
    if level == "nominal":
        return Distance(values)
    if level == "interval":
        return IntervalDistance(values)
    if level == "ordinal":
        return OrdinalDistance(values)
    if level == "set":
        return SetDistance(values, set_distance)
    raise ValueError(f"no distance for level {level!r}")
