"""Instances per request, and the request each batch becomes (spec section 4, "Model calls"; section 5).

Batches hold instances of one sample only, each batch in the release's order, `batch_size` at most: the model
sees one sample's context at a time and echoes the sample and each target's id. By default (`leak-free`) two
instances of which one would show the other its answer (the tasks' answer sites, pipeline/tasks/answer_sites.py)
never share a batch: each instance joins the first batch of its sample with room and no such batch-mate. Tasks
whose answers no context row carries so batch exactly as the paper's per-sample chunks (`paper`), which this
module still makes on request. The video mode sends one instance per request: each record's
`video_attachment_index` then points into exactly the videos of its request, as written in the release, with no
renumbering across a batch, and context clips that several instances share are never sent twice in one request
with two numbers.

Videos are `video_url` items before the text, in the record's `video_attachments` order (ER/VP: the context
clips, then the row's own; SSP: the context clips), as data URLs read from the release folder or, with a
media base URL, as `<base>/<clip_path>` for a server that fetches them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from pipeline.errors import RescueError
from pipeline.llm.content import ChatMessage, ContentItem, TextItem, VideoItem, data_url
from pipeline.llm.request import ChatRequest
from pipeline.runmodel.settings import LEAK_FREE, RunModelSettings
from pipeline.tasks.answer_sites import Exposure, exposure, shows
from pipeline.tasks.modes import VIDEO_MODE, prompt_record_for_mode, video_attachments
from pipeline.tasks.registry import task_spec

BATCH_KEYS = ("id", "task", "sample_id", "scenario")  # said once per batch, not per target


@dataclass(frozen=True)
class Batch:
    sample_id: str
    scenario: str
    records: tuple[dict[str, Any], ...]  # release records (tasks/<task>.jsonl), in file order

    @property
    def ids(self) -> list[str]:
        return [record["id"] for record in self.records]


def _chunks(group: list[dict[str, Any]], batch_size: int, task: str, mode: str) -> list[list[dict[str, Any]]]:
    """First fit, in release order: each record joins the first chunk that has room and holds no record that
    shows it its answer or whose answer it shows, else opens a new one. Without any such pair this is exactly
    the per-sample chunking (only the last chunk ever has room)."""
    chunks: list[tuple[list[dict[str, Any]], list[Exposure]]] = []
    site = task_spec(task).answer_site
    for record in group:
        seen = exposure(site, prompt_record_for_mode(record, mode))
        for members, exposures in chunks:
            if len(members) < batch_size and not any(shows(site, seen, other) or shows(site, other, seen)
                                                     for other in exposures):
                members.append(record)
                exposures.append(seen)
                break
        else:
            chunks.append(([record], [seen]))
    return [members for members, _ in chunks]


def make_batches(records: list[dict[str, Any]], batch_size: int, *, task: str, mode: str,
                 batching: str = LEAK_FREE) -> list[Batch]:
    """Per sample (in order of first appearance), chunks of at most `batch_size` records; `leak-free` also
    keeps apart records of which one shows the other's answer (in what `mode` shows), `paper` does not."""
    by_sample: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_sample.setdefault(record["sample_id"], []).append(record)
    batches = []
    for sample_id, group in by_sample.items():
        chunks = (_chunks(group, batch_size, task, mode) if batching == LEAK_FREE
                  else [group[start:start + batch_size] for start in range(0, len(group), batch_size)])
        batches += [Batch(sample_id, group[0]["scenario"], tuple(chunk)) for chunk in chunks]
    return batches


def target_record(task: str, record: dict[str, Any], mode: str) -> dict[str, Any]:
    """What the model sees of one instance: its id under the task's id key, then the mode's fields."""
    shown = prompt_record_for_mode(record, mode)
    return {task_spec(task).prompt.id_key: record["id"], **{k: v for k, v in shown.items() if k not in BATCH_KEYS}}


def user_text(task: str, batch: Batch, mode: str) -> str:
    document = {"sample_id": batch.sample_id, "scenario": batch.scenario,
                "targets": [target_record(task, record, mode) for record in batch.records]}
    head = f"Sample {batch.sample_id}: {len(batch.records)} target(s). Answer for each."
    return f"{head}\n\n{json.dumps(document, ensure_ascii=False)}"


def _clip_path(record: dict[str, Any], clip: Any) -> PurePosixPath:
    path = PurePosixPath(str(clip))
    if not clip or path.is_absolute() or ".." in path.parts:
        raise RescueError(f"instance {record.get('id')}: video attachment {clip!r} is not a path inside the release",
                          "re-freeze the release with media (`rescue freeze --media`); clip paths are relative "
                          "to the release folder")
    return path


def video_items(task: str, record: dict[str, Any], release: Path, settings: RunModelSettings) -> list[VideoItem]:
    fps = settings.video_fps if task_spec(task).video_fps else None
    items = []
    for clip in video_attachments(record):
        path = _clip_path(record, clip)
        if settings.media_base_url:
            url = f"{settings.media_base_url}/{quote(path.as_posix())}"
        elif (release / path).is_file():
            url = data_url(release / path)
        else:
            raise RescueError(f"instance {record.get('id')}: clip {path} is missing from the release {release}",
                              f"run `rescue verify {release}` and restore the release's media")
        items.append(VideoItem(url, fps))
    return items


def batch_request(task: str, mode: str, batch: Batch, system: str, release: Path,
                  settings: RunModelSettings) -> ChatRequest:
    content: list[ContentItem] = []
    if mode == VIDEO_MODE:
        for record in batch.records:
            content += video_items(task, record, release, settings)
    content.append(TextItem(user_text(task, batch, mode)))
    label = batch.ids[0] if len(batch.ids) == 1 else f"{batch.ids[0]} (+{len(batch.ids) - 1})"
    return ChatRequest((ChatMessage.text("system", system), ChatMessage("user", tuple(content))),
                       json_object=True, label=label)
