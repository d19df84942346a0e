"""The agreement report's figures for the release card: build/agreement/report.json -> AgreementSummary
(per label field: Krippendorff's alpha with its bootstrap interval, percent agreement, text similarity)."""

from __future__ import annotations

from pydantic import ValidationError

from pipeline import layout
from pipeline.agreement.results import AgreementReport
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.tasks.release_card import AgreementSummary, FieldAgreement

REPORT_NAME = "report.json"


def summarise(report: AgreementReport) -> AgreementSummary:
    """Field-level figures in the report's order (one entry per measure)."""
    by_measure: dict[str, dict[str, object]] = {}
    for figure in report.figures:
        if figure.scope != "field":
            continue
        entry = by_measure.setdefault(figure.measure, {"field": figure.measure, "level": figure.level, "units": 0})
        if figure.metric == "alpha":
            entry.update(alpha=figure.value, alpha_low=figure.low, alpha_high=figure.high, level=figure.level)
        elif figure.metric in ("percent_agreement", "similarity"):
            entry[figure.metric] = figure.value
        else:
            continue
        entry["units"] = max(int(entry["units"]), figure.units)  # type: ignore[call-overload]
    return AgreementSummary(annotators=len(report.annotators), sessions=report.sessions,
                            rows=report.rows, answers=report.answers, confidence=report.confidence,
                            bootstrap_samples=report.bootstrap_samples,
                            fields=tuple(FieldAgreement.model_validate(e) for e in by_measure.values()))


def build_agreement(project: Project) -> AgreementSummary | None:
    """The summary of the build's agreement report; None where there is none (the card then says so)."""
    path = layout.agreement_dir(project) / REPORT_NAME
    if not path.is_file():
        return None
    try:
        report = AgreementReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, UnicodeDecodeError) as exc:
        raise RescueError(f"{project.rel(path)} is not a readable agreement report ({exc.__class__.__name__})",
                          "run `rescue agree` to write it again") from exc
    return summarise(report)
