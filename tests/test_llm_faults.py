"""Bad answers and a damaged cache never crash a model run or reach its files (issue 19, part 6): a web page
answered with HTTP 200, cache entries with the wrong types or a number JSON cannot hold, and answers far longer
than the run's token limit allows.

No model endpoint is reachable from the test machines: `tests/chat_server.py` stands in for the remote service
(a real HTTP server on 127.0.0.1). The SDK, HTTP, the cache files, `rescue run-model` and its records are real.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pipeline.cli.app import main
from pipeline.layout import RUN_PREDICTIONS, RUN_RECORD, RUN_UNANSWERED
from pipeline.llm.cache import AREA
from pipeline.llm.client import MAX_BYTES_PER_TOKEN
from pipeline.project import Project
from pipeline.runmodel.run import run_model
from tests.chat_server import ChatServer, Received, Reply
from tests.release_inputs import SCHEMA
from tests.stand_in_model import ENV, KEY, KEY_ENV, answer, asked, gold, itp_truthful, lines, settings

PAGE = b"<!doctype html><html><head><title>Sign in</title></head><body>Please log in</body></html>"


def strict_json(text: str) -> Any:
    """JSON as the standard defines it: NaN and Infinity, which Python writes and reads by default, are refused."""
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/json"])
def test_a_web_page_answered_with_http_200_is_one_clear_error(release: Path, tmp_path: Path,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               content_type: str) -> None:
    root = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[1] / "annotation_schemas", root / "annotation_schemas")
    monkeypatch.setenv(KEY_ENV, KEY)
    with ChatServer(lambda _: Reply(raw_body=PAGE, content_type=content_type), api_key=KEY) as server:
        result = CliRunner().invoke(main, ["--root", str(root), "run-model", "--task", "itp", "--mode", "dialogue",
                                           "--release", str(release), "--model", "stand-in", "--base-url",
                                           server.base_url, "--api-key-env", KEY_ENV, "--limit", "2"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    text = " ".join(result.output.split())
    assert f"the chat endpoint {server.base_url} answered HTTP 200 with" in text and "not a chat completion" in text
    assert "check [tool.rescue.run_model] base_url" in text and KEY not in result.output
    assert not (root / "build" / "runs").exists() or not list((root / "build" / "runs").rglob(RUN_RECORD))


def test_damaged_cache_entries_are_reported_and_asked_again(release: Path, tmp_path: Path) -> None:  # noqa: F811
    project = Project(tmp_path)
    with ChatServer(itp_truthful(gold(release, "itp")), api_key=KEY) as server:
        first = run_model(project, release, "itp", "dialogue", settings(server, batch_size=3), SCHEMA, environ=ENV)
        sent = len(server.received)
        entries = sorted((tmp_path / "build" / AREA).glob("*.json"))
        assert len(entries) == sent == first.record["counts"]["requests"] >= 2
        wrong_type, huge = entries[0], entries[1]
        data = json.loads(wrong_type.read_text())
        wrong_type.write_text(json.dumps({**data, "content": 123}))
        huge.write_text(re.sub(r'"completion_tokens":\s*\d+', '"completion_tokens": 1e309', huge.read_text()))
        assert "1e309" in huge.read_text()
        again = run_model(project, release, "itp", "dialogue", settings(server, batch_size=3), SCHEMA, environ=ENV)
        assert len(server.received) == sent + 2  # the two damaged entries, asked again; the rest from the cache
    assert again.record["counts"]["damaged_cache_entries"] == 2
    assert "2 damaged cache entries asked again" in again.stats.describe()
    assert str(wrong_type) in " ".join(again.stats.damaged_cache) and "content" in " ".join(again.stats.damaged_cache)
    record = strict_json((again.folder / RUN_RECORD).read_text())  # no Infinity anywhere
    assert record["answer_tokens"] == first.record["answer_tokens"]
    assert lines(again.folder / RUN_PREDICTIONS) == lines(first.folder / RUN_PREDICTIONS)
    assert isinstance(json.loads(wrong_type.read_text())["content"], str)  # rewritten whole with the new answer
    assert "1e309" not in huge.read_text()


def test_an_answer_longer_than_the_token_limit_allows_is_not_kept(release: Path, tmp_path: Path) -> None:  # noqa: F811
    truth = gold(release, "itp")
    limit_tokens = 256
    padding = "x" * (limit_tokens * MAX_BYTES_PER_TOKEN * 40)  # 40 times the bound: a runaway answer

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        ids = [t["candidate_id"] for t in document["targets"]]
        runaway = document["scenario"] == "family"
        return answer(document["sample_id"], [{"candidate_id": i, "should_speak": truth[i]["should_speak"],
                                               "reason": padding if runaway else "short"} for i in ids])

    project = Project(tmp_path)
    with ChatServer(respond, api_key=KEY) as server:
        result = run_model(project, release, "itp", "dialogue",
                           settings(server, batch_size=5, max_completion_tokens=limit_tokens), SCHEMA, environ=ENV)
    family = {i for i in truth if i in {r["id"] for r in lines(release / "tasks/itp.jsonl")
                                         if r["scenario"] == "family"}}
    assert family, "the release has family instances"
    unanswered = {u["id"]: u["reason"] for u in lines(result.folder / RUN_UNANSWERED)}
    assert set(unanswered) == family
    assert all(r.startswith("too_long: the answer is ") and f"max_completion_tokens {limit_tokens} x "
               f"{MAX_BYTES_PER_TOKEN} bytes a token" in r for r in unanswered.values())
    assert result.record["counts"]["unanswered_by_reason"] == {"too_long": len(family)}
    predictions = (result.folder / RUN_PREDICTIONS).read_text()
    assert padding not in predictions and len(predictions) < 10_000
    assert all(entry.stat().st_size < 10_000 for entry in (tmp_path / "build" / AREA).glob("*.json"))
