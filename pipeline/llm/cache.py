"""Answers kept by request hash, so a re-run sends nothing it already paid for.

build/llm-cache/<hash>.json, one file per answer, in one flat folder (ext4 and the like index big folders;
a fan-out into sub-folders cost a mkdir per new sub-folder, most of a first run's overhead). The cache is
shared by every step: an answer depends only on its request. Entries hold the answer and its token counts,
never the request's key (requests have none) and never the prompt (it may embed media). An entry is
validated field by field when read (text where text belongs, token counts as non-negative whole numbers, no
NaN or infinity): a damaged or edited entry is reported (`damaged`) and treated as missing, so it is asked
again and rewritten whole.

Entries are written in place, without a temporary file, a rename or an fsync (an fsync cost ~20 ms per
answer on this project's machines, more than a fast local server takes to answer): a torn entry (a crash
mid-write, a reader racing a writer) fails to parse, counts as missing and costs one repeated request. Files are private to the user (0600): answers describe therapy sessions.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.errors import describe_validation, naming

AREA = "llm-cache"


class CachedAnswer(BaseModel):
    # strict: `"content": 123` or a token count of 1e309 (read as an infinite float) is damage, not a value
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    content: str
    finish_reason: str
    refusal: str
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    model: str  # the model name the server reported
    problem: str = Field("", description="why the answer was not kept (e.g. longer than the run's bound); "
                                         "its content is then empty")


class ResponseCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made = False  # one mkdir per run, not one per answer
        self._lock = threading.Lock()
        self.damaged: list[str] = []  # "<path>: <what is wrong>" for each entry read back damaged (asked again)

    def _path(self, digest: str) -> Path:
        return self.folder / f"{digest}.json"

    def get(self, digest: str) -> CachedAnswer | None:
        path = self._path(digest)
        try:
            return CachedAnswer.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValidationError as exc:  # torn, edited or damaged: asked again, and said so
            with self._lock:
                self.damaged.append(f"{path}: {describe_validation(exc)[:200]}")
            return None

    def put(self, digest: str, answer: CachedAnswer) -> None:
        path = self._path(digest)
        if not self._made:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._made = True
        data = memoryview(answer.model_dump_json().encode("utf-8"))
        with naming(path):
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                while data:
                    data = data[os.write(handle, data):]
            except OSError:  # a full disk: no torn entry is left to be read back
                path.unlink(missing_ok=True)
                raise
            finally:
                os.close(handle)
