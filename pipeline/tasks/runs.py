"""Scoring a model-run folder (build/runs/<run_id>/, made by `rescue run-model`) in place.

The folder holds predictions.jsonl, unanswered.jsonl ({"id", "reason"} per instance without a usable
answer) and run.json (task, mode, model, release {version, manifest_sha256, path}, ...). `score_run`
scores it against the release it was run on and writes scores.json and sample_scores.jsonl (per instance)
atomically next to them: both are derived, so re-scoring replaces them and nothing else in the folder is
touched. run.json keys other than the task are optional here: what is missing is reported, not guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.layout import RUN_PREDICTIONS, RUN_RECORD, RUN_SAMPLE_SCORES, RUN_SCORES, RUN_UNANSWERED
from pipeline.store import write_text_atomic
from pipeline.tasks.evaluate import evaluate
from pipeline.tasks.judge import JudgeOptions
from pipeline.tasks.manifest import MANIFEST, MANIFEST_HASH, read_manifest

SCORES_FORMAT = "rescue-scores/1"


@dataclass(frozen=True)
class ModelRun:
    folder: Path
    record: dict[str, Any]  # run.json
    unanswered: list[dict[str, Any]]  # {"id", "reason"}
    unreadable: list[dict[str, Any]]  # unanswered.jsonl lines that could not be read: {"line", "problem"}

    @property
    def release(self) -> dict[str, Any]:
        value = self.record.get("release")
        return value if isinstance(value, dict) else {}


def _read_unanswered(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if not path.is_file():
        return [], []
    listed, unreadable = [], []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            unreadable.append({"line": number, "problem": f"not JSON ({exc.msg})"})
            continue
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            unreadable.append({"line": number, "problem": "not an object with a string `id`"})
            continue
        reason = item.get("reason")
        listed.append({"id": item["id"], "reason": reason if isinstance(reason, str) and reason else "no reason given"})
    return listed, unreadable


def read_run(folder: Path) -> ModelRun:
    record_path = folder / RUN_RECORD
    if not folder.is_dir():
        raise RescueError(f"run folder {folder} does not exist", "pass a folder made by `rescue run-model` "
                          "(build/runs/<run_id>)")
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RescueError(f"{record_path} is missing: {folder} is not a finished model run",
                          "pass a folder made by `rescue run-model`, or score a predictions file with "
                          "`rescue evaluate --task T --predictions FILE`") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RescueError(f"{record_path} is not readable JSON ({exc})",
                          "re-run `rescue run-model` (its cached answers make that cheap)") from exc
    if not isinstance(record, dict):
        raise RescueError(f"{record_path} is not a JSON object", "re-run `rescue run-model`")
    unanswered, unreadable = _read_unanswered(folder / RUN_UNANSWERED)
    return ModelRun(folder, record, unanswered, unreadable)


def release_info(release: Path) -> dict[str, Any]:
    """{"version", "manifest_sha256", "path"} of a release folder, from its MANIFEST.json."""
    manifest = read_manifest(release)
    try:
        return {"version": manifest["release"], "manifest_sha256": manifest[MANIFEST_HASH], "path": str(release)}
    except KeyError as exc:
        raise RescueError(f"{release} is not a release folder with a readable {MANIFEST}",
                          "pass --release build/release/<version> (made by `rescue freeze`)") from exc


def release_hint(run: ModelRun, root: Path) -> Path | None:
    """The release folder run.json names, when it still exists (relative paths are the project root's)."""
    named = run.release.get("path")
    if not isinstance(named, str) or not named:
        return None
    path = Path(named) if Path(named).is_absolute() else root / named
    return path if (path / MANIFEST).is_file() else None


def _check_release(run: ModelRun, release: Path) -> tuple[dict[str, Any], str]:
    info = release_info(release)
    ran_on = run.release.get("manifest_sha256")
    if not ran_on:
        return info, f"{run.folder / RUN_RECORD} names no release manifest_sha256: not checked"
    if ran_on != info["manifest_sha256"]:
        raise RescueError(
            f"run {run.folder} was made on release {run.release.get('version', '?')} (manifest_sha256 "
            f"{str(ran_on)[:12]}…), but {release} is release {info['version']} (manifest_sha256 "
            f"{info['manifest_sha256'][:12]}…): its instances and gold may differ",
            f"score it against the release it was run on (--release {run.release.get('path', '<that release>')}), "
            "or run the model again on this release")
    return info, "same release as the run"


def _task(run: ModelRun, given: str | None) -> str:
    recorded = run.record.get("task")
    if given and recorded and given != recorded:
        raise RescueError(f"--task {given} but {run.folder / RUN_RECORD} says the run answers {recorded}",
                          f"leave out --task (the run's task is {recorded})")
    task = given or recorded
    if not isinstance(task, str) or not task:
        raise RescueError(f"{run.folder / RUN_RECORD} names no task", "pass --task, or re-run `rescue run-model`")
    return task


def _limit(run: ModelRun) -> int | None:
    """The N of a run made with `--limit N` (it answered the task file's first N instances), else None."""
    settings = run.record.get("settings")
    limit = settings.get("limit") if isinstance(settings, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def batching_of(record: dict[str, Any]) -> dict[str, Any]:
    """How a run grouped its instances, for scores.json: `leak-free`, `paper` (with the warning run.json
    carries) or `unaudited` (a run.json from before requests were audited: per-sample batches, which showed
    ITP/STP instances their answers)."""
    policy = record.get("batching")
    if policy not in ("leak-free", "paper"):
        return {"batching": "unaudited", "batching_note": "run.json records no request audit: made before "
                "`rescue run-model` kept answers out of requests; ITP/STP answers may have been visible"}
    if policy == "paper":
        warning = record.get("batching_warning")
        return {"batching": "paper", "batching_note": warning if isinstance(warning, str) and warning else
                "--batching paper: answers were visible to the model"}
    return {"batching": "leak-free"}


def score_run(run: ModelRun, release: Path, *, task: str | None = None, text_similarity: bool = True,
              judge: JudgeOptions | None = None) -> dict[str, Any]:
    """Score the run against `release` and write scores.json into its folder (atomically), with each instance's
    answer, gold and scores in sample_scores.jsonl (read by `rescue show-run`); returns what scores.json holds."""
    task = _task(run, task)
    info, release_check = _check_release(run, release)
    mode = run.record.get("mode") if isinstance(run.record.get("mode"), str) else None
    per_instance: list[dict[str, Any]] = []
    report = evaluate(release, task, run.folder / RUN_PREDICTIONS, text_similarity=text_similarity, judge=judge,
                      mode=mode, unanswered=run.unanswered, limit=_limit(run), per_instance=per_instance)
    report["unanswered"]["unreadable_lines"] = run.unreadable
    model = run.record.get("model")
    scores = {"format": SCORES_FORMAT, "run_id": run.folder.name, "task": task, "mode": mode or "unknown",
              "model": model if isinstance(model, str) and model else "unknown", "release": info,
              "release_check": release_check, **batching_of(run.record),
              **{k: v for k, v in report.items() if k not in {"task", "release", "mode"}}}
    write_text_atomic(run.folder / RUN_SAMPLE_SCORES, "".join(json.dumps(item, ensure_ascii=False, allow_nan=False)
                                                              + "\n" for item in per_instance))
    write_text_atomic(run.folder / RUN_SCORES, json.dumps(scores, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return scores
