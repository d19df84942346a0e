"""Pre-annotation acceptance: how much of each model's drafts the annotators kept, and how well the drafts
agree with the adjudicated gold.

The drafts that count are the ones the annotators saw: push records each task's draft in the task's meta
(`pipeline/annotate/drafted.ShownDraft`), the snapshot keeps the export verbatim, and a task that has an
annotation never gets its draft replaced. Per model version, field and scenario:

- kept: of the annotators' answers on tasks that pre-filled the field, the share equal to the draft (after
  the normalisation agreement uses: names as a set, texts with whitespace folded, items in any order). A
  drafted field the annotation leaves empty, or that no longer applies to the speaker they chose, counts
  as changed.
- agreement with the gold: the report's coefficients (`compute_report`), with the gold and the model as
  two coders of the rows the model drafted, where consensus or an adjudicator settled the field.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from pipeline.agreement.adjudication import SETTLED, FieldOutcome
from pipeline.agreement.inputs import Answer, Snapshot, latest_annotations
from pipeline.agreement.results import Acceptance, DraftAgreement, DraftSource, KeptShare
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.sources import embedding_cache, read_snapshot, schema_for
from pipeline.annotate.drafted import TRANSCRIPT_VERSION, ShownDraft, shown_draft_of
from pipeline.project import Project
from pipeline.schema import AnnotationSchema

GOLD = "gold"


def shown_drafts(snapshot_folder: Path) -> tuple[dict[int, ShownDraft], int]:
    """Task id -> the draft it showed, over the snapshot's stored exports; and the annotated tasks that
    record none (pushed before push recorded drafts)."""
    import ijson

    found: dict[int, ShownDraft] = {}
    unrecorded = 0
    for export in sorted((snapshot_folder / "exports").glob("*/*.json")):
        with export.open("rb") as stream:
            for task in ijson.items(stream, "item", use_float=True):
                if not task.get("annotations"):
                    continue
                draft = shown_draft_of(task.get("meta") or {})
                if draft is None:
                    unrecorded += 1
                else:
                    found[int(task["id"])] = draft
    return found, unrecorded


def normalised(schema: AnnotationSchema, field: str, value: JsonValue) -> str:
    """A comparable form of a field value: names and row numbers as sets, texts with whitespace folded,
    items as a set of normalised items; empty values ("", [], None) all alike."""
    kinds = {f.name: f for f in schema.fields}
    spec = kinds.get(field)

    def norm(kind: str, raw: Any) -> Any:
        if raw in (None, "", []):
            return None
        if kind in ("entities", "row_refs"):
            return sorted({str(v).strip() for v in raw}) if isinstance(raw, list) else raw
        if kind == "text":
            return " ".join(str(raw).split()) or None
        if kind in ("label", "entity"):
            return str(raw).strip() or None
        return raw

    if spec is None:
        return json.dumps(value, sort_keys=True)
    if spec.type != "items":
        return json.dumps(norm(spec.type, value), sort_keys=True)
    if not isinstance(value, list) or not value:
        return json.dumps(None)
    items = sorted(json.dumps({sub.name: norm(sub.type, item.get(sub.name)) for sub in spec.items}, sort_keys=True)
                   for item in value if isinstance(item, dict))
    return json.dumps(items)


def draft_source(draft: ShownDraft, field: str) -> str:
    """Where a shown field's draft came from: transcript, the gate's model or baseline, or (ungated) the model."""
    version = draft.versions.get(field, draft.model_version)
    if version == TRANSCRIPT_VERSION:
        return "transcript"
    return draft.sources.get(field, "model")


def draft_sources(answers: Sequence[Answer], shown: Mapping[int, ShownDraft]) -> list[DraftSource]:
    """Per (model version, gated field, source): the annotated tasks whose draft recorded it, fields left empty
    by the gate included."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for task_id in sorted({a.task_id for a in answers if a.task_id in shown}):
        draft = shown[task_id]
        for field, source in draft.sources.items():
            counts[(draft.model_version, field, source)] += 1
    return [DraftSource(model_version=v, field=f, source=s, tasks=n) for (v, f, s), n in sorted(counts.items())]


def kept_shares(schema: AnnotationSchema, answers: Sequence[Answer], shown: Mapping[int, ShownDraft]) -> list[KeptShare]:
    """Per (model version, field, scenario, draft source): drafted answers and the kept ones (see the module's
    doc)."""
    given: dict[tuple[int, str], dict[str, JsonValue]] = {}  # (task, annotator) -> field -> answer
    scenario_of: dict[int, str] = {}
    for answer in answers:
        if answer.task_id in shown:
            given.setdefault((answer.task_id, answer.annotator), {})[answer.field] = answer.value
            scenario_of[answer.task_id] = answer.scenario
    drafted: Counter[tuple[str, str, str, str]] = Counter()
    kept: Counter[tuple[str, str, str, str]] = Counter()
    for (task_id, _), values in given.items():
        draft = shown[task_id]
        for field, value in draft.values.items():
            key = (draft.versions.get(field, draft.model_version), field, scenario_of[task_id],
                   draft_source(draft, field))
            drafted[key] += 1
            if normalised(schema, field, values.get(field)) == normalised(schema, field, value):
                kept[key] += 1
    order = {f.name: i for i, f in enumerate(schema.fields)}
    return [KeptShare(model_version=v, field=f, scenario=s, source=source, drafted=n, kept=kept[(v, f, s, source)])
            for (v, f, s, source), n in sorted(drafted.items(), key=lambda item: (
                item[0][0], order.get(item[0][1], 99), item[0][2], item[0][3]))]


