"""Small real media made with ffmpeg's lavfi sources (test pattern + tone), with known facts."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_video(path: Path, seconds: float, *, audio: bool = True, video: bool = True, faststart: bool = True,
               size: str = "160x90", fps: int = 10) -> Path:
    """An H.264/AAC MP4 of `seconds`: a moving test pattern and a 440 Hz tone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    args = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
    if video:
        args += ["-f", "lavfi", "-i", f"testsrc=size={size}:rate={fps}:duration={seconds}"]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate=22050:duration={seconds}"]
    if video:
        args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    if audio:
        args += ["-c:a", "aac"]
    if faststart:
        args += ["-movflags", "+faststart"]
    subprocess.run([*args, str(path)], check=True)
    return path
