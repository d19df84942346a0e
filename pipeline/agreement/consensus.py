"""Consensus rules: the annotators' answers to one field of one row -> a gold value, or a reason why not.

Default rule per agreement level (override per measure id in `[tool.rescue.agreement] consensus`):
- nominal (labels, names): `majority`, strictly more than `majority_share` of the answers; ties fail;
- set (names, row numbers): `majority` per member: members named by a majority; an empty result for
  a name list fails (a row must have a target);
- ordinal / interval (intensity): `median` (the lower middle for an even count) when a majority of
  the answers lie within `interval_max_spread` of it;
- text: `medoid`, the answer most similar to the others on average, when a majority of the answers
  (itself included) are at least `text_min_similarity` similar to it (identical texts always agree);
- items: items are matched by their key; an item is kept when a majority has it, and each of its
  sub-fields is settled by its own rule. Any failing part sends the whole field to adjudication.
`unanimous` accepts only identical answers, for any level.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.agreement.ratings import MISSING, item_keys
from pipeline.agreement.settings import AgreementSettings
from pipeline.schema import SchemaField, SubField

Similarity = Callable[[Sequence[str]], list[list[float]]]  # texts -> pairwise similarity matrix


@dataclass(frozen=True)
class Decision:
    ok: bool
    value: object = None
    rule: str = ""
    detail: str = ""
    agreeing: tuple[str, ...] = ()  # annotators whose answer equals the decided value


def default_rule(level: str) -> str:
    return {"nominal": "majority", "set": "majority", "ordinal": "median", "interval": "median",
            "text": "medoid"}.get(level, "majority")


class Consensus:
    def __init__(self, settings: AgreementSettings, similarity: Similarity | None) -> None:
        self.settings = settings
        self.similarity = similarity

    def rule_for(self, measure_id: str, level: str) -> str:
        return self.settings.consensus.get(measure_id, default_rule(level))

    # -- plain values -------------------------------------------------------------------------------
    def decide_value(self, measure_id: str, kind: str, level: str, answers: Sequence[tuple[str, object]]
                     ) -> Decision:
        """answers: (annotator, normalised value) pairs, values already free of MISSING."""
        rule = self.rule_for(measure_id, level)
        if not answers:
            return Decision(False, rule=rule, detail="no answer")
        values = [value for _, value in answers]
        if rule == "unanimous" or len(set(map(_hashable, values))) == 1:
            if len(set(map(_hashable, values))) == 1:
                return Decision(True, values[0], rule, f"all {len(values)} agree", tuple(a for a, _ in answers))
            return Decision(False, rule=rule, detail=f"{len(set(map(_hashable, values)))} different answers")
        if rule == "median":
            numbers = [v for v in values if isinstance(v, (int, float))]
            value = statistics.median_low(numbers)
            spread = self.settings.interval_max_spread
            close = [a for a, v in answers if abs(v - value) <= spread]  # type: ignore[operator]
            if len(close) <= self.settings.majority_share * len(numbers):
                return Decision(False, rule=rule, detail=f"answers {sorted(numbers)}: no majority within "
                                f"{self.settings.interval_max_spread:g} of the median {value}")
            return Decision(True, value, rule, f"median of {sorted(numbers)}", tuple(close))
        if rule == "medoid":
            return self._medoid(rule, answers)
        if kind in {"entities", "row_refs"}:
            return self._member_majority(rule, kind, answers)
        return self._majority(rule, answers)

    def _majority(self, rule: str, answers: Sequence[tuple[str, object]]) -> Decision:
        counts = Counter(_hashable(v) for _, v in answers)
        (best, top), *rest = counts.most_common()
        if rest and rest[0][1] == top:
            return Decision(False, rule=rule, detail=f"tie: {_describe(counts)}")
        if top <= self.settings.majority_share * len(answers):
            return Decision(False, rule=rule, detail=f"no majority: {_describe(counts)}")
        value = next(v for _, v in answers if _hashable(v) == best)
        return Decision(True, value, rule, f"{top} of {len(answers)}: {_describe(counts)}",
                        tuple(a for a, v in answers if _hashable(v) == best))

    def _member_majority(self, rule: str, kind: str, answers: Sequence[tuple[str, object]]) -> Decision:
        votes = Counter(member for _, value in answers for member in value)  # type: ignore[attr-defined]
        chosen = tuple(sorted(m for m, n in votes.items() if n > self.settings.majority_share * len(answers)))
        if kind == "entities" and not chosen:
            return Decision(False, rule=rule, detail=f"no name chosen by a majority: {dict(sorted(votes.items()))}")
        return Decision(True, chosen, rule, f"members named by a majority of {len(answers)}",
                        tuple(a for a, v in answers if tuple(v) == chosen))  # type: ignore[arg-type]

    def _medoid(self, rule: str, answers: Sequence[tuple[str, object]]) -> Decision:
        texts = [str(v) for _, v in answers]
        if self.similarity is None:
            return Decision(False, rule=rule, detail="texts differ and text similarity is switched off")
        matrix = self.similarity(texts)
        n = len(texts)
        if n == 1:
            return Decision(True, texts[0], rule, "one answer", (answers[0][0],))
        means = [sum(matrix[i][j] for j in range(n) if j != i) / (n - 1) for i in range(n)]
        best = max(range(n), key=lambda i: (round(means[i], 9), -i))
        close = [answers[j][0] for j in range(n) if j == best or matrix[best][j] >= self.settings.text_min_similarity]
        if len(close) <= self.settings.majority_share * n:
            return Decision(False, rule=rule, detail=f"texts too different: {len(close)} of {n} at least "
                            f"{self.settings.text_min_similarity:g} similar to the most central one")
        return Decision(True, texts[best], rule, f"medoid of {n}; {len(close)} similar to it", tuple(close))

    # -- item lists ---------------------------------------------------------------------------------
    def decide_items(self, field: SchemaField, answers: Sequence[tuple[str, list[dict[str, object]]]],
                     normalise: Callable[[object, str], object]) -> Decision:
        keyed: dict[str, list[tuple[str, dict[str, object]]]] = {}
        order: dict[str, tuple[int, int]] = {}
        for rank, (annotator, items) in enumerate(answers):
            for position, (key, item) in enumerate(zip(item_keys(items, field.key), items)):
                keyed.setdefault(key, []).append((annotator, item))
                order.setdefault(key, (position, rank))
        needed = self.settings.majority_share * len(answers)
        kept = sorted((k for k, owners in keyed.items() if len(owners) > needed), key=lambda k: order[k])
        dropped = sorted(k for k, owners in keyed.items() if 0 < len(owners) <= needed and
                         len(owners) >= len(answers) - len(owners))
        if dropped:  # as many annotators have the item as lack it: no majority either way
            return Decision(False, rule="majority", detail=f"no majority for item(s) {', '.join(dropped)}")
        result = []
        for key in kept:
            item: dict[str, object] = {}
            for sub in field.items:
                pairs = [(a, normalise(it.get(sub.name), sub.type)) for a, it in keyed[key]]
                pairs = [(a, v) for a, v in pairs if v is not MISSING]
                if not pairs:  # nobody filled this part of the item: leave it empty, as the released data does
                    item[sub.name] = [] if sub.type == "entities" else (None if sub.type == "integer" else "")
                    continue
                decision = self.decide_value(f"{field.name}.{sub.name}", sub.type, _sub_level(sub), pairs)
                if not decision.ok:
                    return Decision(False, rule="items", detail=f"item {key}: {sub.name}: {decision.detail}")
                item[sub.name] = list(decision.value) if isinstance(decision.value, tuple) else decision.value
            result.append(item)
        same = tuple(a for a, items in answers if sorted(item_keys(items, field.key)) == sorted(kept))
        return Decision(True, result, "items", f"{len(result)} item(s) kept by majority of {len(answers)}", same)


def _sub_level(sub: SubField) -> str:
    if sub.agreement != "none":
        return sub.agreement
    return "interval" if sub.type == "integer" else ("set" if sub.type == "entities" else "nominal")


def _hashable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _describe(counts: Counter) -> str:
    return ", ".join(f"{value!r} x{n}" for value, n in counts.most_common())

