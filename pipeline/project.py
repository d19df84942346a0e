"""Where things live: the project root and its fixed top-level folders, and safe paths inside them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pipeline.errors import RescueError


def lexical(path: Path) -> Path:
    """Absolute, with `.` and `..` removed but symlinks kept (a video may link to another disk)."""
    return Path(os.path.normpath(path.absolute()))


@dataclass(frozen=True)
class Project:
    """A project root: `raw_video/` (inputs), `build/` (generated), `annotation_schemas/`."""

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str] | None = None) -> Project:
        chosen = Path(root or os.environ.get("RESCUE_ROOT") or ".").resolve()
        if not chosen.is_dir():
            raise RescueError(f"project root {chosen} is not a folder", "pass --root DIR or set RESCUE_ROOT")
        return cls(chosen)

    @property
    def raw_video(self) -> Path:
        return self.root / "raw_video"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def schemas(self) -> Path:
        return self.root / "annotation_schemas"

    @property
    def main_catalog(self) -> Path:
        return self.raw_video / "sessions.csv"

    def rel(self, path: Path) -> str:
        """The POSIX path of `path` relative to the root, as stored in records."""
        return lexical(path).relative_to(self.root).as_posix()

    def abs(self, rel: str) -> Path:
        return self.root / rel

    def inside(self, base: Path, relative: str, *, what: str, fix: str) -> Path:
        """Resolve `relative` under `base`, refusing absolute paths and anything that escapes `base`."""
        if not relative or PurePosixPath(relative).is_absolute() or Path(relative).is_absolute():
            raise RescueError(f"{what} {relative!r} must be a relative path inside {self.rel_or_abs(base)}/", fix)
        resolved = lexical(base / relative)
        if not resolved.is_relative_to(lexical(base)):
            raise RescueError(f"{what} {relative!r} escapes {self.rel_or_abs(base)}/", fix)
        return resolved

    def rel_or_abs(self, path: Path) -> str:
        try:
            return self.rel(path)
        except ValueError:
            return str(path)

    def session_dir(self, area: str, session_id: str) -> Path:
        """`build/<area>/<session_id>`; session ids are validated, this re-checks containment."""
        return self.inside(self.build / area, session_id, what="session id", fix="use a plain session id")
