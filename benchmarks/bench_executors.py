"""Executors benchmark: three sessions' speech stages (ingest → preannotate) built from an empty build/ by the
local executor (a pool of 2 processes) and by the Ray executor (a 2-CPU Ray head started here on 127.0.0.1,
token authentication on: 2 workers), alternating, N times each, same machine, same run: fastest, median and
spread (slowest - fastest) per executor and per stage. The sessions are the two synthetic samples and the
two-speaker recording that the pyannote.audio wheel ships (issue 22 built these three).

Then, inside the workers (benchmarks/executor_probe.py): two transcribe workers of each executor at once,
import, model load and inference timed apart, with CTranslate2 on every core (2 threads, the old default) and on
the worker's share (1 thread, the default now); the scheduler overhead per task (an empty task through Ray
against a direct call); the models each Ray worker loaded.

    .venv/bin/python benchmarks/bench_executors.py [--repeats 3] [--no-docs]

Writes benchmarks/results/bench_executors.json and the block between the markers in docs/ray.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["PYANNOTE_METRICS_ENABLED"] = "false"

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Ray's workers import the probe by name, as this script does (the cluster's PYTHONPATH is built from this one)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH")]))

from executor_probe import probe  # noqa: E402  (benchmarks/executor_probe.py, a sibling script)
from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

from pipeline.engine.context import StepContext  # noqa: E402
from pipeline.engine.runner import run_stage  # noqa: E402
from pipeline.engine.session_steps import STAGES  # noqa: E402
from pipeline.executors.local import LocalExecutor, share_cores  # noqa: E402
from pipeline.media.register import register_session  # noqa: E402
from pipeline.project import Project  # noqa: E402
from pipeline.sample_sessions import install_samples  # noqa: E402
from pipeline.settings import load_settings  # noqa: E402
from pipeline.speech.audio import wav_info  # noqa: E402
from tests.ray_cluster import auth_env, start_head  # noqa: E402  (the tests' real local cluster)

DOCS = ROOT / "docs" / "ray.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_executors.json"
START, END = "<!-- bench_executors:start -->", "<!-- bench_executors:end -->"
WORKERS = 2
OVERHEAD_TASKS = 200
PYANNOTE_SAMPLE = "pyannote_sample"
UNNAMED_STOPS = ("rows", "preannotate")  # stages that need the speakers' names
# CTranslate2 threads per transcribe worker in the probe: every core of this machine (what `threads = 0` meant
# before issue 22) and the worker's share (what it means now)
PROBE_THREADS = {"every core": os.cpu_count() or 1, "worker's share": 0}


def add_pyannote_sample(project: Project) -> None:
    """The pyannote.audio wheel's 30 s two-speaker recording as a session (a still frame + its audio). Found without
    importing pyannote.audio: that would import torch into this driver, and the local pool's forked workers would
    inherit it (a head start that `rescue build`'s workers do not get)."""
    import importlib.util

    spec = importlib.util.find_spec("pyannote.audio")
    assert spec is not None and spec.origin is not None, "pyannote.audio is not installed"
    wav = Path(spec.origin).parent / "sample" / "sample.wav"
    video = project.raw_video / PYANNOTE_SAMPLE / "sample.mp4"
    video.parent.mkdir(parents=True)
    seconds = f"{wav_info(wav).duration:.3f}"  # -shortest alone leaves the endless frame source a few s longer
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-t", seconds, "-i", "color=c=gray:s=320x240:r=5",
                    "-i", str(wav), "-t", seconds, "-c:v", "libx264", "-c:a", "aac", str(video)], check=True)
    register_session(project, video=video, session_id=f"{PYANNOTE_SAMPLE}/sample", scenario="couple",
                     participants=["Speaker A", "Speaker B"], settings=load_settings(project.root).ingest,
                     source="pyannote.audio's sample.wav", therapist=False)


