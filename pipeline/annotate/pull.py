"""`rescue pull`: Label Studio exports -> an immutable snapshot -> validated `Annotation` records.

A pull stores the full JSON export of every annotation project (one per scenario and annotator, see
`projects`) verbatim under `build/annotations/<UTC time>/exports/<scenario>/<annotator>.json` (read-only
files, in a folder that is never reused), then parses them into one `Annotation` per row x annotator x
field (`annotations.jsonl`); `parsed_with.json` records the rows, participants and schemas the parse read
(`parse.parse_inputs`). Whatever cannot be read goes to `quarantine.jsonl` with task, annotator and
reason, among it any annotation another account made in an annotator's own project (reported, never
merged); `summary.json` counts everything and records the sha256 of annotations.jsonl, which every
reader checks (pipeline.agreement.inputs.check_snapshot). When one annotator saved a row more than once, the latest
annotation counts.

Before trusting an export: an annotation another account created or changed is quarantined with who did
(`authorship`), answers of accounts not on the roster are quarantined and the accounts named (`roster`), and
what the previous snapshot held that the server no longer gives is kept (`carry_forward`, `kept.jsonl`).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import shutil
import stat
import time
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pydantic import Field

from pipeline import layout
from pipeline.annotate.carry_forward import KEPT_FILE, Carried, KeptAnswer, carry_forward, previous_snapshot
from pipeline.annotate.config import build_config
from pipeline.annotate.guards import Guards, guards_of
from pipeline.annotate.labelstudio import Client, Connection
from pipeline.annotate.merge import merge_latest
from pipeline.annotate.parse import ExportParse, parse_export, parse_inputs
from pipeline.annotate.projects import SHARED, annotation_projects, annotator_title
from pipeline.annotate.push import schema_path
from pipeline.annotate.roster import Stranger
from pipeline.annotate.server import connect
from pipeline.annotate.settings import AnnotateSettings
from pipeline.errors import RescueError, naming
from pipeline.project import Project
from pipeline.records import Record, Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema, load_schema
from pipeline.settings import load_settings
from pipeline.store import TMP_MARK

ANNOTATIONS_FILE, QUARANTINE_FILE, SUMMARY_FILE, USERS_FILE, INPUTS_FILE = (
    "annotations.jsonl", "quarantine.jsonl", "summary.json", "users.json", "parsed_with.json")


@dataclass(frozen=True)
class ExportKey:
    """Where an export came from: a scenario's project of one annotator, or (annotator None) a shared one."""

    scenario: Scenario
    annotator: str | None = None
    project_id: int | None = None

    @property
    def file(self) -> str:
        return f"exports/{self.scenario}/{self.annotator or SHARED}.json"


class ProjectPull(Record):
    scenario: Scenario
    annotator: str | None = Field(description="whose own project this is; None for a shared project")
    export_file: str
    project_id: int | None = None
    tasks: int
    annotations: int = Field(description="annotations in the export, cancelled (skipped) ones included")
    cancelled: int
    superseded: int = Field(description="older annotations of a user on a task that user annotated again")
    superseded_detail: tuple[str, ...] = ()
    foreign: int = Field(0, description="annotations another account made in this annotator's project (quarantined)")
    records: int
    quarantined: int
    annotators: tuple[str, ...]
    reanchored: int = Field(0, description="annotations of gone rows read as answers to the row they overlap most")
    reanchored_detail: tuple[str, ...] = ()
    unplaced: int = Field(0, description="annotations of gone rows no current row could take (quarantined)")
    disowned: int = Field(0, description="annotations another account created or changed (quarantined)")
    strangers: dict[str, int] = Field(default_factory=dict, description="accounts not on the roster -> their "
                                                                        "annotations here (quarantined)")


