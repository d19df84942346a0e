"""Reading a run's log back for `rescue show-run`: one `InstanceView` per instance, joined from samples.jsonl,
requests.jsonl, run.json and (once `rescue evaluate --run` scored it) sample_scores.jsonl.

A finished run is read from its final files; an unfinished one (killed, or stopped by an error: no run.json) from
the partial files it left, whose last line may be torn (counted, not read). A run made before logs were written
has neither: the error says how to get one (run it again: its answers come from the cache).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from pipeline.errors import RescueError
from pipeline.layout import (RUN_RECORD, RUN_REQUESTS, RUN_REQUESTS_PARTIAL, RUN_SAMPLE_SCORES, RUN_SAMPLES,
                             RUN_SAMPLES_PARTIAL, RUN_SCORES, runs_dir)
from pipeline.project import Project
from pipeline.runmodel.log_records import RequestLog, SampleLog, user_text

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class InstanceView:
    sample: SampleLog
    request: RequestLog | None
    scored: dict[str, Any] | None  # its line of sample_scores.jsonl

    @property
    def outcome(self) -> str:
        """unanswered, right / wrong (scored), or answered (not scored yet)."""
        if self.sample.parsed is None:
            return "unanswered"
        if self.scored is not None:
            return "right" if self.scored.get("correct") else "wrong"
        return "answered" if self.sample.parsed is not None else "unanswered"

    @property
    def system(self) -> str:
        if self.request is None:
            return ""
        first = self.request.payload["messages"][0]
        return first["content"] if first.get("role") == "system" and isinstance(first["content"], str) else ""

    @property
    def user(self) -> str:
        return user_text(self.request.payload) if self.request is not None else ""

    @property
    def target(self) -> str:
        """This instance's target in the user text (its own span, not its batch-mates')."""
        span = self.sample.prompt_span
        return self.user[span[0]:span[1]] if span else ""

    @property
    def media(self) -> list[str]:
        """The media items sent before the text, as logged (data URLs shortened to the clip and size)."""
        if self.request is None:
            return []
        content = self.request.payload["messages"][-1]["content"]
        if not isinstance(content, list):
            return []
        media = [item for item in content if item.get("type") in ("video_url", "image_url")]
        return [str(item[item["type"]].get("url")) for item in media]


@dataclass
class LoadedRun:
    folder: Path
    record: dict[str, Any] | None  # run.json; None: unfinished
    views: list[InstanceView]
    torn_lines: int = 0  # lines of a partial log that could not be read (a killed run's last write)
    scores: dict[str, Any] | None = None  # scores.json
    partial_rerun: bool = False  # a finished run with partial files beside it: a re-run was stopped
    notes: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.record is not None


def resolve_run(project: Project, given: str) -> Path:
    """A run folder, a run id under build/runs/, or the start of exactly one run id there."""
    path = Path(given)
    if path.is_dir():
        return path
    runs = runs_dir(project)
    if (runs / given).is_dir():
        return runs / given
    matches = sorted(p for p in runs.glob(f"{given}*") if p.is_dir()) if runs.is_dir() and given else []
    if len(matches) == 1:
        return matches[0]
    known = sorted(p.name for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if matches:
        raise RescueError(f"{given!r} starts {len(matches)} runs ({', '.join(p.name for p in matches[:3])}…)",
                          "give more of the run id")
    raise RescueError(f"no run folder or run id {given!r} (under {runs})",
                      f"pass a run folder or one of: {', '.join(known[:5])}" if known else
                      "make one with `rescue run-model`")


def _lines(path: Path, model: type[M], *, partial: bool) -> tuple[list[M], int]:
    """The records of a JSONL log; a partial log's unreadable lines are counted, a final log's stop with an error."""
    items, torn = [], 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                items.append(model.model_validate_json(line))
            except ValidationError as exc:
                if not partial:
                    raise RescueError(f"{path} line {number} is not a log record ({exc.errors()[0]['msg']})",
                                      "run the same `rescue run-model` command again: it rewrites the log from "
                                      "the cache") from exc
                torn += 1
    return items, torn


def _json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _sample_scores(path: Path) -> dict[str, dict[str, Any]]:
    """sample_scores.jsonl by id ({} when the run was scored before it existed)."""
    scored: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return scored
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            item = json.loads(line) if line.strip() else None
        except ValueError as exc:
            raise RescueError(f"{path} line {number} is not JSON ({exc})",
                              f"score the run again: rescue evaluate --run {path.parent}") from exc
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            scored[item["id"]] = item
    return scored


def load_run(folder: Path) -> LoadedRun:
    record = _json(folder / RUN_RECORD)
    partial = not (folder / RUN_SAMPLES).is_file()
    samples_path, requests_path = ((folder / RUN_SAMPLES_PARTIAL, folder / RUN_REQUESTS_PARTIAL) if partial
                                   else (folder / RUN_SAMPLES, folder / RUN_REQUESTS))
    if not samples_path.is_file():
        what = "a finished run made before run logs were written" if record else "no run folder with a log"
        raise RescueError(f"{folder} has no {RUN_SAMPLES} ({what})",
                          "run the same `rescue run-model` command again: its answers come from the cache, and it "
                          "writes the log")
    samples, torn = _lines(samples_path, SampleLog, partial=partial)
    requests, torn_requests = (_lines(requests_path, RequestLog, partial=partial) if requests_path.is_file()
                               else ([], 0))
    by_request = {r.request: r for r in requests}
    scores = _json(folder / RUN_SCORES) if record else None
    scored = _sample_scores(folder / RUN_SAMPLE_SCORES) if scores is not None else {}
    views = [InstanceView(s, by_request.get(s.request) if s.request is not None else None, scored.get(s.id))
             for s in sorted(samples, key=lambda s: s.n)]
    loaded = LoadedRun(folder, None if partial else record, views, torn + torn_requests, scores,
                       partial_rerun=not partial and (folder / RUN_SAMPLES_PARTIAL).is_file())
    if partial:
        loaded.notes.append(f"unfinished run (no {RUN_RECORD}): {len(samples)} instance(s) logged so far; run the "
                            "same command again to finish it (answers already received come from the cache)")
    elif scores is None:
        loaded.notes.append("not scored: `rescue evaluate --run` scores it (right/wrong per instance)")
    elif not scored:
        loaded.notes.append(f"scored before per-instance scores were kept: `rescue evaluate --run {folder}` again")
    if loaded.partial_rerun:
        loaded.notes.append("a later re-run of this run was stopped before it finished (its partial log is beside "
                            "this one); shown: the finished run")
    if loaded.torn_lines:
        loaded.notes.append(f"{loaded.torn_lines} line(s) of the partial log could not be read (cut when the run "
                            "was stopped)")
    return loaded


def choose(views: Sequence[InstanceView], *, wrong: bool = False, unanswered: bool = False,
           ids: Sequence[str] = (), sample: str | None = None, scenario: str | None = None) -> list[InstanceView]:
    """The instances a filter asks for: `wrong` (scored wrong, or without an answer), `unanswered`, ids, sample."""
    chosen = list(views)
    if ids:
        wanted = set(ids)
        chosen = [v for v in chosen if v.sample.id in wanted]
    if sample:
        chosen = [v for v in chosen if v.sample.sample_id == sample]
    if scenario:
        chosen = [v for v in chosen if v.sample.scenario == scenario]
    if unanswered:
        chosen = [v for v in chosen if v.sample.parsed is None]
    if wrong:
        chosen = [v for v in chosen if v.outcome in ("wrong", "unanswered")]
    return chosen


def compact(value: Any) -> str:
    """A value on one line, for a table cell."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
