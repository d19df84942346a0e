"""RPP (Relation Pattern Prediction): rows carrying a relation_cycle_state label, predicted from the
context before the row (spec section 4, RPP; which rows: spec 6.3)."""

from __future__ import annotations

from collections import Counter

from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.settings import RPPSettings


def build_rpp(view: SessionView, settings: RPPSettings) -> tuple[list[TaskInstance], Counter]:
    dropped: Counter = Counter()
    instances = []
    for row in view.rows:
        if settings.rows == "therapist" and not view.is_therapist(row):
            continue
        label = clean(row.relation_cycle_state)
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
            meta={"couple": view.couple, "reason": clean(row.relation_cycle_reason),
                  "evidence_rows": list(row.relation_cycle_evidence_rows or [])},
        ))
    return instances, +dropped
