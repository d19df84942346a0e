"""The per-instance log of `rescue run-model` (requests.jsonl, samples.jsonl) and `rescue show-run`.

Real runs against tests/chat_server.py (a real local HTTP server standing in for the remote model, which no test
machine can reach), on the release frozen from the hand-made gold sessions. The log is checked against what the
server received and sent (the payload as sent, the raw answer), against the run's own files (predictions,
reasons) and, once scored, against an independent count from the gold file: the log's answers are the ones the
scorer used.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.errors import RescueError
from pipeline.layout import (
    RUN_PREDICTIONS,
    RUN_RECORD,
    RUN_REQUESTS,
    RUN_REQUESTS_PARTIAL,
    RUN_SAMPLE_SCORES,
    RUN_SAMPLES,
    RUN_SAMPLES_PARTIAL,
    RUN_SCORES,
    RUN_UNANSWERED,
)
from pipeline.project import Project
from pipeline.runmodel.log_records import user_text
from pipeline.runmodel.run import run_model
from pipeline.tasks.modes import VIDEO_MODE
from pipeline.tasks.runs import read_run, score_run
from tests.chat_server import ChatServer, Received, Reply
from tests.release_inputs import SCHEMA
from tests.run_model_releases import flip, self_leaking_release, with_media
from tests.stand_in_model import ENV, KEY, KEY_ENV, answer, asked, gold, itp_truthful, lines, records, settings

HEADER_SECRET = "hdr-secret-5b7d0c1e9f"  # an extra header's value: sent, never logged
SCRIPT = "<script>alert('x')</script>"


def faulty_itp(truth: dict[str, dict[str, Any]], first_id: str, sent: dict[str, str]) -> Any:
    """Per-sample batches of 3 (couple 3, 3, 2; family 2), one kind of answer per batch (`first_id` opens the first);
    what it answered for each request is kept in `sent` by the request's first id."""

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        ids = [t["candidate_id"] for t in document["targets"]]
        right = [{"candidate_id": i, "should_speak": truth[i]["should_speak"], "reason": SCRIPT} for i in ids]
        if document["scenario"] == "family":             # right, then "maybe"
            right[1]["should_speak"] = "maybe"
            content = json.dumps({"sample_id": document["sample_id"], "predictions": right})
        elif ids[0] == first_id:                                # right, wrong, right as a JSON bool
            right[1]["should_speak"] = flip(right[1]["should_speak"])
            right[2]["should_speak"] = right[2]["should_speak"] == "yes"
            content = json.dumps({"sample_id": document["sample_id"], "predictions": right})
        elif len(ids) == 3:                               # right, left out, given twice
            twice = {**right[2], "should_speak": flip(right[2]["should_speak"])}
            content = json.dumps({"sample_id": document["sample_id"], "predictions": [right[0], right[2], twice]})
        else:                                             # broken JSON
            content = '{"sample_id": "x", "predictions": [{"candidate_id": '
        sent[ids[0]] = content
        return Reply(content=content)

    return respond


def test_the_log_holds_each_instance_its_prompt_answer_and_score(release: Path, tmp_path: Path) -> None:  # noqa: F811
    project, truth, sent = Project(tmp_path), gold(release, "itp"), {}
    order = [r["id"] for r in records(release, "itp")]
    paper = {"batch_size": 3, "batching": "paper", "extra_headers": {"X-Secret-Token": HEADER_SECRET}}
    server = ChatServer(faulty_itp(truth, order[0], sent), api_key=KEY).__enter__()
    try:
        result = run_model(project, release, "itp", "dialogue", settings(server, **paper), SCHEMA, environ=ENV)
        bodies = server.bodies()
        assert not server.errors and all(r.headers["x-secret-token"] == HEADER_SECRET for r in server.received)
        log_then_score_then_rerun(project, release, server, result.folder, bodies, sent)
    finally:
        server.__exit__()