def build_once(sources: Path, work: Path, executor: object) -> dict:
    """All stages ingest → preannotate from an empty build/; wall seconds per stage and in all, and each
    session's seconds inside its worker (StepRun.elapsed_s) per stage."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(sources, work / "raw_video")
    shutil.copytree(ROOT / "annotation_schemas", work / "annotation_schemas")  # preannotate reads the schema
    context = StepContext.load(Project(work))
    entries = context.select()
    named = [entry for entry in entries if not entry.session_id.startswith(PYANNOTE_SAMPLE)]
    load = round(os.getloadavg()[0], 2)  # other work on the shared machine at this run's start
    stages, sessions, began = {}, {}, time.perf_counter()
    for name, stage in STAGES.items():
        inside: dict[str, float] = {}
        # pyannote's sample has no speaker names (its speaker map needs a person to listen): it stops at diarize
        report = run_stage(context, stage, named if name in UNNAMED_STOPS else entries,  # type: ignore[arg-type]
                           executor=executor,
                           on_done=lambda run, inside=inside: inside.__setitem__(run.session_id, run.elapsed_s))
        assert not report.failed, report.failed
        stages[name], sessions[name] = report.elapsed_s, inside
    return {"wall_s": round(time.perf_counter() - began, 2), "stages": stages, "sessions": sessions, "load": load,
            "driver_imported_torch": "torch" in sys.modules}  # then forked pool workers start with it


def _build_in_own_session(queue: Any, sources: Path, work: Path) -> None:
    os.setsid()  # its own autogroup, as the Ray cluster's processes (`ray start` runs in a new session)
    try:
        queue.put(build_once(sources, work, LocalExecutor(WORKERS)))
    except BaseException:  # handed to the parent, which would otherwise wait for a result forever
        queue.put({"error": traceback.format_exc()})


def local_build(sources: Path, work: Path) -> dict:
    """The local executor's build in a process of its own session. Linux (autogroup, on here) shares the CPU
    fairly between sessions, not processes: the Ray cluster started by `ray start` has its own session, so on a
    loaded machine its workers got a whole session's share while the local pool's workers shared this script's
    session with whatever else it ran. Both now get a session of their own."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_build_in_own_session, args=(queue, sources, work))
    child.start()
    result = queue.get()
    child.join()
    if "error" in result:
        raise RuntimeError(f"the local build failed:\n{result['error']}")
    return result


def spread(values: list[float]) -> dict:
    return {"fastest": min(values), "median": round(statistics.median(values), 2),
            "spread": round(max(values) - min(values), 2), "all": values}


def summary(runs: list[dict]) -> dict:
    """Per stage and in all: fastest, median, spread over the runs."""
    found = {name: spread([run["stages"][name] for run in runs]) for name in STAGES}
    return {**found, "all": spread([run["wall_s"] for run in runs])}


class ProbeWorker:
    """The probe in a Ray actor with the transcribe workers' options (the same class of process)."""

    def run(self, audio: str, threads: int, submitted_at: float) -> dict:
        return probe(audio, threads, submitted_at)


def ingested_audio(sources: Path, work: Path) -> tuple[list[str], float]:
    """Ingest the sessions once (local executor): the probe's audio (pyannote's sample, once per worker) and the
    seconds of audio of all sessions."""
    project = Project(work)
    shutil.copytree(sources, work / "raw_video")
    context = StepContext.load(project)
    report = run_stage(context, STAGES["ingest"], context.select())
    assert not report.failed, report.failed
    wavs = sorted((work / "build" / "media").rglob("*.wav"))
    probe = [str(path) for path in wavs if PYANNOTE_SAMPLE in str(path)] * WORKERS  # 30 s each: short, same work
    return probe, round(sum(wav_info(path).duration for path in wavs), 1)


