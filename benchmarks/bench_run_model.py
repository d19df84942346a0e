"""Runner benchmark: `rescue run-model`'s overhead per request (reading and checking the release, batching,
prompts, the chat client's cache and bookkeeping, parsing, writing the run) against the bare `openai` SDK call
with the same payloads, both at concurrency 8, against the local stand-in server (tests/chat_server.py, in its
own process so its work does not share our interpreter).

    .venv/bin/python benchmarks/bench_run_model.py [--instances N] [--repeats 3] [--no-docs]

The release is the synthetic full-size one (pipeline/tasks/synthetic.py: 191 samples, 7,079 rows), frozen
once under build/; the task is ITP in the dialogue mode, batch size 5 in the paper's per-sample batches
(`batching="paper"`; bench_batching.py measures what leak-free batching costs): all its 3,006 instances (or the
first `--instances`), as a run sends them, so the release's reading counts once per run as it does for a user.
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
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chat_overhead import (CONCURRENCY, KEY, TABLE_HEAD, fastest, overhead_figures,  # noqa: E402  (siblings)
                           overhead_row, run_bare, server_process, serve_until_closed)
from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

DOCS = ROOT / "docs" / "run-model.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_run_model.json"
START, END = "<!-- bench_run_model:start -->", "<!-- bench_run_model:end -->"
KEY_ENV = "BENCH_RUN_MODEL_KEY"
BATCH, TASK, MODE = 5, "itp", "dialogue"


def serve(latency: float) -> None:
    """The server process: answer "yes" for every target of a request after `latency` s."""
    from tests.chat_server import Reply

    def answer(received):  # noqa: ANN001, ANN202
        text = received.body["messages"][-1]["content"]
        document = json.loads(text.split("\n\n", 1)[1])
        return Reply(content=json.dumps({"sample_id": document["sample_id"], "predictions": [
            {"candidate_id": t["candidate_id"], "should_speak": "yes", "confidence": 0.5, "reason": "r"}
            for t in document["targets"]]}), delay_s=latency)

    serve_until_closed(answer)


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
    batches = make_batches(records[:instances or None], BATCH, task=TASK, mode=MODE, batching=settings.batching)
    return [batch_request(TASK, MODE, b, system_prompt(schema, TASK, b.scenario, MODE), release, settings)
            .payload(settings.model, settings.max_completion_tokens) for b in batches]


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

    with server_process(__file__, latency) as url:
        # paper batching: 683 requests of 5 instances, the workload of the earlier figures (the default,
        # leak-free, sends ITP mostly one instance per request); every request is audited either way
        settings = RunModelSettings(base_url=url, model="stand-in", api_key_env=KEY_ENV, concurrency=CONCURRENCY,
                                    batch_size=BATCH, batching="paper")
        bodies = payloads(release, settings, instances)
        run_bare(url, bodies[:16], settings.timeout_s)  # warm up: imports, connections
        best = fastest(repeats, {"bare": lambda: run_bare(url, bodies, settings.timeout_s),
                                 "ours": lambda: run_ours(release, settings, instances)})
    prompt_kib = sum(len(json.dumps(b)) for b in bodies) / len(bodies) / 1024
    return overhead_figures(latency, len(bodies), prompt_kib, best)


def markdown(result: dict) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}: ITP, dialogue mode, batch size {BATCH}, "
             f"concurrency {CONCURRENCY}, fastest of {result['repeats']} runs, alternating (local stand-in server "
             "in its own process; `ours` = `run_model` from the release folder to the written run):", "",
             TABLE_HEAD, "|---|---|---|---|---|---|---|---|"]
    lines += [overhead_row(r) for r in result["runs"]]
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
