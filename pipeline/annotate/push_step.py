"""The `push` step: every catalog session's rows as tasks in every annotator's own Label Studio projects.

Push gives every annotator their own projects (independent labels): the roster
(`roster.counted_annotators`), plus what the project's extensions add through the `push-roster` hook: in the
demo, while the stored sample annotations are in play, the sample's annotators (their projects must exist
before their stored answers can land there) but not its adjudicator (pipeline/annotate/sample_steps.py)."""

from __future__ import annotations

from pipeline.annotate.build_session import ServerSession
from pipeline.annotate.drafted import drafts_origin
from pipeline.annotate.guards import guards_of
from pipeline.annotate.integrity_notes import push_notes
from pipeline.annotate.push import draft_notes, push_rows
from pipeline.annotate.roster import counted_annotators, stranger_line
from pipeline.annotate.server_step import LS, NOTHING_CHANGED, by_server
from pipeline.annotate.tasks import session_video
from pipeline.preannotate.drafts import drafts_path
from pipeline.step import Context, Inputs, Step, StepDetail, file_sha

PUSHED_SETTINGS = {"schema_file", "context_rows", "media_url"}


class PushDetail(StepDetail):
    """What push keeps: the projects it made (title -> [project id, tasks]) and for whom."""

    projects: dict[str, tuple[int, int]] = {}
    annotators: tuple[str, ...] = ()
    imported: int = 0


def push_inputs(ctx: Context) -> Inputs:
    media = {sid: session_video(ctx.project, sid) for sid in ctx.rows}
    drafts = {sid: file_sha(drafts_path(ctx.project.build, sid)) for sid in ctx.rows}  # new drafts push again
    settings = ctx.settings.annotate.model_dump(mode="json", include=PUSHED_SETTINGS)
    return Inputs("push", PUSH.version, dict(rows=ctx.rows, media=media, schema=ctx.schema_sha, drafts=drafts,
                                             settings=settings), ("annotate",))


def push_fingerprint(ctx: Context) -> str:
    return push_inputs(ctx).fingerprint()


def push_out_of_date(ctx: Context) -> str | None:
    """Why push must run against the server, or None when its inputs are those of its last run."""
    return None if ctx.last_done("push", push_fingerprint(ctx)) else "rows or push settings changed"


def _projects_unchanged(server: ServerSession, recorded: dict[str, tuple[int, int]]) -> bool:
    """The projects push made last time (title -> id, tasks) are still there with the same number of tasks."""
    if not recorded:
        return False
    for title, (project_id, tasks) in recorded.items():
        info = server.client.find_project(title)
        if info is None or info.id != project_id or info.task_number != tasks:
            return False
    return True


def push_roster(ctx: Context, server: ServerSession) -> tuple[str, ...]:
    """Who gets annotation projects in this build (see the module's doc)."""
    roster = set(counted_annotators(ctx.project, ctx.agreement.annotators, ctx.agreement.adjudicators))
    for hook in ctx.hooks("push-roster"):  # the demo's extension adds the stored sample's annotators
        roster = hook(ctx, roster)
    return tuple(sorted(roster))


def push_step(ctx: Context) -> None:
    server = ctx.build.server
    if server is None:  # the server step found nothing there that can have changed
        ctx.record("push", "up to date", NOTHING_CHANGED, [drafts_origin(ctx.project.build, tuple(ctx.rows))])
        return
    inputs = push_inputs(ctx)
    roster = push_roster(ctx, server)
    done = PushDetail.of(ctx.last_done_with(inputs))
    if done is not None and done.annotators == roster and _projects_unchanged(server, done.projects):
        guards = guards_of(ctx.project, server.client, ctx.agreement.annotators, ctx.agreement.adjudicators)
        ctx.record("push", "up to date", f"every row already has its task in the projects of {len(roster)} "
                                         "annotator(s)", [drafts_origin(ctx.project.build, tuple(ctx.rows)),
                                                          *(stranger_line(s) for s in guards.strangers)])
        return
    summary = push_rows(ctx.project, server.connection, settings=ctx.settings.annotate, schema=ctx.schema,
                        annotators=roster)
    projects = {p.title: (p.project_id, server.client.project(p.project_id).task_number) for p in summary.projects}
    ctx.done("push", inputs, PushDetail(projects=projects, annotators=roster, imported=summary.imported))
    parts = ", ".join(f"{scenario} {count}" for scenario, count in summary.scenario_imported().items()) or "none"
    notes = [f"{p.title}: {p.stale} task(s) whose row no longer exists (pull re-anchors their annotations by "
             "time overlap, or quarantines them with the reason)" for p in summary.projects if p.stale]
    notes += [f"{p.title}: {p.duplicates} duplicate task(s) for one row (see `rescue push --full-check`)"
              for p in summary.projects if p.duplicates]
    notes += [drafts_origin(ctx.project.build, tuple(ctx.rows)), *draft_notes(summary), *push_notes(summary)]
    if not roster:
        notes.append("no annotators yet: add them with `rescue annotators add EMAIL...`")
    if summary.sessions_without_rows:
        notes.append(f"no rows yet: {', '.join(summary.sessions_without_rows)}")
    already = sum(p.already_present for p in summary.projects)
    ctx.record("push", "ran", f"{summary.imported} task(s) imported ({parts}), {already} already there, in the own "
                              f"projects of {len(roster)} annotator(s) -> {server.connection.url}/projects/", notes)


# push version "3": tasks record the draft they show in their meta (pipeline/annotate/drafted.py)
PUSH = Step("push", push_step, after=("server",), settings=("annotate",), sources="annotation_schemas/",
            outputs=("Label Studio projects and tasks", "build/labelstudio/media/"),
            summary="rows -> tasks in every annotator's own project (matched by row id, never duplicated)",
            version="3", needs=LS, after_sessions=True, server_check=push_out_of_date,
            check=by_server("push", push_inputs))
