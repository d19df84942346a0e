"""The hand-made release (pytest plugin, registered in tests/conftest.py): the gold sessions of
tests/release_inputs.py frozen once per test module, for the evaluate, run-model, judge and leaderboard tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.tasks.release import freeze_release
from pipeline.tasks.settings import TaskSettings
from tests.release_inputs import PROVENANCE, SCHEMA, gold_sessions


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "v1"
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    return out
