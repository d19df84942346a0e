"""One chat request as data, and its hash: the same request always hashes the same, on any machine.

The hash covers everything that can change the answer (endpoint, model, messages, response format,
temperature, answer length) and nothing secret: the key is not part of a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.llm.content import ChatMessage
from pipeline.store import sha256_json

HASH_VERSION = 1  # bump when the payload's shape changes, so old cache entries are not mistaken for new ones


@dataclass(frozen=True)
class ResponseSchema:
    """Structured output: the answer must be one JSON object valid against `schema` (strict mode)."""

    name: str
    schema: dict[str, Any]

    def wire(self) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema, "strict": True}}


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[ChatMessage, ...]
    response_schema: ResponseSchema | None = None
    json_object: bool = False  # response_format json_object (any JSON object), when there is no schema
    label: str = ""  # what the request is for (a row id), for reports; not sent and not hashed

    def payload(self, model: str, max_completion_tokens: int | None) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create`."""
        body: dict[str, Any] = {"model": model, "messages": [m.wire() for m in self.messages], "temperature": 0}
        if self.response_schema is not None:
            body["response_format"] = self.response_schema.wire()
        elif self.json_object:
            body["response_format"] = {"type": "json_object"}
        if max_completion_tokens:  # 0 or None: not sent
            body["max_completion_tokens"] = max_completion_tokens
        return body


def payload_digest(endpoint: str, payload: dict[str, Any]) -> str:
    """The cache key of a request's payload (`ChatRequest.payload`) sent to `endpoint`."""
    return sha256_json({"v": HASH_VERSION, "endpoint": endpoint, "payload": payload})
