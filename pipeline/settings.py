"""Pipeline settings: defaults here, overrides from `[tool.rescue]` in the project's pyproject.toml, and a
run's own overrides (command-line flags) passed in as data.

Loading reads no environment variables: a step run by a worker process or on another host gets exactly the
settings its job carries (`SettingsOverrides`), whatever that worker's environment holds.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import RescueError, describe_validation, masked_url
from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate.settings import AnnotateSettings
from pipeline.corpus.settings import BuildSettings
from pipeline.preannotate.settings import PreannotateSettings
from pipeline.runmodel.settings import RunModelSettings
from pipeline.executors.settings import ExecutorSettings
from pipeline.speech.settings import SpeechSettings
from pipeline.tasks.judge_settings import JudgeSettings


class IngestSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    audio_sample_rate: int = Field(16_000, description="speech models expect 16 kHz mono")
    keyframe_interval: float = Field(10.0, gt=0, description="seconds between annotator thumbnails")
    keyframe_width: int = Field(320, ge=32, description="thumbnail width in pixels; height keeps the aspect ratio")
    min_clip_seconds: float = Field(120.0, ge=0, description="the paper drops clips under 2 minutes")
    truncation_tolerance: float = Field(
        0.5, ge=0, description="seconds of audio that may be missing before a file counts as truncated"
    )


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ingest: IngestSettings = IngestSettings()
    agreement: AgreementSettings = AgreementSettings()
    annotate: AnnotateSettings = AnnotateSettings()
    speech: SpeechSettings = SpeechSettings()
    build: BuildSettings = BuildSettings()  # corpus steps of `rescue build` (pipeline/corpus)
    preannotate: PreannotateSettings = PreannotateSettings()  # drafts for annotators (pipeline/preannotate)
    executor: ExecutorSettings = ExecutorSettings()  # `--executor ray`: address, resources per step
    run_model: RunModelSettings = RunModelSettings()  # `rescue run-model` (pipeline/runmodel, docs/run-model.md)
    judge: JudgeSettings = JudgeSettings()  # the ER/VP judge of `rescue evaluate` (docs/tasks.md)


@dataclass(frozen=True)
class SettingsOverrides:
    """Keys of `[tool.rescue]` replaced for one run, as (dotted key, value) pairs, e.g.
    ("speech.asr.batch_size", 4). Immutable and picklable: a job carries them to whichever worker runs it."""

    values: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, section: str, values: Mapping[str, Any]) -> SettingsOverrides:
        """`values` (key -> value, None = not given) under `section` ("speech.asr")."""
        return cls(tuple((f"{section}.{key}", value) for key, value in values.items() if value is not None))

    def __or__(self, other: SettingsOverrides) -> SettingsOverrides:
        """These overrides, then `other`'s: where both set a key, `other` wins."""
        mine = {key: value for key, value in self.values if key not in dict(other.values)}
        return SettingsOverrides(tuple(mine.items()) + other.values)

    def __bool__(self) -> bool:
        return bool(self.values)

    def applied_to(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of the `[tool.rescue]` table with these keys set (the table itself is left as it was)."""
        merged = copy.deepcopy(dict(table))
        for dotted, value in self.values:
            *sections, key = dotted.split(".")
            level = merged
            for name in sections:  # every level is a table: the file alone was validated first
                level = level.setdefault(name, {})
            level[key] = value
        return merged

    def describe(self, keys: Iterable[str] | None = None) -> str:
        """`key=value, ...` (only `keys` when given), fit to print: a password or token in a URL is masked."""
        wanted = None if keys is None else set(keys)
        return ", ".join(f"{key}={_shown(value)}" for key, value in self.values if wanted is None or key in wanted)


NO_OVERRIDES = SettingsOverrides()

# Sections that environment variables override too (pipeline/cli/options.py reads them); the others only flags.
ENVIRONMENT_PREFIXES = {"speech.asr": "RESCUE_ASR_", "speech.diarization": "RESCUE_DIARIZATION_"}
FLAGS = {"run_model.extra_headers": "--header"}  # the flags not named after their key


def _shown(value: Any) -> str:
    return repr(masked_url(value)) if isinstance(value, str) else repr(value)


def override_source(dotted: str) -> str:
    """Where a run's override of `dotted` ("run_model.base_url") came from, in the user's words."""
    section, _, key = dotted.rpartition(".")
    flag = FLAGS.get(dotted, f"--{key.replace('_', '-')}")
    prefix = ENVIRONMENT_PREFIXES.get(section)
    place = f"{key} in [tool.rescue.{section}]"
    return f"the {flag} flag or {prefix}{key.upper()}" if prefix else f"the {flag} flag (or {place})"


def _read_table(root: Path) -> dict[str, Any]:
    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        return {}
    try:
        return tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("rescue", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RescueError(f"cannot read {pyproject}: {exc}", "fix the TOML syntax") from exc


def load_settings(root: Path, overrides: SettingsOverrides = NO_OVERRIDES) -> Settings:
    """Read `[tool.rescue]` from `<root>/pyproject.toml` if present, then apply `overrides`; unknown keys are
    an error, named with where they came from (the file or the override)."""
    table = _read_table(root)
    try:
        file_settings = Settings.model_validate(table)
    except ValidationError as exc:
        raise RescueError(f"{root / 'pyproject.toml'} [tool.rescue]: {describe_validation(exc)}",
                          "see README 'Settings' for the allowed keys") from exc
    if not overrides:
        return file_settings
    try:
        return Settings.model_validate(overrides.applied_to(table))
    except ValidationError as exc:
        given = {key for key, _ in overrides.values}
        # the overrides the errors are about (a check across fields names its section: every override in it)
        named = {key for err in exc.errors() for key in given
                 if key == ".".join(map(str, err["loc"])) or key.startswith(".".join(map(str, err["loc"])) + ".")}
        named = named or given
        raise RescueError(f"settings override {overrides.describe(named)}: {describe_validation(exc)}",
                          "correct " + " / ".join(override_source(key) for key in sorted(named))) from exc
