"""Bootstrap confidence intervals: rows resampled with replacement, within each scenario.

Rows are the resampling unit for every measure (an item sub-field's units are resampled with their
row), so all coefficients of one report share the same B resamples, drawn once from one seeded
generator. Resampling within scenario keeps each scenario's size fixed, so the per-scenario
intervals come from the same draws. Intervals are percentile intervals over the resamples where the
coefficient is defined.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CHUNK_CELLS = 4_000_000  # resample weights held in memory at once (chunk rows x table rows)


def resample_chunks(strata: list[slice], n_rows: int, samples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield (chunk, rows) float32 arrays of resampled row multiplicities, `samples` rows in all.

    Rows are ordered by stratum (scenario) and each stratum, a contiguous slice, is resampled to its size.
    """
    if samples <= 0 or n_rows == 0:
        return
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, CHUNK_CELLS // max(n_rows, 1)))
    done = 0
    while done < samples:
        size = min(chunk, samples - done)
        weights = np.zeros((size, n_rows), dtype=np.float32)
        for rows in strata:
            width = rows.stop - rows.start
            drawn = rng.integers(0, width, size=(size, width)) + (np.arange(size) * width)[:, None]
            weights[:, rows] = np.bincount(drawn.ravel(), minlength=size * width).reshape(size, width)
        done += size
        yield weights


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float | None, float | None, int]:
    """(low, high, resamples where defined); None when fewer than half of the resamples are defined."""
    finite = values[np.isfinite(values)]
    if len(values) == 0 or len(finite) < max(1, len(values) // 2):
        return None, None, len(finite)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high), len(finite)
