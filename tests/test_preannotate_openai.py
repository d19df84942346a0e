"""The `openai` pre-annotation backend against a local stand-in for the remote model service.

No model endpoint is reachable from the test machines, so `tests/chat_server.py` stands in for the remote
service: a real HTTP server on 127.0.0.1 that speaks the chat-completions contract (bearer key,
`response_format` with a strict JSON schema) and answers every row from the sample's ground truth (the
hand-written reference labels of the built-in couple and family sessions), except for the rows where it
injects a fault: invalid JSON, a schema violation, a rule violation, HTTP 429 with Retry-After, HTTP 500, no
answer within the timeout, a slow answer. The client, the SDK, HTTP and the cache are all real.

The rows are the samples' script turns, one row per turn, with made-up times: they stand in for the speech
stages' rows (which need minutes of real models), and nothing in the backend depends on how rows were made.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.errors import RescueError
from pipeline.llm.content import data_url
from pipeline.preannotate.draft_schema import CONFIDENCE
from pipeline.preannotate.openai_backend import NOT_SENT, draft_session_run
from pipeline.preannotate.openai_settings import SECTION, OpenAIDraftSettings
from pipeline.project import Project
from pipeline.records import (AudioStream, CatalogEntry, Keyframe, SessionMedia, TranscriptRow, VideoStream,
                              row_id_for)
from pipeline.sample.annotators import reference_labels
from pipeline.label_rules import row_problems
from tests.chat_server import ChatServer, Received, Reply

KEY_ENV = "RESCUE_TEST_LLM_KEY"
KEY = "sk-test-3f9c1a7be04d4e55a2b8c6d1e9f07a3c"  # a made-up key: the server checks it, the tests look for it
ROW_ID = re.compile(r"\(row_id (\S+)\):")


def row_id_asked(body: dict) -> str:
    """The row id a request asks about (from the user message's text, which may come with image items)."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else " ".join(i["text"] for i in content if i["type"] == "text")
    return ROW_ID.search(text).group(1)


class Truth:
    """One sample session as rows, its catalog entry and the reference values of every row."""

    def __init__(self, name: str) -> None:
        ref = reference_labels(name)
        self.entry = CatalogEntry(session_id=ref.session_id, scenario=ref.scenario,
                                  participants=ref.script.participants, video="raw_video/sample/stand-in.mp4", sha256="0" * 64)
        self.rows = [TranscriptRow(row_id=row_id_for(ref.session_id, 6.0 * n, 6.0 * n + 5),
                                   session_id=ref.session_id, row_index=n + 1, start=6.0 * n, end=6.0 * n + 5,
                                   speaker=turn.speaker, text=turn.text)
                     for n, turn in enumerate(ref.script.turns)]
        self.values = {row.row_id: dict(values) for row, values in zip(self.rows, ref.turns)}
        self.schema = ref.schema

    def row(self, number: int) -> TranscriptRow:
        return self.rows[number - 1]

    def answer(self, received: Received) -> dict:
        """The reference values of the row the request asks about, with the fields its schema asks for."""
        row_id = row_id_asked(received.body)
        asked = received.body["response_format"]["json_schema"]["schema"]["properties"]
        values = {k: v for k, v in self.values[row_id].items() if k in asked}
        return {**values, CONFIDENCE: {name: 0.8 for name in values}}

    def number_of(self, received: Received) -> int:
        row_id = row_id_asked(received.body)
        return next(row.row_index for row in self.rows if row.row_id == row_id)


def faulty_truth(truth: Truth) -> Callable[[Received], Reply]:
    """Answers from the truth, with one fault per row 2-8 of the couple sample (speakers noted)."""

    def respond(received: Received) -> Reply:
        number, answer = truth.number_of(received), truth.answer(received)
        first = received.attempt == 0
        if number == 2:  # Maya
            return Reply(content='{"target": ["Therapist"], "utterance_type": "accus')  # cut-off JSON
        if number == 3:  # Daniel: a label outside the couple set
            return Reply(content=json.dumps({**answer, "utterance_type": "sarcasm"}))
        if number == 4:  # Maya addresses herself: valid JSON schema, broken rule
            return Reply(content=json.dumps({**answer, "target": ["Maya"]}))
        if number == 5 and first:
            return Reply(status=429, headers={"Retry-After": "1"}, error="rate limited")
        if number == 6 and first:
            return Reply(status=500, error="overloaded")
        if number == 7 and first:
            return Reply(content=json.dumps(answer), delay_s=6.0)  # longer than timeout_s
        if number == 8:
            return Reply(content=json.dumps(answer), delay_s=1.0)  # slow, within timeout_s
        return Reply(content=json.dumps(answer))

    return respond


def settings_for(server: ChatServer, **changes: object) -> OpenAIDraftSettings:
    return OpenAIDraftSettings(base_url=server.base_url, model="stand-in-model", api_key_env=KEY_ENV, timeout_s=4.0,
                               backoff_s=0.05, **changes)


def files_holding(folder: Path, secret: str) -> list[str]:
    return [p.as_posix() for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def test_drafts_from_the_truth_quarantine_and_retries_then_cache(project: Project, key: str,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    truth = Truth("couple")
    with ChatServer(faulty_truth(truth), api_key=key) as server:
        run = draft_session_run(project, truth.entry, settings_for(server), truth.schema, truth.rows)
        sent = server.bodies()
        # Second run: everything (the quarantined answers too) comes from the cache; the server sees no request.
        again = draft_session_run(project, truth.entry, settings_for(server), truth.schema, truth.rows)
        assert len(server.received) == len(sent)

    drafts = run.drafts
    assert (drafts.backend, drafts.model, drafts.schema_id) == ("openai", "stand-in-model", "rescue-v1")
    reasons = {q.row_id: q.reason for q in drafts.quarantined}
    assert set(reasons) == {truth.row(2).row_id, truth.row(3).row_id, truth.row(4).row_id}
    assert reasons[truth.row(2).row_id].startswith("not valid JSON")
    assert reasons[truth.row(3).row_id].startswith("breaks the JSON schema: utterance_type: 'sarcasm'")
    assert reasons[truth.row(4).row_id].startswith("breaks the schema's rules: target")
    drafted = {d.row_id: d for d in drafts.rows}
    assert set(drafted) | set(reasons) == {row.row_id for row in truth.rows}
    for row in truth.rows:  # retried, slow and plain rows alike: exactly the truth, and valid
        if row.row_id in drafted:
            draft = drafted[row.row_id]
            assert draft.values == truth.values[row.row_id]
            assert row_problems(truth.schema, "couple", truth.entry.participants, len(truth.rows), draft.values) == []
            assert set(draft.scores) == set(draft.values) - {"primary_speaker"}
            assert all(score == 0.8 for score in draft.scores.values())

    waits = {(label, why.split(" (")[0]): seconds for label, why, seconds in run.stats.waits}
    assert waits[(truth.row(5).row_id, "HTTP 429")] == 1.0  # the server's Retry-After, not our backoff
    assert (truth.row(6).row_id, "HTTP 500") in waits
    assert (truth.row(7).row_id, "no answer within 4 s") in waits
    assert run.stats.answers == len(truth.rows) and run.stats.cache_hits == 0
    assert run.stats.tokens > 0 and not run.budget_stopped
    assert all(body["temperature"] == 0 and body["model"] == "stand-in-model" for body in sent)
    assert all(body["response_format"]["json_schema"]["strict"] for body in sent)

    assert again.drafts == drafts
    assert again.stats.cache_hits == len(truth.rows) and again.stats.tokens == 0
    rows = len(truth.rows)
    assert again.stats.describe() == f"{rows} requests: 0 answered, {rows} from the cache, 0 tokens"

    cache = project.build / "llm-cache"
    assert len(list(cache.rglob("*.json"))) == len(truth.rows)
    assert files_holding(project.root, key) == []
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err + caplog.text


def test_family_rows_use_the_family_label_sets_and_names(project: Project, key: str) -> None:
    truth = Truth("family")
    with ChatServer(lambda r: Reply(content=json.dumps(truth.answer(r))), api_key=key) as server:
        run = draft_session_run(project, truth.entry, settings_for(server), truth.schema, truth.rows)
        sent = server.bodies()
    assert run.drafts.quarantined == ()
    assert {d.row_id: d.values for d in run.drafts.rows} == truth.values
    therapist = next(b for b in sent if "spoken by the therapist" in b["messages"][0]["content"])
    properties = therapist["response_format"]["json_schema"]["schema"]["properties"]
    assert properties["relation_cycle_state"]["enum"] == [*truth.schema.labels("relation_pattern", "family"), ""]
    strategy = properties["support_strategy"]["items"]["properties"]
    assert strategy["strategy_type"]["enum"] == list(truth.schema.labels("support_strategy", "family"))
    assert strategy["provider"]["enum"] == ["Linda", "Mark", "Zoe", "Therapist", "Family"]
    assert "utterance_type" not in properties and "primary_speaker" not in properties
    # The prompt carries the schema's label definitions and precedence rules (one source with the form).
    system = therapist["messages"][0]["content"]
    guide = truth.schema.label_guide("support_strategy", "family")
    assert all(f"{label}: {text}" in system for label, text in guide.definitions)
    assert all(rule in system for rule in guide.rules)
    assert "goal_align:" not in system  # a couple-only label is not offered (the shared rules still name it)


@pytest.mark.parametrize("budget", [{"max_total_tokens": 1}, {"price_per_1k_tokens": 2.0, "max_cost": 0.000001}])
def test_budget_stops_cleanly_and_a_rerun_resumes(project: Project, key: str, budget: dict) -> None:
    truth = Truth("couple")
    answer = lambda r: Reply(content=json.dumps(truth.answer(r)))  # noqa: E731
    with ChatServer(answer, api_key=key) as server:
        run = draft_session_run(project, truth.entry, settings_for(server, concurrency=1, **budget),
                                truth.schema, truth.rows)
        assert len(server.received) == 1
        # A bigger budget: the rows not drafted are sent, the one drafted comes from the cache.
        rerun = draft_session_run(project, truth.entry, settings_for(server), truth.schema, truth.rows)
        assert len(server.received) == len(truth.rows)
    assert run.budget_stopped
    assert [d.row_id for d in run.drafts.rows] == [truth.row(1).row_id]  # one request, then the limit held
    assert len(run.drafts.quarantined) == len(truth.rows) - 1
    assert all(q.reason.startswith(f"{NOT_SENT}: budget reached") for q in run.drafts.quarantined)
    if "max_cost" in budget:
        assert run.stats.cost == pytest.approx(run.stats.tokens / 1000 * 2.0)
    assert len(rerun.drafts.rows) == len(truth.rows) and not rerun.budget_stopped


def test_missing_key_names_the_setting(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    truth = Truth("couple")
    settings = OpenAIDraftSettings(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=KEY_ENV)
    with pytest.raises(RescueError) as error:
        draft_session_run(project, truth.entry, settings, truth.schema, truth.rows)
    assert KEY_ENV in error.value.message and f"{SECTION} api_key_env" in error.value.message


def test_unreachable_endpoint_names_the_setting(project: Project, key: str) -> None:
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    truth = Truth("couple")
    settings = OpenAIDraftSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=KEY_ENV,
                                   max_retries=1, backoff_s=0.01)
    with pytest.raises(RescueError) as error:
        draft_session_run(project, truth.entry, settings, truth.schema, truth.rows)
    assert f"{SECTION} base_url" in error.value.message and "cannot reach" in error.value.message


def test_refused_key_names_the_setting_and_never_repeats_the_key(project: Project, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")  # the SDK's and HTTP library's debug records too
    wrong = "sk-wrong-5d1e0c2f9a8b4b7e"
    monkeypatch.setenv(KEY_ENV, wrong)
    truth = Truth("couple")
    with ChatServer(lambda r: Reply(content="{}"), api_key=KEY) as server:  # echoes the wrong key in its 401
        with pytest.raises(RescueError) as error:
            draft_session_run(project, truth.entry, settings_for(server), truth.schema, truth.rows)
    text = str(error.value)
    assert f"{SECTION} api_key_env" in text and "HTTP 401" in text
    assert wrong not in text and wrong[3:11] not in text
    assert files_holding(project.root, wrong) == []
    assert wrong not in caplog.text


def test_keyframes_of_the_row_go_as_images_when_asked(project: Project, key: str) -> None:
    """With `keyframes` on, each row carries the ingest thumbnails inside its span (else the nearest one)."""
    truth = Truth("couple")
    folder = project.session_dir("media", truth.entry.session_id)
    (folder / "keyframes").mkdir(parents=True)
    frames = []
    for second in (2.0, 4.0, 9.0, 100.0):  # rows are [6n, 6n+5]: row 1 holds 2 and 4, row 2 holds 9
        path = folder / "keyframes" / f"{second:06.1f}.jpg"
        path.write_bytes(b"\xff\xd8\xff\xe0" + str(second).encode())
        frames.append(Keyframe(time=second, path=project.rel(path)))
    media = SessionMedia(
        session_id=truth.entry.session_id, scenario="couple", participants=truth.entry.participants,
        source_video=truth.entry.video, source_sha256="0" * 64, container="mp4", source_duration=140.0,
        video_stream=VideoStream(codec="h264", width=320, height=180, fps=25.0),
        audio_stream=AudioStream(codec="aac", sample_rate=16000, channels=1), clip_start=0.0, clip_end=140.0,
        session_video=truth.entry.video, audio="build/media/a.wav", audio_sample_rate=16000,
        audio_samples=140 * 16000, keyframes=tuple(frames))
    (folder / "media.json").write_text(media.model_dump_json(), encoding="utf-8")
    rows = truth.rows[:3]
    with ChatServer(lambda r: Reply(content=json.dumps(truth.answer(r))), api_key=key) as server:
        run = draft_session_run(project, truth.entry, settings_for(server, keyframes=True), truth.schema, rows)
        sent = {truth.number_of(Received(b, 0)): b["messages"][-1]["content"] for b in server.bodies()}
    assert len(run.drafts.rows) == 3
    images = {n: [item["image_url"]["url"] for item in content if item["type"] == "image_url"]
              for n, content in sent.items()}
    expected = {n: [data_url(project.abs(frames[i].path)) for i in picks] for n, picks in
                {1: [0, 1], 2: [2], 3: [2]}.items()}  # row 3 ([12, 17]) has none inside: the nearest, 9 s
    assert images == expected


def test_the_step_reaches_the_endpoint_through_the_settings_and_the_backend_registry(project: Project,
                                                                                     key: str) -> None:
    """`[tool.rescue.preannotate] backend = "openai"` and its endpoint section, read as the preannotate step
    reads them, give a backend that drafts a session (here: the family sample) from the endpoint."""
    from pipeline.preannotate.backends import make_backend
    from pipeline.preannotate.session import DraftSession
    from pipeline.settings import load_settings

    truth = Truth("family")
    with ChatServer(lambda r: Reply(content=json.dumps(truth.answer(r))), api_key=key) as server:
        (project.root / "pyproject.toml").write_text(
            '[tool.rescue.preannotate]\nbackend = "openai"\n\n[tool.rescue.preannotate.openai]\n'
            f'base_url = "{server.base_url}"\nmodel = "stand-in-model"\napi_key_env = "{KEY_ENV}"\n')
        settings = load_settings(project.root).preannotate
        backend = make_backend(project, settings, truth.schema)
        session = DraftSession(truth.entry.session_id, truth.entry.scenario, truth.entry.participants,
                               tuple(truth.rows), truth.schema)
        drafts = backend.draft(session)
    assert backend.name == "openai" and drafts.model_version == f"openai:stand-in-model:{truth.schema.id}"
    assert {d.row_id: d.values for d in drafts.rows} == truth.values and drafts.quarantined == ()
    assert not files_holding(project.build, KEY)
