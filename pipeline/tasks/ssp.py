"""SSP (Support Strategy Prediction): the therapist's next strategy from the scenario's closed set, given
its target (spec section 4, SSP). Rows whose first strategy is outside the set are not used."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.benchmark_format import BenchmarkRow
from pipeline.tasks.context import SessionView, clean, context_window, parse_intensity
from pipeline.tasks.instances import TaskInstance, row_id
from pipeline.tasks.settings import SSPSettings


def recent_target_emotion(view: SessionView, row_index: int, context_size: int, target: str) -> list[dict[str, Any]]:
    """Walking back through the context window: the latest row with internal_emotion items of the target
    (for the group label: of any participant), as the released --include-target-internal-emotion does."""
    people = set(view.participants) if target == view.group_label else {target}
    for index in reversed(context_window(row_index, context_size)):
        row = view.row(index)
        items = []
        for item in row.internal_emotion:
            description = clean(item.emotion_description)
            if not description:
                continue
            entry: dict[str, Any] = {"person": clean(item.person) or clean(row.primary_speaker),
                                     "emotion_description": description}
            intensity = parse_intensity(item.intensity)
            if intensity is not None:
                entry["intensity"] = intensity
            items.append(entry)
        selected = [entry for entry in items if entry["person"] in people]
        if selected:
            return selected
    return []


def strategy_and_target(view: SessionView, row: BenchmarkRow, multi_target: str) -> tuple[str, str, str, str]:
    """(strategy, target label, target source, drop reason) for one therapist row."""
    if not row.support_strategy or not clean(row.support_strategy[0].strategy_type):
        return "", "", "", "therapist row without a support strategy"
    first = row.support_strategy[0]
    strategy = clean(first.strategy_type)
    if strategy not in view.strategy_labels:
        return "", "", "", "strategy outside the scenario's support_strategy set"
    target, source = view.canonical_target(first.target), "support_strategy"
    if not target:
        target, source = view.canonical_target(row.target), "row_target_fallback"
    label = view.target_label(target, multi_target)
    if not label:
        return "", "", "", "support target cannot be resolved"
    return strategy, label, source, ""


def build_ssp(view: SessionView, settings: SSPSettings) -> tuple[list[TaskInstance], Counter]:
    dropped: Counter = Counter()
    instances = []
    for row in view.rows:
        if not view.is_therapist(row):
            continue
        strategy, target, source, reason = strategy_and_target(view, row, settings.multi_target)
        if reason:
            dropped[reason] += 1
            continue
        fields: dict[str, Any] = {
            "row_index": row.row_index, "participants": list(view.participants), "known_support_target": target,
            "candidate_strategy_labels": list(view.strategy_labels),
        }
        if settings.include_target_internal_emotion:
            emotion = recent_target_emotion(view, row.row_index, settings.context_size, target)
            if emotion:
                fields["known_support_target_internal_emotion"] = emotion
        fields["prior_context"] = view.prior_context(row.row_index, settings.context_size)
        instances.append(TaskInstance(
            task="ssp", id=row_id(view.sample_id, row.row_index), sample_id=view.sample_id, scenario=view.scenario,
            row_index=row.row_index, input=fields, gold={"strategy_label": strategy},
            meta={"couple": view.couple, "target_source": source,
                  "strategy_content": clean(row.support_strategy[0].strategy_content)},
        ))
    return instances, +dropped
