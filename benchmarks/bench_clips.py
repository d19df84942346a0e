"""Clips benchmark: the rows stage's per-row clips cut one ffmpeg process per row (the former way, kept here as
the baseline) against one ffmpeg pass per CLIPS_PER_PASS rows (`cut_clips`, today's way), on the sample
sessions, same machine, same run, alternating so both see the same background load.

    .venv/bin/python benchmarks/bench_clips.py [--repeats 3] [--no-docs]

Rows are the samples' true turns (the rows stage gives about as many rows with about the same spans), so no
speech model is needed. Writes benchmarks/results/bench_clips.json and the table between the markers in
docs/speech.md. Wall time is the fastest of `--repeats` runs; CPU time is the ffmpeg processes' user + system.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

from pipeline.engine.context import StepContext  # noqa: E402
from pipeline.engine.runner import run_stage  # noqa: E402
from pipeline.engine.session_steps import STAGES  # noqa: E402
from pipeline.media import ffmpeg_adapter  # noqa: E402
from pipeline.project import Project  # noqa: E402
from pipeline.records import SampleTruth, TranscriptRow, row_id_for  # noqa: E402
from pipeline.sample_sessions import install_samples  # noqa: E402
from pipeline.speech import transcribe  # noqa: E402
from pipeline.speech.transcript_stage import cut_clips  # noqa: E402

DOCS = ROOT / "docs" / "speech.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_clips.json"
START, END = "<!-- bench_clips:start -->", "<!-- bench_clips:end -->"


def per_row_baseline(project: Project, session_id: str, rows: list[TranscriptRow], folder: Path) -> None:
    """The former rows-stage clips: one `ffmpeg_adapter.cut_clip` process per row."""
    media = transcribe.read_media(project, session_id)
    source = project.abs(media.session_video)
    for row in rows:
        end = max(min(row.end, media.duration), row.start + 0.05)
        ffmpeg_adapter.cut_clip(source, folder / f"{row.row_index:03d}.mp4", start=row.start, end=end,
                                has_video=media.video_stream is not None)


def timed(function) -> tuple[float, float]:
    """(wall seconds, CPU seconds of child processes)."""
    before, began = os.times(), time.perf_counter()
    function()
    after = os.times()
    return time.perf_counter() - began, (after.children_user + after.children_system
                                         - before.children_user - before.children_system)


def bench(repeats: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="bench_clips_")).resolve()
    (root / "raw_video").mkdir()
    project = Project(root)
    install_samples(project)
    context = StepContext.load(project)
    run_stage(context, STAGES["ingest"], list(context.catalog))
    sessions = []
    for entry in context.catalog:
        truth = SampleTruth.model_validate_json(
            (project.raw_video / f"{entry.session_id}.truth.json").read_text(encoding="utf-8"))
        rows = [TranscriptRow(row_id=row_id_for(entry.session_id, t.start, t.end), session_id=entry.session_id,
                              row_index=i, start=t.start, end=t.end, speaker=t.speaker, text=t.text)
                for i, t in enumerate(truth.turns, 1)]
        duration = transcribe.read_media(project, entry.session_id).duration
        best = {"per_row": (float("inf"), 0.0), "one_pass": (float("inf"), 0.0)}
        for _ in range(repeats):
            for name in best:
                with tempfile.TemporaryDirectory() as scratch:
                    folder = Path(scratch)
                    if name == "per_row":
                        (folder / "clips").mkdir()
                        run = timed(lambda: per_row_baseline(project, entry.session_id, rows, folder / "clips"))
                    else:
                        final = project.session_dir("transcripts", entry.session_id)
                        run = timed(lambda: cut_clips(project, entry, rows, folder, final))
                best[name] = min(best[name], run)
        sessions.append({"session_id": entry.session_id, "audio_s": round(duration, 3), "rows": len(rows),
                         **{name: {"wall_s": wall, "cpu_s": cpu, "rtf": wall / duration}
                            for name, (wall, cpu) in best.items()}})
    audio = sum(s["audio_s"] for s in sessions)
    overall = {name: sum(s[name]["wall_s"] for s in sessions) / audio for name in ("per_row", "one_pass")}
    return {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
                       f"Python {platform.python_version()}",
            "clips_per_pass": ffmpeg_adapter.CLIPS_PER_PASS, "repeats": repeats, "sessions": sessions,
            "rtf_per_row": overall["per_row"], "rtf_one_pass": overall["one_pass"],
            "ratio": overall["one_pass"] / overall["per_row"]}


def markdown(result: dict) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}, fastest of {result['repeats']} runs, "
             "alternating:", "",
             "| session | audio | rows | per row: wall / CPU / RTF | one pass: wall / CPU / RTF |", "|---|---|---|---|---|"]
    for s in result["sessions"]:
        a, b = s["per_row"], s["one_pass"]
        lines.append(f"| {s['session_id']} | {s['audio_s']:.1f} s | {s['rows']} | {a['wall_s']:.2f} s / "
                     f"{a['cpu_s']:.2f} s / {a['rtf']:.3f} | {b['wall_s']:.2f} s / {b['cpu_s']:.2f} s / {b['rtf']:.3f} |")
    lines += ["", f"Clips real-time factor: **{result['rtf_per_row']:.3f} per row -> {result['rtf_one_pass']:.3f} "
              f"in passes of {result['clips_per_pass']}** (ratio {result['ratio']:.2f}; goal <= 0.5)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/speech.md")
    args = parser.parse_args()
    result = bench(args.repeats)
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
