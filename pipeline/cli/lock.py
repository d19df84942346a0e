"""`@writer`: a `rescue` command that writes under build/ or to the annotation server holds build/.lock
for its whole run (see pipeline/lock.py). Read-only commands (status, verify, evaluate, ...) do not."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pipeline.cli.options import project_of

F = TypeVar("F", bound=Callable[..., Any])


def writer(command: F) -> F:
    """Put right above `def`, under `@click.pass_context`: the lock is taken before the command body runs."""

    @functools.wraps(command)
    def locked(*args: Any, **kwargs: Any) -> Any:
        from pipeline.lock import build_lock, current_command  # imported here: `rescue --help` stays fast

        with build_lock(project_of(click.get_current_context()), current_command()):
            return command(*args, **kwargs)

    return locked  # type: ignore[return-value]
