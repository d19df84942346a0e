"""Pre-annotation acceptance measured end to end on a small constructed case, against a real Label Studio
server (no mocks): push a drafts file, two annotators keep some drafted values and change others, pull,
`agree`; the kept shares and the agreement of the drafts with the gold equal the values computed by hand,
and the report's section appears in HTML, CSV and Markdown. Without recorded drafts the section says none.

The drafts file is a test input (what a preannotate backend writes), not a fake of the system under test.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from pydantic import JsonValue

from pipeline.agreement.agree import run_agree
from pipeline.agreement.inputs import write_annotations
from pipeline.agreement.settings import AgreementSettings
from pipeline.agreement.synthetic import make_annotations, make_sessions
from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.pull import pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.annotate.results import encode
from pipeline.preannotate.drafts import FieldGate, RowDraft, SessionDrafts, Source, drafts_path
from pipeline.preannotate.margins import Margin
from pipeline.project import Project
from pipeline.records import TranscriptRow
from pipeline.schema import load_schema
from pipeline.store import write_text_atomic
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import REPO, SETTINGS, LiveServer, write_truth_rows

MAYA = "sample/maya_and_daniel"
ANN, BOB = "ann@example.org", "bob@example.org"
MODEL = "gold-model:m1:rescue-v1"
FAST = AgreementSettings(bootstrap_samples=50, text_similarity=False)
# Four client rows: the model's utterance type, then what ann and bob answered.
DRAFTED = ("accusation", "defense", "disclosure", "request")
ANSWERS = {ANN: ("accusation", "defense", "request", "request"), BOB: ("accusation", "withdrawal", "request", "request")}
# The gold-model's gates as drafts.json records them: utterance type from the model, tone from the baseline (a
# constant "calm"), the relation label left empty (a therapist field: these client rows would not show it anyway).
GATES = {"utterance_type": "model", "tone_of_voice": "baseline", "relation_cycle_state": "nothing"}


def _gate(field: str, source: Source) -> FieldGate:
    return FieldGate(field=field, source=source, reason="test input", measure="primary", against="nothing",
                     scores={"model": None, "baseline": None, "nothing": None},
                     margin=Margin(value=None, low=None, high=None, sessions=0))


def _answer(row: TranscriptRow, annotator: str, number: int) -> dict[str, JsonValue]:
    """A complete client answer; ann keeps the transcript's text, bob rewrites it."""
    return {**client_values(), "primary_speaker": row.speaker, "utterance_type": ANSWERS[annotator][number],
            "dialogue_cleaned": row.text if annotator == ANN else f"{row.text} (edited)"}


@pytest.fixture(scope="module")
def measured(ls_server: LiveServer):  # noqa: ANN201 - the AgreeOutput
    project, client = ls_server.project, ls_server.client
    accounts = {a.email: a.user_id for a in add_annotators(project, ls_server.connection, [ANN, BOB])}
    rows = write_truth_rows(project, MAYA)
    chosen = [r for r in rows if r.speaker != "Therapist"][:4]
    drafts = SessionDrafts(session_id=MAYA, backend="gold-model", model="m1", schema_id="rescue-v1", rows=tuple(
        RowDraft(row_id=r.row_id, values={"utterance_type": label, "tone_of_voice": "calm"},
                 scores={"utterance_type": 0.7, "tone_of_voice": 0.4})
        for r, label in zip(chosen, DRAFTED)), gates=tuple(_gate(f, s) for f, s in GATES.items()))
    write_text_atomic(drafts_path(project.build, MAYA), drafts.model_dump_json())
    push_rows(project, ls_server.connection, settings=SETTINGS)
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    for email in (ANN, BOB):
        info = client.find_project(annotator_title(schema, "couple", email))
        assert info is not None
        tasks = {row_id: ids[0] for row_id, ids in client.task_keys(info.id).items()}
        for number, row in enumerate(chosen):
            client.create_annotation(tasks[row.row_id], encode(schema, _answer(row, email, number), COUPLE_ENTITIES),
                                     completed_by=accounts[email])
    pull_annotations(project, ls_server.connection, settings=SETTINGS)
    return run_agree(project, FAST, text=False)


def test_the_kept_share_is_the_share_of_answers_equal_to_the_draft_they_saw(measured) -> None:  # noqa: ANN001
    kept = {(k.model_version, k.field, k.scenario): (k.drafted, k.kept) for k in measured.report.acceptance.kept}
    # utterance type, drafted by the model on 4 rows x 2 annotators: ann kept 3, bob 2
    assert kept[(MODEL, "utterance_type", "couple")] == (8, 5)
    # the transcript's drafts on the same tasks: ann kept the text, bob edited it; both kept the speaker
    assert kept[("transcript", "dialogue_cleaned", "couple")] == (8, 4)
    assert kept[("transcript", "primary_speaker", "couple")] == (8, 8)
    assert measured.report.acceptance.tasks_with_drafts == 8


