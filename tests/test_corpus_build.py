"""`rescue build` end to end on the two sample sessions (issue 6, part 6) and adding a session (part 8).

Real components throughout: the sample sessions built once through the real speech stages
(`built_samples`), a real Label Studio server that the build itself starts and stops (its database
seeded from the tests' migrated template so the start takes seconds, not the ~70 s first migration),
the stored sample annotation export of `pipeline/sample/annotations/`, the real agreement, gold and
freeze code. The first build runs once per test run (`built_corpus`, tests/corpus_fixtures.py); every
other test starts from its own copy of the project it left (`corpus_copy`), as a researcher's next
`rescue build` does, so each test also runs alone.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agreement.gold import FieldProvenance
from pipeline.annotate import server
from pipeline.annotate.labelstudio import Client
from pipeline.annotate.results import encode
from pipeline.benchmark_format import BenchmarkSession
from pipeline.cli import main
from pipeline.annotate.stored import MIN_IOU
from pipeline.project import Project
from pipeline.sample.annotators import ADJUDICATOR, ANNOTATORS
from pipeline.sample.row_answers import reference_answers, sample_truth
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from pipeline.tasks.instances import TASKS
from pipeline.transcripts import read_rows
from tests.conftest import tree_digest
from tests.corpus_fixtures import BuiltCorpus, build, instance_lines
from tests.labelstudio_fixtures import REPO, LiveServer
from tests.speech_fixtures import COUPLE, FAMILY

NEW_SESSION = "more/maya_and_daniel_again"
RECORDING = json.loads((REPO / "pipeline" / "sample" / "annotations" / "recording.json").read_text())


@pytest.fixture
def corpus(corpus_copy: Project) -> Project:
    """A private copy of the corpus after its first build (tests/corpus_fixtures.py): each test starts from it."""
    return corpus_copy


def test_build_runs_the_whole_chain_and_freezes_a_verified_release(built_corpus: BuiltCorpus) -> None:
    corpus, output = built_corpus.project, built_corpus.first_build_output  # the suite's one first build
    stored = sum(s["annotations"] for s in RECORDING["sessions"].values())
    couple, family, team = len(read_rows(corpus, COUPLE)), len(read_rows(corpus, FAMILY)), len(ANNOTATORS)
    # the speech stages were built by the fixture (--no-annotation); the drafts for annotators are made now
    assert "rows: 0 ran, 2 up to date" in output and "preannotate: 2 ran, 0 up to date, 0 failed" in output
    # Row edges (so row ids) depend on the CPU the ASR ran on: stored rows may be re-anchored, never left out.
    applied = re.search(rf"sample-annotations: ran - {stored} stored annotation\(s\) re-created on 2 sample "
                        r"session\(s\) \((\d+) re-anchored, 0 rows not placed\)", output)
    assert applied, output
    record = json.loads((corpus.build / "state" / "corpus" / "sample-annotations.json").read_text())
    pairs = record["detail"]["applied"]["reanchored"]
    assert len(pairs) == int(applied[1]) and all(p["iou"] >= MIN_IOU for p in pairs)
    assert not re.search(r"re-anchored \S+ ->", output)  # one summary line, the pairs only in the record
    pushed = (f"push: ran - {team * (couple + family)} task(s) imported (couple {team * couple}, family "
              f"{team * family}), 0 already there, in the own projects of {team} annotator(s)")  # every row, each
    for line in ("server: ran - embedded server", pushed,
                 "pull: ran - snapshot", "agree: ran - 3 annotator(s), 45 row(s)",
                 "sample-adjudications: ran", "adjudicate: ran", "gold: ran - 2 session(s), 45 row(s)",
                 "freeze: ran - release v1: 2 session(s)", "agreement report: build/agreement/report.html",
                 "release: build/release/v1/ (2 session(s)"):
        assert line in output, line
    assert server.running(server.ServerPaths.of(corpus)) is None  # the build stopped the server it started

    release = corpus.build / "release" / "v1"
    verified = CliRunner().invoke(main, ["verify", str(release)])
    assert verified.exit_code == 0 and "intact" in verified.output, verified.output
    manifest = json.loads((release / "MANIFEST.json").read_text())
    for task in TASKS:
        assert manifest["instances"][task]["all"] > 0, task
        assert (release / "tasks" / f"{task}.jsonl").read_text().count("\n") == manifest["instances"][task]["all"]
    (snapshot,) = [p.name for p in (corpus.build / "annotations").iterdir()]
    assert manifest["provenance"]["annotation_snapshots"][0] == snapshot
    assert {m["role"] for m in manifest["provenance"]["models"]} >= {"asr", "diarization", "speaker embedding"}

    html = (corpus.build / "agreement" / "report.html").read_text()
    assert "Krippendorff" in html and snapshot in html
    report = json.loads((corpus.build / "agreement" / "report.json").read_text())
    assert tuple(report["annotators"]) == ANNOTATORS

    # Gold: settled by consensus or by the adjudicator, with provenance, and equal to the reference labels.
    provenance = read_jsonl(corpus.build / "gold" / "provenance.jsonl", FieldProvenance)
    adjudicated = [p for p in provenance if p.source == "adjudicated"]
    assert adjudicated and {p.adjudicator for p in adjudicated} == {ADJUDICATOR}
    assert all(len(p.agreeing) >= 2 for p in provenance if p.source == "consensus")
    schema = load_schema(corpus.schemas / "rescue-v1.yaml")
    gold = {s.sample_id: s for s in read_jsonl(corpus.build / "gold" / "benchmark.jsonl", BenchmarkSession)}
    assert set(gold) == {COUPLE, FAMILY}
    for session_id, session in gold.items():
        rows = read_rows(corpus, session_id)
        reference, _ = reference_answers(session_id, sample_truth(corpus, session_id), rows, schema)
        for row, gold_row in zip(rows, session.rows, strict=True):
            expected = reference[row.row_id]
            for name in ("primary_speaker", "target", "utterance_type", "relation_cycle_state",
                         "relation_cycle_evidence_rows", "dialogue_cleaned"):
                if name in expected:
                    assert getattr(gold_row, name) == expected[name], (session_id, row.row_index, name)


def test_second_build_does_no_work_and_says_so(corpus: Project) -> None:
    watched = ("release", "gold", "agreement", "annotations", "adjudication")
    before = {name: tree_digest(corpus.build / name) for name in watched}
    output = build(corpus)
    assert "Nothing to do: all 2 session(s) are up to date." in output
    assert "server: not needed - Label Studio's database is unchanged since the last build" in output
    assert "Nothing to do: every corpus step is up to date." in output
    assert "release: build/release/v1/" in output
    assert {name: tree_digest(corpus.build / name) for name in watched} == before


def rescue(project: Project, *args: str) -> str:
    result = CliRunner().invoke(main, ["--root", str(project.root), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_single_step_commands_are_the_builds_steps(corpus: Project) -> None:
    """`rescue push|pull|adjudicate|agree|gold` run `rescue build --only STEP`: the same plan, state and checks."""
    watched = ("release", "gold", "agreement", "annotations", "adjudication")
    before = {name: tree_digest(corpus.build / name) for name in watched}
    for step in ("push", "pull", "adjudicate", "agree", "gold"):
        output = rescue(corpus, step)
        assert f"{step}: up to date" in output, (step, output)
        assert "server: not needed - Label Studio's database is unchanged" in output, (step, output)
        assert "freeze:" not in output  # only the named step and what it needs
    assert {name: tree_digest(corpus.build / name) for name in watched} == before
    assert server.running(server.ServerPaths.of(corpus)) is None

    agree_state = (corpus.build / "state" / "corpus" / "agree.json").read_bytes()
    (snapshot,) = [p.name for p in (corpus.build / "annotations").iterdir()]
    output = rescue(corpus, "agree", "--snapshot", snapshot, "--bootstrap", "0")
    assert "standalone run (--snapshot): no build state recorded" in output
    assert (corpus.build / "state" / "corpus" / "agree.json").read_bytes() == agree_state

    (corpus.build / "agreement" / "report.html").unlink()  # damaged: the command reruns the step and records it
    output = rescue(corpus, "agree")
    assert "agree: ran" in output and "not what the last run wrote" in output
    assert (corpus.build / "agreement" / "report.html").is_file()
    assert (corpus.build / "state" / "corpus" / "agree.json").read_bytes() != agree_state
    again = build(corpus)  # the state the command recorded is the build's: nothing left to do
    assert "Nothing to do: every corpus step is up to date." in again and "agree: up to date" in again


def test_adding_a_session_runs_only_its_stages_and_joins_the_next_release(corpus: Project,
                                                                          labelstudio_template: Path) -> None:
    old_release = instance_lines(corpus.build / "release" / "v1")
    snapshots_before = sorted((corpus.build / "annotations").iterdir())
    folder = corpus.raw_video / "more"
    folder.mkdir()
    for suffix in (".mp4", ".srt"):
        shutil.copyfile(corpus.raw_video / "sample" / f"maya_and_daniel{suffix}",
                        folder / f"maya_and_daniel_again{suffix}")
    added = CliRunner().invoke(main, [
        "--root", str(corpus.root), "add-session", str(folder / "maya_and_daniel_again.mp4"), "--id", NEW_SESSION,
        "--scenario", "couple", "-p", "Maya", "-p", "Daniel", "--subtitles", str(folder / "maya_and_daniel_again.srt")])
    assert added.exit_code == 0, added.output

    output = build(corpus)
    for stage in ("ingest", "transcribe", "diarize", "rows"):
        assert f"{stage}: 1 ran, 2 up to date, 0 failed" in output, stage
    new_rows = read_rows(corpus, NEW_SESSION)
    imported = len(new_rows)
    team, before = len(ANNOTATORS), len(read_rows(corpus, COUPLE)) + len(read_rows(corpus, FAMILY))
    assert (f"push: ran - {team * imported} task(s) imported (couple {team * imported}, family 0), "
            f"{team * before} already there, in the own projects of {team} annotator(s)") in output
    assert f"{NEW_SESSION}: no annotations pulled yet" in output  # reported, and left out of the release
    # its tasks changed the server's exports, not what the annotators said: no new, identical snapshot (issue 22)
    assert "pull: up to date - the server's exports changed (tasks or drafts), its annotations did not" in output
    assert sorted((corpus.build / "annotations").iterdir()) == snapshots_before
    assert "freeze: up to date - release v1: 2 session(s)" in output

    live = LiveServer(corpus, server.ServerPaths.of(corpus), labelstudio_template)
    live.start()
    try:
        client = Client(live.connection)
        tasks = {}
        for annotator in ANNOTATORS:  # each labels in their own project
            info = client.find_project(f"RESCUE couple - rescue-v1 / {annotator}")
            assert info is not None
            tasks[annotator] = client.task_keys(info.id)
        ids = {email: user_id for user_id, email in client.users().items()}
        schema = load_schema(corpus.schemas / "rescue-v1.yaml")
        entities = schema.entities("couple", ("Maya", "Daniel"))
        answers, _ = reference_answers(NEW_SESSION, sample_truth(corpus, COUPLE), new_rows, schema, sample="couple")
        assert set(answers) == {row.row_id for row in new_rows}
        for row_id, values in answers.items():
            for annotator in ANNOTATORS:
                client.create_annotation(tasks[annotator][row_id][0], encode(schema, values, entities),
                                         completed_by=ids[annotator])
        output = build(corpus)
    finally:
        server.stop(live.paths)
    assert "pull: ran - snapshot" in output and "gold: ran - 3 session(s)" in output
    assert "freeze: ran - release v1: 3 session(s)" in output and "left out of the release" not in output
    (superseded,) = (corpus.build / "release" / "superseded").iterdir()
    assert f"the previous v1 was kept as build/release/superseded/{superseded.name}/" in output
    assert instance_lines(superseded) == old_release  # the frozen release is kept as it was

    release = corpus.build / "release" / "v1"
    assert CliRunner().invoke(main, ["verify", str(release)]).exit_code == 0
    new_release = instance_lines(release)
    for key, line in old_release.items():
        assert new_release.get(key) == line, key  # every instance of the previous release, unchanged
    added_ids = {key for key, line in new_release.items() if json.loads(line)["sample_id"] == NEW_SESSION}
    assert added_ids and {kind for kind, _ in added_ids} >= {"tasks/er", "tasks/itp"}
    assert set(new_release) == set(old_release) | added_ids


def test_no_annotation_stops_after_the_rows(corpus: Project) -> None:
    output = build(corpus, "--no-annotation")
    assert "corpus steps not run (--no-annotation)" in output and "push:" not in output


def test_a_failing_step_stops_the_build_with_one_line_and_the_fix(corpus: Project,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "not-a-real-token")
    result = CliRunner().invoke(main, ["--root", str(corpus.root), "build"])
    assert result.exit_code == 1
    assert "error: rescue build, step push: cannot reach Label Studio at http://127.0.0.1:9" in result.output
    assert "fix: check LABEL_STUDIO_URL" in result.output
    assert "Traceback" not in result.output and "not-a-real-token" not in result.output
    state = json.loads((corpus.build / "state" / "corpus" / "push.json").read_text())
    assert state["status"] == "failed" and "cannot reach Label Studio" in state["error"]
