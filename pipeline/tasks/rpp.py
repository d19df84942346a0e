"""RPP (Relation Pattern Prediction): rows carrying a relation label, predicted from the context before
the row (spec section 4, RPP; which rows: spec 6.3).

Where the label sits differs between released samples (spec section 2): most carry
`relation_cycle_state`, but some family samples carry no `relation_cycle_state` on any row, only
`relation_pattern` on therapist rows. Rule (setting `rpp.label_fields`): per sample, the first listed
field that any RPP row of the sample sets (not null; "" counts as set, = no clear pattern) supplies the
gold of every RPP row of that sample, with the field's `_reason` and `_evidence_rows` as metadata. A
sample with states keeps reading only states, so the released counts are reproduced.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pipeline.benchmark_format import BenchmarkRow
from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.settings import RPPSettings

COMPANIONS = {"relation_cycle_state": ("relation_cycle_reason", "relation_cycle_evidence_rows"),
              "relation_pattern": ("relation_pattern_reason", "relation_pattern_evidence_rows")}


def rpp_rows(view: SessionView, settings: RPPSettings) -> list[BenchmarkRow]:
    return [row for row in view.rows if settings.rows == "any" or view.is_therapist(row)]


def label_field(rows: Sequence[BenchmarkRow], fields: Sequence[str]) -> str:
    """The first of `fields` that any of `rows` sets (not null), or "" when none does."""
    for name in fields:
        if any(getattr(row, name) is not None for row in rows):
            return name
    return ""


def build_rpp(view: SessionView, settings: RPPSettings) -> tuple[list[TaskInstance], Counter, str]:
    """Instances, drop reasons, and the field that supplied the sample's labels ("" = none)."""
    dropped: Counter = Counter()
    instances = []
    rows = rpp_rows(view, settings)
    source = label_field(rows, settings.label_fields)
    if not source:
        dropped[f"the sample sets none of the relation label fields ({', '.join(settings.label_fields)})"] += len(rows)
        return instances, +dropped, source
    reason_field, evidence_field = COMPANIONS[source]
    for row in rows:
        label = clean(getattr(row, source))
        if not label:
            dropped["no relation label (empty = no clear pattern)"] += 1
            continue
        if settings.drop_out_of_taxonomy and label not in view.relation_labels:
            dropped["label outside the scenario's relation_pattern set"] += 1
            continue
        fields = {
            "row_index": row.row_index,
            "target_primary_speaker": clean(row.primary_speaker),
            "participants": list(view.participants),
            "candidate_relation_labels": list(view.relation_labels),
        }
        if settings.include_current_turn:
            fields["current_turn"] = view.records[row.row_index - 1]
        fields["prior_context"] = view.prior_context(row.row_index, settings.context_size)
        instances.append(TaskInstance(
            task="rpp", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index, input=fields, gold={"relation_label": label},
            meta={"couple": view.couple, "reason": clean(getattr(row, reason_field)),
                  "evidence_rows": list(getattr(row, evidence_field) or [])},
        ))
    return instances, +dropped, source
