"""Ingest one session: validate and hash the source, probe it, cut the clip, extract 16 kHz audio and
thumbnails. A pure function of the catalog entry and settings; writes only into `workdir`."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import RescueError
from pipeline.media import ffmpeg_adapter
from pipeline.media.frames import extract_keyframes, keyframe_times
from pipeline import layout
from pipeline.project import Project
from pipeline.records import CatalogEntry, Keyframe, SessionMedia
from pipeline.settings import IngestSettings
from pipeline.store import sha256_file

RECORD_NAME = layout.MEDIA_RECORD
# Containers report durations rounded to a frame or an audio packet.
_END_SLACK = 0.05


def check_source(project: Project, entry: CatalogEntry) -> Path:
    """The source exists, is not empty and has the catalog's sha256."""
    source = project.abs(entry.video)
    where = f"session {entry.session_id}"
    if source.is_dir():
        raise RescueError(f"{where}: video {entry.video} is a folder, not a video file",
                          "put the video file's path (inside that folder) in the `video` column of its sessions.csv")
    if not source.is_file():
        raise RescueError(f"{where}: video {entry.video} not found",
                          "place the file there, or correct the `video` column of its sessions.csv")
    if source.stat().st_size == 0:
        raise RescueError(f"{where}: video {entry.video} is empty (0 bytes)", "copy or download the video again")
    actual = sha256_file(source)
    if actual != entry.sha256:
        raise RescueError(
            f"{where}: sha256 of {entry.video} is {actual}, the catalog says {entry.sha256}",
            "restore the original file; if the new file is intended, put its sha256 in the catalog",
        )
    if entry.subtitles and project.abs(entry.subtitles).is_dir():
        raise RescueError(f"{where}: subtitles {entry.subtitles} is a folder, not a subtitle file",
                          "put the SRT/VTT file's path in the `subtitles` column, or clear it")
    if entry.subtitles and not project.abs(entry.subtitles).is_file():
        raise RescueError(f"{where}: subtitles {entry.subtitles} not found",
                          "place the file there, or clear the `subtitles` column")
    return source


def check_span(entry: CatalogEntry, probe: ffmpeg_adapter.Probe, settings: IngestSettings) -> tuple[float, float]:
    """The session's [start, end) within the source: the clip boundaries, or the whole file."""
    where = f"session {entry.session_id}: {entry.video}"
    if probe.duration <= 0:
        raise RescueError(f"{where} has zero duration", "the file holds no media: copy or download it again")
    if probe.audio is None:
        raise RescueError(f"{where} has no audio stream",
                          "use a source with its soundtrack; speech stages need audio")
    if entry.clip_start is None or entry.clip_end is None:
        return 0.0, probe.duration
    if entry.clip_end > probe.duration + _END_SLACK:
        raise RescueError(
            f"{where}: clip {entry.clip_start:g}-{entry.clip_end:g} s ends after the media ({probe.duration:.3f} s)",
            "correct clip_start/clip_end in the catalog",
        )
    if entry.clip_end - entry.clip_start < settings.min_clip_seconds:
        raise RescueError(
            f"{where}: clip is {entry.clip_end - entry.clip_start:.1f} s, shorter than min_clip_seconds "
            f"({settings.min_clip_seconds:g} s; the paper drops clips under 2 minutes)",
            "widen the clip, or lower [tool.rescue.ingest] min_clip_seconds",
        )
    return entry.clip_start, min(entry.clip_end, probe.duration)


def ingest_session(project: Project, entry: CatalogEntry, settings: IngestSettings,
                   workdir: Path, final_dir: Path) -> SessionMedia:
    """Write audio.wav, keyframes/ and (for clips) video.mp4 into `workdir`; record paths use `final_dir`."""
    source = check_source(project, entry)
    probe = ffmpeg_adapter.probe(source)
    start, end = check_span(entry, probe, settings)
    assert probe.audio is not None  # check_span guarantees it

    def final(path: Path) -> str:
        return project.rel(final_dir / path.relative_to(workdir)) if path.is_relative_to(workdir) else project.rel(path)

    session_video = source
    if entry.is_clip:
        session_video = workdir / "video.mp4"
        ffmpeg_adapter.cut_clip(source, session_video, start=start, end=end, has_video=probe.video is not None)

    samples = ffmpeg_adapter.extract_audio(
        source, workdir / "audio.wav", sample_rate=settings.audio_sample_rate,
        start=start if entry.is_clip else None, end=end if entry.is_clip else None,
    )
    missing = (end - start) - samples / settings.audio_sample_rate
    if missing > settings.truncation_tolerance:
        raise RescueError(
            f"session {entry.session_id}: {entry.video} is truncated: audio stops {missing:.1f} s before "
            f"the {end - start:.1f} s the container declares",
            "copy or download the video again (or re-encode it with ffmpeg if the declared length is wrong)",
        )

    frames: list[Keyframe] = []
    if probe.video is not None:
        times = keyframe_times(end - start, settings.keyframe_interval)
        for time, path in extract_keyframes(session_video, workdir / "keyframes", times, settings.keyframe_width):
            frames.append(Keyframe(time=time, path=final(path)))

    media = SessionMedia(
        session_id=entry.session_id,
        scenario=entry.scenario,
        participants=entry.participants,
        source_video=entry.video,
        source_sha256=entry.sha256,
        container=probe.container,
        source_duration=probe.duration,
        video_stream=probe.video,
        audio_stream=probe.audio,
        clip_start=start,
        clip_end=end,
        session_video=final(session_video),
        audio=final(workdir / "audio.wav"),
        audio_sample_rate=settings.audio_sample_rate,
        audio_samples=samples,
        keyframes=tuple(frames),
        subtitles=entry.subtitles,
    )
    (workdir / RECORD_NAME).write_text(media.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return media