def log_then_score_then_rerun(project: Project, release: Path, server: ChatServer, folder: Path,  # noqa: F811
                              bodies: list[dict[str, Any]], sent: dict[str, str]) -> None:
    truth, order = gold(release, "itp"), [r["id"] for r in records(release, "itp")]
    paper = {"batch_size": 3, "batching": "paper", "extra_headers": {"X-Secret-Token": HEADER_SECRET}}
    requests, samples = lines(folder / RUN_REQUESTS), lines(folder / RUN_SAMPLES)
    assert not (folder / RUN_SAMPLES_PARTIAL).exists() and not (folder / RUN_REQUESTS_PARTIAL).exists()

    # Requests: the payload exactly as the server received it, the raw answer exactly as it sent it.
    assert sorted(json.dumps(r["payload"], sort_keys=True) for r in requests) == sorted(
        json.dumps(b, sort_keys=True) for b in bodies)
    assert [r["request"] for r in requests] == list(range(4)) and all(r["sent"] and not r["cached"] for r in requests)
    assert {r["ids"][0]: r["content"] for r in requests} == sent
    # Instances: one line each, in the release's order; each one's span of the prompt is its own target.
    assert [s["id"] for s in samples] == order and [s["n"] for s in samples] == list(range(10))
    by_request = {r["request"]: r for r in requests}
    for sample in samples:
        request = by_request[sample["request"]]
        start, end = sample["prompt_span"]
        target = json.loads(user_text(request["payload"])[start:end])
        assert sample["id"] in request["ids"] and target["candidate_id"] == sample["id"]
        assert target in asked(request["payload"])["targets"] and "should_speak" not in target
    # The parsed answers and reasons are the run's own (predictions.jsonl, unanswered.jsonl).
    predicted = {p.pop("id"): p for p in lines(folder / RUN_PREDICTIONS)}
    reasons = {u["id"]: u["reason"] for u in lines(folder / RUN_UNANSWERED)}
    assert {s["id"]: s["parsed"] for s in samples if s["parsed"] is not None} == predicted
    assert {s["id"]: s["reason"] for s in samples if s["parsed"] is None} == reasons
    kinds = {s["id"]: s["reason"].split(":")[0] for s in samples if s["reason"]}
    assert sorted(kinds.values()) == ["invalid_answer", "invalid_json", "invalid_json", "missing_id", "repeated_id"]
    repeated = next(s for s in samples if s["reason"].startswith("repeated_id"))
    broken = next(s for s in samples if s["reason"].startswith("invalid_json"))
    assert len(repeated["answer_items"]) == 2 and broken["answer_items"] == []  # shown, not dropped
    assert by_request[broken["request"]]["content"].startswith('{"sample_id": "x"')
    assert set(kinds) | set(predicted) == set(order)  # every instance is accounted for
    # No key, no header value in the log.
    for name in (RUN_REQUESTS, RUN_SAMPLES):
        text = (folder / name).read_text()
        assert KEY not in text and KEY[:12] not in text and HEADER_SECRET not in text

    # Scored: per instance the answer the scorer used, the gold and the score, equal to an independent count.
    scores = score_run(read_run(folder), release, text_similarity=False)
    scored = {s["id"]: s for s in lines(folder / RUN_SAMPLE_SCORES)}
    assert list(scored) == order
    for sample in samples:
        mine = scored[sample["id"]]
        said = sample["parsed"]["should_speak"] if sample["parsed"] else None
        assert mine["answer"] == ({"should_speak": said} if said else None)
        assert mine["gold"] == truth[sample["id"]] and mine["correct"] == (said == truth[sample["id"]]["should_speak"])
    right = sum(s["correct"] for s in scored.values())
    assert right == 4 and scores["scores"]["overall"]["accuracy"] == pytest.approx(right / 10, abs=1e-4)

    # A cached re-run writes the same log, its requests marked cached; the scores stand (same answers).
    count = len(server.received)
    again = run_model(project, release, "itp", "dialogue", settings(server, **paper), SCHEMA, environ=ENV)
    assert len(server.received) == count  # nothing sent: all from the cache
    assert lines(again.folder / RUN_SAMPLES) == samples
    assert [{**r, "cached": False} for r in lines(again.folder / RUN_REQUESTS)] == requests
    assert all(r["cached"] for r in lines(again.folder / RUN_REQUESTS)) and (folder / RUN_SAMPLE_SCORES).is_file()

    # rescue show-run: a table, filters, the full view, and a self-contained HTML page.
    runner = CliRunner()
    base = ["--root", str(project.root), "show-run"]
    shown = runner.invoke(main, [*base, folder.name[:12]])
    assert shown.exit_code == 0, shown.output
    assert all(i in shown.output for i in order) and "4 right" in shown.output and "1 wrong" in shown.output
    wrong = runner.invoke(main, [*base, str(folder), "--wrong"])
    losers = [i for i in order if not scored[i]["correct"]]
    assert wrong.exit_code == 0 and all(i in wrong.output for i in losers)
    assert not any(i in wrong.output for i in order if scored[i]["correct"])
    one = runner.invoke(main, [*base, str(folder), "--id", broken["id"]])
    flat = " ".join(one.output.split())
    assert one.exit_code == 0 and "its target, as sent" in flat and '"sample_id": "x"' in flat
    assert "invalid_json" in flat and "You take the" in flat  # the system message as sent
    page = project.root / "run.html"
    made = runner.invoke(main, [*base, str(folder), "--html", str(page)])
    assert made.exit_code == 0, made.output
    text = page.read_text()
    assert all(f'id="i-{i}"' in text for i in order) and "&lt;script&gt;" in text and SCRIPT not in text
    assert "<script" not in text.lower() and "<link" not in text and "src=" not in text  # self-contained, inert
    missing = runner.invoke(main, [*base, str(folder), "--id", "itp-nope"])
    assert missing.exit_code == 1 and "logs no instance itp-nope" in missing.output


