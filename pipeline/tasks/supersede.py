"""Putting a finished release folder in place without ever deleting the one it replaces.

A release that is replaced (by `rescue freeze --force`, or by `rescue build` when the gold, the settings
or the release on disk changed) moves to `<release parent>/superseded/<version>-<UTC time>/` as it was;
only the user deletes it.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

SUPERSEDED = "superseded"


def superseded_path(out: Path) -> Path:
    """A new, unused folder name under <parent>/superseded/ for the release `out`."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = out.parent / SUPERSEDED / f"{out.name}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def install_release(staged: Path, out: Path) -> Path | None:
    """Rename the complete folder `staged` to `out`; an existing `out` moves to superseded/ first.

    Returns where the previous release went (None when there was none). Both renames stay on one
    filesystem, so each is atomic; a crash between them leaves the old release under superseded/ and
    the new one in its staging folder, never a half-written folder under `out`.
    """
    moved = None
    if out.exists():
        moved = superseded_path(out)
        moved.parent.mkdir(parents=True, exist_ok=True)
        os.replace(out, moved)
    os.replace(staged, out)
    return moved
