"""`rescue run-model` against a local stand-in for a remote model service.

No model endpoint is reachable from the test machines, so `tests/chat_server.py` stands in for the remote
model: a real HTTP server on 127.0.0.1 that speaks the chat-completions contract (bearer key, request shape,
JSON mode). It answers from the release's gold for some ids, wrongly for others, leaves ids out, repeats one,
sends invalid JSON, HTTP 429 with Retry-After, HTTP 500 and no answer within the timeout. The client, the SDK,
HTTP, the cache and `rescue evaluate` are all real; the release is frozen from the small hand-made gold
sessions of tests/release_inputs.py (no speech models needed).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.errors import RescueError
from pipeline.layout import RUN_PREDICTIONS, RUN_RECORD, RUN_SCORES, RUN_UNANSWERED
from pipeline.project import Project
from pipeline.runmodel.answers import normalised
from pipeline.runmodel.batches import Batch, batch_request, make_batches
from pipeline.runmodel.prompts import PROMPT_VERSION, system_prompt
from pipeline.runmodel.run import run_model
from pipeline.runmodel.settings import RunModelSettings
from pipeline.tasks.evaluate import evaluate
from pipeline.tasks.manifest import MANIFEST
from pipeline.tasks.modes import VIDEO_MODE
from pipeline.tasks.runs import read_run, score_run
from tests.chat_server import ChatServer, Received, Reply
from tests.release_inputs import SCHEMA
from tests.run_model_releases import clip_of, flip, with_media
from tests.stand_in_model import ENV, KEY, KEY_ENV, answer, asked, gold, itp_truthful, lines, records, settings

ID_KEY = {"itp": "candidate_id", "ssp": "turn_id", "er": "checkpoint_id"}


def itp_responder(truth: dict[str, dict[str, Any]], first_id: str) -> Callable[[Received], Reply]:
    """Batches of 3 (couple: 3, 3, 2; family: 2), one kind of fault per batch; `first_id` opens the first."""

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        ids = [t["candidate_id"] for t in document["targets"]]
        right = [{"candidate_id": i, "should_speak": truth[i]["should_speak"], "confidence": 0.9} for i in ids]
        sample = document["sample_id"]
        if len(ids) == 3 and ids[0] == first_id:                 # 429 first; then right, wrong, right (as a bool)
            if received.attempt == 0:
                return Reply(status=429, headers={"Retry-After": "1"}, error="slow down")
            right[1]["should_speak"] = flip(right[1]["should_speak"])
            right[2]["should_speak"] = right[2]["should_speak"] == "yes"
            return answer(sample, right)
        if len(ids) == 3:                                        # 500 first; then right, dropped, given twice
            if received.attempt == 0:
                return Reply(status=500, error="upstream failed")
            twice = {**right[2], "should_speak": flip(right[2]["should_speak"])}
            return answer(sample, [right[0], right[2], twice])
        if document["scenario"] == "couple":                     # broken JSON
            return Reply(content='{"sample_id": "x", "predictions": [{"candidate_id": ')
        if received.attempt == 0:                                # no answer within the timeout, then
            return Reply(content="{}", delay_s=2.5)              # right, "maybe", and an id never asked
        right[1]["should_speak"] = "maybe"
        return answer(sample, [*right, {"candidate_id": "itp-0000000000000000", "should_speak": "yes"}])

    return respond


def test_itp_run_faults_scores_cache_and_record(release: Path, tmp_path: Path) -> None:
    project = Project(tmp_path)
    truth = gold(release, "itp")
    couple = [r["id"] for r in records(release, "itp") if r["scenario"] == "couple"]
    family = [r["id"] for r in records(release, "itp") if r["scenario"] == "family"]
    assert (len(couple), len(family)) == (8, 2)
    # The paper's per-sample batches of 3 (answers visible: see test_run_model_leaks.py): one fault per batch.
    paper = {"batch_size": 3, "batching": "paper"}
    with ChatServer(itp_responder(truth, couple[0]), api_key=KEY) as server:
        result = run_model(project, release, "itp", "text", settings(server, **paper), SCHEMA, environ=ENV)
        sent = len(server.received)
        bodies = server.bodies()
        again = run_model(project, release, "itp", "dialogue", settings(server, **paper), SCHEMA, environ=ENV)
        assert len(server.received) == sent, "the second run must send nothing: every answer is cached"
        assert not server.errors

    # The requests: JSON mode, temperature 0, one sample per request, ids under candidate_id, no gold.
    assert {b["response_format"]["type"] for b in bodies} == {"json_object"}
    assert {b["temperature"] for b in bodies} == {0}
    assert all(len({t["candidate_id"] for t in asked(b)["targets"]}) == len(asked(b)["targets"]) for b in bodies)
    targets = [t for b in bodies for t in asked(b)["targets"]]
    assert all("should_speak" not in t and "gold" not in t for t in targets)  # the gold stays out
    assert "tone_of_voice" not in json.dumps(targets)  # the dialogue mode hides the cues
    # 4 requests + 3 retries (429, 500, timeout) reached the server
    assert sent == 7
    assert any(why == "HTTP 429" and wait == 1.0 for _, why, wait in result.stats.waits)  # Retry-After honoured

    folder = result.folder
    assert again.folder == folder and folder.parent == tmp_path / "build" / "runs"
    predictions = {p["id"]: p for p in lines(folder / RUN_PREDICTIONS)}
    correct = {couple[0], couple[2], couple[3], family[0]}
    assert set(predictions) == correct | {couple[1]}
    assert predictions[couple[1]]["should_speak"] == flip(truth[couple[1]]["should_speak"])
    assert all(predictions[i]["should_speak"] == truth[i]["should_speak"] for i in correct)  # the bool normalised
    reasons = {u["id"]: u["reason"].split(":")[0] for u in lines(folder / RUN_UNANSWERED)}
    assert reasons == {couple[4]: "missing_id", couple[5]: "repeated_id", couple[6]: "invalid_json",
                       couple[7]: "invalid_json", family[1]: "invalid_answer"}

    record = json.loads((folder / RUN_RECORD).read_text())
    raw = (folder / RUN_RECORD).read_text()
    assert KEY not in raw and KEY[:12] not in raw and "http" not in raw
    assert record["endpoint_host"] == server.base_url.split("//")[1].split("/")[0]
    assert (record["task"], record["mode"], record["model"], record["prompt_version"]) == (
        "itp", "dialogue", "stand-in-model", PROMPT_VERSION)
    manifest = json.loads((release / MANIFEST).read_text())
    assert record["release"]["version"] == "v1"
    assert record["release"]["manifest_sha256"] == manifest["manifest_sha256"]
    counts = record["counts"]
    assert (counts["instances"], counts["requests"], counts["answered"], counts["unanswered"]) == (10, 4, 5, 5)
    assert counts["unanswered_by_reason"] == {"invalid_answer": 1, "invalid_json": 2, "missing_id": 1,
                                              "repeated_id": 1}
    assert counts["unknown_ids_in_answers"] == 1
    # cached answers cost nothing: the re-run adds zero to what the run spent, and the record keeps that (issue 22)
    assert result.record["tokens"] > 0 and again.record["tokens"] == result.record["tokens"]
    assert [entry["tokens"] for entry in again.record["spent"]] == [result.record["tokens"], 0]
    assert again.record["answer_tokens"] == result.record["answer_tokens"] > 0
    assert again.record["counts"]["cached"] == 4 and again.record["counts"]["sent"] == 0
    assert lines(again.folder / RUN_PREDICTIONS) == lines(folder / RUN_PREDICTIONS)  # no duplicates either

    # `rescue evaluate` scores the file; unanswered instances count as wrong (a missing yes is a miss).
    report = evaluate(release, "itp", folder / RUN_PREDICTIONS)
    overall = report["scores"]["overall"]
    golds = {i: truth[i]["should_speak"] for i in couple + family}
    expected = {"tp": sum(g == "yes" for i, g in golds.items() if i in correct),
                "tn": sum(g == "no" for i, g in golds.items() if i in correct)}
    expected["fn"] = sum(g == "yes" for g in golds.values()) - expected["tp"]
    expected["fp"] = sum(g == "no" for g in golds.values()) - expected["tn"]
    assert {k: overall[k] for k in expected} == expected
    assert overall["accuracy"] == pytest.approx(len(correct) / 10, abs=1e-4)
    assert report["problems"]["counts"]["invalid"] == 0 and len(report["problems"]["missing_ids"]) == 5


def test_ssp_drops_labels_outside_the_candidates_and_prompts_the_scenario_labels(release: Path,
                                                                                 tmp_path: Path) -> None:
    truth = gold(release, "ssp")
    instances = records(release, "ssp")
    hopeless = instances[1]["id"]

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        out = []
        for target in document["targets"]:
            pid, labels = target["turn_id"], target["candidate_strategy_labels"]
            wrong = next(label for label in labels if label != truth[pid]["strategy_label"])
            ranking = ["not_a_label", truth[pid]["strategy_label"], truth[pid]["strategy_label"], wrong]
            out.append({"turn_id": pid, "strategy_top3": ["nope", "goal_align!"] if pid == hopeless else ranking})
        return answer(document["sample_id"], out)

    with ChatServer(respond, api_key=KEY) as server:
        result = run_model(Project(tmp_path), release, "ssp", "audiovisual", settings(server), SCHEMA, environ=ENV)
        bodies = server.bodies()
    systems = {asked(b)["scenario"]: b["messages"][0]["content"] for b in bodies}
    assert "goal_align:" in systems["couple"] and "goal_align:" not in systems["family"]  # the family set has none
    assert "boundary:" in systems["family"]
    assert all("tone_of_voice" in json.dumps(asked(b)) and "body_posture" in json.dumps(asked(b)) for b in bodies)
    predictions = {p["id"]: p for p in lines(result.folder / RUN_PREDICTIONS)}
    assert hopeless not in predictions
    for pid, prediction in predictions.items():
        assert prediction["strategy_top3"][0] == truth[pid]["strategy_label"] and len(prediction["strategy_top3"]) == 2
    assert [u["reason"].split(":")[0] for u in lines(result.folder / RUN_UNANSWERED)] == ["invalid_answer"]
    scores = evaluate(release, "ssp", result.folder / RUN_PREDICTIONS)["scores"]["overall"]
    assert scores["recall_at_1"] == pytest.approx((len(instances) - 1) / len(instances), abs=1e-4)


def test_a_budget_stop_is_recorded_and_a_rerun_completes_from_the_cache(release: Path, tmp_path: Path) -> None:
    truth = gold(release, "itp")
    project = Project(tmp_path)
    with ChatServer(itp_truthful(truth), api_key=KEY) as server:
        stopped = run_model(project, release, "itp", "dialogue", settings(server, batch_size=3, concurrency=1,
                                                                          max_total_tokens=1), SCHEMA, environ=ENV)
        assert len(server.received) == 1  # the budget is spent by the first answer: nothing more is sent
        requests = stopped.record["counts"]["requests"]  # leak-free batches: ITP instances mostly one per request
        first = len(asked(server.bodies()[0])["targets"])
        reasons = {u["reason"].split(":")[0] for u in lines(stopped.folder / RUN_UNANSWERED)}
        assert reasons == {"not_sent"} and stopped.record["counts"]["unanswered"] == 10 - first
        score_run(read_run(stopped.folder), release, text_similarity=False)
        assert (stopped.folder / RUN_SCORES).is_file()
        done = run_model(project, release, "itp", "dialogue", settings(server, batch_size=3, concurrency=1),
                         SCHEMA, environ=ENV)
        assert len(server.received) == requests  # the unsent requests only
        assert done.folder == stopped.folder  # the budget changes no answer: the same run, now complete
        assert not (done.folder / RUN_SCORES).exists()  # it scored the stopped run's answers: gone, not stale
        scores = score_run(read_run(done.folder), release, text_similarity=False)
        again = run_model(project, release, "itp", "dialogue", settings(server, batch_size=3, concurrency=1),
                          SCHEMA, environ=ENV)
        assert len(server.received) == requests and again.folder == done.folder  # all from the cache
        assert json.loads((done.folder / RUN_SCORES).read_text()) == scores  # same answers: the scores stand
    assert lines(done.folder / RUN_UNANSWERED) == []
    assert done.record["counts"]["cached"] == 1 and done.record["counts"]["answered"] == 10
    # what each invocation spent adds up: the completing run adds its tokens, the cached one adds zero
    assert done.stats.tokens > 0 and done.record["tokens"] == stopped.record["tokens"] + done.stats.tokens
    assert again.record["tokens"] == done.record["tokens"] and again.record["spent"][-1]["tokens"] == 0
    assert len(again.record["spent"]) == 3
    assert sorted(p["id"] for p in lines(done.folder / RUN_PREDICTIONS)) == sorted(truth)


def test_a_run_never_writes_into_another_runs_folder_or_a_foreign_one(release: Path, tmp_path: Path) -> None:
    project, out = Project(tmp_path), tmp_path / "my-run"
    with ChatServer(itp_truthful(gold(release, "itp")), api_key=KEY) as server:
        first = run_model(project, release, "itp", "dialogue", settings(server), SCHEMA, environ=ENV, out=out)
        kept = {p.name: p.read_bytes() for p in out.iterdir()}
        with pytest.raises(RescueError) as other_run:  # another batch size: another run id
            run_model(project, release, "itp", "dialogue", settings(server, batch_size=2), SCHEMA, environ=ENV,
                      out=out)
        assert first.record["run_id"] in other_run.value.message and "--out" in other_run.value.fix
        foreign = tmp_path / "notes"
        foreign.mkdir()
        (foreign / "thesis.tex").write_text("mine")
        sent = len(server.received)
        with pytest.raises(RescueError, match="thesis.tex"):
            run_model(project, release, "itp", "dialogue", settings(server), SCHEMA, environ=ENV, out=foreign)
        assert len(server.received) == sent  # refused before anything was sent
    assert {p.name: p.read_bytes() for p in out.iterdir()} == kept
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]


def test_answers_are_normalised_never_guessed() -> None:
    er = {"speaker": "Alan"}
    assert normalised("er", {"predicted_internal_emotion": " hurt ", "predicted_intensity_score": "7.4"}, er) == (
        {"predicted_internal_emotion": "hurt", "predicted_intensity_score": 7}, "")
    assert normalised("er", {"predicted_internal_emotion": "hurt", "predicted_intensity_score": True}, er)[0] is None
    assert normalised("er", {"predicted_internal_emotion": "", "predicted_intensity_score": 3}, er)[0] is None
    views = normalised("vp", {"predicted_viewpoints": [{"target": "Evelyn", "viewpoint": "unfair"},
                                                       {"target": "", "viewpoint": "x"}]}, er)[0]
    assert views == {"predicted_viewpoints": [{"source": "Alan", "target": "Evelyn", "viewpoint": "unfair"}]}
    for given, expected in ((True, "yes"), ("Y", "yes"), ("keep_listening", "no"), ("0", "no")):
        assert normalised("itp", {"should_speak": given}, {})[0] == {"should_speak": expected}
    assert normalised("itp", {"should_speak": "perhaps yes"}, {})[0] is None
    stp = {"candidate_target_labels": ["Alan", "Evelyn", "Couple"]}
    assert normalised("stp", {"target_top3": "Evelyn"}, stp)[0] == {"target_top3": ["Evelyn"]}
    assert normalised("stp", {"target_top3": ["Bob", "Couple", "Couple", "Alan", "Evelyn"]}, stp)[0] == {
        "target_top3": ["Couple", "Alan", "Evelyn"]}


# --- the video mode: records with the media keys the release documents (pipeline/tasks/modes.py) ---

def videos(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item["video_url"] for item in body["messages"][-1]["content"] if item["type"] == "video_url"]


def test_video_items_carry_the_clips_in_order_as_data_urls_and_as_urls(release: Path, tmp_path: Path) -> None:
    media = with_media(release, tmp_path / "v1")
    er = records(media, "er")[0]
    ssp = next(r for r in records(media, "ssp") if r.get("video_attachments"))
    system = system_prompt(SCHEMA, "er", "couple", VIDEO_MODE)
    as_data = batch_request("er", VIDEO_MODE, Batch(er["sample_id"], "couple", (er,)), system, media,
                            RunModelSettings(model="m"))
    payload = as_data.payload("m", None)
    items = videos(payload)
    wanted = [*(clip_of(er["sample_id"], r["row_index"]) for r in er["prior_context"]), clip_of(er["sample_id"],
                                                                                                  er["row_index"])]
    assert len(items) == len(er["prior_context"]) + 1 and {i["fps"] for i in items} == {1}
    decoded = [base64.b64decode(i["url"].split(",", 1)[1]).decode() for i in items]
    assert decoded == [f"clip {clip}" for clip in wanted]  # context clips, then the row's own
    assert all(i["url"].startswith("data:video/mp4;base64,") for i in items)
    assert payload["messages"][-1]["content"][-1]["type"] == "text"  # the text after the videos
    target = asked(payload)["targets"][0]
    assert target["video_attachment_index"] == len(wanted) and "tone_of_voice" not in target
    assert [r["video_attachment_index"] for r in target["prior_context"]] == list(range(1, len(wanted)))

    base = RunModelSettings(model="m", media_base_url="https://media.example.org/rescue/v1/")
    as_urls = videos(batch_request("ssp", VIDEO_MODE, Batch(ssp["sample_id"], ssp["scenario"], (ssp,)), system,
                                   media, base).payload("m", None))
    assert [i["url"] for i in as_urls] == [f"https://media.example.org/rescue/v1/{c}"
                                           for c in ssp["video_attachments"]]
    assert all("fps" not in i for i in as_urls)  # SSP: context clips only, no fps (as the paper's script)
    (media / wanted[0]).unlink()
    with pytest.raises(RescueError, match="is missing from the release"):
        batch_request("er", VIDEO_MODE, Batch(er["sample_id"], "couple", (er,)), system, media,
                      RunModelSettings(model="m"))
    bad = {**er, "video_attachments": ["../../etc/passwd"]}
    with pytest.raises(RescueError, match="not a path inside the release"):
        batch_request("er", VIDEO_MODE, Batch(er["sample_id"], "couple", (bad,)), system, media,
                      RunModelSettings(model="m"))


def test_video_run_sends_one_instance_per_request_with_its_clips_and_the_headers(release: Path,
                                                                                 tmp_path: Path) -> None:
    media = with_media(release, tmp_path / "v1")
    ssp = records(media, "ssp")
    without = [r["id"] for r in ssp if not r.get("video_attachments")]
    assert without and len(without) < len(ssp)  # the family instances: no context clip
    truth = gold(media, "ssp")

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        assert received.headers.get("x-dashscope-ossresourceresolve") == "enable"
        return answer(document["sample_id"], [{"turn_id": t["turn_id"], "strategy_top3": [
            truth[t["turn_id"]]["strategy_label"]]} for t in document["targets"]])

    with ChatServer(respond, api_key=KEY) as server:
        result = run_model(Project(tmp_path), media, "ssp", "frames", settings(
            server, batch_size=5, extra_headers={"X-DashScope-OssResourceResolve": "enable"}), SCHEMA, environ=ENV)
        bodies = server.bodies()
        assert not server.errors
    taking = [r for r in ssp if r.get("video_attachments")]
    assert len(bodies) == len(taking)  # one instance per request in the video mode
    by_id = {r["id"]: r for r in taking}
    for body in bodies:
        (target,) = asked(body)["targets"]
        clips = by_id[target["turn_id"]]["video_attachments"]
        assert [base64.b64decode(v["url"].split(",", 1)[1]).decode() for v in videos(body)] == [
            f"clip {c}" for c in clips]
    assert result.record["mode"] == VIDEO_MODE and result.record["settings"]["batch_size"] == 1
    assert result.record["left_out_of_mode"] == without
    assert {p["id"] for p in lines(result.folder / RUN_PREDICTIONS)} == set(by_id)
    assert result.record["extra_headers"] == ["X-DashScope-OssResourceResolve"]
    assert "enable" not in (result.folder / RUN_RECORD).read_text()


# --- bad input ---

def test_bad_input_gets_clear_errors(release: Path, tmp_path: Path) -> None:
    project = Project(tmp_path)
    with pytest.raises(RescueError) as unsupported:
        run_model(project, release, "itp", "turn_video_audio", RunModelSettings(model="m"), SCHEMA, environ=ENV)
    assert "itp" in unsupported.value.message and unsupported.value.fix == (
        "use one of dialogue, audio, visual, audiovisual")
    with pytest.raises(RescueError) as no_media:
        run_model(project, release, "er", "frames", RunModelSettings(model="m"), SCHEMA, environ=ENV)
    assert "no video clips" in no_media.value.message and "rescue freeze --media" in no_media.value.fix
    with pytest.raises(RescueError) as no_key:
        run_model(project, release, "er", "dialogue", RunModelSettings(model="m", api_key_env="RESCUE_NO_SUCH_KEY"),
                  SCHEMA, environ={})
    assert "RESCUE_NO_SUCH_KEY" in no_key.value.message and "export RESCUE_NO_SUCH_KEY" in no_key.value.fix
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = RunModelSettings(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV, max_retries=0)
    with pytest.raises(RescueError) as unreachable:
        run_model(project, release, "er", "dialogue", down, SCHEMA, environ=ENV)
    assert "cannot reach the chat endpoint" in unreachable.value.message and "base_url" in unreachable.value.fix
    assert not (tmp_path / "build" / "runs").exists()  # a failed run leaves no run folder
    changed = tmp_path / "changed" / "v1"
    shutil.copytree(release, changed)
    (changed / "tasks/itp.jsonl").write_text((changed / "tasks/itp.jsonl").read_text().replace("Alan", "Alain"))
    with pytest.raises(RescueError, match="differs from the release manifest"):
        run_model(project, changed, "itp", "dialogue", RunModelSettings(model="m"), SCHEMA, environ=ENV)


def test_cli_runs_and_reports(release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[1] / "annotation_schemas", root / "annotation_schemas")
    truth = gold(release, "itp")
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(itp_truthful(truth), api_key=KEY) as server:
        runner = CliRunner()
        ok = runner.invoke(main, ["--root", str(root), "run-model", "--task", "itp", "--mode", "audio",
                                  "--release", str(release), "--model", "stand-in", "--base-url", server.base_url,
                                  "--api-key-env", KEY_ENV, "--limit", "4"])
        assert ok.exit_code == 0, ok.output
        assert "4 answered, 0 unanswered" in ok.output and KEY not in ok.output
        bad = runner.invoke(main, ["--root", str(root), "run-model", "--task", "stp", "--mode", "frames",
                                   "--release", str(release), "--model", "stand-in"])
        assert bad.exit_code == 1 and "does not take input mode 'turn_video_audio'" in bad.output
    (run,) = (root / "build" / "runs").iterdir()
    assert len(lines(run / RUN_PREDICTIONS)) == 4 and json.loads((run / RUN_RECORD).read_text())["counts"][
        "instances"] == 4
    # The command run-model suggests is the one that feeds the leaderboard (evaluate --run writes scores.json).
    suggested = re.search(r"score it for the leaderboard: (rescue [^)]*)\)", " ".join(ok.output.split()))
    assert suggested, ok.output
    args = suggested.group(1).split()[1:]
    assert args[:4] == ["--root", str(root), "evaluate", "--run"] and Path(args[4]).resolve() == run.resolve()
    # A --limit run is scored over the instances it answered, and said to be partial, not failed on the rest.
    scored = runner.invoke(main, args)
    assert scored.exit_code == 0, scored.output
    assert "a --limit 4 run: scored over 4 of the 10 instances" in " ".join(scored.output.split())
    scores = json.loads((run / "scores.json").read_text())
    assert scores["scores"]["overall"]["instances"] == 4 and scores["left_out_by_limit"] == len(truth) - 4
    assert scores["scores"]["overall"]["accuracy"] == 1.0 and scores["problems"]["counts"]["missing_instances"] == 0
    board = runner.invoke(main, ["--root", str(root), "leaderboard"])
    assert board.exit_code == 0 and "answered only the first instances (--limit)" in " ".join(board.output.split())


def test_paper_batches_stay_within_one_sample(release: Path) -> None:
    batches = make_batches(records(release, "itp"), 3, task="itp", mode="dialogue", batching="paper")
    assert [len(b.records) for b in batches] == [3, 3, 2, 2]
    assert all(len({r["sample_id"] for r in b.records}) == 1 for b in batches)
    assert [i for b in batches for i in b.ids] == [r["id"] for r in records(release, "itp")]  # release order
