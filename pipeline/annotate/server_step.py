"""The `server` step: open Label Studio for the build only when something there can have changed.

Its input is the server's content: an external or running server may have changed at any time; the embedded
server, stopped, has changed when its database files differ from the stamp the last build recorded after
stopping it. The engine asks each planned step that reads the server whether its own inputs changed
(`Step.server_check`), and this step opens the server when either says so (`ctx.build.server_reason`). The engine
closes it after the last planned step that reads it (`close_server`), which records the new stamp.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.annotate import server as ls_server
from pipeline.annotate.build_session import database_stamp, open_server, quiet_server
from pipeline.step import LABEL_STUDIO, Check, Context, Inputs, Resource, State, Step, StepDetail, judge, last_run_state
from pipeline.store import StepRun

LS = (LABEL_STUDIO,)  # what the steps that read the server need
NOTHING_CHANGED = "nothing can have changed on the server"


class ServerDetail(StepDetail):
    """What the server step keeps: the embedded server's database stamp after the build stopped it (None: it
    was not stopped here), where it was, and whether this build stopped it."""

    stamp: list[tuple[str, int, int]] | None = None  # (file name, size, mtime_ns) of each SQLite file
    url: str = ""
    stopped: bool = False


def server_changed(ctx: Context) -> str | None:
    """Why the server's content may differ from what the last build saw (an input of every step that reads
    the server: the embedded server's database stamp), or None."""
    reason = quiet_server(ctx.project)
    if reason:
        return reason
    last = ctx.last_run("server")
    if last is None or last.status != "done":
        return "no earlier build finished its Label Studio steps"
    detail = ServerDetail.of(last)
    if detail is None or detail.stamp != database_stamp(ls_server.ServerPaths.of(ctx.project)):
        return "Label Studio's database changed since the last build"
    return None


def server_step(ctx: Context) -> None:
    reason = ctx.build.server_reason
    if reason is None:
        ctx.record("server", "not needed", "Label Studio's database is unchanged since the last build")
        return
    ctx.write_run(StepRun(step="server", status="failed", error="Label Studio steps unfinished"))
    ctx.build.server = open_server(ctx.project, ctx.settings.annotate)
    ctx.record("server", "ran" if ctx.build.server.started_here else "up to date",
               f"{ctx.build.server.how}; asked because {reason}")


def close_server(ctx: Context, *, record: bool = True) -> None:
    """Stop the server if this build started it; with `record`, note the database stamp it leaves (the next
    build compares it). A build that failed on the way closes it without a record: the next build asks again."""
    session, ctx.build.server = ctx.build.server, None
    if session is None:
        return
    stopped = session.close()
    if record:
        stamp = database_stamp(session.paths) if stopped else None
        ctx.done("server", "", ServerDetail(stamp=stamp, url=session.connection.url, stopped=stopped))


def by_server(step: str, inputs_of: Callable[[Context], Inputs] | None = None) -> Check:
    """The `check` of a step that reads Label Studio: its own inputs first (when it names them), then whether
    the server may have changed."""

    def check(ctx: Context) -> tuple[State, str]:
        run = ctx.last_run(step)
        state, reason = judge(run, inputs_of(ctx)) if inputs_of is not None else last_run_state(run)
        if state == "done" and (changed := server_changed(ctx)):
            return "stale", f"Label Studio may have changed: {changed}"
        return state, reason

    return check


SERVER_RESOURCE = Resource(LABEL_STUDIO, changed=server_changed, close=close_server)
SERVER = Step(
    "server", server_step, after=(), settings=("annotate",),
    sources="LABEL_STUDIO_URL, or the embedded server's database",
    outputs=("build/state/corpus/server.json",),
    summary="open Label Studio only when something there can have changed (its database stamp is the input)",
    needs=(LABEL_STUDIO,), after_sessions=True, check=by_server("server"))  # its last run, and the server's content
