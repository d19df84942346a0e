"""Releases the run-model tests change by hand: clips added as modes.py documents them, an ITP record whose own
context shows its answer. Shared by test_run_model*, test_run_log (helpers, not tests)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pipeline.tasks.manifest import MANIFEST, file_entry
from tests.stand_in_model import records


def answer_rows(folder: Path, task: str) -> dict[str, int]:
    """Each instance's answer row, from the gold file: ITP the row after the decision row, STP its own row."""
    return {g["id"]: g["meta"]["next_row_index"] if task == "itp" else g["row_index"]
            for g in records(folder, task, "gold")}


def flip(value: str) -> str:
    return "no" if value == "yes" else "yes"


def clip_of(sample_id: str, row: int) -> str:
    return f"media/{sample_id}/row{row:03d}.mp4"


def with_media(release: Path, out: Path, tasks: tuple[str, ...] = ("er", "ssp"), no_clips: str = "family") -> Path:
    """A copy of the release whose ER/SSP records carry clips as modes.py documents them (the media branch
    writes these; here they are added by hand, with small files standing in for the clips' bytes, which
    nothing here decodes) and whose manifest lists the changed task files. Rows of the `no_clips` scenario
    get none (as the paper's family samples), so their SSP instances have no context clip."""
    shutil.copytree(release, out)
    manifest = json.loads((out / MANIFEST).read_text())
    for task in tasks:
        changed = []
        for record in records(out, task):
            attachments = []
            for row in record["prior_context"]:
                if record["scenario"] == no_clips:
                    continue
                row["clip_path"] = clip_of(record["sample_id"], row["row_index"])
                row["clip_duration_sec"] = 4.5
                attachments.append(row["clip_path"])
                row["video_attachment_index"] = len(attachments)
            if task in ("er", "vp") and record["scenario"] != no_clips:
                record["clip_path"] = clip_of(record["sample_id"], record["row_index"])
                attachments.append(record["clip_path"])
                record["video_attachment_index"] = len(attachments)
            if attachments:
                record["video_attachments"] = attachments
            changed.append(record)
            for clip in attachments:
                (out / clip).parent.mkdir(parents=True, exist_ok=True)
                (out / clip).write_bytes(f"clip {clip}".encode())
        data = "".join(json.dumps(r) + "\n" for r in changed).encode()
        (out / f"tasks/{task}.jsonl").write_bytes(data)
        manifest["files"] = [file_entry(e["path"], data) if e["path"] == f"tasks/{task}.jsonl" else e
                             for e in manifest["files"]]
    (out / MANIFEST).write_text(json.dumps(manifest))
    return out


def leaking_pair(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(owner, seer, the row): two ITP records of one sample where the seer's context shows the owner's answer row."""
    rows, itp = answer_rows(folder, "itp"), records(folder, "itp")
    return next((owner, seer, row) for owner in itp for seer in itp if seer["sample_id"] == owner["sample_id"]
                for row in seer["prior_context"] if row["row_index"] == rows[owner["id"]])


def self_leaking_release(folder: Path, out: Path) -> str:
    """A copy of the release where one ITP record's own context holds its answer row; returns its id."""
    owner, _, row = leaking_pair(folder)
    shutil.copytree(folder, out)
    changed = [r | {"prior_context": [*r["prior_context"], row]} if r["id"] == owner["id"] else r
               for r in records(out, "itp")]
    data = "".join(json.dumps(r) + "\n" for r in changed).encode()
    (out / "tasks/itp.jsonl").write_bytes(data)
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["files"] = [file_entry(e["path"], data) if e["path"] == "tasks/itp.jsonl" else e
                         for e in manifest["files"]]
    (out / MANIFEST).write_text(json.dumps(manifest))
    return owner["id"]
