"""The task-construction settings file: shipped defaults, and bad files refused with the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.errors import RescueError
from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, TaskSettings, load_task_settings


def test_shipped_settings_reproduce_the_released_defaults() -> None:
    settings = load_task_settings()
    assert settings == TaskSettings()          # the YAML spells out exactly the code defaults
    assert settings.id == "rescue-tasks-v1" and settings.schema_file == "rescue-v1.yaml"
    assert (settings.er.context_size, settings.er.checkpoints_per_sample, settings.er.min_dialogue_words,
            settings.er.early_cutoff_fraction) == (-1, 5, 5, 0.3)
    assert (settings.vp.context_size, settings.vp.participants_include_therapist) == (-1, True)
    assert (settings.rpp.context_size, settings.rpp.rows, settings.rpp.include_current_turn) == (-1, "therapist", False)
    assert (settings.itp.context_size, settings.itp.max_candidates_per_class_per_sample) == (3, 0)
    assert (settings.stp.rows, settings.stp.multi_target, settings.ssp.context_size) == ("support_strategy",
                                                                                         "group_label", 3)
    assert settings.as_json()["schema"] == "rescue-v1.yaml"


def _variant(tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    data = yaml.safe_load(DEFAULT_TASK_SETTINGS.read_text())
    change(data)
    path = tmp_path / "tasks.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["er"].update(context_size=-2), "er.context_size: Input should be greater than or equal to -1"),
    (lambda d: d["rpp"].update(rows="clients"), "rpp.rows: Input should be 'therapist' or 'any'"),
    (lambda d: d["itp"].update(balance="sometimes"), "itp.balance"),
    (lambda d: d["stp"].update(colour="red"), "stp.colour: Extra inputs are not permitted"),
    (lambda d: d["er"].update(early_cutoff_fraction=1.0), "er.early_cutoff_fraction"),
])
def test_bad_settings_name_the_key(tmp_path: Path, change, expected: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RescueError) as error:
        load_task_settings(_variant(tmp_path, change))
    assert expected in error.value.message and "tasks.yaml" in error.value.message
    assert "annotation_schemas/tasks-v1.yaml" in error.value.fix


def test_unreadable_settings_files(tmp_path: Path) -> None:
    with pytest.raises(RescueError, match="not found"):
        load_task_settings(tmp_path / "absent.yaml")
    (tmp_path / "broken.yaml").write_text("er: [unclosed")
    with pytest.raises(RescueError, match="not valid YAML"):
        load_task_settings(tmp_path / "broken.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(RescueError, match="must be a mapping"):
        load_task_settings(tmp_path / "list.yaml")
