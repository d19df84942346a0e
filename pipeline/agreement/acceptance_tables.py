"""The "Pre-annotation acceptance" section of the agreement report as tables, for HTML, Markdown and CSV."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.agreement.results import Acceptance, Figure

TITLE = "Pre-annotation acceptance"
INTRO = ("Per model version (backend:model:schema), field and scenario: of the annotators' answers on tasks whose "
         "draft pre-filled the field, the share they kept unchanged (after the normalisation agreement uses; a "
         "drafted field left empty counts as changed); then the report's coefficients between the drafts and the "
         "gold settled from this snapshot (consensus or adjudication), with the model as one more coder. The drafts "
         "compared are the ones each task showed, as push recorded them in the task's meta. 'draft from' says where "
         "a field's draft came from: the model, the majority baseline (a gated backend drafts a field from the model "
         "only where its cross-validated gain is significant), or the transcript; fields the gate left empty are "
         "listed under 'Draft source per field'.")
KEPT_HEADER = ["model version", "field", "draft from", "scenario", "drafted answers", "kept", "share kept"]
SOURCE_TITLE = "Draft source per field"
SOURCE_HEADER = ["model version", "field", "draft from", "annotated tasks"]
GOLD_HEADER = ["model version", "measure", "scenario", "units", "Krippendorff's alpha", "Gwet's AC1/AC2",
               "Cohen's kappa", "percent agreement / similarity", "note"]
GOLD_METRICS = ("alpha", "gwet", "cohen_kappa", "percent_agreement")


def none_message(acceptance: Acceptance) -> str:
    """What the section says when there is nothing to measure ('' when there is)."""
    if acceptance.kept:
        return ""
    if acceptance.tasks_without_record:
        return (f"None: the {acceptance.tasks_without_record} annotated task(s) of this snapshot were pushed before "
                "push recorded the draft each task shows; push again (new tasks record it) to measure acceptance.")
    return "None: no annotated task of this snapshot showed a draft."


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def kept_rows(acceptance: Acceptance) -> list[list[str]]:
    return [[k.model_version, k.field, k.source, k.scenario, str(k.drafted), str(k.kept), _share(k.share)]
            for k in acceptance.kept]


def source_rows(acceptance: Acceptance) -> list[list[str]]:
    """Per gated model version and field: model, baseline or nothing (left empty), and on how many tasks."""
    return [[s.model_version, s.field, s.source, str(s.tasks)] for s in acceptance.sources]


def gold_rows(acceptance: Acceptance, cell: Callable[[Figure | None], str]) -> list[list[str]]:
    """One row per (model version, measure, scenario): 'all' for the whole snapshot, then each scenario; `cell`
    formats a figure as the report's other tables do."""
    index: dict[tuple[str, str, str], dict[str, Figure]] = {}
    for item in acceptance.agreement:
        f = item.figure
        metric = "gwet" if f.metric in ("gwet_ac1", "gwet_ac2") else "percent_agreement" \
            if f.metric == "similarity" else f.metric
        index.setdefault((item.model_version, f.measure, f.scenario or "all"), {})[metric] = f
    rows = []
    for (version, measure, scenario), found in index.items():
        reason = next((f.reason for f in found.values() if f.value is None and f.reason), "")
        rows.append([version, measure, scenario, str(max(f.units for f in found.values())),
                     *(cell(found.get(metric)) for metric in GOLD_METRICS), reason])
    return rows


def csv_rows(acceptance: Acceptance) -> list[list[object]]:
    """Rows in agreement.csv's columns: scope `acceptance`, the model version as the annotator; kept shares as
    metric `kept_share` (units: drafted answers, values: kept; column other: the draft's source), each gated
    field's source as metric `draft_source` (other: model, baseline or nothing; units: annotated tasks), and
    coefficients against `gold` (column other)."""
    rows: list[list[object]] = []
    for k in acceptance.kept:
        rows.append(["acceptance", k.field, "", "kept_share", k.scenario, "", k.model_version, k.source, k.share, None,
                     None, None, k.drafted, k.kept, None, ""])
    for s in acceptance.sources:
        rows.append(["acceptance", s.field, "", "draft_source", "", "", s.model_version, s.source, None, None, None,
                     None, s.tasks, None, None, ""])
    for item in acceptance.agreement:
        f: Figure = item.figure
        rows.append(["acceptance", f.measure, f.level, f.metric, f.scenario, "", item.model_version, "gold", f.value,
                     f.low, f.high, f.spread, f.units, f.values, f.annotators, f.reason])
    return rows


__all__ = ["GOLD_HEADER", "INTRO", "KEPT_HEADER", "SOURCE_HEADER", "SOURCE_TITLE", "TITLE", "csv_rows", "gold_rows",
           "kept_rows", "none_message", "source_rows"]
