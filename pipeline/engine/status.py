"""The one status table of `rescue status`: every session step per session, the corpus steps' last runs,
and who waits for what (which session, at which step, holding back which steps)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.engine.context import StepContext
from pipeline.engine.state import read_state
from pipeline.engine.freshness import corpus_freshness
from pipeline.engine.steps import registry
from pipeline.engine.waiting import Waiting, waiting_sessions
from pipeline.catalog import load_catalog
from pipeline.project import Project
from pipeline.engine.runner import SessionStatus, orphans, session_status
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.engine.session_steps import STAGES


@dataclass
class StatusTable:
    context: StepContext
    sessions: list[SessionStatus]
    not_in_catalog: dict[str, list[str]]
    corpus: list[dict[str, object]]
    waiting: list[Waiting]

    def as_json(self) -> dict[str, object]:
        return {"sessions": [row.model_dump() for row in self.sessions], "not_in_catalog": self.not_in_catalog,
                "corpus": self.corpus, "waiting": [w.model_dump() for w in self.waiting]}


def status_table(project: Project, overrides: SettingsOverrides = NO_OVERRIDES) -> StatusTable:
    context = StepContext.load(project, overrides)
    rows = [session_status(context, stage, entry) for entry in context.catalog for stage in STAGES.values()]
    kept = {name: orphans(context, stage) for name, stage in STAGES.items()}
    return StatusTable(context, rows, kept, corpus_steps(context), waiting_sessions(context))


def corpus_steps(context: StepContext) -> list[dict[str, object]]:
    """Every corpus step: its state now and why (computed, nothing runs), and its last run, if any."""
    last = {str(run["step"]): run for run in corpus_status(context.project, context.registry.corpus)}
    return [{"step": f.step, "state": f.state, "reason": f.reason,
             **last.get(f.step, {"status": None, "finished_at": None, "elapsed_s": None, "error": ""})}
            for f in corpus_freshness(context)]


def corpus_status(project: Project, steps: tuple[str, ...] | None = None) -> list[dict[str, object]]:
    """The last run of each corpus step (`steps`: default, the project's registry's), for `rescue status`
    (steps that never ran are left out)."""
    if steps is None:
        steps = registry(item.entry for item in load_catalog(project)).corpus
    found = []
    for step in steps:
        state = read_state(project, step)
        if state is not None:
            found.append({"step": step, "status": state.status, "finished_at": state.finished_at,
                          "elapsed_s": state.elapsed_s, "error": state.error})
    return found
