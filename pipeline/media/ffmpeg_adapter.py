"""The only module that calls ffmpeg/ffprobe (through ffmpeg-python). Returns our records, raises RescueError."""

from __future__ import annotations

import shutil
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import ffmpeg

from pipeline.errors import RescueError
from pipeline.records import AudioStream, VideoStream

_BITEXACT = {"fflags": "+bitexact", "map_metadata": -1}
_INSTALL_FIX = "install ffmpeg (apt-get install ffmpeg), or run `make demo` once"
# Clips cut by one ffmpeg process: each holds an open H.264 encoder until the process ends, so the number is
# bounded to keep memory flat on long, high-resolution sessions.
CLIPS_PER_PASS = 16


@dataclass(frozen=True)
class Probe:
    container: str
    duration: float
    video: VideoStream | None
    audio: AudioStream | None


def _require_ffmpeg() -> None:
    if shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None:
        raise RescueError("ffmpeg/ffprobe not found on PATH", _INSTALL_FIX)


def _stderr(exc: ffmpeg.Error) -> str:
    text = (exc.stderr or b"").decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else "no message"


def _rate(text: str | None) -> float:
    try:
        value = Fraction(text or "0")
    except (ValueError, ZeroDivisionError):
        return 0.0
    return float(value) if value > 0 else 0.0


def probe(path: Path) -> Probe:
    """Container, duration and the first video and audio stream of `path`."""
    _require_ffmpeg()
    try:
        info = ffmpeg.probe(str(path))
    except ffmpeg.Error as exc:
        raise RescueError(
            f"cannot read media {path}: {_stderr(exc)}",
            "the file is corrupt or truncated: copy or download it again, or re-encode it with ffmpeg",
        ) from exc
    streams = info.get("streams", [])
    fmt = info.get("format", {})
    video = next((s for s in streams if s.get("codec_type") == "video" and not s.get("disposition", {}).get("attached_pic")), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    durations = [float(x) for x in [fmt.get("duration")] + [s.get("duration") for s in streams] if x not in (None, "N/A")]
    return Probe(
        container=str(fmt.get("format_name", "")),
        duration=float(fmt["duration"]) if fmt.get("duration") not in (None, "N/A") else max(durations, default=0.0),
        video=VideoStream(
            codec=str(video.get("codec_name", "")),
            width=int(video.get("width", 0)),
            height=int(video.get("height", 0)),
            fps=round(_rate(video.get("avg_frame_rate")) or _rate(video.get("r_frame_rate")), 3),
        ) if video else None,
        audio=AudioStream(
            codec=str(audio.get("codec_name", "")),
            sample_rate=int(audio.get("sample_rate", 0)),
            channels=int(audio.get("channels", 0)),
        ) if audio else None,
    )


def _input(source: Path, start: float | None, end: float | None) -> ffmpeg.nodes.FilterableStream:
    if start is None or end is None:
        return ffmpeg.input(str(source))
    return ffmpeg.input(str(source), ss=f"{start:.3f}", t=f"{end - start:.3f}")


def _run(node: ffmpeg.nodes.OutputStream, source: Path, what: str) -> None:
    try:
        node.global_args("-nostdin", "-v", "error").overwrite_output().run(capture_stdout=True, capture_stderr=True)
    except ffmpeg.Error as exc:
        raise RescueError(
            f"ffmpeg failed to {what} from {source}: {_stderr(exc)}",
            "the file may be corrupt: check it with `ffprobe`, or re-encode it",
        ) from exc


def extract_audio(source: Path, target: Path, *, sample_rate: int, start: float | None = None,
                  end: float | None = None) -> int:
    """Decode the first audio stream to mono PCM WAV at `sample_rate`; returns the number of samples."""
    _require_ffmpeg()
    stream = _input(source, start, end).audio
    node = stream.output(str(target), ac=1, ar=sample_rate, acodec="pcm_s16le", vn=None,
                         **_BITEXACT, **{"flags:a": "+bitexact"})
    _run(node, source, "extract audio")
    with wave.open(str(target), "rb") as handle:
        return handle.getnframes()


_CLIP_VIDEO = {"vcodec": "libx264", "preset": "veryfast", "crf": 20, "pix_fmt": "yuv420p"}


def _clip_output(streams: list, target: Path, has_video: bool, **audio: str) -> ffmpeg.nodes.OutputStream:
    return ffmpeg.output(*streams, str(target), acodec="aac", movflags="+faststart",
                         **(_CLIP_VIDEO if has_video else {}), **audio, **_BITEXACT)


def cut_clip(source: Path, target: Path, *, start: float, end: float, has_video: bool) -> None:
    """Re-encode [start, end) of `source` to MP4 (frame-accurate, unlike a stream copy)."""
    _require_ffmpeg()
    clip = _input(source, start, end)
    streams = [clip.video, clip.audio] if has_video else [clip.audio]
    _run(_clip_output(streams, target, has_video), source, "cut the clip")


@dataclass(frozen=True)
class ClipSpan:
    target: Path
    start: float
    end: float


def cut_clips(source: Path, clips: Sequence[ClipSpan], *, has_video: bool,
              done: Callable[[int], None] = lambda clips_cut: None) -> None:
    """Re-encode many [start, end) spans of `source`, each to its own MP4, in one ffmpeg process per
    CLIPS_PER_PASS consecutive clips: the source is decoded once per pass (from the pass's first start) and split
    to one trim + encoder per clip. The trims are what ffmpeg's own accurate input seek (`cut_clip`) inserts, so
    the clips' boundaries are the same; the per-row process start and re-decoding are saved."""
    _require_ffmpeg()
    ordered = sorted(clips, key=lambda c: (c.start, c.end))
    for first in range(0, len(ordered), CLIPS_PER_PASS):
        batch = ordered[first: first + CLIPS_PER_PASS]
        begin, finish = min(c.start for c in batch), max(c.end for c in batch)
        source_span = _input(source, begin, finish)
        audio = source_span.audio.filter_multi_output("asplit", len(batch))
        video = source_span.video.filter_multi_output("split", len(batch)) if has_video else None
        outputs = []
        for index, clip in enumerate(batch):
            start, end = f"{clip.start - begin:.3f}", f"{clip.end - begin:.3f}"
            streams = [audio.stream(index).filter("atrim", start=start, end=end).filter("asetpts", "PTS-STARTPTS")]
            if video is not None:
                streams.insert(0, video.stream(index).filter("trim", start=start, end=end)
                               .filter("setpts", "PTS-STARTPTS"))
            # the AAC encoder runs in ffmpeg's main thread and was a third of the CPU time: its `fast` coder
            # costs half as much, at the same bitrate and clip sizes (measured on the samples)
            outputs.append(_clip_output(streams, clip.target, has_video, aac_coder="fast"))
        _run(ffmpeg.merge_outputs(*outputs), source, f"cut {len(batch)} clips")
        done(first + len(batch))
