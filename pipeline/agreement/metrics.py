"""The agreement coefficients, written as sums over rows so that one code path gives the point
estimate, the per-scenario and per-session figures (sums over those rows) and the bootstrap (sums
weighted by resampled row counts, one matrix product per measure).

Every coefficient is computed from the pairable units (units with two or more answers):
- Krippendorff's alpha = 1 - (n - 1) * sum_u sum_{i != j} delta(c_ui, c_uj) / (m_u - 1) / sum_kl n_k n_l delta_kl
  (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"); missing answers are simply absent.
- Percent agreement = mean over units of the share of agreeing ordered pairs (exact match).
- Fleiss' kappa and Gwet's AC1/AC2 in Gwet's (2014) form for any number of raters and missing answers:
  p_a = mean_u sum_{i != j} w(c_ui, c_uj) / (m_u (m_u - 1)); pi_k = mean over rated units of r_uk / m_u;
  Fleiss p_e = sum_kl w_kl pi_k pi_l, Gwet p_e = T_w / (q (q - 1)) sum_k pi_k (1 - pi_k).
  With complete data this Fleiss' kappa is Fleiss (1971); with identity weights Gwet's is AC1.
- Cohen's kappa for a pair of annotators on their shared units, weighted by the level's weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from pipeline.agreement.distances import Distance

WIDE_LIMIT = 64  # value columns resampled directly; wider measures keep their chance terms fixed


@dataclass(frozen=True)
class Pairs:
    """Ordered pairs of answers within pairable units (both orders of each pair)."""

    unit: np.ndarray
    left: np.ndarray  # rating indices
    right: np.ndarray
    size: np.ndarray  # m_u of the pair's unit


def make_pairs(unit: np.ndarray, n_units: int) -> Pairs:
    """All ordered pairs (i, j), i != j, of ratings that share a unit."""
    order = np.argsort(unit, kind="stable")
    counts = np.bincount(unit, minlength=n_units)
    m = counts[unit[order]]
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[unit[order]].astype(np.int64)
    total = int(m.sum())
    block = np.repeat(np.arange(len(order)), m)
    within = np.arange(total) - np.repeat(np.cumsum(m) - m, m)
    partner = np.repeat(starts, m) + within
    keep = partner != block
    left, right = order[block[keep]], order[partner[keep]]
    return Pairs(unit=unit[left], left=left, right=right, size=counts[unit[left]])


def safe_divide(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    top, bottom = np.asarray(top, dtype=np.float64), np.asarray(bottom, dtype=np.float64)
    out = np.full(np.broadcast(top, bottom).shape, np.nan)
    np.divide(top, bottom, out=out, where=bottom != 0)
    return out


@dataclass
class Table:
    """Per-row statistics of one measure: named narrow columns and named value-wide sparse blocks."""

    n_rows: int
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    wide: dict[str, sparse.csr_matrix] = field(default_factory=dict)

    def add(self, name: str, rows: np.ndarray, weights: np.ndarray) -> None:
        self.columns[name] = np.bincount(rows, weights=weights, minlength=self.n_rows).astype(np.float64)

    def add_wide(self, name: str, rows: np.ndarray, codes: np.ndarray, weights: np.ndarray, width: int) -> None:
        self.wide[name] = sparse.csr_matrix((weights, (rows, codes)), shape=(self.n_rows, width))

    def sums(self, weights: np.ndarray | sparse.spmatrix) -> Sums:
        """Exact sums under a few row weightings (all rows, a scenario, one per session)."""
        return Sums({name: np.asarray(weights @ column).ravel() for name, column in self.columns.items()},
                    {name: _times(block, weights) for name, block in self.wide.items()})


def _times(block: sparse.csr_matrix, weights: np.ndarray | sparse.spmatrix) -> np.ndarray:
    """weights (B x rows) @ block (rows x V) as a dense array."""
    product = block.T @ weights.T
    product = product.toarray() if sparse.issparse(product) else np.asarray(product)
    return product.T


class Sums:
    """Column sums under B row weightings: `narrow[name]` is (B,), `wide[name]` is (B, V) or missing."""

    def __init__(self, narrow: dict[str, np.ndarray], wide: dict[str, np.ndarray]) -> None:
        self.narrow, self.wide = narrow, wide

    def __getitem__(self, name: str) -> np.ndarray:
        return self.narrow[name]


def rating_table(unit: np.ndarray, code: np.ndarray, unit_row: np.ndarray, n_rows: int, n_values: int,
                 distance: Distance) -> Table:
    """Everything alpha, percent agreement, Fleiss and Gwet need, per row.

    narrow: n (pairable values), units (pairable units), rated (units with any answer), agree and
    wagree (exact and weighted pair agreement per unit), do (alpha's observed disagreement, when
    delta does not depend on the marginals). wide: counts (pairable values per code), shares
    (r_uk / m_u over rated units), coinc (coincidences, ordinal data only).
    """
    table = Table(n_rows)
    n_units = len(unit_row)
    m = np.bincount(unit, minlength=n_units)
    pairs = make_pairs(unit, n_units)
    a, b = code[pairs.left], code[pairs.right]
    pair_row = unit_row[pairs.unit]
    inv_m1 = 1.0 / (pairs.size - 1)
    inv_mm1 = 1.0 / (pairs.size * (pairs.size - 1))
    pairable = m[unit] >= 2
    rating_row = unit_row[unit]
    table.add("n", rating_row[pairable], np.ones(int(pairable.sum())))
    table.add("units", unit_row[m >= 2], np.ones(int((m >= 2).sum())))
    table.add("rated", unit_row[m > 0], np.ones(int((m > 0).sum())))
    table.add("agree", pair_row, (a == b) * inv_mm1)
    if distance.dense:
        weights = (a == b).astype(np.float64) if distance.level == "nominal" else distance.weights()[a, b]
        table.add("wagree", pair_row, weights * inv_mm1)
    if distance.needs_marginals:
        table.add_wide("coinc", pair_row, a * n_values + b, inv_m1, n_values * n_values)
    else:
        table.add("do", pair_row, distance.pairs(a, b) * inv_m1)
    table.add_wide("counts", rating_row[pairable], code[pairable], np.ones(int(pairable.sum())), n_values)
    table.add_wide("shares", rating_row, code, 1.0 / m[unit], n_values)
    return table


def _clean_expected(expected: np.ndarray, n: np.ndarray) -> np.ndarray:
    # Float residues must not turn "no variation" (expected disagreement 0) into a number.
    return np.where(np.abs(expected) < 1e-9 * np.maximum(n * n, 1), 0.0, expected)


def expected_disagreement(sums: Sums, distance: Distance, fixed: Sums | None = None) -> np.ndarray:
    """sum_kl n_k n_l delta_kl; from the full data (`fixed`, scaled to n) when the counts were not resampled."""
    n = sums["n"]
    if "counts" in sums.wide:
        return _clean_expected(distance.expected(sums.wide["counts"]), n)
    assert fixed is not None
    full = _clean_expected(distance.expected(fixed.wide["counts"]), fixed["n"])
    return full * safe_divide(n * (n - 1), fixed["n"] * (fixed["n"] - 1))


def alpha(sums: Sums, distance: Distance, fixed: Sums | None = None) -> np.ndarray:
    n = sums["n"]
    if not distance.needs_marginals:
        observed = sums["do"]
    elif "coinc" in sums.wide and "counts" in sums.wide:
        observed = np.array([coinc @ distance.matrix(counts).ravel()
                             for coinc, counts in zip(sums.wide["coinc"], sums.wide["counts"])])
    else:  # ordinal data whose coincidences were too wide to resample: no interval
        return np.full(len(n), np.nan)
    return 1.0 - safe_divide((n - 1) * observed, expected_disagreement(sums, distance, fixed))


def percent_agreement(sums: Sums) -> np.ndarray:
    return safe_divide(sums["agree"], sums["units"])


def _pi(sums: Sums, fixed: Sums | None) -> np.ndarray:
    if "shares" in sums.wide:
        return safe_divide(sums.wide["shares"], sums["rated"][:, None])
    assert fixed is not None  # chance terms held at the full data's values: one row, broadcast
    return safe_divide(fixed.wide["shares"], fixed["rated"][:, None])


def fleiss_kappa(sums: Sums, distance: Distance, fixed: Sums | None = None) -> np.ndarray:
    pa = safe_divide(sums["wagree"], sums["units"])
    pi = _pi(sums, fixed)
    pe = (pi * pi).sum(axis=1) if distance.level == "nominal" else ((pi @ distance.weights()) * pi).sum(axis=1)
    return chance_corrected(pa, pe)


def gwet_ac(sums: Sums, distance: Distance, q: int, fixed: Sums | None = None) -> np.ndarray:
    """Gwet's AC1 (identity weights) or AC2 (the level's weights); q = number of possible categories."""
    pa = safe_divide(sums["wagree"], sums["units"])
    if q < 2:
        return np.full(len(pa), np.nan)
    pi = _pi(sums, fixed)
    weight_total = float(q) if distance.level == "nominal" else distance.weight_total()
    pe = weight_total / (q * (q - 1)) * (pi * (1 - pi)).sum(axis=1)
    return chance_corrected(pa, pe)


def chance_corrected(pa: np.ndarray, pe: np.ndarray) -> np.ndarray:
    # p_e = 1 (one category throughout) leaves the coefficient undefined (0/0), never 1 or 0.
    bottom = np.where(np.isclose(pe, 1.0, rtol=0, atol=1e-12), 0.0, 1.0 - pe)
    return safe_divide(pa - pe, bottom)


def pair_table(unit: np.ndarray, rater: np.ndarray, code: np.ndarray, unit_row: np.ndarray, n_rows: int,
               n_values: int, first: int, second: int, distance: Distance) -> Table:
    """Cohen's kappa inputs for one annotator pair on their shared units: n, agree (weighted), exact;
    wide: left and right (each annotator's values)."""
    n_units = len(unit_row)
    value_a = np.full(n_units, -1)
    value_b = np.full(n_units, -1)
    value_a[unit[rater == first]] = code[rater == first]
    value_b[unit[rater == second]] = code[rater == second]
    shared = np.flatnonzero((value_a >= 0) & (value_b >= 0))
    a, b = value_a[shared], value_b[shared]
    rows = unit_row[shared]
    ones = np.ones(len(shared))
    table = Table(n_rows)
    table.add("n", rows, ones)
    table.add("exact", rows, (a == b).astype(np.float64))
    table.add("agree", rows, (a == b).astype(np.float64) if distance.level == "nominal"
              else distance.weights()[a, b])
    table.add_wide("left", rows, a, ones, n_values)
    table.add_wide("right", rows, b, ones, n_values)
    return table


def cohen_kappa(sums: Sums, distance: Distance, fixed: Sums | None = None) -> np.ndarray:
    n = sums["n"]
    observed = safe_divide(sums["agree"], n)
    source, scale = (sums, n) if "left" in sums.wide else (fixed, fixed["n"] if fixed else n)
    assert source is not None
    left = safe_divide(source.wide["left"], np.asarray(scale)[:, None])
    right = safe_divide(source.wide["right"], np.asarray(scale)[:, None])
    if distance.level == "nominal":
        expected = (left * right).sum(axis=1)
    else:
        expected = ((left @ distance.weights()) * right).sum(axis=1)
    return chance_corrected(observed, expected)


@dataclass
class Packed:
    """Several tables' columns side by side in one float32 matrix, for one product per resample chunk."""

    matrix: np.ndarray  # rows x K
    narrow: dict[tuple[str, str], int]
    wide: dict[tuple[str, str], slice]

    def unpack(self, product: np.ndarray) -> dict[str, Sums]:
        out: dict[str, Sums] = {}
        for (table, name), column in self.narrow.items():
            out.setdefault(table, Sums({}, {})).narrow[name] = product[:, column].astype(np.float64)
        for (table, name), span in self.wide.items():
            out.setdefault(table, Sums({}, {})).wide[name] = product[:, span].astype(np.float64)
        return out


def pack(tables: dict[str, Table], rows: slice | None = None) -> Packed:
    """Stack narrow columns and the wide blocks that are narrow enough to resample (WIDE_LIMIT)."""
    parts: list[np.ndarray] = []
    narrow: dict[tuple[str, str], int] = {}
    wide: dict[tuple[str, str], slice] = {}
    width = 0
    for table_name, table in tables.items():
        for name, column in table.columns.items():
            parts.append(column[:, None] if rows is None else column[rows, None])
            narrow[(table_name, name)] = width
            width += 1
        for name, block in table.wide.items():
            if block.shape[1] > WIDE_LIMIT:
                continue
            chosen = block if rows is None else block[rows]
            parts.append(chosen.toarray())
            wide[(table_name, name)] = slice(width, width + block.shape[1])
            width += block.shape[1]
    matrix = np.hstack(parts).astype(np.float32) if parts else np.zeros((0, 0), dtype=np.float32)
    return Packed(matrix=np.ascontiguousarray(matrix), narrow=narrow, wide=wide)


class TableSums:
    """What both evaluators share: per-table sums under bootstrap weights, and packed row ranges.

    A subclass sets `tables`, `n_rows` and `_packed` (an empty dict) in its constructor.
    """

    tables: dict[str, Table]
    n_rows: int
    _packed: dict[tuple[int, int], Packed]

    def exact_sums(self, weights: np.ndarray | sparse.spmatrix) -> dict[str, Sums]:
        return {name: table.sums(weights) for name, table in self.tables.items()}

    def packed(self, rows: slice) -> Packed:
        key = (rows.start or 0, rows.stop or self.n_rows)
        if key not in self._packed:
            self._packed[key] = pack(self.tables, rows)
        return self._packed[key]
