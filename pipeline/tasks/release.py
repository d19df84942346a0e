"""Freeze a release: task files, gold, benchmark.jsonl, statistics, figures, dataset card, MANIFEST.json.

`freeze_release` renders every file from the gold sessions into a staging folder, then renames it into
place. Nothing in a file depends on the time or the machine (beyond the matplotlib version, recorded), so
the same inputs give byte-identical files. An existing release folder is never replaced with different
content unless `overwrite=True`, and even then it is kept under superseded/ (pipeline.tasks.supersede).
MANIFEST.json carries `manifest_sha256`, the hash of its own canonical content, so `rescue verify` also
catches an edit to the manifest's fields.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field

import pipeline
from pipeline.benchmark_format import BenchmarkSession
from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.schema import AnnotationSchema, load_schema
from pipeline.store import TMP_MARK, sha256_json
from pipeline.tasks import figures
from pipeline.tasks.build import TaskBuild, build_tasks
from pipeline.tasks.card import dataset_card
from pipeline.tasks.coverage import coverage_warnings, label_sources
from pipeline.tasks.gold_input import GoldProblem, check_sessions, raise_for_errors
from pipeline.tasks.instances import TASK_TITLES, TASKS
from pipeline.tasks.jsonio import context_lines, dumps, pretty_bytes
from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, TaskSettings, schema_path
from pipeline.tasks.stats import (
    SCENARIOS,
    instances_csv,
    instances_markdown,
    statistics,
    table3_csv,
    table3_markdown,
)
from pipeline.tasks.supersede import install_release

MANIFEST = "MANIFEST.json"
MANIFEST_HASH = "manifest_sha256"
FORMAT = "rescue-release-1"
VERSION_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DISTRIBUTION_AXES = {"er": "gold intensity", "vp": "gold viewpoints per instance", "rpp": "relation label",
                     "itp": "should the therapist speak next?", "stp": "kind of support target",
                     "ssp": "support strategy"}


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


class ReleaseSummary(Record):
    version: str
    path: str
    unchanged: bool = Field(description="the folder already held exactly these files")
    superseded: str | None = Field(None, description="where the release this one replaced was moved")
    instances: dict[str, dict[str, int]]
    dropped: dict[str, dict[str, int]]
    files: int
    warnings: tuple[str, ...] = ()
    label_sources: dict[str, list[str]] = Field(default_factory=dict,
                                                description="RPP label field -> the samples it supplied")
    coverage_warnings: tuple[str, ...] = Field((), description="one per sample and task without an instance")


class ReleaseWriter:
    """Writes release files under a folder, hashing and counting rows as it goes (nothing is held whole)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.entries: dict[str, dict[str, Any]] = {}

    def lines(self, path: str, lines: Iterable[str]) -> None:
        """A text file written line by line; `rows` = lines for .jsonl, data lines for .csv."""
        target = self.folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        digest, size, count = hashlib.sha256(), 0, 0
        with target.open("wb") as handle:
            for line in lines:
                data = line.encode("utf-8")
                handle.write(data)
                digest.update(data)
                size += len(data)
                count += data.count(b"\n")
        self.entries[path] = {"path": path, "sha256": digest.hexdigest(), "bytes": size, "rows": _rows(path, count)}

    def bytes(self, path: str, data: bytes) -> None:
        target = self.folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.entries[path] = file_entry(path, data)

    def manifest_files(self) -> list[dict[str, Any]]:
        return [self.entries[path] for path in sorted(self.entries)]


def _rows(path: str, newlines: int) -> int | None:
    if path.endswith(".jsonl"):
        return newlines
    if path.endswith(".csv"):
        return max(0, newlines - 1)
    return None


def file_entry(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "rows": _rows(path, data.count(b"\n"))}


def write_files(writer: ReleaseWriter, build: TaskBuild, sessions: Sequence[BenchmarkSession]) -> dict[str, Any]:
    """Every data file of the release (all but README.md and MANIFEST.json); returns the statistics."""
    stats = statistics(build)
    ordered = sorted(sessions, key=lambda s: s.sample_id)
    writer.lines("benchmark.jsonl", (dumps(s.model_dump(mode="json", exclude_unset=True)) + "\n" for s in ordered))
    for task in TASKS:
        writer.lines(f"tasks/{task}.jsonl", context_lines(i.model_facing() for i in build.instances[task]))
        writer.lines(f"gold/{task}.jsonl", (dumps(i.gold_record()) + "\n" for i in build.instances[task]))
    writer.bytes("stats/table3.md", table3_markdown(stats["table3"]).encode())
    writer.bytes("stats/table3.csv", table3_csv(stats["table3"]).encode())
    writer.bytes("stats/instances.md", instances_markdown(stats["instances"]).encode())
    writer.bytes("stats/instances.csv", instances_csv(stats["instances"]).encode())
    writer.bytes("stats/statistics.json", pretty_bytes(stats))
    for path, data in figures.render_jobs(figure_jobs(stats)).items():
        writer.bytes(path, data)
    return stats


