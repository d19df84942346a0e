"""Executors benchmark: the sample sessions' speech stages (ingest, transcribe, diarize, rows) built from an
empty build/ by the local executor (a pool of 2 processes) and by the Ray executor (a 2-CPU Ray head started
here on 127.0.0.1, token authentication on: 2 workers), alternating, same machine, same run; the scheduler
overhead per task (an empty task through Ray against a direct call); the models each Ray worker loaded.

    .venv/bin/python benchmarks/bench_executors.py [--repeats 1] [--no-docs]

Writes benchmarks/results/bench_executors.json and the block between the markers in docs/ray.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["PYANNOTE_METRICS_ENABLED"] = "false"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)
from pipeline.executors.local import LocalExecutor  # noqa: E402
from pipeline.project import Project  # noqa: E402
from pipeline.engine.runner import Context, run_stage  # noqa: E402
from pipeline.sample_sessions import install_samples  # noqa: E402
from pipeline.engine.session_steps import STAGES  # noqa: E402
from tests.ray_cluster import auth_env, start_head  # noqa: E402  (the tests' real local cluster)

DOCS = ROOT / "docs" / "ray.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_executors.json"
START, END = "<!-- bench_executors:start -->", "<!-- bench_executors:end -->"
WORKERS = 2
OVERHEAD_TASKS = 200


def build_once(sources: Path, work: Path, executor: object) -> dict:
    """All speech stages from an empty build/; wall seconds per stage and in all."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(sources, work / "raw_video")
    shutil.copytree(ROOT / "annotation_schemas", work / "annotation_schemas")  # preannotate reads the schema
    context = Context.load(Project(work))
    entries = context.select()
    stages, began = {}, time.perf_counter()
    for name, stage in STAGES.items():
        report = run_stage(context, stage, entries, executor=executor)  # type: ignore[arg-type]
        assert not report.failed, report.failed
        stages[name] = report.elapsed_s
    return {"wall_s": round(time.perf_counter() - began, 2), "stages": stages}


def noop() -> None:
    return None


def scheduler_overhead() -> dict:
    """Seconds per empty task: one at a time (submit + wait: the latency a session pays) and 200 at once."""
    import ray

    task = ray.remote(noop).options(num_cpus=1)
    ray.get(task.remote())  # a worker process is up before timing
    began = time.perf_counter()
    for _ in range(OVERHEAD_TASKS):
        ray.get(task.remote())
    serial = (time.perf_counter() - began) / OVERHEAD_TASKS
    began = time.perf_counter()
    ray.get([task.remote() for _ in range(OVERHEAD_TASKS)])
    batched = (time.perf_counter() - began) / OVERHEAD_TASKS
    began = time.perf_counter()
    for _ in range(OVERHEAD_TASKS):
        noop()
    direct = (time.perf_counter() - began) / OVERHEAD_TASKS
    return {"serial_s": serial, "batched_s": batched, "direct_s": direct}


def bench(repeats: int) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="bench_executors_"))
    os.environ.update(auth_env(scratch / "auth_token"))  # before Ray is first imported
    from pipeline.executors.ray_executor import RayExecutor

    samples = scratch / "samples"
    (samples / "raw_video").mkdir(parents=True)
    install_samples(Project(samples))
    (scratch / "logs").mkdir()
    cluster = start_head(scratch / "logs", scratch / "auth_token", num_cpus=WORKERS)
    runs: dict[str, list[dict]] = {"local": [], "ray": []}
    try:
        ray_executor = RayExecutor(cluster.address)
        for _ in range(repeats):
            runs["local"].append(build_once(samples / "raw_video", scratch / "local", LocalExecutor(WORKERS)))
            runs["ray"].append(build_once(samples / "raw_video", scratch / "ray", ray_executor))
        loads = dict(ray_executor.model_loads)
        overhead = scheduler_overhead()
        ray_executor.close()
    except BaseException:
        traceback.print_exc()  # now: once the cluster stops, Ray's client may end the process before it prints
        raise
    finally:
        cluster.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()[0]
    best = {name: min(found, key=lambda r: r["wall_s"]) for name, found in runs.items()}
    return {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
                   f"Python {platform.python_version()}",
        "load_average_1min_at_end": round(load, 2), "workers": WORKERS, "repeats": repeats, "runs": runs, "best": best,
        "wall_ratio": round(best["ray"]["wall_s"] / best["local"]["wall_s"], 3),
        "scheduler_overhead": overhead, "model_loads_per_worker": loads,
    }


def markdown(result: dict) -> str:
    best, over = result["best"], result["scheduler_overhead"]
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}; sample sessions (2, 250.8 s of audio), "
             f"ingest → preannotate from an empty build/, {result['workers']} workers each, fastest of "
             f"{result['repeats']} alternating run(s); load average {result['load_average_1min_at_end']} at the end.", "",
             "| executor | " + " | ".join(STAGES) + " | all |", "|---|" + "---|" * (len(STAGES) + 1)]
    for name, label in (("local", f"local (`-j {result['workers']}`)"), ("ray", f"ray ({result['workers']} workers)")):
        lines.append(f"| {label} | " + " | ".join(f"{best[name]['stages'][s]:.1f} s" for s in STAGES)
                     + f" | {best[name]['wall_s']:.1f} s |")
    loads = "; ".join(f"{step}: " + ", ".join(str(sum(c.values())) for c in counts)
                      for step, counts in result["model_loads_per_worker"].items())
    lines += ["", f"Wall-time ratio ray / local: **{result['wall_ratio']:.2f}** (goal <= 1.10).", "",
              f"Scheduler overhead per task (empty task, {OVERHEAD_TASKS} runs): "
              f"**{1000 * (over['serial_s'] - over['direct_s']):.2f} ms** one at a time (submit + wait), "
              f"{1000 * (over['batched_s'] - over['direct_s']):.2f} ms each when submitted together "
              f"(direct call: {1e6 * over['direct_s']:.2f} µs).", "",
              f"Models loaded per Ray worker (one number per worker): {loads} (goal: one per model per worker)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/ray.md")
    args = parser.parse_args()
    result = bench(args.repeats)
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
