"""The freeze step's small project: the schemas, settings without text similarity or media, a pull record and the
hand-made gold of tests/release_inputs.py; and the freeze step run on it. Helpers only, no tests."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.engine.context import StepContext
from pipeline.corpus.release_step import freeze_step
from pipeline.engine.state import write_state
from pipeline.store import StepRun
from pipeline.project import Project
from pipeline.settings import SettingsOverrides
from tests.release_inputs import REPO, gold_sessions, write_gold


def hand_made_gold_project(project: Project) -> Project:
    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    # hand-made gold: no transcript rows, so no clips (tests/test_release_media.py packs real ones)
    (project.root / "pyproject.toml").write_text("[tool.rescue.agreement]\ntext_similarity = false\n"
                                                 "[tool.rescue.build]\nrelease_media = false\n")
    write_state(project, StepRun(step="pull", status="done", detail={"snapshot": "20261130T100000Z"}))
    (project.build / "gold").mkdir(parents=True)
    write_gold(project.build / "gold" / "benchmark.jsonl", gold_sessions())
    return project


def freeze(project: Project, overrides: SettingsOverrides = SettingsOverrides()) -> tuple[Path | None, str]:
    ctx = StepContext.load(project, overrides)
    release = freeze_step(ctx)
    (outcome,) = ctx.outcomes
    return release, f"{outcome.status} - {outcome.message} {' '.join(outcome.notes)}"
