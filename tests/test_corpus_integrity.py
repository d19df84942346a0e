"""Nothing shrinks or sticks silently (issue 9, part 4), on the two sample sessions built through the real
speech stages, a real Label Studio server and the stored sample annotations, like tests/test_corpus_build.py.

The first build runs once per test run (`built_corpus`); each other test starts from its own copy of the
project it left (`corpus_copy`), as a researcher's next `rescue build` does, so each test also runs alone: a
damaged gold file is rebuilt; a new dispute on a row that already has an adjudication task reaches the
adjudicators; rows cut again re-anchor the live annotations by time overlap, and rows cut back give the
same gold again without a manual pull. Row ids come from ASR output, so no test names one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.annotate import server
from pipeline.annotate.labelstudio import Client
from pipeline.annotate.projects import annotator_title
from pipeline.benchmark_format import BenchmarkSession
from pipeline.catalog import load_catalog
from pipeline.cli import main
from pipeline.annotate.stored import MIN_IOU, iou, span_of
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.sample.annotators import ADJUDICATOR, ANNOTATORS
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from pipeline.transcripts import read_rows
from tests.conftest import tree_digest
from tests.corpus_fixtures import BuiltCorpus, build, instance_lines
from tests.labelstudio_fixtures import LiveServer
from tests.speech_fixtures import COUPLE, FAMILY

FAMILY_PROJECT = "RESCUE family - rescue-v1"


@pytest.fixture
def corpus(corpus_copy: Project) -> Project:
    """A private copy of the corpus after its first build (tests/corpus_fixtures.py): each test starts from it."""
    return corpus_copy


def build_tolerating_freeze(project: Project) -> str:
    """`rescue build` where only the freeze step may refuse: a build whose gold lost a session (part 1 of the
    issue decides whether freeze shrinks the release or stops); every step before it must succeed."""
    result = CliRunner().invoke(main, ["--root", str(project.root), "build"])
    assert result.exit_code == 0 or "step freeze" in result.output, result.output
    return result.output


def one_line(output: str) -> str:
    """The output with its line wrapping undone (the console wraps long error lines)."""
    return " ".join(output.split())


def superseded_folders(project: Project) -> list[str]:
    folder = project.build / "release" / "superseded"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def assert_counts_never_negative(output: str) -> None:
    """No count in the output is negative ("-2 queued field(s) settled" was), and the adjudicate line's
    settled fields are counted out of those queued."""
    assert not re.search(r"(?<![\w.>(])-\d+ \w", output), output
    settled = re.search(r"adjudicate: \w[\w ]* - (\d+) of (\d+) queued field\(s\) settled by the adjudicators' "
                        r"answers; (\d+) field\(s\) left in the adjudication queue", one_line(output))
    if settled:
        assert int(settled[1]) <= int(settled[2]), settled[0]


def gold_sessions(project: Project) -> dict[str, BenchmarkSession]:
    return {s.sample_id: s for s in read_jsonl(project.build / "gold" / "benchmark.jsonl", BenchmarkSession)}


def test_the_first_build_gives_gold_for_both_sessions(built_corpus: BuiltCorpus) -> None:
    output = built_corpus.first_build_output  # the suite's one first build
    assert "gold: ran - 2 session(s)" in output and "freeze: ran - release v1: 2 session(s)" in output
    # the stored adjudications settle the whole queue, and the line says so in one consistent count
    # (it said "0 field(s) in the adjudication queue", then "9 queued field(s) settled")
    assert re.search(r"adjudicate: ran - (\d+) of \1 queued field\(s\) settled by the adjudicators' answers; "
                     r"0 field\(s\) left in the adjudication queue", one_line(output)), output
    assert_counts_never_negative(output)


@pytest.mark.parametrize("damage", ["last line removed", "cut mid-line"])
def test_a_damaged_gold_file_is_rebuilt_and_the_release_keeps_every_session(corpus: Project, damage: str) -> None:
    gold = corpus.build / "gold" / "benchmark.jsonl"
    intact = gold.read_bytes()
    manifest = (corpus.build / "release" / "v1" / "MANIFEST.json").read_bytes()
    lines = intact.splitlines(keepends=True)
    gold.write_bytes(b"".join(lines[:-1]) if damage == "last line removed" else intact[:len(intact) // 2])
    output = build(corpus)
    assert "gold: ran - 2 session(s)" in output, output
    assert "freeze: up to date - release v1: 2 session(s)" in output, output
    assert gold.read_bytes() == intact
    assert (corpus.build / "release" / "v1" / "MANIFEST.json").read_bytes() == manifest
    assert "Nothing to do: every corpus step is up to date." in build(corpus)  # and it stays healed


def _latest_per_account(tasks: list[dict[str, Any]], users: dict[int, str], row_id: str) -> dict[str, list[Any]]:
    (task,) = [t for t in tasks if t["data"]["row_id"] == row_id]
    latest: dict[str, dict[str, Any]] = {}
    for annotation in sorted(task["annotations"], key=lambda a: (a["updated_at"], a["id"])):
        latest[users[annotation["completed_by"]]] = annotation
    return {email: annotation["result"] for email, annotation in latest.items()}


def _with_target(result: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    return [{**entry, "value": {"choices": names}} if entry["from_name"] == "target" else entry for entry in result]


def test_a_new_dispute_on_a_row_with_an_adjudication_task_reaches_the_adjudicators(
        corpus: Project, labelstudio_template: Path) -> None:
    live = LiveServer(corpus, server.ServerPaths.of(corpus), labelstudio_template)
    live.start()
    try:
        client = Client(live.connection)
        users = client.users()
        ids = {email: user_id for user_id, email in users.items()}
        adjudication = client.find_project(f"{FAMILY_PROJECT} - adjudication")
        assert adjudication is not None
        asked = json.loads(client.export_json(adjudication.id))
        row_id = next(t["data"]["row_id"] for t in asked if "target" not in t["data"]["adjudication_fields"])
        schema = load_schema(corpus.schemas / "rescue-v1.yaml")
        answers: dict[str, list[Any]] = {}
        for annotator, name in zip(ANNOTATORS, ("Linda", "Mark", "Zoe"), strict=True):  # three different targets
            own = client.find_project(annotator_title(schema, "family", annotator))  # independent labels
            assert own is not None, annotator
            tasks = json.loads(client.export_json(own.id))
            answers.update(_latest_per_account(tasks, users, row_id))
            (task_id,) = [t["id"] for t in tasks if t["data"]["row_id"] == row_id]
            client.create_annotation(task_id, _with_target(answers[annotator], [name]), completed_by=ids[annotator])
        assert set(answers) == set(ANNOTATORS)

        release = corpus.build / "release" / "v1"
        kept, superseded = tree_digest(release), superseded_folders(corpus)
        refused = CliRunner().invoke(main, ["--root", str(corpus.root), "build"])
        output = refused.output
        # the family session's gold waits for the adjudicator: the release keeps both sessions meanwhile
        assert refused.exit_code == 1 and "step freeze: release v1 not replaced" in one_line(output), output
        assert f"session(s) {FAMILY} would leave the release" in one_line(output), output
        assert "`rescue freeze --allow-shrink`" in one_line(output) and "Traceback" not in output
        assert tree_digest(release) == kept and superseded_folders(corpus) == superseded
        assert_counts_never_negative(output)
        queue = (corpus.build / "adjudication" / "queue.jsonl").read_text()
        assert any(json.loads(line)["row_id"] == row_id and json.loads(line)["field"] == "target"
                   for line in queue.splitlines())
        assert "family: 1 row(s) imported, 0 already there" in output, output
        asked_now = [t for t in json.loads(client.export_json(adjudication.id)) if t["data"]["row_id"] == row_id]
        new = [t for t in asked_now if "target" in t["data"]["adjudication_fields"]]
        assert len(new) == 1 and not new[0]["annotations"]
        assert len(asked_now) == 2  # the earlier task keeps its field and its answer

        client.create_annotation(new[0]["id"], _with_target(answers[ANNOTATORS[0]], ["Mark"]),
                                 completed_by=ids[ADJUDICATOR])
        output = build(corpus)
    finally:
        server.stop(live.paths)
    assert "gold: ran - 2 session(s)" in output and "freeze: ran - release v1: 2 session(s)" in output, output
    (row,) = [r for r in gold_sessions(corpus)[FAMILY].rows
              if r.row_index == next(x.row_index for x in read_rows(corpus, FAMILY) if x.row_id == row_id)]
    assert row.target == ["Mark"]


def _annotated_stale(export: list[dict[str, Any]], current: set[str], users: dict[str, str]
                     ) -> set[tuple[int, str]]:
    """(task id, annotator) of every live annotation in an export whose task's row no longer exists."""
    return {(int(t["id"]), users[str(a["completed_by"])]) for t in export if t["data"]["row_id"] not in current
            for a in t["annotations"] if not a["was_cancelled"]}