def test_a_stopped_run_keeps_its_partial_log_and_a_rerun_finishes_it(release: Path,  # noqa: F811
                                                                      tmp_path: Path) -> None:
    project, truth = Project(tmp_path), gold(release, "itp")
    family = {r["id"] for r in records(release, "itp") if r["scenario"] == "family"}

    refusing = [True]  # the same server (one endpoint, so one cache key) refuses, then takes family sessions

    def refuse_family(received: Received) -> Reply:
        document = asked(received.body)
        if document["scenario"] == "family" and refusing[0]:
            return Reply(status=400, error="this model does not take family sessions")  # not retried: the run stops
        return answer(document["sample_id"], [{"candidate_id": t["candidate_id"], "should_speak": truth[
            t["candidate_id"]]["should_speak"]} for t in document["targets"]])

    one_at_a_time = {"batch_size": 5, "concurrency": 1}
    with ChatServer(refuse_family, api_key=KEY) as server:
        with pytest.raises(RescueError, match="rejected a request"):
            run_model(project, release, "itp", "dialogue", settings(server, **one_at_a_time), SCHEMA, environ=ENV)
        (folder,) = (tmp_path / "build" / "runs").iterdir()
        assert not (folder / RUN_RECORD).exists() and not (folder / RUN_SAMPLES).exists()
        kept = lines(folder / RUN_SAMPLES_PARTIAL)
        assert kept and all(s["parsed"] == {"should_speak": truth[s["id"]]["should_speak"]} for s in kept)
        assert not family & {s["id"] for s in kept}  # the refused requests were never answered
        assert len(lines(folder / RUN_REQUESTS_PARTIAL)) == len({s["request"] for s in kept})

        runner = CliRunner()
        shown = runner.invoke(main, ["--root", str(tmp_path), "show-run", folder.name])
        assert shown.exit_code == 0 and "unfinished" in shown.output
        assert all(s["id"] in shown.output for s in kept)
        with (folder / RUN_SAMPLES_PARTIAL).open("a") as handle:
            handle.write('{"n": 9, "id": "itp-')  # the run was killed mid-line
        torn = runner.invoke(main, ["--root", str(tmp_path), "show-run", folder.name])
        assert torn.exit_code == 0 and "1 line(s) of the partial log could not be read" in " ".join(
            torn.output.split())
        unscored = runner.invoke(main, ["--root", str(tmp_path), "show-run", folder.name, "--wrong"])
        assert unscored.exit_code == 1 and "needs a scored run" in unscored.output

        refusing[0] = False
        before = len(server.received)
        done = run_model(project, release, "itp", "dialogue", settings(server, **one_at_a_time), SCHEMA, environ=ENV)
        asked_again = {t["candidate_id"] for b in server.bodies()[before:] for t in asked(b)["targets"]}
    assert done.folder == folder and asked_again == family  # the rest came from the cache
    assert not (folder / RUN_SAMPLES_PARTIAL).exists() and not (folder / RUN_REQUESTS_PARTIAL).exists()
    samples = lines(folder / RUN_SAMPLES)
    assert len(samples) == 10 and all(s["parsed"] for s in samples)
    cached = {i for r in lines(folder / RUN_REQUESTS) if r["cached"] for i in r["ids"]}
    assert cached == {s["id"] for s in kept}


