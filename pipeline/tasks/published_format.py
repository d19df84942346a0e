"""The published ER/VP record (`er.jsonl` / `vp.jsonl`, spec section 4) rebuilt from a release's records.

A release splits one instance into a model-facing record (tasks/<task>.jsonl) and a gold record
(gold/<task>.jsonl); the published files hold both in one record with other key names. Where each published
key is held in the release:

- `instance_id` = the record's `id`; `sample_id`, `source_sample_id` = its `sample_id`; `task`, `scenario`
  and the current row's fields (`row_index` ... `interaction_behavior`, VP `participants`, `prior_context`)
  are the record's own keys;
- `couple`, `source_file` = the gold record's `meta`;
- `gold_internal_emotion`, `gold_intensity_score` (ER) / `gold_viewpoints` (VP) = the gold record's `gold`;
- `clip_path`, `clip_duration_sec` (the record and each context row): the published values are paths on the
  authors' machine and spans of their cut; a text-only release has no clips and a media release has its own
  (release-relative paths, its own cut), so they are `NOT_COMPARED`: the key must be there, its value is not
  compared. A media release's `video_attachments` / `video_attachment_index` are not published keys.

Keys come in the published order; a key of the release record the published format does not know stays in
the record (after the known ones), so a comparison reports it instead of hiding it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.errors import RescueError
from pipeline.tasks.modes import ATTACHMENTS, MEDIA_FIELDS
from pipeline.tasks.registry import TASK_SPECS

# the tasks the paper published a file of, and per task its gold keys -> the release's (pipeline/tasks/registry.py)
GOLD_KEYS = {name: task.published_gold for name, task in TASK_SPECS.items() if task.published_gold is not None}
PUBLISHED_TASKS = tuple(GOLD_KEYS)
CLIP_KEYS = ("clip_path", "clip_duration_sec")
CURRENT_ROW = ("row_index", "timestamp", "speaker", "participants", "target", "dialogue", "background_dialogue",
               "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior", "interaction_behavior")
CONTEXT_ROW = ("row_index", "timestamp", "primary_speaker", "target", "dialogue_cleaned", "background_dialogue",
               "tone_of_voice", "body_posture", "facial_expressions", "self_directed_behavior", "interaction_behavior",
               *CLIP_KEYS)
RELEASE_ONLY = {*MEDIA_FIELDS, ATTACHMENTS}  # a media release's own keys: never in a published record

Clips = Callable[[str, int], tuple[str, float]]  # (sample_id, row_index) -> (clip_path, clip_duration_sec)


class NotCompared:
    """Stands for a published value the release cannot rebuild: the key must be present, its value is free.
    Use the one instance, NOT_COMPARED (compared by identity)."""

    def __repr__(self) -> str:
        return "(not compared)"

    def __copy__(self) -> NotCompared:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> NotCompared:
        return self


NOT_COMPARED = NotCompared()


def _clip_values(clips: Clips | None, sample_id: str, row_index: int) -> dict[str, Any]:
    if clips is None:
        return dict.fromkeys(CLIP_KEYS, NOT_COMPARED)
    path, duration = clips(sample_id, row_index)
    return {"clip_path": path, "clip_duration_sec": duration}


def _context_row(row: dict[str, Any], sample_id: str, clips: Clips | None) -> dict[str, Any]:
    own = {k: v for k, v in row.items() if k not in RELEASE_ONLY}
    known = {k: own.pop(k) for k in CONTEXT_ROW if k in own}
    return {**known, **_clip_values(clips, sample_id, row.get("row_index", 0)), **own}


def published_record(task: str, record: dict[str, Any], gold: dict[str, Any], clips: Clips | None = None
                     ) -> dict[str, Any]:
    """One release instance (model-facing record + gold record) as the published file's record. Without
    `clips`, the clip keys hold NOT_COMPARED; with it (a writer of the published format), their values."""
    if task not in PUBLISHED_TASKS:
        raise RescueError(f"only ER and VP were published as task files, not {task!r}", "use --task er or --task vp")
    sample_id = record.get("sample_id")
    own = {k: v for k, v in record.items() if k not in RELEASE_ONLY and k not in {"id", "task", "sample_id",
                                                                                    "scenario", "prior_context"}}
    current = {k: own.pop(k) for k in CURRENT_ROW if k in own}
    meta = gold.get("meta", {})
    out: dict[str, Any] = {"sample_id": sample_id}
    if "couple" in meta:
        out["couple"] = meta["couple"]
    out.update(current)
    if "prior_context" in record:
        out["prior_context"] = [_context_row(row, str(sample_id), clips) for row in record["prior_context"]]
    out.update({theirs: gold["gold"][ours] for theirs, ours in GOLD_KEYS[task].items() if ours in gold["gold"]})
    out.update(_clip_values(clips, str(sample_id), record.get("row_index", 0)))
    out.update(task=record.get("task"), instance_id=record.get("id"), scenario=record.get("scenario"),
               source_sample_id=sample_id)
    if "source_file" in meta:
        out["source_file"] = meta["source_file"]
    return {**out, **own}


__all__ = ["CLIP_KEYS", "GOLD_KEYS", "NOT_COMPARED", "PUBLISHED_TASKS", "NotCompared", "published_record"]
