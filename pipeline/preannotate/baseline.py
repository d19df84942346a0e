"""The majority baseline: per scenario and kind of speaker (therapist or client row), the value most frequent in
the training gold, in roles (roles.py), so "the partner" means this session's partner.

Two grains: per scored unit (what `--evaluate` puts next to a backend: a list field's item keys, texts and
intensity each on their own) and per schema field (what the gold-model drafts where its gate chooses the
baseline: the field's most frequent value; for a list field, its most frequent set of item keys, each key with
the item most frequent for it, so every drafted item is one a gold row holds). Ties go to the value seen first,
so the baseline is deterministic. A scenario without training rows of that kind takes the majority over all
scenarios (`majority_for`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from pipeline.annotate.config import anchor
from pipeline.benchmark_format import BenchmarkSession
from pipeline.preannotate.gold_rows import gold_values, session_entities
from pipeline.preannotate.roles import ROLE, RoleMap, decode_roles, encode_roles, role_maps
from pipeline.preannotate.scoring import Unit
from pipeline.schema import AnnotationSchema
from pipeline.tasks.context import clean

Key = tuple[str, str, bool]  # (unit or field, scenario or ANY, therapist row)
ANY = "*"  # all scenarios together


def session_roles(schema: AnnotationSchema, session: BenchmarkSession) -> list[RoleMap]:
    speakers = [clean(r.primary_speaker) for r in session.rows]
    return role_maps(speakers, [clean(p) for p in session.participants], schema.therapist,
                     schema.group_labels[session.scenario])


def coded_rows(schema: AnnotationSchema, sessions: Sequence[BenchmarkSession]
               ) -> list[tuple[str, bool, dict[str, JsonValue]]]:
    """(scenario, therapist row, role-encoded gold values) of every training row."""
    out = []
    for session in sessions:
        entities = session_entities(session, schema)
        for row, roles in zip(session.rows, session_roles(schema, session)):
            coded = encode_roles(schema, gold_values(schema, row, entities), roles)
            out.append((session.scenario, clean(row.primary_speaker) == schema.therapist, coded))
    return out


@dataclass(frozen=True)
class Majority:
    value: JsonValue  # role-encoded
    share: float  # of the training rows of this kind that answer it


def _majorities(found: dict[Key, Counter[str]]) -> dict[Key, Majority]:
    out = {}
    for key, counts in found.items():
        best, n = counts.most_common(1)[0]
        out[key] = Majority(json.loads(best), round(n / sum(counts.values()), 4))
    return out


def majority_for(majorities: dict[Key, Majority], name: str, scenario: str, therapist: bool) -> Majority | None:
    """The majority for this scenario and kind of speaker; over all scenarios when this one has no such rows."""
    return majorities.get((name, scenario, therapist)) or majorities.get((name, ANY, therapist))


def unit_majorities(schema: AnnotationSchema, units: Sequence[Unit], sessions: Sequence[BenchmarkSession]
                    ) -> dict[Key, Majority]:
    """(unit, scenario, therapist row) -> the most frequent role-encoded unit value in the training gold."""
    counts: dict[Key, Counter[str]] = {}
    for scenario, therapist, coded in coded_rows(schema, sessions):
        for unit in units:
            value = unit.value(coded)
            if value is not None:
                for where in (scenario, ANY):
                    counts.setdefault((unit.name, where, therapist), Counter())[json.dumps(value)] += 1
    return _majorities(counts)


def field_majorities(schema: AnnotationSchema, fields: Sequence[str], sessions: Sequence[BenchmarkSession]
                     ) -> dict[Key, Majority]:
    """(field, scenario, therapist row) -> the field's most frequent role-encoded value. A list field's is built
    from its most frequent set of item keys (persons, strategy types, ...), each key with the item most
    frequent for it: whole lists of items with free texts almost never repeat, so their plain majority would be
    the first row seen."""
    counts: dict[Key, Counter[str]] = {}
    items: dict[Key, dict[str, Counter[str]]] = {}
    for scenario, therapist, coded in coded_rows(schema, sessions):
        for name in fields:
            if name not in coded:
                continue
            field = schema.field(name)
            key_name = (field.key or anchor(field).name) if field.type == "items" else None
            for where in (scenario, ANY):
                key = (name, where, therapist)
                if key_name is None:
                    counts.setdefault(key, Counter())[json.dumps(coded[name], sort_keys=True)] += 1
                    continue
                given = [i for i in coded[name] or [] if isinstance(i, dict)]  # type: ignore[union-attr]
                counts.setdefault(key, Counter())[json.dumps(sorted({str(i.get(key_name)) for i in given}))] += 1
                for item in given:
                    items.setdefault(key, {}).setdefault(str(item.get(key_name)), Counter())[
                        json.dumps(item, sort_keys=True)] += 1
    found = _majorities(counts)
    for key, majority in found.items():
        if schema.field(key[0]).type == "items":
            per_key = items.get(key, {})
            keys = [k for k in majority.value or [] if k in per_key]  # type: ignore[union-attr]
            found[key] = Majority([json.loads(per_key[k].most_common(1)[0][0]) for k in keys], majority.share)
    return found


def unit_in_names(unit: Unit, coded: JsonValue, roles: RoleMap) -> JsonValue:
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


def field_in_names(schema: AnnotationSchema, name: str, coded: JsonValue, roles: RoleMap, speaker: str
                   ) -> JsonValue | None:
    """A role-encoded field value in this row's names: roles nobody holds here are left out (an item whose
    person is such a role goes), and so is the speaker among the targets. None when nothing is left."""
    value = decode_roles(schema, {name: coded}, roles)[name]
    field = schema.field(name)
    if field.type == "entities":
        value = [n for n in value or [] if n != speaker]  # type: ignore[union-attr]
    elif field.type == "items":
        singles = [sub.name for sub in field.items if sub.type == "entity"]
        value = [item for item in value or [] if all(item.get(s) for s in singles)]  # type: ignore[union-attr]
    if value in (None, "", []):
        return None
    return value


__all__ = ["ANY", "Majority", "coded_rows", "field_in_names", "field_majorities", "majority_for", "session_roles",
           "unit_in_names", "unit_majorities"]
