"""Whether each corpus step is up to date, computed without running anything (for `rescue status`).

Each check uses the step's own inputs (the same `Inputs` its body fingerprints) and the one rule of
`pipeline.step.judge`. What only the server can tell (its projects, exports) is judged by the
server's database stamp, as the build does before it opens the server: when the server may have changed,
every step that reads it is stale, and the reason says so.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.agreement.inputs import latest_annotations
from pipeline.catalog import load_catalog
from pipeline.corpus.server_step import server_changed
from pipeline.corpus.context import CorpusContext
from pipeline.corpus.gold_steps import (adjudicate_inputs, adjudicate_outputs, agree_inputs, agree_outputs, gold_inputs,
                                        gold_outputs)
from pipeline.corpus.release_step import freeze_freshness
from pipeline.corpus.server_steps import pull_out_of_date, push_inputs
from pipeline.corpus.state import damaged_outputs, read_state
from pipeline.corpus.stored import Kind, load_stored
from pipeline.step import Freshness, Inputs, State, judge
from pipeline.engine.steps import CORPUS_STEPS, STEPS
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.settings import NO_OVERRIDES, SettingsOverrides
from pipeline.transcripts import rows_path

Check = Callable[[CorpusContext], tuple[State, str]]


def _by_server(ctx: CorpusContext, step: str, inputs: Inputs | None = None) -> tuple[State, str]:
    """A step that reads Label Studio: its own inputs first, then whether the server may have changed."""
    run = read_state(ctx.project, step)
    if inputs is not None:
        state, reason = judge(run, inputs)
    elif run is None:
        state, reason = "pending", "it never ran"
    elif run.status == "failed":
        state, reason = "failed", run.error
    else:
        state, reason = "done", ""
    if state == "done" and (changed := server_changed(ctx)):
        return "stale", f"Label Studio may have changed: {changed}"
    return state, reason


def _server(ctx: CorpusContext) -> tuple[State, str]:
    return _by_server(ctx, "server")


def _push(ctx: CorpusContext) -> tuple[State, str]:
    return _by_server(ctx, "push", push_inputs(ctx))


def _sample(step: str, kind: Kind) -> Check:
    def check(ctx: CorpusContext) -> tuple[State, str]:  # as `apply_step` decides what it has to do
        if not ctx.settings.build.sample_annotations:
            return "done", "skipped: sample_annotations = false in [tool.rescue.build]"
        if not any(export.sessions() & set(ctx.rows) for export in load_stored(kind).values()):
            return "done", "not needed: no session of the stored sample export is in the catalog"
        return _by_server(ctx, step)

    return check


def _pull(ctx: CorpusContext) -> tuple[State, str]:
    state, reason = _by_server(ctx, "pull")
    if state == "done" and (why := pull_out_of_date(ctx)):
        return "stale", why
    return state, reason


def _with_snapshot(step: str, inputs_of: Callable, outputs_of: Callable[[CorpusContext], list],  # type: ignore[type-arg]
                   server: bool = False) -> Check:
    def check(ctx: CorpusContext) -> tuple[State, str]:
        try:
            snapshot = latest_annotations(ctx.project)
        except RescueError as exc:
            return "blocked", exc.message
        run = read_state(ctx.project, step)
        inputs = inputs_of(ctx, snapshot)
        damaged = damaged_outputs(ctx.project, run, outputs_of(ctx)) if run is not None and run.status == "done" else []
        state, reason = judge(run, inputs, damaged)
        if server and state == "done" and (changed := server_changed(ctx)):  # its round trip reads the server
            return "stale", f"Label Studio may hold new adjudications: {changed}"
        return state, reason

    return check


CHECKS: dict[str, Check] = {
    "server": _server,
    "push": _push,
    "sample-annotations": _sample("sample-annotations", "annotation"),
    "pull": _pull,
    "adjudicate": _with_snapshot("adjudicate", adjudicate_inputs, adjudicate_outputs, server=True),
    "sample-adjudications": _sample("sample-adjudications", "adjudication"),
    "agree": _with_snapshot("agree", agree_inputs, agree_outputs),
    "gold": _with_snapshot("gold", gold_inputs, gold_outputs),
    "freeze": freeze_freshness,
}


def corpus_freshness(project: Project, overrides: SettingsOverrides = NO_OVERRIDES) -> list[Freshness]:
    """Every corpus step's state and why, in graph order; a step whose upstream step never ran or failed is
    blocked (its inputs do not exist yet)."""
    rows = [rows_path(project, item.entry.session_id) for item in load_catalog(project)]
    if not any(path.is_file() and path.stat().st_size for path in rows):
        return [Freshness(step=name, state="blocked", reason="no catalog session has transcript rows yet")
                for name in CORPUS_STEPS]
    try:
        ctx = CorpusContext.load(project, overrides)
    except RescueError as exc:  # e.g. no annotation schema yet: the build would stop on it too
        return [Freshness(step=name, state="blocked", reason=exc.message) for name in CORPUS_STEPS]
    found: dict[str, Freshness] = {}
    for name in CORPUS_STEPS:
        held = [f"{up} ({found[up].state})" for up in STEPS[name].after
                if up in found and found[up].state in ("pending", "failed", "blocked")]
        run = read_state(project, name)
        if held and (run is None or run.status == "done"):
            state, reason = "blocked", f"waiting for {', '.join(held)}"
        else:
            state, reason = CHECKS[name](ctx)
        found[name] = Freshness(step=name, state=state, reason=reason)
    return list(found.values())
