"""Run folders as `rescue run-model` leaves them, and a release whose instances carry media, for the scoring,
judge and leaderboard tests. Helpers only, no tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pipeline.tasks.jsonio import dumps
from pipeline.tasks.manifest import MANIFEST, MANIFEST_HASH, file_entry, manifest_bytes
from pipeline.tasks.runs import release_info


def make_run(folder: Path, release_dir: Path, task: str, predictions: list[dict], unanswered: list[dict],
             *, mode: str = "dialogue", model: str = "model-a", record: dict | None = None) -> Path:
    """A run folder as `rescue run-model` leaves it (only the run.json fields this part reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    (folder / "unanswered.jsonl").write_text("".join(json.dumps(u) + "\n" for u in unanswered))
    run = record if record is not None else {"task": task, "mode": mode, "model": model,
                                             "endpoint_host": "127.0.0.1:1", "prompt_version": "run-v1",
                                             "release": release_info(release_dir)}
    (folder / "run.json").write_text(json.dumps(run))
    return folder


def media_release(release_dir: Path, out: Path) -> Path:
    """A copy of the release whose couple SSP instances carry context clips and family ones none (the
    media branch builds real ones; here only the keys `in_mode` reads), with the manifest rehashed."""
    shutil.copytree(release_dir, out)
    path = out / "tasks/ssp.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["scenario"] == "couple":
            record["video_attachments"] = [f"media/{record['row_index']}.mp4"]
    data = "".join(dumps(r) + "\n" for r in records).encode()
    path.write_bytes(data)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest.pop(MANIFEST_HASH)
    manifest["files"] = [file_entry(e["path"], data) if e["path"] == "tasks/ssp.jsonl" else e
                         for e in manifest["files"]]
    (out / MANIFEST).write_bytes(manifest_bytes(manifest))
    return out