def test_rows_cut_again_carry_their_annotations_and_rows_cut_back_give_the_same_gold(corpus: Project) -> None:
    gold_before = (corpus.build / "gold" / "benchmark.jsonl").read_bytes()
    release_before = instance_lines(corpus.build / "release" / "v1")
    release_files, superseded = tree_digest(corpus.build / "release" / "v1"), superseded_folders(corpus)
    rows_before = {s: read_rows(corpus, s) for s in (COUPLE, FAMILY)}
    settings = corpus.root / "pyproject.toml"
    assert not settings.exists()
    settings.write_text("[tool.rescue.speech.rows]\nmax_row_seconds = 3.0\n", encoding="utf-8")
    output = build_tolerating_freeze(corpus)  # the build goes on through gold for whatever can be settled
    current = {r.row_id for s in (COUPLE, FAMILY) for r in read_rows(corpus, s)}
    assert current != {r.row_id for rows in rows_before.values() for r in rows}  # the setting re-cut rows
    assert "pull: ran - snapshot" in output and "gold: ran" in output, output

    state = json.loads((corpus.build / "state" / "corpus" / "pull.json").read_text())
    snapshot = corpus.build / "annotations" / state["detail"]["snapshot"]
    users = json.loads((snapshot / "users.json").read_text())
    stale: set[tuple[int, str]] = set()
    for export in (snapshot / "exports").rglob("*.json"):  # exports/<scenario>/<annotator>.json
        stale |= _annotated_stale(json.loads(export.read_text()), current, users)
    assert stale
    records = read_jsonl(snapshot / "annotations.jsonl", Annotation)
    spans = {(r.task_id, r.annotator): r.row_id for r in records}
    quarantined = {(q["task_id"], q["annotator"]): q["reason"]
                   for q in map(json.loads, (snapshot / "quarantine.jsonl").read_text().splitlines())
                   if q["field"] is None}
    reanchored = 0
    for task_id, annotator in stale:  # every annotation of a moved row: re-anchored, or reported with the reason
        if (task_id, annotator) in spans:
            reanchored += 1
        else:
            assert "IoU" in quarantined[(task_id, annotator)], quarantined.get((task_id, annotator))
    assert state["detail"]["reanchored"] == reanchored and state["detail"]["unplaced"] == len(stale) - reanchored
    task_rows = {int(t["id"]): t["data"]["row_id"] for e in (snapshot / "exports").rglob("*.json")
                 for t in json.loads(e.read_text())}
    for record in records:  # a re-anchored record sits on a current row that overlaps its task's row by half
        assert record.row_id in current
        if task_rows[record.task_id] == record.row_id:
            continue
        before = span_of(task_rows[record.task_id])
        after = span_of(record.row_id)
        assert before and after and iou(before[1:], after[1:]) >= MIN_IOU

    settings.unlink()  # the setting reverted: the rows are cut as before
    output = build(corpus)
    assert {s: read_rows(corpus, s) for s in (COUPLE, FAMILY)} == rows_before
    assert "pull: ran - snapshot" in output, output  # the rows changed, so the annotations are read again
    assert "gold: ran - 2 session(s)" in output and "- release v1: 2 session(s)" in output, output
    assert (corpus.build / "gold" / "benchmark.jsonl").read_bytes() == gold_before
    assert instance_lines(corpus.build / "release" / "v1") == release_before  # every instance, unchanged
    # identical gold leaves the release alone: the same files, nothing moved to superseded/
    assert "freeze: up to date - release v1: 2 session(s)" in output, output
    assert tree_digest(corpus.build / "release" / "v1") == release_files
    assert superseded_folders(corpus) == superseded
    assert {item.entry.session_id for item in load_catalog(corpus)} == set(gold_sessions(corpus))


