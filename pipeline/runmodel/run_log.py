"""A run's log, written as the run goes: requests.jsonl and samples.jsonl (records: pipeline/runmodel/log_records.py).

Each answer is appended to the `.partial` files the moment it arrives (from the server or the cache), so a run
killed or stopped by an error keeps what it did; the folder is made only when the first answer arrives, so a run
that got none leaves no folder. A finished run writes both files whole, requests in the order they were built and
instances in the release's order, atomically and before run.json, then removes the partial ones. The instances of
each request are read by the same function that writes predictions.jsonl (`read_batch`), so the log's predictions
and reasons are the run's. Re-running rewrites the log from the cache (`cached: true`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from pipeline.layout import RUN_REQUESTS, RUN_REQUESTS_PARTIAL, RUN_SAMPLES, RUN_SAMPLES_PARTIAL
from pipeline.llm.client import ChatAnswer, Outcome
from pipeline.llm.request import ChatRequest
from pipeline.runmodel.answers import read_batch
from pipeline.runmodel.batches import Batch
from pipeline.runmodel.log_records import RequestLog, SampleLog, user_text
from pipeline.store import write_text_atomic
from pipeline.tasks.modes import video_attachments
from pipeline.tasks.registry import task_spec


def _short_media(payload: dict[str, Any], clips: list[str]) -> dict[str, Any]:
    """The payload with every data URL cut to its clip's path and size: the log records what was sent, not the
    media's bytes (a video request is megabytes of base64)."""
    position = 0
    messages = []
    for message in payload["messages"]:
        content = message["content"]
        if isinstance(content, list):
            items = []
            for item in content:
                kind = item.get("type")
                media = item.get(kind) if kind in ("video_url", "image_url") else None
                if isinstance(media, dict) and str(media.get("url", "")).startswith("data:"):
                    url = media["url"]
                    name = clips[position] if kind == "video_url" and position < len(clips) else f"item {position + 1}"
                    position += kind == "video_url"
                    head = url.split(",", 1)[0]
                    item = {**item, kind: {**media, "url": f"{head},… ({name}: {len(url):,} characters, not logged)"}}
                items.append(item)
            message = {**message, "content": items}
        messages.append(message)
    return {**payload, "messages": messages}


def _answer_items(task: str, outcome: Outcome) -> dict[str, list[Any]]:
    """What the answer's `predictions` list gave per id (several when repeated), as the model wrote it."""
    if not isinstance(outcome, ChatAnswer) or not outcome.content:
        return {}
    try:
        document = json.loads(outcome.content)
    except ValueError:
        return {}
    items = document.get("predictions") if isinstance(document, dict) else None
    given: dict[str, list[Any]] = {}
    for item in items if isinstance(items, list) else []:
        pid = item.get(task_spec(task).prompt.id_key) if isinstance(item, dict) else None
        if isinstance(pid, str):
            given.setdefault(pid, []).append(item)
    return given


def _spans(task: str, batch: Batch, text: str) -> dict[str, tuple[int, int]]:
    """Where each instance's target JSON sits in the user text. The text ends with the targets list, dumped with
    json's default separators, each target opening with its id key (pipeline/runmodel/batches.py): a target runs
    from its own opening to the next one's (less the ", " between them), the last to the closing "]}". Found by
    search, not by dumping the targets again (their context rows are most of a prompt)."""
    starts = []
    cursor = 0
    for pid in batch.ids:
        start = text.find(f'{{"{task_spec(task).prompt.id_key}": {json.dumps(pid, ensure_ascii=False)}', cursor)
        if start < 0:
            return {}
        starts.append(start)
        cursor = start + 1
    ends = [following - 2 for following in starts[1:]] + [len(text.rstrip()) - 2]
    return {pid: (start, end) for pid, start, end in zip(batch.ids, starts, ends) if text[end - 1:end] == "}"}


def _jsonl(models: Sequence[RequestLog | SampleLog]) -> str:
    return "".join(model.model_dump_json() + "\n" for model in models)


