"""The release manifest's vocabulary, shared by whoever writes a release (`release`) and whoever checks one
(`verify`, `evaluate`): its file name, its self-hash key, and how one listed file is described."""

from __future__ import annotations

import hashlib
from typing import Any

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