def probe_workers(audios: list[str]) -> dict:
    """Two transcribe workers of each executor at once, fresh processes each time, per thread setting. The driver
    has not imported torch (checked), as in `rescue build`: a forked pool worker would inherit it."""
    import ray

    assert "torch" not in sys.modules, "the driver imported torch: the local pool's workers would inherit it"

    from pipeline.executors.ray_executor import forwarded_env

    found: dict[str, dict[str, list[dict]]] = {}
    for label, threads in PROBE_THREADS.items():
        began = time.time()
        share = (os.cpu_count() or 1) // WORKERS  # as LocalExecutor gives each worker
        with ProcessPoolExecutor(WORKERS, initializer=share_cores, initargs=(share,)) as pool:
            local = list(pool.map(probe, audios, [threads] * len(audios), [began] * len(audios)))
        actor = ray.remote(ProbeWorker).options(num_cpus=1, runtime_env={"env_vars": forwarded_env()})
        began = time.time()
        actors = [actor.remote() for _ in audios]
        try:
            on_ray = ray.get([a.run.remote(audio, threads, began) for a, audio in zip(actors, audios)])
        finally:
            for a in actors:
                ray.kill(a)
        found[label] = {"local": local, "ray": on_ray}
    return found


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


def bench(repeats: int, with_probe: bool = True) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="bench_executors_"))
    os.environ.update(auth_env(scratch / "auth_token"))  # before Ray is first imported
    from pipeline.executors.ray_executor import RayExecutor

    samples = scratch / "samples"
    (samples / "raw_video").mkdir(parents=True)
    install_samples(Project(samples))
    add_pyannote_sample(Project(samples))
    (scratch / "logs").mkdir()
    cluster = start_head(scratch / "logs", scratch / "auth_token", num_cpus=WORKERS)
    runs: dict[str, list[dict]] = {"local": [], "ray": []}
    loads_at_start = os.getloadavg()[0]
    try:
        ray_executor = RayExecutor(cluster.address)
        audios, audio_s = ingested_audio(samples / "raw_video", scratch / "probe")
        probes = probe_workers(audios) if with_probe else {}  # first: a fault here shows before the long builds
        print(json.dumps({"probes": probes}), flush=True)
        for _ in range(repeats):
            for name in ("local", "ray"):
                if name == "local":
                    runs[name].append(local_build(samples / "raw_video", scratch / name))
                else:
                    started = ray_executor.actors_started
                    runs[name].append(build_once(samples / "raw_video", scratch / name, ray_executor))
                    # model actors created in this build (kept from transcribe for diarize)
                    runs[name][-1]["actors_started"] = ray_executor.actors_started - started
                print(json.dumps({name: runs[name][-1]}), flush=True)  # kept in the log if a later run fails
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
    stats = {name: summary(found) for name, found in runs.items()}
    return {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), "
                   f"Python {platform.python_version()}",
        "load_average_1min_at_start": round(loads_at_start, 2), "load_average_1min_at_end": round(load, 2),
        "workers": WORKERS, "repeats": repeats, "runs": runs, "stats": stats,
        "wall_ratio_fastest": round(stats["ray"]["all"]["fastest"] / stats["local"]["all"]["fastest"], 3),
        "wall_ratio_median": round(stats["ray"]["all"]["median"] / stats["local"]["all"]["median"], 3),
        "audio_s": audio_s, "probes": probes, "scheduler_overhead": overhead, "model_loads_per_worker": loads,
    }


def _loads(runs: dict[str, list[dict]]) -> str:
    found = [run["load"] for name in ("local", "ray") for run in runs[name] if "load" in run]
    return f"{min(found):.1f}-{max(found):.1f}" if found else "n/a"


def _cell(stat: dict) -> str:
    return f"{stat['fastest']:.1f} / {stat['median']:.1f} / {stat['spread']:.1f}"


def _probe_cell(workers: list[dict], part: str) -> str:
    return "; ".join(f"{w[part]['wall_s']:.1f} ({w[part]['cpu_s']:.1f})" for w in workers)