def coder_answers(answers: Sequence[Answer], shown: Mapping[int, ShownDraft],
                  gold: Mapping[str, Mapping[str, FieldOutcome]]) -> dict[str, list[Answer]]:
    """Per model version, the answers of two coders, `gold` and the model, on every (row, field) the model
    drafted and the gold settled (the first task of a row counts when several showed the same version)."""
    rows: dict[int, Answer] = {}
    for answer in answers:
        rows.setdefault(answer.task_id, answer)
    out: dict[str, dict[tuple[str, str], tuple[Answer, Answer]]] = {}
    for task_id in sorted(shown):
        anchor = rows.get(task_id)
        if anchor is None:
            continue
        draft = shown[task_id]
        settled = gold.get(anchor.row_id, {})
        for field, value in draft.values.items():
            outcome = settled.get(field)
            version = draft.versions.get(field, draft.model_version)
            if outcome is None or outcome.status not in SETTLED or (anchor.row_id, field) in out.get(version, {}):
                continue
            base = anchor._replace(field=field, annotation_id=0, task_id=task_id)
            out.setdefault(version, {})[(anchor.row_id, field)] = (
                base._replace(annotator=GOLD, value=outcome.value), base._replace(annotator=version, value=value))
    return {version: [a for pair in pairs.values() for a in pair] for version, pairs in sorted(out.items())}


def draft_agreement(snapshot: Snapshot, schema: AnnotationSchema, settings: AgreementSettings,
                    per_version: Mapping[str, list[Answer]], *, embedder: Any = None, cache_path: Path | None = None
                    ) -> list[DraftAgreement]:
    """The report's coefficients per model version, field and scenario, with the gold and the model as coders."""
    from pipeline.agreement.breakdowns import compute_report

    from pipeline.agreement.plan import build_plan

    field_of = {measure.id: measure.field for measure in build_plan(schema)}
    found: list[DraftAgreement] = []
    quiet = settings.model_copy(update={"adjudicators": ()})  # the two coders are never adjudicators
    for version, coded in per_version.items():
        drafted = {answer.field for answer in coded}
        data = replace(snapshot, answers=coded, duplicates=0, other_versions={})
        report = compute_report(data, schema, quiet, embedder=embedder, cache_path=cache_path)
        found += [DraftAgreement(model_version=version, figure=f) for f in report.figures
                  if f.scope in ("field", "scenario") and field_of.get(f.measure) in drafted]
    return found


def measure_acceptance(snapshot: Snapshot, schema: AnnotationSchema, settings: AgreementSettings,
                       shown: Mapping[int, ShownDraft], gold: Mapping[str, Mapping[str, FieldOutcome]], *,
                       embedder: Any = None, cache_path: Path | None = None) -> Acceptance:
    """Kept shares and agreement with the gold of the drafts `shown` (task id -> draft)."""
    adjudicators = set(settings.adjudicators)
    answers = [a for a in snapshot.answers if a.annotator not in adjudicators]
    agreement = draft_agreement(snapshot, schema, settings, coder_answers(answers, shown, gold),
                                embedder=embedder, cache_path=cache_path)
    return Acceptance(kept=tuple(kept_shares(schema, answers, shown)), agreement=tuple(agreement),
                      sources=tuple(draft_sources(answers, shown)),
                      tasks_with_drafts=len({a.task_id for a in answers if a.task_id in shown}))


def report_acceptance(project: Project, settings: AgreementSettings, *, snapshot: str | None,
                      skip_other_versions: bool, use_text: bool) -> Acceptance:
    """The acceptance section of `rescue agree`: the snapshot's recorded drafts against its answers and against
    the gold that consensus and the adjudicators settle from it (as `rescue gold` does)."""
    from pipeline.agreement.gold import settle

    settings = settings.model_copy(update={"text_similarity": use_text})
    # the drafts the tasks recorded first: without any, the snapshot's records need not be read a second time
    shown, unrecorded = shown_drafts(latest_annotations(project, snapshot).parent)
    if not shown:
        return Acceptance(tasks_without_record=unrecorded)
    data = read_snapshot(project, schema_for(project, settings), snapshot=snapshot,
                         skip_other_versions=skip_other_versions)
    settled, schema = settle(project, settings, snapshot=snapshot, skip_other_versions=skip_other_versions)
    embedder = cache = None
    if use_text:
        from pipeline.text_similarity import embed

        embedder, cache = embed, embedding_cache(project)
    found = measure_acceptance(data, schema, settings, shown, settled.outcomes, embedder=embedder, cache_path=cache)
    return found.model_copy(update={"tasks_without_record": unrecorded})
