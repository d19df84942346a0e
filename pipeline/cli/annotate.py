"""The thin CLI of the annotation family: `rescue labelstudio up|down|status`, `rescue annotators add|list`,
`rescue push`, `rescue pull`. Heavy imports stay inside the functions so `rescue --help` stays fast."""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.cli.aliases import ran_as_build_step, standalone_option
from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.lock import writer
from pipeline.cli.options import overrides_of, project_of
from pipeline.project import Project


def _settings(project: Project):  # noqa: ANN202 - AnnotateSettings, imported lazily
    from pipeline.settings import load_settings

    return load_settings(project.root).annotate


@click.group("labelstudio")
def labelstudio_group() -> None:
    """Run the embedded Label Studio server (SQLite under build/labelstudio/, 127.0.0.1 only)."""


@labelstudio_group.command("up")
@click.pass_context
@writer
def up(ctx: click.Context) -> None:
    """Start the server on a free local port and wait until it is healthy (first start: ~70 s), with the
    annotators' gateway in front of it; prints the gateway's URL, the one to give annotators.

    The media of every session with rows are published into the server's media root first."""
    from pipeline.annotate import server
    from pipeline.annotate.push import load_sessions, serve_media
    from pipeline.annotate.server_owner import read_owner, record_owner, stop_strays

    project = project_of(ctx)
    paths = server.ServerPaths.of(project)
    settings = _settings(project)
    if settings.media_url is None:  # what earlier pushes' tasks show (also after an upgrade)
        serve_media(project, load_sessions(project)[0])
    stop_strays(paths)  # a server whose start was interrupted would share the database with the new one
    before = server.running(paths)
    owner = read_owner(paths, before)
    with err_console.status("starting Label Studio (the first start migrates its database, ~70 s)..."):
        state = server.start_project_server(project, settings)
    if before is None or (owner is not None and owner.orphaned):  # ours now, left running on purpose
        record_owner(paths, state, "rescue labelstudio up", stops_when_done=False)
    console.print(f"annotators: give them {state.gateway_url} (the gateway: their own projects only; refusals "
                  f"in {project.rel_or_abs(paths.gateway_log)})", highlight=False)
    console.print(f"Label Studio itself runs at {state.url} (pid {state.pid}) for the pipeline and the admin: log in "
                  f"as {server.ADMIN_EMAIL}, password and API token in {project.rel_or_abs(paths.admin)} (mode 600)",
                  highlight=False)


@labelstudio_group.command("down")
@click.pass_context
@writer
def down(ctx: click.Context) -> None:
    """Stop the embedded server (its database stays in build/labelstudio/data/)."""
    from pipeline.annotate import server
    from pipeline.annotate.server_owner import forget_owner, stop_strays

    paths = server.ServerPaths.of(project_of(ctx))
    stopped = server.stop(paths) | bool(stop_strays(paths))
    forget_owner(paths)
    console.print("Label Studio stopped" if stopped else "Label Studio was not running")


@labelstudio_group.command("status")
@click.pass_context
def status(ctx: click.Context) -> None:
    """Say which server push and pull would use, and whether it answers."""
    from pipeline.annotate import server
    from pipeline.annotate.labelstudio import Client
    from pipeline.annotate.server_owner import server_report

    project = project_of(ctx)
    external = server.external_connection()
    if external is not None:
        _, email = Client(external).whoami()
        console.print(f"external server {external.url} (LABEL_STUDIO_URL), token of {email}", highlight=False)
        return
    paths = server.ServerPaths.of(project)
    report = server_report(paths)  # the recorded server, or one whose start was interrupted
    if report is None:
        console.print(f"embedded server: not running (data in {project.rel_or_abs(paths.data)}); "
                      "start it with `rescue labelstudio up`", highlight=False)
        return
    console.print(f"{report['message']}; log {project.rel_or_abs(paths.log)}", highlight=False)


