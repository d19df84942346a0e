"""The records of a run's log (requests.jsonl, samples.jsonl), shared by the writer and `rescue show-run`.

One `RequestLog` per request: the payload exactly as sent (clips sent as data URLs shortened to their path and
size: a log holds no media) and the raw answer, or why it was not sent. One `SampleLog` per instance: which request
carried it and where its target sits in that request's user text (`prompt_span`, character offsets), what the model
gave for its id (`answer_items`), the prediction written to predictions.jsonl (`parsed`) or the reason it has none.
Neither holds a key or a header value: the payload carries neither (the key and extra headers travel as HTTP
headers).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

LOG_FORMAT = "rescue-run-log/1"


class RequestLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    request: int  # 0-based, in the order the run built them
    label: str
    sample_id: str
    scenario: str
    ids: list[str]  # the instances it carried, in prompt order
    digest: str  # its cache key: build/llm-cache/<digest>.json
    payload: dict[str, Any]  # the body as sent (media shortened)
    sent: bool  # False: not sent (budget reached, or the run stopped); `not_sent` says why
    not_sent: str = ""
    cached: bool = False  # the answer came from the cache (asked by an earlier run)
    content: str = ""  # the raw answer
    finish_reason: str = ""
    refusal: str = ""
    problem: str = ""  # why the content was not kept (longer than the run's bound)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class SampleLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int  # the instance's position in the release's task file (0-based)
    id: str
    sample_id: str
    scenario: str
    request: int | None  # None: never sent (the request audit refused it)
    prompt_span: tuple[int, int] | None = None  # its target's JSON in the request's user text [start, end)
    answer_items: list[Any] = []  # what the answer's `predictions` list gave for this id (several: repeated)
    parsed: dict[str, Any] | None = None  # the prediction as predictions.jsonl holds it (no id)
    reason: str = ""  # why there is no prediction (unanswered.jsonl's reason)


def user_text(payload: dict[str, Any]) -> str:
    """The text of a payload's last (user) message: where `prompt_span` points."""
    content = payload["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n\n".join(item["text"] for item in content if item.get("type") == "text")
