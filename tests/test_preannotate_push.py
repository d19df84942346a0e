"""Model drafts pushed as Label Studio predictions, against a real server (no mocks): model version and
per-field scores on the task, an idempotent re-push, a new model version that replaces the drafts of
unannotated tasks only, drafts of vanished rows dropped and counted, bad drafts files refused clearly.

The drafts files are written here as test inputs (what a preannotate backend writes), not a fake of push.
"""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.projects import annotator_title
from pipeline.annotate.push import draft_notes, push_rows
from pipeline.annotate.results import encode
from pipeline.engine.context import StepContext
from pipeline.annotate.push_step import push_fingerprint
from pipeline.errors import RescueError
from pipeline.preannotate.drafts import RowDraft, SessionDrafts, drafts_path
from pipeline.records import TranscriptRow
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import write_text_atomic
from tests.annotate_values import COUPLE_ENTITIES, client_values
from tests.labelstudio_fixtures import SETTINGS, LiveServer, add_catalog_copy, write_truth_rows

MAYA = "sample/maya_and_daniel"
TEAM = ("ann@example.org", "bob@example.org")
VANISHED = f"{MAYA}@999990000-999995000"
META_KEY = "draft"  # where a task records the draft it shows (pipeline/annotate/drafted.py)


def model_values(row: TranscriptRow, label: str) -> dict[str, JsonValue]:
    """What a model might draft: speaker, targets, and for client rows an utterance type."""
    values: dict[str, JsonValue] = {"primary_speaker": row.speaker,
                                    "target": ["Couple"] if row.speaker == "Therapist" else ["Therapist"]}
    if row.speaker != "Therapist":
        values["utterance_type"] = label
    return values


def write_drafts(project_root_build, rows: list[TranscriptRow], model: str, label: str,
                 extra: tuple[RowDraft, ...] = ()) -> SessionDrafts:
    drafts = SessionDrafts(session_id=MAYA, backend="gold-model", model=model, schema_id="rescue-v1", rows=tuple(
        RowDraft(row_id=r.row_id, values=model_values(r, label), scores={"utterance_type": 0.8, "target": 0.6,
                                                                          "primary_speaker": 0.9})
        for r in rows) + extra)
    write_text_atomic(drafts_path(project_root_build, MAYA), drafts.model_dump_json() + "\n")
    return drafts


@pytest.fixture(scope="module")
def schema(ls_server: LiveServer) -> AnnotationSchema:
    return load_schema(ls_server.project.schemas / "rescue-v1.yaml")


@pytest.fixture(scope="module")
def rows(ls_server: LiveServer) -> list[TranscriptRow]:
    add_annotators(ls_server.project, ls_server.connection, list(TEAM))
    return write_truth_rows(ls_server.project, MAYA)


def tasks_of(live: LiveServer, schema: AnnotationSchema, annotator: str) -> tuple[int, dict[str, dict]]:
    """The project id and row id -> task detail (predictions, meta, annotations) of an annotator's couple project."""
    info = live.client.find_project(annotator_title(schema, "couple", annotator))
    assert info is not None
    keys = live.client.task_keys(info.id)
    return info.id, {row_id: live.client.task_detail(ids[0]) for row_id, ids in keys.items()}


def predictions_of(live: LiveServer, schema: AnnotationSchema, annotator: str) -> dict[str, list[tuple[int, str]]]:
    """Row id -> (prediction id, model version) of every prediction, unfiltered (the task view shows only the
    project's model version)."""
    info = live.client.find_project(annotator_title(schema, "couple", annotator))
    assert info is not None
    return {str(t.meta["row_id"]): list(t.predictions) for t in live.client.task_predictions(info.id)}


