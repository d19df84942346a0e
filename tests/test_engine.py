"""The one build engine (issue 10, item 1): `--only`, unknown step names, a failing session that holds back
only what depends on it, state of an earlier build read as it is, damaged outputs re-run, the step graph
generated from the declarations, and one freeze implementation with one set of defaults.

Real components throughout: the sample sessions built once through the real speech stages
(`built_samples`), a real Label Studio server the build starts and stops (seeded from the tests' migrated
template), the real agreement, gold and freeze code.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.engine.graph import mermaid
from pipeline.engine.plan import plan
from pipeline.engine.steps import CORPUS_STEPS, SESSION_STEPS, STEPS, registry
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.speech import diarize
from pipeline.transcripts import read_rows, rows_path
from tests.labelstudio_fixtures import REPO
from tests.speech_fixtures import COUPLE, FAMILY

UNMAPPED = "more/maya_and_daniel_unnamed"


def rescue(project: Project, *args: str) -> Result:
    return CliRunner().invoke(main, ["--root", str(project.root), *args])


# -- the plan ---------------------------------------------------------------------------------------------------

def test_only_plans_the_named_steps_and_everything_upstream_of_them() -> None:
    assert plan(["rows"]) == ["ingest", "transcribe", "diarize", "rows"]
    assert plan(["diarize"]) == ["ingest", "diarize"]
    # agree comes after the adjudication round trip: its acceptance section compares drafts with the gold
    assert plan(["agree"]) == [*SESSION_STEPS, "server", "push", "pull", "adjudicate", "agree"]
    assert plan(["freeze"]) == [step for step in STEPS if step != "agree"] and plan() == list(STEPS)
    # the product's registry: the demo's stored-sample steps are an extension of the sample's projects
    assert set(CORPUS_STEPS) == {"server", "push", "pull", "agree", "adjudicate", "gold", "freeze"}


def test_a_sample_project_gets_the_stored_sample_steps_in_their_place(sample_project: Project) -> None:
    sample = registry(item.entry for item in load_catalog(sample_project))
    assert plan(["agree"], sample.steps) == [*SESSION_STEPS, "server", "push", "sample-annotations", "pull",
                                             "adjudicate", "sample-adjudications", "agree"]
    assert plan(["freeze"], sample.steps) == [step for step in sample.steps if step != "agree"]
    assert sample.corpus == ("server", "push", "sample-annotations", "pull", "adjudicate", "sample-adjudications",
                             "agree", "gold", "freeze")
    drawn = rescue(sample_project, "graph")
    assert drawn.exit_code == 0 and drawn.output == mermaid(sample.steps), drawn.output
    for edge in ("push --> sample_annotations", "sample_annotations --> pull", "adjudicate --> sample_adjudications",
                 "sample_adjudications --> agree", "sample_adjudications --> gold"):
        assert edge in drawn.output, (edge, drawn.output)


def test_a_real_project_has_no_stored_sample_steps(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)  # a catalog session that is none of the stored sample's
    assert registry(item.entry for item in load_catalog(project)).steps == STEPS
    drawn = rescue(project, "graph")
    assert drawn.exit_code == 0 and drawn.output == mermaid(), drawn.output
    assert "sample_annotations" not in drawn.output and "sample_adjudications" not in drawn.output
    status = rescue(project, "status", "--json")
    assert status.exit_code == 0, status.output
    assert [row["step"] for row in json.loads(status.output)["corpus"]] == list(CORPUS_STEPS)
    unknown = rescue(project, "build", "--only", "sample-annotations")
    assert unknown.exit_code != 0 and "unknown step(s): sample-annotations" in unknown.output, unknown.output


def test_only_runs_exactly_the_named_session_step(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    result = rescue(project, "build", "--only", "ingest")
    assert result.exit_code == 0, result.output
    assert "ingest: 1 ran, 0 up to date, 0 failed" in result.output
    assert "transcribe:" not in result.output and "push:" not in result.output and "corpus steps" not in result.output
    assert (project.build / "media" / "a" / "media.json").is_file()
    assert not (project.build / "asr").exists() and not (project.build / "state" / "corpus").exists()


def test_only_reruns_a_stale_step_and_leaves_its_up_to_date_upstream(copy_built: Callable[..., Project]) -> None:
    project = copy_built(clips=False)  # a rows setting changed: rows is stale, its upstream steps are not
    result = rescue(project, "build", "--only", "rows")
    assert result.exit_code == 0, result.output
    for step in ("ingest", "transcribe", "diarize"):
        assert f"{step}: 0 ran, 2 up to date, 0 failed, 0 waiting" in result.output, step
    assert "rows: 2 ran, 0 up to date, 0 failed, 0 waiting" in result.output
    assert "push:" not in result.output and "corpus steps not run" not in result.output


def test_an_unknown_step_name_is_a_clear_error_listing_the_steps(project: Project,
                                                                 add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 3.0)
    result = rescue(project, "build", "--only", "ingest", "--only", "transcibe")
    assert result.exit_code == 1
    assert "error: unknown step(s): transcibe" in result.output
    assert "ingest, transcribe, diarize, rows, preannotate, server, push" in result.output and "rescue graph" in result.output
    assert not (project.build / "media").exists()  # nothing ran, nothing written


# -- state, fingerprints, damaged outputs -----------------------------------------------------------------------

def _as_first_engine_wrote_it(path: Path) -> None:
    """A per-session state file in the format of the first engine (StageRun: `stage`, traceback in `detail`,
    outputs with size and sha256 only)."""
    data = json.loads(path.read_text())
    old = {"stage": data["step"], "session_id": data["session_id"], "fingerprint": data["fingerprint"],
           "status": data["status"],
           "outputs": [{k: o[k] for k in ("path", "size", "sha256")} for o in data["outputs"]],
           "inputs": data["inputs"], "error": data["error"], "detail": data["traceback"],
           "code_version": data["code_version"], "finished_at": data["finished_at"], "elapsed_s": data["elapsed_s"]}
    path.write_text(json.dumps(old, indent=2) + "\n")


def test_state_of_an_earlier_build_is_read_as_it_is_and_nothing_reruns(copy_built: Callable[..., Project]) -> None:
    project = copy_built()
    for path in (project.build / "state").rglob("*.json"):
        _as_first_engine_wrote_it(path)
    asr = {p: p.stat().st_mtime_ns for p in (project.build / "asr").rglob("*") if p.is_file()}
    result = rescue(project, "build", "--no-annotation")
    assert result.exit_code == 0, result.output
    assert "Nothing to do: all 2 session(s) are up to date." in result.output
    assert {p: p.stat().st_mtime_ns for p in (project.build / "asr").rglob("*") if p.is_file()} == asr
    status = json.loads(rescue(project, "status", "--json").output)
    states = {row["stage"]: set() for row in status["sessions"]}
    for row in status["sessions"]:
        states[row["stage"]].add(row["state"])
    # --no-annotation leaves the drafts for annotators (preannotate) to the next full build
    assert states.pop("preannotate") == {"pending"} and set().union(*states.values()) == {"done"}
    # migrated on the way: the outputs, found intact by hash, now carry their mtimes (later checks only stat)
    record = json.loads((project.build / "state" / "transcribe" / f"{COUPLE}.json").read_text())
    assert record["step"] == "transcribe" and all(o["mtime_ns"] > 0 for o in record["outputs"])


def test_a_damaged_output_of_the_same_size_reruns_its_step(copy_built: Callable[..., Project]) -> None:
    project = copy_built()
    rows = rows_path(project, COUPLE)
    good = rows.read_bytes()
    index = good.index(b'"text":"') + len(b'"text":"')
    damaged = good[:index] + (b"X" if good[index:index + 1] != b"X" else b"Y") + good[index + 1:]
    rows.write_bytes(damaged)  # same size: only the content tells
    status = json.loads(rescue(project, "status", "--json").output)
    (row,) = [r for r in status["sessions"] if r["stage"] == "rows" and r["session_id"] == COUPLE]
    assert row["state"] == "stale" and "outputs" in row["reason"]
    result = rescue(project, "build", "--only", "rows")
    assert result.exit_code == 0, result.output
    assert "rows: 1 ran, 1 up to date, 0 failed" in result.output
    assert rows.read_bytes() == good  # rebuilt: the same rows as before the damage


# -- a session that fails holds back only what depends on it -----------------------------------------------------

def _add_unnamed_copy(project: Project) -> None:
    """The couple sample again, with subtitles that name no speaker: no confident speaker mapping, so its
    rows step fails until someone writes raw_video/speaker_maps/<session>.toml."""
    folder = project.raw_video / "more"
    folder.mkdir()
    shutil.copyfile(project.raw_video / "sample" / "maya_and_daniel.mp4", folder / "maya_and_daniel_unnamed.mp4")
    text = (project.raw_video / "sample" / "maya_and_daniel.srt").read_text(encoding="utf-8")
    (folder / "maya_and_daniel_unnamed.srt").write_text(re.sub(r"(?m)^(Therapist|Maya|Daniel): ", "", text),
                                                        encoding="utf-8")
    added = rescue(project, "add-session", str(folder / "maya_and_daniel_unnamed.mp4"), "--id", UNMAPPED,
                   "--scenario", "couple", "-p", "Maya", "-p", "Daniel",
                   "--subtitles", str(folder / "maya_and_daniel_unnamed.srt"))
    assert added.exit_code == 0, added.output


def _map_speakers(project: Project, session_id: str) -> None:
    """The mapping a person would write: every diarization label to a catalog name."""
    record = diarize.read_diarization(project, session_id)
    labels = sorted({turn.label for turn in diarize.read_turns(project, session_id)})
    names = ["Maya", "Daniel", "Therapist"]
    lines = [f'session_id = "{session_id}"', f'diarization_sha256 = "{record.turns_sha256}"', "[labels]"]
    lines += [f'{label} = "{names[i % len(names)]}"' for i, label in enumerate(labels)]
    path = project.raw_video / "speaker_maps" / f"{session_id}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def corpus_with_unmapped(corpus_copy: Project) -> Project:
    """The built corpus (its first build is the suite's one, tests/corpus_fixtures.py) and a session added to it
    that cannot be named, as in a researcher's second week."""
    _add_unnamed_copy(corpus_copy)
    return corpus_copy


def test_a_session_without_its_speaker_mapping_holds_back_only_itself(corpus_with_unmapped: Project) -> None:
    project = corpus_with_unmapped
    result = rescue(project, "build")
    output = result.output
    assert result.exit_code == 1, output  # a session failed: said, and the exit status says so
    assert "rows: 0 ran, 2 up to date, 1 failed, 0 waiting" in output
    assert f"failed {UNMAPPED}: session {UNMAPPED}: no confident name" in output
    assert "corpus steps not run" not in output and "fix the failed sessions first" not in output
    # the corpus steps ran for the two ready sessions, without the failed one: push looked at every project, gold
    # was made again (a session is pending now), and what did not change for them stands
    assert "push: ran - 0 task(s) imported" in output and f"no rows yet: {UNMAPPED}" in output
    assert "pull: up to date" in output and "gold: ran - 2 session(s)" in output
    assert "freeze: up to date - release v1: 2 session(s)" in output
    assert re.search(rf"waiting: {re.escape(UNMAPPED)} waits at rows \(failed: the error above\); left out of "
                     r"push, .*freeze until it has rows", output), output
    assert output.count("no confident name") == 1  # the stop is printed once (issue 22), its evidence below it
    assert re.search(r"(?m)^    SPEAKER_\d+: .* of speech", output), output
    assert f"{UNMAPPED}: no transcript rows yet" in output  # listed as pending, never left out silently
    manifest = json.loads((project.build / "release" / "v1" / "MANIFEST.json").read_text())
    assert manifest["gold"]["sessions"] == 2
    gold = [json.loads(line)["sample_id"] for line in (project.build / "gold" / "benchmark.jsonl").open()]
    assert sorted(gold) == sorted([COUPLE, FAMILY])

    status = json.loads(rescue(project, "status", "--json").output)
    (waiting,) = status["waiting"]
    assert waiting["session_id"] == UNMAPPED and waiting["step"] == "rows" and waiting["state"] == "failed"
    assert "no confident name" in waiting["reason"] and not waiting["has_rows"]
    assert {"push", "pull", "agree", "gold", "freeze"} <= set(waiting["holds_back"])
    assert {"sessions", "not_in_catalog", "corpus", "labelstudio", "shared_videos"} <= set(status)

    # once its speakers are mapped, the next build picks it up: rows, then its tasks are pushed
    _map_speakers(project, UNMAPPED)
    again = rescue(project, "build")
    assert again.exit_code == 0, again.output
    assert "rows: 1 ran, 2 up to date, 0 failed" in again.output
    imported = len(read_rows(project, UNMAPPED))
    assert imported and re.search(r"push: ran - \d+ task\(s\) imported \(couple \d+, family 0\)", again.output)
    assert f"{UNMAPPED}: no annotations pulled yet" in again.output and "waiting:" not in again.output
    assert "freeze: up to date - release v1: 2 session(s)" in again.output


# -- the graph and its page ------------------------------------------------------------------------------------

def test_the_architecture_page_shows_the_graph_generated_from_the_declarations() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"```mermaid\n(.*?)```", page, re.S)
    assert found, "docs/architecture.md has no mermaid block"
    assert found[1] == mermaid(), "docs/architecture.md is stale: paste the output of `rescue graph`"
    printed = CliRunner().invoke(main, ["graph"])
    assert printed.exit_code == 0 and printed.output == mermaid()
    for step in STEPS.values():
        for upstream in step.after:
            assert f"{upstream.replace('-', '_')} --> {step.name.replace('-', '_')}" in printed.output


