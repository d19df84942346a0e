"""The release manifest's vocabulary, shared by whoever writes a release (`release`) and whoever checks one
(`verify`, `evaluate`): its file name, its self-hash key, and how one listed file is described."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pipeline.errors import RescueError
from pipeline.store import sha256_json
from pipeline.tasks.jsonio import pretty_bytes

MANIFEST = "MANIFEST.json"
MANIFEST_HASH = "manifest_sha256"


def rows_of(path: str, newlines: int) -> int | None:
    """Rows of a listed file: lines for .jsonl, data lines for .csv, None for other formats."""
    if path.endswith(".jsonl"):
        return newlines
    if path.endswith(".csv"):
        return max(0, newlines - 1)
    return None


def file_entry(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "rows": rows_of(path, data.count(b"\n"))}


def manifest_bytes(content: dict[str, Any]) -> bytes:
    """The manifest with `manifest_sha256`: the sha256 of its canonical content without that key."""
    return pretty_bytes({**content, MANIFEST_HASH: sha256_json(content)})


def read_manifest(release: Path) -> dict[str, Any]:
    """A release folder's MANIFEST.json, or the error that says it is not one."""
    try:
        manifest = json.loads((release / MANIFEST).read_text(encoding="utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest["files"], list):
            raise TypeError("not a manifest")
        return manifest
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError, KeyError,
            TypeError) as exc:
        raise RescueError(f"{release} is not a release folder with a readable {MANIFEST}",
                          "pass --release build/release/<version> (made by `rescue freeze`)") from exc


def read_listed_jsonl(release: Path, manifest: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The records of one JSONL file of the release, after checking its bytes against the manifest."""
    try:
        data = (release / path).read_bytes()
        listed = {e["path"]: e["sha256"] for e in manifest["files"]}
    except FileNotFoundError as exc:
        raise RescueError(f"{release / path} is missing", f"run `rescue verify {release}`") from exc
    except (KeyError, TypeError) as exc:
        raise RescueError(f"{release / MANIFEST} lists its files without path and sha256",
                          f"run `rescue verify {release}`") from exc
    if listed.get(path) != file_entry(path, data)["sha256"]:
        raise RescueError(f"{release / path} differs from the release manifest",
                          f"run `rescue verify {release}` and restore the published file")
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
