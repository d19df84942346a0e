"""The OpenAI-compatible chat client (pipeline/llm) on its own, against a local stand-in server.

No model endpoint is reachable from the test machines: `tests/chat_server.py` stands in for the remote
service (a real HTTP server on 127.0.0.1 that speaks the chat-completions contract). The SDK, HTTP, the
cache files and the threads are real.
"""

from __future__ import annotations

import json
import threading
import time
import tomllib
from email.utils import formatdate
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.errors import RescueError
from pipeline.llm.client import ChatAnswer, ChatClient
from pipeline.llm.content import ChatMessage, ImageItem, TextItem, data_url
from pipeline.llm.key import redact
from pipeline.llm.request import ChatRequest, ResponseSchema
from pipeline.llm.retry import server_wait
from pipeline.llm.settings import ChatSettings
from tests.chat_server import ChatServer, Received, Reply

KEY = "sk-client-test-8e1f4c0a9b3d47d2"
ENV = {"CHAT_KEY": KEY}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["n"], "properties": {"n": {"type": "integer"}}}


def requests(count: int) -> list[ChatRequest]:
    return [ChatRequest((ChatMessage.text("user", f"say {n}"),), ResponseSchema("n", SCHEMA), label=f"r{n}")
            for n in range(count)]


def echo(received: Received) -> Reply:
    return Reply(content=json.dumps({"n": int(received.body["messages"][0]["content"].split()[-1])}))


def client(server: ChatServer, cache: Path | None, **changes: object) -> ChatClient:
    settings = ChatSettings(base_url=server.base_url, model="stand-in", api_key_env="CHAT_KEY", backoff_s=0.01,
                            **changes)
    return ChatClient(settings, cache, section="[test]", environ=ENV)


def test_answers_in_order_and_cached_by_request_hash(tmp_path: Path) -> None:
    with ChatServer(echo, api_key=KEY) as server:
        outcomes, stats = client(server, tmp_path / "cache").complete_all(requests(10))
        assert [json.loads(o.content)["n"] for o in outcomes] == list(range(10))  # type: ignore[union-attr]
        assert stats.answers == 10 and stats.tries == 10 and stats.tokens > 0
        again, stats = client(server, tmp_path / "cache").complete_all(requests(10))
        assert len(server.received) == 10  # the second run sent nothing
    assert [o.content for o in again] == [o.content for o in outcomes]  # type: ignore[union-attr]
    assert all(isinstance(o, ChatAnswer) and o.cached for o in again) and stats.cache_hits == 10 and stats.tokens == 0
    stored = list((tmp_path / "cache").rglob("*.json"))
    assert len(stored) == 10 and all(KEY.encode() not in p.read_bytes() for p in stored)


def test_a_damaged_cache_entry_is_asked_again(tmp_path: Path) -> None:
    with ChatServer(echo, api_key=KEY) as server:
        client(server, tmp_path).complete_all(requests(2))
        damaged = sorted(tmp_path.rglob("*.json"))[0]
        damaged.write_text("{ half", encoding="utf-8")
        outcomes, stats = client(server, tmp_path).complete_all(requests(2))
        assert len(server.received) == 3 and stats.cache_hits == 1
    contents = {o.content for o in outcomes if isinstance(o, ChatAnswer)}
    assert json.loads(damaged.read_text(encoding="utf-8"))["content"] in contents  # rewritten whole


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    in_flight, most, lock = [0], [0], threading.Lock()

    def slow(received: Received) -> Reply:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.3)
        with lock:
            in_flight[0] -= 1
        return echo(received)

    with ChatServer(slow, api_key=KEY) as server:
        client(server, None, concurrency=3).complete_all(requests(12))
    assert 2 <= most[0] <= 3


def test_our_retries_are_the_only_ones(tmp_path: Path) -> None:
    """The SDK's own retries are off: with max_retries 0 a 500 is one try, then a clear error."""
    with ChatServer(lambda r: Reply(status=500, error="down"), api_key=KEY) as server:
        with pytest.raises(RescueError, match="kept failing: HTTP 500, 1 tries"):
            client(server, None, max_retries=0).complete_all(requests(1))
        assert len(server.received) == 1
        with pytest.raises(RescueError, match="kept failing: HTTP 500, 3 tries"):
            client(server, None, max_retries=2).complete_all(requests(1))
        assert len(server.received) == 4


