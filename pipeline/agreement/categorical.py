"""All coefficients of one categorical measure (nominal, ordinal, interval or set) for any weighting
of the rows: all rows, a scenario, one session each, or bootstrap resamples.

Results are arrays with one entry per row weighting, keyed by (scope, who, metric): scope "field"
(all annotators), "pair" (who = "a|b") or "annotator" (who = a, against the others).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy import sparse

from pipeline.agreement import metrics as m
from pipeline.agreement.distances import Distance, distance_for
from pipeline.agreement.ratings import Ratings

Key = tuple[str, str, str]


def add_sums(a: dict[str, m.Sums], b: dict[str, m.Sums]) -> dict[str, m.Sums]:
    return {name: m.Sums({k: v + b[name].narrow[k] for k, v in sums.narrow.items()},
                         {k: v + b[name].wide[k] for k, v in sums.wide.items()}) for name, sums in a.items()}


class CategoricalEvaluator(m.TableSums):
    def __init__(self, ratings: Ratings, n_rows: int, set_distance: str = "masi") -> None:
        self.ratings = r = ratings
        self.level = r.measure.level
        self.distance: Distance = distance_for(self.level, r.values, set_distance)
        self.weighted = self.distance.dense  # weights exist (not too many distinct sets)
        self.n_rows = n_rows
        self.q = len(r.values)
        self.raters = sorted(set(r.rater.tolist()))
        self.tables: dict[str, m.Table] = {
            "main": m.rating_table(r.unit, r.code, r.unit_row, n_rows, self.q, self.distance)}
        if self.weighted:
            for a, b in combinations(self.raters, 2):
                self.tables[f"pair:{a}:{b}"] = m.pair_table(r.unit, r.rater, r.code, r.unit_row, n_rows, self.q, a, b,
                                                            self.distance)
        self.tables["rest"] = self._rest_table()
        self._packed: dict[tuple[int, int], m.Packed] = {}

    @property
    def gwet_name(self) -> str:
        return "gwet_ac1" if self.level == "nominal" else "gwet_ac2"

    def _rest_table(self) -> m.Table:
        """Per annotator and row: units where the annotator has company, and the annotator's mean
        disagreement and agreement with the others there (each unit counts once)."""
        r = self.ratings
        table = m.Table(self.n_rows)
        pairs = m.make_pairs(r.unit, len(r.unit_row))
        a, b = r.code[pairs.left], r.code[pairs.right]
        if self.distance.needs_marginals:
            counts = np.bincount(r.code, minlength=self.q).astype(float)
            delta = self.distance.matrix(counts)[a, b]
        else:
            delta = self.distance.pairs(a, b)
        share = 1.0 / np.maximum(pairs.size - 1, 1)
        rows = r.unit_row[pairs.unit]
        left_rater = r.rater[pairs.left]
        for rater in self.raters:
            mine = left_rater == rater
            table.add(f"units:{rater}", r.unit_row[np.unique(pairs.unit[mine])],
                      np.ones(len(np.unique(pairs.unit[mine]))))
            table.add(f"do:{rater}", rows[mine], delta[mine] * share[mine])
            table.add(f"agree:{rater}", rows[mine], (a[mine] == b[mine]) * share[mine])
        return table

    # -- coefficients -------------------------------------------------------------------------------
    def finish(self, sums: dict[str, m.Sums], fixed: dict[str, m.Sums] | None = None, detail: bool = True,
               q: int | None = None) -> dict[Key, np.ndarray]:
        main, fixed_main = sums["main"], (fixed or {}).get("main")
        result: dict[Key, np.ndarray] = {
            ("field", "", "alpha"): m.alpha(main, self.distance, fixed_main),
            ("field", "", "percent_agreement"): m.percent_agreement(main),
            ("field", "", "units"): main["units"], ("field", "", "values"): main["n"]}
        if self.weighted:
            result[("field", "", "fleiss_kappa")] = m.fleiss_kappa(main, self.distance, fixed_main)
            result[("field", "", self.gwet_name)] = m.gwet_ac(main, self.distance, q or self.q, fixed_main)
        names = self.ratings.annotators
        kappas = []
        for a, b in combinations(self.raters, 2):
            name = f"pair:{a}:{b}"
            if name not in sums:
                continue
            kappa = m.cohen_kappa(sums[name], self.distance, (fixed or {}).get(name))
            kappas.append(kappa)
            who = f"{names[a]}|{names[b]}"
            result.update({("pair", who, "cohen_kappa"): kappa, ("pair", who, "units"): sums[name]["n"],
                           ("pair", who, "percent_agreement"): m.safe_divide(sums[name]["exact"], sums[name]["n"])})
        if kappas:
            stacked = np.vstack(kappas)
            defined = np.isfinite(stacked).sum(axis=0)
            # Light's kappa: the mean of the defined pairwise kappas.
            result[("field", "", "cohen_kappa")] = np.where(
                defined > 0, np.nansum(stacked, axis=0) / np.maximum(defined, 1), np.nan)
        if detail:
            result.update(self._annotators(sums, fixed))
        return result

    def _annotators(self, sums: dict[str, m.Sums], fixed: dict[str, m.Sums] | None) -> dict[Key, np.ndarray]:
        main, rest = sums["main"], sums["rest"]
        n = main["n"]
        per_pair = m.safe_divide(m.expected_disagreement(main, self.distance, (fixed or {}).get("main")), n * (n - 1))
        result: dict[Key, np.ndarray] = {}
        for rater in self.raters:
            who = self.ratings.annotators[rater]
            units = rest[f"units:{rater}"]
            observed = m.safe_divide(rest[f"do:{rater}"], units)
            result[("annotator", who, "alpha_vs_rest")] = 1.0 - m.safe_divide(observed, per_pair)
            result[("annotator", who, "percent_agreement")] = m.safe_divide(rest[f"agree:{rater}"], units)
            result[("annotator", who, "units")] = units
        return result

    def without(self, weights: np.ndarray | sparse.spmatrix) -> dict[Key, np.ndarray]:
        """Alpha of the other annotators, one annotator left out at a time (point estimates only)."""
        r = self.ratings
        result: dict[Key, np.ndarray] = {}
        if len(self.raters) < 3:
            return result
        for rater in self.raters:
            keep = r.rater != rater
            table = m.rating_table(r.unit[keep], r.code[keep], r.unit_row, self.n_rows, self.q, self.distance)
            sums = table.sums(weights)
            who = r.annotators[rater]
            result[("annotator", who, "alpha_without")] = m.alpha(sums, self.distance, sums)
            result[("annotator", who, "alpha_without:units")] = sums["units"]  # the others' pairable units
        return result

    def confusion(self, top: int = 8) -> tuple[tuple[str, ...], np.ndarray] | None:
        """Coincidences among the `top` values most involved in disagreements (nominal measures)."""
        r = self.ratings
        if self.level != "nominal" or not len(r.code):
            return None
        pairs = m.make_pairs(r.unit, len(r.unit_row))
        a, b = r.code[pairs.left], r.code[pairs.right]
        coinc = np.bincount(a * self.q + b, weights=1.0 / (pairs.size - 1),
                            minlength=self.q * self.q).reshape(self.q, self.q)
        off = coinc - np.diag(np.diag(coinc))
        involvement = off.sum(axis=0) + off.sum(axis=1)
        if not involvement.any():
            return None
        chosen = sorted(int(i) for i in np.argsort(-involvement, kind="stable")[:top] if involvement[i] > 0)
        labels = tuple(str(r.values[i]) if r.values[i] != "" else "(empty)" for i in chosen)
        return labels, coinc[np.ix_(chosen, chosen)]
