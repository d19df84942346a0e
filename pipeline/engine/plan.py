"""Which steps a build runs: all of them, or `--only` the named ones plus everything they need (each
needed step still skips itself when it is up to date, so only what is out of date runs)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipeline.engine.steps import STEPS, Step
from pipeline.errors import RescueError


def check_names(names: Iterable[str], steps: Mapping[str, Step] = STEPS) -> None:
    unknown = [name for name in names if name not in steps]
    if unknown:
        raise RescueError(f"unknown step(s): {', '.join(unknown)}",
                          f"name steps of the build graph: {', '.join(steps)} (`rescue graph` draws it)")


def needed(names: Iterable[str], steps: Mapping[str, Step] = STEPS) -> set[str]:
    """The named steps and, transitively, every step upstream of them."""
    todo, found = list(names), set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(steps[name].after)
    return found


def plan(only: Iterable[str] = (), steps: Mapping[str, Step] = STEPS) -> list[str]:
    """The steps to run, in graph order (the registry's order is a topological order); `steps`: the
    project's registry (`StepContext.registry`), the product's by default."""
    only = list(only)
    check_names(only, steps)
    wanted = needed(only, steps) if only else set(steps)
    return [name for name in steps if name in wanted]
