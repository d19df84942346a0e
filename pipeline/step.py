"""One step of the build graph (`Step`, declared once beside its function), the one freshness rule of every
step, and the one vocabulary `rescue status` and the build use for it. Ground floor: the engine
(pipeline/engine/) runs the steps, the step packages declare them, and neither imports the other back.

A step is up to date ("done") when the fingerprint of its named inputs equals its last successful run's and
every output it recorded still has its content. The run records a digest per named input as well, so when the
fingerprint differs the engine can say *which* input changed ("settings [tool.rescue.agreement]") without
running anything (`rescue status`, like `dvc status`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from pydantic import ConfigDict, ValidationError

from pipeline import __version__
from pipeline.agreement.settings import AgreementSettings
from pipeline.project import Project
from pipeline.records import CatalogEntry, Record
from pipeline.schema import AnnotationSchema
from pipeline.settings import Settings
from pipeline.store import StepRun, sha256_file, sha256_json

LABEL_STUDIO = "label-studio"  # a resource: the engine opens the server only for a step that needs it


@dataclass(frozen=True)
class Resource:
    """Something corpus steps open (`Step.needs` names it), declared by the step package that opens it. The
    engine asks `changed(ctx)` whether its content may differ from what the last build saw (None: it cannot),
    and calls `close(ctx, record=...)` after the last planned step that needs it (`record`: the build went
    well, so note what the next build compares)."""

    name: str
    changed: Callable[[Any], str | None]
    close: Callable[..., None]


@dataclass(frozen=True)
class Step:
    """A step: its function, inputs (upstream steps, settings sections, sources), outputs and code version.

    Every step function receives the build's one context (`Context` below; the engine's `StepContext`).
    `partitioned_by="session"`: it runs once per catalog session, in a temp folder that replaces
    build/<area>/<session>/ on success, as `run(ctx, entry, workdir, final) -> record`; the session fields
    below say what it reads and where it writes. Otherwise it runs once for the corpus as `run(ctx)`,
    fingerprints its own named `Inputs`, records what it keeps for the next run as its own `StepDetail`, and
    `check(ctx)` says whether it is up to date without running.
    """

    name: str
    run: Callable[..., Any]
    after: tuple[str, ...]  # upstream steps
    settings: tuple[str, ...]  # the [tool.rescue.*] sections it reads
    outputs: tuple[str, ...]  # where it writes (pipeline/layout.py spells each path)
    summary: str
    version: str = "1"  # bump when the same inputs should give different outputs
    partitioned_by: Literal["session"] | None = None
    sources: str = ""  # what it reads outside build/, in words
    needs: tuple[str, ...] = ()  # resources it opens (LABEL_STUDIO)
    after_sessions: bool = False  # a corpus step that also waits for every last session step (the engine adds them)
    # a corpus step that reads the server: why its own inputs make the server worth opening (None: they do not)
    server_check: Callable[[Any], str | None] | None = None
    # a corpus step: its state now and why, computed without running (`rescue status`); None: its last run's
    check: Callable[[Any], tuple[State, str]] | None = None
    # -- partitioned by session only --
    area: str = ""  # outputs go to build/<area>/<session_id>/
    record_name: str = ""  # the session's record there; all of them form build/manifests/<name>.jsonl
    record_type: type | None = None
    settings_of: Callable[[Any], Any] | None = None  # the settings the fingerprint covers
    input_files: Callable[[Any, Any], list[Any]] = lambda project, entry: []  # source files, stamped by size/mtime

    @property
    def scope(self) -> Literal["session", "corpus"]:
        return "session" if self.partitioned_by == "session" else "corpus"


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity (the registry caches per set of extensions)
class Extension:
    """Steps that some projects get on top of the product's (the demo's stored sample annotations), declared
    beside them. `applies(catalog)` decides from the project's catalog; each step goes into the graph right
    after the last of its upstream steps, and `before` names the product steps that then also wait for it.
    `hooks` are what product steps ask of it inside their own run (`Context.hooks`), by hook name."""

    name: str
    applies: Callable[[tuple[CatalogEntry, ...]], bool]
    steps: tuple[Step, ...]
    before: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # its step -> product steps after it
    hooks: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


State = Literal["done", "stale", "failed", "pending", "blocked"]
"""What a step *is* now (`rescue status`), for a session step per session and for a corpus step alike.
done: up to date; stale: it would run (the reason says what changed); failed: its last run failed;
pending: it never ran; blocked: what it needs is not there yet (the reason names it)."""

Outcome = Literal["ran", "up to date", "not needed", "skipped", "waiting"]
"""What a build *did* with a step: ran it; found it up to date; did not need it (nothing it reads can have
changed: the server's database is unchanged, or no stored sample session is in the catalog); skipped it
(a setting turns it off); or could not run it yet (waiting: what it needs is not there, e.g. no gold yet;
its state is then `blocked`)."""

Check = Callable[[Any], tuple[State, str]]  # a corpus step's `check`: its state now and why, nothing run


class Context(Protocol):
    """What a step function may use of the build's one context (`pipeline.engine.context.StepContext`).

    Step packages never import the engine (the engine imports them, through its registry), so they name this
    surface instead. Read-only: the project, its settings and catalog; for corpus steps the annotation
    schema and the rows' digest; the step state records (read, and written only through `done`,
    `write_run`). Everything a build changes as it goes (outcomes, the open server, the exports fetched once,
    what the steps made for the report) is in one place, `build` (the engine's `BuildRun`)."""

    project: Project
    settings: Settings
    catalog: tuple[CatalogEntry, ...]
    build: Any

    @property
    def agreement(self) -> AgreementSettings: ...

    @property
    def schema(self) -> AnnotationSchema: ...

    @property
    def schema_sha(self) -> str: ...

    @property
    def rows(self) -> dict[str, str]: ...

    def record(self, step: str, status: Outcome, message: str, notes: list[str] | tuple[str, ...] = ()) -> None: ...

    def done(self, step: str, fingerprint: str | Inputs, detail: StepDetail | None = None,
             files: Iterable[Path] = ()) -> None: ...

    def last_run(self, step: str) -> StepRun | None: ...

    def last_done(self, step: str, fingerprint: str) -> StepRun | None: ...

    def last_done_with(self, inputs: Inputs) -> StepRun | None: ...

    def damaged(self, run: StepRun, paths: Iterable[Path]) -> list[str]: ...

    def write_run(self, run: StepRun) -> None: ...

    def state_file(self, step: str) -> Path: ...

    def hooks(self, name: str) -> list[Callable[..., Any]]: ...


def file_sha(path: Path) -> str:
    """A named input that is a file: its sha256 ('' while it does not exist)."""
    return sha256_file(path) if path.is_file() else ""


def last_run_state(run: StepRun | None) -> tuple[State, str]:
    """A step that names no inputs of its own: its last run says it (never ran, failed, or done)."""
    if run is None:
        return "pending", "it never ran"
    if run.status == "failed":
        return "failed", run.error
    return "done", ""


D = TypeVar("D", bound="StepDetail")


class StepDetail(Record):
    """What one corpus step keeps for its next run (`StepRun.detail`), one typed record per step, declared
    beside it. Keys a record of an earlier build holds that the step no longer keeps are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def of(cls: type[D], run: StepRun | None) -> D | None:
        """The detail `run` recorded; None without a run, or when the record is not this step's detail."""
        if run is None:
            return None
        try:
            return cls.model_validate(run.detail)
        except ValidationError:
            return None  # a damaged record: as if the step had kept nothing (it runs again)


# What a named input is, in words, for the reasons `rescue status` and the build print.
INPUT_WORDS = {
    "annotations": "the annotation snapshot", "adjudications": "the adjudicators' answers",
    "adjudication_tasks": "the adjudication tasks (the report links them)",
    "rows": "the transcript rows", "schema": "the annotation schema", "media": "the session videos",
    "drafts": "the drafts", "gold": "the gold file", "task_settings": "the task settings file",
    "version": "the release version", "models": "the models behind the rows", "license": "the release license",
    "clips": "the release clips", "citation": "the citation", "public": "the public flag",
    "agreement": "the agreement report", "entry": "the catalog entry", "upstream": "an upstream step's outputs",
}


@dataclass(frozen=True)
class Inputs:
    """A step's named inputs: everything that decides its output (never times or paths that do not)."""

    step: str
    version: str  # bump when the same inputs should give different outputs
    parts: Mapping[str, object]
    settings_sections: tuple[str, ...] = field(default=())  # how the "settings" part is named in reasons
    # a step partitioned by session leaves the code version out (a new release must not re-transcribe every
    # session) and keeps the key names its records were first written with, so existing builds stay up to date
    partitioned: bool = False

    def fingerprint(self) -> str:
        head = {"stage": self.step, "version": self.version} if self.partitioned else \
            {"step": self.step, "step_version": self.version, "code": __version__}
        return sha256_json({**head, **self.parts})

    def digests(self) -> dict[str, str]:
        """One digest per named input (recorded with the run, so a later check can say which one changed)."""
        return {name: sha256_json(value) for name, value in self.parts.items()}

    def changed_since(self, run: StepRun) -> str:
        """Why `run` (a done run with another fingerprint) is out of date, in words."""
        if not self.partitioned and run.code_version != __version__:
            return f"the code changed ({run.code_version} -> {__version__})"
        if not run.input_digests:
            return "its inputs changed (" + ", ".join(self._word(name) for name in self.parts) + \
                "; the last run recorded no per-input digests)"
        now = self.digests()
        changed = [name for name in now if run.input_digests.get(name) != now[name]]
        changed += [name for name in run.input_digests if name not in now]
        if not changed:
            return "the step's version changed"
        return "changed since its last run: " + ", ".join(self._word(name) for name in changed)

    def _word(self, name: str) -> str:
        if name == "settings":
            sections = ", ".join(f"[tool.rescue.{s}]" for s in self.settings_sections)
            return f"settings {sections}" if sections else "its settings"
        return INPUT_WORDS.get(name, name)


class Freshness(Record):
    """Whether one step (for one session, or for the corpus: `session_id` "") is up to date, and why not."""

    step: str
    session_id: str = ""
    state: State
    reason: str = ""


def judge(run: StepRun | None, inputs: Inputs, damaged: list[str] | None = None) -> tuple[State, str]:
    """The one rule: pending (never ran), failed, stale (fingerprint differs, or outputs damaged), or done.
    `damaged`: the recorded outputs that no longer have their content (None: not checked here)."""
    if run is None:
        return "pending", "it never ran"
    if run.status == "failed":
        return "failed", run.error
    if run.fingerprint != inputs.fingerprint():
        return "stale", inputs.changed_since(run)
    if damaged:
        return "stale", f"outputs missing or changed: {', '.join(damaged[:3])}{' ...' if len(damaged) > 3 else ''}"
    return "done", ""
