"""Per-row clips: a session's clips are cut in few ffmpeg passes (not one process per row), and every clip
still starts and lasts what its row says, within one video frame. Real ffmpeg on a crafted video whose frames
carry their own index (brightness) and whose audio is seeded noise (sharp cross-correlation peak)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.catalog import append_entry
from pipeline.media import ffmpeg_adapter
from pipeline.project import Project
from pipeline.records import CatalogEntry, TranscriptRow, row_id_for
from pipeline.speech.transcript_stage import cut_clips
from pipeline.store import sha256_file
from tests.speech_fixtures import run_stages

FPS = 25
CYCLE = 50  # the frame index is written into the brightness modulo CYCLE (2 s at 25 fps)
SECONDS = 12.0
RATE = 16_000
SPANS = [(0.0, 1.237), (1.5, 3.013), (2.9, 4.4), (4.41, 4.47), (5.123, 7.891), (6.0, 6.66), (8.05, 9.999),
         (10.3, SECONDS)]  # unaligned to frames, overlapping, very short, up to the end


def _indexed_video(path: Path, *, video: bool = True) -> Path:
    """H.264 (one keyframe per 10 s, like broadcast video) whose frame N has luma (N mod CYCLE) * 5, plus
    seeded pink noise at 48 kHz in AAC."""
    args = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    if video:
        args += ["-f", "lavfi", "-i", f"color=c=black:s=64x48:r={FPS}:d={SECONDS},"
                 f"geq=lum='mod(N\\,{CYCLE})*5':cb=128:cr=128"]
    args += ["-f", "lavfi", "-i", f"anoisesrc=d={SECONDS}:c=pink:r=48000:a=0.3:seed=7"]
    if video:
        args += ["-c:v", "libx264", "-preset", "ultrafast", "-g", str(10 * FPS), "-pix_fmt", "yuv420p"]
    subprocess.run([*args, "-c:a", "aac", "-shortest", str(path)], check=True)
    return path


def _session(project: Project, session_id: str, *, video: bool) -> CatalogEntry:
    path = _indexed_video(project.raw_video / f"{session_id}.mp4", video=video)
    entry = CatalogEntry(session_id=session_id, scenario="couple", participants=("Ann", "Bob"),
                         video=project.rel(path), sha256=sha256_file(path))
    append_entry(project, project.main_catalog, entry)
    assert not run_stages(project, ("ingest",), (session_id,))["ingest"].failed
    return entry


def _rows(session_id: str) -> list[TranscriptRow]:
    return [TranscriptRow(row_id=row_id_for(session_id, s, e), session_id=session_id, row_index=i, start=s, end=e,
                          speaker="Ann", text="x") for i, (s, e) in enumerate(SPANS, 1)]


def _pcm(path: Path) -> np.ndarray:
    out = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-ac", "1", "-ar", str(RATE),
                          "-f", "s16le", "-"], capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype="<i2").astype(np.float64)


def _first_frame_index(path: Path) -> int:
    out = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-frames:v", "1", "-f", "rawvideo",
                          "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
    luma = np.frombuffer(out, dtype=np.uint8)[: 64 * 48]  # the Y plane as stored (gray would rescale TV range)
    return round(float(luma.mean()) / 5) % CYCLE


def _audio_offset(clip: np.ndarray, source: np.ndarray, expected: float) -> float:
    """Where in the source the clip's first 0.05 s of audio sits, searched +-0.3 s around `expected`."""
    probe = clip[: int(0.05 * RATE)]
    low = max(0, int((expected - 0.3) * RATE))
    window = source[low: low + int(0.6 * RATE) + probe.size]
    return (low + int(np.argmax(np.correlate(window, probe, "valid")))) / RATE


@pytest.mark.parametrize("video", [True, False], ids=["video", "audio-only"])
def test_every_clip_starts_and_lasts_as_its_row_within_one_frame(project: Project, tmp_path: Path,
                                                                 video: bool) -> None:
    entry = _session(project, "indexed", video=video)
    work = tmp_path / "work"
    work.mkdir()
    rows = cut_clips(project, entry, _rows("indexed"), work, project.session_dir("transcripts", "indexed"))
    source = _pcm(project.raw_video / "indexed.mp4")
    frame = 1 / FPS
    for row in rows:
        assert row.clip == f"build/transcripts/indexed/clips/{row.row_index:03d}.mp4"
        clip = work / "clips" / f"{row.row_index:03d}.mp4"
        probe = ffmpeg_adapter.probe(clip)
        assert (probe.video is not None) == video and probe.audio is not None
        span = row.end - row.start
        # each edge within one frame: MP4 durations count the last frame's full display time
        assert abs(probe.duration - span) <= 2 * frame + 1e-6, (row.row_index, probe.duration, span)
        if span >= 0.2:  # enough audio to find by correlation
            assert abs(_audio_offset(_pcm(clip), source, row.start) - row.start) <= frame, row.row_index
        if video:
            expected = int(np.ceil(row.start * FPS - 1e-6)) % CYCLE  # the first frame at or after the row start
            found = _first_frame_index(clip)
            assert min((found - expected) % CYCLE, (expected - found) % CYCLE) <= 1, (row.row_index, found, expected)


def test_a_sessions_clips_take_few_ffmpeg_processes(project: Project, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted with a pass-through `ffmpeg` first on PATH that logs each start and runs the real one."""
    entry = _session(project, "indexed", video=True)
    real = subprocess.run(["which", "ffmpeg"], capture_output=True, text=True, check=True).stdout.strip()
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    log = tmp_path / "ffmpeg_starts.log"
    shim = shim_dir / "ffmpeg"
    shim.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
    work = tmp_path / "work"
    work.mkdir()
    rows = cut_clips(project, entry, _rows("indexed"), work, project.session_dir("transcripts", "indexed"))
    assert len(rows) == len(SPANS) and all((work / "clips" / f"{r.row_index:03d}.mp4").is_file() for r in rows)
    starts = log.read_text(encoding="utf-8").count("start")
    assert 1 <= starts <= -(-len(SPANS) // ffmpeg_adapter.CLIPS_PER_PASS), starts
