"""Who waits for what: per session, the first step that is not done, why, and every step it holds back.

A session holds back only what depends on it: its own later steps, and its part of the corpus steps
(which run for the sessions that have rows and list the others as pending)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import Field

from pipeline.engine.steps import SESSION_STEPS, STEPS, Step
from pipeline.records import CatalogEntry, Record
from pipeline.engine.context import StepContext
from pipeline.engine.runner import session_status
from pipeline.engine.session_steps import STAGES
from pipeline.transcripts import rows_path


class Waiting(Record):
    session_id: str
    step: str = Field(description="the first step not done for the session")
    state: str = Field(description="failed, blocked, stale or pending")
    reason: str = ""
    holds_back: tuple[str, ...] = Field(description="the steps that wait for it (the corpus ones: its part of them)")
    has_rows: bool = Field(description="rows from an earlier good run exist: the corpus steps use those meanwhile")


def downstream(step: str, steps: Mapping[str, Step] = STEPS) -> tuple[str, ...]:
    """Every step of the registry `steps` that needs `step`, directly or not, in graph order."""
    found: set[str] = set()
    for name, declared in steps.items():  # registry order is topological: upstream steps come first
        if step in declared.after or found & set(declared.after):
            found.add(name)
    return tuple(name for name in steps if name in found)


def waiting_sessions(ctx: StepContext, entries: Iterable[CatalogEntry] | None = None,
                     states: Iterable[str] = ("failed", "blocked", "stale", "pending")) -> list[Waiting]:
    """The sessions whose session steps are not all done, each with the first such step."""
    wanted = set(states)
    found = []
    for entry in ctx.catalog if entries is None else entries:
        for stage in STAGES.values():
            status = session_status(ctx, stage, entry)
            if status.state == "done":
                continue
            if status.state in wanted:
                has_rows = rows_path(ctx.project, entry.session_id).is_file()
                found.append(Waiting(session_id=entry.session_id, step=stage.name, state=status.state,
                                     reason=status.reason, holds_back=downstream(stage.name, ctx.registry.steps),
                                     has_rows=has_rows))
            break
    return found


def describe(waiting: Waiting) -> str:
    """One line: what the session waits for, and what that means for the corpus steps."""
    why = f": {waiting.reason}" if waiting.reason else ""
    corpus = [step for step in waiting.holds_back if step not in SESSION_STEPS and step != "server"]
    if not corpus:
        effect = ""
    elif waiting.has_rows:
        effect = "; the corpus steps use its last good rows meanwhile"
    else:
        effect = f"; left out of {', '.join(corpus)} until it has rows"
    return f"{waiting.session_id} waits at {waiting.step} ({waiting.state}{why}){effect}"
