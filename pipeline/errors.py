"""One exception type for every user-facing failure: what went wrong, where, and the fix."""

from __future__ import annotations


class RescueError(Exception):
    """A problem the user can fix. The CLI prints it as one line plus the fix, without a traceback."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} (fix: {self.fix})" if self.fix else self.message


def describe_validation(exc: Exception) -> str:
    """One line listing each problem of a pydantic ValidationError as `field: message`."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg'].removeprefix('Value error, ')}"
        for err in errors()
    )


def os_error_message(exc: OSError) -> RescueError | None:
    """A RescueError naming the path and the fix for an OSError that says which file it was about
    (a read-only build area, a full disk); None for one without a path (a bug or a network problem)."""
    import errno

    path = exc.filename
    if path is None:
        return None
    reason = exc.strerror or type(exc).__name__
    if exc.errno in {errno.EACCES, errno.EPERM, errno.EROFS}:
        return RescueError(
            f"no access to {path}: {reason}",
            "make it and its folder writable for this user: check owner and mode (`ls -ld`), the immutable flag "
            "(`lsattr -d`) and read-only mounts; or build in a writable copy with `rescue --root DIR`")
    if exc.errno in {errno.ENOSPC, errno.EDQUOT}:
        return RescueError(f"cannot write {path}: {reason}", "free some disk space (or raise the quota), then run "
                                                             "this again: finished work is kept")
    return RescueError(f"{path}: {reason}", "check that path, then run this again")
