"""One loaded model per process, reused by later sessions while its settings stay the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel


class ModelSlot:
    """Holds at most one model: loading another settings' model drops the old one, so memory stays bounded."""

    def __init__(self, load: Callable[[Any], Any]) -> None:
        self._load = load
        self._key: str | None = None
        self._model: Any = None

    def get(self, settings: BaseModel) -> Any:
        key = settings.model_dump_json()
        if key != self._key:
            self._model, self._key = None, None
            self._model = self._load(settings)
            self._key = key
        return self._model
