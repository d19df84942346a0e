"""Settings from [tool.rescue] in pyproject.toml: defaults, overrides, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.settings import Settings, load_settings


def test_defaults_without_pyproject(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == Settings()
    assert Settings().ingest.audio_sample_rate == 16_000


def test_overrides_are_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rescue.ingest]\nkeyframe_interval = 2.5\n")
    assert load_settings(tmp_path).ingest.keyframe_interval == 2.5


@pytest.mark.parametrize(("text", "expected"), [
    ("[tool.rescue.ingest]\nkeyframe_intervall = 2\n", "ingest.keyframe_intervall: Extra inputs are not permitted"),
    ("[tool.rescue.ingest]\nkeyframe_interval = -1\n", "ingest.keyframe_interval: Input should be greater than 0"),
    ("[tool.rescue\n", "cannot read"),
    ("[tool.rescue.annotate]\nannotators_per_row = 3\n",  # gone with independent labels: say why, not just "extra"
     "annotators_per_row is no longer a setting: every annotator labels every row in a project of their own"),
])
def test_bad_settings_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(RescueError) as caught:
        load_settings(tmp_path)
    assert expected in str(caught.value) and "pyproject.toml" in str(caught.value)


def test_the_project_pyproject_is_valid() -> None:
    load_settings(Path(__file__).resolve().parents[1])
