"""`rescue pull`: Label Studio exports -> an immutable snapshot -> validated `Annotation` records.

A pull stores each scenario project's full JSON export verbatim under
`build/annotations/<UTC time>/exports/<scenario>.json` (read-only files, in a folder that is never
reused), then parses it into one `Annotation` per row x annotator x field (`annotations.jsonl`);
`parsed_with.json` records the rows, participants and schemas the parse read (`parse.parse_inputs`).
Whatever cannot be read goes to `quarantine.jsonl` with task, annotator and reason; `summary.json`
counts everything. When one annotator saved a task more than once, the latest annotation counts.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from pydantic import Field

from pipeline.annotate.config import build_config
from pipeline.annotate.labelstudio import Client, Connection
from pipeline.annotate.parse import ExportParse, parse_export, parse_inputs
from pipeline.annotate.push import project_title, schema_path
from pipeline.annotate.server import connect
from pipeline.annotate.settings import AnnotateSettings
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Record, Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema, load_schema
from pipeline.settings import load_settings
from pipeline.store import TMP_MARK

ANNOTATIONS_FILE, QUARANTINE_FILE, SUMMARY_FILE, USERS_FILE, INPUTS_FILE = (
    "annotations.jsonl", "quarantine.jsonl", "summary.json", "users.json", "parsed_with.json")


class ScenarioPull(Record):
    scenario: Scenario
    export_file: str
    project_id: int | None = None
    tasks: int
    annotations: int = Field(description="annotations in the export, cancelled (skipped) ones included")
    cancelled: int
    superseded: int = Field(description="older annotations of a user on a task that user annotated again")
    superseded_detail: tuple[str, ...] = ()
    records: int
    quarantined: int
    annotators: tuple[str, ...]
    reanchored: int = Field(0, description="annotations of gone rows read as answers to the row they overlap most")
    reanchored_detail: tuple[str, ...] = ()
    unplaced: int = Field(0, description="annotations of gone rows no current row could take (quarantined)")


class PullSummary(Record):
    snapshot: str
    folder: str
    schema_version: str
    source: str = Field(description="the server URL, or where the exports were read from")
    scenarios: tuple[ScenarioPull, ...]
    error: str = ""
    timings: dict[str, float] = Field(default_factory=dict, description="seconds spent waiting for exports, "
                                                                        "parsing and writing")

    @property
    def records(self) -> int:
        return sum(s.records for s in self.scenarios)

    @property
    def quarantined(self) -> int:
        return sum(s.quarantined for s in self.scenarios)


def known_schemas(project: Project, current: AnnotationSchema) -> dict[str, AnnotationSchema]:
    """Every schema version in annotation_schemas/ (by id), so old exports stay readable."""
    found = {current.id: current}
    for path in sorted(project.schemas.glob("*.yaml")):
        try:
            schema = load_schema(path)
        except RescueError:
            continue  # not an annotation schema (e.g. task-construction settings)
        found.setdefault(schema.id, schema)
    return found


def _new_snapshot_dir(base: Path) -> tuple[str, Path]:
    """A fresh, never-used snapshot name (UTC time, sortable) and its temporary folder."""
    base.mkdir(parents=True, exist_ok=True)
    while True:
        name = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        if not (base / name).exists():
            tmp = base / f".{name}{TMP_MARK}{os.getpid()}"
            tmp.mkdir()
            return name, tmp
        time.sleep(0.2)


def _write_readonly(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("xb") as handle:  # never overwrite
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def snapshot_from_exports(project: Project, exports: Mapping[Scenario, bytes] | Iterable[tuple[Scenario, bytes]],
                          users: Mapping[int, str], *,
                          schema: AnnotationSchema, source: str,
                          project_ids: Mapping[Scenario, int] | None = None) -> PullSummary:
    """Store each export verbatim in a new snapshot as it arrives, parse it, then write records and quarantine.

    `exports` may be lazy (pull downloads the next export while this parses the previous one). Every
    export is stored even when one cannot be parsed; that error is raised once all are stored.
    """
    base = project.build / "annotations"
    name, tmp = _new_snapshot_dir(base)
    final = base / name
    where = project.rel_or_abs(final)
    parsed: dict[Scenario, ExportParse] = {}
    error: RescueError | None = None
    timings = {"wait_for_exports_s": 0.0, "parse_s": 0.0}
    try:
        _write_readonly(tmp / USERS_FILE, json.dumps({str(k): v for k, v in sorted(users.items())}, indent=2,
                                                     ensure_ascii=False).encode("utf-8"))
        _write_readonly(tmp / INPUTS_FILE, json.dumps(parse_inputs(project), indent=1, sort_keys=True).encode())
        schemas = known_schemas(project, schema)
        waited = time.perf_counter()
        for scenario, data in (exports.items() if isinstance(exports, Mapping) else exports):
            timings["wait_for_exports_s"] += time.perf_counter() - waited
            _write_readonly(tmp / "exports" / f"{scenario}.json", data)
            started = time.perf_counter()
            if error is None:
                try:
                    parsed[scenario] = parse_export(project, data, users, scenario=scenario, schemas=schemas,
                                                    snapshot=name, where=f"{where}/exports/{scenario}.json")
                except RescueError as exc:
                    error = exc
            del data
            timings["parse_s"] += time.perf_counter() - started
            waited = time.perf_counter()
        scenarios = () if error else tuple(
            ScenarioPull(scenario=scenario, export_file=f"exports/{scenario}.json",
                         project_id=(project_ids or {}).get(scenario), tasks=result.tasks,
                         annotations=result.annotations, cancelled=result.cancelled, superseded=len(result.superseded),
                         superseded_detail=tuple(result.superseded), records=len(result.records),
                         quarantined=len(result.quarantine), annotators=result.annotators,
                         reanchored=len(result.reanchored), unplaced=result.unplaced,
                         reanchored_detail=tuple(f"task {r.task_id} ({r.annotator}): row {r.from_row} -> {r.row_id} "
                                                 f"(IoU {r.iou:.2f})" for r in result.reanchored))
            for scenario, result in parsed.items())
        if error is None:
            started = time.perf_counter()
            lines = sorted(pair for result in parsed.values() for pair in result.records)
            quarantine = [q for result in parsed.values() for q in result.quarantine]
            _write_readonly(tmp / ANNOTATIONS_FILE, "".join(line + "\n" for _, line in lines).encode())
            _write_readonly(tmp / QUARANTINE_FILE, "".join(q.model_dump_json() + "\n" for q in quarantine).encode())
            timings["write_s"] = time.perf_counter() - started
        summary = PullSummary(snapshot=name, folder=where, schema_version=schema.id, source=source,
                              scenarios=scenarios, error=str(error) if error else "",
                              timings={k: round(v, 2) for k, v in timings.items()})
        _write_readonly(tmp / SUMMARY_FILE, (summary.model_dump_json(indent=2) + "\n").encode())
        os.rename(tmp, final)  # refuses to replace an existing snapshot folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # only left when something failed before the rename
    if error is not None:
        raise RescueError(f"{error.message} (the export is kept in {summary.folder}/exports/)", error.fix)
    return summary


def _prefetched(client: Client, projects: list[tuple[Scenario, int]]) -> Iterator[tuple[Scenario, bytes]]:
    """Exports in order, each download starting as soon as the previous one arrived (parse overlaps it)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="export") as pool:
        futures = [(scenario, pool.submit(client.export_json, project_id)) for scenario, project_id in projects]
        try:
            for scenario, future in futures:
                yield scenario, future.result()
        finally:
            for _, future in futures:
                future.cancel()


