"""What every command reads from the `rescue` group's context: the project (`--root`) and the settings
overrides of this run (flags and the documented RESCUE_ASR_* / RESCUE_DIARIZATION_* variables)."""

from __future__ import annotations

from collections.abc import Mapping

import click

from pipeline.project import Project
from pipeline.settings import ENVIRONMENT_PREFIXES, NO_OVERRIDES, SettingsOverrides
from pipeline.speech.settings import AsrSettings, DiarizationSettings

# Environment variables that users set instead of flags (docs/speech.md): prefix -> settings section.
ENVIRONMENT_SECTIONS = {ENVIRONMENT_PREFIXES[section]: (section, model)
                        for section, model in (("speech.asr", AsrSettings), ("speech.diarization", DiarizationSettings))}


def environment_overrides(environ: Mapping[str, str]) -> SettingsOverrides:
    """`RESCUE_ASR_<KEY>` / `RESCUE_DIARIZATION_<KEY>` as overrides; read here, at the edge, and nowhere else,
    so a step never depends on the environment of the process or host that runs it. Empty values are unset."""
    found = SettingsOverrides()
    for prefix, (section, model) in ENVIRONMENT_SECTIONS.items():
        values = {name: environ.get(f"{prefix}{name.upper()}") or None for name in model.model_fields}
        found = found | SettingsOverrides.of(section, values)
    return found


def _root_obj(ctx: click.Context) -> dict:
    return ctx.find_root().obj or {}


def project_of(ctx: click.Context) -> Project:
    return Project.at(_root_obj(ctx).get("root"))


def overrides_of(ctx: click.Context) -> SettingsOverrides:
    """This run's settings overrides from the environment (see `environment_overrides`); flags add theirs."""
    return _root_obj(ctx).get("overrides", NO_OVERRIDES)
