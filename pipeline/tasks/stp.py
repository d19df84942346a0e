"""STP (Support Target Prediction): whom the therapist's next supportive move addresses, ranked from a
closed candidate list (spec section 4, STP; definition and collapse: spec 6.8).

The candidate list is built per sample, never per instance: the released script appended a missing
gold label to one instance's list, which tells the model the answer.
"""

from __future__ import annotations

from collections import Counter

from pipeline.benchmark_format import BenchmarkRow
from pipeline.tasks.context import SessionView, clean
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.settings import STPSettings


def support_target(view: SessionView, row: BenchmarkRow, multi_target: str) -> tuple[str, str, str]:
    """(label, source, strategy_type) of the row's first support_strategy item; the row target is the fallback.

    An empty label means the row has no support strategy, or no target left once the therapist is removed.
    """
    if not row.support_strategy or not clean(row.support_strategy[0].strategy_type):
        return "", "none", ""
    first = row.support_strategy[0]
    target = view.canonical_target(first.target)
    if target:
        return view.target_label(target, multi_target), "support_strategy", clean(first.strategy_type)
    fallback = view.canonical_target(row.target)
    if fallback:
        return view.target_label(fallback, multi_target), "row_target_fallback", clean(first.strategy_type)
    return "", "none", clean(first.strategy_type)


def candidate_targets(view: SessionView, multi_target: str) -> list[str]:
    """Participants, the group label, then any other target label of the sample's therapist rows."""
    labels = [*view.participants, view.group_label]
    for row in view.rows:
        if not view.is_therapist(row):
            continue
        for target in (row.target, *(item.target for item in row.support_strategy)):
            label = view.target_label(view.canonical_target(target), multi_target)
            if label:
                labels.append(label)
    return list(dict.fromkeys(labels))


def build_stp(view: SessionView, settings: STPSettings) -> tuple[list[TaskInstance], Counter]:
    dropped: Counter = Counter()
    candidates = candidate_targets(view, settings.multi_target)
    instances = []
    for row in view.rows:
        if not view.is_therapist(row):
            continue
        if settings.rows == "support_strategy":
            label, source, strategy = support_target(view, row, settings.multi_target)
        else:
            label = view.target_label(view.canonical_target(row.target), settings.multi_target)
            source = "row_target"
            strategy = clean(row.support_strategy[0].strategy_type) if row.support_strategy else ""
        if not label:
            dropped["therapist row without a support strategy or resolvable target"] += 1
            continue
        instances.append(TaskInstance(
            task="stp", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index,
            input={"row_index": row.row_index, "participants": list(view.participants),
                   "candidate_target_labels": candidates,
                   "prior_context": view.prior_context(row.row_index, settings.context_size)},
            gold={"target_label": label},
            meta={"couple": view.couple, "target_source": source, "strategy_type": strategy},
        ))
    return instances, +dropped
