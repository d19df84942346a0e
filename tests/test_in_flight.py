"""Writes a few at a time (pipeline/annotate/in_flight.py): every item once, and at the first error the items not
yet sent are dropped, so a failing server is not asked hundreds more times."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.annotate.in_flight import IN_FLIGHT, each_in_flight


def test_every_item_is_called_once_with_at_most_in_flight_at_a_time() -> None:
    lock = threading.Lock()
    now, most, seen = 0, 0, []

    def call(item: int) -> None:
        nonlocal now, most
        with lock:
            now += 1
            most = max(most, now)
        time.sleep(0.01)
        with lock:
            now -= 1
            seen.append(item)

    assert each_in_flight(call, range(40), name="test") == 40
    assert sorted(seen) == list(range(40))
    assert 1 < most <= IN_FLIGHT


def test_the_first_error_is_raised_and_the_items_not_yet_sent_are_dropped() -> None:
    seen = []

    def call(item: int) -> None:
        time.sleep(0.02)
        seen.append(item)
        if item == 5:
            raise ConnectionError(f"server gone at item {item}")

    with pytest.raises(ConnectionError, match="item 5"):
        each_in_flight(call, range(200), name="test")
    assert 5 in seen and len(seen) < 5 + 3 * IN_FLIGHT  # those in flight finished; the rest were never sent
