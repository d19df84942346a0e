"""Answers kept by request hash, so a re-run sends nothing it already paid for.

build/llm-cache/<first two hex digits>/<hash>.json, one file per answer, written atomically. The cache is
shared by every step: an answer depends only on its request. Entries hold the answer and its token counts,
never the request's key (requests have none) and never the prompt (it may embed media). A damaged entry is
treated as missing and replaced.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from pipeline.store import write_text_atomic

AREA = "llm-cache"


@dataclass(frozen=True)
class CachedAnswer:
    content: str
    finish_reason: str
    refusal: str
    prompt_tokens: int
    completion_tokens: int
    model: str  # the model name the server reported


class ResponseCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, digest: str) -> Path:
        return self.folder / digest[:2] / f"{digest}.json"

    def get(self, digest: str) -> CachedAnswer | None:
        try:
            return CachedAnswer(**json.loads(self._path(digest).read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def put(self, digest: str, answer: CachedAnswer) -> None:
        write_text_atomic(self._path(digest), json.dumps(asdict(answer), ensure_ascii=False, sort_keys=True))
