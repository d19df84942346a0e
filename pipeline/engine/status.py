"""The one status table of `rescue status`: every session step per session, the corpus steps' last runs,
and who waits for what (which session, at which step, holding back which steps)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.corpus.state import corpus_status
from pipeline.engine.waiting import Waiting, waiting_sessions
from pipeline.project import Project
from pipeline.runner import Context, SessionStatus, orphans, session_status
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.stages import STAGES


@dataclass
class StatusTable:
    context: Context
    sessions: list[SessionStatus]
    not_in_catalog: dict[str, list[str]]
    corpus: list[dict[str, object]]
    waiting: list[Waiting]

    def as_json(self) -> dict[str, object]:
        return {"sessions": [row.model_dump() for row in self.sessions], "not_in_catalog": self.not_in_catalog,
                "corpus": self.corpus, "waiting": [w.model_dump() for w in self.waiting]}


def status_table(project: Project, overrides: SettingsOverrides = NO_OVERRIDES) -> StatusTable:
    context = Context.load(project, overrides)
    rows = [session_status(context, stage, entry) for entry in context.catalog for stage in STAGES.values()]
    kept = {name: orphans(context, stage) for name, stage in STAGES.items()}
    return StatusTable(context, rows, kept, corpus_status(project), waiting_sessions(context))