def test_a_cut_snapshot_is_exported_again_by_the_command_the_error_advises(corpus: Project) -> None:
    """Issue 19, part 4: readers stop on a cut annotations.jsonl and advise `rescue pull`; that pull must not
    call the damaged snapshot up to date. The damaged folder is left exactly as it is (snapshots are immutable)."""
    state = json.loads((corpus.build / "state" / "corpus" / "pull.json").read_text())
    damaged = corpus.build / "annotations" / state["detail"]["snapshot"]
    annotations = damaged / "annotations.jsonl"
    intact = annotations.read_bytes()
    annotations.chmod(0o644)  # snapshot files are read-only; this test plays the disk fault that cut one
    annotations.write_bytes(intact[:len(intact) // 2])
    annotations.chmod(0o444)
    cut = tree_digest(damaged)
    gold = (corpus.build / "gold" / "benchmark.jsonl").read_bytes()
    manifest = (corpus.build / "release" / "v1" / "MANIFEST.json").read_bytes()

    stopped = CliRunner().invoke(main, ["--root", str(corpus.root), "agree", "--standalone"])
    assert stopped.exit_code == 1 and "is damaged" in stopped.output and "rescue pull" in one_line(stopped.output)
    pulled = CliRunner().invoke(main, ["--root", str(corpus.root), "pull"])
    assert pulled.exit_code == 0, pulled.output
    fresh = json.loads((corpus.build / "state" / "corpus" / "pull.json").read_text())["detail"]["snapshot"]
    assert fresh != damaged.name and f"pull: ran - snapshot {fresh}" in pulled.output, pulled.output
    assert "is damaged" in pulled.output and "left as it is, a new snapshot exported in its place" in \
        one_line(pulled.output), pulled.output
    assert tree_digest(damaged) == cut                          # the damaged snapshot is kept as it was
    again = (corpus.build / "annotations" / fresh / "annotations.jsonl").read_bytes()
    assert again.count(b"\n") == intact.count(b"\n")         # every record back (they name their snapshot)

    output = build(corpus)                                      # the build heals: same gold, same release
    assert (corpus.build / "gold" / "benchmark.jsonl").read_bytes() == gold
    assert (corpus.build / "release" / "v1" / "MANIFEST.json").read_bytes() == manifest, output
