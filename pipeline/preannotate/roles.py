"""Session-specific names <-> roles that carry over between sessions, so a model learnt on one couple drafts
for another.

A name's role depends on the row: `Therapist`, `Group` (the group label), `Self` (the row's speaker when a
participant) and `P1`, `P2`, ... for the other participants ranked by how recently they spoke before the row
(P1 = the last other participant to speak; those who have not spoken yet follow in catalog order). In a
couple, P1 is the partner; on a therapist row, P1 is the client who spoke last.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from pipeline.schema import AnnotationSchema, SchemaField

THERAPIST_ROLE, GROUP_ROLE, SELF_ROLE = "Therapist", "Group", "Self"
ROLE = re.compile(r"^(Therapist|Group|Self|P[0-9]+)$")


@dataclass(frozen=True)
class RoleMap:
    to_role: dict[str, str]
    to_name: dict[str, str]

    def role(self, name: str) -> str | None:
        return self.to_role.get(name)

    def name(self, role: str) -> str | None:
        return self.to_name.get(role)

    def roles(self, names: Sequence[str]) -> list[str]:
        return sorted({r for r in (self.role(n) for n in names) if r})

    def names(self, roles: Sequence[str], entities: Sequence[str]) -> list[str]:
        chosen = {n for n in (self.name(r) for r in roles) if n}
        return [e for e in entities if e in chosen]

    def swap_in_text(self, text: str, other: RoleMap) -> str:
        """`text` written about `other`'s people, with each participant name replaced by the name holding the
        same role here (names without a counterpart stay)."""
        swaps = {name: self.name(role) for name, role in other.to_role.items()
                 if role.startswith("P") or role == SELF_ROLE}
        swaps = {old: new for old, new in swaps.items() if new and new != old}
        if not swaps:
            return text
        pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(swaps, key=len, reverse=True)) + r")\b")
        return pattern.sub(lambda m: swaps[m.group(1)], text)


def role_maps(speakers: Sequence[str], participants: Sequence[str], therapist: str, group: str) -> list[RoleMap]:
    """One RoleMap per row of a session whose rows are spoken by `speakers`, in order."""
    maps: list[RoleMap] = []
    last_spoke: dict[str, int] = {}
    for index, speaker in enumerate(speakers):
        others = [p for p in participants if p != speaker]
        ranked = sorted(others, key=lambda p: (-last_spoke.get(p, -1), participants.index(p)))
        to_role = {therapist: THERAPIST_ROLE, group: GROUP_ROLE}
        if speaker in participants:
            to_role[speaker] = SELF_ROLE
        to_role.update({name: f"P{rank}" for rank, name in enumerate(ranked, start=1)})
        maps.append(RoleMap(to_role, {role: name for name, role in to_role.items()}))
        last_spoke[speaker] = index
    return maps


def _convert(value: JsonValue, kind: str, convert_one: Callable[[JsonValue], str | None]) -> JsonValue:
    if kind == "entity":
        return convert_one(value)
    return [v for v in (convert_one(x) for x in value or []) if v]  # type: ignore[union-attr]


def encode_roles(schema: AnnotationSchema, values: dict[str, JsonValue], roles: RoleMap) -> dict[str, JsonValue]:
    """Field values with every name replaced by its role (names outside the session become None / are left out)."""
    return _map_values(schema, values, lambda name: roles.role(str(name)) if name else None)


def decode_roles(schema: AnnotationSchema, values: dict[str, JsonValue], roles: RoleMap) -> dict[str, JsonValue]:
    return _map_values(schema, values, lambda role: roles.name(str(role)) if role else None)


def _map_values(schema: AnnotationSchema, values: dict[str, JsonValue],
                one: Callable[[JsonValue], str | None]) -> dict[str, JsonValue]:
    out: dict[str, JsonValue] = {}
    for name, value in values.items():
        field: SchemaField = schema.field(name)
        if field.type in ("entity", "entities"):
            out[name] = _convert(value, field.type, one)
        elif field.type == "items":
            items = []
            for item in value or []:  # type: ignore[union-attr]
                converted = dict(item)  # type: ignore[arg-type]
                for sub in field.items:
                    if sub.type in ("entity", "entities") and sub.name in converted:
                        converted[sub.name] = _convert(converted[sub.name], sub.type, one)
                items.append(converted)
            out[name] = items
        else:
            out[name] = value
    return out
