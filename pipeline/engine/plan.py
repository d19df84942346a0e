"""Which steps a build runs: all of them, or `--only` the named ones plus everything they need (each
needed step still skips itself when it is up to date, so only what is out of date runs)."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.engine.steps import STEPS
from pipeline.errors import RescueError


def check_names(names: Iterable[str]) -> None:
    unknown = [name for name in names if name not in STEPS]
    if unknown:
        raise RescueError(f"unknown step(s): {', '.join(unknown)}",
                          f"name steps of the build graph: {', '.join(STEPS)} (`rescue graph` draws it)")


def needed(names: Iterable[str]) -> set[str]:
    """The named steps and, transitively, every step upstream of them."""
    todo, found = list(names), set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(STEPS[name].after)
    return found


def plan(only: Iterable[str] = ()) -> list[str]:
    """The steps to run, in graph order (the registry's order is a topological order)."""
    only = list(only)
    check_names(only)
    wanted = needed(only) if only else set(STEPS)
    return [name for name in STEPS if name in wanted]
