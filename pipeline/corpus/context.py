"""What every corpus step reads (project, settings, schema, the rows' digest, the server when it is open) and
where its outcomes and results go: the one context the engine hands each corpus step's function."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field

from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate.push import schema_path
from pipeline.step import Inputs, Outcome, StepDetail
from pipeline.corpus.labelstudio_steps import ProjectExport, ServerSession
from pipeline.corpus.state import StepRun, file_sha, output_records, rows_digest, write_state
from pipeline.project import Project
from pipeline.records import Record
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.settings import NO_OVERRIDES, Settings, SettingsOverrides, load_settings

Status = Outcome  # the one vocabulary of what a build did with a step (pipeline/step.py)


class StepOutcome(Record):
    step: str
    status: Status
    message: str
    notes: tuple[str, ...] = ()
    elapsed_s: float = Field(default=0.0, description="wall-clock seconds since the previous step finished")


@dataclass
class CorpusContext:
    project: Project
    settings: Settings
    schema: AnnotationSchema
    schema_sha: str
    rows: dict[str, str]  # catalog session -> sha256 of its rows.jsonl ('' = no rows yet)
    on_step: Callable[[StepOutcome], None] = lambda outcome: None
    on_begin: Callable[[str], None] = lambda step: None
    outcomes: list[StepOutcome] = field(default_factory=list)
    mark: float = field(default_factory=time.perf_counter)  # when the step now running began (steps run in turn)
    planned: frozenset[str] = frozenset()  # the corpus steps of this build
    server_reason: str | None = None  # why the server must be opened (None: nothing there can have changed)
    server: ServerSession | None = None  # open while planned steps that read it remain
    exports: list[ProjectExport] | None = None  # the annotation exports, fetched once per build
    # what the steps made, for the build's report
    agreement_report: Path | None = None
    gold_sessions: tuple[str, ...] = ()
    pending: dict[str, str] = field(default_factory=dict)
    release: Path | None = None

    @classmethod
    def load(cls, project: Project, overrides: SettingsOverrides = NO_OVERRIDES,
             **callbacks: Callable) -> CorpusContext:  # type: ignore[type-arg]
        settings = load_settings(project.root, overrides)
        path = schema_path(project, settings.annotate)
        return cls(project, settings, load_schema(path), file_sha(path), rows_digest(project), **callbacks)

    @property
    def agreement(self) -> AgreementSettings:
        return self.settings.agreement

    def begin(self, step: str) -> None:
        self.mark = time.perf_counter()
        self.on_begin(step)

    def elapsed(self) -> float:
        return round(time.perf_counter() - self.mark, 2)

    def record(self, step: str, status: Status, message: str, notes: list[str] | tuple[str, ...] = ()) -> None:
        outcome = StepOutcome(step=step, status=status, message=message, notes=tuple(notes), elapsed_s=self.elapsed())
        self.mark = time.perf_counter()  # the next outcome's time starts here
        self.outcomes.append(outcome)
        self.on_step(outcome)

    def done(self, step: str, fingerprint: str | Inputs, detail: StepDetail | None = None,
             files: Iterable[Path] = ()) -> None:
        """Record a successful run: its fingerprint (with a digest per named input when given `Inputs`), what it
        keeps for the next run (its typed `detail`), and its output `files`."""
        digests = fingerprint.digests() if isinstance(fingerprint, Inputs) else {}
        fp = fingerprint.fingerprint() if isinstance(fingerprint, Inputs) else fingerprint
        kept = detail.model_dump(mode="json") if detail is not None else {}
        write_state(self.project, StepRun(step=step, fingerprint=fp, status="done", detail=kept,
                                          input_digests=digests, outputs=output_records(self.project, files),
                                          elapsed_s=self.elapsed()))
