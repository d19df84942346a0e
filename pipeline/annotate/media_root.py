"""The media root: the only folder the embedded Label Studio serves to annotators (build/labelstudio/media/).

Label Studio's local-files route gives any logged-in user any file under its document root that a
local-files storage covers, and follows symlinks. So the document root holds nothing but the media
that tasks show, each at its path relative to the project root (task URLs stay
`/data/local-files/?d=<project-relative path>`, as before the media root existed), as a hard link to
the checked file, or a copy where a hard link cannot be made (another filesystem). Nothing here is
ever a symlink: one found in the media root stops push and the server start.

A file is published only if it is a video or audio file (by the names of the path and of the file it
resolves to), lies inside the project but outside build/labelstudio/, and resolves inside the
project; only a session's catalog video (checked against its sha256 by ingest) may link to another disk.
"""

from __future__ import annotations

import mimetypes
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.project import Project

if TYPE_CHECKING:
    from pipeline.annotate.tasks import SessionRows

# known whatever the system's MIME table says; other names count when mimetypes calls them video or audio
MEDIA_SUFFIXES = frozenset({".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".wav", ".mp3", ".m4a",
                            ".flac", ".ogg", ".opus"})
FIX_MEDIA = ("point the row's clip (rows.jsonl) or the session's video at a video or audio file inside the project, "
             "then push again")


def check_media_root(root: Path) -> None:
    """Refuse a media root that holds anything but folders and plain files (a symlink would lead out of it)."""
    if not root.exists():
        return
    if root.is_symlink() or not root.is_dir():
        raise RescueError(f"the annotators' media root {root} is a symlink or not a folder",
                          f"remove it (`rm {root}`); `rescue push` makes it again")
    for folder, names, files in os.walk(root):
        for name in names + files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                kind = "a symlink" if stat.S_ISLNK(mode) else "not a plain file"
                raise RescueError(f"{path} in the annotators' media root is {kind}: Label Studio would serve "
                                  "whatever it leads to", f"delete it (`rm {path}`); `rescue push` publishes only "
                                                          "hard links or copies of checked media")


def _is_media(name: str) -> bool:
    if Path(name).suffix.lower() in MEDIA_SUFFIXES:
        return True
    kind, _ = mimetypes.guess_type(name, strict=False)
    return bool(kind) and kind.split("/")[0] in ("video", "audio")


def checked_source(project: Project, rel: str, *, where: str, may_leave: bool) -> Path:
    """The real file behind the project-relative media path `rel`, after every check of the module docstring."""
    lexical = project.inside(project.root, rel, what=f"{where}: media path", fix=FIX_MEDIA)
    server = layout.labelstudio_dir(project)  # the server's own files (secrets, database, logs): never published
    server_folder = server.relative_to(project.root).as_posix()
    if lexical.is_relative_to(server):
        raise RescueError(f"{where}: media path {rel!r} lies in {server_folder}/, the annotation server's own "
                          "folder", FIX_MEDIA)
    real = Path(os.path.realpath(lexical))
    if not real.is_relative_to(project.root) and not may_leave:
        raise RescueError(f"{where}: media path {rel!r} leads out of the project (to {real})",
                          "make clips real files inside the project; only a catalog video (checked by its sha256 "
                          "at ingest) may link to another disk")
    if not _is_media(lexical.name) or not _is_media(real.name):
        raise RescueError(f"{where}: {rel!r} is not a media file (video or audio by its name)", FIX_MEDIA)
    if real.is_relative_to(server) or not real.is_file():
        raise RescueError(f"{where}: media path {rel!r} is not a file (or leads into {server_folder}/)", FIX_MEDIA)
    return real


def wanted_media(sessions: Iterable[SessionRows]) -> dict[str, tuple[str, bool]]:
    """Project-relative media path -> (where it is named, whether it may link out: the catalog video)."""
    wanted: dict[str, tuple[str, bool]] = {}
    for session in sessions:
        video = session.session_video
        if video:
            wanted.setdefault(video, (f"session {session.session_id}", video == session.entry.video))
        for row in session.rows:
            if row.clip:
                wanted.setdefault(row.clip, (f"session {session.session_id}, row {row.row_index}",
                                             row.clip == session.entry.video))
    return wanted


def _current(source: Path, published: Path) -> bool:
    try:
        have, want = published.lstat(), source.stat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(have.st_mode):
        return False
    same_inode = (have.st_dev, have.st_ino) == (want.st_dev, want.st_ino)
    return same_inode or (have.st_size, have.st_mtime_ns) == (want.st_size, want.st_mtime_ns)


def _place(source: Path, published: Path) -> None:
    """A hard link (a copy across filesystems) at `published`, swapped in atomically."""
    published.parent.mkdir(parents=True, exist_ok=True)
    temporary = published.with_name(f".{published.name}.tmp-{secrets.token_hex(4)}")
    try:
        try:
            os.link(source, temporary)
        except OSError:  # another filesystem, or hard links to others' files forbidden
            shutil.copy2(source, temporary)
        os.replace(temporary, published)
    finally:
        temporary.unlink(missing_ok=True)


def publish_media(project: Project, root: Path, sessions: Iterable[SessionRows]) -> list[Path]:
    """Put every media file the sessions' tasks show under `root` (all checked first); returns the top folders
    under `root` that hold them (Label Studio refuses a storage on the document root itself). Idempotent:
    files already current are left alone; a changed source (re-ingested video) is published again."""
    check_media_root(root)
    sources = {rel: checked_source(project, rel, where=where, may_leave=may_leave)
               for rel, (where, may_leave) in wanted_media(sessions).items()}
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    for rel, source in sources.items():
        published = root / rel
        if not _current(source, published):
            _place(source, published)
    return sorted({root / Path(rel).parts[0] for rel in sources})
