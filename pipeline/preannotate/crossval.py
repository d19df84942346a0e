"""The gold-model's gain per field, measured on its own training gold by cross-validation grouped by session.

The sessions are dealt into `folds` folds (seeded shuffle, then round robin; as many folds as sessions when
there are fewer); each fold's sessions are drafted, as the transcript gives them, by a model trained on the
other folds, next to the other folds' majority baseline and no draft. gate.py turns the held-out answers into
each field's source. Fewer than 2 sessions cannot be cross-validated: every field is then left undrafted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import JsonValue

from pipeline.agreement.textsim import EmbeddingCache
from pipeline.benchmark_format import BenchmarkSession
from pipeline.preannotate.baseline import field_in_names, field_majorities, majority_for, session_roles
from pipeline.preannotate.drafts import FieldGate
from pipeline.preannotate.gate import UnitAnswers, decide, field_units, untestable
from pipeline.preannotate.gold_features import EmbedStats, embed_texts
from pipeline.preannotate.gold_model_fit import predict_rows, train
from pipeline.preannotate.gold_rows import gold_values, session_entities
from pipeline.preannotate.scoring import Unit, schema_units
from pipeline.preannotate.session import session_from_gold
from pipeline.preannotate.settings import GateSettings, GoldModelSettings
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean


def fold_of(n_sessions: int, folds: int, seed: int) -> list[int]:
    """The fold of each session: a seeded shuffle dealt round robin into min(folds, n_sessions) folds."""
    k = min(folds, n_sessions)
    order = np.random.default_rng(seed).permutation(n_sessions)
    assigned = [0] * n_sessions
    for position, session in enumerate(order):
        assigned[int(session)] = position % k
    return assigned


def baseline_values(schema: AnnotationSchema, fields: Sequence[str], majorities: dict, scenario: str,
                    speaker: str, roles) -> dict[str, JsonValue]:  # type: ignore[no-untyped-def, type-arg]
    """The baseline's draft of one row: each field's majority for its scenario and kind of speaker, in names."""
    therapist = speaker == schema.therapist
    out: dict[str, JsonValue] = {}
    for name in fields:
        found = majority_for(majorities, name, scenario, therapist)
        if found is None or not schema.field(name).applies(speaker, schema.therapist):
            continue
        value = field_in_names(schema, name, found.value, roles, speaker)
        if value is not None:
            out[name] = value
    return out


def _held_out(schema: AnnotationSchema, settings: GoldModelSettings, training: Sequence[BenchmarkSession],
              tests: Sequence[tuple[int, BenchmarkSession]], units: Sequence[Unit], found: dict[str, UnitAnswers],
              cache: Path | None, stats: EmbedStats | None, embeddings: EmbeddingCache) -> None:
    fields = list(dict.fromkeys(u.field for u in units))
    model = train(training, {}, schema, settings, cache, stats)
    majorities = field_majorities(schema, fields, training)
    for index, gold in tests:
        session = session_from_gold(gold, schema)
        vectors = embed_texts([row.text for row in session.rows], cache, stats, embeddings)
        drafted = predict_rows(model, session, settings, vectors)
        entities = session_entities(gold, schema)
        for row, (values, _), roles in zip(gold.rows, drafted, session_roles(schema, gold)):
            truth = gold_values(schema, row, entities)
            speaker = clean(row.primary_speaker)
            base = baseline_values(schema, fields, majorities, gold.scenario, speaker, roles)
            for unit in units:
                value = unit.value(truth)
                if value is not None:
                    found.setdefault(unit.name, UnitAnswers()).add(index, value, {
                        "model": unit.value(values), "baseline": unit.value(base), "nothing": None})


def gate_fields(sessions: Sequence[BenchmarkSession], schema: AnnotationSchema, settings: GoldModelSettings,
                gate: GateSettings, cache: Path | None, stats: EmbedStats | None = None) -> tuple[FieldGate, ...]:
    """Every drafted field's gate (gate.py), from a cross-validation of the model on `sessions`."""
    units = schema_units(schema)
    by_field = field_units(units)
    usable = [s for s in sessions if s.rows]
    if len(usable) < 2:
        return untestable(list(by_field), by_field, f"{len(usable)} training session(s): a gain cannot be "
                          "cross-validated by session (it needs 2 or more)")
    folds = fold_of(len(usable), gate.folds, gate.seed)
    found: dict[str, UnitAnswers] = {}
    embeddings = EmbeddingCache(cache)
    for fold in sorted(set(folds)):
        training = [s for s, f in zip(usable, folds) if f != fold]
        tests = [(i, s) for i, (s, f) in enumerate(zip(usable, folds)) if f == fold]
        _held_out(schema, settings, training, tests, units, found, cache, stats, embeddings)
    return tuple(decide(name, field_list, found, len(usable), gate) for name, field_list in by_field.items())


__all__ = ["baseline_values", "fold_of", "gate_fields"]
