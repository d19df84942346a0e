"""Freeze a release: task files, gold, benchmark.jsonl, statistics, figures, dataset card, MANIFEST.json.

`freeze_release` renders every file from the gold sessions into a staging folder, then renames it into
place. Nothing in a file depends on the time or the machine (beyond the matplotlib, polars and pyarrow versions,
recorded), so the same inputs give byte-identical files. An existing release folder is never replaced with
different content unless `overwrite=True`, and even then it is kept under superseded/
(pipeline.tasks.supersede). Where the gold file was read from is not content: a release that differs only
in `provenance.gold_source` (same gold sha256) is the same release, and is kept as it is.
MANIFEST.json carries `manifest_sha256`, the hash of its own canonical content, so `rescue verify` also
catches an edit to the manifest's fields.

With `media` (a `ClipIndex`), the ER/VP/SSP records carry their clips (pipeline.tasks.modes) and the clips
are packed under media/ (pipeline.tasks.media), listed and hashed in the manifest like every other file.
Without it nothing about media is written: the files are exactly those of a text-only release.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from pydantic import Field

import pipeline
from pipeline.agreement.inputs import paused_gc
from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError, naming
from pipeline.records import Record
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import TMP_MARK, sha256_json
from pipeline.tasks import figures
from pipeline.tasks.build import TaskBuild, build_tasks
from pipeline.tasks.card import dataset_card
from pipeline.tasks.coverage import coverage_warnings, label_sources
from pipeline.tasks.croissant import FILE_NAME as CROISSANT_FILE
from pipeline.tasks.croissant import croissant_bytes
from pipeline.tasks.gold_input import GoldProblem, check_sessions, raise_for_errors
from pipeline.tasks.instances import TASKS
from pipeline.tasks.jsonio import context_lines, dumps, pretty_bytes
from pipeline.tasks.manifest import MANIFEST, MANIFEST_HASH, file_entry, manifest_bytes
from pipeline.tasks.media import MEDIA_FOLDER, ClipIndex, MediaRecords, pack_clips
from pipeline.tasks.parquet_files import parquet_bytes, parquet_columns, polars_version, pyarrow_version
from pipeline.tasks.registry import TASK_SPECS, VIDEO_TASKS
from pipeline.tasks.release_card import CardSettings, check_public
from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, TaskSettings, schema_path
from pipeline.tasks.stats import (
    SCENARIOS,
    instances_csv,
    instances_markdown,
    statistics,
    table3_csv,
    table3_markdown,
)
from pipeline.tasks.shrink import SHRINK_FIX, ReleaseWouldShrink, Shrink, release_contents, shrink_of
from pipeline.tasks.supersede import install_release
from pipeline.tasks.verify import verify_release

FORMAT = "rescue-release-1"
VERSION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DEFAULT_LICENSE = "other"   # the rebuilt data carries the source videos' licence, which the project does not own
LICENSE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class ModelVersion(Record):
    role: str = Field(description="what the model did, e.g. 'asr', 'diarization', 'speaker embedding'")
    name: str
    version: str


class ReleaseProvenance(Record):
    """Where the gold came from; the caller (the build) knows it, freeze only records it."""

    code_version: str = pipeline.__version__
    annotation_snapshots: tuple[str, ...] = ()
    models: tuple[ModelVersion, ...] = ()
    gold_source: str = Field("", description="e.g. build/gold/benchmark.jsonl or a published benchmark file")
    gold_sha256: str = ""


def gold_source_label(project_root: Path, gold: Path) -> str:
    """The gold file as the manifest names it, the same however the path was typed: relative to the project
    root when inside it, else the file name only (an absolute path would tie the manifest to one machine)."""
    resolved = gold.resolve()
    try:
        return resolved.relative_to(project_root.resolve()).as_posix()
    except ValueError:
        return resolved.name


class ReleaseSummary(Record):
    version: str
    path: str
    unchanged: bool = Field(description="the folder already held exactly these files")
    superseded: str | None = Field(None, description="where the release this one replaced was moved")
    instances: dict[str, dict[str, int]]
    dropped: dict[str, dict[str, int]]
    files: int
    warnings: tuple[str, ...] = ()
    label_sources: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="sample -> {RPP label field: instances it supplied} (per row)")
    coverage_warnings: tuple[str, ...] = Field((), description="one per sample and task without an instance")
    clips_linked: int = Field(0, description="media clips hard-linked from the build (no bytes copied)")
    clips_copied: int = Field(0, description="media clips copied (the file system could not link them)")
    shrunk: Shrink | None = Field(None, description="what the replaced release held that this one lacks "
                                                    "(only with allow_shrink)")

    @property
    def media_note(self) -> str:
        clips = self.clips_linked + self.clips_copied
        return f"media: {clips} clip(s) under media/, {self.clips_linked} hard-linked, {self.clips_copied} copied"


class ReleaseWriter:
    """Writes release files under a folder, hashing and counting rows (a JSONL file is held whole once: its Parquet
    twin is read from its text). A JSONL file is written, hashed and given its Parquet twin in a background thread,
    one file at a time, while the main thread builds the next file's text: hashing, writing and Arrow run
    outside Python's lock, so that work leaves the critical path where a core is free. Call `close()` when done
    (it waits for the last file)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries: dict[str, dict[str, Any]] = {}
        self.json_columns: dict[str, list[str]] = {}
        self.columns: dict[str, list[tuple[str, str]]] = {}  # per Parquet file: (column, polars type name)
        self._converter = ThreadPoolExecutor(1, thread_name_prefix="release-writer")
        self._pending: Future | None = None  # the JSONL file and Parquet twin being written

    def jsonl_and_parquet(self, path: str, lines: Iterable[str], records: Sequence[dict[str, Any]]) -> None:
        """`path`.jsonl and its Parquet twin, the Parquet file read from the same JSONL text."""
        text = "".join(lines).encode("utf-8")
        self._finish_pending()  # one file in flight: memory holds at most two files' text
        self._pending = self._converter.submit(self._pair, path, text, records)

    def _pair(self, path: str, text: bytes, records: Sequence[dict[str, Any]]) -> None:
        """In the background thread: the JSONL file, then its twin. Only this thread writes files meanwhile: the
        main thread writes others only after `close()`."""
        self.bytes(path, text)
        self.parquet(path.removesuffix(".jsonl") + ".parquet", records, text)

    def bytes(self, path: str, data: bytes, rows: int | None = None) -> None:
        """A file written whole; `rows` for formats whose rows are not lines (Parquet)."""
        target = self.folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with naming(target):
            target.write_bytes(data)
        entry = file_entry(path, data)
        self.entries[path] = entry if rows is None else {**entry, "rows": rows}

    def parquet(self, path: str, records: Sequence[dict[str, Any]], jsonl: bytes | None = None) -> None:
        """The records as Parquet; remembers the columns that had to be stored as JSON text."""
        data, json_columns = parquet_bytes(records, path, jsonl)
        self.bytes(path, data, rows=len(records))
        self.columns[path] = parquet_columns(data)
        if json_columns:
            self.json_columns[path] = json_columns

    def _finish_pending(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()  # its error (a full disk, a record Parquet cannot hold) is raised here

    def close(self) -> None:
        """Wait for the file still being written; stop the background thread."""
        try:
            self._finish_pending()
        finally:
            self._pending = None
            self._converter.shutdown(wait=True, cancel_futures=True)

    def manifest_files(self) -> list[dict[str, Any]]:
        return [self.entries[path] for path in sorted(self.entries)]


def write_files(writer: ReleaseWriter, build: TaskBuild, sessions: Sequence[BenchmarkSession],
                drawing: figures.Drawing, media: MediaRecords | None = None) -> dict[str, Any]:
    """Every data file of the release (all but README.md, MANIFEST.json and the clips); returns the statistics.
    `drawing`: the figures' process (`figures.rendering`), which draws while the data files are written. With
    `media`, the video tasks' records carry their clips (and `media.needed` lists them)."""
    stats = statistics(build)
    drawing.draw(figure_jobs(stats))
    with _closing(writer):
        ordered = sorted(sessions, key=lambda s: s.sample_id)
        benchmark = [s.model_dump(mode="json", exclude_unset=True) for s in ordered]
        writer.jsonl_and_parquet("benchmark.jsonl", (dumps(record) + "\n" for record in benchmark), benchmark)
        for task in TASKS:
            facing = [i.model_facing() for i in build.instances[task]]
            if media is not None:
                facing = media.records(task, facing)
            gold = [i.gold_record() for i in build.instances[task]]
            writer.jsonl_and_parquet(f"tasks/{task}.jsonl", context_lines(facing), facing)
            writer.jsonl_and_parquet(f"gold/{task}.jsonl", (dumps(record) + "\n" for record in gold), gold)
        writer.close()  # the last data file is written before any other
        writer.bytes("stats/table3.md", table3_markdown(stats["table3"]).encode())
        writer.bytes("stats/table3.csv", table3_csv(stats["table3"]).encode())
        writer.bytes("stats/instances.md", instances_markdown(stats["instances"]).encode())
        writer.bytes("stats/instances.csv", instances_csv(stats["instances"]).encode())
        writer.bytes("stats/statistics.json", pretty_bytes(stats))
        for path, data in drawing().items():
            writer.bytes(path, data)
    return stats


@contextmanager
def _closing(writer: ReleaseWriter) -> Iterator[None]:
    """The writer's background thread stops however the block ends (a failure leaves no thread running); the
    block's own error is the one raised."""
    try:
        yield
    except BaseException:
        with suppress(Exception):
            writer.close()
        raise
    writer.close()


def figure_jobs(stats: dict[str, Any]) -> list[tuple[str, str, tuple]]:
    jobs: list[tuple[str, str, tuple]] = []
    for scenario in SCENARIOS:
        t = stats["relation_transitions"][scenario]
        title = f"{scenario}: relation-pattern transitions (row-normalised, self-transitions excluded)"
        jobs.append((f"figures/relation_transitions_{scenario}.png", "transition",
                     (t["labels"], t["row_normalised"], t["counts"], title)))
    for task in TASKS:
        jobs.append((f"figures/labels_{task}.png", "distribution",
                     (f"{task.upper()} ({TASK_SPECS[task].title}): gold labels", stats["label_distributions"][task],
                      TASK_SPECS[task].distribution.axis)))
    return jobs


def _warning_kinds(warnings: Sequence[GoldProblem]) -> dict[str, int]:
    return dict(sorted(Counter(w.field.split("[")[0].split(".")[0] for w in warnings).items()))


def manifest_core(version: str, settings: TaskSettings, schema: AnnotationSchema, provenance: ReleaseProvenance,
                  sessions: Sequence[BenchmarkSession], warnings: Sequence[GoldProblem],
                  stats: dict[str, Any], build: TaskBuild, license: str = DEFAULT_LICENSE) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "release": version,
        "license": license,
        "code_version": provenance.code_version,
        "schema": {"id": schema.id, "sha256": sha256_json(schema.model_dump(mode="json"))},
        "task_settings": settings.as_json(),
        "provenance": provenance.model_dump(mode="json"),
        "tools": {"matplotlib": figures.matplotlib_version(), "polars": polars_version(),
                  "pyarrow": pyarrow_version()},
        "gold": {"sessions": len(sessions), "rows": sum(len(s.rows) for s in sessions),
                 "warnings": len(warnings), "warning_fields": _warning_kinds(warnings)},
        "instances": stats["instances"],
        "dropped": stats["dropped"],
        "coverage": {"rpp_label_rows": label_sources(build),
                     "samples_without_instances": {t: list(s) for t, s in build.without_instances.items()}},
    }