# -- one freeze, one set of defaults -----------------------------------------------------------------------------

def test_freezing_a_gold_file_takes_the_builds_release_defaults(project: Project) -> None:
    from tests.release_inputs import gold_sessions
    from tests.release_inputs import write_gold

    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    (project.root / "pyproject.toml").write_text('[tool.rescue.build]\nrelease_version = "r9"\n'
                                                 'release_license = "cc-by-nc-4.0"\n')
    gold = write_gold(project.root / "published.jsonl", gold_sessions())
    result = rescue(project, "freeze", "--gold", str(gold))
    assert result.exit_code == 0, result.output
    manifest = json.loads((project.build / "release" / "r9" / "MANIFEST.json").read_text())
    assert manifest["license"] == "cc-by-nc-4.0" and manifest["provenance"]["gold_source"] == "published.jsonl"
    assert not (project.build / "release" / "v1").exists()


def test_file_only_freeze_options_without_a_gold_file_are_refused(project: Project) -> None:
    result = rescue(project, "freeze", "--strict", "--snapshot", "s1")
    assert result.exit_code == 1
    assert "--strict, --snapshot only apply to freezing a gold file (`rescue freeze --gold FILE`)" in result.output
    assert "[tool.rescue.build]" in result.output and not (project.build / "release").exists()
