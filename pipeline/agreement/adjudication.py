"""Settling every field of every annotated row: adjudicator's answer, consensus, or the adjudication queue.

Order of precedence for one (row, field): an adjudicator's answer (the newest, if several) always
wins; a field that does not apply to the row's settled speaker is left empty; otherwise the consensus
rule of the field decides (consensus.py), and what it cannot settle - disagreement, too few answers,
no answer to a required field - goes to the queue with every annotator's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from pipeline.agreement.consensus import Consensus, Decision
from pipeline.agreement.inputs import Answer
from pipeline.agreement.ratings import MISSING, Missing, _items, _scalar
from pipeline.agreement.settings import AgreementSettings
from pipeline.records import Record
from pipeline.schema import AnnotationSchema, SchemaField

Status = Literal["adjudicated", "consensus", "single_annotator", "default_empty", "not_applicable", "pending"]
SETTLED = frozenset({"adjudicated", "consensus", "single_annotator", "default_empty", "not_applicable"})


class Answered(Record):
    """One annotator's answer as the queue shows it."""

    annotator: str
    value: JsonValue


@dataclass(frozen=True, slots=True)
class FieldOutcome:
    """How one field of one row was settled (or why it is not yet). Internal: a dataclass, because a
    full-size run makes hundreds of thousands of them; the written records are QueueItem and FieldProvenance."""

    session_id: str
    scenario: str
    row_id: str
    row_index: int
    field: str
    status: Status
    value: JsonValue = None
    rule: str = ""
    detail: str = ""
    annotators: tuple[str, ...] = ()  # who answered (adjudicators not included)
    agreeing: tuple[str, ...] = ()  # annotators whose answer equals the gold value
    adjudicator: str = ""
    answers: tuple[tuple[str, JsonValue], ...] = ()  # (annotator, raw value)


def _json(value: object) -> JsonValue:
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value  # type: ignore[return-value]


def _empty(field: SchemaField) -> JsonValue:
    return [] if field.type in {"items", "entities", "row_refs"} else ""


