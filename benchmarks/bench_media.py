"""Benchmark packing media into a release: `freeze_release` of a full-size gold (191 sessions, 7,079 rows,
one clip per row) text-only, with the clips hard-linked, and with the clips copied. One command:

    .venv/bin/python benchmarks/bench_media.py [--scale 1] [--no-docs]

The gold rows are the synthetic full-size ones (pipeline/tasks/synthetic.py). The clips are real MP4 files:
ffmpeg encodes a few test-pattern clips once, with the transcripts stage's settings (320x240 H.264 veryfast
crf 20 + AAC), one per length bucket, and each row gets its own copy of the bucket nearest its length under
<tmp>/build/transcripts/<sample>/clips/NNN.mp4 (its own file and inode, like a cut clip). Disk use is what
the release's media/ folder adds on disk: st_blocks of its files that are not hard links of a build clip.
`--scale 0.1` packs a tenth of the sessions, for a quick run. Figures go into docs/tasks.md between the
BENCH:media markers. Not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

RESULTS = REPO / "benchmarks" / "results" / "bench_media.json"
DOCS = REPO / "docs" / "tasks.md"
START, END = "<!-- BENCH:media:start -->", "<!-- BENCH:media:end -->"
BUCKETS = (3, 6, 9, 12, 15)  # seconds; synthetic rows last 2-14 s


def make_templates(folder: Path) -> dict[int, Path]:
    folder.mkdir(parents=True)
    found = {}
    for seconds in BUCKETS:
        target = folder / f"{seconds}.mp4"
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi",
                        "-i", f"testsrc2=size=320x240:rate=25:d={seconds}",
                        "-f", "lavfi", "-i", f"sine=frequency=220:sample_rate=16000:d={seconds}",
                        "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p",
                        "-c:a", "aac", "-shortest", "-movflags", "+faststart", str(target)], check=True)
        found[seconds] = target
    return found


def make_clips(build: Path, sessions: list, templates: dict[int, Path]) -> dict:
    from pipeline.tasks.media import RowClip

    index = {}
    for session in sessions:
        folder = build / "transcripts" / session.sample_id / "clips"
        folder.mkdir(parents=True)
        for row in session.rows:
            span = row.end_time - row.start_time
            bucket = min(BUCKETS, key=lambda b: abs(b - span))
            target = folder / f"{row.row_index:03d}.mp4"
            shutil.copyfile(templates[bucket], target)
            stat = target.stat()
            index[(session.sample_id, row.row_index)] = RowClip(source=target, duration_sec=round(span, 3),
                                                                size=stat.st_size, mtime_ns=stat.st_mtime_ns)
    return index


def media_disk(release: Path) -> tuple[int, int, int]:
    """(clips, apparent bytes, bytes newly on disk) of the release's media/ folder."""
    clips = apparent = on_disk = 0
    for path in (release / "media").rglob("*.mp4"):
        stat = path.stat()
        clips += 1
        apparent += stat.st_size
        on_disk += 0 if stat.st_nlink > 1 else stat.st_blocks * 512
    return clips, apparent, on_disk


def measure(scale: float) -> dict:
    from pipeline.schema import load_schema
    from pipeline.tasks.release import ReleaseProvenance, freeze_release
    from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, load_task_settings, schema_path
    from pipeline.tasks.synthetic import synthetic_sessions

    settings = load_task_settings()
    schema = load_schema(schema_path(settings, DEFAULT_TASK_SETTINGS))
    sessions = synthetic_sessions(schema, scale=max(1, int(scale)))
    if scale < 1:
        sessions = sessions[::round(1 / scale)]
    result: dict = {"scale": scale, "load": round(os.getloadavg()[0], 1), "sessions": len(sessions),
                    "rows": sum(len(s.rows) for s in sessions), "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        index = make_clips(root / "build", sessions, make_templates(root / "templates"))
        result["make_clips_s"] = round(time.perf_counter() - started, 1)
        result["build_clip_mib"] = round(sum(c.size for c in index.values()) / 2**20, 1)
        for name, media, link in (("text only", None, True), ("hard links", index, True), ("copies", index, False)):
            out = root / "release" / name.replace(" ", "_") / "v1"
            started, cpu = time.perf_counter(), time.process_time()
            summary = freeze_release(sessions, settings, ReleaseProvenance(), out, schema=schema, media=media,
                                     link_clips=link)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            clips, apparent, on_disk = media_disk(out) if media else (0, 0, 0)
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            result["runs"].append({"mode": name, "freeze_s": round(wall, 2), "cpu_s": round(cpu, 2), "clips": clips,
                                   "linked": summary.clips_linked, "copied": summary.clips_copied,
                                   "media_mib": round(apparent / 2**20, 1), "media_disk_mib": round(on_disk / 2**20, 1),
                                   "release_mib": round(size / 2**20, 1)})
            shutil.rmtree(out)
    return result


def markdown(result: dict) -> str:
    lines = ["", f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, load average {result['load']:.1f} at the start (a shared machine), with "
             f"`.venv/bin/python benchmarks/bench_media.py --scale {result['scale']:g}`: {result['sessions']} "
             f"sessions, {result['rows']:,} rows and clips ({result['build_clip_mib']} MiB of clips in the build; "
             f"making them took {result['make_clips_s']} s and is not counted).", "",
             "| release | freeze wall time | CPU time | clips packed | media/ size | media/ disk added "
             "| release size |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for run in result["runs"]:
        lines.append(f"| {run['mode']} | {run['freeze_s']} s | {run['cpu_s']} s | {run['clips']:,} | "
                     f"{run['media_mib']} MiB | {run['media_disk_mib']} MiB | {run['release_mib']} MiB |")
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="1 = the published size; 0.1 = a tenth of it")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/tasks.md")
    args = parser.parse_args()
    result = measure(args.scale)
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
