"""`rescue status` computes whether every step is up to date without running anything, and says why (issue 21).

Real components: the sample corpus after its first build (`corpus_copy`: the real speech stages, a real Label
Studio server that the build starts and stops), the real agreement, gold and freeze code.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from click.testing import CliRunner, Result

from pipeline.cli import main
from pipeline.step import Inputs, judge
from pipeline.engine.steps import CORPUS_STEPS
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.store import StepRun
from tests.conftest import tree_digest


def rescue(project: Project, *args: str) -> Result:
    return CliRunner().invoke(main, ["--root", str(project.root), *args])


def corpus_states(project: Project) -> dict[str, tuple[str, str]]:
    result = rescue(project, "status", "--json")
    assert result.exit_code == 0, result.output
    return {row["step"]: (row["state"], row["reason"]) for row in json.loads(result.output)["corpus"]}


def test_status_says_which_corpus_steps_a_settings_change_makes_stale_without_running_them(
        corpus_copy: Project) -> None:
    project = corpus_copy  # the sample corpus after its first build (tests/corpus_fixtures.py), a private copy
    built = rescue(project, "build")
    assert built.exit_code == 0, built.output
    assert {state for state, _ in corpus_states(project).values()} == {"done"}, corpus_states(project)

    (project.root / "pyproject.toml").write_text("[tool.rescue.agreement]\nseed = 424242\n", encoding="utf-8")
    before = tree_digest(project.build)
    states = corpus_states(project)
    assert tree_digest(project.build) == before  # status ran nothing and wrote nothing
    for step in ("adjudicate", "agree", "gold"):  # the steps that read [tool.rescue.agreement]
        state, reason = states[step]
        assert state == "stale", (step, states)
        assert reason == "changed since its last run: settings [tool.rescue.agreement]", (step, reason)
    # the steps before them do not read it; freeze reads the agreement report, which has not changed yet
    for step in ("server", "push", "pull", "freeze"):
        assert states[step] == ("done", ""), (step, states)
    printed = rescue(project, "status")
    assert printed.exit_code == 0, printed.output
    assert "agree: changed since its last run: settings [tool.rescue.agreement]" in printed.output

    rebuilt = rescue(project, "build")
    assert rebuilt.exit_code == 0, rebuilt.output
    for step in ("adjudicate", "agree", "gold"):  # adjudicate's own inputs changed: it opens the server again
        assert f"{step}: ran" in rebuilt.output, (step, rebuilt.output)
    assert {state for state, _ in corpus_states(project).values()} == {"done"}

    tasks = project.build / "adjudication" / "tasks.json"  # which task adjudicates which row: the report links them
    linked = json.loads(tasks.read_text(encoding="utf-8"))
    assert linked["tasks"], linked  # the sample's disputes were queued for adjudication
    row = next(iter(linked["tasks"]))
    linked["tasks"][row] += 1000  # a row asked again: a newer adjudication task
    tasks.write_text(json.dumps(linked), encoding="utf-8")
    assert corpus_states(project)["agree"] == (
        "stale", "changed since its last run: the adjudication tasks (the report links them)")

    gold = project.build / "gold" / "benchmark.jsonl"
    gold.write_bytes(gold.read_bytes() + b"\n")  # an output edited behind the build's back
    state, reason = corpus_states(project)["gold"]
    assert state == "stale" and reason == "outputs missing or changed: build/gold/benchmark.jsonl", reason


def test_corpus_steps_wait_for_rows_before_any_build(project: Project) -> None:
    states = corpus_states(project)
    assert list(states) == list(CORPUS_STEPS)  # the product's steps: no stored-sample session in the catalog
    assert "sample-annotations" not in states and "sample-adjudications" not in states
    assert set(states.values()) == {("blocked", "no catalog session has transcript rows yet")}


def test_the_one_rule_names_the_input_that_changed() -> None:
    before = Inputs("agree", "2", {"annotations": "a", "settings": {"seed": 1}, "schema": "s"}, ("agreement",))
    run = StepRun(step="agree", status="done", fingerprint=before.fingerprint(), input_digests=before.digests())
    assert judge(run, before) == ("done", "")
    after = Inputs("agree", "2", {"annotations": "b", "settings": {"seed": 2}, "schema": "s"}, ("agreement",))
    assert judge(run, after) == ("stale", "changed since its last run: the annotation snapshot, "
                                          "settings [tool.rescue.agreement]")
    assert judge(run, before, ["build/agreement/report.json"]) == (
        "stale", "outputs missing or changed: build/agreement/report.json")
    assert judge(None, before) == ("pending", "it never ran")
    failed = StepRun(step="agree", status="failed", error="no annotation snapshot")
    assert judge(failed, before) == ("failed", "no annotation snapshot")
    older = run.model_copy(update={"input_digests": {}})  # a run recorded before per-input digests
    assert judge(older, after)[1].startswith("its inputs changed (the annotation snapshot, settings")


def test_a_session_step_says_which_settings_section_changed(project: Project,
                                                            add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    built = rescue(project, "build", "--only", "ingest")
    assert built.exit_code == 0, built.output
    (project.root / "pyproject.toml").write_text("[tool.rescue.ingest]\nkeyframe_interval = 5.0\n", encoding="utf-8")
    status = json.loads(rescue(project, "status", "--json").output)
    (row,) = [r for r in status["sessions"] if r["stage"] == "ingest"]
    assert row["state"] == "stale" and row["reason"] == "changed since its last run: settings [tool.rescue.ingest]"
    (later,) = [r for r in status["sessions"] if r["stage"] == "transcribe"]
    assert later["state"] == "pending"  # its upstream is done (stale, not failed): it would run after ingest