def media_core(clips: int) -> dict[str, Any]:
    """The manifest's `media` section (only in a release with media)."""
    return {"folder": f"{MEDIA_FOLDER}/", "clips": clips, "tasks": list(VIDEO_TASKS),
            "record_keys": "clip_path, clip_duration_sec, video_attachment_index (row records); "
                           "video_attachments (instances)"}


def write_release(folder: Path, gold_sessions: Sequence[BenchmarkSession], settings: TaskSettings,
                  provenance: ReleaseProvenance, version: str, schema: AnnotationSchema,
                  license: str = DEFAULT_LICENSE, media: ClipIndex | None = None, link_clips: bool = True,
                  card: CardSettings = CardSettings(),
                  ) -> tuple[bytes, TaskBuild, list[GoldProblem], int, tuple[int, int]]:
    """Write the whole release into `folder`; returns the manifest's bytes, the build, the warnings, the file
    count and (clips linked, clips copied)."""
    problems = check_sessions(gold_sessions, schema)
    raise_for_errors(problems, "gold sessions")
    warnings = [p for p in problems if p.severity == "warning"]
    # The figures' process starts first: it imports matplotlib while the instances are built. The cyclic
    # collector is paused: its passes over the instances and records (no cycles) cost ~0.3 s of the main thread.
    with figures.rendering() as drawing, paused_gc():
        build = build_tasks(gold_sessions, settings, schema)
        writer = ReleaseWriter(folder)
        records = MediaRecords(media) if media is not None else None
        stats = write_files(writer, build, gold_sessions, drawing, records)
    core = manifest_core(version, settings, schema, provenance, gold_sessions, warnings, stats, build, license)
    core["parquet_json_columns"] = dict(sorted(writer.json_columns.items()))
    packed = (0, 0)
    if records is not None:
        clips = pack_clips(folder, records.needed, link=link_clips)
        writer.entries.update({entry["path"]: entry for entry in clips.entries})
        core["media"] = media_core(len(clips.entries))
        packed = (clips.linked, clips.copied)
    # Croissant lists the data files' hashes; the card and the manifest come last (the manifest lists both)
    writer.bytes(CROISSANT_FILE, croissant_bytes(version, license, core, writer.entries, writer.columns, card))
    writer.bytes("README.md", dataset_card(version, stats, core, card).encode())
    manifest = manifest_bytes({**core, "files": writer.manifest_files()})
    with naming(folder / MANIFEST):
        (folder / MANIFEST).write_bytes(manifest)
    return manifest, build, warnings, len(writer.entries) + 1, packed


