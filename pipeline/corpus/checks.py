"""How a corpus step judges itself without running (its `Step.check`, which `rescue status` calls): the one
rule of `pipeline.step.judge` over the step's own named inputs and recorded outputs. What only the server can
tell (its projects, exports) is judged by the server's database stamp, as the build does before it opens the
server: when the server may have changed, every step that reads it is stale, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.agreement.inputs import latest_annotations
from pipeline.corpus.context import CorpusContext
from pipeline.corpus.server_step import server_changed
from pipeline.corpus.state import damaged_outputs, read_state
from pipeline.corpus.stored import Kind, load_stored
from pipeline.errors import RescueError
from pipeline.step import Check, Inputs, State, judge, last_run_state


def by_server(step: str, inputs_of: Callable[[CorpusContext], Inputs] | None = None) -> Check:
    """A step that reads Label Studio: its own inputs first (when it names them), then whether the server may
    have changed."""

    def check(ctx: CorpusContext) -> tuple[State, str]:
        run = read_state(ctx.project, step)
        state, reason = judge(run, inputs_of(ctx)) if inputs_of is not None else last_run_state(run)
        if state == "done" and (changed := server_changed(ctx)):
            return "stale", f"Label Studio may have changed: {changed}"
        return state, reason

    return check


def stored_sample(step: str, kind: Kind) -> Check:
    """The stored sample annotations (or adjudications), as `apply_step` decides what it has to do."""
    server = by_server(step)

    def check(ctx: CorpusContext) -> tuple[State, str]:
        if not ctx.settings.build.sample_annotations:
            return "done", "skipped: sample_annotations = false in [tool.rescue.build]"
        if not any(export.sessions() & set(ctx.rows) for export in load_stored(kind).values()):
            return "done", "not needed: no session of the stored sample export is in the catalog"
        return server(ctx)

    return check


def over_snapshot(step: str, inputs_of: Callable[[CorpusContext, Path], Inputs],
                  outputs_of: Callable[[CorpusContext], list[Path]], *, server: bool = False) -> Check:
    """A step over the newest annotation snapshot: blocked without one, else the one rule with its outputs;
    `server`: its round trip reads the server too."""

    def check(ctx: CorpusContext) -> tuple[State, str]:
        try:
            snapshot = latest_annotations(ctx.project)
        except RescueError as exc:
            return "blocked", exc.message
        run = read_state(ctx.project, step)
        inputs = inputs_of(ctx, snapshot)
        damaged = damaged_outputs(ctx.project, run, outputs_of(ctx)) if run is not None and run.status == "done" else []
        state, reason = judge(run, inputs, damaged)
        if server and state == "done" and (changed := server_changed(ctx)):
            return "stale", f"Label Studio may hold new adjudications: {changed}"
        return state, reason

    return check
