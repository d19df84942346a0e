"""Many small write requests to one Label Studio server, a few at a time.

Label Studio takes about 100 ms to create one annotation or to replace one task's draft, about half of it waiting
on its SQLite database; with four requests in flight the server stays busy and the demo's 135 stored annotations
take half the time (docs/build.md, "Where a corpus build's time goes"). More than four gained nothing: the writes
queue for the database. Each call is independent (its own task), so their order does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TypeVar

IN_FLIGHT = 4

Item = TypeVar("Item")


def each_in_flight(call: Callable[[Item], object], items: Iterable[Item], *, name: str) -> int:
    """`call(item)` for every item, IN_FLIGHT at a time; the number of calls. At the first error the calls not yet
    sent are dropped and, once those in flight have returned, the first failed item's error is raised (a
    caller that resumes finds what the others wrote)."""
    with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix=name) as pool:
        futures = [pool.submit(call, item) for item in items]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f.done() and not f.cancelled() and f.exception() is not None), None)
        if failed is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            raise failed.exception()  # type: ignore[misc]
    return len(futures)
