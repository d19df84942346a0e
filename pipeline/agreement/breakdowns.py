"""`rescue agree` as a library call: snapshot -> AgreementReport with every breakdown.

Breakdowns: per measure (all rows), per measure x scenario, per session, per annotator (against the
others) and per annotator pair; bootstrap intervals for all but the per-session figures (a session
has too few rows for a useful interval; its figures give their unit counts instead).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import sparse

from pipeline.agreement.bootstrap import percentile_interval, resample_chunks
from pipeline.agreement.categorical import CategoricalEvaluator, add_sums
from pipeline.agreement.distances import DENSE_LIMIT
from pipeline.agreement.inputs import Snapshot, paused_gc
from pipeline.agreement.plan import Measure, build_plan
from pipeline.agreement.prepared import Prepared, prepare
from pipeline.agreement.ratings import Ratings
from pipeline.agreement.results import RELIABLE, TENTATIVE, AgreementReport, Confusion, Figure, InputNote
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.textsim import Embedder, EmbeddingCache, TextEvaluator
from pipeline.schema import AnnotationSchema

Progress = Callable[[str, int, int], None]
COUNT_KEYS = {"units", "values", "spread"}
Evaluator = CategoricalEvaluator | TextEvaluator


def _not_computable(ratings: Ratings) -> str:
    if not len(ratings.code):
        return "no answers"
    raters = sorted(set(ratings.rater.tolist()))
    if len(raters) == 1:
        return f"only one annotator ({ratings.annotators[raters[0]]}) answered; agreement needs two"
    if not (np.bincount(ratings.unit) >= 2).any():
        return "no overlap: no unit has answers from two or more annotators"
    return ""


def _reason(metric: str, evaluator: Evaluator, units: float) -> str:
    if units == 0:
        return "no unit with answers from two or more annotators here"
    if metric in {"alpha", "alpha_without", "alpha_vs_rest", "fleiss_kappa"}:
        return "no variation: every answer has the same value, so the expected disagreement is 0 (0/0)"
    if metric in {"gwet_ac1", "gwet_ac2"}:
        return "fewer than two possible categories"
    if metric == "cohen_kappa":
        return "chance agreement is 1: both annotators gave one and the same value throughout"
    return "undefined"


class _Collector:
    """Point estimates and bootstrap draws of every evaluator, turned into Figures at the end."""

    def __init__(self, settings: AgreementSettings) -> None:
        self.settings = settings
        self.point: dict[tuple[str, str], dict] = {}  # (measure, scope-tag) -> result dict
        self.draws: dict[tuple[str, str], dict] = {}
        self.done = 0

    def add_draws(self, measure: str, tag: str, result: dict) -> None:
        bucket = self.draws.setdefault((measure, tag), {})
        for key, values in result.items():
            if key[2] not in COUNT_KEYS and not key[2].endswith(":units"):
                bucket.setdefault(key, []).append(values)

    def interval(self, measure: str, tag: str, key: tuple[str, str, str]) -> tuple[float | None, float | None]:
        chunks = self.draws.get((measure, tag), {}).get(key)
        if not chunks:
            return None, None
        low, high, _ = percentile_interval(np.concatenate(chunks), self.settings.confidence)
        return low, high


def _figures(evaluator: Evaluator, measure: Measure, result: dict, collector: _Collector | None, tag: str,
             scope_of: dict[str, str], extra: dict[str, str], index: int = 0) -> list[Figure]:
    figures = []
    for (scope, who, metric), values in result.items():
        if metric in COUNT_KEYS or metric.endswith(":units"):
            continue
        counts = result.get((scope, who, f"{metric}:units"), result.get((scope, who, "units")))
        units = float(counts[index]) if counts is not None else float(result[("field", "", "units")][index])
        value = float(values[index])
        defined = bool(np.isfinite(value))
        low, high = collector.interval(measure.id, tag, (scope, who, metric)) if collector and defined else (None,
                                                                                                             None)
        answers = result.get((scope, who, "values"))
        spread = result.get((scope, who, "spread"))
        first, _, second = who.partition("|")
        figures.append(Figure(
            scope=scope_of[scope], measure=measure.id, level=measure.level, metric=metric,
            value=value if defined else None, low=low, high=high, units=round(units),
            values=round(float(answers[index])) if answers is not None else 0,
            spread=float(spread[index]) if spread is not None and defined else None,
            annotators=2 if scope == "pair" else len(evaluator.raters),
            annotator=first if scope != "field" else "", other=second,
            reason="" if defined else _reason(metric, evaluator, units), **extra))
    return figures


def _notes(prepared: Prepared, settings: AgreementSettings) -> list[InputNote]:
    notes = []
    if prepared.duplicates:
        notes.append(InputNote(kind="duplicates", message=f"{prepared.duplicates} older save(s) of the same row, "
                               "annotator and field were replaced by the newest"))
    for version, count in sorted(prepared.other_versions.items()):
        notes.append(InputNote(kind="other_schema_version",
                               message=f"{count} record(s) of schema version {version} left out"))
    left_out = prepared.answers_total - prepared.answers_used
    if left_out:
        notes.append(InputNote(kind="adjudicator_left_out", message=f"{left_out} answer(s) by adjudicators "
                               f"({', '.join(settings.adjudicators)}) are not part of the agreement figures"))
    for name in sorted(set(settings.annotators) | set(prepared.per_annotator)):
        if not prepared.per_annotator.get(name):
            notes.append(InputNote(kind="silent_annotator", message=f"annotator {name} labelled nothing"))
    return notes


def compute_report(data: Snapshot | Prepared, schema: AnnotationSchema, settings: AgreementSettings, *,
                   embedder: Embedder | None = None, cache_path: Path | None = None,
                   text_model: dict[str, str] | None = None, progress: Progress | None = None) -> AgreementReport:
    use_text = embedder is not None and settings.text_similarity
    from threadpoolctl import threadpool_limits

    prepared = data if isinstance(data, Prepared) else prepare(data, schema, settings, use_text)
    # One BLAS thread: the thousands of small products here cost more in thread wake-ups than they gain,
    # and the few large ones lose little (measured on the 2-core machine).
    with paused_gc(), threadpool_limits(limits=1, user_api="blas"):
        report = _compute_report(prepared, schema, settings, embedder=embedder if use_text else None,
                                 cache_path=cache_path, text_model=text_model, progress=progress)
    return report.model_copy(update={"notes": report.notes + divergence_notes(report)})


def divergence_notes(report: AgreementReport) -> tuple[InputNote, ...]:
    """A note per field whose alpha is low (< 0.667) while Gwet's AC1/AC2 is high (>= 0.8): the annotators
    mostly agree, but on a skewed label distribution, where alpha's expected agreement is high too."""
    notes = []
    for alpha in report.figures:
        if alpha.scope != "field" or alpha.metric != "alpha" or alpha.value is None or alpha.value >= TENTATIVE:
            continue
        gwet = report.find("field", alpha.measure, "gwet_ac1") or report.find("field", alpha.measure, "gwet_ac2")
        if gwet is None or gwet.value is None or gwet.value < RELIABLE:
            continue
        percent = report.find("field", alpha.measure, "percent_agreement")
        agreed = f", percent agreement {percent.value:.3f}" if percent and percent.value is not None else ""
        name = "AC1" if gwet.metric == "gwet_ac1" else "AC2"
        notes.append(InputNote(kind="alpha_gwet_divergence", message=(
            f"{alpha.measure}: alpha {alpha.value:.3f} < {TENTATIVE} but Gwet's {name} {gwet.value:.3f} >= "
            f"{RELIABLE}{agreed}: high agreement on a skewed label distribution (one value dominates, so alpha "
            "expects much agreement by chance); read both, with the label counts")))
    return tuple(notes)


