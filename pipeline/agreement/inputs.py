"""Reading pulled annotations: the newest snapshot under build/annotations/, checked and de-duplicated.

Assumption shared with the annotation stage (`rescue pull`): every pull writes its parsed, validated
`Annotation` records (one per row x annotator x field) to `build/annotations/<snapshot>/annotations.jsonl`
(any depth below build/annotations/ is accepted), snapshots are never rewritten, and snapshot folder
names sort in time order (UTC timestamps such as `20261130T101500Z`). The newest snapshot is therefore
the one whose folder path sorts last; `--snapshot` picks another.

A pull also writes summary.json beside annotations.jsonl with the record counts and the file's sha256;
every read compares them (`check_snapshot`), so a truncated or edited snapshot stops the reader with the
file and the fix instead of silently yielding fewer sessions. A file without summary.json (written by
`write_annotations`: tests, benchmarks) has nothing to be compared with and is read as it is.
"""

from __future__ import annotations

import gc
import json
import marshal
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pydantic import JsonValue, ValidationError

from pipeline import layout
from pipeline.errors import RescueError, describe_validation
from pipeline.project import Project
from pipeline.records import Annotation
from pipeline.store import sha256_file, sha256_json, write_bytes_atomic

ANNOTATIONS_FILE = "annotations.jsonl"
SUMMARY_FILE = "summary.json"  # written beside annotations.jsonl by `rescue pull` (pipeline.annotate.pull)
CACHE_VERSION = "2"  # bump when Answer or the validation rules change
CACHE_KEEP = 4  # validated snapshots kept in the cache
_FIX_PULL = "run `rescue pull` to store a snapshot of the Label Studio annotations"
_FIX_DAMAGED = ("run `rescue pull` (or `rescue build`) for a fresh snapshot, or restore this folder from a backup; "
                "never edit snapshot files by hand")


class Answer(NamedTuple):
    """One annotator's value for one field of one row: the parts of an `Annotation` agreement needs."""

    session_id: str
    scenario: str
    row_id: str
    row_index: int
    annotator: str
    field: str
    value: JsonValue
    updated_at: str
    annotation_id: int
    task_id: int = 0  # the Label Studio task (in the annotator's own project) the answer was given in


@dataclass
class Snapshot:
    """The de-duplicated answers of one snapshot, and what was left out on the way (for the report)."""

    path: Path
    snapshot: str
    schema_version: str
    answers: list[Answer]
    duplicates: int = 0  # older saves of the same (row, annotator, field), replaced by the newest
    other_versions: dict[str, int] = field(default_factory=dict)  # schema version -> records left out

    @property
    def annotators(self) -> tuple[str, ...]:
        return tuple(sorted({answer.annotator for answer in self.answers}))


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while hundreds of thousands of small records are built: they
    hold no reference cycles, and the collector's repeated passes over them cost more than the work."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def snapshot_files(project: Project) -> list[Path]:
    """Every annotations.jsonl under build/annotations/, oldest snapshot first."""
    base = layout.annotations_dir(project)
    if not base.is_dir():
        return []
    files = [p for p in base.rglob(ANNOTATIONS_FILE) if not any(part.startswith(".") for part in p.parts)]
    return sorted(files, key=lambda p: p.parent.relative_to(base).as_posix())


def latest_annotations(project: Project, snapshot: str | None = None) -> Path:
    """The annotations file of the newest snapshot (or of the snapshot folder named `snapshot`)."""
    files = snapshot_files(project)
    if not files:
        raise RescueError(f"no annotation snapshot under {project.rel_or_abs(layout.annotations_dir(project))}/",
                          _FIX_PULL)
    if snapshot is None:
        return files[-1]
    chosen = [p for p in files if p.parent.name == snapshot or p.parent.as_posix().endswith("/" + snapshot)]
    if not chosen:
        known = ", ".join(p.parent.name for p in files[-5:])
        raise RescueError(f"annotation snapshot {snapshot!r} not found", f"use one of: {known}")
    return chosen[-1]


def check_snapshot(path: Path, sha256: str | None = None) -> bool:
    """Stop with a RescueError when annotations.jsonl does not match the summary.json its pull wrote:
    another sha256 (when recorded) or another number of records. `sha256`: the file's, if already known.
    True when the file has the sha256 its pull recorded, i.e. holds exactly the records that pull validated."""
    summary_path = path.parent / SUMMARY_FILE
    if not summary_path.is_file():
        return False
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        parts = summary["projects"] if "projects" in summary else summary["scenarios"]  # older pulls: per scenario
        counted = sum(int(part["records"]) for part in parts) + int(summary.get("carried", 0))  # + kept.jsonl's
        recorded = str(summary.get("annotations_sha256") or "")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RescueError(f"{summary_path} is not a readable pull summary ({exc})", _FIX_DAMAGED) from exc
    actual = (sha256 or sha256_file(path)) if recorded else ""
    if recorded and actual == recorded:
        return True
    with path.open("rb") as handle:
        records = sum(1 for line in handle if line.strip())
    if records == counted and not recorded:
        return False
    detail = f"; its sha256 {actual[:12]}… is not the recorded {recorded[:12]}…" if recorded else ""
    raise RescueError(f"annotation snapshot {path} is damaged: it holds {records} record(s), {SUMMARY_FILE} "
                      f"counts {counted}{detail}", _FIX_DAMAGED)


def _read_records(path: Path) -> Iterable[tuple[int, Annotation]]:
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError as exc:
        raise RescueError(f"annotation file {path} not found", _FIX_PULL) from exc
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield number, Annotation.model_validate_json(line)
            except ValidationError as exc:
                raise RescueError(f"{path} line {number}: not an annotation record: {describe_validation(exc)}",
                                  "pull the snapshot again; never edit snapshot files by hand") from exc


