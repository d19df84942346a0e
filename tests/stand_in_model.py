"""The stand-in chat model of the run-model tests (tests/chat_server.py serves it): the key it checks, the
settings that point `rescue run-model` at it, and helpers that read what it was asked and answer with gold.
Helpers only, no tests (tests/test_run_model.py and the tests that build on it import them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.runmodel.settings import RunModelSettings
from tests.chat_server import ChatServer, Received, Reply

KEY_ENV = "RESCUE_TEST_RUN_MODEL_KEY"
KEY = "sk-test-run-model-7c1e9a2f44b04d0fa3b5e6d8c9f01234"  # made up: the server checks it, the tests look for it
ENV = {KEY_ENV: KEY}


def records(release: Path, task: str, folder: str = "tasks") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (release / f"{folder}/{task}.jsonl").read_text().splitlines()]


def gold(release: Path, task: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r["gold"] for r in records(release, task, "gold")}


def asked(body: dict[str, Any]) -> dict[str, Any]:
    """The batch document of a request (the JSON after the user text's first line)."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else next(i["text"] for i in content if i["type"] == "text")
    return json.loads(text.split("\n\n", 1)[1])


def settings(server: ChatServer, **extra: Any) -> RunModelSettings:
    values: dict[str, Any] = dict(base_url=server.base_url, model="stand-in-model", api_key_env=KEY_ENV,
                                  timeout_s=1.0, max_retries=2, backoff_s=0.01, concurrency=4)
    return RunModelSettings(**(values | extra))


def answer(sample_id: str, predictions: list[dict[str, Any]]) -> Reply:
    return Reply(content=json.dumps({"sample_id": sample_id, "predictions": predictions}))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def itp_truthful(truth: dict[str, dict[str, Any]]) -> Callable[[Received], Reply]:
    """A stand-in model that answers every ITP target of a request with its gold."""

    def respond(received: Received) -> Reply:
        document = asked(received.body)
        return answer(document["sample_id"], [{"candidate_id": t["candidate_id"], "should_speak": truth[
            t["candidate_id"]]["should_speak"]} for t in document["targets"]])

    return respond
