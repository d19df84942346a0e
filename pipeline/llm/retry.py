"""When to try a request again, and how long to wait first.

Retried: HTTP 408, 409, 429 and 5xx, timeouts and lost connections. The wait is the server's
`retry-after-ms` / `Retry-After` (seconds or an HTTP date) when it sends one, else exponential backoff
with jitter (so parallel requests do not return in lockstep); both capped by `backoff_cap_s`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

RETRIED_STATUS = frozenset({408, 409, 429})


def retried_status(status: int) -> bool:
    return status in RETRIED_STATUS or status >= 500


def server_wait(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked us to wait, or None when it did not say (or said something unreadable)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def wait_before(attempt: int, headers: Mapping[str, str] | None, *, backoff_s: float, cap_s: float) -> float:
    """The wait before try number `attempt + 1` (attempt counts from 0)."""
    asked = server_wait(headers)
    if asked is not None:
        return min(asked, cap_s)
    return min(backoff_s * 2 ** attempt * random.uniform(0.5, 1.0), cap_s)
