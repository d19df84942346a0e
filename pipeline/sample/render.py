"""Draw the session's frames with OpenCV and mux them with the audio track into an MP4."""

from __future__ import annotations

import bisect
import subprocess
import tempfile
import wave
from collections.abc import Iterator
from pathlib import Path

import cv2
import ffmpeg
import numpy as np

from pipeline.records import TruthTurn
from pipeline.sample import tools
from pipeline.sample.script import Script
from pipeline.sample.track import FPS, Track

WIDTH, HEIGHT = 640, 360
FONT = cv2.FONT_HERSHEY_SIMPLEX
Color = tuple[int, int, int]  # OpenCV order: blue, green, red
BACKGROUND = (32, 32, 32)
THERAPIST_COLOR = (200, 160, 60)
PARTICIPANT_COLORS = ((80, 170, 240), (120, 200, 120), (200, 120, 220), (90, 200, 220))
BOX_TOP, BOX_BOTTOM, ROUTE_Y = 48, 128, 160
CAPTION_TOP, CAPTION_LINE, CAPTION_SCALE = 226, 24, 0.55


class _Layout:
    """Where each person's box sits; computed once per session."""

    def __init__(self, script: Script) -> None:
        self.script = script
        people = script.speakers
        margin, spacing = 20, 12
        width = (WIDTH - 2 * margin - (len(people) - 1) * spacing) // len(people)
        self.boxes = {p: (margin + i * (width + spacing), width) for i, p in enumerate(people)}
        self.colors = {
            p: THERAPIST_COLOR if i == 0 else PARTICIPANT_COLORS[(i - 1) % len(PARTICIPANT_COLORS)]
            for i, p in enumerate(people)
        }

    def center_x(self, person: str) -> int:
        left, width = self.boxes[person]
        return left + width // 2

    def addressees(self, turn: TruthTurn) -> list[str]:
        """People an arrow points to: the group label means everyone but the speaker."""
        if self.script.group_label in turn.target:
            return [p for p in self.script.speakers if p != turn.speaker]
        return list(turn.target)


