"""A release frozen from the hand-made gold sessions, and its ER/VP records written as the published
er.jsonl / vp.jsonl are (keys, clip paths on the authors' machine, compact JSON), for compare-released."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.benchmark_format import BenchmarkSession
from pipeline.tasks.published_format import published_record
from pipeline.tasks.release import freeze_release
from pipeline.tasks.settings import TaskSettings
from tests.tasks_rows import alan_and_evelyn_rows, row, session
from tests.release_inputs import PROVENANCE, SCHEMA, family_session

AUTHORS = "/home/authors/rescue/manual_review_system/review_assets"
COMPACT = {"ensure_ascii": False, "separators": (",", ":")}


def gold_sessions() -> list[BenchmarkSession]:
    """The sample gold, with text outside ASCII in a row every ER/VP context shows (escaping matters)."""
    rows = alan_and_evelyn_rows()
    rows[4] = row(5, "Therapist", ["Evelyn"], "It’s fine — café at noon, “together”", support_strategy=rows[4][
        "support_strategy"], relation_cycle_state="attack_attack")
    return [session(rows), family_session()]


def freeze(out: Path) -> Path:
    freeze_release(gold_sessions(), TaskSettings(), PROVENANCE, out, schema=SCHEMA)
    return out


def release_records(release: Path, folder: str, task: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (release / folder / f"{task}.jsonl").read_text().splitlines()]


def authors_clip(sample_id: str, row_index: int) -> tuple[str, float]:
    """What the published records hold: the authors' absolute path and end - start (family: none)."""
    if sample_id.startswith("family_therapy/"):
        return "", 0.0
    times = next(r for r in gold_sessions()[0].rows if r.row_index == row_index)
    return f"{AUTHORS}/{sample_id}/clips/{row_index:03d}.mp4", times.end_time - times.start_time


def published(release: Path, task: str) -> list[dict[str, Any]]:
    """The release's records in the published format, clips as the authors' files give them."""
    return [published_record(task, record, gold, clips=authors_clip)
            for record, gold in zip(release_records(release, "tasks", task), release_records(release, "gold", task))]


def write(path: Path, records: list[dict[str, Any]], style: dict[str, Any] = COMPACT) -> Path:
    path.write_text("".join(json.dumps(r, **style) + "\n" for r in records), encoding="utf-8")
    return path
