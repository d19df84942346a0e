"""Freezing gold sessions into a release: the one implementation behind the build's freeze step and
`rescue freeze --gold FILE` (a published or hand-made gold file), with one set of defaults.

Defaults, for both: the release version, licence, citation and public flag from `[tool.rescue.build]`
(`release_version`, `release_license`, `release_citation`, `release_public`), the task settings
`annotation_schemas/tasks-v1.yaml` of the project (else the packaged one), the manifest naming the gold file
relative to the project root. What differs is only what each knows: the build step records the annotation
snapshot and the models behind the rows, and replaces a changed release (the old one moves to superseded/);
the file entry takes snapshots and models from its flags and replaces a different release only with `--force`.
Only the build step has an agreement report to summarise on the card; a gold file's card says the figures are
not available.

Media: the build step packs clips when `release_media` of `[tool.rescue.build]` is on (the default);
`rescue freeze --gold FILE` only with `--media`, since a gold file from elsewhere has no clips. Either
way a gold session without clips in this project's build is an error naming the fix, never a silent
text-only release.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline import layout
from pipeline.benchmark_format import BenchmarkSession
from pipeline.project import Project
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.settings import Settings
from pipeline.store import sha256_file
from pipeline.tasks.clips import clip_index
from pipeline.tasks.gold_input import GoldProblem, read_gold_file
from pipeline.tasks.media import ClipIndex
from pipeline.tasks.release import ModelVersion, ReleaseProvenance, ReleaseSummary, freeze_release, gold_source_label
from pipeline.tasks.release_card import AgreementSummary, CardSettings
from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, TaskSettings, load_task_settings


def task_settings_file(project: Project, given: Path | None = None) -> Path:
    if given:
        return given
    local = project.schemas / DEFAULT_TASK_SETTINGS.name
    return local if local.is_file() else DEFAULT_TASK_SETTINGS


@dataclass(frozen=True)
class ReleaseDefaults:
    version: str
    license: str
    citation: str = ""
    public: bool = False

    @classmethod
    def of(cls, settings: Settings, version: str | None = None, license: str | None = None) -> ReleaseDefaults:
        build = settings.build
        return cls(version or build.release_version, license or build.release_license, build.release_citation,
                   build.release_public)


@dataclass(frozen=True)
class GoldInput:
    gold: Path
    settings_file: Path
    task_settings: TaskSettings
    schema_file: Path
    schema: AnnotationSchema
    sessions: tuple[BenchmarkSession, ...]
    warnings: tuple[GoldProblem, ...]


def read_gold_input(project: Project, gold: Path, settings_file: Path | None = None, *,
                    strict: bool = False) -> GoldInput:
    """The gold sessions with the task settings and schema they are frozen with (errors raise RescueError)."""
    settings_file = task_settings_file(project, settings_file)
    task_settings = load_task_settings(settings_file)
    schema_file = settings_file.parent / task_settings.schema_file
    schema = load_schema(schema_file)
    sessions, warnings = read_gold_file(gold, schema, strict=strict)
    return GoldInput(gold, settings_file, task_settings, schema_file, schema, tuple(sessions), tuple(warnings))


def gold_clips(project: Project, given: GoldInput) -> ClipIndex:
    """Every gold row's clip from this project's build (errors name the sample, the row and the fix)."""
    return clip_index(project, given.sessions)


def freeze_gold(project: Project, given: GoldInput, release: ReleaseDefaults, *, snapshots: Sequence[str],
                models: Sequence[ModelVersion | dict[str, str]], out: Path | None = None,
                overwrite: bool, media: bool | ClipIndex = False,
                agreement: AgreementSummary | None = None, allow_shrink: bool = False) -> ReleaseSummary:
    """`media`: False for a text-only release, True to pack the clips of this project's build, or the
    clips already indexed (the build step indexes them for its fingerprint). `agreement`: the figures of the
    build's agreement report for the card (None: the card says they are not available). `allow_shrink`: replace
    a release that holds more sessions or instances (pipeline/tasks/shrink.py); refused otherwise."""
    clips = gold_clips(project, given) if media is True else (None if media is False else media)
    provenance = ReleaseProvenance(annotation_snapshots=tuple(snapshots),
                                   models=tuple(models),  # type: ignore[arg-type]  (dicts are validated)
                                   gold_source=gold_source_label(project.root, given.gold),
                                   gold_sha256=sha256_file(given.gold))
    return freeze_release(list(given.sessions), given.task_settings, provenance,
                          out or layout.release_dir(project, release.version), schema=given.schema,
                          overwrite=overwrite, license=release.license, media=clips,
                          card=CardSettings(citation=release.citation, public=release.public, agreement=agreement),
                          allow_shrink=allow_shrink)