@click.group("annotators")
def annotators_group() -> None:
    """Annotator accounts on the Label Studio server."""


@annotators_group.command("add")
@click.argument("emails", nargs=-1, required=True)
@click.option("--adjudicator", is_flag=True,
              help="Put the accounts on the roster as adjudicators: no annotation projects, answers only in the "
                   "adjudication projects.")
@click.pass_context
@writer
def annotators_add(ctx: click.Context, emails: tuple[str, ...], adjudicator: bool) -> None:
    """Create accounts for EMAILS and put them on the roster (build/labelstudio/roster.json, with the day each
    joined): only the roster's answers count. Generated passwords go to build/labelstudio/annotators.json (mode 600)."""
    from pipeline.annotate.accounts import add_annotators, passwords_file
    from pipeline.annotate.roster import roster_file
    from pipeline.annotate.server import connect

    project = project_of(ctx)
    role = "adjudicator" if adjudicator else "annotator"
    for account in add_annotators(project, connect(project), list(emails), role=role):
        console.print(f"{account.email}: {account.status} (user {account.user_id}), on the roster as {role}",
                      highlight=False)
    console.print(f"passwords: {project.rel_or_abs(passwords_file(project))} (mode 600); roster: "
                  f"{project.rel_or_abs(roster_file(project))}", highlight=False)


@annotators_group.command("list")
@click.pass_context
def annotators_list(ctx: click.Context) -> None:
    """List the accounts of the server's organisation, with their place on the roster."""
    from pipeline.annotate.labelstudio import Client
    from pipeline.annotate.roster import load_roster
    from pipeline.annotate.server import connect

    project = project_of(ctx)
    client = Client(connect(project))
    owner, _ = client.whoami()
    roster = {entry.email: entry for entry in load_roster(project)}
    for user_id, email, joined in sorted(client.accounts()):
        entry = roster.get(email)
        place = ("admin (the pipeline's token)" if user_id == owner else
                 f"{entry.role} since {entry.joined}" if entry else f"NOT on the roster (joined the server {joined})")
        console.print(f"{user_id}\t{email}\t{place}", highlight=False)


@click.command("push")
@click.argument("session_ids", nargs=-1)
@click.option("--full-check", is_flag=True,
              help="List every task on the server instead of trusting the local copy of the last listing "
                   "(standalone).")
@click.option("--recreate-deleted", is_flag=True,
              help="Make an annotator's project that was deleted on the server again, empty (standalone); pull keeps "
                   "their old answers until they answer again or `rescue pull --accept-deleted`.")