def test_video_requests_are_logged_without_their_clips(release: Path, tmp_path: Path) -> None:  # noqa: F811
    media = with_media(release, tmp_path / "v1")
    truth = gold(media, "er")

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        return answer(document["sample_id"], [{"checkpoint_id": t["checkpoint_id"], "predicted_internal_emotion":
                                               truth[t["checkpoint_id"]]["internal_emotion"],
                                               "predicted_intensity_score": 11} for t in document["targets"]])

    with ChatServer(respond, api_key=KEY) as server:
        result = run_model(Project(tmp_path), media, "er", VIDEO_MODE, settings(server), SCHEMA, environ=ENV)
        bodies = server.bodies()
    by_id = {r["id"]: r for r in records(media, "er")}
    text = (result.folder / RUN_REQUESTS).read_text()
    assert base64.b64encode(b"clip ").decode()[:6] not in text  # no clip's bytes
    for request in lines(result.folder / RUN_REQUESTS):
        (pid,) = request["ids"]
        urls = [item["video_url"]["url"] for item in request["payload"]["messages"][-1]["content"]
                if item["type"] == "video_url"]
        clips = by_id[pid]["video_attachments"]
        assert len(urls) == len(clips) and all(url.startswith("data:video/mp4;base64,… (") for url in urls)
        assert [url.split("(", 1)[1].split(":", 1)[0] for url in urls] == clips  # each clip named, in order
    assert len(bodies) == len(by_id)
    samples = lines(result.folder / RUN_SAMPLES)
    assert all(s["parsed"] is None and "predicted_intensity_score 11" in s["reason"] for s in samples)
    assert all(s["answer_items"][0]["predicted_intensity_score"] == 11 for s in samples)  # what the model said


def test_a_run_without_a_log_says_how_to_get_one(release: Path, tmp_path: Path) -> None:  # noqa: F811
    old = tmp_path / "build" / "runs" / "itp-dialogue-old-0123456789"
    old.mkdir(parents=True)
    (old / RUN_RECORD).write_text(json.dumps({"run_id": old.name, "task": "itp"}))
    (old / RUN_PREDICTIONS).write_text("")
    runner = CliRunner()
    result = runner.invoke(main, ["--root", str(tmp_path), "show-run", "itp-dialogue-old"])
    flat = " ".join(result.output.split())
    assert result.exit_code == 1 and "made before run logs were written" in flat and "come from the cache" in flat
    unknown = runner.invoke(main, ["--root", str(tmp_path), "show-run", "nothing-like-it"])
    assert unknown.exit_code == 1 and old.name in " ".join(unknown.output.split())
    assert not (old / RUN_SCORES).exists()


