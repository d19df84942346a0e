"""`rescue preannotate --evaluate`: a backend's drafts for a held-out gold file, scored per field next to a
majority baseline, before any annotator sees them.

The test sessions are given to the backend as the transcript would give them (speaker, times, text: see
session.py). The baseline answers every row with the value most frequent in the training gold among rows
of the same kind (the field's rows of that scenario), in roles (roles.py), so "the partner" means this
session's partner; for a text field it is the most frequent text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from pipeline.benchmark_format import BenchmarkSession
from pipeline.preannotate.backends import make_backend
from pipeline.preannotate.gold_rows import gold_values, read_training_gold, session_entities
from pipeline.preannotate.roles import ROLE, RoleMap, encode_roles, role_maps
from pipeline.preannotate.scoring import PRIMARY, Unit, schema_units, score_unit
from pipeline.preannotate.session import session_from_gold
from pipeline.preannotate.settings import PreannotateSettings
from pipeline.project import Project
from pipeline.records import Scenario
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean
from pipeline.tasks.gold_input import read_gold_file


@dataclass
class Evaluation:
    backend: str
    model: str
    schema_id: str
    train: list[str]
    test: str
    rows: int
    quarantined: int
    units: dict[str, dict] = field(default_factory=dict)  # type: ignore[type-arg]

    def as_json(self) -> dict:  # type: ignore[type-arg]
        return {"backend": self.backend, "model": self.model, "schema": self.schema_id, "train_gold": self.train,
                "test_gold": self.test, "rows": self.rows, "quarantined": self.quarantined, "units": self.units}


def _roles(schema: AnnotationSchema, session: BenchmarkSession) -> list[RoleMap]:
    speakers = [clean(r.primary_speaker) for r in session.rows]
    return role_maps(speakers, [clean(p) for p in session.participants], schema.therapist,
                     schema.group_labels[session.scenario])


def _majorities(schema: AnnotationSchema, units: Sequence[Unit], sessions: Sequence[BenchmarkSession]
                ) -> dict[tuple[str, str, bool], JsonValue]:
    """(unit, scenario, therapist row) -> the most frequent role-encoded value in the training gold."""
    counts: dict[tuple[str, str, bool], Counter[str]] = {}
    examples: dict[str, JsonValue] = {}
    for session in sessions:
        entities = session_entities(session, schema)
        for row, roles in zip(session.rows, _roles(schema, session)):
            coded = encode_roles(schema, gold_values(schema, row, entities), roles)
            kind = clean(row.primary_speaker) == schema.therapist
            for unit in units:
                value = unit.value(coded)
                if value is None:
                    continue
                key = repr(value)
                examples[key] = value
                counts.setdefault((unit.name, session.scenario, kind), Counter())[key] += 1
    return {k: examples[c.most_common(1)[0][0]] for k, c in counts.items()}


def _baseline_value(unit: Unit, coded: JsonValue, roles: RoleMap) -> JsonValue:
    """A role-encoded unit value in this row's names (labels and row numbers stay; a role nobody holds here
    is left out)."""
    if unit.kind != "set" or not isinstance(coded, list):
        return coded
    out = []
    for value in coded:
        if isinstance(value, str) and ROLE.match(value):
            name = roles.name(value)
            if name is not None:
                out.append(name)
        else:
            out.append(value)
    return out


def evaluate_backend(project: Project, settings: PreannotateSettings, schema: AnnotationSchema,
                     test_file: Path) -> Evaluation:
    backend = make_backend(project, settings, schema)
    tests, _ = read_gold_file(test_file, schema)
    train_files = [Path(p) if Path(p).is_absolute() else project.root / p for p in settings.train_gold]
    training, _ = read_training_gold(train_files, schema) if train_files else ([], {})
    units = schema_units(schema)
    majority = _majorities(schema, units, training)
    gold: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    drafted: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    base: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    rows = quarantined = 0
    model = ""
    for test in tests:
        session = session_from_gold(test, schema)
        drafts = backend.draft(session)
        model = drafts.model
        quarantined += len(drafts.quarantined)
        entities = session_entities(test, schema)
        for row, draft, roles in zip(test.rows, drafts.rows, _roles(schema, test)):
            rows += 1
            truth = gold_values(schema, row, entities)
            kind = clean(row.primary_speaker) == schema.therapist
            for unit in units:
                value = unit.value(truth)
                if value is None:
                    continue
                gold[unit.name].append(value)
                drafted[unit.name].append(unit.value(dict(draft.values)))
                coded = majority.get((unit.name, test.scenario, kind))
                base[unit.name].append(None if coded is None else _baseline_value(unit, coded, roles))
    result = Evaluation(settings.backend, model, schema.id, [str(p) for p in train_files], str(test_file), rows,
                        quarantined)
    for unit in units:
        if not gold[unit.name]:
            continue
        scenarios: tuple[Scenario, ...] = ("couple", "family")
        order = tuple(dict.fromkeys(label for scenario in scenarios
                                    for label in schema.labels(unit.labels, scenario))) if unit.labels else ()
        scores = score_unit(unit, gold[unit.name], drafted[unit.name], order)
        baseline = score_unit(unit, gold[unit.name], base[unit.name], order)
        primary = PRIMARY[unit.kind]
        result.units[unit.name] = {"kind": unit.kind, "rows": len(gold[unit.name]), "primary": primary,
                                   "backend": scores, "baseline": baseline,
                                   "beats_baseline": scores[primary] > baseline[primary]}
    return result
