"""Benchmark `rescue freeze` on synthetic gold rows of the published benchmark's size (191 sessions,
7,079 rows) and at 10x: wall time, CPU time, the critical path and peak memory, fastest of N runs. One command:

    .venv/bin/python benchmarks/bench_freeze.py [--scales 1 10] [--repeats 3]

Each run is a fresh process (so peak RSS and the lazy pyarrow/matplotlib imports count per run). CPU time
is split three ways: the main thread (the critical path: it builds the instances and the JSONL text, and waits
for the rest), the release writer's Parquet thread (the same process's other threads), and the figures' child
process. On a machine with a free core for each, the main thread's CPU time is what the wall time comes down to.
The figures are written into docs/tasks.md between the BENCH markers. Not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "tasks.md"
START, END = "<!-- BENCH:freeze:start -->", "<!-- BENCH:freeze:end -->"


def one(scale: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from pipeline.schema import load_schema
    from pipeline.tasks.release import ReleaseProvenance, freeze_release
    from pipeline.tasks.settings import DEFAULT_TASK_SETTINGS, load_task_settings, schema_path
    from pipeline.tasks.synthetic import synthetic_sessions

    load = round(os.getloadavg()[0], 1)  # other work on the machine stretches wall times
    settings = load_task_settings()
    schema = load_schema(schema_path(settings, DEFAULT_TASK_SETTINGS))
    started = time.perf_counter()
    sessions = synthetic_sessions(schema, scale=scale)
    generated = time.perf_counter() - started
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        started, cpu_started, main_started = time.perf_counter(), time.process_time(), time.thread_time()
        summary = freeze_release(sessions, settings, ReleaseProvenance(), Path(tmp) / "bench", schema=schema)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        main_cpu = time.thread_time() - main_started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the figures' process (pipeline.tasks.figures)
        child_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
        size = sum(p.stat().st_size for p in (Path(tmp) / "bench").rglob("*") if p.is_file())
    return {"scale": scale, "load": load, "sessions": len(sessions), "rows": sum(len(s.rows) for s in sessions),
            "instances": sum(c["all"] for c in summary.instances.values()), "generate_s": round(generated, 2),
            "freeze_s": round(wall, 2), "freeze_cpu_s": round(cpu, 2), "main_thread_cpu_s": round(main_cpu, 2),
            "load_after": round(os.getloadavg()[0], 1),
            "figures_cpu_s": round(child_cpu, 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "rss_before_freeze_mib": round(rss_before / 1024), "release_mib": round(size / 2**20, 1)}


def fastest(runs: list[dict]) -> dict:
    """The fastest run by wall time, with the spread (slowest - fastest) and median of wall and CPU times."""
    best = dict(min(runs, key=lambda r: r["freeze_s"]))
    for key in ("freeze_s", "freeze_cpu_s", "main_thread_cpu_s"):
        values = [r[key] for r in runs]
        best[f"{key}_median"] = round(statistics.median(values), 2)
        best[f"{key}_spread"] = round(max(values) - min(values), 2)
    best["runs"] = len(runs)
    best["loads"] = [r["load"] for r in runs]
    return best


def write_docs(results: list[dict]) -> None:
    loads = [load for r in results for load in r["loads"]]
    lines = [START, "",
             f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, with `.venv/bin/python benchmarks/bench_freeze.py`; load average "
             f"{min(loads):.1f}–{max(loads):.1f} at the runs' starts (a shared machine: other developers' tests ran "
             "meanwhile, so wall times stretch several-fold; CPU times much less). Fastest of N runs, each in a "
             "fresh process; median and spread (slowest - fastest) beside it:", "",
             "| scale | rows | instances | runs | freeze wall time (median, spread) | CPU, whole process (median) "
             "| main thread CPU: critical path (median) | figures' process CPU | peak memory (RSS) | release size |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['scale']}x | {r['rows']:,} | {r['instances']:,} | {r['runs']} "
                     f"| {r['freeze_s']:.2f} s ({r['freeze_s_median']:.2f}, {r['freeze_s_spread']:.2f}) "
                     f"| {r['freeze_cpu_s']:.2f} s ({r['freeze_cpu_s_median']:.2f}) "
                     f"| {r['main_thread_cpu_s']:.2f} s ({r['main_thread_cpu_s_median']:.2f}) "
                     f"| {r['figures_cpu_s']:.2f} s "
                     f"| {r['peak_rss_mib']:,} MiB (gold in memory before: {r['rss_before_freeze_mib']:,} MiB) "
                     f"| {r['release_mib']:,} MiB |")
    lines += ["", END]
    text = DOCS.read_text(encoding="utf-8")
    block = "\n".join(lines)
    text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S) if START in text \
        else text.rstrip("\n") + "\n\n" + block + "\n"
    DOCS.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--repeats", type=int, default=3, help="runs per scale; the fastest is reported")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/tasks.md alone")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    results = []
    for scale in args.scales:
        runs = []
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, __file__, "--one", str(scale)],
                                 capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), flush=True)
        results.append(fastest(runs))
    if not args.no_docs:
        write_docs(results)
        print(f"figures written to {DOCS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