def test_retry_after_in_every_form_and_capped() -> None:
    assert server_wait({"retry-after": "3"}) == 3.0
    assert server_wait({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert 5 <= server_wait({"retry-after": formatdate(time.time() + 10, usegmt=True)}) <= 11  # type: ignore[operator]
    assert server_wait({"retry-after": "soon"}) is None and server_wait({}) is None
    with ChatServer(lambda r: Reply(status=429, headers={"Retry-After": "0.2"}) if r.attempt == 0 else echo(r),
                    api_key=KEY) as server:
        _, stats = client(server, None, backoff_cap_s=0.1).complete_all(requests(1))
    assert stats.waits == [("r0", "HTTP 429", 0.1)]  # the server asked for 0.2 s, the cap says 0.1


def test_images_go_as_content_items(tmp_path: Path) -> None:
    frame = tmp_path / "frame.jpg"
    frame.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    message = ChatMessage("user", (TextItem("look"), ImageItem(data_url(frame))))
    request = ChatRequest((message,), ResponseSchema("n", SCHEMA))
    with ChatServer(lambda r: Reply(content='{"n": 1}'), api_key=KEY) as server:
        client(server, None).complete_all([request])
        content = server.bodies()[0]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "look"}
    assert content[1]["type"] == "image_url" and content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_settings_refuse_credentials_and_never_repeat_a_pasted_key() -> None:
    with pytest.raises(ValidationError, match="must not hold credentials"):
        ChatSettings(base_url="https://user:secret@example.org/v1")
    with pytest.raises(ValidationError) as error:
        ChatSettings(api_key_env="sk-pasted-key-4f2a9c")
    assert "environment variable NAME" in str(error.value)
    assert all("sk-pasted-key-4f2a9c" not in e["msg"] for e in error.value.errors())
    with pytest.raises(ValidationError, match="max_cost needs price_per_1k_tokens"):
        ChatSettings(max_cost=1.0)


def test_no_model_and_no_key_are_clear_errors() -> None:
    with pytest.raises(RescueError, match=r"setting \[test\] model"):
        ChatClient(ChatSettings(model=""), None, section="[test]", environ=ENV)
    with pytest.raises(RescueError, match=r"OPENAI_API_KEY \(setting \[test\] api_key_env\) is not set"):
        ChatClient(ChatSettings(model="m"), None, section="[test]", environ={})
    # A local server that needs no key: api_key_env empty.
    ChatClient(ChatSettings(model="m", api_key_env=""), None, section="[test]", environ={})


def test_redact_hides_the_key_and_echoed_parts_of_it() -> None:
    said = f"Incorrect API key provided: {KEY[:3]}...{KEY[-8:]}; full {KEY}"
    assert KEY not in redact(said, KEY) and KEY[-8:] not in redact(said, KEY)


def test_a_rejected_request_is_not_retried_and_says_what_to_check() -> None:
    with ChatServer(lambda r: Reply(status=400, error="response_format json_schema is not supported"),
                    api_key=KEY) as server:
        with pytest.raises(RescueError) as error:
            client(server, None).complete_all(requests(1))
        assert len(server.received) == 1  # a refusal is not retried (max_retries is 5)
    text = str(error.value)
    assert "HTTP 400" in text and "not supported" in text and "[test] max_completion_tokens = 0" in text


def test_settings_from_a_toml_table() -> None:
    table = tomllib.loads('base_url = "http://localhost:11434/v1/"\nmodel = "qwen2.5:7b"\napi_key_env = ""\n'
                          'max_completion_tokens = 0\nmax_total_tokens = 200000\n')
    settings = ChatSettings.model_validate(table)
    assert settings.base_url == "http://localhost:11434/v1" and settings.api_key_env is None
    body = ChatRequest((ChatMessage.text("user", "hi"),)).payload(settings.model, settings.max_completion_tokens)
    assert "max_completion_tokens" not in body and body["temperature"] == 0 and "response_format" not in body
