"""A local HTTP server that speaks the chat-completions contract of OpenAI-compatible endpoints.

It stands in for the remote model service, which no test machine can reach: tests start it on a free
port, point the client's `base_url` at it and decide every answer through a `responder`. It checks what a
strict server checks (bearer key, the request's shape, `response_format`: JSON mode or a valid strict
JSON schema) and can answer with anything a real one does: JSON, broken JSON, HTTP errors with `Retry-After`,
slow answers, no answer in time, or a raw body of any type (a web page answered with HTTP 200). Reusable by any test of a chat client (pre-annotation, model runs).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError


@dataclass(frozen=True)
class Reply:
    """What the server does with one request."""

    content: str | None = None  # the assistant message (200)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""  # the error body's message (status != 200)
    delay_s: float = 0.0  # wait before answering (a slow model, or longer than the client's timeout)
    raw_body: bytes | None = None  # sent as it is with `content_type` instead of a chat completion
    content_type: str = "application/json"


@dataclass(frozen=True)
class Received:
    """One request as the server saw it, with the number of times this same body arrived before."""

    body: dict[str, Any]
    attempt: int  # 0 for the first time, 1 for the first retry, ...
    headers: dict[str, str] = field(default_factory=dict)  # the HTTP headers, names in lower case


Responder = Callable[[Received], Reply]


def strict_schema_problems(schema: Any, where: str = "$") -> list[str]:
    """What OpenAI's strict structured output refuses: objects must list every property as required and
    forbid others."""
    problems: list[str] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false")
            if sorted(schema.get("required", [])) != sorted(props):
                problems.append(f"{where}: every property must be required")
        for key, value in schema.items():
            problems += strict_schema_problems(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for n, value in enumerate(schema):
            problems += strict_schema_problems(value, f"{where}[{n}]")
    return problems


def contract_problem(body: Any) -> str | None:
    """Why a request body breaks the chat-completions contract (None: it keeps it)."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"]:
        return "model is missing"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for message in messages:
        if message.get("role") not in ("system", "user", "assistant") or "content" not in message:
            return f"bad message {str(message)[:80]}"
        content = message["content"]
        if isinstance(content, list) and any(item.get("type") not in ("text", "image_url", "video_url")
                                             for item in content):
            return "unknown content item type"
    fmt = body.get("response_format")
    if fmt == {"type": "json_object"}:
        fmt = None  # JSON mode: any JSON object, no schema to check
    if fmt is not None:
        spec = fmt.get("json_schema") if isinstance(fmt, dict) and fmt.get("type") == "json_schema" else None
        if not isinstance(spec, dict) or not spec.get("name") or not isinstance(spec.get("schema"), dict):
            return "response_format must be {type: json_schema, json_schema: {name, schema, strict}}"
        try:
            Draft202012Validator.check_schema(spec["schema"])
        except SchemaError as exc:
            return f"response_format schema is not a valid JSON schema: {exc.message}"
        if spec.get("strict"):
            problems = strict_schema_problems(spec["schema"])
            if problems:
                return "strict schema: " + "; ".join(problems[:3])
    return None


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ChatServer:
    """`with ChatServer(responder, api_key="sk-...") as server:` then use `server.base_url`."""

    def __init__(self, responder: Responder, *, api_key: str | None = None, model_name: str = "stand-in",
                 check_contract: bool = True) -> None:
        """check_contract=False skips validating each request's JSON schema (benchmarks: a server as fast as
        possible, so that what is measured is the client)."""
        self.responder = responder
        self.check_contract = check_contract
        self.api_key = api_key
        self.model_name = model_name
        self.received: list[Received] = []
        self.errors: list[Exception] = []  # exceptions the responder raised (answered as HTTP 500)
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.received]

    def _note(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Received:
        text = json.dumps(body, sort_keys=True)
        with self._lock:
            attempt = self._seen.get(text, 0)
            self._seen[text] = attempt + 1
            received = Received(body, attempt, headers or {})
            self.received.append(received)
        return received

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints do
            disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall between

            def log_message(self, *_: Any) -> None:  # quiet: tests read `received`, not a log
                pass

            def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout the test asked for)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                self._send(status, {"error": {"message": message, "type": "invalid_request_error"}}, headers)

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._error(404, f"no route {self.path}")
                sent_key = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
                if server.api_key is not None and sent_key != server.api_key:
                    # Real servers echo (part of) the key they got; the client must not repeat it.
                    return self._error(401, f"Incorrect API key provided: {sent_key}")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._error(400, "body is not JSON")
                problem = contract_problem(body) if server.check_contract else None
                if problem:
                    return self._error(400, problem)
                try:
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    reply = server.responder(server._note(body, headers))
                except Exception as exc:  # a bug in the test's responder: say so instead of dropping the line
                    server.errors.append(exc)
                    return self._error(500, f"the test's responder failed: {exc!r}")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    return self._error(reply.status, reply.error or f"status {reply.status}", reply.headers)
                if reply.raw_body is not None:
                    return self._send(200, reply.raw_body, reply.headers, reply.content_type)
                content = reply.content or ""
                prompt = tokens(json.dumps(body["messages"]))
                self._send(200, {
                    "id": f"chatcmpl-{len(server.received)}", "object": "chat.completion", "created": int(time.time()),
                    "model": server.model_name,
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                 "message": {"role": "assistant", "content": content, "refusal": None}}],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": tokens(content),
                              "total_tokens": prompt + tokens(content)}}, reply.headers)

        return Handler
