"""Task-construction settings (annotation_schemas/tasks-v1.yaml) as frozen, validated records."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import Field, ValidationError, field_validator

from pipeline.errors import RescueError, describe_validation
from pipeline.records import Record

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "annotation_schemas"
DEFAULT_TASK_SETTINGS = SCHEMA_DIR / "tasks-v1.yaml"

MultiTarget = Literal["group_label", "subgroup"]
RelationField = Literal["relation_cycle_state", "relation_pattern"]


class ERSettings(Record):
    context_size: int = Field(-1, ge=-1)
    checkpoints_per_sample: int = Field(5, ge=0, description="0 = no cap")
    min_dialogue_words: int = Field(5, ge=0)
    early_cutoff_fraction: float = Field(0.3, ge=0, lt=1)


class VPSettings(Record):
    context_size: int = Field(-1, ge=-1)
    checkpoints_per_sample: int = Field(5, ge=0, description="0 = no cap")
    participants_include_therapist: bool = True


class RPPSettings(Record):
    context_size: int = Field(-1, ge=-1)
    rows: Literal["therapist", "any"] = "therapist"
    include_current_turn: bool = False
    drop_out_of_taxonomy: bool = True
    label_fields: tuple[RelationField, ...] = Field(
        ("relation_cycle_state", "relation_pattern"),
        description="per row, the first of these fields with a non-empty value on the row supplies its gold "
                    "(with that field's _reason and _evidence_rows)")

    @field_validator("label_fields")
    @classmethod
    def _distinct_fields(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError("label_fields must list one or more distinct relation fields")
        return value


class ITPSettings(Record):
    context_size: int = Field(3, ge=-1)
    max_candidates_per_class_per_sample: int = Field(0, ge=0, description="0 = no cap")
    balance: bool = True


class STPSettings(Record):
    context_size: int = Field(3, ge=-1)
    rows: Literal["support_strategy", "therapist"] = "support_strategy"
    multi_target: MultiTarget = "group_label"


class SSPSettings(Record):
    context_size: int = Field(3, ge=-1)
    multi_target: MultiTarget = "group_label"
    include_target_internal_emotion: bool = False


class IdSettings(Record):
    itp_key: str = Field("rescue-itp-v1", min_length=1)


class TaskSettings(Record):
    name: str = "rescue-tasks"
    version: str = "1"
    schema_file: str = Field("rescue-v1.yaml", alias="schema",
                             description="annotation schema (in annotation_schemas/) the label sets come from")
    er: ERSettings = ERSettings()
    vp: VPSettings = VPSettings()
    rpp: RPPSettings = RPPSettings()
    itp: ITPSettings = ITPSettings()
    stp: STPSettings = STPSettings()
    ssp: SSPSettings = SSPSettings()
    ids: IdSettings = IdSettings()

    model_config = Record.model_config | {"populate_by_name": True}

    @property
    def id(self) -> str:
        return f"{self.name}-v{self.version}"

    def as_json(self) -> dict:
        """Every setting, defaults included, in declaration order (what the manifest records)."""
        return self.model_dump(mode="json", by_alias=True)


def load_task_settings(path: Path = DEFAULT_TASK_SETTINGS) -> TaskSettings:
    """Read and validate a task-construction file; any problem names the file, the key and the fix."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RescueError(f"task settings {path} not found",
                          "restore annotation_schemas/tasks-v1.yaml from git or pass another file") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise RescueError(f"task settings {path} is not valid YAML: {exc}", "fix the YAML syntax") from exc
    if not isinstance(data, dict):
        raise RescueError(f"task settings {path} must be a mapping of settings", "see annotation_schemas/tasks-v1.yaml")
    try:
        return TaskSettings.model_validate(data)
    except ValidationError as exc:
        raise RescueError(f"task settings {path}: {describe_validation(exc)}",
                          "see the comments in annotation_schemas/tasks-v1.yaml for the allowed keys and values",
                          ) from exc


def schema_path(settings: TaskSettings, settings_file: Path = DEFAULT_TASK_SETTINGS) -> Path:
    """The annotation schema named by the settings, next to the settings file."""
    return settings_file.parent / settings.schema_file