def _centered_text(img: np.ndarray, text: str, cx: int, y: int, scale: float, color: Color, thick: int) -> None:
    (w, _), _ = cv2.getTextSize(text, FONT, scale, thick)
    cv2.putText(img, text, (cx - w // 2, y), FONT, scale, color, thick, cv2.LINE_AA)


def _wrap(text: str, max_width: int, scale: float) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        candidate = f"{lines[-1]} {word}" if lines else word
        if lines and cv2.getTextSize(candidate, FONT, scale, 1)[0][0] <= max_width:
            lines[-1] = candidate
        else:
            lines.append(word)
    return lines


def _draw_state(layout: _Layout, turn: TruthTurn | None) -> np.ndarray:
    """Everything but the clock: it only changes when the turn changes, so it is drawn once per turn."""
    img = np.full((HEIGHT, WIDTH, 3), BACKGROUND, dtype=np.uint8)
    cv2.putText(img, layout.script.session_id, (12, 30), FONT, 0.55, (200, 200, 200), 1, cv2.LINE_AA)
    targets = layout.addressees(turn) if turn else []
    for person, (left, width) in layout.boxes.items():
        color = layout.colors[person]
        speaking = turn is not None and person == turn.speaker
        corner1, corner2 = (left, BOX_TOP), (left + width, BOX_BOTTOM)
        if speaking:
            cv2.rectangle(img, corner1, corner2, color, cv2.FILLED)
        addressed = person in targets
        cv2.rectangle(img, corner1, corner2, (255, 255, 255) if addressed else color, 3 if addressed else 1)
        ink = (20, 20, 20) if speaking else (235, 235, 235)
        _centered_text(img, person, left + width // 2, BOX_TOP + 36, 0.7, ink, 2)
        _centered_text(img, layout.script.roles[person], left + width // 2, BOX_TOP + 62, 0.45, ink, 1)
    if turn is None:
        _centered_text(img, "(silence)", WIDTH // 2, 204, 0.7, (140, 140, 140), 1)
        return img
    # Arrows run below the boxes (down, across, up) so they never cross another person's box.
    color = layout.colors[turn.speaker]
    sx = layout.center_x(turn.speaker)
    cv2.line(img, (sx, BOX_BOTTOM + 2), (sx, ROUTE_Y), color, 2, cv2.LINE_AA)
    for person in targets:
        tx = layout.center_x(person)
        cv2.line(img, (sx, ROUTE_Y), (tx, ROUTE_Y), color, 2, cv2.LINE_AA)
        cv2.arrowedLine(img, (tx, ROUTE_Y), (tx, BOX_BOTTOM + 4), color, 2, cv2.LINE_AA, tipLength=0.35)
    _centered_text(img, f"{turn.speaker} -> {', '.join(turn.target)}", WIDTH // 2, 204, 0.75, color, 2)
    cv2.rectangle(img, (10, CAPTION_TOP - 4), (WIDTH - 10, HEIGHT - 8), (0, 0, 0), cv2.FILLED)
    for n, line in enumerate(_wrap(turn.text, WIDTH - 40, CAPTION_SCALE)):
        y = CAPTION_TOP + 20 + n * CAPTION_LINE
        cv2.putText(img, line, (20, y), FONT, CAPTION_SCALE, (255, 255, 255), 1, cv2.LINE_AA)
    return img


def _frames(script: Script, track: Track) -> Iterator[bytes]:
    layout = _Layout(script)
    starts = [t.start for t in track.turns]
    cache: dict[int, np.ndarray] = {}
    n_frames = round(track.duration * FPS)
    for i in range(n_frames):
        t = i / FPS
        k = bisect.bisect_right(starts, t) - 1
        active = k if k >= 0 and t < track.turns[k].end else -1
        if active not in cache:
            cache.clear()  # turns are visited in order: keep only the current state
            cache[active] = _draw_state(layout, track.turns[active] if active >= 0 else None)
        frame = cache[active].copy()
        clock = f"t={t:.1f}s"
        (w, _), _ = cv2.getTextSize(clock, FONT, 0.6, 2)
        cv2.putText(frame, clock, (WIDTH - 12 - w, 30), FONT, 0.6, (255, 255, 255), 2, cv2.LINE_AA)
        yield frame.tobytes()


def _write_wav(path: Path, track: Track) -> None:
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(track.rate)
        wav.writeframes(track.samples.astype("<i2").tobytes())


def render_video(dest: Path, script: Script, track: Track) -> None:
    """Write `dest` (MP4: H.264 640x360 at FPS, AAC mono), byte-identical for identical input on one machine."""
    ffmpeg_bin = tools.require("ffmpeg")
    with tempfile.TemporaryDirectory(prefix="sample-") as tmp:
        audio_path = Path(tmp) / "audio.wav"
        _write_wav(audio_path, track)
        video = ffmpeg.input("pipe:", format="rawvideo", pix_fmt="bgr24", s=f"{WIDTH}x{HEIGHT}", framerate=FPS)
        audio = ffmpeg.input(str(audio_path))
        out = ffmpeg.output(
            video,
            audio,
            str(dest),
            format="mp4",
            vcodec="libx264",
            pix_fmt="yuv420p",
            preset="veryfast",
            crf=26,
            g=5 * FPS,
            acodec="aac",
            audio_bitrate="64k",
            movflags="+faststart",
            map_metadata=-1,
            fflags="+bitexact",  # no encoder/version strings or timestamps that vary between runs
            threads=1,  # x264's multi-threaded decisions may differ run to run; one thread is reproducible
            **{"flags:v": "+bitexact", "flags:a": "+bitexact"},
        ).global_args("-hide_banner", "-loglevel", "error", "-y")
        args = out.compile(cmd=ffmpeg_bin)
        # stderr goes to a file, not a pipe: an unread pipe could fill up and stall ffmpeg while we write frames.
        with open(Path(tmp) / "ffmpeg.log", "w+b") as log:
            proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log)
            assert proc.stdin is not None
            try:
                for frame in _frames(script, track):
                    proc.stdin.write(frame)
            except BrokenPipeError:
                pass  # ffmpeg stopped early; its exit code and log below say why
            finally:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                code = proc.wait()
            if code != 0:
                log.seek(0)
                dest.unlink(missing_ok=True)
                raise tools.failure("ffmpeg", f"encoding {dest.name}", log.read())