class Resolver:
    def __init__(self, schema: AnnotationSchema, settings: AgreementSettings, consensus: Consensus) -> None:
        self.schema = schema
        self.settings = settings
        self.consensus = consensus
        self.adjudicators = frozenset(settings.adjudicators)
        self.fields = [f for f in schema.fields if f.annotated]

    def _normalise(self, field: SchemaField, answer: Answer) -> object:
        if field.type == "items":
            items = _items(answer.value, answer)
            if isinstance(items, Missing):
                return MISSING
            return [{sub.name: item.get(sub.name) for sub in field.items} for item in items]
        return _scalar(answer.value, field.type, answer, field.allow_empty)

    def _normalise_whole(self, field: SchemaField, answer: Answer) -> object:
        """An answer normalised down to its item details, as the consensus rules return values."""
        value = self._normalise(field, answer)
        if field.type != "items" or value is MISSING:
            return value
        items = []
        for item in value:  # type: ignore[attr-defined]
            clean: dict[str, object] = {}
            for sub in field.items:
                part = _scalar(item.get(sub.name), sub.type, answer)
                clean[sub.name] = ([] if sub.type == "entities" else None if sub.type == "integer" else "") \
                    if part is MISSING else part
            items.append(clean)
        return items

    def _decide(self, field: SchemaField, answers: Sequence[tuple[str, object]], by_answer: dict[str, Answer]
                ) -> Decision:
        if field.type != "items":
            return self.consensus.decide_value(field.name, field.type, field.agreement, answers)

        def normalise(value: object, kind: str) -> object:
            return _scalar(value, kind, next(iter(by_answer.values())))

        return self.consensus.decide_items(field, answers, normalise)  # type: ignore[arg-type]

    def resolve_row(self, answers: Sequence[Answer]) -> dict[str, FieldOutcome]:
        """All answers of one row (any field, any annotator) -> an outcome per annotated field."""
        first = answers[0]
        per_field: dict[str, list[Answer]] = {}
        for answer in answers:
            per_field.setdefault(answer.field, []).append(answer)
        outcomes: dict[str, FieldOutcome] = {}
        speaker_field = self.schema.speaker_field
        guesses = {a.value for a in per_field.get(speaker_field, []) if isinstance(a.value, str) and a.value}
        speaker: str | None = None
        for field in sorted(self.fields, key=lambda f: f.name != speaker_field):
            outcome = self._resolve_field(field, per_field.get(field.name, []), first, speaker, guesses)
            outcomes[field.name] = outcome
            if field.name == speaker_field and outcome.status in SETTLED:
                speaker = outcome.value  # type: ignore[assignment]
        return {field.name: outcomes[field.name] for field in self.fields}

    def _resolve_field(self, field: SchemaField, answers: list[Answer], row: Answer, speaker: str | None,
                       guesses: set[str]) -> FieldOutcome:
        base = {"session_id": row.session_id, "scenario": row.scenario, "row_id": row.row_id,
                "row_index": row.row_index, "field": field.name}
        if self.adjudicators:
            adjudicated = sorted((a for a in answers if a.annotator in self.adjudicators),
                                 key=lambda a: (a.updated_at, a.annotation_id))
            mine = [a for a in answers if a.annotator not in self.adjudicators]
        else:
            adjudicated, mine = [], answers
        shown = tuple((a.annotator, a.value) for a in mine)
        who = tuple(a.annotator for a in mine)
        if adjudicated:
            last = adjudicated[-1]
            value = self._normalise(field, last)
            return FieldOutcome(**base, status="adjudicated", value=_empty(field) if value is MISSING else _json(value),
                                rule="adjudicator", detail=f"{len(mine)} annotator answer(s) overruled or confirmed",
                                annotators=who, adjudicator=last.annotator, answers=shown)
        if speaker is not None and not field.applies(speaker, self.schema.therapist):
            return FieldOutcome(**base, status="not_applicable", value=_empty(field), rule="applies_to",
                                detail=f"{field.applies_to} rows only; the row's speaker is {speaker}",
                                annotators=who, answers=shown)
        if len(mine) >= max(2, self.settings.min_annotators) and all(a.value == mine[0].value for a in mine[1:]):
            # Identical answers (the common case) settle without running the rule.
            value = self._normalise_whole(field, mine[0])
            if value is not MISSING:
                rule = "items" if field.type == "items" else self.consensus.rule_for(field.name, field.agreement)
                return FieldOutcome(**base, status="consensus", value=_json(value), rule=rule,
                                    detail=f"all {len(mine)} agree", annotators=who, agreeing=who, answers=shown)
        values = [(a.annotator, self._normalise(field, a)) for a in mine]
        values = [(name, v) for name, v in values if v is not MISSING]
        if not values and speaker is None and guesses and \
                not any(field.applies(guess, self.schema.therapist) for guess in guesses):
            # The speaker is still open, but no speaker the annotators named would make this field apply.
            return FieldOutcome(**base, status="not_applicable", value=_empty(field), rule="applies_to",
                                detail=f"{field.applies_to} rows only; speakers named: {', '.join(sorted(guesses))}",
                                annotators=who, answers=shown)
        if not values:
            if field.required:
                return FieldOutcome(**base, status="pending", rule="required", detail="no answer",
                                    annotators=who, answers=shown)
            return FieldOutcome(**base, status="default_empty", value=_empty(field), rule="optional",
                                detail="no annotator filled it", annotators=who, answers=shown)
        if len(values) < self.settings.min_annotators:
            return FieldOutcome(**base, status="pending", rule=f"min_annotators={self.settings.min_annotators}",
                                detail=f"only {len(values)} answer(s)", annotators=who, answers=shown)
        decision = self._decide(field, values, {a.annotator: a for a in mine})
        if not decision.ok:
            return FieldOutcome(**base, status="pending", rule=decision.rule, detail=decision.detail, annotators=who,
                                answers=shown)
        status: Status = "single_annotator" if len(values) == 1 else "consensus"
        return FieldOutcome(**base, status=status, value=_json(decision.value), rule=decision.rule,
                            detail=decision.detail, annotators=who, agreeing=decision.agreeing, answers=shown)


def resolve(answers: Sequence[Answer], resolver: Resolver) -> dict[str, dict[str, FieldOutcome]]:
    """row_id -> field -> outcome, for every row that has answers (answers sorted by session, row)."""
    rows: dict[str, list[Answer]] = {}
    for answer in answers:
        rows.setdefault(answer.row_id, []).append(answer)
    return {row_id: resolver.resolve_row(row_answers) for row_id, row_answers in rows.items()}
