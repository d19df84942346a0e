"""The freeze step of `rescue build` (issue 9, section 4): "up to date" only when the release on disk is
the one the build made from the current gold, a damaged release is rebuilt (the old copy kept), and an
empty gold file makes the step wait.

The step runs on a small project holding only what freeze reads (schemas, settings, a gold file and the
pull step's record); the gold sessions are the hand-made ones of tests/release_inputs.py. The whole chain
with real media and a real Label Studio is tests/test_corpus_build.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from pipeline.cli import main
from pipeline.cli.corpus import print_corpus_report
from pipeline.engine.corpus_run import CorpusReport
from pipeline.engine.context import StepContext, StepOutcome
from pipeline.corpus.release_step import freeze_step
from pipeline.engine.state import write_state
from pipeline.store import StepRun as StepState
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.settings import SettingsOverrides
from tests.conftest import tree_digest
from tests.freeze_project import freeze, hand_made_gold_project
from tests.release_inputs import gold_sessions, write_gold

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def corpus(project: Project) -> Project:
    return hand_made_gold_project(project)


def sessions_in(release: Path) -> int:
    return json.loads((release / "MANIFEST.json").read_text())["gold"]["sessions"]


def test_a_forced_freeze_of_other_gold_is_not_up_to_date(corpus: Project) -> None:
    release, said = freeze(corpus)
    assert release is not None and said.startswith("ran - release v1: 2 session(s)")
    assert freeze(corpus)[1].startswith("up to date - release v1: 2 session(s)")
    one = write_gold(corpus.root / "one.jsonl", gold_sessions()[:1])
    forced = CliRunner().invoke(main, ["--root", str(corpus.root), "freeze", "--gold", str(one), "--force",
                                       "--allow-shrink"])
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


# -- issue 19: a release never shrinks unless asked; identical gold keeps it; a waiting step says what it holds --
def test_the_build_step_refuses_gold_with_fewer_sessions_and_leaves_the_release(corpus: Project) -> None:
    release, _ = freeze(corpus)
    assert release is not None
    before = tree_digest(release)
    write_gold(corpus.build / "gold" / "benchmark.jsonl", gold_sessions()[:1])   # a session lost its gold
    lost = sorted({s.sample_id for s in gold_sessions()[1:]})
    with pytest.raises(RescueError) as refused:
        freeze(corpus)
    said = refused.value.message
    assert said.startswith("release v1 not replaced: the new one would hold less") and all(s in said for s in lost)
    assert "instances RPP 5 -> 3 (-2)" in said and "the existing release is left as it is" in said
    assert "`rescue freeze --allow-shrink`" in refused.value.fix and "pending sessions" in refused.value.fix
    assert tree_digest(release) == before and not (corpus.build / "release" / "superseded").exists()

    _, said = freeze(corpus, SettingsOverrides.of("build", {"allow_shrink": True}))   # `rescue freeze --allow-shrink`
    assert said.startswith("ran - release v1: 1 session(s)") and sessions_in(release) == 1
    assert f"allow_shrink: session(s) {', '.join(lost)} would leave the release" in said
    (kept,) = (corpus.build / "release" / "superseded").iterdir()
    assert tree_digest(kept) == before


def test_identical_gold_under_a_new_snapshot_name_keeps_the_release(corpus: Project) -> None:
    release, _ = freeze(corpus)
    assert release is not None
    before = tree_digest(release)
    # rows re-cut and cut back: a new snapshot (and a new freeze fingerprint), byte-identical gold
    write_state(corpus, StepState(step="pull", status="done", detail={"snapshot": "20261201T090000Z"}))
    (corpus.build / "state" / "corpus" / "freeze.json").unlink()
    _, said = freeze(corpus)
    assert said.startswith("up to date - release v1: 2 session(s)"), said
    assert tree_digest(release) == before and not (corpus.build / "release" / "superseded").exists()
    manifest = json.loads((release / "MANIFEST.json").read_text())
    assert manifest["provenance"]["annotation_snapshots"] == ["20261130T100000Z"]   # where that gold came from


def test_a_waiting_freeze_says_what_the_existing_release_holds(corpus: Project) -> None:
    release, _ = freeze(corpus)
    assert release is not None
    before = tree_digest(release)
    (corpus.build / "gold" / "benchmark.jsonl").write_text("")
    got, said = freeze(corpus)
    names = ", ".join(sorted(s.sample_id for s in gold_sessions()))
    assert got is None and said.startswith("waiting - no session has complete gold yet: release v1 not refreshed, "
                                           "kept as it is -> build/release/v1/ (verifies): 2 session(s) "
                                           f"({names}), instances ER "), said
    assert "RPP 5" in said and tree_digest(release) == before
    shown = io.StringIO()
    print_corpus_report(Console(file=shown, width=400), CorpusReport(steps=tuple(ctx_outcomes(corpus))))
    assert "not frozen yet" not in shown.getvalue()
    assert "release: no session has complete gold yet: release v1 not refreshed, kept as it is -> " \
           "build/release/v1/ (verifies): 2 session(s)" in shown.getvalue(), shown.getvalue()


def ctx_outcomes(project: Project) -> list[StepOutcome]:
    ctx = StepContext.load(project)
    freeze_step(ctx)
    return ctx.outcomes
