"""The build store: atomic writes, JSONL manifests, file hashes and per-(stage, session) run states.

A stage writes its session outputs into a temporary sibling folder and renames it into place, then
records a `StageRun` (fingerprint of inputs + settings + stage version, and the output files with
their sizes). A crash at any point leaves either the last good output or nothing, plus temporary
folders named `.<name>.tmp-*` that `sweep_leftovers` removes on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

from pipeline.records import Record

TMP_MARK = ".tmp-"
OLD_MARK = ".old-"
_CHUNK = 1 << 20

R = TypeVar("R", bound=BaseModel)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_json(value: object) -> str:
    """Hash of a JSON-able value with sorted keys: the same content always gives the same hash."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tmp_sibling(path: Path, mark: str) -> Path:
    return path.with_name(f".{path.name}{mark}{uuid.uuid4().hex[:8]}")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(path, TMP_MARK)
    try:
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def write_jsonl_atomic(path: Path, records: Iterable[BaseModel]) -> int:
    lines = [record.model_dump_json() + "\n" for record in records]
    write_text_atomic(path, "".join(lines))
    return len(lines)


def read_jsonl(path: Path, model: type[R]) -> list[R]:
    with path.open(encoding="utf-8") as handle:
        return [model.model_validate_json(line) for line in handle if line.strip()]


def write_record_atomic(path: Path, record: BaseModel) -> None:
    write_text_atomic(path, record.model_dump_json(indent=2) + "\n")


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield an empty temp folder; on success it replaces `final` as a whole, on error it vanishes.

    The old `final` (if any) stays in place until the new one is complete, so a failure or a kill
    never leaves a half-written session folder under the final name.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_sibling(final, TMP_MARK)
    tmp.mkdir()
    try:
        yield tmp
        old = _tmp_sibling(final, OLD_MARK)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def sweep_leftovers(base: Path) -> list[Path]:
    """Remove temp files/folders a killed run left under `base`; restore an `.old-` folder if its
    replacement never arrived. Returns what was removed or restored."""
    touched: list[Path] = []
    if not base.exists():
        return touched
    for path in sorted(base.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        name = path.name
        if not name.startswith(".") or not path.exists():
            continue
        if TMP_MARK in name:
            remove_path(path)
            touched.append(path)
        elif OLD_MARK in name:
            restore_or_remove_old(path)
            touched.append(path)
    return touched


def remove_path(path: Path) -> None:
    """Remove a file, link or folder tree (a folder is not followed through a symlink)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def restore_or_remove_old(path: Path) -> None:
    """An `.<name>.old-*` left by a killed `atomic_dir`: put it back when `<name>` never arrived, else drop it."""
    name = path.name
    final = path.with_name(name[1 : name.index(OLD_MARK)])
    if final.exists():
        remove_path(path)
    else:
        os.replace(path, final)


class OutputFile(Record):
    path: str
    size: int
    sha256: str


class FileStamp(Record):
    """Size and modification time of a source file: a cheap way to notice it was replaced."""

    path: str
    size: int
    mtime_ns: int


class StageRun(Record):
    """What one stage last did for one session. Stored as build/state/<stage>/<session_id>.json."""

    stage: str
    session_id: str
    fingerprint: str
    status: Literal["done", "failed"]
    outputs: tuple[OutputFile, ...] = ()
    inputs: tuple[FileStamp, ...] = ()
    error: str = ""
    detail: str = Field(default="", description="traceback of an internal error, for bug reports")
    code_version: str
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    elapsed_s: float = Field(default=0.0, description="wall-clock seconds the run took")


def describe_outputs(root: Path, folder: Path) -> tuple[OutputFile, ...]:
    """Every file under `folder` with size and sha256, sorted, paths relative to `root`."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return tuple(
        OutputFile(path=p.relative_to(root).as_posix(), size=p.stat().st_size, sha256=sha256_file(p)) for p in files
    )


def outputs_intact(root: Path, outputs: Iterable[OutputFile]) -> bool:
    """Cheap check that recorded outputs still exist with their sizes (a full hash is `verify`'s job)."""
    for output in outputs:
        path = root / output.path
        if not path.is_file() or path.stat().st_size != output.size:
            return False
    return True
