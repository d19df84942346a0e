"""Generate the synthetic sample sessions: script -> voices -> audio track -> truth, SRT and MP4."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pipeline.records import SampleTruth
from pipeline.sample import tools
from pipeline.sample.render import render_video
from pipeline.sample.script import Script, load_script
from pipeline.sample.subtitles import write_srt
from pipeline.sample.track import lay_out
from pipeline.sample.voices import SAMPLE_RATE, synthesize

SCRIPT_NAMES = ("couple", "family")


class GeneratedSample(BaseModel):
    """The files written for one sample session, and its ground truth."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    truth: SampleTruth
    video: Path
    subtitles: Path
    truth_file: Path


def make_sample(script: Script, dest: Path, pool: ThreadPoolExecutor) -> GeneratedSample:
    """Write `<stem>.mp4`, `<stem>.srt` and `<stem>.truth.json` for one script into `dest`."""
    stem = script.session_id.rsplit("/", 1)[-1]
    # espeak-ng runs are independent subprocesses, so threads overlap them; map() keeps turn order.
    clips = list(pool.map(lambda turn: synthesize(turn.text, script.voices[turn.speaker]), script.turns))
    track = lay_out(script.turns, clips, SAMPLE_RATE)
    truth = SampleTruth(
        session_id=script.session_id,
        scenario=script.scenario,
        participants=script.participants,
        duration=round(track.duration, 3),
        voices={speaker: script.voices[speaker].settings for speaker in script.speakers},
        turns=track.turns,
    )
    sample = GeneratedSample(
        truth=truth,
        video=dest / f"{stem}.mp4",
        subtitles=dest / f"{stem}.srt",
        truth_file=dest / f"{stem}.truth.json",
    )
    render_video(sample.video, script, track)
    write_srt(sample.subtitles, truth.turns)
    sample.truth_file.write_text(truth.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return sample


def make_samples(dest: Path) -> list[GeneratedSample]:
    """Generate the couple and family sample sessions into `dest` (created if missing); same bytes every run."""
    # Fail before any work if a tool is missing, instead of halfway through.
    tools.require("espeak-ng")
    tools.require("ffmpeg")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    scripts = [load_script(name) for name in SCRIPT_NAMES]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1)) as pool:
        # The sessions render side by side: each spends much of its time waiting on its own ffmpeg process.
        with ThreadPoolExecutor(max_workers=len(scripts)) as sessions:
            futures = [sessions.submit(make_sample, script, dest, pool) for script in scripts]
            return [f.result() for f in futures]
