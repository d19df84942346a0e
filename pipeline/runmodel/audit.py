"""The audit of every request before it is sent: does its content show an instance's answer?

It reads the request as it goes on the wire (the payload's user text: `{sample_id, scenario, targets}`,
each target with its id under the task's id key), not the batch it was made from, and checks it against
the tasks' answer sites (pipeline/tasks/answer_sites.py). A request that shows a batch-mate's answer is
split (leak-free batching) or, under `--batching paper`, sent and counted; an instance whose own prompt
shows its own answer is never sent, under either policy, and is unanswered with reason `leak_refused`.
A request whose text cannot be read is not sent either: that is a bug here, and the run stops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.errors import RescueError
from pipeline.llm.request import ChatRequest
from pipeline.runmodel.batches import Batch, make_batches
from pipeline.runmodel.settings import LEAK_FREE, PAPER
from pipeline.tasks.answer_sites import Leak, exposure, leaks_among
from pipeline.tasks.registry import task_spec

REFUSED = "leak_refused"


def sent_targets(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of a request as sent: the JSON document after the first paragraph of the user text."""
    content = payload["messages"][-1]["content"]
    text = content if isinstance(content, str) else "\n\n".join(
        item["text"] for item in content if item.get("type") == "text")
    try:
        document = json.loads(text.split("\n\n", 1)[1])
        targets = document["targets"]
        if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
            raise TypeError("`targets` is not a list of objects")
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        raise RescueError(f"the request audit cannot read the request it was given ({exc}); nothing was sent",
                          "this is a bug in pipeline/runmodel: report it with the command you ran") from exc
    return targets


def audit_payload(task: str, payload: dict[str, Any]) -> list[Leak]:
    """Every instance of the request whose answer the request shows, and which target shows it."""
    spec = task_spec(task)
    return leaks_among(spec.answer_site, [exposure(spec.answer_site, t, spec.prompt.id_key)
                                          for t in sent_targets(payload)])


@dataclass
class AuditCounts:
    """run.json's `request_audit`."""

    batching: str
    requests_audited: int = 0
    instances_audited: int = 0
    requests_showing_answers: int = 0  # found by the audit (before splitting or refusing)
    answers_shown: int = 0  # (instance that sees, instance seen) pairs found
    requests_split: int = 0
    instances_refused: int = 0  # their own prompt shows their answer: never sent
    requests_sent_showing_answers: int = 0  # only under --batching paper
    instances_whose_answer_was_sent: list[str] = field(default_factory=list)  # only under --batching paper

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        out["instances_whose_answer_was_sent"] = len(set(self.instances_whose_answer_was_sent))
        return out


@dataclass
class Gated:
    batches: list[Batch] = field(default_factory=list)
    requests: list[ChatRequest] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)  # {"id", "reason"}


def gate(task: str, mode: str, batches: Sequence[Batch], build: Callable[[Batch], ChatRequest],
         wire: Callable[[ChatRequest], dict[str, Any]], batching: str) -> tuple[Gated, AuditCounts]:
    """Audit each batch's request (`wire`: its payload as sent) and decide: send it, split it, refuse."""
    gated, counts = Gated(), AuditCounts(batching)

    def audited(batch: Batch) -> tuple[ChatRequest, list[Leak]]:
        request = build(batch)
        found = audit_payload(task, wire(request))
        counts.requests_audited += 1
        counts.instances_audited += len(batch.records)
        counts.requests_showing_answers += bool(found)
        counts.answers_shown += len(found)
        return request, found

    def send(batch: Batch, request: ChatRequest, found: list[Leak]) -> None:
        gated.batches.append(batch)
        gated.requests.append(request)
        if found:
            counts.requests_sent_showing_answers += 1
            counts.instances_whose_answer_was_sent += sorted({leak.owner for leak in found})

    def refuse(records: Sequence[dict[str, Any]], why: str) -> None:
        counts.instances_refused += len(records)
        gated.refused += [{"id": r["id"], "reason": f"{REFUSED}: {why}"} for r in records]

    for batch in batches:
        request, found = audited(batch)
        own = {leak.owner for leak in found if leak.seer == leak.owner}
        if not found or (batching == PAPER and not own):
            send(batch, request, found)
            continue
        refuse([r for r in batch.records if r["id"] in own], "its own prompt shows its answer")
        rest = [r for r in batch.records if r["id"] not in own]
        counts.requests_split += bool(rest)
        for piece in make_batches(rest, len(rest), task=task, mode=mode, batching=batching) if rest else []:
            request, found = audited(piece)
            if found and batching == LEAK_FREE:  # the batcher and the audit disagree: send nothing of it
                refuse(piece.records, "the request would still show an answer after splitting")
            else:
                send(piece, request, found)
    return gated, counts


def paper_warning(counts: AuditCounts) -> str:
    """What marks a `--batching paper` run in run.json, scores.json and the leaderboard."""
    shown = len(set(counts.instances_whose_answer_was_sent))
    return (f"--batching paper: per-sample batches as the paper's scripts sent them; {shown} instance(s) had their "
            "answer shown in a batch-mate's context: not a clean run, compare it only with other paper-batched runs")
