"""Check rebuilt ER/VP instances against the published er.jsonl / vp.jsonl.

The published files mix inputs and gold in one record (`gold_internal_emotion`, `gold_viewpoints`);
instance ids are the same (`<sample_id>__row<k>`), so records pair up by id. Reported: instances only
in one file, and for paired ones every differing gold value, context row list or current-row field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.evaluate import load_task_files

CURRENT_ROW_FIELDS = ("timestamp", "speaker", "target", "dialogue")


def _released(path: Path, task: str) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise RescueError(f"{path} not found", f"pass the published {task}.jsonl") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            records[record["instance_id"]] = record
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise RescueError(f"{path} line {number} is not a published {task} record ({exc})",
                              f"pass the published {task}.jsonl unchanged") from exc
    return records


def _released_gold(task: str, record: dict[str, Any]) -> dict[str, Any]:
    if task == "er":
        return {"internal_emotion": record.get("gold_internal_emotion"),
                "intensity": record.get("gold_intensity_score")}
    return {"viewpoints": [{k: v.get(k, "") for k in ("source", "target", "viewpoint", "attitude")}
                           for v in record.get("gold_viewpoints", [])]}


def compare_released(release: Path, task: str, released_path: Path) -> dict[str, Any]:
    if task not in {"er", "vp"}:
        raise RescueError(f"only ER and VP were published as task files, not {task!r}", "use --task er or --task vp")
    inputs, golds = load_task_files(release, task)
    ours = {r["id"]: (r, g) for r, g in zip(inputs, golds, strict=True)}
    theirs = _released(released_path, task)
    differences = []
    for instance_id in sorted(set(ours) & set(theirs)):
        mine, gold = ours[instance_id]
        published = theirs[instance_id]
        fields = {}
        if gold["gold"] != _released_gold(task, published):
            fields["gold"] = {"rebuilt": gold["gold"], "published": _released_gold(task, published)}
        mine_rows = [r["row_index"] for r in mine["prior_context"]]
        their_rows = [r.get("row_index") for r in published.get("prior_context", [])]
        if mine_rows != their_rows:
            fields["prior_context_rows"] = {"rebuilt": mine_rows, "published": their_rows}
        for name in CURRENT_ROW_FIELDS:
            if mine.get(name) != published.get(name):
                fields[name] = {"rebuilt": mine.get(name), "published": published.get(name)}
        if fields:
            differences.append({"id": instance_id, "fields": fields})
    matched = len(set(ours) & set(theirs))
    return {
        "task": task, "release": str(release), "published": str(released_path),
        "counts": {"rebuilt": len(ours), "published": len(theirs), "matched": matched,
                   "only_rebuilt": len(set(ours) - set(theirs)), "only_published": len(set(theirs) - set(ours)),
                   "matched_identical": matched - len(differences)},
        "only_rebuilt": sorted(set(ours) - set(theirs)),
        "only_published": sorted(set(theirs) - set(ours)),
        "differences": differences,
    }
