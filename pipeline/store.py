"""The build store: atomic writes, JSONL manifests, file hashes and the one step-run state record.

A stage writes its session outputs into a temporary sibling folder and renames it into place, then
records a `StepRun` (fingerprint of inputs + settings + stage version, and the output files with
their sizes). A crash at any point leaves either the last good output or nothing, plus temporary
folders named `.<name>.tmp-*` that `sweep_leftovers` removes on the next run. A write that fails (a full
disk) removes its temporary file or folder at once and raises an OSError that names the path it was writing.
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
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, JsonValue, model_validator

from pipeline import __version__
from pipeline.errors import naming
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
        with naming(path), tmp.open("wb") as handle:
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
        with naming(final):
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
    mtime_ns: int = Field(default=-1, description="when it was written: size and mtime unchanged = content unchanged "
                                                  "(-1: unknown, the content is hashed)")


class FileStamp(Record):
    """Size and modification time of a source file: a cheap way to notice it was replaced."""

    path: str
    size: int
    mtime_ns: int


class StepRun(Record):
    """What one step last did, for one session (build/state/<step>/<session_id>.json) or for the whole corpus
    (`session_id` "", build/state/corpus/<step>.json): the one state record of every step.

    Up to date = the fingerprint of its inputs is unchanged and every recorded output still has its content.
    Records written before the two engines were merged are read as they are (a session stage's `stage` key
    and its traceback `detail`), so an existing build keeps its state and nothing re-runs for the format."""

    step: str
    session_id: str = Field(default="", description="'' for a corpus step")
    fingerprint: str = ""
    status: Literal["done", "failed"]
    outputs: tuple[OutputFile, ...] = ()
    inputs: tuple[FileStamp, ...] = ()
    input_digests: dict[str, str] = Field(default_factory=dict, description="a digest per named input of the "
                                          "fingerprint, so a check can say which input changed")
    error: str = ""
    traceback: str = Field(default="", description="traceback of an internal error, for bug reports")
    detail: dict[str, JsonValue] = Field(default_factory=dict, description="what the step recorded for the next run")
    warnings: tuple[str, ...] = Field(default=(), description="what a session step's record warned about (the build "
                                      "prints them once)")
    code_version: str = __version__
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    elapsed_s: float = Field(default=0.0, description="wall-clock seconds the run took")

    @model_validator(mode="before")
    @classmethod
    def _earlier_formats(cls, data: Any) -> Any:
        """A per-session record of the first engine: `stage` for `step`, the traceback in `detail`."""
        if isinstance(data, dict) and ("stage" in data or isinstance(data.get("detail"), str)):
            data = dict(data)
            if "stage" in data:
                data.setdefault("step", data.pop("stage"))
            if isinstance(data.get("detail"), str):
                data["traceback"] = data.pop("detail")
        return data


def output_file(root: Path, path: Path) -> OutputFile:
    stat = path.stat()
    return OutputFile(path=path.relative_to(root).as_posix(), size=stat.st_size, sha256=sha256_file(path),
                      mtime_ns=stat.st_mtime_ns)


def describe_outputs(root: Path, folder: Path) -> tuple[OutputFile, ...]:
    """Every file under `folder` with size and sha256, sorted, paths relative to `root`."""
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return tuple(output_file(root, p) for p in files)


def changed_outputs(root: Path, outputs: Iterable[OutputFile]) -> list[str]:
    """The recorded outputs whose content is not what the step wrote (missing, cut, edited): the one output
    rule of every step. A file with its recorded size and mtime is taken as unchanged (so a build does not
    re-hash every WAV); any other file is hashed, so an edit that keeps the size is still caught."""
    changed = []
    for output in outputs:
        path = root / output.path
        try:
            stat = path.stat()
        except OSError:
            changed.append(output.path)
            continue
        if not path.is_file() or stat.st_size != output.size:
            changed.append(output.path)
        elif stat.st_mtime_ns != output.mtime_ns and sha256_file(path) != output.sha256:
            changed.append(output.path)
    return changed


def outputs_intact(root: Path, outputs: Iterable[OutputFile]) -> bool:
    return not changed_outputs(root, outputs)
