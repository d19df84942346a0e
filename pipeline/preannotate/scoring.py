"""Per-field scores of drafts against gold values: what `rescue preannotate --evaluate` reports.

A field is scored in units: a label field by accuracy and macro-F1; a set of names (target, the people of a
list field's items, strategy types, item targets, evidence rows) by mean Jaccard and MASI similarity (the
agreement step's set distances); an integer sub-field (intensity of the first item) by the share within 1
and the mean absolute error; a text (or a list field's texts, joined) by MiniLM cosine similarity. Only rows
whose gold answers the unit count; a unit the draft leaves out counts as an empty answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import JsonValue

from pipeline.agreement.distances import SetDistance
from pipeline.annotate.config import anchor
from pipeline.schema import AnnotationSchema
from pipeline.tasks.metrics import macro_f1

Kind = Literal["label", "set", "integer", "text"]
PRIMARY = {"label": "macro_f1", "set": "jaccard", "integer": "within_1", "text": "similarity"}


@dataclass(frozen=True)
class Unit:
    name: str
    field: str
    kind: Kind
    sub: str | None = None
    labels: str | None = None

    def value(self, values: dict[str, JsonValue]) -> JsonValue | None:
        if self.field not in values:
            return None
        value = values[self.field]
        if self.sub is None:
            return sorted(set(value)) if self.kind == "set" else value  # type: ignore[arg-type]
        items = [i for i in value or [] if isinstance(i, dict)]  # type: ignore[union-attr]
        if self.kind == "set":
            members = {m for i in items for m in (i.get(self.sub) if isinstance(i.get(self.sub), list)
                                                   else [i.get(self.sub)]) if m not in (None, "")}
            return sorted(members)  # type: ignore[type-var]
        if self.kind == "integer":
            return items[0].get(self.sub) if items else None
        return " / ".join(str(i.get(self.sub) or "") for i in items)


def schema_units(schema: AnnotationSchema) -> list[Unit]:
    """Every annotated field a backend may draft, except the transcript's own speaker and dialogue."""
    units: list[Unit] = []
    for f in schema.fields:
        if not f.annotated or (f.prefill and f.type != "entities"):
            continue
        if f.type == "label":
            units.append(Unit(f.name, f.name, "label", labels=f.labels))
        elif f.type in ("entities", "row_refs"):
            units.append(Unit(f.name, f.name, "set"))
        elif f.type == "text":
            units.append(Unit(f.name, f.name, "text"))
        elif f.type == "items":
            key = f.key or anchor(f).name
            units.append(Unit(f.name, f.name, "set", key))
            for sub in f.items:
                if sub.name == key or sub.type == "entity":
                    continue
                kinds: dict[str, Kind] = {"entities": "set", "label": "set", "integer": "integer"}
                kind = kinds.get(sub.type, "text")
                units.append(Unit(f"{f.name}.{sub.name}", f.name, kind, sub.name))
    return units


def _set_similarity(gold: Sequence[list], pred: Sequence[list], kind: str) -> np.ndarray:  # type: ignore[type-arg]
    n = len(gold)
    distance = SetDistance([tuple(map(str, g)) for g in gold] + [tuple(map(str, p)) for p in pred], kind)
    return 1.0 - np.asarray(distance.pairs(np.arange(n), np.arange(n, 2 * n)), dtype=float)


def _text_similarity(gold: Sequence[str], pred: Sequence[str]) -> np.ndarray:
    from pipeline.text_similarity import pairwise_similarity

    sims = pairwise_similarity(list(gold), list(pred))
    both_empty = [not g.strip() and not p.strip() for g, p in zip(gold, pred)]
    return np.array([1.0 if empty else s for s, empty in zip(sims, both_empty)], dtype=float)


def row_scores(unit: Unit, gold: Sequence[JsonValue], pred: Sequence[JsonValue | None]) -> np.ndarray:
    """Per row, the unit's primary measure where it is a mean over rows (set: Jaccard; integer: within 1, a
    missing draft counts as a miss; text: similarity, two empty texts = 1). Label units are scored as a whole
    (macro-F1): see `label_counts`."""
    if not gold:
        return np.zeros(0)
    if unit.kind == "set":
        return _set_similarity([list(g or []) for g in gold], [list(p or []) for p in pred],  # type: ignore[arg-type]
                               "jaccard")
    if unit.kind == "integer":
        return np.array([0.0 if p is None else float(abs(int(g) - int(p)) <= 1)  # type: ignore[arg-type]
                         for g, p in zip(gold, pred)])
    if unit.kind == "text":
        return _text_similarity([str(g) for g in gold], [str(p or "") for p in pred])
    raise ValueError(f"{unit.name}: a label unit has no per-row score (macro-F1 is over rows)")


def score_unit(unit: Unit, gold: Sequence[JsonValue], pred: Sequence[JsonValue | None],
               label_order: Sequence[str] = ()) -> dict[str, float]:
    """The unit's measures for paired gold and drafted values (pred None: not drafted)."""
    if not gold:
        return {}
    if unit.kind == "label":
        golds, preds = [str(g) for g in gold], [None if p is None else str(p) for p in pred]
        order = list(dict.fromkeys([*label_order, *golds, *(p for p in preds if p is not None)]))
        return {"accuracy": round(float(np.mean([g == p for g, p in zip(golds, preds)])), 4),
                "macro_f1": round(float(macro_f1(golds, preds, order)["macro_f1"]), 4)}
    primary = float(np.mean(row_scores(unit, gold, pred)))
    if unit.kind == "set":
        golds, preds = [list(g or []) for g in gold], [list(p or []) for p in pred]  # type: ignore[arg-type]
        return {"jaccard": round(primary, 4), "masi": round(float(np.mean(_set_similarity(golds, preds, "masi"))), 4)}
    if unit.kind == "integer":
        pairs = [(int(g), int(p)) for g, p in zip(gold, pred) if p is not None]  # type: ignore[arg-type]
        mae = float(np.mean([abs(g - p) for g, p in pairs])) if pairs else float("nan")
        return {"within_1": round(primary, 4), "mae": round(mae, 4)}
    return {"similarity": round(primary, 4)}
