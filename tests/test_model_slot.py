"""A worker's model slots: one model per slot, kept between sessions with the same settings, let go when the
worker moves on to another step (a Ray actor reused from transcribe for diarize)."""

from __future__ import annotations

from pydantic import BaseModel

from pipeline.speech import model_slot
from pipeline.speech.model_slot import ModelSlot, drop_models, load_counts


class _Settings(BaseModel):
    model: str


def test_a_slot_keeps_its_model_until_the_settings_change_or_the_models_are_dropped() -> None:
    made: list[str] = []
    slot = ModelSlot("test-slot", lambda settings: made.append(settings.model) or object())
    try:
        _check(slot, made)
    finally:
        model_slot._SLOTS.pop("test-slot")  # other tests count this process's slots


def _check(slot: ModelSlot, made: list[str]) -> None:
    first = slot.get(_Settings(model="a"))
    assert slot.get(_Settings(model="a")) is first and made == ["a"]  # kept between sessions
    slot.get(_Settings(model="b"))
    assert made == ["a", "b"]
    drop_models()  # the worker moves on to another step's model: none is held any longer
    assert slot._model is None
    again = slot.get(_Settings(model="b"))
    assert again is not first and made == ["a", "b", "b"] and load_counts()["test-slot"] == 3
