"""`rescue verify <release>`: recompute every hash and row count listed in MANIFEST.json and report
each changed, missing or extra file."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.tasks.release import MANIFEST, file_entry


class FileChange(Record):
    path: str
    problem: str


class VerifyReport(Record):
    release: str
    checked: int
    changed: tuple[FileChange, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra)


def verify_release(folder: Path) -> VerifyReport:
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        listed = {entry["path"]: entry for entry in manifest["files"]}
    except FileNotFoundError as exc:
        raise RescueError(f"{manifest_path} not found", "point at a release folder made by `rescue freeze`") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise RescueError(f"{manifest_path} is not a readable release manifest ({exc})",
                          "restore MANIFEST.json from the published release") from exc
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {MANIFEST}
    changed = []
    for path in sorted(set(listed) & present):
        actual = file_entry(path, (folder / path).read_bytes())
        expected = listed[path]
        if actual["sha256"] != expected.get("sha256"):
            detail = f"sha256 {actual['sha256'][:12]}… (manifest {str(expected.get('sha256'))[:12]}…)"
            if actual["rows"] != expected.get("rows"):
                detail += f", {actual['rows']} rows (manifest {expected.get('rows')})"
            changed.append(FileChange(path=path, problem=detail))
    return VerifyReport(release=str(folder), checked=len(listed), changed=tuple(changed),
                        missing=tuple(sorted(set(listed) - present)), extra=tuple(sorted(present - set(listed))))