class PullSummary(Record):
    snapshot: str
    folder: str
    schema_version: str
    source: str = Field(description="the server URL, or where the exports were read from")
    projects: tuple[ProjectPull, ...]
    error: str = ""
    annotations_sha256: str = Field("", description="sha256 of annotations.jsonl as written; readers compare it "
                                                    "(empty in snapshots pulled before it was recorded)")
    timings: dict[str, float] = Field(default_factory=dict, description="seconds spent waiting for exports, "
                                                                        "parsing and writing")
    compared_with: str = Field("", description="the previous snapshot this pull compared its answers with")
    carried: int = Field(0, description="records in annotations.jsonl kept from earlier snapshots (kept.jsonl)")
    kept: tuple[KeptAnswer, ...] = Field((), description="answers kept because the server lost or changed them")
    accept_deleted: bool = Field(False, description="whether this pull was told to accept deletions")
    accepted_deleted: tuple[KeptAnswer, ...] = Field((), description="answers gone from the server that this pull "
                                                                     "let go (--accept-deleted)")
    strangers: tuple[Stranger, ...] = Field((), description="accounts of the server not on the roster")
    counted: tuple[str, ...] | None = Field(None, description="whose answers counted (the roster); None: everyone")
    unchanged: bool = Field(False, description="the parse equals snapshot `snapshot` (`same_as`): none was written")

    @property
    def records(self) -> int:
        return sum(p.records for p in self.projects)

    @property
    def quarantined(self) -> int:
        return sum(p.quarantined for p in self.projects)

    @property
    def annotations(self) -> int:
        return sum(p.annotations for p in self.projects)


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
    with naming(path), path.open("xb") as handle:  # never overwrite; a full disk names the file
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def snapshot_from_exports(project: Project,
                          exports: Mapping[ExportKey | Scenario, bytes] | Iterable[tuple[ExportKey | Scenario, bytes]],
                          users: Mapping[int, str], *, schema: AnnotationSchema, source: str,
                          guards: Guards | None = None, accept_deleted: bool = False,
                          same_as: Path | None = None) -> PullSummary:
    """Store each export verbatim in a new snapshot as it arrives, parse it, then write records and quarantine.

    `exports` may be lazy (pull downloads the next export while this parses the previous one); a plain
    scenario as key means a shared project. Every export is stored even when one cannot be parsed; that
    error is raised once all are stored. Where one annotator's answer to a row comes from two projects
    (their own and a shared one of older pushes), the latest save counts, as within one project.
    `guards` (who counts, whose changes are the pipeline's own): None counts every account (stored exports).
    `same_as` (a snapshot folder): when the parse gives exactly its records, quarantine, kept answers and accounts,
    no snapshot is written and the summary names that one (`unchanged`): new tasks without answers, or a push of
    other drafts, change the exports but not what the annotators said.
    """
    base = layout.annotations_dir(project)
    previous = previous_snapshot(base)
    trusted: Collection[int] = guards.trusted if guards else ()
    counted = frozenset(guards.counted) if guards else None
    name, tmp = _new_snapshot_dir(base)
    final = base / name
    where = project.rel_or_abs(final)
    parsed: dict[ExportKey, ExportParse] = {}
    error: RescueError | None = None
    annotations_sha256 = ""
    timings = {"wait_for_exports_s": 0.0, "parse_s": 0.0}
    try:
        _write_readonly(tmp / USERS_FILE, json.dumps({str(k): v for k, v in sorted(users.items())}, indent=2,
                                                     ensure_ascii=False).encode("utf-8"))
        _write_readonly(tmp / INPUTS_FILE, json.dumps(parse_inputs(project), indent=1, sort_keys=True).encode())
        schemas = known_schemas(project, schema)
        waited = time.perf_counter()
        for raw_key, data in (exports.items() if isinstance(exports, Mapping) else exports):
            key = raw_key if isinstance(raw_key, ExportKey) else ExportKey(raw_key)
            timings["wait_for_exports_s"] += time.perf_counter() - waited
            _write_readonly(tmp / key.file, data)
            started = time.perf_counter()
            if error is None:
                try:
                    parsed[key] = parse_export(project, data, users, scenario=key.scenario, schemas=schemas,
                                               snapshot=name, where=f"{where}/{key.file}", owner=key.annotator,
                                               trusted=trusted, counted=counted)
                except RescueError as exc:
                    error = exc
            del data
            timings["parse_s"] += time.perf_counter() - started
            waited = time.perf_counter()
        parts: tuple[ProjectPull, ...] = ()
        carried = Carried()
        if error is None:
            started = time.perf_counter()
            merged = merge_latest(parsed)
            parts = tuple(
                ProjectPull(scenario=key.scenario, annotator=key.annotator, export_file=key.file,
                            project_id=key.project_id, tasks=result.tasks, annotations=result.annotations,
                            cancelled=result.cancelled, superseded=len(result.superseded) + len(merged.detail[key]),
                            superseded_detail=tuple(result.superseded + merged.detail[key]),
                            foreign=result.foreign, records=merged.records[key], quarantined=len(result.quarantine),
                            annotators=result.annotators, reanchored=len(result.reanchored), unplaced=result.unplaced,
                            disowned=len(result.disowned) - result.foreign, strangers=result.strangers,
                            reanchored_detail=tuple(f"task {r.task_id} ({r.annotator}): row {r.from_row} -> "
                                                    f"{r.row_id} (IoU {r.iou:.2f})" for r in result.reanchored))
                for key, result in parsed.items())
            quarantine = [q for result in parsed.values() for q in result.quarantine]
            carried = _carried(previous, name, parsed, schema, accept_deleted)
            lines = heapq.merge(zip(merged.keys, merged.lines), carried.pairs, key=lambda pair: pair[0])
            records_data = "".join(line + "\n" for _, line in lines).encode()
            _write_readonly(tmp / ANNOTATIONS_FILE, records_data)
            annotations_sha256 = hashlib.sha256(records_data).hexdigest()
            del records_data
            _write_readonly(tmp / QUARANTINE_FILE, "".join(q.model_dump_json() + "\n" for q in quarantine).encode())
            _write_readonly(tmp / KEPT_FILE, "".join(k.model_dump_json() + "\n" for k in carried.kept).encode())
            timings["write_s"] = time.perf_counter() - started
        summary = PullSummary(snapshot=name, folder=where, schema_version=schema.id, source=source,
                              projects=parts, error=str(error) if error else "",
                              annotations_sha256=annotations_sha256,
                              timings={k: round(v, 2) for k, v in timings.items()}, compared_with=carried.previous,
                              carried=len(carried.pairs), kept=tuple(carried.kept), accept_deleted=accept_deleted,
                              accepted_deleted=tuple(carried.accepted),
                              strangers=guards.strangers if guards else (),
                              counted=guards.counted if guards else None)
        if error is None and same_as is not None and _same_content(tmp, name, same_as):
            return summary.model_copy(update={"snapshot": same_as.name, "folder": project.rel_or_abs(same_as),
                                              "unchanged": True})  # the staging folder goes in `finally`
        _write_readonly(tmp / SUMMARY_FILE, (summary.model_dump_json(indent=2) + "\n").encode())
        os.rename(tmp, final)  # refuses to replace an existing snapshot folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # only left when something failed before the rename
    if error is not None:
        raise RescueError(f"{error.message} (the export is kept in {summary.folder}/exports/)", error.fix)
    return summary


