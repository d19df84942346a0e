"""Check rebuilt ER/VP instances against the published er.jsonl / vp.jsonl.

The published files mix inputs and gold in one record (`gold_internal_emotion`, `gold_viewpoints`);
instance ids are the same (`<sample_id>__row<k>`), so records pair up by id. Reported: instances only
in one file, and for paired ones every field that differs: the gold, which context rows are given, and
every other key of the published record down to each context row's cues (a key only one side has too).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.evaluate import load_task_files

GOLD_KEYS = {"er": ("gold_internal_emotion", "gold_intensity_score"), "vp": ("gold_viewpoints",)}
ABSENT = "(absent)"


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
    """The published gold in our gold layout; a key the published record lacks stays absent (never filled in)."""
    if task == "er":
        return {"internal_emotion": record.get("gold_internal_emotion", ABSENT),
                "intensity": record.get("gold_intensity_score", ABSENT)}
    return {"viewpoints": [{k: v[k] for k in ("source", "target", "viewpoint", "attitude") if k in v}
                           for v in record.get("gold_viewpoints", [])]}


def _differences(rebuilt: Any, published: Any, path: str, out: dict[str, Any]) -> None:
    """Every differing leaf, keyed by its path (`prior_context[2].tone_of_voice`); absent keys included."""
    if isinstance(rebuilt, dict) and isinstance(published, dict):
        for key in dict.fromkeys([*rebuilt, *published]):
            _differences(rebuilt.get(key, ABSENT), published.get(key, ABSENT), f"{path}.{key}" if path else key, out)
    elif isinstance(rebuilt, list) and isinstance(published, list) and len(rebuilt) == len(published):
        for n, (mine, theirs) in enumerate(zip(rebuilt, published)):
            _differences(mine, theirs, f"{path}[{n}]", out)
    elif rebuilt != published or type(rebuilt) is not type(published):
        out[path] = {"rebuilt": rebuilt, "published": published}


def compare_record(task: str, mine: dict[str, Any], gold: dict[str, Any], published: dict[str, Any]
                   ) -> dict[str, Any]:
    """Every field of the published record against the rebuilt instance and its gold."""
    fields: dict[str, Any] = {}
    if gold["gold"] != _released_gold(task, published):
        fields["gold"] = {"rebuilt": gold["gold"], "published": _released_gold(task, published)}
    ours = {k: v for k, v in mine.items() if k != "id"}
    theirs = {k: v for k, v in published.items() if k not in {"instance_id", *GOLD_KEYS[task]}}
    mine_rows = [r.get("row_index") for r in ours.get("prior_context", [])]
    their_rows = [r.get("row_index") for r in theirs.get("prior_context", [])]
    if mine_rows != their_rows:  # other rows altogether: name the rows, not every field of them
        fields["prior_context_rows"] = {"rebuilt": mine_rows, "published": their_rows}
        ours.pop("prior_context", None)
        theirs.pop("prior_context", None)
    _differences(ours, theirs, "", fields)
    return fields


def compare_released(release: Path, task: str, released_path: Path) -> dict[str, Any]:
    if task not in {"er", "vp"}:
        raise RescueError(f"only ER and VP were published as task files, not {task!r}", "use --task er or --task vp")
    inputs, golds = load_task_files(release, task)
    ours = {r["id"]: (r, g) for r, g in zip(inputs, golds, strict=True)}
    theirs = _released(released_path, task)
    differences = []
    for instance_id in sorted(set(ours) & set(theirs)):
        mine, gold = ours[instance_id]
        fields = compare_record(task, mine, gold, theirs[instance_id])
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