def pull_annotations(project: Project, connection: Connection | None = None, *,
                     settings: AnnotateSettings | None = None, schema: AnnotationSchema | None = None,
                     scenarios: tuple[Scenario, ...] = SCENARIOS) -> PullSummary:
    """Export every scenario project of the schema version from the server and snapshot it."""
    settings = settings or load_settings(project.root).annotate
    schema = schema or load_schema(schema_path(project, settings))
    connection = connection or connect(project)
    client = Client(connection)
    client.whoami()
    found: list[tuple[int, Scenario, int]] = []
    for scenario in scenarios:
        build_config(schema, scenario)  # refuses a schema Label Studio cannot express, before exporting
        info = client.find_project(project_title(schema, scenario))
        if info is not None:
            found.append((info.task_number, scenario, info.id))
    if not found:
        titles = ", ".join(repr(project_title(schema, s)) for s in scenarios)
        raise RescueError(f"Label Studio at {connection.url} has no project {titles}",
                          "run `rescue push` first (or check LABEL_STUDIO_URL)")
    largest_first = [(scenario, project_id) for _, scenario, project_id in sorted(found, reverse=True)]
    return snapshot_from_exports(project, _prefetched(client, largest_first), client.users(), schema=schema,
                                 source=connection.url, project_ids={s: i for s, i in largest_first})
