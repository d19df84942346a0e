"""One model run: a release's task in one input mode -> build/runs/<run_id>/ (predictions, unanswered, run.json).

The run id names the task, mode and model plus a hash of everything that changes the answers (endpoint,
model, mode, prompt version, release manifest, batch size, batching policy, limit, answer length, media form),
so the same run lands in the same folder and a different one never overwrites it. Every request is audited
before it is sent (pipeline/runmodel/audit.py); run.json says what the audit checked and found. Answers are
cached by request hash (pipeline/llm): a run stopped by an error (endpoint down) writes no run files but keeps
its answers (and the partial log of those it got), and running it again sends only what is missing; a run
stopped by its budget is written with the rest `not_sent`, and running it again completes that folder. The three
files are each written atomically at the end, then the run's log (pipeline/runmodel/run_log.py: appended to
partial files as the answers arrive, so a killed run keeps what it did), run.json last: a folder with run.json is
a finished run. A scores.json that no longer matches the answers is removed, and a folder holding another run or
other files is never written.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline import __version__
from pipeline.errors import RescueError
from pipeline.layout import (RUN_PREDICTIONS, RUN_RECORD, RUN_REQUESTS, RUN_REQUESTS_PARTIAL, RUN_SAMPLE_SCORES,
                             RUN_SAMPLES, RUN_SAMPLES_PARTIAL, RUN_SCORES, RUN_UNANSWERED, run_dir)
from pipeline.llm.cache import AREA as CACHE_AREA
from pipeline.llm.client import ChatAnswer, ChatClient, ChatRunStats
from pipeline.llm.request import ChatRequest
from pipeline.llm.settings import host_of
from pipeline.project import Project
from pipeline.runmodel.answers import read_all
from pipeline.runmodel.audit import gate, paper_warning
from pipeline.runmodel.batches import Batch, batch_request, make_batches
from pipeline.runmodel.prompts import PROMPT_VERSION, system_prompt
from pipeline.runmodel.run_log import RunLog
from pipeline.runmodel.settings import PAPER, SECTION, RunModelSettings
from pipeline.schema import AnnotationSchema
from pipeline.store import sha256_json, write_text_atomic
from pipeline.tasks.instances import TASKS
from pipeline.tasks.manifest import MANIFEST_HASH, read_listed_jsonl, read_manifest
from pipeline.tasks.modes import VIDEO_MODE, in_mode, video_attachments
from pipeline.tasks.registry import check_mode


@dataclass(frozen=True)
class RunResult:
    folder: Path
    record: dict[str, Any]  # what run.json holds
    stats: ChatRunStats


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def task_records(release: Path, task: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The model-facing records of one task, checked against MANIFEST.json (the gold is never read), and the
    release's version and manifest hash for run.json."""
    if task not in TASKS:
        raise RescueError(f"unknown task {task!r}", f"use one of {', '.join(TASKS)}")
    manifest = read_manifest(release)
    records = read_listed_jsonl(release, manifest, f"tasks/{task}.jsonl")
    facts = {"path": str(release), "version": manifest.get("release"), "manifest_sha256": manifest.get(MANIFEST_HASH)}
    return records, facts


def _refuse_release_without_media(release: Path, task: str, records: list[dict[str, Any]]) -> None:
    if not any(video_attachments(record) for record in records):
        raise RescueError(f"release {release} has no video clips for {task.upper()} (its records carry no "
                          "`video_attachments`): the turn_video_audio mode needs a release frozen with media",
                          "freeze one with media (`rescue freeze --media`, or the build's media setting), or "
                          "choose a text mode: dialogue, audio, visual, audiovisual")


