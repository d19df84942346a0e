"""Re-creating the stored sample annotations on rows that moved: a shifted row is re-anchored by time
overlap (IoU >= 0.5), a row that is gone is reported with the reason, a second apply (as after an
interrupted one) creates nothing twice, and every stored annotation lands in its own annotator's project.
Against a real Label Studio server and the real stored export."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.annotate import server
from pipeline.annotate.pull import pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.annotate.apply_stored import ApplySummary, apply_stored_export
from pipeline.annotate.build_session import ServerSession, fetch_annotation_exports
from pipeline.annotate.sample_steps import _apply_notes
from pipeline.annotate.stored import (MIN_IOU, Placement, StoredAnnotation, StoredExport, StoredTask, Unplaced, anchor,
                                   load_stored, plan_apply)
from pipeline.project import Project
from pipeline.records import Annotation, TranscriptRow, row_id_for
from pipeline.sample.annotators import ADJUDICATOR, ANNOTATORS
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from pipeline.transcripts import read_rows, rows_path, write_rows
from tests.labelstudio_fixtures import REPO, SETTINGS, LiveServer
from tests.speech_fixtures import COUPLE, FAMILY


def test_anchor_prefers_the_same_row_then_the_largest_overlap() -> None:
    same, shifted, twin, gone = (row_id_for("s/a", 1.0, 5.0), row_id_for("s/a", 6.0, 10.0),
                                 row_id_for("s/a", 7.0, 10.0), row_id_for("s/a", 20.0, 22.0))
    current = [same, row_id_for("s/a", 6.3, 10.2), row_id_for("s/a", 21.5, 30.0), row_id_for("s/b", 20.0, 22.0)]
    placements, problems = anchor([same, shifted, twin, gone], current)
    assert [(p.stored_row, p.row_id) for p in placements] == [(same, same), (shifted, current[1])]
    assert placements[1].iou == pytest.approx(3.7 / 4.2, abs=1e-3)
    reasons = dict(problems)
    assert set(reasons) == {twin, gone}  # the twin lost the row to the closer `shifted`; another session never counts
    assert "no free row" in reasons[twin] and "IoU 0.05" in reasons[gone]


def test_plan_skips_what_the_account_already_made() -> None:
    row = row_id_for("s/a", 1.0, 5.0)
    stored = StoredExport("couple", "annotation", (StoredTask("s/a", row, tuple(
        StoredAnnotation(email, [], "2026-01-01", n) for n, email in enumerate(ANNOTATORS))),))
    plan = plan_apply(stored, {"s/a"}, {row: 7}, held={(7, ANNOTATORS[0])})
    assert [(task, email) for task, email, _ in plan.creates] == [(7, ANNOTATORS[1]), (7, ANNOTATORS[2])]
    assert plan.already == 1


@dataclass(frozen=True)
class Moved:
    live: LiveServer
    original: tuple[str, ...]  # the couple's row ids as this machine's speech stages made them
    third: str  # the original third row, now shifted by 0.3 s
    new_third: str
    fifth: str  # the original fifth row, now gone


def shrunk(row: TranscriptRow, n: int) -> TranscriptRow:
    """The row with each edge moved inwards by 20-60 ms: what ASR on another CPU does to row edges
    (spec/environment.md), and never an overlap with a neighbour."""
    start, end = row.start + 0.02 + 0.01 * (n % 5), row.end - 0.06 + 0.01 * (n % 5)
    return row.model_copy(update={"start": start, "end": end, "row_id": row_id_for(row.session_id, start, end)})


@pytest.fixture(scope="module")
def moved(built_samples: Project, labelstudio_template: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Moved]:
    """The built samples with every couple row's edges moved by tens of ms (as on another machine), row 3
    shifted by a further 0.3 s and row 5 gone, and a running server."""
    os.environ.pop("LABEL_STUDIO_URL", None)
    os.environ.pop("LABEL_STUDIO_API_KEY", None)
    root = tmp_path_factory.mktemp("reanchor").resolve()
    shutil.copytree(built_samples.root, root, symlinks=True, dirs_exist_ok=True)
    shutil.copytree(REPO / "annotation_schemas", root / "annotation_schemas")
    project = Project(root)
    rows = read_rows(project, COUPLE)
    jittered = [shrunk(row, n) for n, row in enumerate(rows)]
    third = jittered[2]
    shifted = third.model_copy(update={"start": third.start + 0.3, "end": third.end + 0.3,
                                       "row_id": row_id_for(COUPLE, third.start + 0.3, third.end + 0.3)})
    kept = [shifted if r is third else r for n, r in enumerate(jittered) if n != 4]
    write_rows(rows_path(project, COUPLE), [r.model_copy(update={"row_index": n}) for n, r in enumerate(kept, 1)])
    live = LiveServer(project, server.ServerPaths.of(project), labelstudio_template)
    try:
        live.start()
        yield Moved(live, tuple(r.row_id for r in rows), rows[2].row_id, shifted.row_id, rows[4].row_id)
    finally:
        server.stop(live.paths)


def test_stored_annotations_follow_moved_rows_and_the_rest_is_reported(moved: Moved) -> None:
    project = moved.live.project
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    push_rows(project, moved.live.connection, settings=SETTINGS, schema=schema, annotators=ANNOTATORS)
    session = ServerSession(moved.live.connection, False, moved.live.paths, "test server")
    stored = load_stored("annotation")
    stored_couple = [t.row_id for export in stored.values() for t in export.tasks if t.session_id == COUPLE]
    # Which stored row stands for which of this machine's rows: the stored export was recorded on another
    # machine, so ids may differ there too, but every stored row must find one of ours (IoU >= 0.5).
    baseline, problems = anchor(stored_couple, moved.original)
    assert not problems and len(baseline) == len(moved.original) == len(stored_couple)
    stored_for = {p.row_id: p.stored_row for p in baseline}
    catalog = {COUPLE, FAMILY}
    summary = apply_stored_export(project, session, fetch_annotation_exports(session.client, schema), stored,
                                  catalog, set(), kind="annotation")
    total = sum(len(t.annotations) for export in stored.values() for t in export.tasks)
    assert set(summary.sessions) == catalog
    placed = {p.stored_row: p for p in summary.reanchored}
    assert placed[stored_for[moved.third]].row_id == moved.new_third
    assert all(p.iou >= MIN_IOU for p in summary.reanchored)
    # Every moved couple row followed its stored annotations; only the removed fifth row could not.
    assert set(stored_couple) - {stored_for[moved.fifth]} <= set(placed)
    assert [(u.stored_row, u.annotations) for u in summary.unplaced] == [(stored_for[moved.fifth], len(ANNOTATORS))]
    assert "IoU" in summary.unplaced[0].reason
    assert summary.created == total - len(ANNOTATORS)

    exports = fetch_annotation_exports(session.client, schema)
    again = apply_stored_export(project, session, exports, stored, catalog, {COUPLE, FAMILY},
                                kind="annotation")  # as after an interrupted apply
    assert again.created == 0 and again.already == total - len(ANNOTATORS)
    users = session.client.users()
    assert sorted((e.scenario, e.annotator) for e in exports) == sorted(
        (scenario, email) for scenario in ("couple", "family") for email in ANNOTATORS)
    for export in exports:  # independent labels: an annotator's project holds only their own answers
        authors = {users[a["completed_by"]] for task in export.tasks for a in task["annotations"]}
        assert authors == {export.annotator}, export.name

    pulled = pull_annotations(project, moved.live.connection, settings=SETTINGS, schema=schema)
    assert pulled.quarantined == 0
    records = read_jsonl(project.build / "annotations" / pulled.snapshot / "annotations.jsonl", Annotation)
    on_third = {r.annotator for r in records if r.row_id == moved.new_third}
    assert on_third == set(ANNOTATORS)
    current = {r.row_id for session_id in catalog for r in read_rows(project, session_id)}
    assert {r.row_id for r in records} <= current  # nothing on a row that is gone


def test_stored_export_covers_every_sample_row_and_holds_no_secret() -> None:
    folder = REPO / "pipeline" / "sample" / "annotations"
    recording = json.loads((folder / "recording.json").read_text())
    assert set(recording["users"].values()) == {*ANNOTATORS, ADJUDICATOR}
    stored = load_stored("annotation")
    for session_id, facts in recording["sessions"].items():
        tasks = [t for export in stored.values() for t in export.tasks if t.session_id == session_id]
        assert len(tasks) == facts["rows"]
        assert all(sorted(a.email for a in t.annotations) == sorted(ANNOTATORS) for t in tasks), session_id
    adjudicated = [t for export in load_stored("adjudication").values() for t in export.tasks]
    assert len(adjudicated) == len({t.row_id for t in adjudicated}) > 0
    assert all([a.email for a in t.annotations] == [ADJUDICATOR] for t in adjudicated)
    for path in folder.glob("*.json"):
        text = path.read_text()
        assert not re.search(r'"(token|api_key|password|secret)"\s*:', text, re.IGNORECASE), path.name


def test_many_reanchored_rows_make_one_line_and_their_pairs_stay_in_the_record() -> None:
    """Another CPU can move every row's edges (15 of 45 on one machine measured): the build says so once."""
    pairs = tuple(Placement(stored_row=row_id_for("s/a", n, n + 1.0), row_id=row_id_for("s/a", n + 0.03, n + 1.0),
                            iou=0.97) for n in range(15))
    gone = Unplaced(stored_row=row_id_for("s/a", 40.0, 41.0), session_id="s/a", annotations=3, reason="best IoU 0.10")
    notes = _apply_notes(ApplySummary(kind="annotation", reanchored=pairs, unplaced=(gone,)),
                         "build/state/corpus/sample-annotations.json")
    assert notes[0] == ("15 row(s) re-anchored by time overlap (lowest IoU 0.97); each pair is in "
                        "build/state/corpus/sample-annotations.json")
    assert len(notes) == 2 and gone.stored_row in notes[1]  # rows that could not be placed are each named
