"""A damaged annotation snapshot stops the reader with the file and the fix (issue 9, section 4).

`rescue pull` writes annotations.jsonl and, beside it, summary.json with the record counts and the
file's sha256; every reader of the snapshot (agree, adjudicate, gold) compares the two. The snapshot
here is made of synthetic annotations written as a pull writes them (records, then the summary).
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from pipeline.agreement.gold import run_gold
from pipeline.agreement.inputs import load_snapshot, write_annotations
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import make_annotations, make_sessions
from pipeline.annotate.pull import ProjectPull, PullSummary
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.schema import load_schema
from pipeline.store import sha256_file
from pipeline.transcripts import rows_path, write_rows

REPO = Path(__file__).resolve().parents[1]
ANNOTATORS = ("ann.a@lab.org", "ann.b@lab.org", "ann.c@lab.org")
NO_TEXT = AgreementSettings(text_similarity=False, adjudicators=("lead@lab.org",))
SNAPSHOT = "20261130T100000Z"
FIELDS = [f.name for f in load_schema(REPO / "annotation_schemas" / "rescue-v1.yaml").fields]


def pulled_snapshot(project: Project, *, with_hash: bool = True) -> Path:
    """Two sessions' answers in build/annotations/<snapshot>/, with the summary a pull writes."""
    project.schemas.mkdir(exist_ok=True)
    shutil.copy(REPO / "annotation_schemas" / "rescue-v1.yaml", project.schemas)
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    sessions = make_sessions(2, family_share=0.0, rows_couple=8)
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    path = project.build / "annotations" / SNAPSHOT / "annotations.jsonl"
    count = write_annotations(path, make_annotations(schema, sessions, ANNOTATORS, agreement=1.0, snapshot=SNAPSHOT))
    summary = PullSummary(
        snapshot=SNAPSHOT, folder=f"build/annotations/{SNAPSHOT}", schema_version=schema.id, source="a test",
        projects=(ProjectPull(scenario="couple", annotator=None, export_file="exports/couple/shared.json", tasks=16,
                              annotations=48, cancelled=0, superseded=0, records=count, quarantined=0,
                              annotators=ANNOTATORS),),
        **({"annotations_sha256": sha256_file(path)} if with_hash else {}))  # pulls before the hash: count only
    (path.parent / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    for file in path.parent.iterdir():
        file.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)  # read-only, as a pull leaves them
    return path


def truncate(path: Path, keep_lines: int) -> None:
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:keep_lines]))


def test_an_intact_snapshot_is_read(project: Project) -> None:
    path = pulled_snapshot(project)
    assert len(run_gold(project, NO_TEXT).sessions_written) == 2
    assert load_snapshot(path, schema_version="rescue-v1", known_fields=FIELDS,
                         skip_other_versions=True).answers


def test_a_truncated_snapshot_stops_gold_with_the_file_and_the_fix(project: Project) -> None:
    path = pulled_snapshot(project)
    lines = path.read_text().count("\n")
    truncate(path, lines // 2)
    with pytest.raises(RescueError) as caught:
        run_gold(project, NO_TEXT)
    assert str(path) in caught.value.message and f"{lines // 2} record(s)" in caught.value.message
    assert f"summary.json counts {lines}" in caught.value.message
    assert "rescue pull" in caught.value.fix


def test_a_changed_record_is_caught_by_the_hash(project: Project) -> None:
    path = pulled_snapshot(project)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    text = path.read_text()
    path.write_text(text.replace('"primary_speaker"', '"primary_speaker" ', 1))   # same line count
    with pytest.raises(RescueError, match="sha256") as caught:
        load_snapshot(path, schema_version="rescue-v1", known_fields=FIELDS, skip_other_versions=True)
    assert "rescue pull" in caught.value.fix


def test_a_snapshot_summary_without_a_hash_still_checks_the_count(project: Project) -> None:
    path = pulled_snapshot(project, with_hash=False)
    truncate(path, 5)
    with pytest.raises(RescueError, match="5 record\\(s\\)"):
        run_gold(project, NO_TEXT)
