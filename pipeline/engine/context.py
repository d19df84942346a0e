"""The one context of a build (`StepContext`): what every step function receives, session and corpus steps
alike, and what the engine's loops, `rescue status` and the waiting report read.

Read-only: the project, its settings (with this run's overrides), the catalog; for the corpus steps, loaded on
first use, the annotation schema and the rows' digest. Mutable, in one place (`BuildRun`): what a build
changes as it goes (outcomes and the callbacks that hear them, the open Label Studio server, the exports
fetched once, what the steps made for the report). Step packages see it through `pipeline.step.Context`
(they never import the engine).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from pipeline.agreement.settings import AgreementSettings
from pipeline.catalog import load_catalog
from pipeline.engine import state
from pipeline.engine.steps import Registry, registry
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry, Record
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.settings import NO_OVERRIDES, Settings, SettingsOverrides, load_settings
from pipeline.step import Inputs, Outcome, StepDetail, file_sha
from pipeline.store import StepRun
from pipeline.transcripts import rows_path

Status = Outcome  # the one vocabulary of what a build did with a step (pipeline/step.py)


class StepOutcome(Record):
    step: str
    status: Status
    message: str
    notes: tuple[str, ...] = ()
    elapsed_s: float = Field(default=0.0, description="wall-clock seconds since the previous step finished")


@dataclass
class BuildRun:
    """What one build changes as it goes: the only mutable part of the context."""

    writes: bool = False  # a build holding the lock (it records state); `rescue status` only reads
    on_step: Callable[[StepOutcome], None] = lambda outcome: None
    on_begin: Callable[[str], None] = lambda step: None
    outcomes: list[StepOutcome] = field(default_factory=list)
    mark: float = field(default_factory=time.perf_counter)  # when the step now running began (steps run in turn)
    planned: frozenset[str] = frozenset()  # the corpus steps of this build
    server_reason: str | None = None  # why the server must be opened (None: nothing there can have changed)
    server: Any = None  # the open Label Studio session (`pipeline.annotate.build_session.ServerSession`)
    exports: list[Any] | None = None  # the annotation exports, fetched once per build
    # what the steps made, for the build's report
    agreement_report: Path | None = None
    gold_sessions: tuple[str, ...] = ()
    pending: dict[str, str] = field(default_factory=dict)
    release: Path | None = None


@dataclass(frozen=True)
class StepContext:
    project: Project
    settings: Settings
    catalog: tuple[CatalogEntry, ...]
    overrides: SettingsOverrides = NO_OVERRIDES  # this run's flags; every session job carries them to its worker
    build: BuildRun = field(default_factory=BuildRun, compare=False)

    @classmethod
    def load(cls, project: Project, overrides: SettingsOverrides = NO_OVERRIDES, **build: Any) -> StepContext:
        """The project's settings (with `overrides`) and catalog; `build`: the `BuildRun` fields of a build."""
        return cls(project, load_settings(project.root, overrides), tuple(item.entry for item in load_catalog(project)),
                   overrides, BuildRun(**build))

    def select(self, session_ids: Iterable[str] = ()) -> list[CatalogEntry]:
        wanted = list(session_ids)
        known = {entry.session_id: entry for entry in self.catalog}
        unknown = [sid for sid in wanted if sid not in known]
        if unknown:
            raise RescueError(f"unknown session id(s): {', '.join(unknown)}",
                              "run `rescue status` to list the catalog's sessions")
        return [known[sid] for sid in wanted] if wanted else list(self.catalog)

    @property
    def outcomes(self) -> list[StepOutcome]:
        """What this build did with each corpus step so far, in order."""
        return self.build.outcomes

    def any_rows(self) -> bool:
        """Some catalog session has transcript rows: without any, the corpus steps have nothing to annotate."""
        return any(path.is_file() and path.stat().st_size
                   for path in (rows_path(self.project, entry.session_id) for entry in self.catalog))

    @cached_property
    def registry(self) -> Registry:
        """This project's steps: the product's, plus the extensions its catalog calls for (the demo's)."""
        return registry(self.catalog)

    def hooks(self, name: str) -> list[Callable[..., Any]]:
        """What this project's extensions add inside a product step's run, by hook name (none for a real project)."""
        return self.registry.hooks(name)

    # -- what the corpus steps read, loaded on first use -------------------------------------------------------

    @property
    def agreement(self) -> AgreementSettings:
        return self.settings.agreement

    @cached_property
    def schema_file(self) -> Path:
        return self.project.schemas / self.settings.annotate.schema_file

    @cached_property
    def schema(self) -> AnnotationSchema:
        return load_schema(self.schema_file)

    @cached_property
    def schema_sha(self) -> str:
        return file_sha(self.schema_file)

    @cached_property
    def rows(self) -> dict[str, str]:
        """Catalog session -> sha256 of its rows.jsonl ('' = no rows yet)."""
        return state.rows_digest(self.project, self.catalog)

    def for_corpus(self) -> StepContext:
        """This context with the corpus steps' inputs loaded now, so a missing schema stops here, named."""
        self.schema, self.schema_sha, self.rows  # noqa: B018 - loaded for their errors
        return self

    # -- step state --------------------------------------------------------------------------------------------

    def last_run(self, step: str) -> StepRun | None:
        return state.read_state(self.project, step, upgrade=self.build.writes)

    def last_done(self, step: str, fingerprint: str) -> StepRun | None:
        return state.last_done(self.project, step, fingerprint, upgrade=self.build.writes)

    def last_done_with(self, inputs: Inputs) -> StepRun | None:
        return state.last_done_with(self.project, inputs)

    def damaged(self, run: StepRun, paths: Iterable[Path]) -> list[str]:
        return state.damaged_outputs(self.project, run, paths)

    def write_run(self, run: StepRun) -> None:
        state.write_state(self.project, run)

    def state_file(self, step: str) -> Path:
        return state.state_path(self.project, step)

    # -- what a build did --------------------------------------------------------------------------------------

    def begin(self, step: str) -> None:
        self.build.mark = time.perf_counter()
        self.build.on_begin(step)

    def elapsed(self) -> float:
        return round(time.perf_counter() - self.build.mark, 2)

    def record(self, step: str, status: Status, message: str, notes: list[str] | tuple[str, ...] = ()) -> None:
        outcome = StepOutcome(step=step, status=status, message=message, notes=tuple(notes), elapsed_s=self.elapsed())
        self.build.mark = time.perf_counter()  # the next outcome's time starts here
        self.build.outcomes.append(outcome)
        self.build.on_step(outcome)

    def done(self, step: str, fingerprint: str | Inputs, detail: StepDetail | None = None,
             files: Iterable[Path] = ()) -> None:
        """Record a successful run: its fingerprint (with a digest per named input when given `Inputs`), what it
        keeps for the next run (its typed `detail`), and its output `files`."""
        digests = fingerprint.digests() if isinstance(fingerprint, Inputs) else {}
        fp = fingerprint.fingerprint() if isinstance(fingerprint, Inputs) else fingerprint
        kept = detail.model_dump(mode="json") if detail is not None else {}
        state.write_state(self.project, StepRun(step=step, fingerprint=fp, status="done", detail=kept,
                                                input_digests=digests,
                                                outputs=state.output_records(self.project, files),
                                                elapsed_s=self.elapsed()))