def run_model(project: Project, release: Path, task: str, mode: str, settings: RunModelSettings,
              schema: AnnotationSchema, *, limit: int | None = None, out: Path | None = None,
              environ: Mapping[str, str] | None = None, sleep: Callable[[float], None] = time.sleep) -> RunResult:
    mode = check_mode(task, mode)
    records, facts = task_records(release, task)
    if mode == VIDEO_MODE:
        _refuse_release_without_media(release, task, records)
    chosen = records[:limit] if limit else records
    taking = [record for record in chosen if in_mode(task, record, mode)]
    left_out = [record["id"] for record in chosen if not in_mode(task, record, mode)]
    client = ChatClient(settings, project.build / CACHE_AREA, section=SECTION, environ=environ, sleep=sleep,
                        headers=settings.extra_headers)  # the key is checked here, before any clip is read
    batch_size = 1 if mode == VIDEO_MODE else settings.batch_size
    config = {"task": task, "mode": mode, "model": settings.model, "endpoint": settings.endpoint,
              "prompt_version": PROMPT_VERSION, "release": facts["manifest_sha256"], "batch_size": batch_size,
              "batching": settings.batching, "limit": limit, "max_completion_tokens": settings.max_completion_tokens,
              "media_base_url": settings.media_base_url, "video_fps": settings.video_fps}
    run_id = f"{task}-{mode}-{_slug(settings.model)}-{sha256_json(config)[:10]}"
    folder = out or run_dir(project, run_id)
    _check_folder(folder, run_id)  # before anything is sent
    batches = make_batches(taking, batch_size, task=task, mode=mode, batching=settings.batching)
    systems = {scenario: system_prompt(schema, task, scenario, mode) for scenario in {b.scenario for b in batches}}

    def build(batch: Batch) -> ChatRequest:
        return batch_request(task, mode, batch, systems[batch.scenario], release, settings)

    gated, audit = gate(task, mode, batches, build, client.payload, settings.batching)  # as the client sends it
    log = RunLog(folder, task, mode, taking, gated.batches, gated.requests, client.payload, client.digest)
    try:
        outcomes, stats = client.complete_all(gated.requests, on_outcome=log.answered)
    finally:
        log.close_partial()  # a run stopped by an error keeps the partial log of what it did
    result = read_all(task, gated.batches, outcomes)
    result.unanswered += gated.refused

    media = "data URLs" if not settings.media_base_url else f"URLs on {host_of(settings.media_base_url)}"
    kinds = Counter(item["reason"].split(":", 1)[0] for item in result.unanswered)
    finished = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spent = [*_spent_before(folder, run_id), {"finished_utc": finished, "tokens": stats.tokens, "cost": stats.cost,
                                              "sent": stats.answers, "cached": stats.cache_hits}]
    costs = [entry["cost"] for entry in spent if isinstance(entry.get("cost"), (int, float))]
    record = {
        "run_id": run_id, "task": task, "mode": mode, "model": settings.model,
        "endpoint_host": settings.endpoint_host, "api_key_env": settings.api_key_env,
        "extra_headers": sorted(settings.extra_headers), "media": media if mode == VIDEO_MODE else None,
        "prompt_version": PROMPT_VERSION, "schema": schema.id, "release": facts,
        "batching": settings.batching, **({"batching_warning": paper_warning(audit)} if settings.batching == PAPER
                                          else {}),
        "request_audit": audit.record(),
        "settings": {"batch_size": batch_size, "batching": settings.batching, "concurrency": settings.concurrency,
                     "temperature": 0, "response_format": "json_object",
                     "max_completion_tokens": settings.max_completion_tokens,
                     "video_fps": settings.video_fps if mode == VIDEO_MODE else None, "limit": limit},
        "counts": {"instances": len(chosen), "in_mode": len(taking), "left_out_of_mode": len(left_out),
                   "requests": stats.requests, "sent": stats.answers, "cached": stats.cache_hits,
                   "retries": max(0, stats.tries - stats.answers), "not_sent": stats.not_sent,
                   "answered": len(result.predictions), "unanswered": len(result.unanswered),
                   "unanswered_by_reason": dict(sorted(kinds.items())), "unknown_ids_in_answers": result.unknown_ids,
                   "damaged_cache_entries": len(stats.damaged_cache)},
        "left_out_of_mode": left_out,
        # spent by this run's requests over every invocation: a cached re-run adds its own (zero), never replaces
        "tokens": sum(int(entry.get("tokens") or 0) for entry in spent), "cost": sum(costs) if costs else None,
        "spent": spent,
        "answer_tokens": sum(o.prompt_tokens + o.completion_tokens for o in outcomes if isinstance(o, ChatAnswer)),
        "code_version": __version__,
        "finished_utc": finished,
    }
    _write_run(folder, result.predictions, result.unanswered, record,
               write_log=lambda: log.finish(outcomes, gated.refused))
    return RunResult(folder, record, stats)


def _spent_before(folder: Path, run_id: str) -> list[dict[str, Any]]:
    """What earlier invocations of this run spent, from its run.json (one written before `spent` was recorded
    counts as one invocation with its `tokens` and `cost`); nothing for a new folder or another run's."""
    try:
        earlier = json.loads((folder / RUN_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(earlier, dict) or earlier.get("run_id") != run_id:
        return []
    if isinstance(earlier.get("spent"), list):
        return [entry for entry in earlier["spent"] if isinstance(entry, dict)]
    return [{"finished_utc": earlier.get("finished_utc"), "tokens": earlier.get("tokens") or 0,
             "cost": earlier.get("cost")}]


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records)


RUN_FILES = {RUN_PREDICTIONS, RUN_UNANSWERED, RUN_RECORD, RUN_SCORES, RUN_SAMPLE_SCORES, RUN_REQUESTS, RUN_SAMPLES,
             RUN_REQUESTS_PARTIAL, RUN_SAMPLES_PARTIAL}


def _check_folder(folder: Path, run_id: str) -> None:
    """Only this run's own folder is written: never another run's, never a folder holding other files."""
    if not folder.is_dir():
        return
    strangers = sorted(p.name for p in folder.iterdir() if p.name not in RUN_FILES and not p.name.startswith("."))
    if strangers:
        raise RescueError(f"{folder} holds files that are not a model run's ({', '.join(strangers[:3])})",
                          "pass --out a new or empty folder")
    try:
        other = json.loads((folder / RUN_RECORD).read_text(encoding="utf-8")).get("run_id")
    except FileNotFoundError:
        return  # an unfinished run (no run.json): this run completes it
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
        other = "an unreadable run.json"
    if other != run_id:
        raise RescueError(f"{folder} holds another run ({other}), not {run_id}",
                          "pass --out a new folder, or move that run away first")


def _text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _write_run(folder: Path, predictions: list[dict[str, Any]], unanswered: list[dict[str, str]],
               record: dict[str, Any], write_log: Callable[[], None] = lambda: None) -> None:
    _check_folder(folder, record["run_id"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RUN_RECORD).unlink(missing_ok=True)  # unfinished until run.json is back
    answers, missing = _jsonl(predictions), _jsonl(unanswered)
    if (_text_of(folder / RUN_PREDICTIONS), _text_of(folder / RUN_UNANSWERED)) != (answers, missing):
        (folder / RUN_SCORES).unlink(missing_ok=True)  # scored the earlier answers: `rescue evaluate --run` again
        (folder / RUN_SAMPLE_SCORES).unlink(missing_ok=True)
    write_text_atomic(folder / RUN_PREDICTIONS, answers)
    write_text_atomic(folder / RUN_UNANSWERED, missing)
    write_log()  # requests.jsonl and samples.jsonl, in order
    write_text_atomic(folder / RUN_RECORD, json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
