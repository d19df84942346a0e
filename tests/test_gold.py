"""Consensus rules, the adjudication queue, adjudicated answers and gold rows with provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.agreement.consensus import Consensus
from pipeline.agreement.gold import FieldProvenance, QueueItem, run_adjudicate, run_gold
from pipeline.agreement.inputs import write_annotations
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import SyntheticSession, make_annotations, make_sessions
from pipeline.benchmark_format import BenchmarkSession
from pipeline.cli import main
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import read_jsonl
from pipeline.tasks.gold_input import read_gold_file
from pipeline.transcripts import rows_path, write_rows

REPO_SCHEMA = Path(__file__).resolve().parents[1] / "annotation_schemas" / "rescue-v1.yaml"
ANNOTATORS = ("ann.a@lab.org", "ann.b@lab.org", "ann.c@lab.org")
ADJUDICATOR = "lead@lab.org"
NO_TEXT = AgreementSettings(text_similarity=False, adjudicators=(ADJUDICATOR,))


@pytest.fixture
def schema(project: Project) -> AnnotationSchema:
    project.schemas.mkdir(exist_ok=True)
    shutil.copy(REPO_SCHEMA, project.schemas / REPO_SCHEMA.name)
    return load_schema(project.schemas / REPO_SCHEMA.name)


def prepare(project: Project, schema: AnnotationSchema, sessions: list[SyntheticSession],
            records: list[Annotation]) -> None:
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    write_annotations(project.build / "annotations" / "20261130T100000Z" / "annotations.jsonl", records)


def answer(template: Annotation, annotator: str, value: object, number: int) -> Annotation:
    return template.model_copy(update={"annotator": annotator, "value": value, "annotation_id": number,
                                       "updated_at": f"2026-11-30T12:00:{number % 60:02d}+00:00"})


# -- rules -------------------------------------------------------------------------------------------------
def test_rules_majority_tie_median_members_unanimous() -> None:
    rules = Consensus(AgreementSettings(), similarity=None)
    ok = rules.decide_value("utterance_type", "label", "nominal", [("a", "defense"), ("b", "defense"), ("c", "other")])
    assert ok.ok and ok.value == "defense" and ok.agreeing == ("a", "b")
    tie = rules.decide_value("utterance_type", "label", "nominal", [("a", "defense"), ("b", "other")])
    assert not tie.ok and "tie" in tie.detail
    median = rules.decide_value("x.intensity", "integer", "interval", [("a", 6), ("b", 7), ("c", 10)])
    assert median.ok and median.value == 7 and set(median.agreeing) == {"a", "b"}
    spread = rules.decide_value("x.intensity", "integer", "interval", [("a", 1), ("b", 5), ("c", 9)])
    assert not spread.ok and "no majority within 2" in spread.detail
    members = rules.decide_value("target", "entities", "set",
                                 [("a", ("Alan", "Evelyn")), ("b", ("Alan",)), ("c", ("Alan", "Evelyn"))])
    assert members.ok and members.value == ("Alan", "Evelyn")
    nobody = rules.decide_value("target", "entities", "set", [("a", ("Alan",)), ("b", ("Evelyn",))])
    assert not nobody.ok
    strict = Consensus(AgreementSettings(consensus={"utterance_type": "unanimous"}), similarity=None)
    assert not strict.decide_value("utterance_type", "label", "nominal",
                                   [("a", "defense"), ("b", "defense"), ("c", "other")]).ok


def test_medoid_text_with_the_real_model(project: Project) -> None:
    from pipeline.agreement.gold import text_similarity

    similarity, _ = text_similarity(project, AgreementSettings())
    rules = Consensus(AgreementSettings(), similarity)
    close = rules.decide_value("tone_of_voice", "text", "text", [
        ("a", "firm and defensive"), ("b", "defensive and firm"), ("c", "bright, cheerful laughter")])
    assert close.ok and close.value in {"firm and defensive", "defensive and firm"} and "c" not in close.agreeing
    apart = rules.decide_value("tone_of_voice", "text", "text", [
        ("a", "firm and defensive"), ("b", "bright, cheerful laughter")])
    assert not apart.ok and "too different" in apart.detail


# -- queue, adjudication, gold -------------------------------------------------------------------------------
def test_disagreement_goes_to_the_queue_and_the_adjudicator_wins(project: Project, schema: AnnotationSchema) -> None:
    sessions = make_sessions(2, family_share=0.0, rows_couple=8)
    records = list(make_annotations(schema, sessions, ANNOTATORS, agreement=1.0))
    target = next(r for r in records if r.field == "utterance_type")
    records = [r for r in records if not (r.row_id == target.row_id and r.field == "utterance_type")]
    records += [answer(target, ANNOTATORS[0], "defense", 900001), answer(target, ANNOTATORS[1], "request", 900002)]
    prepare(project, schema, sessions, records)

    path, items = run_adjudicate(project, NO_TEXT)
    assert [(i.row_id, i.field) for i in items] == [(target.row_id, "utterance_type")]
    item = items[0]
    assert "tie" in item.reason and {a.annotator: a.value for a in item.answers} == {
        ANNOTATORS[0]: "defense", ANNOTATORS[1]: "request"}
    assert item.text and read_jsonl(path, QueueItem) == items
    summary = run_gold(project, NO_TEXT)
    session_id = target.session_id
    assert session_id in summary.sessions_pending and "1 field(s) in the adjudication queue" in \
        summary.sessions_pending[session_id]

    records.append(answer(target, ADJUDICATOR, "request", 900003))
    prepare(project, schema, sessions, records)
    summary = run_gold(project, NO_TEXT)
    assert not summary.sessions_pending and summary.queue_items == 0
    gold = {s.sample_id: s for s in read_jsonl(project.build / "gold" / "benchmark.jsonl", BenchmarkSession)}
    row = next(r for r in gold[session_id].rows if r.row_index == target.row_index)
    assert row.utterance_type == "request"
    provenance = read_jsonl(project.build / "gold" / "provenance.jsonl", FieldProvenance)
    settled = next(p for p in provenance if p.row_id == target.row_id and p.field == "utterance_type")
    assert settled.source == "adjudicated" and settled.adjudicator == ADJUDICATOR
    assert settled.annotators == (ANNOTATORS[0], ANNOTATORS[1])
    consensus = next(p for p in provenance if p.row_id == target.row_id and p.field == "primary_speaker")
    assert consensus.source == "consensus" and consensus.agreeing == ANNOTATORS


def test_gold_rows_are_the_benchmark_format_deterministic_and_complete(project: Project,
                                                                      schema: AnnotationSchema) -> None:
    sessions = make_sessions(3, family_share=0.5, rows_couple=10, rows_family=12)
    prepare(project, schema, sessions, list(make_annotations(schema, sessions, ANNOTATORS, agreement=1.0)))
    summary = run_gold(project, NO_TEXT)
    assert sorted(summary.sessions_written) == sorted(s.session_id for s in sessions)
    gold_file = project.build / "gold" / "benchmark.jsonl"
    first = gold_file.read_bytes()
    gold, problems = read_gold_file(gold_file, schema)  # the task builders' reader accepts it
    assert [p for p in problems if p.severity == "error"] == []
    by_id = {s.sample_id: s for s in gold}
    for session in sessions:
        rows = by_id[session.session_id].rows
        assert [r.row_index for r in rows] == [t.row_index for t in session.rows]
        assert [(r.start_time, r.end_time) for r in rows] == [(t.start, t.end) for t in session.rows]
        assert set(by_id[session.session_id].participants) <= set(session.participants)
        for row, truth in zip(rows, session.rows):
            assert row.primary_speaker == truth.speaker
            if truth.speaker == "Therapist":
                assert row.utterance_type == "" and row.viewpoints_attitudes == []
                assert row.relation_cycle_state is not None
            else:
                assert row.support_strategy == [] and row.relation_cycle_state is None and row.utterance_type
    provenance = (project.build / "gold" / "provenance.jsonl").read_text().splitlines()
    fields = [f for f in schema.fields if f.annotated]
    assert len(provenance) == summary.rows_written * len(fields)
    assert {json.loads(line)["source"] for line in provenance} <= {"consensus", "not_applicable", "default_empty"}
    run_gold(project, NO_TEXT)
    assert gold_file.read_bytes() == first  # rebuilt from the same snapshot: byte-identical


def test_sessions_without_transcript_or_with_too_few_answers_stay_pending(project: Project,
                                                                          schema: AnnotationSchema) -> None:
    sessions = make_sessions(2, family_share=0.0, rows_couple=6)
    records = list(make_annotations(schema, sessions, ANNOTATORS[:1], agreement=1.0))
    prepare(project, schema, sessions[:1], records)  # the second session has no transcript rows
    summary = run_gold(project, NO_TEXT)
    assert summary.sessions_written == ()
    assert "no transcript rows" in summary.sessions_pending[sessions[1].session_id]
    assert "field(s) in the adjudication queue" in summary.sessions_pending[sessions[0].session_id]
    queue = read_jsonl(project.build / "adjudication" / "queue.jsonl", QueueItem)
    assert queue and all(item.reason == "only 1 answer(s)" for item in queue)
    single = run_gold(project, NO_TEXT.model_copy(update={"min_annotators": 1}))
    assert sessions[0].session_id in single.sessions_written
    sources = {json.loads(line)["source"] for line in (project.build / "gold" / "provenance.jsonl").open()}
    assert "single_annotator" in sources


def test_cli_adjudicate_and_gold(project: Project, schema: AnnotationSchema) -> None:
    sessions = make_sessions(1, family_share=0.0, rows_couple=5)
    prepare(project, schema, sessions, list(make_annotations(schema, sessions, ANNOTATORS, agreement=1.0)))
    runner = CliRunner()
    adjudicated = runner.invoke(main, ["--root", str(project.root), "adjudicate", "--no-text", "--standalone"])
    assert adjudicated.exit_code == 0, adjudicated.output
    assert "0 field(s) of 0 row(s) need an adjudicator" in adjudicated.output
    golden = runner.invoke(main, ["--root", str(project.root), "gold", "--no-text", "--standalone"])
    assert golden.exit_code == 0, golden.output
    assert "gold: 1 session(s)" in golden.output
