"""Whether each corpus step is up to date, computed without running anything (for `rescue status`).

Each step judges itself by its declared `check` (e.g. pipeline/corpus/checks.py: the one rule of
`pipeline.step.judge` over its own inputs and outputs); a step that declares none is judged by its last run.
"""

from __future__ import annotations

from pipeline.engine.context import StepContext
from pipeline.engine.state import read_state
from pipeline.errors import RescueError
from pipeline.step import Freshness, last_run_state


def corpus_freshness(ctx: StepContext) -> list[Freshness]:
    """Every corpus step's state and why, in graph order; a step whose upstream step never ran or failed is
    blocked (its inputs do not exist yet). Read-only: `rescue status` takes no lock and rewrites nothing."""
    project, corpus = ctx.project, ctx.registry.corpus
    if not ctx.any_rows():
        return [Freshness(step=name, state="blocked", reason="no catalog session has transcript rows yet")
                for name in corpus]
    try:
        ctx.for_corpus()
    except RescueError as exc:  # e.g. no annotation schema yet: the build would stop on it too
        return [Freshness(step=name, state="blocked", reason=exc.message) for name in corpus]
    found: dict[str, Freshness] = {}
    for name in corpus:
        step = ctx.registry.steps[name]
        held = [f"{up} ({found[up].state})" for up in step.after
                if up in found and found[up].state in ("pending", "failed", "blocked")]
        run = read_state(project, name)
        if held and (run is None or run.status == "done"):
            state, reason = "blocked", f"waiting for {', '.join(held)}"
        else:
            state, reason = step.check(ctx) if step.check is not None else last_run_state(run)
        found[name] = Freshness(step=name, state=state, reason=reason)
    return list(found.values())
