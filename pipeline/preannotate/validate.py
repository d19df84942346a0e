"""Drafts go through the validator pulled annotations go through (`pipeline.annotate.results.decode`): a draft
is encoded as Label Studio would store it, decoded back with the session's facts, and must come back
unchanged. Fields a backend leaves out are not required of a draft (annotators fill them in)."""

from __future__ import annotations

from pydantic import JsonValue

from pipeline.annotate.results import TaskFacts, decode, encode
from pipeline.preannotate.session import DraftSession


def draft_problems(session: DraftSession, values: dict[str, JsonValue]) -> list[str]:
    """Why these draft values are not a valid annotation of a row of `session` (empty: valid)."""
    schema = session.schema
    facts = TaskFacts(scenario=session.scenario, entities=session.entities, row_count=len(session.rows))
    decoded = decode(schema, encode(schema, values, session.entities), facts)
    problems = [f"{field or 'annotation'}: {why}" for field, why in decoded.problems
                if not (field and field not in values and why.startswith("missing required field"))]
    for name, value in values.items():
        if name in decoded.values and decoded.values[name] != value:
            problems.append(f"{name}: {value!r} reads back as {decoded.values[name]!r}")
        elif name not in decoded.values and not any(p.startswith(f"{name}:") for p in problems):
            problems.append(f"{name}: not stored (the field does not apply to this row, or is empty)")
    return problems
