"""The executor a command asked for: `local` (default; `-j N` processes) or `ray` (a cluster)."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import RescueError
from pipeline.executors.base import Executor
from pipeline.executors.local import LocalExecutor

EXECUTORS = ("local", "ray")


def make_executor(root: Path, name: str, *, jobs: int = 1, ray_address: str | None = None) -> Executor:
    """`ray` connects here, before the command takes the build lock: an unreachable cluster writes nothing."""
    if name == "local":
        if ray_address is not None:
            raise RescueError("--ray-address is given but the executor is local", "add --executor ray")
        return LocalExecutor(jobs)
    if name != "ray":
        raise RescueError(f"unknown executor {name!r}", f"use one of: {', '.join(EXECUTORS)}")
    if jobs != 1:
        raise RescueError("-j/--jobs sets the local process pool; with --executor ray the cluster's resources "
                          "decide how many sessions run at once",
                          "drop -j, or set [tool.rescue.executor.<step>] workers / num_cpus (see docs/ray.md)")
    from pipeline.executors.ray_executor import RayExecutor
    from pipeline.settings import load_settings

    settings = load_settings(root).executor
    return RayExecutor(ray_address or settings.ray_address, settings)
