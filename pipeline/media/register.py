"""Add a researcher's video to a catalog: validate the path, probe the media, hash it, append a line."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from pipeline.catalog import append_entry
from pipeline.errors import RescueError, describe_validation
from pipeline.media import ffmpeg_adapter
from pipeline.media.ingest import check_span
from pipeline.project import Project, lexical
from pipeline.records import CatalogEntry
from pipeline.settings import IngestSettings
from pipeline.store import sha256_file


def given_path(project: Project, path: Path) -> Path:
    """A path typed on the command line: a relative one is read from the project root (`--root`), else from
    the current folder, so `rescue --root DIR add-session raw_video/x.mkv` means DIR's raw_video/."""
    if path.is_absolute():
        return lexical(path)
    for base in (project.root, Path.cwd()):
        if (base / path).exists():
            return lexical(base / path)
    return lexical(project.root / path)


def _inside_raw_video(project: Project, path: Path, what: str) -> Path:
    full = given_path(project, path)
    if not full.is_relative_to(project.raw_video):
        raise RescueError(f"{what} {path} is outside {project.raw_video}/",
                          "move or symlink the file into raw_video/ first (see raw_video/README.md)")
    if full.is_dir():
        raise RescueError(f"{what} {path} is a folder, not a file", f"name the {what} file inside it")
    if not full.is_file():
        tried = dict.fromkeys(str(lexical(base / path)) for base in (project.root, Path.cwd()))
        raise RescueError(f"{what} {path} not found" + ("" if path.is_absolute() else f" (looked for {' and '.join(tried)})"),
                          "check the path; a relative path is read from the project root, else the current folder")
    return full


def register_session(project: Project, *, video: Path, session_id: str, scenario: str,
                     participants: list[str], settings: IngestSettings, subtitles: Path | None = None,
                     clip: tuple[float, float] | None = None, source: str = "",
                     catalog: Path | None = None, therapist: bool = True) -> CatalogEntry:
    """Validate everything ingest would, then append the session to `catalog` (default raw_video/sessions.csv).
    `therapist=False`: only the participants speak (the catalog's `therapist` column says no)."""
    video_path = _inside_raw_video(project, video, "video")
    if video_path.stat().st_size == 0:
        raise RescueError(f"video {video} is empty (0 bytes)", "copy or download the video again")
    subtitle_path = _inside_raw_video(project, subtitles, "subtitles") if subtitles else None
    try:
        entry = CatalogEntry(
            session_id=session_id,
            scenario=scenario,  # type: ignore[arg-type]
            participants=tuple(participants),
            video=project.rel(video_path),
            sha256=sha256_file(video_path),
            subtitles=project.rel(subtitle_path) if subtitle_path else None,
            clip_start=clip[0] if clip else None,
            clip_end=clip[1] if clip else None,
            source=source,
            therapist=therapist,
        )
    except ValidationError as exc:
        raise RescueError(f"cannot add session {session_id!r}: {describe_validation(exc)}",
                          "correct the options; see `rescue add-session --help`") from exc
    check_span(entry, ffmpeg_adapter.probe(video_path), settings)
    append_entry(project, given_path(project, catalog) if catalog else project.main_catalog, entry)
    return entry