@standalone_option
@click.pass_context
@writer
def push(ctx: click.Context, session_ids: tuple[str, ...], full_check: bool, recreate_deleted: bool,
         standalone: bool) -> None:
    """Import transcript rows as Label Studio tasks: one project per scenario and annotator, each with every row
    (only rows without a task there are imported), so annotators label independently.

    This is `rescue build --only push`: the rows' steps first where out of date, the server opened by the build
    (a running one, LABEL_STUDIO_URL, or the embedded one started and stopped again). Standalone (--standalone,
    SESSION ids or --full-check): the rows there are now, to the server that runs now (`rescue labelstudio up`)."""
    from pipeline.annotate.integrity_notes import push_notes
    from pipeline.annotate.push import draft_notes, push_rows

    project = project_of(ctx)
    if ran_as_build_step(project, "push", overrides_of(ctx), standalone,
                         {"SESSION ids": session_ids, "--full-check": full_check,
                          "--recreate-deleted": recreate_deleted}):
        return
    progress = Progress(TextColumn("push {task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console, disable=not err_console.is_terminal)
    bars: dict[str, int] = {}

    def report(label: str, done: int, total: int) -> None:
        if label not in bars:
            bars[label] = progress.add_task(label, total=total)
        progress.update(bars[label], completed=done)

    with progress:
        summary = push_rows(project, session_ids=session_ids, progress=report, full_check=full_check,
                            recreate_deleted=recreate_deleted)
    for part in summary.projects:
        console.print(f"{part.scenario} / {part.annotator}: {part.imported} task(s) imported, {part.already_present} "
                      f"already there, {part.stale} stale, {part.duplicates} duplicate(s) -> {part.project_url}",
                      highlight=False)
    if not summary.annotators:
        console.print("no annotators yet: add their accounts with `rescue annotators add EMAIL...` (or list them in "
                      "[tool.rescue.agreement] annotators), then push again", highlight=False)
    if summary.sessions_without_rows:
        console.print(f"no rows yet (run `rescue build`): {', '.join(summary.sessions_without_rows)}",
                      highlight=False)
    if summary.rows_without_media:
        console.print(f"{summary.rows_without_media} row(s) have no media to show (run `rescue ingest`)")
    for note in draft_notes(summary):
        console.print(note, highlight=False)
    for note in push_notes(summary):
        console.print(styled(note, "yellow"), highlight=False)
    if summary.annotators and not summary.projects:
        console.print("nothing to push: no session has rows yet")


@click.command("pull")
@click.option("--accept-deleted", is_flag=True,
              help="Let go of the answers the server no longer has (deleted annotations or projects), which pulls "
                   "otherwise keep from the previous snapshot; the new snapshot records what was let go.")
@standalone_option
@click.pass_context
@writer
def pull(ctx: click.Context, accept_deleted: bool, standalone: bool) -> None:
    """Export the annotations, store them as a new snapshot and parse them into validated records.

    Answers another account changed are quarantined (the annotator's last own version is kept), answers of
    accounts not on the roster are quarantined, and answers gone from the server are kept from the previous
    snapshot until --accept-deleted. This is `rescue build --only pull` (push first where out of date; a new
    snapshot only when the exports or the rows changed). Standalone (--standalone): a snapshot of the server
    that runs now."""
    from pipeline.annotate.integrity_notes import pull_notes
    from pipeline.annotate.pull import QUARANTINE_FILE, pull_annotations
    from pipeline.settings import SettingsOverrides

    project = project_of(ctx)
    flags = SettingsOverrides.of("annotate", {"accept_deleted": True if accept_deleted else None})
    if ran_as_build_step(project, "pull", overrides_of(ctx) | flags, standalone, {}):
        return
    with err_console.status("exporting annotations from Label Studio..."):
        summary = pull_annotations(project, accept_deleted=accept_deleted)
    for part in summary.projects:
        console.print(f"{part.scenario} / {part.annotator or 'shared project'}: {part.tasks} tasks, "
                      f"{part.annotations} annotations "
                      f"({part.cancelled} skipped, {part.superseded} superseded by a later save of the same "
                      f"annotator), {len(part.annotators)} annotator(s) -> {part.records} records, "
                      f"{part.quarantined} quarantined", highlight=False)
        for detail in part.superseded_detail[:5]:
            console.print(f"  {detail}")
        if part.foreign:
            console.print(styled(f"  {part.foreign} annotation(s) by other accounts in {part.annotator}'s own "
                                 "project: quarantined, not merged", "yellow"))
        if part.reanchored or part.unplaced:
            console.print(f"  rows re-cut since annotation: {part.reanchored} annotation(s) re-anchored by time "
                          f"overlap, {part.unplaced} not placed (quarantined)", highlight=False)
    waited, parsed = summary.timings.get("wait_for_exports_s", 0.0), summary.timings.get("parse_s", 0.0)
    console.print(f"snapshot {summary.snapshot} -> {summary.folder}/ (waited {waited:.1f} s for the server's "
                  f"exports, parsed in {parsed:.1f} s)", highlight=False)
    if summary.quarantined:
        console.print(line(styled(f"{summary.quarantined} quarantined", "yellow"),
                           f": see {Path(summary.folder) / QUARANTINE_FILE}"))
    for note in pull_notes(summary):
        console.print(styled(note, "yellow"), highlight=False)
