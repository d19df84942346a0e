"""The columnar first read of a verified snapshot (pipeline/agreement/columnar.py) must code exactly what
the record-by-record path codes, and must step aside whenever it cannot promise that."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

import pipeline.agreement.agree as agree_module
from pipeline.agreement.agree import run_agree
from pipeline.agreement.columnar import prepare_verified
from pipeline.agreement.inputs import load_checked_snapshot, write_annotations
from pipeline.agreement.prepared import Prepared, prepare
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import make_annotations, make_sessions
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import sha256_file
from pipeline.transcripts import rows_path, write_rows

REPO = Path(__file__).resolve().parents[1]
ANNOTATORS = ("ann.a@lab.org", "ann.b@lab.org", "ann.c@lab.org")
LEAD = "lead@lab.org"
SNAPSHOT = "20261130T100000Z"


def _schema(project: Project) -> AnnotationSchema:
    project.schemas.mkdir(exist_ok=True)
    shutil.copy(REPO / "annotation_schemas" / "rescue-v1.yaml", project.schemas)
    return load_schema(project.schemas / "rescue-v1.yaml")


def _awkward(schema: AnnotationSchema, records: list[Annotation], seed: int) -> list[Annotation]:
    """What real pulls hold besides plain answers: repeated saves (newer, same time with a higher id, and
    exact ties that the later line wins), empty answers, an adjudicator, numbers as floats, repeated item
    keys, tabs and non-ASCII text, and records of another schema version."""
    rng = random.Random(seed)
    out = list(records)
    for record in rng.sample(records, 40):
        value = record.value
        field = schema.field(record.field)
        if field.type == "label" and field.labels:  # the newer save changes its mind
            value = next(label for label in schema.labels(field.labels, record.scenario) if label != value)
        later = "2026-12-01T00:00:00+00:00"
        out.append(record.model_copy(update={"value": value, "updated_at": later}))
    for record in rng.sample(records, 10):  # same time, higher id wins
        out.append(record.model_copy(update={"annotation_id": record.annotation_id + 10_000, "value": None}))
    for record in rng.sample(records, 10):  # exact tie: the later line wins
        out.insert(0, record.model_copy(update={"value": None}))
    for record in rng.sample(records, 30):
        empty = {"entities": [], "items": [], "row_refs": []}.get(_kind(record.field), None)
        out.append(record.model_copy(update={"value": empty, "updated_at": "2026-12-02T00:00:00+00:00"}))
    for record in rng.sample(records, 25):
        out.append(record.model_copy(update={"annotator": LEAD}))
    for index, record in enumerate(out):
        if isinstance(record.value, list) and record.value and isinstance(record.value[0], dict):
            items = [dict(item) for item in record.value]
            for item in items:
                if isinstance(item.get("intensity"), int) and index % 3 == 0:
                    item["intensity"] = float(item["intensity"])
                for key, text in item.items():
                    if isinstance(text, str) and " " in text and index % 5 == 0:
                        item[key] = text.replace(" ", "\t", 1) + " – Zoë 😀"
            if index % 7 == 0:
                items = items + [dict(items[0])]  # a repeated key: `#1`
            out[index] = record.model_copy(update={"value": items})
    return out


KINDS: dict[str, str] = {}


def _kind(field: str) -> str:
    return KINDS[field]


def _snapshot(project: Project, schema: AnnotationSchema, *, other_version: bool = False,
              extra: list[Annotation] = ()) -> Path:  # type: ignore[assignment]
    KINDS.update({f.name: f.type for f in schema.fields})
    sessions = make_sessions(4, family_share=0.5, rows_couple=9, rows_family=7, seed=3)
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    records = _awkward(schema, list(make_annotations(schema, sessions, ANNOTATORS, agreement=0.7, snapshot=SNAPSHOT)), 5)
    if other_version:
        records += [r.model_copy(update={"schema_version": "rescue-v0"}) for r in records[:17]]
    path = project.build / "annotations" / SNAPSHOT / "annotations.jsonl"
    write_annotations(path, [*records, *extra])
    return path


def _slow(path: Path, schema: AnnotationSchema, settings: AgreementSettings, use_text: bool,
          skip: bool = False) -> Prepared:
    answers = load_checked_snapshot(path, schema_version=schema.id, known_fields=[f.name for f in schema.fields],
                                    skip_other_versions=skip)
    return prepare(answers, schema, settings, use_text)


def assert_same(fast: Prepared | None, slow: Prepared) -> None:
    assert fast is not None
    for name in ("snapshot", "path", "duplicates", "other_versions", "answers_total", "answers_used", "annotators",
                 "per_annotator", "task_ids"):
        assert getattr(fast, name) == getattr(slow, name), name
    assert (fast.rows.row_ids, fast.rows.sessions, fast.rows.session_scenario) == \
        (slow.rows.row_ids, slow.rows.sessions, slow.rows.session_scenario)
    assert np.array_equal(fast.rows.row_index, slow.rows.row_index)
    assert np.array_equal(fast.rows.row_session, slow.rows.row_session)
    assert list(fast.ratings) == list(slow.ratings)
    for measure, want in slow.ratings.items():
        got = fast.ratings[measure]
        assert (got.values, got.declared, got.unit_key) == (want.values, want.declared, want.unit_key), measure
        for array in ("unit_row", "unit", "rater", "code"):
            assert np.array_equal(getattr(got, array), getattr(want, array)), (measure, array)


@pytest.mark.parametrize("use_text", [False, True])
def test_the_columnar_read_codes_exactly_what_the_record_by_record_read_codes(tmp_path: Path, use_text: bool) -> None:
    project = Project(tmp_path)
    schema = _schema(project)
    path = _snapshot(project, schema)
    settings = AgreementSettings(adjudicators=(LEAD,))
    slow = _slow(path, schema, settings, use_text)
    assert slow.duplicates > 0 and slow.answers_used < slow.answers_total  # the awkward cases are really there
    assert any("#1" in key for r in slow.ratings.values() for key in r.unit_key)
    assert_same(prepare_verified(path, schema, settings, use_text, False), slow)


def test_records_of_another_schema_version_are_left_out_alike(tmp_path: Path) -> None:
    project = Project(tmp_path)
    schema = _schema(project)
    path = _snapshot(project, schema, other_version=True)
    settings = AgreementSettings()
    assert prepare_verified(path, schema, settings, False, False) is None  # the other path words that error
    assert_same(prepare_verified(path, schema, settings, False, True), _slow(path, schema, settings, False, skip=True))


def _bad_value(schema: AnnotationSchema) -> Annotation:
    return Annotation(schema_version=schema.id, scenario="couple", session_id="zz/0001", row_id="zz/0001@1-2",
                      row_index=1, annotator=ANNOTATORS[0], field="utterance_type", value="Shouting",
                      task_id=1, annotation_id=999_999, updated_at="2026-11-30T00:00:00+00:00", snapshot=SNAPSHOT)


def test_what_it_cannot_vouch_for_goes_the_record_by_record_way(tmp_path: Path) -> None:
    project = Project(tmp_path)
    schema = _schema(project)
    settings = AgreementSettings()
    path = _snapshot(project, schema, extra=[_bad_value(schema)])
    assert prepare_verified(path, schema, settings, False, False) is None
    with pytest.raises(RescueError, match=r"annotation 999999 .*'Shouting' is not a couple label"):
        _slow(path, schema, settings, False)

    shutil.rmtree(project.build / "annotations")
    backslash = _bad_value(schema).model_copy(update={"field": "relation_cycle_reason",
                                                      "value": "she said C:\\temp", "scenario": "couple"})
    path = _snapshot(project, schema, extra=[backslash])
    # polars writes nested values back without escaping backslashes: such a file is read record by record
    assert prepare_verified(path, schema, settings, True, False) is None


def _seal(path: Path) -> None:
    """summary.json as a pull writes it: the records counted and the file's sha256."""
    count = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    (path.parent / "summary.json").write_text(
        '{"projects": [{"records": %d}], "annotations_sha256": "%s"}' % (count, sha256_file(path)))