def test_drafts_are_the_tasks_prediction_with_model_version_and_scores_and_a_re_push_changes_nothing(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow]) -> None:
    project = ls_server.project
    bad_label = RowDraft(row_id=rows[1].row_id, values={**model_values(rows[1], "no_such_label")})
    drafts = write_drafts(project.build, rows[:1] + rows[2:], "m1", "accusation",
                          extra=(bad_label, RowDraft(row_id=VANISHED, values={"primary_speaker": "Maya"})))
    summary = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert summary.drafts == {MAYA: "gold-model:m1:rescue-v1"} == {MAYA: drafts.model_version}
    assert summary.drafts_dropped == {MAYA: 1}  # the vanished row's draft
    assert summary.drafts_refused == 1  # the unknown label: that row shows the transcript draft for it
    for email in TEAM:
        project_id, tasks = tasks_of(ls_server, schema, email)
        assert VANISHED not in tasks and set(tasks) == {r.row_id for r in rows}
        assert ls_server.client.project(project_id).model_version == drafts.model_version  # pre-filled
        client_row = rows[2]
        assert client_row.speaker != "Therapist"
        task = tasks[client_row.row_id]
        (prediction,) = task["predictions"]
        assert prediction["model_version"] == drafts.model_version
        by_control = {entry["from_name"]: entry for entry in prediction["result"]}
        assert by_control["utterance_type"]["value"] == {"choices": ["accusation"]}
        assert by_control["utterance_type"]["score"] == 0.8 and by_control["target"]["score"] == 0.6
        assert by_control["dialogue_cleaned"]["value"] == {"text": [client_row.text]}  # the transcript's draft
        assert "score" not in by_control["dialogue_cleaned"]
        assert prediction["score"] == pytest.approx((0.8 + 0.6 + 0.9) / 3)
        shown = task["meta"][META_KEY]
        assert shown["model_version"] == drafts.model_version
        assert shown["versions"] == {"primary_speaker": drafts.model_version, "target": drafts.model_version,
                                     "utterance_type": drafts.model_version, "dialogue_cleaned": "transcript"}
        refused = tasks[rows[1].row_id]
        assert "utterance_type" not in {e["from_name"] for e in refused["predictions"][0]["result"]}
    before = {email: predictions_of(ls_server, schema, email) for email in TEAM}
    again = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.imported, p.redrafted, p.drafts_kept, p.drafts_hidden) for p in again.projects] == [(0, 0, 0, 0)] * 2
    after = {email: predictions_of(ls_server, schema, email) for email in TEAM}
    assert after == before  # same drafts: nothing replaced on the server


def test_a_new_model_version_replaces_the_drafts_of_unannotated_tasks_only(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow]) -> None:
    project = ls_server.project
    write_drafts(project.build, rows, "m1", "accusation")
    push_rows(project, ls_server.connection, settings=SETTINGS)
    annotated_row = rows[2]
    _, ann_tasks = tasks_of(ls_server, schema, TEAM[0])
    task = ann_tasks[annotated_row.row_id]
    answer = {**client_values(), "primary_speaker": annotated_row.speaker, "utterance_type": "defense"}
    annotation_id = ls_server.client.create_annotation(task["id"], encode(schema, answer, COUPLE_ENTITIES))
    old_prediction = predictions_of(ls_server, schema, TEAM[0])[annotated_row.row_id]

    new = write_drafts(project.build, rows, "m2", "disclosure")
    summary = push_rows(project, ls_server.connection, settings=SETTINGS)
    mine = {p.annotator: p for p in summary.projects}
    assert (mine[TEAM[0]].redrafted, mine[TEAM[0]].drafts_kept) == (len(rows) - 1, 1)
    assert (mine[TEAM[1]].redrafted, mine[TEAM[1]].drafts_kept) == (len(rows), 0)
    for email in TEAM:
        project_id, tasks = tasks_of(ls_server, schema, email)
        predictions = predictions_of(ls_server, schema, email)
        assert ls_server.client.project(project_id).model_version == new.model_version
        for row_id, detail in tasks.items():
            if email == TEAM[0] and row_id == annotated_row.row_id:
                assert predictions[row_id] == old_prediction  # the draft its annotator saw
                assert detail["meta"][META_KEY]["model_version"] == "gold-model:m1:rescue-v1"
                (kept,) = detail["annotations"]
                assert kept["id"] == annotation_id
                assert kept["result"] == encode(schema, answer, COUPLE_ENTITIES)  # untouched
                continue
            assert [version for _, version in predictions[row_id]] == [new.model_version]
            assert detail["meta"][META_KEY]["model_version"] == new.model_version
            assert detail["meta"]["row_id"] == row_id
    again = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert [(p.redrafted, p.drafts_kept) for p in again.projects] == [(0, 1), (0, 0)]


def test_a_session_without_drafts_next_to_a_drafted_one_is_counted_as_not_pre_filled(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow]) -> None:
    project = ls_server.project
    add_catalog_copy(project, MAYA, "extra/no_drafts")
    plain = write_truth_rows(project, MAYA, as_session="extra/no_drafts")
    summary = push_rows(project, ls_server.connection, settings=SETTINGS)
    model = "gold-model:m2:rescue-v1"  # the previous test's drafts: still the model Label Studio pre-fills
    assert [(p.imported, p.model_version, p.drafts_hidden) for p in summary.projects] == [
        (len(plain), model, len(plain))] * 2
    assert any("do not pre-fill" in note or "does not pre-fill" in note for note in draft_notes(summary))
    _, tasks = tasks_of(ls_server, schema, TEAM[1])
    shown = tasks[plain[0].row_id]["meta"][META_KEY]
    assert shown["model_version"] == "transcript" and set(shown["versions"].values()) == {"transcript"}


