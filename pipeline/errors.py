"""One exception type for every user-facing failure: what went wrong, where, and the fix."""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
# `.<name>.tmp-<id>`: the temporary sibling an atomic write fills before renaming it to <name> (pipeline/store.py)
_STAGING = re.compile(r"^\.(.+)\.tmp-[0-9A-Za-z]+$")


def final_path(path: str) -> str:
    """`path` as the user knows it: a temporary staging folder or file (removed when the write failed) is named
    by what it was to become, e.g. build/release/.v1.tmp-1a2b/gold/er.jsonl -> build/release/v1/gold/er.jsonl."""
    parts = Path(path).parts
    return str(Path(*(m.group(1) if (m := _STAGING.match(part)) else part for part in parts))) if parts else path


class RescueError(Exception):
    """A problem the user can fix. The CLI prints it as one line plus the fix, without a traceback; `details`
    (optional: evidence the fix needs, e.g. one line per unnamed speaker) follow on their own indented lines."""

    def __init__(self, message: str, fix: str = "", details: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.details = tuple(details)

    def __str__(self) -> str:
        text = f"{self.message} (fix: {self.fix})" if self.fix else self.message
        return text + "".join(f"\n    {detail}" for detail in self.details)


def masked_url(url: str) -> str:
    """`url` fit to print, log or store: a password in it becomes *** (http://user:***@host), and so does a
    user name alone (http://***@host: often a token)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.rpartition("@")[2] if "@" in url else url
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    shown = f"{user}:***" if colon else "***"
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def describe_validation(exc: Exception) -> str:
    """One line listing each problem of a pydantic ValidationError as `field: message`."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg'].removeprefix('Value error, ')}"
        for err in errors()
    )


@contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """Give an OSError raised without a file name `path` as its file name: a write() on a full disk says only
    "No space left on device", and the user needs to know where (see `os_error_message`)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(path)
        raise


def mount_point(path: Path | str) -> Path:
    """The mount point of the filesystem that holds `path` (or would hold it: the nearest existing folder)."""
    here = Path(os.path.abspath(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    while not os.path.ismount(here) and here != here.parent:
        here = here.parent
    return here


def os_error_message(exc: OSError, where: Path | str | None = None) -> RescueError | None:
    """A RescueError naming the path and the fix for an OSError that says which file it was about
    (a read-only build area, a full disk); None for one without a path (a bug or a network problem).
    A full disk is always the user's to fix: without a file name it names `where` (the build folder)."""
    path = exc.filename
    reason = exc.strerror or type(exc).__name__
    if exc.errno in DISK_FULL and (path is not None or where is not None):
        # a copy names both files (shutil: source, then destination): the full disk is the destination's
        target = final_path(str(exc.filename2 or (path if path is not None else where)))
        mount = mount_point(target)
        what = "the quota of the user" if exc.errno == errno.EDQUOT else "space"
        return RescueError(
            f"cannot write {target}: {reason}",
            f"free {what} on the filesystem mounted at {mount}, which holds that path (`df -h {mount}` shows what "
            "is left), then run this again: what was half-written was removed, finished work is kept")
    if path is None:
        return None
    if exc.errno in {errno.EACCES, errno.EPERM, errno.EROFS}:
        return RescueError(
            f"no access to {path}: {reason}",
            "make it and its folder writable for this user: check owner and mode (`ls -ld`), the immutable flag "
            "(`lsattr -d`) and read-only mounts; or build in a writable copy with `rescue --root DIR`")
    return RescueError(f"{path}: {reason}", "check that path, then run this again")
