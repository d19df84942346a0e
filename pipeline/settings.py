"""Pipeline settings: defaults here, overrides from `[tool.rescue]` in the project's pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import RescueError, describe_validation
from pipeline.agreement.settings import AgreementSettings
from pipeline.annotate.settings import AnnotateSettings
from pipeline.corpus.settings import BuildSettings
from pipeline.executors.settings import ExecutorSettings
from pipeline.speech.settings import SpeechSettings


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
    speech: SpeechSettings = Field(default_factory=SpeechSettings)  # built at load time: RESCUE_ASR_* env overrides apply
    build: BuildSettings = BuildSettings()  # corpus steps of `rescue build` (pipeline/corpus)
    executor: ExecutorSettings = ExecutorSettings()  # `--executor ray`: address, resources per step


def load_settings(root: Path) -> Settings:
    """Read `[tool.rescue]` from `<root>/pyproject.toml` if present; unknown keys are an error."""
    pyproject = root / "pyproject.toml"
    if not pyproject.exists():
        return Settings()
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("rescue", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RescueError(f"cannot read {pyproject}: {exc}", "fix the TOML syntax") from exc
    try:
        return Settings.model_validate(table)
    except ValidationError as exc:
        raise RescueError(f"{pyproject} [tool.rescue]: {describe_validation(exc)}",
                          "see README 'Settings' for the allowed keys") from exc
