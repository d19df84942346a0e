"""Answers kept by request hash, so a re-run sends nothing it already paid for.

build/llm-cache/<hash>.json, one file per answer, in one flat folder (ext4 and the like index big folders;
a fan-out into sub-folders cost a mkdir per new sub-folder, most of a first run's overhead). The cache is
shared by every step: an answer depends only on its request. Entries hold the answer and its token counts,
never the request's key (requests have none) and never the prompt (it may embed media). A damaged entry is
treated as missing and asked again.

Entries are written in place, without a temporary file, a rename or an fsync (an fsync cost ~20 ms per
answer on this project's machines, more than a fast local server takes to answer): a torn entry (a crash
mid-write, a reader racing a writer) fails to parse, counts as missing and costs one repeated request. Files are private to the user (0600): answers describe therapy sessions.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

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
        self._made = False  # one mkdir per run, not one per answer

    def _path(self, digest: str) -> Path:
        return self.folder / f"{digest}.json"

    def get(self, digest: str) -> CachedAnswer | None:
        try:
            return CachedAnswer(**json.loads(self._path(digest).read_text(encoding="utf-8")))
        except (FileNotFoundError, ValueError, TypeError):
            return None

    def put(self, digest: str, answer: CachedAnswer) -> None:
        path = self._path(digest)
        if not self._made:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._made = True
        data = memoryview(json.dumps(asdict(answer), ensure_ascii=False, sort_keys=True).encode("utf-8"))
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            while data:
                data = data[os.write(handle, data):]
        finally:
            os.close(handle)
