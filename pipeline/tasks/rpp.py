"""RPP (Relation Pattern Prediction): rows carrying a relation label, predicted from the context before
the row (spec section 4, RPP; which rows: spec 6.3).

Where the label sits differs between released rows (spec section 2): most therapist rows carry
`relation_cycle_state`, but some leave it empty or null and set only `relation_pattern` (every therapist
row of `family_therapy/004`, four rows of `family_therapy/003`). Rule, per row (`pipeline.relation_label`,
setting `rpp.label_fields`): the first listed field with a non-empty value on that row supplies its gold,
with that field's `_reason` and `_evidence_rows` as metadata. This gives the 525 family instances of
Table 6 and leaves the couple count unchanged; deviation from the spec's per-sample wording: docs/tasks.md.
"""

from __future__ import annotations

from collections import Counter

from pipeline.benchmark_format import BenchmarkRow
from pipeline.relation_label import relation_label
from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.settings import RPPSettings

COMPANIONS = {"relation_cycle_state": ("relation_cycle_reason", "relation_cycle_evidence_rows"),
              "relation_pattern": ("relation_pattern_reason", "relation_pattern_evidence_rows")}


def rpp_rows(view: SessionView, settings: RPPSettings) -> list[BenchmarkRow]:
    return [row for row in view.rows if settings.rows == "any" or view.is_therapist(row)]


def why_no_rpp(view: SessionView, settings: RPPSettings) -> str:
    """Why a sample yields no RPP instance, for the freeze's coverage warnings."""
    fields = settings.label_fields
    labelled = [row for row in rpp_rows(view, settings) if relation_label(row, fields)[0]]
    if not labelled:
        return f" (no RPP row has a label in {' or '.join(fields)})"
    used = sorted({relation_label(row, fields)[1] for row in labelled})
    return f" ({len(labelled)} RPP row(s) labelled from {', '.join(used)}: no label in the scenario's set)"


def build_rpp(view: SessionView, settings: RPPSettings) -> tuple[list[TaskInstance], Counter, Counter]:
    """Instances, drop reasons, and per label field how many of the sample's instances it supplied."""
    dropped: Counter = Counter()
    sources: Counter = Counter()
    instances = []
    rows = rpp_rows(view, settings)
    if not any(getattr(row, name) is not None for row in rows for name in settings.label_fields):
        dropped[f"the sample sets none of the relation label fields ({', '.join(settings.label_fields)})"] += len(rows)
        return instances, +dropped, sources
    for row in rows:
        label, source = relation_label(row, settings.label_fields)
        if not label:
            dropped["no relation label (empty = no clear pattern)"] += 1
            continue
        if settings.drop_out_of_taxonomy and label not in view.relation_labels:
            dropped["label outside the scenario's relation_pattern set"] += 1
            continue
        reason_field, evidence_field = COMPANIONS[source]
        fields = {
            "row_index": row.row_index,
            "target_primary_speaker": clean(row.primary_speaker),
            "participants": list(view.participants),
            "candidate_relation_labels": list(view.relation_labels),
        }
        if settings.include_current_turn:
            fields["current_turn"] = view.records[row.row_index - 1]
        fields["prior_context"] = view.prior_context(row.row_index, settings.context_size)
        sources[source] += 1
        instances.append(TaskInstance(
            task="rpp", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index, input=fields, gold={"relation_label": label},
            meta={"couple": view.couple, "reason": clean(getattr(row, reason_field)),
                  "evidence_rows": list(getattr(row, evidence_field) or [])},
        ))
    return instances, +dropped, sources
