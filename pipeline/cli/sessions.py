"""`rescue sample` (the built-in synthetic sessions) and `rescue add-session` (a video into the catalog)."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli.console import console, err_console, line, styled
from pipeline.cli.options import overrides_of, project_of
from pipeline.errors import RescueError


@click.command()
@click.option("--force", is_flag=True, help="Regenerate even if the sample files are present and intact.")
@click.pass_context
def sample(ctx: click.Context, force: bool) -> None:
    """Make the built-in synthetic sample sessions (couple + family) in raw_video/sample/."""
    from pipeline.sample_sessions import install_samples

    project = project_of(ctx)
    with console.status("synthesising sample sessions (espeak-ng, OpenCV, ffmpeg)..."):
        entries, made = install_samples(project, force=force)
    verb = "made" if made else "already present (use --force to remake)"
    console.print(f"sample sessions {verb}:", highlight=False)
    for entry in entries:
        console.print(f"  {entry.session_id}  {entry.video}  ({entry.scenario}: {', '.join(entry.participants)})",
                      highlight=False)


@click.command("add-session")
@click.argument("video", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--id", "session_id", required=True, help="Session id, e.g. alan_and_evelyn/001_s01e01_ct25_segment04.")
@click.option("--scenario", required=True, type=click.Choice(["couple", "family"]))
@click.option("--participant", "-p", "participants", multiple=True, required=True,
              help="An on-screen client's name (repeat for each; the therapist is implicit unless --no-therapist).")
@click.option("--therapist/--no-therapist", default=True, show_default=True,
              help="Whether a therapist speaks in the session; --no-therapist writes therapist=no in the catalog, "
                   "so diarization expects only the participants' voices and no row is named Therapist.")
@click.option("--subtitles", type=click.Path(dir_okay=False, path_type=Path), help="SRT/VTT file inside raw_video/.")
@click.option("--clip", nargs=2, type=str, default=None, metavar="START END",
              help="Cut the session from the video: seconds or HH:MM:SS[.mmm].")
@click.option("--source", default="", help="Free-text provenance (show, episode, licence).")
@click.option("--catalog", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Catalog file to append to (default raw_video/sessions.csv).")
@click.pass_context
def add_session(ctx: click.Context, video: Path, session_id: str, scenario: str, participants: tuple[str, ...],
                subtitles: Path | None, clip: tuple[str, str] | None, source: str, catalog: Path | None,
                therapist: bool) -> None:
    """Validate a video inside raw_video/, hash it and add it to the catalog.

    A relative VIDEO, --subtitles or --catalog path is read from the project root (--root), else from the
    current folder."""
    from pipeline.catalog import parse_time
    from pipeline.media.register import register_session
    from pipeline.settings import load_settings

    project = project_of(ctx)
    try:
        span = (parse_time(clip[0]), parse_time(clip[1])) if clip else None
    except ValueError as exc:
        raise RescueError(f"--clip {' '.join(clip or ())}: not seconds or HH:MM:SS", "e.g. --clip 12.5 150") from exc
    entry = register_session(
        project, video=video, session_id=session_id, scenario=scenario, participants=list(participants),
        settings=load_settings(project.root, overrides_of(ctx)).ingest, subtitles=subtitles, clip=span,
        source=source, catalog=catalog, therapist=therapist,
    )
    voices = f"{len(entry.participants)} voice(s), no therapist" if not therapist else \
        f"{len(entry.participants) + 1} voice(s) with the therapist"
    console.print(f"added {entry.session_id} ({entry.video}, sha256 {entry.sha256[:12]}…, {voices}); "
                  "run `rescue build` to process it", highlight=False)
    from pipeline.catalog import load_catalog, shared_videos

    for warning in shared_videos((item.entry for item in load_catalog(project)), entry.session_id):
        err_console.print(line(styled("warning:", "yellow"), f" {warning}"))
