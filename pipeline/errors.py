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
