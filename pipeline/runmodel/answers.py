"""A model's answer to one batch -> a prediction per instance, or the reason there is none. Never a guess.

Per id: ITP yes/no is normalised as `rescue evaluate` does (pipeline/tasks/predictions.py); labels outside a
ranking task's candidates and repeated labels are dropped (spec section 4), the list is not topped up;
a VP viewpoint without `source` gets the speaker. What is left must pass the evaluator's own check, so
predictions.jsonl holds only answers `rescue evaluate` scores as given. Every instance of the batch that gets
no prediction is unanswered with a reason `<kind>: <detail>`: the answer is not JSON (all ids of the
request), the answer was longer than the run's bound (max_completion_tokens x a bytes-per-token bound, see
pipeline/llm/client.py; such an answer is not kept), the model refused, left an id out, gave it twice, or
gave nothing usable for it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.llm.client import ChatAnswer, NotSent, Outcome
from pipeline.runmodel.batches import Batch
from pipeline.tasks.registry import task_spec


@dataclass
class BatchResult:
    predictions: list[dict[str, Any]] = field(default_factory=list)  # {"id", the task's fields, "reason"?}
    unanswered: list[dict[str, str]] = field(default_factory=list)  # {"id", "reason"}
    unknown_ids: int = 0  # ids in the answer that the request did not ask for (ignored)


def normalised(task: str, item: dict[str, Any], record: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The prediction fields `rescue evaluate` reads, or None and why there are none."""
    return task_spec(task).prediction.normalise(item, record)


def _document(answer: ChatAnswer) -> tuple[list[Any] | None, str]:
    """The answer's `predictions` list, or None and the reason for every id of the request."""
    if answer.problem:
        return None, f"too_long: {answer.problem}"
    if answer.refusal:
        return None, f"refused: {answer.refusal[:200]}"
    try:
        document = json.loads(answer.content)
    except ValueError as exc:
        cut = " (cut at max_completion_tokens)" if answer.finish_reason == "length" else ""
        return None, f"invalid_json: {exc.msg} at character {exc.pos}{cut}"
    if not isinstance(document, dict):
        return None, "invalid_json: the answer is not a JSON object"
    predictions = document.get("predictions")
    if not isinstance(predictions, list):
        return None, "no_predictions: the answer has no `predictions` list"
    return predictions, ""


def read_batch(task: str, batch: Batch, outcome: Outcome) -> BatchResult:
    result = BatchResult()
    if isinstance(outcome, NotSent):
        result.unanswered = [{"id": i, "reason": f"not_sent: {outcome.reason}"} for i in batch.ids]
        return result
    items, problem = _document(outcome)
    if items is None:
        result.unanswered = [{"id": i, "reason": problem} for i in batch.ids]
        return result
    spec = task_spec(task)
    key, records = spec.prompt.id_key, {record["id"]: record for record in batch.records}
    given: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        pid = item.get(key) if isinstance(item, dict) else None
        if isinstance(pid, str) and pid in records:
            given.setdefault(pid, []).append(item)
        else:
            result.unknown_ids += 1
    for pid, record in records.items():
        answers = given.get(pid, [])
        if not answers:
            result.unanswered.append({"id": pid, "reason": f"missing_id: the answer has no prediction for {key} "
                                                           f"{pid}"})
            continue
        if len(answers) > 1:
            result.unanswered.append({"id": pid, "reason": f"repeated_id: the answer gives {len(answers)} "
                                                           "predictions for it"})
            continue
        fields, why = normalised(task, answers[0], record)
        if fields is not None:
            _, problems = spec.prediction.parse(fields, record)  # the evaluator's check: the same verdict
            why = "; ".join(problems)
        if fields is None or why:
            result.unanswered.append({"id": pid, "reason": f"invalid_answer: {why}"})
            continue
        reason = answers[0].get("reason")
        result.predictions.append({"id": pid, **fields, **({"reason": reason} if isinstance(reason, str) else {})})
    return result


def read_all(task: str, batches: Sequence[Batch], outcomes: Sequence[Outcome]) -> BatchResult:
    merged = BatchResult()
    for batch, outcome in zip(batches, outcomes):
        one = read_batch(task, batch, outcome)
        merged.predictions += one.predictions
        merged.unanswered += one.unanswered
        merged.unknown_ids += one.unknown_ids
    return merged
