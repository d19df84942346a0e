"""Reading a predictions file (JSONL, one object per instance with its `id`) and checking it against
the release: every unreadable line, unknown id, repeated id, invalid value and missing instance is
reported by line and id. Nothing is skipped silently: missing and repeated instances score as wrong.

Each kind of answer has two readings: `parse_*` is the evaluator's (what it scores, with every problem named),
`normalise_*` is a model run's (the fields it writes to predictions.jsonl, or why there are none). The task
registry (pipeline/tasks/registry.py) names which pair each task uses."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.context import clean, parse_intensity

YES = {"yes", "y", "true", "1", "speak", "should_speak"}
NO = {"no", "n", "false", "0", "listen", "keep_listening", "do_not_speak"}
@dataclass
class PredictionCheck:
    """What was usable and what was wrong with a predictions file (ids and line numbers, 1-based)."""

    usable: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreadable: list[dict[str, Any]] = field(default_factory=list)
    unknown_ids: list[dict[str, Any]] = field(default_factory=list)
    duplicate_ids: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    missing_ids: list[str] = field(default_factory=list)

    lines: int = 0  # non-empty lines read

    @property
    def repeated_lines(self) -> int:
        """Every line of an id given more than once (the first one too: neither answer is scored)."""
        return len(self.duplicate_ids) + len({d["id"] for d in self.duplicate_ids})

    def summary(self) -> dict[str, Any]:
        repeated = {d["id"] for d in self.duplicate_ids}
        invalid = sum(1 for item in self.invalid if item["id"] not in repeated)
        counts = {"valid": len(self.usable) - invalid, "invalid": invalid, "repeated": self.repeated_lines,
                  "unknown_ids": len(self.unknown_ids), "unreadable_lines": len(self.unreadable)}
        # Every line falls in exactly one of these: they add up to the lines read.
        return {
            "counts": {"lines": self.lines, **counts, "missing_instances": len(self.missing_ids)},
            "unreadable_lines": self.unreadable, "unknown_ids": self.unknown_ids,
            "duplicate_ids": self.duplicate_ids, "invalid": self.invalid, "missing_ids": self.missing_ids,
        }


def normalise_should_speak(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):  # JSON 1 / 0; clean() would read 0 as empty
        return {1: "yes", 0: "no"}.get(value)
    text = clean(value).lower()
    return "yes" if text in YES else "no" if text in NO else None


Parsed = tuple[dict[str, Any], list[str]]  # the usable part of one prediction, the problems found
Normalised = tuple[dict[str, Any] | None, str]  # a run's prediction fields, or None and why there are none


@dataclass(frozen=True)
class Ranking:
    """A ranking task's answer: up to three labels in `answer`, each from the instance's `candidates` list."""

    answer: str
    candidates: str

    def parse(self, record: dict[str, Any], instance: dict[str, Any]) -> Parsed:
        name, allowed = self.answer, instance[self.candidates]
        values = record.get(name)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list) or not values:
            return {"ranking": []}, [f"{name} must be a non-empty list of labels"]
        # An invalid or repeated label keeps its rank as a miss: dropping it would move later labels up.
        problems: list[str] = []
        ranking: list[str | None] = []
        for value in values[:3]:
            label = clean(value)
            if label not in allowed:
                problems.append(f"{name}: {value!r} is not one of {allowed}")
                ranking.append(None)
            elif label in ranking:
                problems.append(f"{name}: {label!r} is listed twice")
                ranking.append(None)
            else:
                ranking.append(label)
        return {"ranking": ranking}, problems

    def normalise(self, item: dict[str, Any], record: dict[str, Any]) -> Normalised:
        name, allowed = self.answer, record[self.candidates]
        values = item.get(name)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list):
            return None, f"{name} is not a list of labels"
        kept = list(dict.fromkeys(label for label in map(clean, values) if label in allowed))[:3]
        if not kept:
            return None, f"{name} {values!r} holds no label from {self.candidates}"
        return {name: kept}, ""


def parse_should_speak(record: dict[str, Any], instance: dict[str, Any]) -> Parsed:
    answer = normalise_should_speak(record.get("should_speak"))
    problems = [] if answer is not None else [f"should_speak {record.get('should_speak')!r} is not yes or no"]
    return {"should_speak": answer}, problems


def normalise_should_speak_answer(item: dict[str, Any], record: dict[str, Any]) -> Normalised:
    answer = normalise_should_speak(item.get("should_speak"))
    if not answer:
        return None, f"should_speak {item.get('should_speak')!r} is not yes or no"
    return {"should_speak": answer}, ""


def parse_emotion(record: dict[str, Any], instance: dict[str, Any]) -> Parsed:
    problems: list[str] = []
    text = record.get("predicted_internal_emotion")
    if not isinstance(text, str) or not text.strip():
        problems.append("predicted_internal_emotion must be a non-empty text")
    score = record.get("predicted_intensity_score")
    # JSON true/false would pass as 1/0 (a bool is an int in Python): a yes/no is not an intensity.
    intensity = None if isinstance(score, bool) else parse_intensity(score)
    if isinstance(score, bool):
        problems.append(f"predicted_intensity_score {json.dumps(score)} is a boolean, not a number 0-10")
    elif intensity is None:
        problems.append(f"predicted_intensity_score {score!r} is not 0-10")
    return {"emotion": text.strip() if isinstance(text, str) else "", "intensity": intensity}, problems


def normalise_emotion(item: dict[str, Any], record: dict[str, Any]) -> Normalised:
    text, score = item.get("predicted_internal_emotion"), item.get("predicted_intensity_score")
    intensity = None if isinstance(score, bool) else parse_intensity(score)
    if not isinstance(text, str) or not text.strip():
        return None, "predicted_internal_emotion is empty"
    if intensity is None:
        return None, f"predicted_intensity_score {score!r} is not 0-10"
    return {"predicted_internal_emotion": text.strip(), "predicted_intensity_score": intensity}, ""


def parse_viewpoints(record: dict[str, Any], instance: dict[str, Any]) -> Parsed:
    problems: list[str] = []
    views = record.get("predicted_viewpoints")
    if isinstance(views, dict):
        views = [views]
    usable = []
    if not isinstance(views, list):
        return {"viewpoints": []}, ["predicted_viewpoints must be a list of {source, target, viewpoint}"]
    for n, item in enumerate(views):
        if not isinstance(item, dict) or not clean(item.get("target")) or not clean(item.get("viewpoint")):
            problems.append(f"predicted_viewpoints[{n}] needs a target and a viewpoint")
            continue
        usable.append({"source": clean(item.get("source")) or instance["speaker"], "target": clean(item["target"]),
                       "viewpoint": clean(item["viewpoint"])})
    return {"viewpoints": usable}, problems


def normalise_viewpoints(item: dict[str, Any], record: dict[str, Any]) -> Normalised:
    views = item.get("predicted_viewpoints")
    if isinstance(views, dict):
        views = [views]
    if not isinstance(views, list):
        return None, "predicted_viewpoints is not a list"
    usable = [{"source": clean(v.get("source")) or record["speaker"], "target": clean(v.get("target")),
               "viewpoint": clean(v.get("viewpoint"))}
              for v in views if isinstance(v, dict) and clean(v.get("target")) and clean(v.get("viewpoint"))]
    if views and not usable:
        return None, "no viewpoint has both a target and a viewpoint"
    return {"predicted_viewpoints": usable}, ""


def _refuse_one_json_document(path: Path, lines: list[str]) -> None:
    """A JSON array (or one pretty-printed object) is a common slip for JSONL: say so instead of scoring zeros."""
    try:
        document = json.loads("\n".join(lines))
    except json.JSONDecodeError:
        return  # JSONL with more than one line never parses as one document
    several_lines = sum(1 for line in lines if line.strip()) > 1
    if isinstance(document, list) or isinstance(document, dict) and several_lines:
        kind = "one JSON array" if isinstance(document, list) else "one JSON object spread over several lines"
        raise RescueError(f"predictions file {path} is {kind}, not JSONL",
                          "write one JSON object per instance on its own line (JSON Lines), each with its `id`")


def check_predictions(parse: Callable[[dict[str, Any], dict[str, Any]], Parsed], path: Path,
                      instances: dict[str, dict[str, Any]], *, allow_empty: bool = False) -> PredictionCheck:
    """`parse`: the task's own reading of one prediction (pipeline/tasks/registry.py). `instances`: id ->
    model-facing record of the release's task file, in file order. `allow_empty`: a model run whose every
    instance went unanswered writes an empty file; that is not a slip."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise RescueError(f"predictions file {path} not found", "pass the JSONL file your model wrote") from exc
    except UnicodeDecodeError as exc:
        raise RescueError(f"predictions file {path} is not UTF-8 text", "write it as UTF-8 JSONL") from exc
    if not any(line.strip() for line in lines) and not allow_empty:
        raise RescueError(f"predictions file {path} holds no predictions (it is empty)",
                          "write one JSON object per instance and line, with its `id` (docs/tasks.md)")
    _refuse_one_json_document(path, lines)
    check = PredictionCheck()
    first_line: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        check.lines += 1
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            check.unreadable.append({"line": number, "problem": f"not JSON ({exc.msg})"})
            continue
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            check.unreadable.append({"line": number, "problem": "not an object with a string `id`"})
            continue
        pid = record["id"]
        if pid not in instances:
            check.unknown_ids.append({"line": number, "id": pid})
            continue
        if pid in first_line:
            check.duplicate_ids.append({"line": number, "id": pid, "first_line": first_line[pid]})
            continue
        first_line[pid] = number
        usable, problems = parse(record, instances[pid])
        if problems:
            check.invalid.append({"line": number, "id": pid, "problems": problems})
        check.usable[pid] = usable
    repeated = {d["id"] for d in check.duplicate_ids}
    for pid in repeated:  # two answers for one instance: neither is scored
        check.usable.pop(pid, None)
    check.missing_ids = [pid for pid in instances if pid not in first_line]
    return check
