"""Ingest on real media made with ffmpeg: outputs, clip cutting, and every kind of bad input."""

from __future__ import annotations

import wave
from collections.abc import Callable
from pathlib import Path

import ffmpeg
import pytest

from pipeline.catalog import COLUMNS, append_entry
from pipeline.engine.context import StepContext
from pipeline.engine.runner import read_run, run_stage, session_status
from pipeline.engine.session_steps import INGEST
from pipeline.project import Project
from pipeline.records import CatalogEntry, SessionMedia
from pipeline.store import read_jsonl, sha256_file
from tests.conftest import tree_digest
from tests.media import make_video


def ingest(project: Project):  # noqa: ANN201 - StageReport
    context = StepContext.load(project)
    return run_stage(context, INGEST, list(context.catalog))


def media_of(project: Project, session_id: str) -> SessionMedia:
    return SessionMedia.model_validate_json((project.build / "media" / session_id / "media.json").read_text())


def test_ingest_writes_audio_keyframes_and_manifest(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("show/s1", 25.0, size="320x180")
    report = ingest(project)
    assert report.ran == ["show/s1"] and not report.failed
    media = media_of(project, "show/s1")
    assert media.source_video == "raw_video/show_s1.mp4" and media.session_video == media.source_video
    assert media.video_stream is not None and media.video_stream.codec == "h264"
    assert (media.video_stream.width, media.video_stream.height, media.video_stream.fps) == (320, 180, 10.0)
    assert media.audio_stream.codec == "aac"
    assert media.clip_start == 0 and media.source_duration == pytest.approx(25.0, abs=0.1)
    with wave.open(str(project.abs(media.audio))) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (16_000, 1, 2)
        assert wav.getnframes() == media.audio_samples
        assert wav.getnframes() / 16_000 == pytest.approx(25.0, abs=0.1)
    assert [k.time for k in media.keyframes] == [5.0, 15.0]  # mid-points of 10 s windows
    for frame in media.keyframes:
        assert project.abs(frame.path).stat().st_size > 1000
        assert ffmpeg.probe(str(project.abs(frame.path)))["streams"][0]["width"] == 320
    manifest = read_jsonl(project.build / "manifests" / "ingest.jsonl", SessionMedia)
    assert manifest == [media]


def test_clip_boundaries_cut_the_session(project: Project) -> None:
    video = make_video(project.raw_video / "ep.mp4", 12.0)
    entry = CatalogEntry(session_id="ep/seg02", scenario="couple", participants=("A", "B"),
                         video=project.rel(video), sha256=sha256_file(video), clip_start=3.0, clip_end=9.5)
    append_entry(project, project.main_catalog, entry)
    (project.root / "pyproject.toml").write_text("[tool.rescue.ingest]\nmin_clip_seconds = 5\n")
    assert ingest(project).ran == ["ep/seg02"]
    media = media_of(project, "ep/seg02")
    assert (media.clip_start, media.clip_end) == (3.0, 9.5)
    assert media.session_video == "build/media/ep/seg02/video.mp4"
    clip = ffmpeg.probe(str(project.abs(media.session_video)))
    assert float(clip["format"]["duration"]) == pytest.approx(6.5, abs=0.15)
    assert media.audio_samples / 16_000 == pytest.approx(6.5, abs=0.05)


def _corrupt(path: Path) -> None:
    path.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 6 // 10])


BAD_INPUTS: dict[str, tuple[Callable[[Path], None], dict[str, object], str, str]] = {
    # name: (damage done after cataloguing, media options, error text, fix text)
    "missing file": (lambda p: p.unlink(), {}, "not found", "place the file there"),
    "zero-length": (lambda p: p.write_bytes(b""), {}, "is empty (0 bytes)", "copy or download"),
    "corrupt": (_corrupt, {}, "cannot read media", "corrupt or truncated"),
    "truncated, index at the end": (_truncate, {"faststart": False}, "cannot read media", "corrupt or truncated"),
    "truncated, index in front": (_truncate, {}, "is truncated: audio stops", "copy or download"),
    "no audio stream": (lambda p: None, {"audio": False}, "has no audio stream", "soundtrack"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_video_fails_clearly_and_leaves_other_sessions_alone(
        project: Project, add_video: Callable[..., CatalogEntry], case: str) -> None:
    damage, media_options, error, fix = BAD_INPUTS[case]
    add_video("good", 3.0)
    assert ingest(project).ran == ["good"]
    good_outputs = tree_digest(project.build / "media" / "good")
    manifest_before = (project.build / "manifests" / "ingest.jsonl").read_bytes()

    entry = add_video("bad", 8.0, **media_options)
    path = project.abs(entry.video)
    damage(path)
    if path.exists() and case != "no audio stream":
        # The catalog holds the hash of the damaged file: this test is about the media, not the checksum.
        text = project.main_catalog.read_text().replace(entry.sha256, sha256_file(path))
        project.main_catalog.write_text(text)

    report = ingest(project)
    assert list(report.failed) == ["bad"] and report.up_to_date == ["good"]
    message = report.failed["bad"]
    assert error in message and fix in message and "bad" in message
    assert entry.video in message or str(path) in message
    assert not (project.build / "media" / "bad").exists()
    assert not [p for p in project.build.rglob("*") if ".tmp-" in p.name]
    assert tree_digest(project.build / "media" / "good") == good_outputs
    assert (project.build / "manifests" / "ingest.jsonl").read_bytes() == manifest_before
    context = StepContext.load(project)
    assert session_status(context, INGEST, context.select(["bad"])[0]).state == "failed"


def test_checksum_mismatch_is_refused(project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    entry = add_video("s1", 3.0)
    make_video(project.abs(entry.video), 3.5)  # the file was swapped behind the catalog's back
    report = ingest(project)
    message = report.failed["s1"]
    assert f"sha256 of {entry.video} is" in message and f"the catalog says {entry.sha256}" in message
    assert "restore the original file" in message
    assert not (project.build / "media" / "s1").exists()


def test_clip_outside_the_media_is_refused(project: Project) -> None:
    video = make_video(project.raw_video / "short.mp4", 5.0)
    header = ",".join(COLUMNS)
    project.main_catalog.write_text(f"{header}\nshort,couple,A;B,short.mp4,{sha256_file(video)},,2,200,\n")
    message = ingest(project).failed["short"]
    assert "clip 2-200 s ends after the media (5.0" in message and "clip_start/clip_end" in message
    assert not (project.build / "media" / "short").exists()


def test_missing_subtitles_are_named(project: Project) -> None:
    video = make_video(project.raw_video / "v.mp4", 2.0)
    header = ",".join(COLUMNS)
    project.main_catalog.write_text(f"{header}\nv,couple,A;B,v.mp4,{sha256_file(video)},v.srt,,,\n")
    assert "subtitles raw_video/v.srt not found" in ingest(project).failed["v"]


def test_a_failure_after_success_keeps_the_last_good_output(project: Project,
                                                            add_video: Callable[..., CatalogEntry]) -> None:
    entry = add_video("s1", 3.0)
    ingest(project)
    before = tree_digest(project.build / "media" / "s1")
    project.abs(entry.video).write_bytes(b"")
    assert "is empty" in ingest(project).failed["s1"]
    assert tree_digest(project.build / "media" / "s1") == before
    run = read_run(project, INGEST, "s1")
    assert run is not None and run.status == "failed"
