"""Progress inside one session's stage: how much of the session's work is done, in the stage's own unit
(seconds of audio for transcribe and diarize, clips for rows).

Stages report through `advance(done, total, unit)`; whoever runs a stage in this process decides where
reports go with `reporting(callback)`. Nothing listens by default, so a stage run elsewhere (a worker
process) simply reports to no one. A context variable, not an argument, because the report comes from
deep inside adapters (a WhisperX batch, a pyannote embedding step) that know nothing of the runner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Reporter = Callable[[float, float, str], None]  # (done, total, unit)
_reporter: ContextVar[Reporter | None] = ContextVar("rescue_progress", default=None)


@contextmanager
def reporting(callback: Reporter | None) -> Iterator[None]:
    token = _reporter.set(callback)
    try:
        yield
    finally:
        _reporter.reset(token)


def advance(done: float, total: float, unit: str) -> None:
    """Tell whoever listens that `done` of `total` units of this session's stage are finished."""
    callback = _reporter.get()
    if callback is not None:
        callback(min(done, total), total, unit)


def window_reporter(start: float, end: float, first: float, last: float) -> Callable[[float], None]:
    """For work done window by window over the span first..last seconds: a reporter of the fraction done
    of the window start..end, as seconds of audio done of the whole span."""
    furthest = 0.0  # libraries may restart a step's count (pyannote does): the bar never moves back

    def report(fraction: float) -> None:
        nonlocal furthest
        furthest = max(furthest, min(1.0, fraction))
        advance(start - first + (end - start) * furthest, last - first, "s of audio")

    return report