def test_agree_reads_a_verified_snapshot_in_columns_and_others_record_by_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = Project(tmp_path)
    schema = _schema(project)
    path = _snapshot(project, schema)
    settings = AgreementSettings(text_similarity=False)
    unverified = run_agree(project, settings).report  # no summary.json: record by record
    shutil.rmtree(project.build / "cache")
    _seal(path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a verified snapshot must not be read record by record")

    monkeypatch.setattr(agree_module, "load_checked_snapshot", refuse)
    verified = run_agree(project, settings).report
    assert verified.model_dump(exclude={"generated_at"}) == unverified.model_dump(exclude={"generated_at"})


@pytest.mark.parametrize("field", ["utterance_type", "target", "internal_emotion", "relation_cycle_evidence_rows"])
@pytest.mark.parametrize("how", ["unset", "absent"])
def test_a_field_nobody_answered_is_coded_alike(tmp_path: Path, field: str, how: str) -> None:
    """A field every annotator left unset (or that no record holds, e.g. therapist fields of a client-only
    session) codes to empty ratings on both paths."""
    project = Project(tmp_path)
    schema = _schema(project)
    sessions = make_sessions(2, family_share=0.0, rows_couple=5, seed=3)
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    records = list(make_annotations(schema, sessions, ANNOTATORS, agreement=0.7, snapshot=SNAPSHOT))
    if how == "unset":
        records = [r.model_copy(update={"value": None}) if r.field == field else r for r in records]
    else:
        records = [r for r in records if r.field != field]
    path = project.build / "annotations" / SNAPSHOT / "annotations.jsonl"
    write_annotations(path, records)
    settings = AgreementSettings()
    for use_text in (False, True):
        assert_same(prepare_verified(path, schema, settings, use_text, False), _slow(path, schema, settings, use_text))
