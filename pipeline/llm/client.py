"""Send many chat requests to an OpenAI-compatible endpoint: cached, concurrent, retried, within budget.

The only module that imports the `openai` SDK. The SDK's own retries are off (`max_retries=0`) so that
ours (`retry`: Retry-After honoured, capped backoff) are the only ones and every try is counted.

Outcomes, one per request in order: `ChatAnswer` (from the server or the cache; whether it is usable is
the caller's business; one longer than the run's bound has no content and says why in `problem`) or
`NotSent` (the budget was reached first). Problems that no row can get past
(missing or refused key, endpoint unreachable, a request the server rejects, an answer that is not a chat
completion at all, such as a web page, retries used up) raise one
`RescueError` naming the setting to fix, after the requests in flight finish; their answers are cached,
so the next run resumes where this one stopped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.llm.budget import TokenBudget
from pipeline.llm.cache import CachedAnswer, ResponseCache
from pipeline.llm.key import read_key, redact
from pipeline.llm.request import ChatRequest, payload_digest
from pipeline.llm.retry import retried_status, wait_before
from pipeline.llm.settings import ChatSettings

log = logging.getLogger("rescue.llm")

# An answer may hold at most this many bytes per token of the run's limit: a bound, not an average (English
# text is 3-5 bytes a token; a token of CJK text or of a long run of spaces or punctuation can be 10-30).
# Beyond it the answer cannot have come within the limit, and keeping it would let one answer fill the disk.
MAX_BYTES_PER_TOKEN = 32
UNSET_LIMIT_TOKENS = 32_768  # the bound's token count when max_completion_tokens = 0 (left to the server)


def answer_byte_limit(max_completion_tokens: int) -> int:
    return (max_completion_tokens or UNSET_LIMIT_TOKENS) * MAX_BYTES_PER_TOKEN


@dataclass(frozen=True)
class ChatAnswer:
    content: str
    finish_reason: str
    refusal: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    problem: str = ""  # why the content was not kept (longer than the run's bound); the content is then ""


@dataclass(frozen=True)
class NotSent:
    reason: str


Outcome = ChatAnswer | NotSent


@dataclass
class ChatRunStats:
    """What one `complete_all` did: for the step's record and the user's summary."""

    requests: int = 0
    cache_hits: int = 0
    answers: int = 0  # answers the server sent (each cost tokens)
    tries: int = 0  # HTTP requests sent, retries included
    waits: list[tuple[str, str, float]] = field(default_factory=list)  # (request label, why, seconds waited)
    not_sent: int = 0
    tokens: int = 0
    cost: float | None = None
    damaged_cache: list[str] = field(default_factory=list)  # cache entries read back damaged, asked again

    def describe(self) -> str:
        """One line for the user, e.g. `23 requests: 20 answered, 3 from the cache, 2 retries, 41,210 tokens`."""
        parts = [f"{self.answers} answered", f"{self.cache_hits} from the cache"]
        if self.not_sent:
            parts.append(f"{self.not_sent} not sent")
        if self.damaged_cache:
            count = len(self.damaged_cache)
            parts.append(f"{count} damaged cache entr{'y' if count == 1 else 'ies'} asked again "
                         f"(first: {self.damaged_cache[0]})")
        retries = self.tries - self.answers
        if retries > 0:
            parts.append(f"{retries} retries")
        parts.append(f"{self.tokens:,} tokens" + ("" if self.cost is None else f", cost {self.cost:.4f}"))
        return f"{self.requests} requests: {', '.join(parts)}"


class _Fatal(Exception):
    """A RescueError raised in a worker: stop starting requests, finish those in flight, then raise."""

    def __init__(self, error: RescueError) -> None:
        super().__init__(str(error))
        self.error = error


class ChatClient:
    def __init__(self, settings: ChatSettings, cache_folder: Path | None, *, section: str,
                 environ: Mapping[str, str] | None = None, sleep: Callable[[float], None] = time.sleep,
                 headers: Mapping[str, str] | None = None) -> None:
        """`section` names where the settings live (e.g. `[tool.rescue.preannotate.openai]`) for error messages.
        `headers`: extra HTTP headers sent with every request (e.g. a provider's switch); not part of the hash."""
        if not settings.model:
            raise RescueError(f"no model is set for the chat endpoint {settings.base_url} (setting {section} model)",
                              f"set {section} model to a model that endpoint serves")
        self.settings = settings
        self.section = section
        self._key = read_key(settings, section, os.environ if environ is None else environ)
        self._cache = ResponseCache(cache_folder) if settings.cache and cache_folder is not None else None
        self._sleep = sleep
        self._headers = dict(headers or {})
        self._sdk: Any = None

    def _sdk_client(self) -> Any:
        if self._sdk is None:
            import openai

            self._sdk = openai.OpenAI(api_key=self._key, base_url=self.settings.base_url, max_retries=0,
                                      timeout=self.settings.timeout_s, default_headers=self._headers or None)
        return self._sdk

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        return request.payload(self.settings.model, self.settings.max_completion_tokens)

    def digest(self, request: ChatRequest) -> str:
        return payload_digest(self.settings.endpoint, self.payload(request))

    def complete_all(self, requests: Sequence[ChatRequest], on_outcome: Callable[[int, Outcome], None] | None = None
                     ) -> tuple[list[Outcome], ChatRunStats]:
        """`on_outcome(index, outcome)` is called in the worker thread as each request's outcome is known (a run's
        log is written as the run goes, so a killed run keeps what it did); it must be thread-safe."""
        stats = ChatRunStats(requests=len(requests))
        budget = TokenBudget(self.settings)
        stop = threading.Event()
        lock = threading.Lock()
        fatal: list[RescueError] = []
        self._sdk_client()  # made once, before the threads, which share it (and its connection pool)

        def one(index: int, request: ChatRequest) -> Outcome:
            outcome = ask(request)
            if on_outcome is not None:
                on_outcome(index, outcome)
            return outcome

        def ask(request: ChatRequest) -> Outcome:
            payload = self.payload(request)
            digest = payload_digest(self.settings.endpoint, payload)
            cached = self._cache.get(digest) if self._cache else None
            if cached is not None:
                with lock:
                    stats.cache_hits += 1
                return _answer(cached, cached=True)
            if stop.is_set():
                return NotSent("stopped: another request failed (see the error)")
            if not budget.allows_another():
                stop_reason = f"budget reached before this request: {budget.describe()}"
                return NotSent(stop_reason)
            try:
                fresh = self._send(request.label, payload, stats, lock)
            except _Fatal as exc:
                stop.set()
                with lock:
                    fatal.append(exc.error)
                return NotSent(f"stopped: {exc.error.message}")
            budget.spend(fresh.prompt_tokens + fresh.completion_tokens)
            if self._cache:
                self._cache.put(digest, fresh)
            with lock:
                stats.answers += 1
            return _answer(fresh, cached=False)

        with ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="llm") as pool:
            outcomes = list(pool.map(one, range(len(requests)), requests))
        stats.not_sent = sum(isinstance(o, NotSent) for o in outcomes)
        stats.tokens, stats.cost = budget.spent, budget.cost
        if self._cache and self._cache.damaged:
            stats.damaged_cache = list(self._cache.damaged)
            log.warning("%d damaged cache entries were asked again: %s", len(stats.damaged_cache),
                        "; ".join(stats.damaged_cache[:3]))
        if fatal:
            raise fatal[0]
        return outcomes, stats

    def _send(self, label: str, payload: dict[str, Any], stats: ChatRunStats, lock: threading.Lock) -> CachedAnswer:
        import openai

        tries = self.settings.max_retries + 1
        for attempt in range(tries):
            with lock:
                stats.tries += 1
            try:
                completion = self._sdk_client().chat.completions.create(**payload)
                return self._read(completion)
            except openai.APIStatusError as exc:
                if not retried_status(exc.status_code):
                    raise _Fatal(self._refused(exc)) from None
                why, headers = f"HTTP {exc.status_code}", exc.response.headers
            except openai.APITimeoutError:
                why, headers = f"no answer within {self.settings.timeout_s:g} s (timeout_s)", None
            except openai.APIConnectionError as exc:
                why, headers = f"connection failed ({self._clean(str(exc.__cause__ or exc))})", None
            except openai.OpenAIError as exc:
                raise _Fatal(RescueError(f"the chat endpoint {self.settings.base_url} failed: "
                                         f"{self._clean(str(exc))}", "check the endpoint's settings")) from None
            except ValueError as exc:  # HTTP 200 whose body is not JSON (a web page, a proxy's login form)
                raise _Fatal(self._not_a_completion(f"a body that is not JSON ({type(exc).__name__}: "
                                                    f"{self._clean(str(exc), 120)})")) from None
            if attempt + 1 == tries:
                raise _Fatal(self._gave_up(why, tries))
            wait = wait_before(attempt, headers, backoff_s=self.settings.backoff_s, cap_s=self.settings.backoff_cap_s)
            with lock:
                stats.waits.append((label, why, wait))
            log.info("chat request %s: %s; trying again in %.1f s", label, why, wait)
            self._sleep(wait)
        raise AssertionError("unreachable")

    def _read(self, completion: Any) -> CachedAnswer:
        if isinstance(completion, str):  # the SDK hands back the text of a body that is not JSON
            raise _Fatal(self._not_a_completion(f"a {len(completion):,}-character body that is not JSON, starting "
                                                f"{self._clean(completion, 80)!r}"))
        choice = completion.choices[0] if completion.choices else None
        message = choice.message if choice is not None else None
        usage = completion.usage
        content = (message.content or "") if message is not None else ""
        if not isinstance(content, str):
            raise _Fatal(self._not_a_completion(f"a message content of type {type(content).__name__}"))
        limit, size = answer_byte_limit(self.settings.max_completion_tokens), len(content.encode("utf-8"))
        problem = ""
        if size > limit:
            problem = (f"the answer is {size:,} bytes, more than the run's bound of {limit:,} (max_completion_tokens "
                       f"{self.settings.max_completion_tokens or f'unset, taken as {UNSET_LIMIT_TOKENS:,}'} "
                       f"x {MAX_BYTES_PER_TOKEN} bytes a token)")
            content = ""
        return CachedAnswer(
            problem=problem,
            content=content,
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
            refusal=str(getattr(message, "refusal", "") or ""),
            # Servers that report no usage are charged by length (about 4 characters a token).
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)) if usage else 0,
            completion_tokens=_count(getattr(usage, "completion_tokens", 0)) if usage else max(1, size // 4),
            model=str(completion.model or self.settings.model))

    def _clean(self, text: str, limit: int = 300) -> str:
        text = redact(" ".join(text.split()), self._key)
        return text if len(text) <= limit else text[:limit] + "…"

    def _refused(self, exc: Any) -> RescueError:
        status, where, section = exc.status_code, self.settings.base_url, self.section
        said = self._clean(str(getattr(exc, "message", "") or exc))
        if status in (401, 403):
            var = self.settings.api_key_env or "(none: api_key_env is empty)"
            return RescueError(f"the chat endpoint {where} refused the key from {var} (setting {section} "
                               f"api_key_env): HTTP {status}: {said}",
                               f"put a valid key in {var}, or point {section} api_key_env at the variable that "
                               "holds one")
        if status == 404:
            return RescueError(f"the chat endpoint {where} does not know model {self.settings.model!r} or the path "
                               f"(HTTP 404: {said})", f"check {section} base_url (it ends in /v1 for most servers) "
                               f"and {section} model")
        return RescueError(f"the chat endpoint {where} rejected a request: HTTP {status}: {said}",
                           f"check that {section} model supports structured output (response_format json_schema) "
                           f"and, if the server refuses max_completion_tokens, set {section} max_completion_tokens "
                           "= 0; the server's message above says more")

    def _not_a_completion(self, what: str) -> RescueError:
        where, section = self.settings.base_url, self.section
        return RescueError(f"the chat endpoint {where} answered HTTP 200 with {what}, not a chat completion",
                           f"check {section} base_url: it must be the OpenAI-compatible API root (most end in /v1), "
                           "not a web page, a proxy's login page or the server's home page")

    def _gave_up(self, why: str, tries: int) -> RescueError:
        where, section = self.settings.base_url, self.section
        if why.startswith("connection failed"):
            return RescueError(f"cannot reach the chat endpoint {where} (setting {section} base_url): {why}, "
                               f"{tries} tries", f"start the server or fix {section} base_url; answers received "
                               "so far are cached")
        return RescueError(f"the chat endpoint {where} kept failing: {why}, {tries} tries",
                           f"run again later (answers received so far are cached), or raise {section} max_retries "
                           "/ timeout_s")


def _count(value: Any) -> int:
    """A token count as the server reported it; anything but a whole non-negative number (a float such as
    1e309, text, null) counts 0 rather than reaching the budget or a record."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _answer(stored: CachedAnswer, *, cached: bool) -> ChatAnswer:
    return ChatAnswer(content=stored.content, finish_reason=stored.finish_reason, refusal=stored.refusal,
                      prompt_tokens=stored.prompt_tokens, completion_tokens=stored.completion_tokens, cached=cached,
                      problem=stored.problem)
