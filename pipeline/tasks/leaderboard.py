"""`rescue leaderboard`: every scored model run (build/runs/*/scores.json) side by side, one table per task.

Rows are runs, ordered by model, input mode (in the spec's order), release and run id; columns are the
paper's metrics per scope (overall, couple, family). ER/VP show the judge's scores for runs scored with a
judge and the offline text similarity for the others (the `scorer` column says which). A scores.json that
cannot be read, or whose fields the board shows have the wrong types (`ScoresFile`: text where text belongs,
finite numbers or nothing for the metrics), is named in a warning with the field and left out; runs scored
against different releases are marked by the release column and a warning.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from pipeline.errors import describe_validation
from pipeline.layout import RUN_RECORD, RUN_SCORES
from pipeline.tasks.instances import TASKS, TaskName
from pipeline.tasks.modes import MODES
from pipeline.tasks.registry import TASK_SPECS

SCOPES = ("overall", "couple", "family")
FIXED = ("run", "model", "mode", "release", "scorer")
COUNT = ("instances", "n")  # every scope's first column: the instances scored
# A run made with `--batching paper` (answers visible in batch-mates' contexts) has PAPER_MARK after its mode and
# a warning; an ITP/STP run made before requests were audited (scores.json `batching: unaudited`) a warning.
PAPER_MARK = " [paper batching]"


@dataclass(frozen=True)
class BoardTable:
    task: str
    columns: list[tuple[str, str]]  # (scope, metric column name) after the FIXED ones
    rows: list[list[Any]]  # FIXED values, then the metrics as stored (None where a run has no such value)

    @property
    def header(self) -> list[str]:
        return [*FIXED, *(f"{scope} {name}" for scope, name in self.columns)]


@dataclass
class Leaderboard:
    tables: list[BoardTable] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _ScoresPart(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", strict=True)


class ReleaseField(_ScoresPart):
    version: str = "?"
    manifest_sha256: str = ""


class ScoresFile(_ScoresPart):
    """What the leaderboard reads of a scores.json (other keys are kept, unread): each value it shows has the
    type `rescue evaluate` writes, so a hand-edited or damaged file is named, never shown as `{'x': 1}`."""

    task: TaskName
    run_id: str | None = None
    model: str = ""
    mode: str = ""
    release: ReleaseField | None = None
    text_scorer: str = ""
    limit: int | None = None
    scores: dict[str, dict[str, Any]]

    @model_validator(mode="after")
    def _metrics_are_numbers(self) -> ScoresFile:
        if "overall" not in self.scores:
            raise ValueError("scores has no 'overall' scope")
        for scope in SCOPES:
            for key, _ in (COUNT, *TASK_SPECS[self.task].board):
                value = self.scores.get(scope, {}).get(key)
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if value is not None and not (number and math.isfinite(value)):
                    raise ValueError(f"scores.{scope}.{key} is {str(value)[:40]!r}, not a finite number")
        return self


def _read_scores(folder: Path, warnings: list[str]) -> dict[str, Any] | None:
    path = folder / RUN_SCORES
    if not path.is_file():
        if (folder / RUN_RECORD).is_file():
            warnings.append(f"{folder} is not scored yet: run `rescue evaluate --run {folder}`")
        return None
    try:
        scores = json.loads(path.read_text(encoding="utf-8"))
        ScoresFile.model_validate(scores)
        return scores
    except (ValueError, UnicodeDecodeError) as exc:  # pydantic's ValidationError is a ValueError
        why = describe_validation(exc) if isinstance(exc, ValidationError) else f"{type(exc).__name__}: {exc}"
        warnings.append(f"{path} is damaged ({why}); left out: re-score it with `rescue evaluate --run {folder}`")
        return None


def _release(scores: dict[str, Any]) -> str:
    release = scores.get("release") if isinstance(scores.get("release"), dict) else {}
    digest = str(release.get("manifest_sha256") or "")[:8]
    return f"{release.get('version', '?')}" + (f"@{digest}" if digest else "")


def _scorer(scores: dict[str, Any]) -> str:
    return str(scores.get("text_scorer", "")) if TASK_SPECS[scores["task"]].scoring.text else ""


def _sort_key(scores: dict[str, Any]) -> tuple[Any, ...]:
    mode = scores.get("mode", "")
    return (str(scores.get("model", "")), MODES.index(mode) if mode in MODES else len(MODES), str(mode),
            _release(scores), str(scores.get("run_id", "")))


def _table(task: str, runs: list[dict[str, Any]]) -> BoardTable:
    scopes = [s for s in SCOPES if any(s in r["scores"] for r in runs)]
    columns = [(scope, key, name) for scope in scopes for key, name in (COUNT, *TASK_SPECS[task].board)
               if any(r["scores"].get(scope, {}).get(key) is not None for r in runs)]
    rows = []
    for r in sorted(runs, key=_sort_key):
        mode = str(r.get("mode", "")) + (PAPER_MARK if r.get("batching") == "paper" else "")
        fixed = [r.get("run_id", ""), r.get("model", ""), mode, _release(r), _scorer(r)]
        rows.append([*fixed, *(r["scores"].get(scope, {}).get(key) for scope, key, _ in columns)])
    return BoardTable(task, [(scope, name) for scope, _, name in columns], rows)


def _batching_warnings(task: str, runs: list[dict[str, Any]]) -> list[str]:
    paper = sorted(str(r.get("run_id")) for r in runs if r.get("batching") == "paper")
    old = sorted(str(r.get("run_id")) for r in runs if r.get("batching") not in ("paper", "leak-free"))
    warnings = []
    if paper:
        warnings.append(f"{task.upper()}: {', '.join(paper)} used --batching paper (mode marked "
                        f"{PAPER_MARK.strip()}): the model could see instances' answers in batch-mates' contexts; "
                        "not comparable with leak-free runs")
    if old and TASK_SPECS[task].old_batches_leaked:
        warnings.append(f"{task.upper()}: {', '.join(old)} made before requests were audited (per-sample batches "
                        "that showed answers): re-run them with `rescue run-model` to compare")
    return warnings


def read_leaderboard(runs_dir: Path) -> Leaderboard:
    board = Leaderboard()
    by_task: dict[str, list[dict[str, Any]]] = {}
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    for folder in folders:
        scores = _read_scores(folder, board.warnings)
        if scores is not None:
            scores.setdefault("run_id", folder.name)
            by_task.setdefault(scores["task"], []).append(scores)
    for task in TASKS:
        if task not in by_task:
            continue
        board.tables.append(_table(task, by_task[task]))
        partial = sorted(str(r.get("run_id")) for r in by_task[task] if r.get("limit"))
        if partial:
            board.warnings.append(f"{task.upper()}: {', '.join(partial)} answered only the first instances "
                                  "(--limit): its n is smaller; compare it only with runs of the same n")
        board.warnings += _batching_warnings(task, by_task[task])
        releases = sorted({_release(r) for r in by_task[task]})
        if len(releases) > 1:
            board.warnings.append(f"{task.upper()}: runs scored against {len(releases)} releases "
                                  f"({', '.join(releases)}): compare rows of the same release only")
    return board


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def scope_view(table: BoardTable, scope: str) -> tuple[list[str], list[list[str]]]:
    """One scope's columns of a task table, for a narrow terminal: model, mode, release, [scorer], n, metrics, run."""
    wanted = [n for n, (s, _) in enumerate(table.columns) if s == scope]
    keep = [1, 2, 3] + ([4] if TASK_SPECS[table.task].scoring.text else [])
    header = [FIXED[k] for k in keep] + [table.columns[n][1] for n in wanted] + ["run"]
    rows = [[cell(row[k]) for k in keep] + [cell(row[len(FIXED) + n]) for n in wanted] + [cell(row[0])]
            for row in table.rows]
    return header, rows


def to_markdown(board: Leaderboard) -> str:
    parts = []
    for table in board.tables:
        lines = [f"## {table.task.upper()}", "", "| " + " | ".join(table.header) + " |",
                 "|" + "|".join("---" if n < len(FIXED) else "---:" for n in range(len(table.header))) + "|"]
        lines += ["| " + " | ".join(cell(v).replace("|", "\\|") for v in row) + " |" for row in table.rows]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def to_csv(board: Leaderboard) -> str:
    """One CSV for every task in long form: one line per run, scope and metric (numbers as stored); a
    metric a run has no value for is left out."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["task", *FIXED, "scope", "metric", "value"])
    for table in board.tables:
        for row in table.rows:
            fixed, values = row[:len(FIXED)], row[len(FIXED):]
            for (scope, name), value in zip(table.columns, values):
                if value is not None:
                    writer.writerow([table.task, *fixed, scope, name, value])
    return out.getvalue()
