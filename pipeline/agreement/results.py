"""Typed results of `rescue agree`: one `Figure` per (breakdown, measure, metric), and the report around them.

Every figure carries the number of units behind it; a figure that cannot be computed has value None
and says why in `reason` (never a made-up number).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from pipeline.records import Record

# Krippendorff (2004, p. 241): rely on alpha >= 0.8; draw tentative conclusions only from 0.667 <= alpha < 0.8.
RELIABLE, TENTATIVE = 0.8, 0.667
BANDED_METRICS = frozenset({"alpha", "gwet_ac1", "gwet_ac2", "fleiss_kappa", "cohen_kappa"})


def band(metric: str, value: float | None) -> str:
    """'low' (< 0.667), 'tentative' (< 0.8) or '' for a chance-corrected coefficient; percent agreement and
    similarities are not banded (they are not chance-corrected, so the thresholds do not apply)."""
    if metric not in BANDED_METRICS or value is None:
        return ""
    return "low" if value < TENTATIVE else "tentative" if value < RELIABLE else ""


Scope = Literal["field", "scenario", "session", "annotator", "pair"]
METRIC_LABELS = {
    "alpha": "Krippendorff's alpha",
    "percent_agreement": "percent agreement",
    "fleiss_kappa": "Fleiss' kappa",
    "gwet_ac1": "Gwet's AC1",
    "gwet_ac2": "Gwet's AC2 (weighted)",
    "cohen_kappa": "Cohen's kappa",
    "alpha_vs_rest": "alpha, this annotator's pairs",
    "alpha_without": "alpha without this annotator",
    "similarity": "mean pairwise similarity",
    "similarity_baseline": "similarity of unrelated answers",
}


class Figure(Record):
    scope: Scope
    measure: str
    level: str
    metric: str
    value: float | None
    low: float | None = None
    high: float | None = None
    spread: float | None = Field(default=None, description="standard deviation across units (text similarity)")
    units: int = Field(description="units behind the figure (pairable units, or units the pair shares)")
    values: int = Field(default=0, description="answers behind the figure")
    annotators: int = 0
    scenario: str = ""
    session: str = ""
    annotator: str = ""
    other: str = ""
    reason: str = ""


class Confusion(Record):
    """Coincidences between the most confused values of one measure (both orders of each pair)."""

    measure: str
    labels: tuple[str, ...]
    matrix: tuple[tuple[float, ...], ...]


class InputNote(Record):
    kind: Literal["duplicates", "other_schema_version", "silent_annotator", "adjudicator_left_out",
                  "single_annotator", "not_computable", "alpha_gwet_divergence", "not_on_roster", "kept_answers"]
    message: str


class GivenAnswer(Record):
    annotator: str
    answer: str


class TaskLink(Record):
    """A Label Studio task of a disputed row: one per annotator whose task is known, and the adjudication task."""

    kind: Literal["annotator", "adjudication"]
    annotator: str = ""  # whose task ("" for the adjudication task)
    url: str
    label: str


class Disagreement(Record):
    session_id: str
    row_id: str
    row_index: int
    item: str = ""  # the item key for item sub-fields ("" for row-level measures)
    text: str = ""  # the row's transcript text ("" when build/transcripts/ does not hold the session)
    answers: tuple[GivenAnswer, ...]
    links: tuple[TaskLink, ...] = ()  # each annotator's task (sorted by annotator), then the adjudication task

    @model_validator(mode="before")
    @classmethod
    def _one_link_of_older_reports(cls, data: Any) -> Any:
        """Reports written before `links` had one annotator's task as `link` + `link_label`: read it as a link."""
        if isinstance(data, dict) and ("link" in data or "link_label" in data):
            data = dict(data)
            url, label = str(data.pop("link", "") or ""), str(data.pop("link_label", "") or "")
            if url and "links" not in data:
                data["links"] = ({"kind": "annotator", "url": url, "label": label},)
        return data

    def link_of(self, annotator: str) -> TaskLink | None:
        return next((link for link in self.links if link.kind == "annotator" and link.annotator == annotator), None)

    @property
    def adjudication_link(self) -> TaskLink | None:
        return next((link for link in self.links if link.kind == "adjudication"), None)


class MeasureDisagreements(Record):
    measure: str
    units: int  # units with two or more answers
    total: int  # of those, units where the answers differ
    shown: tuple[Disagreement, ...]


class KeptShare(Record):
    model_version: str
    field: str
    scenario: str
    source: str = Field("", description="where the draft came from: model, baseline (the gated backend's majority "
                                        "answer) or transcript")
    drafted: int = Field(description="annotators' answers on tasks whose draft pre-filled this field")
    kept: int = Field(description="of those, answers equal to the draft")

    @property
    def share(self) -> float | None:
        return self.kept / self.drafted if self.drafted else None


class DraftAgreement(Record):
    """One coefficient between a model's drafts and the gold (coders: `gold` and the model)."""

    model_version: str
    figure: Figure


class DraftSource(Record):
    """Per model version and field of a gated backend: whether the tasks' drafts came from the model, the
    majority baseline or nothing (the field was left empty), as push recorded it in the tasks' meta."""

    model_version: str
    field: str
    source: str = Field(description="model | baseline | nothing")
    tasks: int = Field(description="annotated tasks whose draft recorded this source for the field")


class Acceptance(Record):
    """The report's "Pre-annotation acceptance" section (pipeline/agreement/acceptance.py)."""

    kept: tuple[KeptShare, ...] = ()
    sources: tuple[DraftSource, ...] = ()
    agreement: tuple[DraftAgreement, ...] = ()
    tasks_with_drafts: int = Field(0, description="annotated tasks whose meta records the draft they showed")
    tasks_without_record: int = Field(0, description="annotated tasks pushed before drafts were recorded")

    @property
    def model_versions(self) -> tuple[str, ...]:
        return tuple(sorted({k.model_version for k in self.kept}))


class AgreementReport(Record):
    snapshot: str
    annotations_file: str
    schema_id: str
    annotators: tuple[str, ...]
    sessions: int
    rows: int
    answers: int
    bootstrap_samples: int
    confidence: float
    seed: int
    set_distance: str
    text_model: dict[str, str] = Field(default_factory=dict)
    notes: tuple[InputNote, ...] = ()
    figures: tuple[Figure, ...] = ()
    confusions: tuple[Confusion, ...] = ()
    disagreements: tuple[MeasureDisagreements, ...] = Field(
        default=(), description="per measure, the units where the annotators' answers differ (capped, with the total)")
    acceptance: Acceptance = Field(default_factory=Acceptance, description="how much of the drafts annotators kept")

    def find(self, scope: Scope, measure: str, metric: str, **where: str) -> Figure | None:
        for figure in self.figures:
            if (figure.scope, figure.measure, figure.metric) == (scope, measure, metric) and all(
                    getattr(figure, key) == value for key, value in where.items()):
                return figure
        return None
