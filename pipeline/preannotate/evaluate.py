"""`rescue preannotate --evaluate`: a backend's drafts for a held-out gold file, scored per field next to a
majority baseline, before any annotator sees them.

The test sessions are given to the backend as the transcript would give them (speaker, times, text: see
session.py). The baseline answers every row with the value most frequent in the training gold among rows
of the same kind (the field's rows of that scenario), in roles (baseline.py), so "the partner" means this
session's partner; for a text field it is the most frequent text. Each unit's margin (backend - baseline on
its primary measure) comes with a bootstrap interval over the test sessions (margins.py); a unit is
"better" only when that interval lies above 0 and rests on at least `min_sessions` sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from pipeline.preannotate.backends import make_backend
from pipeline.preannotate.baseline import majority_for, session_roles, unit_in_names, unit_majorities
from pipeline.preannotate.gate import unit_tally
from pipeline.preannotate.gold_rows import gold_values, read_training_gold, session_entities
from pipeline.preannotate.margins import margin
from pipeline.preannotate.scoring import PRIMARY, schema_units, score_unit
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
    sessions: int = 0
    rule: str = ""
    units: dict[str, dict] = field(default_factory=dict)  # type: ignore[type-arg]
    gates: list[dict] = field(default_factory=list)  # type: ignore[type-arg]

    def as_json(self) -> dict:  # type: ignore[type-arg]
        return {"backend": self.backend, "model": self.model, "schema": self.schema_id, "train_gold": self.train,
                "test_gold": self.test, "rows": self.rows, "sessions": self.sessions, "quarantined": self.quarantined,
                "better_rule": self.rule, "units": self.units, "gates": self.gates}


def evaluate_backend(project: Project, settings: PreannotateSettings, schema: AnnotationSchema,
                     test_file: Path) -> Evaluation:
    backend = make_backend(project, settings, schema)
    tests, _ = read_gold_file(test_file, schema)
    train_files = [Path(p) if Path(p).is_absolute() else project.root / p for p in settings.train_gold]
    training, _ = read_training_gold(train_files, schema) if train_files else ([], {})
    units = schema_units(schema)
    majority = unit_majorities(schema, units, training)
    gold: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    drafted: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    base: dict[str, list[JsonValue]] = {u.name: [] for u in units}
    sessions: dict[str, list[int]] = {u.name: [] for u in units}
    rows = quarantined = 0
    model, gates = "", ()
    for index, test in enumerate(tests):
        session = session_from_gold(test, schema)
        drafts = backend.draft(session)
        model, gates = drafts.model, drafts.gates
        quarantined += len(drafts.quarantined)
        entities = session_entities(test, schema)
        for row, draft, roles in zip(test.rows, drafts.rows, session_roles(schema, test)):
            rows += 1
            truth = gold_values(schema, row, entities)
            kind = clean(row.primary_speaker) == schema.therapist
            for unit in units:
                value = unit.value(truth)
                if value is None:
                    continue
                gold[unit.name].append(value)
                sessions[unit.name].append(index)
                drafted[unit.name].append(unit.value(dict(draft.values)))
                coded = majority_for(majority, unit.name, test.scenario, kind)
                base[unit.name].append(None if coded is None else unit_in_names(unit, coded.value, roles))
    gate = settings.gate
    rule = (f"better = the {gate.confidence:.0%} bootstrap interval of the margin (over test sessions, "
            f"{gate.bootstrap_samples} resamples) lies above 0, on {gate.min_sessions}+ sessions")
    result = Evaluation(settings.backend, model, schema.id, [str(p) for p in train_files], str(test_file), rows,
                        quarantined, len(tests), rule, gates=[g.model_dump(mode="json") for g in gates])
    for unit in units:
        if not gold[unit.name]:
            continue
        scenarios: tuple[Scenario, ...] = ("couple", "family")
        order = tuple(dict.fromkeys(label for scenario in scenarios
                                    for label in schema.labels(unit.labels, scenario))) if unit.labels else ()
        scores = score_unit(unit, gold[unit.name], drafted[unit.name], order)
        baseline = score_unit(unit, gold[unit.name], base[unit.name], order)
        gap = margin([unit_tally(unit, gold[unit.name], drafted[unit.name], sessions[unit.name], len(tests))],
                     [unit_tally(unit, gold[unit.name], base[unit.name], sessions[unit.name], len(tests))],
                     len(gold[unit.name]), samples=gate.bootstrap_samples, seed=gate.seed, level=gate.confidence)
        result.units[unit.name] = {"kind": unit.kind, "rows": len(gold[unit.name]), "primary": PRIMARY[unit.kind],
                                   "backend": scores, "baseline": baseline, "margin": gap.model_dump(mode="json"),
                                   "beats_baseline": gap.significant(gate.min_sessions)}
    return result
