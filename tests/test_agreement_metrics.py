"""Every coefficient against published worked examples, independent implementations on random data
(with missing answers), and the degenerate cases (one value only, one annotator, no overlap)."""

from __future__ import annotations

import math
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from agreement.metrics import gwets_gamma
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from pipeline.agreement.categorical import CategoricalEvaluator
from pipeline.agreement.distances import SetDistance
from pipeline.agreement.plan import Measure
from pipeline.agreement.ratings import Ratings

NAN = float("nan")
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section E: 4 observers, 12 units, missing values.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]
# Fleiss (1971): 30 patients, 6 psychiatrists each, 5 diagnoses; kappa 0.430 (R irr::kappam.fleiss 0.4302445).
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]


def ratings_of(matrix: list[list[object]], level: str, values: list[object] | None = None) -> Ratings:
    """Reliability data (raters x units, NaN/None = missing) -> coded Ratings of one measure."""
    cells = [(u, r, v) for r, row in enumerate(matrix) for u, v in enumerate(row)
             if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if values is None:
        values = sorted({v for _, _, v in cells}, key=lambda v: (len(v), v) if isinstance(v, tuple) else v)
    code = {v: i for i, v in enumerate(values)}
    n_units = len(matrix[0])
    measure = Measure(id="x", field="x", sub=None, level=level, kind="label", key=None, applies_to="all")
    return Ratings(measure=measure, values=tuple(values), declared=len(values),
                   unit_row=np.arange(n_units, dtype=np.int32), unit_key=("",) * n_units,
                   unit=np.array([u for u, _, _ in cells], dtype=np.int32),
                   rater=np.array([r for _, r, _ in cells], dtype=np.int32),
                   code=np.array([code[v] for _, _, v in cells], dtype=np.int32),
                   annotators=tuple(f"r{i}" for i in range(len(matrix))))


def point(matrix: list[list[object]], level: str, values: list[object] | None = None, q: int | None = None
          ) -> dict[str, float]:
    r = ratings_of(matrix, level, values)
    evaluator = CategoricalEvaluator(r, len(matrix[0]), "masi")
    sums = evaluator.exact_sums(np.ones((1, len(matrix[0]))))
    result = evaluator.finish(sums, sums, q=q)
    return {metric: float(v[0]) for (scope, who, metric), v in result.items() if scope == "field"} | {
        f"{who}:{metric}": float(v[0]) for (scope, who, metric), v in result.items() if scope != "field"}


# -- published worked examples -------------------------------------------------------------------------
@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_alpha_krippendorff_2011(level: str, expected: float) -> None:
    assert point(KRIPPENDORFF_2011, level, [1, 2, 3, 4, 5])["alpha"] == pytest.approx(expected, abs=5e-4)


def test_alpha_binary_two_coders_krippendorff_2011() -> None:
    # Section A of the same paper: two observers, ten units, binary data, alpha = 0.095.
    data = [[0, 1, 0, 0, 0, 0, 0, 0, 1, 0], [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]
    assert point(data, "nominal")["alpha"] == pytest.approx(0.095, abs=5e-4)


def test_gwet_ac1_and_fleiss_on_krippendorff_data_match_irrcac() -> None:
    # irrCAC (Gwet's R package) on this data (its `cac.raw4raters`): AC1 0.7754, pa 0.8182.
    result = point(KRIPPENDORFF_2011, "nominal", [1, 2, 3, 4, 5])
    assert result["gwet_ac1"] == pytest.approx(0.7754, abs=5e-5)
    assert result["percent_agreement"] == pytest.approx(0.8182, abs=5e-5)


def test_fleiss_1971() -> None:
    matrix = np.array(FLEISS_1971).T.tolist()  # raters x patients
    result = point(matrix, "nominal", [1, 2, 3, 4, 5])
    assert result["fleiss_kappa"] == pytest.approx(0.4302445, abs=1e-6)
    table, _ = aggregate_raters(np.array(FLEISS_1971))
    assert result["fleiss_kappa"] == pytest.approx(fleiss_kappa(table), abs=1e-12)


def test_fleiss_wikipedia_table_kappa_0210() -> None:
    # 10 subjects, 14 raters, 5 categories; subjects given as category counts (Wikipedia, "Fleiss' kappa").
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
              [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    subjects = [[k for k, n in enumerate(row) for _ in range(n)] for row in counts]
    assert point(np.array(subjects).T.tolist(), "nominal", [0, 1, 2, 3, 4])["fleiss_kappa"] == \
        pytest.approx(0.210, abs=5e-4)


def test_cohen_kappa_textbook_two_by_two() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.70, p_e 0.50, kappa 0.40.
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    result = point([a, b], "nominal")
    assert result["r0|r1:cohen_kappa"] == pytest.approx(0.4, abs=1e-12)
    assert result["cohen_kappa"] == pytest.approx(0.4, abs=1e-12)


def test_masi_and_jaccard_distances() -> None:
    sets = [(), ("a",), ("a", "b"), ("a", "b", "c"), ("c", "d")]
    masi, jaccard = SetDistance(sets, "masi").matrix(), SetDistance(sets, "jaccard").matrix()
    assert masi[0, 0] == 0 and masi[0, 1] == 1  # two empty sets agree; empty vs non-empty is total
    assert jaccard[2, 3] == pytest.approx(1 / 3)  # |ab| / |abc|
    assert masi[2, 3] == pytest.approx(1 - (2 / 3) * (2 / 3))  # subset: monotonicity 2/3 (Passonneau 2006)
    assert masi[3, 4] == pytest.approx(1 - (1 / 4) * (1 / 3))  # overlap without subset: 1/3
    assert masi[1, 4] == 1.0 and np.allclose(masi, masi.T)


# -- independent implementations on random data with missing answers ----------------------------------
def _random_matrix(rng: np.random.Generator, raters: int, units: int, values: int, missing: float) -> np.ndarray:
    skew = rng.dirichlet(np.ones(values) * 0.7)
    truth = rng.choice(values, size=units, p=skew)
    data = np.where(rng.random((raters, units)) < 0.7, truth, rng.choice(values, size=(raters, units), p=skew))
    data = data.astype(float)
    data[rng.random((raters, units)) < missing] = np.nan
    return data


def _gwet_by_the_book(data: np.ndarray, q: int, chance: str) -> float:
    """Gwet (2014), ch. 2 and 5, written as plainly as possible (identity weights)."""
    units = [[int(v) for v in data[:, u] if not np.isnan(v)] for u in range(data.shape[1])]
    rated = [u for u in units if u]
    pairable = [u for u in units if len(u) >= 2]
    pa = sum(sum(u.count(k) * (u.count(k) - 1) for k in set(u)) / (len(u) * (len(u) - 1)) for u in pairable)
    pa /= len(pairable)
    pi = [sum(u.count(k) / len(u) for u in rated) / len(rated) for k in range(q)]
    pe = sum(p * p for p in pi) if chance == "fleiss" else sum(p * (1 - p) for p in pi) / (q - 1)
    return (pa - pe) / (1 - pe)


@pytest.mark.parametrize("seed", range(6))
def test_random_data_against_krippendorff_agreement_statsmodels_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    raters, units, q = int(rng.integers(2, 6)), int(rng.integers(20, 120)), int(rng.integers(2, 8))
    data = _random_matrix(rng, raters, units, q, missing=0.25)
    matrix = [[None if np.isnan(v) else int(v) for v in row] for row in data]
    domain = list(range(q))
    result = point(matrix, "nominal", domain, q=q)
    for level in ("nominal", "ordinal", "interval"):
        ours = point(matrix, level, domain)["alpha"]
        assert ours == pytest.approx(krippendorff.alpha(data, level_of_measurement=level, value_domain=domain),
                                     abs=1e-9), level
    counts = np.zeros((units, q))
    for row in data:
        for u, v in enumerate(row):
            if not np.isnan(v):
                counts[u, int(v)] += 1
    assert result["gwet_ac1"] == pytest.approx(gwets_gamma(counts[counts.sum(axis=1) > 0]), abs=1e-9)
    assert result["gwet_ac1"] == pytest.approx(_gwet_by_the_book(data, q, "gwet"), abs=1e-9)
    assert result["fleiss_kappa"] == pytest.approx(_gwet_by_the_book(data, q, "fleiss"), abs=1e-9)
    complete = data[:, ~np.isnan(data).any(axis=0)]
    if complete.shape[1] > 1 and len(np.unique(complete)) > 1:
        table, _ = aggregate_raters(complete.T.astype(int), n_cat=q)
        whole = point(complete.astype(int).tolist(), "nominal", domain)
        assert whole["fleiss_kappa"] == pytest.approx(fleiss_kappa(table), abs=1e-9)
    for a, b in combinations(range(raters), 2):
        both = ~np.isnan(data[a]) & ~np.isnan(data[b])
        if both.sum() < 2 or len(np.unique(np.r_[data[a, both], data[b, both]])) < 2:
            continue
        expected = cohen_kappa_score(data[a, both], data[b, both], labels=domain)
        assert result[f"r{a}|r{b}:cohen_kappa"] == pytest.approx(expected, abs=1e-9)
        interval = point(matrix, "interval", domain)[f"r{a}|r{b}:cohen_kappa"]
        assert interval == pytest.approx(cohen_kappa_score(data[a, both], data[b, both], labels=domain,
                                                           weights="quadratic"), abs=1e-9)


@pytest.mark.parametrize("kind", ["masi", "jaccard"])
def test_set_alpha_against_krippendorff_with_a_custom_metric(kind: str) -> None:
    rng = np.random.default_rng(3)
    members = ["A", "B", "C", "D"]
    matrix = [[tuple(sorted(rng.choice(members, size=rng.integers(1, 3), replace=False))) if rng.random() > 0.2
               else None for _ in range(60)] for _ in range(3)]
    values = sorted({v for row in matrix for v in row if v is not None}, key=lambda v: (len(v), v))
    distance = SetDistance(values, kind).matrix()
    codes = np.array([[np.nan if v is None else values.index(v) for v in row] for row in matrix])

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):  # type: ignore[no-untyped-def]
        return distance[v1.astype(int), v2.astype(int)]

    reference = krippendorff.alpha(codes, level_of_measurement=metric, value_domain=list(range(len(values))))
    r = ratings_of(matrix, "set", values)
    evaluator = CategoricalEvaluator(r, 60, kind)
    sums = evaluator.exact_sums(np.ones((1, 60)))
    assert evaluator.finish(sums, sums)[("field", "", "alpha")][0] == pytest.approx(reference, abs=1e-9)


# -- degenerate cases ------------------------------------------------------------------------------------
def test_one_value_only_alpha_and_kappas_undefined_ac1_is_defined() -> None:
    result = point([["x"] * 5, ["x"] * 5, ["x", "x", None, "x", "x"]], "nominal", ["x", "y", "z"])
    assert math.isnan(result["alpha"]) and math.isnan(result["fleiss_kappa"])
    assert math.isnan(result["r0|r1:cohen_kappa"])
    assert result["percent_agreement"] == 1.0
    assert result["gwet_ac1"] == 1.0  # Gwet's chance agreement is 0 when one category is used throughout


def test_no_overlap_gives_no_pairable_unit() -> None:
    result = point([["a", None, "b"], [None, "b", None]], "nominal")
    assert math.isnan(result["alpha"]) and math.isnan(result["percent_agreement"])
    assert math.isnan(result["r0|r1:cohen_kappa"])


def test_units_rated_once_do_not_change_alpha() -> None:
    base = [["a", "b", "a", "b"], ["a", "b", "b", "b"]]
    padded = [row + [value, None] for row, value in zip(base, ["c", None])]
    assert point(base, "nominal", ["a", "b", "c"])["alpha"] == pytest.approx(
        point(padded, "nominal", ["a", "b", "c"])["alpha"])


def test_many_distinct_sets_use_the_blockwise_path_and_keep_alpha_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.agreement import distances

    monkeypatch.setattr(distances, "DENSE_LIMIT", 50)  # force the path for more distinct sets than fit a matrix
    rng = np.random.default_rng(0)
    matrix = [[tuple(sorted(set(rng.integers(0, 12, size=3).tolist()))) for _ in range(80)] for _ in range(3)]
    r = ratings_of(matrix, "set")
    evaluator = CategoricalEvaluator(r, 80, "jaccard")
    assert not evaluator.weighted and evaluator.q > 50
    sums = evaluator.exact_sums(np.ones((1, 80)))
    result = evaluator.finish(sums, sums)
    assert ("field", "", "fleiss_kappa") not in result  # needs all pairwise distances: reported as a note instead
    values = list(r.values)
    jaccard = np.array([[1 - len(set(a) & set(b)) / len(set(a) | set(b)) for b in values] for a in values])
    codes = np.full((3, 80), np.nan)
    codes[r.rater, r.unit] = r.code

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):  # type: ignore[no-untyped-def]
        return jaccard[v1.astype(int), v2.astype(int)]

    reference = krippendorff.alpha(codes, level_of_measurement=metric, value_domain=list(range(len(values))))
    assert result[("field", "", "alpha")][0] == pytest.approx(reference, abs=1e-9)
