"""Chat-client benchmark: our overhead per request (cache lookup and write, hashing, budget, retry bookkeeping,
threads) against the bare `openai` SDK call, both at concurrency 8, against the local stand-in server
(tests/chat_server.py, run in its own process so its work does not share our interpreter).

    .venv/bin/python benchmarks/bench_llm.py [--requests 200] [--repeats 3] [--no-docs]

The requests are the `openai` pre-annotation backend's real requests for the couple sample's rows (prompt,
strict JSON schema), made distinct by a suffix; the server answers each with that row's reference labels.
`bare`: a thread pool of 8 calling `chat.completions.create` with the same payloads (SDK retries off).
`ours`: `ChatClient.complete_all` on an empty cache (every request sent and its answer written), as a first
run is. Per `--latencies`: a server that answers at once (the worst case for the ratio), and simulated model
latencies (real endpoints take from hundreds of milliseconds to seconds). Wall and CPU time of this process,
fastest of `--repeats` runs, alternating. Also our own CPU per request with the SDK call replaced by a stub
(no network, no server). Writes benchmarks/results/bench_llm.json and the table between the markers in
docs/llm.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chat_overhead import (CONCURRENCY, KEY, TABLE_HEAD, fastest, overhead_figures,  # noqa: E402  (siblings)
                           overhead_row, run_bare, server_process, serve_until_closed)
from publish import publish  # noqa: E402  (benchmarks/publish.py, a sibling script)

DOCS = ROOT / "docs" / "llm.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_llm.json"
START, END = "<!-- bench_llm:start -->", "<!-- bench_llm:end -->"
KEY_ENV = "BENCH_LLM_KEY"


def serve(latency: float) -> None:
    """The server process: answer every request with the reference labels of its row after `latency` s."""
    from tests.chat_server import Reply
    from tests.test_preannotate_openai import Truth, row_id_asked

    truth = Truth("couple")
    answers: dict[str, str] = {}  # by row id: the server's own work stays small next to the client's

    def answer(received):  # noqa: ANN001, ANN202
        row_id = row_id_asked(received.body)
        if row_id not in answers:
            answers[row_id] = json.dumps(truth.answer(received))
        return Reply(content=answers[row_id], delay_s=latency)

    serve_until_closed(answer)


def payloads(count: int):  # noqa: ANN201
    from pipeline.llm.content import ChatMessage, TextItem
    from pipeline.preannotate.openai_backend import row_requests
    from pipeline.preannotate.openai_settings import OpenAIDraftSettings
    from pipeline.project import Project
    from tests.test_preannotate_openai import Truth

    truth = Truth("couple")
    base = [r for r, _ in row_requests(Project(ROOT), truth.entry, OpenAIDraftSettings(model="m"), truth.schema,
                                       truth.rows)]
    out = []
    for n in range(count):
        request = base[n % len(base)]
        user = request.messages[-1]
        last = user.content[-1]
        assert isinstance(last, TextItem)
        distinct = ChatMessage(user.role, (*user.content[:-1], TextItem(f"{last.text} #{n}")))
        out.append(replace(request, messages=(*request.messages[:-1], distinct)))
    return out


def run_ours(url: str, requests, settings) -> tuple[float, float]:  # noqa: ANN001
    from pipeline.llm.client import ChatClient

    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ROOT / "build", prefix="bench-llm-cache-") as cache:  # the cache's disk
        began, cpu = time.perf_counter(), time.process_time()
        client = ChatClient(settings, Path(cache), section="[bench]", environ={KEY_ENV: KEY})
        outcomes, stats = client.complete_all(requests)
        elapsed = time.perf_counter() - began, time.process_time() - cpu
        assert stats.answers == len(requests) and all(o.content for o in outcomes)  # type: ignore[union-attr]
    return elapsed


def isolated_overhead(requests, repeats: int) -> dict:  # noqa: ANN001
    """Our own CPU per request with the SDK call replaced by a stub that returns a ready answer: everything
    `complete_all` adds around the call (hash, cache lookup and write, budget, threads), free of the network
    and of the server's and the SDK's timing noise. The stub run through a bare thread pool is subtracted."""
    from types import SimpleNamespace

    from pipeline.llm.client import ChatClient
    from pipeline.llm.settings import ChatSettings

    content = "x" * 1500
    done = SimpleNamespace(model="stand-in", choices=[SimpleNamespace(
        finish_reason="stop", message=SimpleNamespace(content=content, refusal=None))],
        usage=SimpleNamespace(prompt_tokens=2400, completion_tokens=375))
    stub = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=lambda **_: done)))
    settings = ChatSettings(base_url="http://127.0.0.1:9/v1", model="stand-in", api_key_env=KEY_ENV,
                            concurrency=CONCURRENCY)
    bodies = [r.payload(settings.model, settings.max_completion_tokens) for r in requests]
    best_ours = best_bare = float("inf")
    for _ in range(repeats):
        cpu = time.process_time()
        with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
            list(pool.map(lambda body: stub.chat.completions.create(**body).choices[0].message.content, bodies))
        best_bare = min(best_bare, time.process_time() - cpu)
        with tempfile.TemporaryDirectory(dir=ROOT / "build", prefix="bench-llm-cache-") as cache:
            client = ChatClient(settings, Path(cache), section="[bench]", environ={KEY_ENV: KEY})
            client._sdk = stub  # noqa: SLF001  (the stub in place of the SDK: the point of this measurement)
            cpu = time.process_time()
            client.complete_all(requests)
            best_ours = min(best_ours, time.process_time() - cpu)
    return {"requests": len(requests), "overhead_cpu_ms_per_request": (best_ours - best_bare) / len(requests) * 1000}


def bench_latency(latency: float, count: int, repeats: int) -> dict:
    from pipeline.llm.settings import ChatSettings

    with server_process(__file__, latency) as url:
        settings = ChatSettings(base_url=url, model="stand-in", api_key_env=KEY_ENV, concurrency=CONCURRENCY)
        requests = payloads(count)
        bodies = [r.payload(settings.model, settings.max_completion_tokens) for r in requests]
        run_bare(url, bodies[:16], settings.timeout_s)  # warm up: imports, connections
        best = fastest(repeats, {"bare": lambda: run_bare(url, bodies, settings.timeout_s),
                                 "ours": lambda: run_ours(url, requests, settings)})
    prompt_kib = sum(len(json.dumps(r.payload("stand-in", 4096))) for r in requests) / len(requests) / 1024
    return overhead_figures(latency, count, prompt_kib, best)


def markdown(result: dict) -> str:
    lines = [f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}, concurrency {CONCURRENCY}, "
             f"fastest of {result['repeats']} runs, alternating (local stand-in server in its own process):", "",
             TABLE_HEAD + " CPU ratio |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"{overhead_row(r)} **{r['cpu_ratio']:.3f}** |" for r in result["runs"]]
    iso = result["isolated"]
    lines += ["", f"Our own work per request, the SDK call replaced by a stub (hash of the request, cache lookup and "
              f"write, budget, threads; {iso['requests']} requests): **{iso['overhead_cpu_ms_per_request']:.2f} ms "
              "CPU**.", "",
              "Goal: ratio <= 1.05. Wall per request = wall time / requests (8 in flight); CPU = this process's "
              "CPU time (the server runs in another), which shared-machine load disturbs far less than wall time."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latencies", default="0,0.05,0.5", help="simulated model latencies in seconds")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/llm.md")
    args = parser.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    (ROOT / "build").mkdir(exist_ok=True)
    load = os.getloadavg()[0]  # the other users of this machine, as the run starts
    isolated = isolated_overhead(payloads(args.requests), args.repeats)
    runs = [bench_latency(float(x), args.requests, args.repeats) for x in args.latencies.split(",")]
    result = {"isolated": isolated, "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores "
                                               f"(shared; load average {load:.1f}), Python {platform.python_version()}",
              "repeats": args.repeats, "runs": runs}
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
