"""`rescue verify <release>`: recompute every hash and row count listed in MANIFEST.json and report
each changed, missing or extra file; check the manifest itself too. A release holds only plain files and
folders: a symbolic link (even to a listed file, or a loop back into the release) or any other kind of entry
is reported and never followed.

The manifest's own fields (release name, counts, settings, provenance) are covered by `manifest_sha256`,
the sha256 of its canonical content without that key; counts that can be recomputed from the files are
also compared, so the report says which field disagrees. This catches damage and careless edits; it is
not a signature (whoever rewrites the files can rewrite the hashes too: keep a copy of the published
manifest's sha256 elsewhere to detect that).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.records import Record
from pipeline.store import sha256_json
from pipeline.tasks.instances import TASKS
from pipeline.tasks.manifest import MANIFEST, MANIFEST_HASH, rows_of
from pipeline.tasks.media import MEDIA_FOLDER

CHUNK = 1 << 20


class FileChange(Record):
    path: str
    problem: str


class VerifyReport(Record):
    release: str
    checked: int
    changed: tuple[FileChange, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    not_plain: tuple[FileChange, ...] = ()  # symbolic links, sockets, fifos, devices: never part of a release

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or self.extra or self.not_plain)


def _walk(folder: Path) -> tuple[set[str], list[FileChange]]:
    """The plain files under `folder` (relative POSIX paths) and every entry that is not a plain file or folder.
    Links are reported, not followed: a link to a listed file must not pass as that file, and a loop
    (`ln -s . loop`) must not make the walk endless."""
    files: set[str] = set()
    odd: list[FileChange] = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        for name in sorted([*dirs, *names]):
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                odd.append(FileChange(path=rel, problem=f"a symbolic link (to {os.readlink(path)}): a release "
                                                        "holds only plain files"))
            elif stat.S_ISREG(mode):
                files.add(rel)
            elif not stat.S_ISDIR(mode):
                odd.append(FileChange(path=rel, problem="not a plain file or folder: a release holds only plain "
                                                        "files"))
    return files, odd


def manifest_problems(manifest: dict[str, Any], listed: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with the manifest's own fields: its content hash, and counts the file list contradicts."""
    problems = []
    content = {k: v for k, v in manifest.items() if k != MANIFEST_HASH}
    recorded = manifest.get(MANIFEST_HASH)
    if recorded is None:
        problems.append(f"no {MANIFEST_HASH} (a manifest from before it was added, or the key was removed)")
    elif sha256_json(content) != recorded:
        problems.append(f"its fields were edited: content sha256 {sha256_json(content)[:12]}… "
                        f"({MANIFEST_HASH} {str(recorded)[:12]}…)")
    counts = [(f"instances.{task}.all", f"tasks/{task}.jsonl") for task in TASKS]
    counts.append(("gold.sessions", "benchmark.jsonl"))
    for field, path in counts:
        value, rows = _get(manifest, *field.split(".")), listed.get(path, {}).get("rows")
        if rows is not None and value != rows:
            problems.append(f"{field} is {value} but {path} holds {rows} rows")
    clips = sum(path.startswith(f"{MEDIA_FOLDER}/") for path in listed)
    if "media" in manifest and _get(manifest, "media", "clips") != clips:
        problems.append(f"media.clips is {_get(manifest, 'media', 'clips')} but {clips} clips are listed")
    return problems


def stream_entry(folder: Path, path: str) -> dict[str, Any]:
    """sha256, size and rows of a listed file, read in chunks (clips can be large; nothing is held whole)."""
    digest, size, newlines = hashlib.sha256(), 0, 0
    lines = rows_of(path, 0) is not None  # only row files count their lines
    with (folder / path).open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            newlines += chunk.count(b"\n") if lines else 0
    return {"path": path, "sha256": digest.hexdigest(), "bytes": size, "rows": rows_of(path, newlines)}


def _get(data: Any, *keys: str) -> Any:
    """data[k1][k2]..., or None where a level is missing or not a mapping."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


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
    present, not_plain = _walk(folder)
    present.discard(MANIFEST)
    changed = []
    own = manifest_problems(manifest, listed)
    if own:
        changed.append(FileChange(path=MANIFEST, problem="; ".join(own)))
    for path in sorted(set(listed) & present):
        actual = stream_entry(folder, path)
        expected = listed[path]
        if actual["sha256"] != expected.get("sha256"):
            detail = f"sha256 {actual['sha256'][:12]}… (manifest {str(expected.get('sha256'))[:12]}…)"
            if actual["rows"] != expected.get("rows"):
                detail += f", {actual['rows']} rows (manifest {expected.get('rows')})"
            changed.append(FileChange(path=path, problem=detail))
    return VerifyReport(release=str(folder), checked=len(listed), changed=tuple(changed),
                        missing=tuple(sorted(set(listed) - present)), extra=tuple(sorted(present - set(listed))),
                        not_plain=tuple(not_plain))