def figure_jobs(stats: dict[str, Any]) -> list[tuple[str, str, tuple]]:
    jobs: list[tuple[str, str, tuple]] = []
    for scenario in SCENARIOS:
        t = stats["relation_transitions"][scenario]
        title = f"{scenario}: relation-pattern transitions (row-normalised, self-transitions excluded)"
        jobs.append((f"figures/relation_transitions_{scenario}.png", "transition",
                     (t["labels"], t["row_normalised"], t["counts"], title)))
    for task in TASKS:
        jobs.append((f"figures/labels_{task}.png", "distribution",
                     (f"{task.upper()} ({TASK_TITLES[task]}): gold labels", stats["label_distributions"][task],
                      DISTRIBUTION_AXES[task])))
    return jobs


def _warning_kinds(warnings: Sequence[GoldProblem]) -> dict[str, int]:
    return dict(sorted(Counter(w.field.split("[")[0].split(".")[0] for w in warnings).items()))


def manifest_core(version: str, settings: TaskSettings, schema: AnnotationSchema, provenance: ReleaseProvenance,
                  sessions: Sequence[BenchmarkSession], warnings: Sequence[GoldProblem],
                  stats: dict[str, Any], build: TaskBuild) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "release": version,
        "code_version": provenance.code_version,
        "schema": {"id": schema.id, "sha256": sha256_json(schema.model_dump(mode="json"))},
        "task_settings": settings.as_json(),
        "provenance": provenance.model_dump(mode="json"),
        "tools": {"matplotlib": figures.matplotlib_version()},
        "gold": {"sessions": len(sessions), "rows": sum(len(s.rows) for s in sessions),
                 "warnings": len(warnings), "warning_fields": _warning_kinds(warnings)},
        "instances": stats["instances"],
        "dropped": stats["dropped"],
        "coverage": {"rpp_label_sources": label_sources(build),
                     "samples_without_instances": {t: list(s) for t, s in build.without_instances.items()}},
    }


def manifest_bytes(content: dict[str, Any]) -> bytes:
    """The manifest with `manifest_sha256`: the sha256 of its canonical content without that key."""
    return pretty_bytes({**content, MANIFEST_HASH: sha256_json(content)})


def write_release(folder: Path, gold_sessions: Sequence[BenchmarkSession], settings: TaskSettings,
                  provenance: ReleaseProvenance, version: str, schema: AnnotationSchema
                  ) -> tuple[bytes, TaskBuild, list[GoldProblem], int]:
    """Write the whole release into `folder`; returns the manifest's bytes, the build, the warnings, file count."""
    problems = check_sessions(gold_sessions, schema)
    raise_for_errors(problems, "gold sessions")
    warnings = [p for p in problems if p.severity == "warning"]
    build = build_tasks(gold_sessions, settings, schema)
    writer = ReleaseWriter(folder)
    stats = write_files(writer, build, gold_sessions)
    core = manifest_core(version, settings, schema, provenance, gold_sessions, warnings, stats, build)
    writer.bytes("README.md", dataset_card(version, stats, core).encode())
    manifest = manifest_bytes({**core, "files": writer.manifest_files()})
    (folder / MANIFEST).write_bytes(manifest)
    return manifest, build, warnings, len(writer.entries) + 1


def _holds(folder: Path, manifest: bytes) -> bool:
    from pipeline.tasks.verify import verify_release

    path = folder / MANIFEST
    return path.is_file() and path.read_bytes() == manifest and verify_release(folder).ok


def freeze_release(gold_sessions: Sequence[BenchmarkSession], settings: TaskSettings, provenance: ReleaseProvenance,
                   out_dir: Path, *, schema: AnnotationSchema | None = None, overwrite: bool = False) -> ReleaseSummary:
    """Build the six task files and the release folder `out_dir` (its name is the release version).

    Files are written into a temporary sibling folder, which takes the place of `out_dir` only when
    complete; an existing release with the same manifest and intact files is kept as it is (`unchanged`).
    A different existing release is refused, or with `overwrite` moved to superseded/ (never deleted).
    """
    version = out_dir.name
    if not VERSION_PATTERN.match(version):
        raise RescueError(f"release folder name {version!r} is not a usable version",
                          "use letters, digits, '.', '_' or '-', e.g. build/release/v1")
    if not gold_sessions:
        raise RescueError("no gold sessions to freeze", "adjudicate annotations first, or pass a benchmark file")
    schema = schema or load_schema(schema_path(settings, DEFAULT_TASK_SETTINGS))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staged = out_dir.with_name(f".{version}{TMP_MARK}{uuid.uuid4().hex[:8]}")
    unchanged, superseded = False, None
    try:
        staged.mkdir()
        manifest, build, warnings, count = write_release(staged, gold_sessions, settings, provenance, version, schema)
        if out_dir.exists() and _holds(out_dir, manifest):
            unchanged = True
        elif out_dir.exists() and not overwrite:
            raise RescueError(f"release {out_dir} already exists with different content",
                              "freeze under a new version, or pass --force to replace it (the old one is kept "
                              "under superseded/)")
        else:
            moved = install_release(staged, out_dir)
            superseded = str(moved) if moved else None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return ReleaseSummary(version=version, path=str(out_dir), unchanged=unchanged, superseded=superseded,
                          instances={t: statistics_counts(build, t) for t in TASKS},
                          dropped=build.dropped, files=count, warnings=tuple(str(w) for w in warnings),
                          label_sources=label_sources(build), coverage_warnings=coverage_warnings(build, settings))


def statistics_counts(build: TaskBuild, task: str) -> dict[str, int]:
    items = build.instances[task]  # type: ignore[index]
    return {**{s: sum(1 for i in items if i.scenario == s) for s in SCENARIOS}, "all": len(items)}
