"""Run the external programs the samples need, turning 'missing' and 'failed' into RescueError."""

from __future__ import annotations

import shutil
import subprocess

from pipeline.errors import RescueError

INSTALL_FIX = "apt-get install espeak-ng ffmpeg"


def require(program: str) -> str:
    """Absolute path of `program`, or a RescueError that says how to install it."""
    path = shutil.which(program)
    if path is None:
        raise RescueError(f"{program} is not installed; it is needed to generate the sample sessions", INSTALL_FIX)
    return path


def failure(program: str, what: str, stderr: bytes | str) -> RescueError:
    """A RescueError carrying the last lines of the program's error output."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:]) or "no error output"
    return RescueError(f"{program} failed while {what}: {tail}", f"check that `{program}` works; {INSTALL_FIX}")


def run(args: list[str], what: str) -> bytes:
    """Run a command to completion and return its stdout; raise RescueError if it fails."""
    try:
        done = subprocess.run(args, capture_output=True, check=False)
    except OSError as exc:
        raise failure(args[0], what, str(exc)) from exc
    if done.returncode != 0:
        raise failure(args[0], what, done.stderr)
    return done.stdout