def markdown(result: dict) -> str:
    stats, over = result["stats"], result["scheduler_overhead"]
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}: the two samples and pyannote's sample "
             f"(3 sessions, {result['audio_s']:.1f} s of audio; pyannote's through diarize only), ingest → "
             "preannotate from an empty build/, "
             f"{result['workers']} workers each, {result['repeats']} alternating runs per executor; load average "
             f"{result['load_average_1min_at_start']} at the start, {result['load_average_1min_at_end']} at the end, "
             f"{_loads(result['runs'])} at each run's start (other developers' tests ran on the same 2 cores "
             "meanwhile).", "",
             "Seconds per stage, **fastest / median / spread** (spread = slowest - fastest):", "",
             "| executor | " + " | ".join(STAGES) + " | all |", "|---|" + "---|" * (len(STAGES) + 1)]
    for name, label in (("local", f"local (`-j {result['workers']}`)"), ("ray", f"ray ({result['workers']} workers)")):
        lines.append(f"| {label} | " + " | ".join(_cell(stats[name][s]) for s in STAGES)
                     + f" | {_cell(stats[name]['all'])} |")
    transcribe = {name: stats[name]["transcribe"] for name in stats}
    lines += ["", f"Wall-time ratio ray / local: **{result['wall_ratio_fastest']:.2f}** fastest of "
              f"{result['repeats']}, {result['wall_ratio_median']:.2f} by the medians (goal <= 1.10); transcribe "
              f"alone {transcribe['ray']['fastest'] / transcribe['local']['fastest']:.2f} fastest, "
              f"{transcribe['ray']['median'] / transcribe['local']['median']:.2f} by the medians.", "",
              "Ray model actors started per build (transcribe's kept for diarize): "
              + ", ".join(str(run.get("actors_started", "?")) for run in result["runs"]["ray"]) + "."]
    if result["probes"]:
        lines += ["", "Inside two transcribe workers started at once (benchmarks/executor_probe.py; seconds wall "
                  "(CPU), one figure per worker; `waited` = from handing the job over to the worker starting it):", "",
                  "| CTranslate2 threads | executor | waited | import torch + whisperx | model load | inference "
                  "| threads (OMP, torch, CTranslate2) |", "|---|---|---|---|---|---|---|"]
    for label, by_executor in result["probes"].items():
        for name, workers in by_executor.items():
            waited = "; ".join(f"{w['waited_s']:.1f}" for w in workers)
            threads = workers[0]["threads"]
            inherited = ", ".join(workers[0]["inherited_modules"]) or "none"
            lines.append(f"| {label} | {name} | {waited} | {_probe_cell(workers, 'import')} "
                         f"(already imported: {inherited}) | {_probe_cell(workers, 'load')} "
                         f"| {_probe_cell(workers, 'inference')} | {threads['OMP_NUM_THREADS']}, {threads['torch']}, "
                         f"{threads['ctranslate2']} |")
    models = {"transcribe": "whisperx", "diarize": "pyannote"}  # a kept actor's counts also list the earlier step's
    loads = "; ".join(f"{step}: " + ", ".join(str(c.get(models.get(step, ""), sum(c.values()))) for c in counts)
                      for step, counts in result["model_loads_per_worker"].items())
    lines += ["", f"Scheduler overhead per task (empty task, {OVERHEAD_TASKS} runs): "
              f"**{1000 * (over['serial_s'] - over['direct_s']):.2f} ms** one at a time (submit + wait), "
              f"{1000 * (over['batched_s'] - over['direct_s']):.2f} ms each when submitted together "
              f"(direct call: {1e6 * over['direct_s']:.2f} µs).", "",
              f"Models loaded per Ray worker (one number per worker, last run): {loads} (goal: one per model per "
              "worker)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/ray.md")
    parser.add_argument("--no-probe", action="store_true", help="builds only (no timing inside the workers)")
    args = parser.parse_args()
    result = bench(args.repeats, with_probe=not args.no_probe)
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
