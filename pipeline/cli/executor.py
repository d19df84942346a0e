"""`--executor local|ray` and `--ray-address` for the commands that run per-session stages."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pipeline.project import Project

F = TypeVar("F", bound=Callable[..., Any])


def with_executor(command: F) -> F:
    """Put above `@writer`: the executor is made (Ray joined) before the lock is taken, so an unreachable
    cluster leaves build/ untouched; the command receives it as `executor` and it is closed afterwards."""

    @functools.wraps(command)
    def wrapped(*args: Any, executor: str, ray_address: str | None, **kwargs: Any) -> Any:
        from pipeline.executors.choose import make_executor

        ctx = click.get_current_context()
        project = Project.at((ctx.find_root().obj or {}).get("root"))
        chosen = make_executor(project.root, executor, jobs=kwargs.get("jobs", 1), ray_address=ray_address)
        try:
            return command(*args, executor=chosen, **kwargs)
        finally:
            chosen.close()

    wrapped = click.option(
        "--ray-address", default=None, metavar="ADDR",
        help="Ray cluster HOST:PORT (--executor ray); default [tool.rescue.executor] ray_address = 'auto': the "
             "cluster `ray start` runs on this machine; 'local' starts a private one.")(wrapped)
    wrapped = click.option(
        "--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
        help="Where per-session stages run: this machine (-j processes) or a Ray cluster (docs/ray.md).")(wrapped)
    return wrapped  # type: ignore[return-value]
