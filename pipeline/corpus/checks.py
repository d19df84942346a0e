"""How a corpus step judges itself without running (its `Step.check`, which `rescue status` calls): the one
rule of `pipeline.step.judge` over the step's own named inputs and recorded outputs. What only the server can
tell (its projects, exports) is judged by the server's database stamp, as the build does before it opens the
server: when the server may have changed, every step that reads it is stale, and the reason says so (the
steps that talk to the server judge themselves with `pipeline.annotate.server_step.by_server`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.agreement.inputs import latest_annotations
from pipeline.annotate.server_step import server_changed
from pipeline.errors import RescueError
from pipeline.step import Check, Context, Inputs, State, judge


def over_snapshot(step: str, inputs_of: Callable[[Context, Path], Inputs],
                  outputs_of: Callable[[Context], list[Path]], *, server: bool = False) -> Check:
    """A step over the newest annotation snapshot: blocked without one, else the one rule with its outputs;
    `server`: its round trip reads the server too."""

    def check(ctx: Context) -> tuple[State, str]:
        try:
            snapshot = latest_annotations(ctx.project)
        except RescueError as exc:
            return "blocked", exc.message
        run = ctx.last_run(step)
        inputs = inputs_of(ctx, snapshot)
        damaged = ctx.damaged(run, outputs_of(ctx)) if run is not None and run.status == "done" else []
        state, reason = judge(run, inputs, damaged)
        if server and state == "done" and (changed := server_changed(ctx)):
            return "stale", f"Label Studio may hold new adjudications: {changed}"
        return state, reason

    return check