def test_refused_and_unsent_instances_are_logged_with_their_reasons(release: Path, tmp_path: Path) -> None:  # noqa: F811

    broken = tmp_path / "v1"
    refused = self_leaking_release(release, broken)
    truth = gold(release, "itp")

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        return answer(document["sample_id"], [{"candidate_id": t["candidate_id"], "should_speak": truth[
            t["candidate_id"]]["should_speak"]} for t in document["targets"]])

    with ChatServer(respond, api_key=KEY) as server:  # the budget is spent by the first answer
        result = run_model(Project(tmp_path), broken, "itp", "dialogue", settings(
            server, concurrency=1, max_total_tokens=1), SCHEMA, environ=ENV)
    samples = {s["id"]: s for s in lines(result.folder / RUN_SAMPLES)}
    requests = lines(result.folder / RUN_REQUESTS)
    assert list(samples) == [r["id"] for r in records(broken, "itp")]  # every instance, the release's order
    assert samples[refused]["request"] is None and samples[refused]["reason"].startswith("leak_refused")
    unsent = [r for r in requests if not r["sent"]]
    assert len(unsent) == len(requests) - 1 and all(r["not_sent"].startswith("budget reached") and not r["content"]
                                                    for r in unsent)
    assert all(samples[i]["reason"].startswith("not_sent: budget reached") for r in unsent for i in r["ids"])
    assert {u["id"]: u["reason"] for u in lines(result.folder / RUN_UNANSWERED)} == {
        i: s["reason"] for i, s in samples.items() if s["parsed"] is None}
    shown = CliRunner().invoke(main, ["--root", str(tmp_path), "show-run", str(result.folder), "--id", refused])
    assert shown.exit_code == 0 and "never sent: leak_refused" in " ".join(shown.output.split())


def test_run_model_names_the_show_run_command_that_reads_it(release: Path, tmp_path: Path,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import shutil


    root = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[1] / "annotation_schemas", root / "annotation_schemas")
    monkeypatch.setenv(KEY_ENV, KEY)
    runner = CliRunner()
    with ChatServer(itp_truthful(gold(release, "itp")), api_key=KEY) as server:
        ran = runner.invoke(main, ["--root", str(root), "run-model", "--task", "itp", "--mode", "dialogue",
                                   "--release", str(release), "--model", "stand-in", "--base-url", server.base_url,
                                   "--api-key-env", KEY_ENV, "--limit", "3"])
    assert ran.exit_code == 0, ran.output
    found = re.search(r"per instance \(prompt, raw answer, parsed, score\): (rescue .*)", " ".join(ran.output.split()))
    assert found, ran.output
    shown = runner.invoke(main, found.group(1).split()[1:])
    assert shown.exit_code == 0 and "3 instance(s): 3 answered" in shown.output


def test_a_ranking_runs_logged_answers_are_the_ones_scored(release: Path, tmp_path: Path) -> None:  # noqa: F811
    truth, instances = gold(release, "ssp"), records(release, "ssp")
    place = {r["id"]: n % 4 for n, r in enumerate(instances)}  # the gold ranked 1st, 2nd, 3rd, or not at all

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        out = []
        for target in document["targets"]:
            pid, labels = target["turn_id"], target["candidate_strategy_labels"]
            others = [label for label in labels if label != truth[pid]["strategy_label"]][:3]
            ranking = others[:place[pid]] + [truth[pid]["strategy_label"]] if place[pid] < 3 else others
            out.append({"turn_id": pid, "strategy_top3": ranking[:3]})
        return answer(document["sample_id"], out)

    with ChatServer(respond, api_key=KEY) as server:
        result = run_model(Project(tmp_path), release, "ssp", "dialogue", settings(server), SCHEMA, environ=ENV)
    scores = score_run(read_run(result.folder), release, text_similarity=False)
    samples = {s["id"]: s for s in lines(result.folder / RUN_SAMPLES)}
    scored = {s["id"]: s for s in lines(result.folder / RUN_SAMPLE_SCORES)}
    for pid, sample in samples.items():
        assert scored[pid]["answer"] == {"ranking": sample["parsed"]["strategy_top3"]}  # what the scorer read
        rank = place[pid] + 1 if place[pid] < 3 else 0
        assert scored[pid]["scores"]["gold_rank"] == rank and scored[pid]["correct"] == (rank == 1)
    expected = sum(1 / (place[i] + 1) for i in samples if place[i] < 3) / len(samples)
    assert scores["scores"]["overall"]["mrr"] == pytest.approx(expected, abs=1e-4)