def test_a_drafts_file_of_another_schema_or_session_is_a_clear_error(ls_server: LiveServer,
                                                                      rows: list[TranscriptRow]) -> None:
    project = ls_server.project
    path = drafts_path(project.build, MAYA)
    original = path.read_text(encoding="utf-8") if path.exists() else None
    try:
        for drafts, words in ((SessionDrafts(session_id=MAYA, backend="gold-model", model="m", schema_id="rescue-v9",
                                             rows=()), "schema rescue-v9"),
                              (SessionDrafts(session_id="other/one", backend="gold-model", model="m",
                                             schema_id="rescue-v1", rows=()), "'other/one'")):
            write_text_atomic(path, drafts.model_dump_json())
            with pytest.raises(RescueError, match=words) as caught:
                push_rows(project, ls_server.connection, settings=SETTINGS)
            assert "preannotate/sample/maya_and_daniel/drafts.json" in caught.value.message
            assert "rescue preannotate" in caught.value.fix
        write_text_atomic(path, "{not json")
        with pytest.raises(RescueError, match="not a readable drafts file"):
            push_rows(project, ls_server.connection, settings=SETTINGS)
    finally:
        if original is not None:
            write_text_atomic(path, original)


def test_new_drafts_change_the_push_fingerprint(ls_server: LiveServer, rows: list[TranscriptRow]) -> None:
    project = ls_server.project
    before = push_fingerprint(StepContext.load(project))
    write_drafts(project.build, rows, "m3", "request")
    assert push_fingerprint(StepContext.load(project)) != before


def test_the_gold_models_drafts_of_the_sample_gold_are_pushed_with_each_fields_source(
        ls_server: LiveServer, schema: AnnotationSchema, rows: list[TranscriptRow]) -> None:
    """The real gold-model, trained on both sample sessions' reference gold (min_sessions 2: with the default 5
    their two sessions could never show a gain), drafts this session's rows; push says per field whether its
    drafts come from the model, the baseline or nothing, and every task records it in its meta."""
    from pipeline.annotate.push import gating_notes, load_sessions
    from pipeline.preannotate.backends import make_backend
    from pipeline.preannotate.session import DraftSession
    from pipeline.preannotate.settings import GateSettings, PreannotateSettings
    from pipeline.sample.annotators import SAMPLE_NAMES, reference_labels
    from tests.sample_gold import sample_session, write_gold

    project = ls_server.project
    write_gold(project.root / "sample_gold.jsonl", [sample_session(name, 0, len(reference_labels(name, schema).turns))
                                                    for name in SAMPLE_NAMES])
    settings = PreannotateSettings(backend="gold-model", train_gold=("sample_gold.jsonl",),
                                   gate=GateSettings(min_sessions=2))
    (session_rows,), _ = load_sessions(project, (MAYA,))
    entry = session_rows.entry
    drafts = make_backend(project, settings, schema).draft(DraftSession(MAYA, entry.scenario, entry.participants,
                                                                        session_rows.rows, schema))
    write_text_atomic(drafts_path(project.build, MAYA), drafts.model_dump_json() + "\n")
    sources = drafts.sources()
    assert set(sources) >= {"utterance_type", "tone_of_voice", "relation_cycle_state", "background_dialogue"}
    assert set(sources.values()) <= {"model", "baseline", "nothing"}
    assert sources["background_dialogue"] != "model"  # empty on every sample row: no model answer can beat that

    summary = push_rows(project, ls_server.connection, settings=SETTINGS)
    assert summary.draft_sources == {MAYA: sources}
    (line,) = gating_notes(summary)
    assert line in draft_notes(summary) and line.startswith(f"{MAYA}: drafts ")
    for source, words in (("model", "from the model: "), ("baseline", "from the majority baseline: "),
                          ("nothing", "left empty: ")):
        listed = [name for name, found in sources.items() if found == source]
        if listed:
            assert f"{words}{', '.join(listed)}" in line
        else:
            assert words not in line
    for email in TEAM:
        _, tasks = tasks_of(ls_server, schema, email)
        mine = {row.row_id for row in session_rows.rows}  # (an earlier test added a session without drafts)
        fresh = [detail for row_id, detail in tasks.items() if row_id in mine and not detail["annotations"]]
        assert fresh
        for detail in fresh:
            shown = detail["meta"][META_KEY]
            assert shown["model_version"] == drafts.model_version and shown["sources"] == sources
            for name, source in sources.items():
                if source == "nothing":  # left empty: not drafted by the model version
                    assert shown["versions"].get(name) in (None, "transcript"), (name, shown["versions"])
