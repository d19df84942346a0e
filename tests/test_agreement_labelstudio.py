"""The adjudication queue in a real Label Studio server: pushed rows show every annotator's answer, the
adjudicator's answer comes back through the annotation stage's parser, and gold takes it."""

from __future__ import annotations

from pipeline.agreement.gold import FieldProvenance, run_adjudicate, run_gold
from pipeline.agreement.inputs import write_annotations
from pipeline.agreement.queue_labelstudio import adjudication_config, adjudication_title, pull_adjudications, push_queue
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import SyntheticSession, make_annotations
from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.labelstudio import ResultChecker
from pipeline.benchmark_format import BenchmarkSession
from pipeline.records import SampleTruth
from pipeline.schema import load_schema
from pipeline.store import read_jsonl
from tests.labelstudio_fixtures import LiveServer, write_truth_rows

ANNOTATORS = ("ann.a@example.org", "ann.b@example.org")
ADJUDICATOR = "lead@example.org"
SETTINGS = AgreementSettings(text_similarity=False, adjudicators=(ADJUDICATOR,))


def test_queue_round_trip_through_label_studio(ls_server: LiveServer) -> None:
    project, client = ls_server.project, ls_server.client
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    rows = write_truth_rows(project, "sample/maya_and_daniel")
    truth = SampleTruth.model_validate_json((project.raw_video / "sample" / "maya_and_daniel.truth.json").read_text())
    session = SyntheticSession(truth.session_id, truth.scenario, truth.participants, tuple(rows))
    records = list(make_annotations(schema, [session], ANNOTATORS, agreement=1.0))
    disputed = next(r for r in records if r.field == "utterance_type")
    records = [r.model_copy(update={"value": "defense" if r.annotator == ANNOTATORS[0] else "request"})
               if (r.row_id, r.field) == (disputed.row_id, "utterance_type") else r for r in records]
    write_annotations(project.build / "annotations" / "20261130T100000Z" / "annotations.jsonl", records)

    _, items = run_adjudicate(project, SETTINGS)
    assert [(i.row_id, i.field) for i in items] == [(disputed.row_id, "utterance_type")]
    lines = push_queue(project, SETTINGS, items, ls_server.connection)
    assert lines and lines[0].startswith("couple: 1 row(s) imported, 0 already there")
    again = push_queue(project, SETTINGS, items, ls_server.connection)
    assert again[0].startswith("couple: 0 row(s) imported, 1 already there")  # idempotent by row id

    info = client.find_project(adjudication_title(schema, "couple"))
    assert info is not None and "adjudication_answers" in info.label_config
    task_id = client.task_keys(info.id)[disputed.row_id][0]
    task = client.task_detail(task_id)
    shown = {entry["who"]: entry["answer"] for entry in task["data"]["adjudication_answers"]}
    assert shown == {f"utterance_type - {ANNOTATORS[0]}": "defense", f"utterance_type - {ANNOTATORS[1]}": "request"}
    predictions = {p["model_version"]: p["result"] for p in task["predictions"]}
    assert set(predictions) == set(ANNOTATORS)
    checker = ResultChecker(adjudication_config(schema, "couple"))
    assert all(checker.errors(result) == [] for result in predictions.values())
    picked = {entry["value"]["choices"][0] for entry in predictions[ANNOTATORS[1]]
              if entry["from_name"] == "utterance_type"}
    assert picked == {"request"}

    (account,) = add_annotators(project, ls_server.connection, [ADJUDICATOR])
    client.create_annotation(task_id, predictions[ANNOTATORS[1]], completed_by=account.user_id)
    answers = pull_adjudications(project, SETTINGS, ls_server.connection)
    pulled = [line for line in answers.read_text().splitlines() if line]
    assert len(pulled) == 1 and '"field":"utterance_type"' in pulled[0] and ADJUDICATOR in pulled[0]

    summary = run_gold(project, SETTINGS)
    assert summary.sessions_written == (truth.session_id,) and summary.queue_items == 0
    (gold,) = read_jsonl(project.build / "gold" / "benchmark.jsonl", BenchmarkSession)
    assert next(r for r in gold.rows if r.row_index == disputed.row_index).utterance_type == "request"
    provenance = read_jsonl(project.build / "gold" / "provenance.jsonl", FieldProvenance)
    settled = next(p for p in provenance if (p.row_id, p.field) == (disputed.row_id, "utterance_type"))
    assert settled.source == "adjudicated" and settled.adjudicator == ADJUDICATOR
