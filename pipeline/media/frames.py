"""The only module that uses OpenCV in ingest: thumbnails for annotators at regular times."""

from __future__ import annotations

from pathlib import Path

import cv2

from pipeline.errors import RescueError


def keyframe_times(duration: float, interval: float) -> list[float]:
    """Mid-points of consecutive `interval`-second windows (t=0 is often a black frame)."""
    times, t = [], interval / 2
    while t < duration:
        times.append(round(t, 3))
        t += interval
    return times or [round(duration / 2, 3)]


def extract_keyframes(video: Path, folder: Path, times: list[float], width: int) -> list[tuple[float, Path]]:
    """Write one JPEG per time into `folder`; returns (time, path) for each frame that could be read."""
    capture = cv2.VideoCapture(str(video))
    if not capture.isOpened():
        raise RescueError(f"OpenCV cannot open {video}", "re-encode the video to H.264 MP4 with ffmpeg")
    folder.mkdir(parents=True, exist_ok=True)
    written: list[tuple[float, Path]] = []
    try:
        for index, time in enumerate(times, start=1):
            capture.set(cv2.CAP_PROP_POS_MSEC, time * 1000.0)
            ok, frame = capture.read()
            if not ok:
                continue
            height = max(1, round(frame.shape[0] * width / frame.shape[1]))
            thumb = cv2.resize(frame, (width, height), interpolation=cv2.INTER_AREA)
            path = folder / f"{index:05d}.jpg"
            if not cv2.imwrite(str(path), thumb, [cv2.IMWRITE_JPEG_QUALITY, 85]):
                raise RescueError(f"cannot write {path}", "check free disk space and permissions under build/")
            written.append((time, path))
    finally:
        capture.release()
    return written