def _compute_report(prepared: Prepared, schema: AnnotationSchema, settings: AgreementSettings, *,
                    embedder: Embedder | None, cache_path: Path | None, text_model: dict[str, str] | None,
                    progress: Progress | None) -> AgreementReport:
    rows, annotators, ratings = prepared.rows, prepared.annotators, prepared.ratings
    measures = build_plan(schema)
    notes = _notes(prepared, settings)

    n_rows = len(rows.row_ids)
    evaluators: dict[str, Evaluator] = {}
    figures: list[Figure] = []
    cache = EmbeddingCache(cache_path)
    for measure in measures:
        if measure.id not in ratings:
            reason = "text similarity is switched off (--no-text, or text_similarity = false in the settings)"
            figures.append(Figure(scope="field", measure=measure.id, level=measure.level, metric="similarity",
                                  value=None, units=0, reason=reason))
            continue
        r = ratings[measure.id]
        reason = _not_computable(r)
        if reason:
            notes.append(InputNote(kind="not_computable", message=f"{measure.id}: {reason}"))
            metrics = ("similarity",) if measure.level == "text" else ("alpha", "percent_agreement")
            figures += [Figure(scope="field", measure=measure.id, level=measure.level, metric=metric, value=None,
                               units=0, values=len(r.code), annotators=len(set(r.rater.tolist())), reason=reason)
                        for metric in metrics]
            continue
        if progress:
            progress(f"measures ({measure.id})", len(evaluators), len(measures))
        if measure.level == "text":
            vectors = cache.embed(list(r.values), embedder,  # type: ignore[arg-type]
                                  (lambda done, total, name=measure.id: progress(f"embedding {name}", done, total))
                                  if progress else None)
            evaluators[measure.id] = TextEvaluator(r, n_rows, vectors, settings.seed)
        else:
            evaluators[measure.id] = evaluator = CategoricalEvaluator(r, n_rows, settings.set_distance)
            if not evaluator.weighted:
                notes.append(InputNote(kind="not_computable", message=(
                    f"{measure.id}: Fleiss' kappa, Gwet's AC2 and Cohen's kappa need the distances between all "
                    f"{evaluator.q} distinct sets, more than {DENSE_LIMIT}; only alpha and percent agreement")))
    cache.save()
    skipped = [m.id for m in measures if m.id not in ratings]
    if skipped:
        notes.append(InputNote(kind="not_computable", message=f"{len(skipped)} free-text field(s) not compared: text "
                               "similarity is switched off (--no-text, or text_similarity = false in the settings)"))

    slices = rows.scenario_slices()
    ones = np.ones((1, n_rows))
    masks = {name: _mask(span, n_rows) for name, span in slices.items()}
    fixed = {mid: ev.exact_sums(ones) for mid, ev in evaluators.items()}
    fixed_scenario = {(mid, name): ev.exact_sums(mask)
                      for mid, ev in evaluators.items() for name, mask in masks.items()}
    collector = _Collector(settings)
    for weights in resample_chunks(list(slices.values()), n_rows, settings.bootstrap_samples, settings.seed):
        collector.done += len(weights)
        if progress:
            progress("bootstrap", collector.done, settings.bootstrap_samples)
        for mid, evaluator in evaluators.items():
            parts = {}
            for name, span in slices.items():
                packed = evaluator.packed(span)
                parts[name] = packed.unpack(weights[:, span] @ packed.matrix)
                collector.add_draws(mid, name, evaluator.finish(parts[name], fixed_scenario[(mid, name)], detail=False,
                                                                q=_q(evaluator, schema, name)))
            combined = parts.popitem()[1]
            for other in parts.values():
                combined = add_sums(combined, other)
            collector.add_draws(mid, "all", evaluator.finish(combined, fixed[mid]))

    group = sparse.csr_matrix((np.ones(n_rows), (rows.row_session, np.arange(n_rows))),
                              shape=(len(rows.sessions), n_rows))
    field_scope = {"field": "field", "pair": "pair", "annotator": "annotator"}
    for number, measure in enumerate(measures, start=1):
        evaluator = evaluators.get(measure.id)
        if evaluator is None:
            continue
        point = evaluator.finish(fixed[measure.id], fixed[measure.id])
        if isinstance(evaluator, CategoricalEvaluator):
            point.update(evaluator.without(ones))
        figures += _figures(evaluator, measure, point, collector, "all", field_scope, {})
        if isinstance(evaluator, TextEvaluator) and evaluator.baseline is not None:
            figures.append(Figure(scope="field", measure=measure.id, level="text", metric="similarity_baseline",
                                  value=evaluator.baseline, units=int(evaluator.tables["main"].columns["units"].sum()),
                                  reason="answers to different units, paired at random"))
        for name in slices:
            sums = fixed_scenario[(measure.id, name)]
            result = evaluator.finish(sums, sums, detail=False, q=_q(evaluator, schema, name))
            figures += [f for f in _figures(evaluator, measure, _only_field(result), collector, name,
                                            {"field": "scenario"}, {"scenario": name}) if f.units > 0]
        session_sums = evaluator.exact_sums(group)
        per_session = _only_field(evaluator.finish(session_sums, session_sums, detail=False))
        for index, session in enumerate(rows.sessions):
            if per_session[("field", "", "units")][index] > 0:
                figures += _figures(evaluator, measure, per_session, None, "", {"field": "session"},
                                    {"session": session, "scenario": rows.session_scenario[index]}, index)
        if progress:
            progress("breakdowns", number, len(measures))

    confusions = []
    for measure_id, evaluator in evaluators.items():
        table = evaluator.confusion() if isinstance(evaluator, CategoricalEvaluator) else None
        if table:
            labels, matrix = table
            confusions.append(Confusion(measure=measure_id, labels=labels,
                                        matrix=tuple(tuple(round(float(v), 6) for v in row) for row in matrix)))
    return AgreementReport(
        snapshot=prepared.snapshot, annotations_file=prepared.path.as_posix(), schema_id=schema.id,
        annotators=annotators, sessions=len(rows.sessions), rows=n_rows, answers=prepared.answers_used,
        bootstrap_samples=settings.bootstrap_samples, confidence=settings.confidence, seed=settings.seed,
        set_distance=settings.set_distance, text_model=text_model or {}, notes=tuple(notes),
        figures=tuple(figures), confusions=tuple(confusions))


def _mask(span: slice, n_rows: int) -> np.ndarray:
    mask = np.zeros((1, n_rows))
    mask[0, span] = 1.0
    return mask


def _only_field(result: dict) -> dict:
    return {key: value for key, value in result.items() if key[0] == "field"}


def _q(evaluator: Evaluator, schema: AnnotationSchema, scenario: str) -> int | None:
    """Categories possible in one scenario (label sets differ between couple and family)."""
    measure = evaluator.ratings.measure
    domain = measure.domain(schema, scenario)  # type: ignore[arg-type]
    return len(domain) if measure.label_set and domain else None