def _same_content(staged: Path, name: str, other: Path) -> bool:
    """The staged snapshot `name` holds what `other` holds: the same records, quarantine, kept answers and
    accounts, byte for byte once the snapshot's own name (every record carries it) is set aside; accounts only
    added since do not count (`_same_accounts`)."""
    for file in (ANNOTATIONS_FILE, QUARANTINE_FILE, KEPT_FILE):
        try:
            old = (other / file).read_bytes().replace(f'"snapshot":"{other.name}"'.encode(),
                                                      f'"snapshot":"{name}"'.encode())
        except OSError:
            return False
        if old != (staged / file).read_bytes():
            return False
    return _same_accounts(other / USERS_FILE, staged / USERS_FILE)


def _same_accounts(old_file: Path, new_file: Path) -> bool:
    """Every account of the old snapshot is on the server under the same email. An account added since (the
    adjudicator, made after the first pull) changes no record: had it answered, the quarantine would differ."""
    try:
        old, new = (json.loads(path.read_text(encoding="utf-8")) for path in (old_file, new_file))
    except (OSError, ValueError):
        return False
    return isinstance(old, dict) and isinstance(new, dict) and all(new.get(k) == v for k, v in old.items())


def _carried(previous: Path | None, name: str, parsed: Mapping[ExportKey, ExportParse], schema: AnnotationSchema,
             accept_deleted: bool) -> Carried:
    """What of the previous snapshot this one keeps (`carry_forward`)."""
    return carry_forward(
        previous, snapshot=name, present_pairs={pair for result in parsed.values() for pair in result.kept},
        present_ids={i for result in parsed.values() for i in result.present},
        disowned={i: why for result in parsed.values() for i, why in result.disowned.items()},
        projects_now={(key.scenario, key.annotator) for key in parsed if key.annotator is not None},
        field_order={f.name: i for i, f in enumerate(schema.fields)}, accept_deleted=accept_deleted)


def _prefetched(client: Client, keys: list[ExportKey]) -> Iterator[tuple[ExportKey, bytes]]:
    """Exports in order, each download starting as soon as the previous one arrived (parse overlaps it)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="export") as pool:
        futures = [(key, pool.submit(client.export_json, key.project_id)) for key in keys]
        try:
            for key, future in futures:
                yield key, future.result()
        finally:
            for _, future in futures:
                future.cancel()


def pull_annotations(project: Project, connection: Connection | None = None, *,
                     settings: AnnotateSettings | None = None, schema: AnnotationSchema | None = None,
                     scenarios: tuple[Scenario, ...] = SCENARIOS, accept_deleted: bool = False,
                     same_as: Path | None = None) -> PullSummary:
    """Export every annotation project of the schema version (every annotator's, and a shared one of older
    pushes if the server has it) and snapshot them together. `accept_deleted`: let go of the answers the server
    no longer has instead of keeping them from the previous snapshot (recorded in the snapshot). `same_as`: no
    new snapshot when the parse equals that one (`snapshot_from_exports`)."""
    loaded = load_settings(project.root)
    settings = settings or loaded.annotate
    schema = schema or load_schema(schema_path(project, settings))
    connection = connection or connect(project)
    client = Client(connection)
    client.whoami()
    for scenario in scenarios:
        build_config(schema, scenario)  # refuses a schema Label Studio cannot express, before exporting
    found = annotation_projects(client, schema, scenarios)
    if not found:
        titles = ", ".join(repr(annotator_title(schema, s, "<email>")) for s in scenarios)
        raise RescueError(f"Label Studio at {connection.url} has no annotation project {titles}",
                          "add the annotators (`rescue annotators add EMAIL...`) and run `rescue push` first "
                          "(or check LABEL_STUDIO_URL)")
    largest_first = sorted(found, key=lambda p: (-p.info.task_number, p.export_name))
    keys = [ExportKey(p.scenario, p.annotator, p.info.id) for p in largest_first]
    guards = guards_of(project, client, loaded.agreement.annotators, loaded.agreement.adjudicators)
    return snapshot_from_exports(project, _prefetched(client, keys), guards.users, schema=schema,
                                 source=connection.url, guards=guards,
                                 accept_deleted=accept_deleted or settings.accept_deleted, same_as=same_as)
