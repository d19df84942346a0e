"""One loaded model per process, reused by later sessions while its settings stay the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

_SLOTS: dict[str, ModelSlot] = {}


class ModelSlot:
    """Holds at most one model: loading another settings' model drops the old one, so memory stays bounded."""

    def __init__(self, name: str, load: Callable[[Any], Any]) -> None:
        self._load = load
        self._key: str | None = None
        self._model: Any = None
        self.loads = 0  # how often this process loaded the model (an executor's benchmark counts them)
        _SLOTS[name] = self

    def get(self, settings: BaseModel) -> Any:
        key = settings.model_dump_json()
        if key != self._key:
            self._model, self._key = None, None
            self._model = self._load(settings)
            self._key = key
            self.loads += 1
        return self._model

    def drop(self) -> None:
        self._model, self._key = None, None


def drop_models() -> None:
    """Let go of every loaded model (a worker moving on to another step's model); load counts are kept."""
    for slot in _SLOTS.values():
        slot.drop()


def load_counts() -> dict[str, int]:
    """Models loaded by this process so far, per slot (only slots whose module was imported are listed)."""
    return {name: slot.loads for name, slot in _SLOTS.items()}
