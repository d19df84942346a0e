"""`Span`: the one overlap and IoU computation, used by row re-anchoring, the sample's turn mapping, word ->
speaker assignment, speaker-name mapping and name carry-over."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.row_anchor import iou
from pipeline.span import Span
from pipeline.speech.assign import label_for_span
from pipeline.speech.records import SpeakerTurn


def test_overlap_is_the_shared_seconds_and_zero_when_apart_or_touching() -> None:
    assert Span(1.0, 4.0).overlap(Span(3.0, 6.0)) == pytest.approx(1.0)
    assert Span(3.0, 6.0).overlap(Span(1.0, 4.0)) == pytest.approx(1.0)
    assert Span(1.0, 4.0).overlap(Span(2.0, 3.0)) == pytest.approx(1.0)  # one inside the other
    assert Span(1.0, 2.0).overlap(Span(2.0, 3.0)) == 0.0  # touching
    assert Span(1.0, 2.0).overlap(Span(5.0, 6.0)) == 0.0  # apart: never negative
    assert Span(1.0, 3.5).duration == pytest.approx(2.5)


def test_iou_of_spans_and_of_records_with_start_and_end() -> None:
    assert Span(0.0, 4.0).iou(Span(2.0, 6.0)) == pytest.approx(2 / 6)
    assert Span(0.0, 4.0).iou(Span(0.0, 4.0)) == 1.0
    assert Span(0.0, 1.0).iou(Span(3.0, 4.0)) == 0.0
    assert Span(2.0, 2.0).iou(Span(2.0, 2.0)) == 0.0  # no union: no division by zero
    turn = SpeakerTurn(start=1.0, end=3.0, label="A")  # any record with start/end, no Span built for it
    assert Span(2.0, 3.0).iou(turn) == pytest.approx(0.5)
    assert iou((0.0, 4.0), (2.0, 6.0)) == Span(0.0, 4.0).iou(Span(2.0, 6.0))  # row ids' (start, end) pairs


def test_span_is_a_frozen_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Span(0.0, 1.0).start = 2.0  # type: ignore[misc]
    assert Span(0.0, 1.0) == Span(0.0, 1.0) and len({Span(0.0, 1.0), Span(0.0, 1.0)}) == 1


def test_a_word_of_no_length_takes_the_turn_it_falls_in() -> None:
    turns = [SpeakerTurn(start=0.0, end=2.0, label="A"), SpeakerTurn(start=2.5, end=4.0, label="B")]
    starts = [t.start for t in turns]
    assert label_for_span(3.0, 3.0, turns, starts, 2.0) == ("B", 0.0)
    assert label_for_span(1.5, 3.0, turns, starts, 2.0) == ("A", 0.0)  # 0.5 s of A against 0.5 s of B: sorted first
    assert label_for_span(2.2, 2.2, turns, starts, 2.0) == ("A", pytest.approx(0.2))  # in no turn: the nearest
