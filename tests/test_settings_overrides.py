"""A run's flags reach the stages as settings overrides carried by data (the job), never through environment
variables: loading settings reads no environment, the `rescue` command reads the documented RESCUE_ASR_* /
RESCUE_DIARIZATION_* variables once at its edge, and a worker process applies exactly what its job carries."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia
from pipeline.settings import load_settings


def test_loading_settings_reads_no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESCUE_ASR_BATCH_SIZE", "2")
    monkeypatch.setenv("RESCUE_DIARIZATION_SPEAKER_COUNT", "exact")
    speech = load_settings(tmp_path).speech
    assert (speech.asr.batch_size, speech.diarization.speaker_count) == (8, "at_least")


def test_overrides_apply_on_top_of_the_file_and_later_ones_win(tmp_path: Path) -> None:
    from pipeline.settings import SettingsOverrides

    (tmp_path / "pyproject.toml").write_text('[tool.rescue.speech.asr]\nmodel = "base"\nbatch_size = 4\n')
    environment = SettingsOverrides.of("speech.asr", {"batch_size": "2", "language": None})
    flags = SettingsOverrides.of("speech.asr", {"batch_size": 3, "device": "cpu"})
    asr = load_settings(tmp_path, environment).speech.asr
    assert (asr.model, asr.batch_size, asr.language) == ("base", 2, "en")  # None = not given
    asr = load_settings(tmp_path, environment | flags).speech.asr
    assert (asr.model, asr.batch_size, asr.device) == ("base", 3, "cpu")
    assert load_settings(tmp_path).speech.asr.batch_size == 4  # the file is read afresh, untouched


def test_a_bad_override_is_named_as_an_override_not_as_the_file(tmp_path: Path) -> None:
    from pipeline.settings import SettingsOverrides

    (tmp_path / "pyproject.toml").write_text("[tool.rescue.ingest]\nkeyframe_interval = 2.5\n")
    with pytest.raises(RescueError) as caught:
        load_settings(tmp_path, SettingsOverrides.of("speech.asr", {"batch_size": "many"}))
    assert "settings override speech.asr.batch_size='many'" in caught.value.message
    assert "speech.asr.batch_size" in caught.value.message and "pyproject.toml" not in caught.value.message
    assert "RESCUE_ASR_" in (caught.value.fix or "")


def test_the_cli_reads_the_documented_variables_at_its_edge() -> None:
    from pipeline.cli.options import environment_overrides

    found = environment_overrides({"RESCUE_ASR_BATCH_SIZE": "2", "RESCUE_ASR_MODEL": "",  # empty = unset
                                   "RESCUE_DIARIZATION_SPEAKER_COUNT": "exact", "RESCUE_ASR_NOT_A_KEY": "x",
                                   "HF_TOKEN": "hf_secret"})
    assert dict(found.values) == {"speech.asr.batch_size": "2", "speech.diarization.speaker_count": "exact"}


def test_a_bad_variable_stops_the_command_with_its_name(project: Project) -> None:
    from pipeline.cli import main

    result = CliRunner().invoke(main, ["--root", str(project.root), "status"],
                                env={"RESCUE_DIARIZATION_SPEAKER_COUNT": "some"})
    assert result.exit_code == 1, result.output
    assert "settings override speech.diarization.speaker_count='some'" in result.output
    assert "RESCUE_DIARIZATION_" in result.output


def test_a_pool_worker_applies_the_overrides_its_job_carries(project: Project,
                                                              add_video: Callable[..., CatalogEntry]) -> None:
    """Two sessions ingested by a process pool (`-j 2`): each worker reloads settings from the root and applies
    the job's overrides; nothing is put in the environment for it to inherit."""
    from pipeline.executors.base import SessionJob
    from pipeline.executors.local import LocalExecutor
    from pipeline.settings import SettingsOverrides

    entries = [add_video("a", 4.0), add_video("b", 4.0)]
    overrides = SettingsOverrides.of("ingest", {"keyframe_interval": 1.0})  # default 10 s: one frame for 4 s
    before = dict(os.environ)
    jobs = [SessionJob(project.root, "ingest", entry, "wanted", overrides) for entry in entries]
    runs = LocalExecutor(jobs=2).run(jobs, on_done=lambda run: None, on_progress=lambda *args: None)
    assert [run.status for run in runs] == ["done", "done"], [run.error for run in runs]
    assert dict(os.environ) == before
    for entry in entries:
        media = SessionMedia.model_validate_json(
            (project.session_dir("media", entry.session_id) / "media.json").read_text(encoding="utf-8"))
        assert [frame.time for frame in media.keyframes] == [0.5, 1.5, 2.5, 3.5]
    default = LocalExecutor().run([SessionJob(project.root, "ingest", entries[0], "wanted")],
                                  on_done=lambda run: None, on_progress=lambda *args: None)
    assert default[0].status == "done"
    media = SessionMedia.model_validate_json(
        (project.session_dir("media", "a") / "media.json").read_text(encoding="utf-8"))
    assert len(media.keyframes) == 1  # without overrides the job gets the file's (default) settings
