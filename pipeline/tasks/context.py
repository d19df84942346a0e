"""What every task builder shares: the session view, the model-facing row record, the context window,
target labels and the small parsers (word count, intensity). Pure functions, no I/O.

The model-facing row record never carries utterance_type, internal_emotion, viewpoints_attitudes,
support_strategy or relation fields (spec section 4, "Context row fields"): those are gold somewhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.schema import AnnotationSchema

_WORD = re.compile(r"[A-Za-z0-9']+")


def clean(value: Any) -> str:
    return str(value or "").strip()


def word_count(text: str) -> int:
    """Tokens as the released ER script counts them (regex [A-Za-z0-9']+)."""
    return len(_WORD.findall(clean(text)))


def parse_intensity(value: Any) -> int | None:
    """int(round(float(value))) within 0-10, else None. Python's round: halves go to the even number."""
    try:
        intensity = round(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return intensity if 0 <= intensity <= 10 else None


def timestamp(row: BenchmarkRow) -> str:
    return f"{row.start_time:.3f}-{row.end_time:.3f}"


def _names(values: Iterable[str]) -> list[str]:
    return [clean(v) for v in values if clean(v)]


def row_record(row: BenchmarkRow) -> dict[str, Any]:
    """The model-facing view of one row; items missing a required part are dropped (as released)."""
    return {
        "row_index": row.row_index,
        "timestamp": timestamp(row),
        "primary_speaker": clean(row.primary_speaker),
        "target": _names(row.target),
        "dialogue_cleaned": clean(row.dialogue_cleaned),
        "background_dialogue": [
            {"speaker": clean(b.speaker), "target": _names(b.target), "content": clean(b.content)}
            for b in row.background_dialogue if clean(b.speaker) and _names(b.target) and clean(b.content)
        ],
        "tone_of_voice": clean(row.tone_of_voice),
        "body_posture": _described(row.body_posture),
        "facial_expressions": _described(row.facial_expressions),
        "self_directed_behavior": _described(row.self_directed_behavior),
        "interaction_behavior": [
            {"initiator": clean(i.initiator), "target": _names(i.target), "description": clean(i.description)}
            for i in row.interaction_behavior if clean(i.initiator) and _names(i.target) and clean(i.description)
        ],
    }


def _described(items: Sequence[Any]) -> list[dict[str, str]]:
    return [{"person": clean(i.person), "description": clean(i.description)}
            for i in items if clean(i.person) and clean(i.description)]


def context_window(current_row: int, size: int) -> range:
    """1-based rows shown before `current_row`: [max(1, cur - N), cur - 1]; N = -1 all, N = 0 none."""
    if size == 0:
        return range(1, 1)
    start = 1 if size < 0 else max(1, current_row - size)
    return range(start, current_row)


@dataclass(frozen=True)
class SessionView:
    """One gold session plus what the builders look up repeatedly (computed once per session)."""

    session: BenchmarkSession
    therapist: str
    group_label: str
    participants: tuple[str, ...]
    relation_labels: tuple[str, ...]
    strategy_labels: tuple[str, ...]
    records: tuple[dict[str, Any], ...]
    all_group_labels: frozenset[str]

    @property
    def sample_id(self) -> str:
        return self.session.sample_id

    @property
    def scenario(self) -> str:
        return self.session.scenario

    @property
    def rows(self) -> list[BenchmarkRow]:
        return self.session.rows

    @property
    def couple(self) -> str:
        """The grouping key of the released files: the sample's parent folder ("010" for family samples)."""
        parts = self.sample_id.split("/")
        return parts[-2] if len(parts) > 1 else ""

    def row(self, index: int) -> BenchmarkRow:
        return self.session.rows[index - 1]

    def prior_context(self, current_row: int, size: int) -> list[dict[str, Any]]:
        return [self.records[i - 1] for i in context_window(current_row, size)]

    def is_therapist(self, row: BenchmarkRow) -> bool:
        return clean(row.primary_speaker) == self.therapist

    def is_client(self, row: BenchmarkRow) -> bool:
        speaker = clean(row.primary_speaker)
        return bool(speaker) and speaker != self.therapist and speaker not in self.all_group_labels

    def canonical_target(self, values: Iterable[str]) -> tuple[str, ...]:
        """Target names without the therapist and empty strings (released `canonical_target`)."""
        return tuple(name for name in _names(values) if name != self.therapist)

    def target_label(self, target: tuple[str, ...], multi_target: str) -> str:
        """One name stays itself; 2+ names become the group label (released) or a `A+B` subgroup label."""
        if not target:
            return ""
        if len(target) == 1:
            return target[0]
        if multi_target == "group_label" or self.group_label in target:
            return self.group_label
        order = {name: i for i, name in enumerate(self.participants)}
        names = sorted(dict.fromkeys(target), key=lambda n: (order.get(n, len(order)), n))
        return names[0] if len(names) == 1 else "+".join(names)


def first_appearance(session: BenchmarkSession, therapist: str, group_labels: frozenset[str], *,
                     with_strategy_targets: bool = True, with_viewpoints: bool = False,
                     keep_therapist: bool = False) -> list[str]:
    """Entity names in order of first appearance (released `infer_participants` / `extract_participants`)."""
    seen: dict[str, None] = {}

    def add(value: str) -> None:
        name = clean(value)
        if name and name not in group_labels and (keep_therapist or name != therapist):
            seen.setdefault(name)

    for row in session.rows:
        add(row.primary_speaker)
        for name in row.target:
            add(name)
        if with_strategy_targets:
            for item in row.support_strategy:
                for name in item.target:
                    add(name)
        if with_viewpoints:
            for view in row.viewpoints_attitudes:
                add(view.source)
                add(view.target)
    return list(seen)


def session_view(session: BenchmarkSession, schema: AnnotationSchema) -> SessionView:
    therapist = schema.therapist
    group_labels = frozenset(schema.group_labels.values())
    declared = [clean(p) for p in session.participants
                if clean(p) and clean(p) != therapist and clean(p) not in group_labels]
    found = first_appearance(session, therapist, group_labels)
    participants = tuple(dict.fromkeys([*declared, *found]))
    return SessionView(
        session=session,
        therapist=therapist,
        group_label=schema.group_labels[session.scenario],
        participants=participants,
        relation_labels=schema.labels("relation_pattern", session.scenario),
        strategy_labels=schema.labels("support_strategy", session.scenario),
        records=tuple(row_record(row) for row in session.rows),
        all_group_labels=group_labels,
    )