def load_snapshot(path: Path, *, schema_version: str, known_fields: Iterable[str],
                  skip_other_versions: bool = False, cache_dir: Path | None = None) -> Snapshot:
    """Read, validate and de-duplicate one annotations file.

    Records of another schema version are an error (their fields may mean something else) unless
    `skip_other_versions`, which leaves them out and counts them for the report. When one annotator
    saved the same field of the same row more than once, the newest save wins.

    Validating every record is the slow part of reading a large snapshot, and snapshots never change:
    with `cache_dir`, the validated result is kept there (marshal, keyed by the file's sha256 and the
    options) and a later read of the same file content skips the validation.
    """
    with paused_gc():
        return _cached_snapshot(path, schema_version, sorted(set(known_fields)), skip_other_versions, cache_dir)


def load_checked_snapshot(path: Path, *, schema_version: str, known_fields: Iterable[str],
                          skip_other_versions: bool = False) -> Snapshot:
    """`load_snapshot` for a caller that has just run `check_snapshot` and keeps its own cache of what it
    derives (agree's coded ratings): no second sha256 of the file, and no cache of every answer, whose
    marshal copy would double the memory of a large first read."""
    with paused_gc():
        return _load_snapshot(path, schema_version, set(known_fields), skip_other_versions)


def _cached_snapshot(path: Path, schema_version: str, known: list[str], skip_other_versions: bool,
                     cache_dir: Path | None) -> Snapshot:
    if cache_dir is None:
        check_snapshot(path)
        return _load_snapshot(path, schema_version, set(known), skip_other_versions)
    digest = sha256_file(path)
    check_snapshot(path, digest)
    key = sha256_json([CACHE_VERSION, digest, schema_version, known, skip_other_versions])[:24]
    cached = cache_dir / f"snapshot-{key}.marshal"
    if cached.is_file():
        try:
            name, answers, duplicates, versions = marshal.loads(cached.read_bytes())
            return Snapshot(path=path, snapshot=name, schema_version=schema_version,
                            answers=list(map(Answer._make, answers)), duplicates=duplicates,
                            other_versions=versions)
        except (EOFError, ValueError, TypeError):
            pass  # a damaged cache file is simply rebuilt
    snapshot = _load_snapshot(path, schema_version, set(known), skip_other_versions)
    payload = (snapshot.snapshot, [tuple(a) for a in snapshot.answers], snapshot.duplicates, snapshot.other_versions)
    write_bytes_atomic(cached, marshal.dumps(payload))
    for old in sorted(cache_dir.glob("snapshot-*.marshal"), key=lambda p: p.stat().st_mtime)[:-CACHE_KEEP]:
        old.unlink(missing_ok=True)
    return snapshot


def _load_snapshot(path: Path, schema_version: str, known: set[str], skip_other_versions: bool) -> Snapshot:
    newest: dict[tuple[str, str, str], Answer] = {}
    versions: Counter[str] = Counter()
    snapshots: set[str] = set()
    unknown: dict[str, int] = {}  # field -> first line
    duplicates = 0
    intern = sys.intern
    for number, record in _read_records(path):
        snapshots.add(record.snapshot)
        if record.schema_version != schema_version:
            versions[record.schema_version] += 1
            continue
        if record.field not in known:
            unknown.setdefault(record.field, number)
            continue
        answer = Answer(intern(record.session_id), intern(record.scenario), intern(record.row_id), record.row_index,
                        intern(record.annotator), intern(record.field), record.value, record.updated_at,
                        record.annotation_id, record.task_id)
        slot = (answer.row_id, answer.annotator, answer.field)
        previous = newest.get(slot)
        if previous is not None:
            duplicates += 1
            if (previous.updated_at, previous.annotation_id) > (answer.updated_at, answer.annotation_id):
                continue
        newest[slot] = answer
    if unknown:
        listed = ", ".join(f"{name} (line {line})" for name, line in sorted(unknown.items()))
        raise RescueError(f"{path}: field(s) not in schema version {schema_version}: {listed}",
                          "pull again with the current schema, or point [tool.rescue.agreement] schema_file at "
                          "the schema these annotations were made with")
    if versions and not skip_other_versions:
        found = ", ".join(f"version {v}: {n} record(s)" for v, n in sorted(versions.items()))
        raise RescueError(f"{path} mixes annotation schema versions: expected {schema_version}, also found {found}",
                          "pass --skip-other-versions to leave those records out (the report counts them), "
                          "or re-pull the project with one schema")
    if len(snapshots) > 1:
        raise RescueError(f"{path} holds records of several snapshots ({', '.join(sorted(snapshots))})",
                          "a snapshot file must come from one pull; pull again")
    answers = sorted(newest.values(), key=lambda a: (a.session_id, a.row_index, a.row_id, a.field, a.annotator))
    del newest  # its key tuples are a few hundred MB at 10x; free them before the caller codes the answers
    return Snapshot(path=path, snapshot=next(iter(snapshots), path.parent.name), schema_version=schema_version,
                    answers=answers, duplicates=duplicates, other_versions=dict(versions))


def adjudication_answers(project: Project) -> Path | None:
    """The newest answers pulled from the Label Studio adjudication projects
    (build/adjudication/answers/<UTC time>/annotations.jsonl), if any."""
    files = sorted(layout.adjudication_answers_dir(project).glob(f"*/{ANNOTATIONS_FILE}"))
    return files[-1] if files else None


def write_annotations(path: Path, records: Iterable[Annotation]) -> int:
    """Write records as a snapshot file (used by tests, the benchmark and the synthetic generator)."""
    from pipeline.store import write_text_atomic

    lines = [record.model_dump_json() + "\n" for record in records]
    write_text_atomic(path, "".join(lines))
    return len(lines)