def test_drafts_against_the_gold_use_the_reports_coefficients_with_the_model_as_a_coder(measured) -> None:  # noqa: ANN001
    found = {(a.model_version, a.figure.scope, a.figure.measure, a.figure.metric, a.figure.scenario): a.figure
             for a in measured.report.acceptance.agreement}
    # Gold (consensus of ann and bob): rows 1, 3, 4 = accusation, request, request; row 2 is in the queue.
    # Model on those rows: accusation, disclosure, request. Units 3; percent agreement 2/3; nominal alpha with
    # n = 6 values (accusation 2, request 3, disclosure 1): 1 - (n - 1) * 2 / (36 - 4 - 9 - 1) = 1 - 10/22.
    alpha = found[(MODEL, "field", "utterance_type", "alpha", "")]
    percent = found[(MODEL, "field", "utterance_type", "percent_agreement", "")]
    assert alpha.units == percent.units == 3
    assert alpha.value == pytest.approx(1 - 10 / 22)
    assert percent.value == pytest.approx(2 / 3)
    assert found[(MODEL, "scenario", "utterance_type", "alpha", "couple")].value == pytest.approx(1 - 10 / 22)


def test_the_report_has_its_acceptance_section_in_html_csv_and_markdown(measured) -> None:  # noqa: ANN001
    folder: Path = measured.folder
    markdown = (folder / "agreement.md").read_text(encoding="utf-8")
    assert "## Pre-annotation acceptance" in markdown
    assert f"| {MODEL} | utterance_type | model | couple | 8 | 5 | 62.5% |" in markdown
    assert f"| {MODEL} | utterance_type | all | 3 | 0.545" in markdown
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "id='acceptance'" in page and "62.5%" in page and MODEL in page
    rows = list(csv.DictReader(io.StringIO((folder / "agreement.csv").read_text(encoding="utf-8"))))
    kept = [r for r in rows if r["scope"] == "acceptance" and r["metric"] == "kept_share"
            and r["measure"] == "utterance_type"]
    assert [(r["annotator"], r["scenario"], float(r["value"]), r["units"], r["values"]) for r in kept] == [
        (MODEL, "couple", 0.625, "8", "5")]
    gold = [r for r in rows if r["scope"] == "acceptance" and r["metric"] == "alpha" and r["other"] == "gold"
            and r["measure"] == "utterance_type" and r["scenario"] == ""]
    assert len(gold) == 1 and float(gold[0]["value"]) == pytest.approx(1 - 10 / 22)


def test_the_section_says_per_field_whether_the_draft_came_from_the_model_the_baseline_or_nothing(
        measured) -> None:  # noqa: ANN001
    acceptance = measured.report.acceptance
    kept = {(k.model_version, k.field, k.scenario): (k.source, k.drafted, k.kept) for k in acceptance.kept}
    assert kept[(MODEL, "utterance_type", "couple")] == ("model", 8, 5)
    assert kept[(MODEL, "tone_of_voice", "couple")] == ("baseline", 8, 0)  # both answered "sharp and hurt"
    assert kept[("transcript", "dialogue_cleaned", "couple")] == ("transcript", 8, 4)
    assert {(s.model_version, s.field): (s.source, s.tasks) for s in acceptance.sources} == {
        (MODEL, field): (source, 8) for field, source in GATES.items()}
    markdown = (measured.folder / "agreement.md").read_text(encoding="utf-8")
    assert f"| {MODEL} | tone_of_voice | baseline | couple | 8 | 0 | 0.0% |" in markdown
    assert "### Draft source per field" in markdown
    assert f"| {MODEL} | relation_cycle_state | nothing | 8 |" in markdown
    page = (measured.folder / "report.html").read_text(encoding="utf-8")
    assert "acceptance-source" in page and "Draft source per field" in page
    rows = list(csv.DictReader(io.StringIO((measured.folder / "agreement.csv").read_text(encoding="utf-8"))))
    assert {(r["measure"], r["other"], r["units"]) for r in rows if r["metric"] == "draft_source"} == {
        (field, source, "8") for field, source in GATES.items()}
    assert {r["other"] for r in rows if r["metric"] == "kept_share" and r["measure"] == "tone_of_voice"} == {
        "baseline"}


def test_without_recorded_drafts_the_section_says_none(project: Project) -> None:
    project.schemas.mkdir(exist_ok=True)
    shutil.copy(REPO / "annotation_schemas" / "rescue-v1.yaml", project.schemas / "rescue-v1.yaml")
    schema = load_schema(project.schemas / "rescue-v1.yaml")
    records = make_annotations(schema, make_sessions(2, family_share=0.5, rows_couple=6, rows_family=6),
                               ("a@lab.org", "b@lab.org"))
    write_annotations(project.build / "annotations" / "20261130T100000Z" / "annotations.jsonl",
                      [r.model_copy(update={"snapshot": "20261130T100000Z"}) for r in records])
    output = run_agree(project, FAST, text=False)
    assert output.report.acceptance.kept == ()
    markdown = (output.folder / "agreement.md").read_text(encoding="utf-8")
    assert "## Pre-annotation acceptance" in markdown and "None: no annotated task" in markdown
    assert "None: no annotated task" in (output.folder / "report.html").read_text(encoding="utf-8")
    assert not [line for line in (output.folder / "agreement.csv").read_text().splitlines()
                if line.startswith("acceptance,")]
