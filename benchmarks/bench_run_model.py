"""Runner benchmark: `rescue run-model`'s overhead per request (reading and checking the release, batching,
prompts, the chat client's cache and bookkeeping, parsing, writing the run) against the bare `openai` SDK call
with the same payloads, both at concurrency 8, against the local stand-in server (tests/chat_server.py, in its
own process so its work does not share our interpreter).

    .venv/bin/python benchmarks/bench_run_model.py [--instances N] [--repeats 3] [--no-docs]

The release is the synthetic full-size one (pipeline/tasks/synthetic.py: 191 samples, 7,079 rows), frozen
once under build/; the task is ITP in the dialogue mode, batch size 5: all its 3,006 instances (or the first
`--instances`), as a real run sends them, so the release's reading counts once per run as it does for a user.
`bare`: a thread pool of 8 calling `chat.completions.create` with the requests' payloads, built beforehand.
`ours`: `run_model` from the release folder to the written run, on an empty cache (every request sent, its
answer cached), as a first run is. Per `--latencies`: a server that answers at once (the worst case for the
ratio) and simulated model latencies. Wall and CPU time of this process, fastest of `--repeats` runs,
alternating. Writes benchmarks/results/bench_run_model.json and the table between the markers in
docs/run-model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

DOCS = ROOT / "docs" / "run-model.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_run_model.json"
START, END = "<!-- bench_run_model:start -->", "<!-- bench_run_model:end -->"
KEY_ENV, KEY = "BENCH_RUN_MODEL_KEY", "sk-bench-local-only"
CONCURRENCY, BATCH, TASK, MODE = 8, 5, "itp", "dialogue"


def serve(latency: float) -> None:
    """The server process: answer "yes" for every target of a request after `latency` s."""
    from tests.chat_server import ChatServer, Reply

    def answer(received):  # noqa: ANN001, ANN202
        text = received.body["messages"][-1]["content"]
        document = json.loads(text.split("\n\n", 1)[1])
        return Reply(content=json.dumps({"sample_id": document["sample_id"], "predictions": [
            {"candidate_id": t["candidate_id"], "should_speak": "yes", "confidence": 0.5, "reason": "r"}
            for t in document["targets"]]}), delay_s=latency)

    with ChatServer(answer, api_key=KEY, check_contract=False) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin


def release_folder() -> Path:
    """The synthetic full-size release, frozen once (build/bench-run-model/release/v1)."""
    from pipeline.schema import load_schema
    from pipeline.tasks.release import ReleaseProvenance, freeze_release
    from pipeline.tasks.settings import TaskSettings
    from pipeline.tasks.synthetic import synthetic_sessions

    out = ROOT / "build" / "bench-run-model" / "release" / "v1"
    if not (out / "MANIFEST.json").is_file():
        schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
        freeze_release(synthetic_sessions(schema), TaskSettings(), ReleaseProvenance(
            code_version="bench", annotation_snapshots=(), models=(), gold_source="synthetic"), out, schema=schema)
    return out


def payloads(release: Path, settings, instances: int) -> list[dict]:  # noqa: ANN001
    from pipeline.runmodel.batches import batch_request, make_batches
    from pipeline.runmodel.prompts import system_prompt
    from pipeline.schema import load_schema
    from pipeline.runmodel.run import task_records

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    records, _ = task_records(release, TASK)
    batches = make_batches(records[:instances or None], BATCH)
    return [batch_request(TASK, MODE, b, system_prompt(schema, TASK, b.scenario, MODE), release, settings)
            .payload(settings.model, settings.max_completion_tokens) for b in batches]


def run_bare(url: str, bodies: list[dict], settings) -> tuple[float, float]:  # noqa: ANN001
    import openai

    began, cpu = time.perf_counter(), time.process_time()
    sdk = openai.OpenAI(api_key=KEY, base_url=url, max_retries=0, timeout=settings.timeout_s)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        answers = list(pool.map(lambda body: sdk.chat.completions.create(**body).choices[0].message.content, bodies))
    elapsed = time.perf_counter() - began, time.process_time() - cpu
    assert all(answers)
    return elapsed


def run_ours(release: Path, settings, instances: int) -> tuple[float, float]:  # noqa: ANN001
    from pipeline.project import Project
    from pipeline.runmodel.run import run_model
    from pipeline.schema import load_schema

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    with tempfile.TemporaryDirectory(dir=ROOT / "build", prefix="bench-run-model-") as scratch:  # cache + run
        began, cpu = time.perf_counter(), time.process_time()
        result = run_model(Project(Path(scratch)), release, TASK, MODE, settings, schema, limit=instances or None,
                           environ={KEY_ENV: KEY})
        elapsed = time.perf_counter() - began, time.process_time() - cpu
        counts = result.record["counts"]
        assert counts["answered"] == counts["instances"] and result.stats.answers == result.stats.requests
    return elapsed


def bench_latency(release: Path, latency: float, instances: int, repeats: int) -> dict:
    from pipeline.runmodel.settings import RunModelSettings

    server = subprocess.Popen([sys.executable, __file__, "--serve", str(latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        settings = RunModelSettings(base_url=url, model="stand-in", api_key_env=KEY_ENV, concurrency=CONCURRENCY,
                                    batch_size=BATCH)
        bodies = payloads(release, settings, instances)
        run_bare(url, bodies[:16], settings)  # warm up: imports, connections
        best = {name: (float("inf"), float("inf")) for name in ("bare", "ours")}
        for _ in range(repeats):
            for name, run in (("bare", lambda: run_bare(url, bodies, settings)),
                              ("ours", lambda: run_ours(release, settings, instances))):
                wall, cpu = run()
                best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=30)
    n = len(bodies)
    return {"latency_s": latency, "requests": n,
            "prompt_kib": sum(len(json.dumps(b)) for b in bodies) / n / 1024,
            "bare_s": best["bare"][0], "ours_s": best["ours"][0], "bare_cpu_s": best["bare"][1],
            "ours_cpu_s": best["ours"][1], "bare_ms_per_request": best["bare"][0] / n * 1000,
            "ours_ms_per_request": best["ours"][0] / n * 1000,
            "overhead_ms_per_request": (best["ours"][0] - best["bare"][0]) / n * 1000,
            "cpu_overhead_ms_per_request": (best["ours"][1] - best["bare"][1]) / n * 1000,
            "ratio": best["ours"][0] / best["bare"][0], "cpu_ratio": best["ours"][1] / best["bare"][1]}


def markdown(result: dict) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}: ITP, dialogue mode, batch size {BATCH}, "
             f"concurrency {CONCURRENCY}, fastest of {result['repeats']} runs, alternating (local stand-in server "
             "in its own process; `ours` = `run_model` from the release folder to the written run):", "",
             "| server latency | requests | prompt | wall per request: bare SDK / ours | overhead | wall ratio "
             "| CPU per request: bare / ours | CPU overhead |", "|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        n = r["requests"]
        lines.append(f"| {r['latency_s'] * 1000:.0f} ms | {n} | {r['prompt_kib']:.1f} KiB | "
                     f"{r['bare_ms_per_request']:.2f} / {r['ours_ms_per_request']:.2f} ms | "
                     f"{r['overhead_ms_per_request']:+.2f} ms | **{r['ratio']:.3f}** | "
                     f"{r['bare_cpu_s'] / n * 1000:.2f} / {r['ours_cpu_s'] / n * 1000:.2f} ms | "
                     f"{r['cpu_overhead_ms_per_request']:+.2f} ms |")
    lines += ["", "Goal: wall ratio <= 1.05. Wall per request = wall time / requests (8 in flight); CPU = this "
              "process's CPU time (the server runs in another)."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--instances", type=int, default=0, help="the first N ITP instances (0: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latencies", default="0,0.05,0.5", help="simulated model latencies in seconds")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/run-model.md")
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    (ROOT / "build").mkdir(exist_ok=True)
    load = os.getloadavg()[0]  # the other users of this machine, as the run starts
    release = release_folder()
    runs = [bench_latency(release, float(x), args.instances, args.repeats) for x in args.latencies.split(",")]
    result = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared; load "
                         f"average {load:.1f}), Python {platform.python_version()}",
              "repeats": args.repeats, "runs": runs}
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
