"""The freeze step of `rescue build` (issue 9, section 4): "up to date" only when the release on disk is
the one the build made from the current gold, a damaged release is rebuilt (the old copy kept), and an
empty gold file makes the step wait.

The step runs on a small project holding only what freeze reads (schemas, settings, a gold file and the
pull step's record); the gold sessions are the hand-made ones of tests/test_release.py. The whole chain
with real media and a real Label Studio is tests/test_corpus_build.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.corpus.context import CorpusContext
from pipeline.corpus.release_step import freeze_step
from pipeline.corpus.state import StepState, write_state
from pipeline.project import Project
from tests.test_release import gold_sessions
from tests.test_release_trust import write_gold

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def corpus(project: Project) -> Project:
    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    # hand-made gold: no transcript rows, so no clips (tests/test_release_media.py packs real ones)
    (project.root / "pyproject.toml").write_text("[tool.rescue.agreement]\ntext_similarity = false\n"
                                                 "[tool.rescue.build]\nrelease_media = false\n")
    write_state(project, StepState(step="pull", status="done", detail={"snapshot": "20261130T100000Z"}))
    (project.build / "gold").mkdir(parents=True)
    write_gold(project.build / "gold" / "benchmark.jsonl", gold_sessions())
    return project


def freeze(project: Project) -> tuple[Path | None, str]:
    ctx = CorpusContext.load(project)
    release = freeze_step(ctx)
    (outcome,) = ctx.outcomes
    return release, f"{outcome.status} - {outcome.message} {' '.join(outcome.notes)}"


def sessions_in(release: Path) -> int:
    return json.loads((release / "MANIFEST.json").read_text())["gold"]["sessions"]


def test_a_forced_freeze_of_other_gold_is_not_up_to_date(corpus: Project) -> None:
    release, said = freeze(corpus)
    assert release is not None and said.startswith("ran - release v1: 2 session(s)")
    assert freeze(corpus)[1].startswith("up to date - release v1: 2 session(s)")
    one = write_gold(corpus.root / "one.jsonl", gold_sessions()[:1])
    forced = CliRunner().invoke(main, ["--root", str(corpus.root), "freeze", "--gold", str(one), "--force"])
    assert forced.exit_code == 0, forced.output
    assert sessions_in(release) == 1

    _, said = freeze(corpus)
    assert said.startswith("ran - release v1: 2 session(s)") and sessions_in(release) == 2
    kept = sorted((corpus.build / "release" / "superseded").iterdir())
    assert sorted(sessions_in(k) for k in kept) == [1, 2]       # both earlier releases kept
    assert "the previous v1 was kept as build/release/superseded/" in said


def test_a_release_whose_manifest_was_edited_is_rebuilt_and_the_copy_kept(corpus: Project) -> None:
    release, _ = freeze(corpus)
    assert release is not None
    manifest = json.loads((release / "MANIFEST.json").read_text())
    manifest["gold"]["sessions"] = 7
    (release / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    _, said = freeze(corpus)
    assert said.startswith("ran - release v1: 2 session(s)") and sessions_in(release) == 2
    (kept,) = (corpus.build / "release" / "superseded").iterdir()
    assert sessions_in(kept) == 7                                  # the edited copy is kept, not deleted


def test_freeze_waits_while_no_session_has_gold(corpus: Project) -> None:
    (corpus.build / "gold" / "benchmark.jsonl").write_text("")
    release, said = freeze(corpus)
    assert release is None and said.startswith("waiting - no session has complete gold yet")
    assert not (corpus.build / "release").exists()