def _content(manifest: bytes) -> dict[str, Any] | None:
    """A manifest without what does not make a release different: its own hash and the gold file's path."""
    try:
        data = json.loads(manifest)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict):
        return None
    data.pop(MANIFEST_HASH, None)
    data["provenance"].pop("gold_source", None)
    return data


def _holds(folder: Path, manifest: bytes) -> bool:
    """`folder` is this release, intact: the same manifest, or one that differs only in the gold path."""
    path = folder / MANIFEST
    if not path.is_file():
        return False
    existing = path.read_bytes()
    same = existing == manifest or (_content(existing) is not None and _content(existing) == _content(manifest))
    return same and verify_release(folder).ok


def freeze_release(gold_sessions: Sequence[BenchmarkSession], settings: TaskSettings, provenance: ReleaseProvenance,
                   out_dir: Path, *, schema: AnnotationSchema | None = None, overwrite: bool = False,
                   license: str = DEFAULT_LICENSE, media: ClipIndex | None = None,
                   link_clips: bool = True, card: CardSettings = CardSettings(),
                   allow_shrink: bool = False) -> ReleaseSummary:
    """Build the six task files and the release folder `out_dir` (its name is the release version).

    Files are written into a temporary sibling folder, which takes the place of `out_dir` only when
    complete; an existing release with the same manifest (but for the gold file's path) and intact files is
    kept as it is (`unchanged`). `license` goes into the card's front matter and the manifest. `media`:
    every gold row's clip, for a release with media (`link_clips=False` copies instead of hard-linking).
    `card`: the citation, whether the release is public (then a citation and a specific licence are required)
    and the agreement figures, for the card and croissant.json.
    A different existing release is refused, or with `overwrite` moved to superseded/ (never deleted).
    A release that would hold fewer sessions or instances than the existing one is refused
    (`ReleaseWouldShrink`, saying what would be lost) unless `allow_shrink` (pipeline/tasks/shrink.py).
    """
    version = out_dir.name
    if not VERSION_PATTERN.match(version):
        raise RescueError(f"release folder name {version!r} is not a usable version",
                          "use letters, digits, '.', '_' or '-', e.g. build/release/v1")
    if not gold_sessions:
        raise RescueError("no gold sessions to freeze", "adjudicate annotations first, or pass a benchmark file")
    if not LICENSE_PATTERN.match(license):
        raise RescueError(f"licence {license!r} is not a licence identifier",
                          "use a Hugging Face licence id such as other, cc-by-nc-4.0 or cc-by-4.0")
    check_public(card, license, version)
    schema = schema or load_schema(schema_path(settings, DEFAULT_TASK_SETTINGS))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staged = out_dir.with_name(f".{version}{TMP_MARK}{uuid.uuid4().hex[:8]}")
    unchanged, superseded, shrunk = False, None, None
    try:
        staged.mkdir()
        manifest, build, warnings, count, (linked, copied) = write_release(
            staged, gold_sessions, settings, provenance, version, schema, license, media, link_clips, card)
        if out_dir.exists() and _holds(out_dir, manifest):
            unchanged = True
        elif out_dir.exists() and not overwrite:
            raise RescueError(f"release {out_dir} already exists with different content",
                              "freeze under a new version, or pass --force to replace it (the old one is kept "
                              "under superseded/)")
        elif out_dir.exists() and (shrunk := _shrink(out_dir, gold_sessions, build)) and not allow_shrink:
            raise ReleaseWouldShrink(shrunk, SHRINK_FIX)
        else:
            moved = install_release(staged, out_dir)
            superseded = str(moved) if moved else None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return ReleaseSummary(version=version, path=str(out_dir), unchanged=unchanged, superseded=superseded,
                          instances={t: statistics_counts(build, t) for t in TASKS},
                          dropped=build.dropped, files=count, warnings=tuple(str(w) for w in warnings),
                          label_sources=label_sources(build), coverage_warnings=coverage_warnings(build, settings),
                          clips_linked=linked, clips_copied=copied, shrunk=shrunk)


def _shrink(out_dir: Path, gold_sessions: Sequence[BenchmarkSession], build: TaskBuild) -> Shrink | None:
    """What the existing release `out_dir` holds that the new one would not."""
    before = release_contents(out_dir)
    if before is None:
        return None
    return shrink_of(before, [s.sample_id for s in gold_sessions], {t: len(build.instances[t]) for t in TASKS})


def statistics_counts(build: TaskBuild, task: str) -> dict[str, int]:
    items = build.instances[task]  # type: ignore[index]
    return {**{s: sum(1 for i in items if i.scenario == s) for s in SCENARIOS}, "all": len(items)}
