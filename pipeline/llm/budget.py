"""A token (and cost) budget shared by the threads of one run.

The check happens before a request starts: once the tokens spent reach the limit, no new request
starts. Requests already in flight finish and count, so a run can pass the limit by at most what
`concurrency - 1` answers cost; concurrency 1 makes the stop exact to one request.
"""

from __future__ import annotations

import math
import threading

from pipeline.llm.settings import ChatSettings


class TokenBudget:
    def __init__(self, settings: ChatSettings) -> None:
        self.price_per_1k = settings.price_per_1k_tokens
        limits = [settings.max_total_tokens or math.inf]
        if settings.max_cost is not None and settings.price_per_1k_tokens:
            limits.append(settings.max_cost / settings.price_per_1k_tokens * 1000)
        self.limit = min(limits)
        self.spent = 0
        self._lock = threading.Lock()

    def allows_another(self) -> bool:
        with self._lock:
            return self.spent < self.limit

    def spend(self, tokens: int) -> None:
        with self._lock:
            self.spent += tokens

    @property
    def cost(self) -> float | None:
        return None if self.price_per_1k is None else self.spent / 1000 * self.price_per_1k

    def describe(self) -> str:
        limit = "no limit" if math.isinf(self.limit) else f"limit {int(self.limit)}"
        cost = "" if self.cost is None else f", cost {self.cost:.4f}"
        return f"{self.spent} tokens spent ({limit}{cost})"