class RunLog:
    """Collects the log of one run; `answered` is the client's `on_outcome` hook (called from its threads)."""

    def __init__(self, folder: Path, task: str, mode: str, instances: Sequence[dict[str, Any]],
                 batches: Sequence[Batch], requests: Sequence[ChatRequest],
                 wire: Callable[[ChatRequest], dict[str, Any]], digest: Callable[[ChatRequest], str]) -> None:
        self.folder, self.task, self.mode = folder, task, mode
        self._order = {record["id"]: n for n, record in enumerate(instances)}  # the release's order
        self._records = {record["id"]: record for record in instances}
        self._batches, self._requests = batches, requests
        self._wire, self._digest = wire, digest
        self._lock = threading.Lock()
        self._entries: dict[int, tuple[RequestLog, list[SampleLog]]] = {}
        self._partial: tuple[IO[str], IO[str]] | None = None

    def entries(self, index: int, outcome: Outcome) -> tuple[RequestLog, list[SampleLog]]:
        batch, request = self._batches[index], self._requests[index]
        payload = self._wire(request)
        clips = [clip for record in batch.records for clip in video_attachments(record)]
        answer = outcome if isinstance(outcome, ChatAnswer) else None
        logged = RequestLog(
            request=index, label=request.label, sample_id=batch.sample_id, scenario=batch.scenario, ids=batch.ids,
            digest=self._digest(request), payload=_short_media(payload, clips), sent=answer is not None,
            not_sent="" if answer is not None else outcome.reason,  # type: ignore[union-attr]
            **({"cached": answer.cached, "content": answer.content, "finish_reason": answer.finish_reason,
                "refusal": answer.refusal, "problem": answer.problem, "prompt_tokens": answer.prompt_tokens,
                "completion_tokens": answer.completion_tokens} if answer is not None else {}))
        read = read_batch(self.task, batch, outcome)
        parsed = {p["id"]: {k: v for k, v in p.items() if k != "id"} for p in read.predictions}
        reasons = {u["id"]: u["reason"] for u in read.unanswered}
        spans, given = _spans(self.task, batch, user_text(payload)), _answer_items(self.task, outcome)
        samples = [SampleLog(n=self._order[pid], id=pid, sample_id=batch.sample_id, scenario=batch.scenario,
                             request=index, prompt_span=spans.get(pid), answer_items=given.get(pid, []),
                             parsed=parsed.get(pid), reason=reasons.get(pid, "")) for pid in batch.ids]
        return logged, samples

    def answered(self, index: int, outcome: Outcome) -> None:
        logged, samples = self.entries(index, outcome)
        with self._lock:
            self._entries[index] = (logged, samples)
            if not isinstance(outcome, ChatAnswer):
                return  # only answers go to the partial log: a run that got none leaves no folder
            if self._partial is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                # open for the whole run (closed by close_partial), so each answer is one write and a flush
                requests_file = open(self.folder / RUN_REQUESTS_PARTIAL, "w", encoding="utf-8")  # noqa: SIM115
                samples_file = open(self.folder / RUN_SAMPLES_PARTIAL, "w", encoding="utf-8")  # noqa: SIM115
                self._partial = (requests_file, samples_file)
            requests_file, samples_file = self._partial
            requests_file.write(_jsonl([logged]))
            samples_file.write(_jsonl(samples))
            requests_file.flush()
            samples_file.flush()

    def close_partial(self) -> None:
        with self._lock:
            for handle in self._partial or ():
                handle.close()
            self._partial = None

    def finish(self, outcomes: Sequence[Outcome], refused: Sequence[dict[str, str]]) -> None:
        """Write the whole log in order (every request has its outcome now), then drop the partial files."""
        self.close_partial()
        for index, outcome in enumerate(outcomes):
            if index not in self._entries:
                self._entries[index] = self.entries(index, outcome)
        requests = [self._entries[i][0] for i in sorted(self._entries)]
        samples = [s for i in sorted(self._entries) for s in self._entries[i][1]]
        samples += [SampleLog(n=self._order[item["id"]], id=item["id"], request=None, reason=item["reason"],
                              sample_id=self._records[item["id"]]["sample_id"],
                              scenario=self._records[item["id"]]["scenario"]) for item in refused]
        samples.sort(key=lambda s: s.n)
        self.folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.folder / RUN_REQUESTS, _jsonl(requests))
        write_text_atomic(self.folder / RUN_SAMPLES, _jsonl(samples))
        (self.folder / RUN_REQUESTS_PARTIAL).unlink(missing_ok=True)
        (self.folder / RUN_SAMPLES_PARTIAL).unlink(missing_ok=True)
