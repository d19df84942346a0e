"""What the chat benchmarks (bench_llm.py, bench_run_model.py) share: the stand-in server in its own process,
the bare SDK baseline, fastest-of-N timing and the overhead figures and table row (benchmarks run as scripts,
so this is imported as a sibling module)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-bench-local-only"
CONCURRENCY = 8
Timing = tuple[float, float]  # (wall s, CPU s of this process)


def serve_until_closed(answer: Callable[[Any], Any]) -> None:
    """In the server process: print the stand-in server's URL, answer until the parent closes our stdin."""
    from tests.chat_server import ChatServer

    with ChatServer(answer, api_key=KEY, check_contract=False) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


@contextmanager
def server_process(script: str, latency: float) -> Iterator[str]:
    """`script --serve LATENCY` in its own process (its work does not share our interpreter); yields its URL."""
    server = subprocess.Popen([sys.executable, script, "--serve", str(latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        yield server.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=30)


def run_bare(url: str, bodies: list[dict], timeout_s: float) -> Timing:
    """The SDK alone on ready payloads; the client is made inside, as ours makes its own."""
    import openai

    began, cpu = time.perf_counter(), time.process_time()
    sdk = openai.OpenAI(api_key=KEY, base_url=url, max_retries=0, timeout=timeout_s)
    with ThreadPoolExecutor(max_workers=CONCURRENCY) as pool:
        answers = list(pool.map(lambda body: sdk.chat.completions.create(**body).choices[0].message.content, bodies))
    elapsed = time.perf_counter() - began, time.process_time() - cpu
    assert all(answers)
    return elapsed


def fastest(repeats: int, runs: dict[str, Callable[[], Timing]]) -> dict[str, Timing]:
    """The fastest wall and CPU time of each run over `repeats` rounds, the runs alternating within a round."""
    best = {name: (float("inf"), float("inf")) for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            wall, cpu = run()
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def overhead_figures(latency: float, requests: int, prompt_kib: float, best: dict[str, Timing]) -> dict:
    (bare, bare_cpu), (ours, ours_cpu) = best["bare"], best["ours"]
    return {"latency_s": latency, "requests": requests, "prompt_kib": prompt_kib,
            "bare_s": bare, "ours_s": ours, "bare_cpu_s": bare_cpu, "ours_cpu_s": ours_cpu,
            "bare_ms_per_request": bare / requests * 1000, "ours_ms_per_request": ours / requests * 1000,
            "overhead_ms_per_request": (ours - bare) / requests * 1000,
            "cpu_overhead_ms_per_request": (ours_cpu - bare_cpu) / requests * 1000,
            "ratio": ours / bare, "cpu_ratio": ours_cpu / bare_cpu}


TABLE_HEAD = ("| server latency | requests | prompt | wall per request: bare SDK / ours | overhead | wall ratio "
              "| CPU per request: bare / ours | CPU overhead |")


def overhead_row(r: dict) -> str:
    n = r["requests"]
    return (f"| {r['latency_s'] * 1000:.0f} ms | {n} | {r['prompt_kib']:.1f} KiB | "
            f"{r['bare_ms_per_request']:.2f} / {r['ours_ms_per_request']:.2f} ms | "
            f"{r['overhead_ms_per_request']:+.2f} ms | **{r['ratio']:.3f}** | "
            f"{r['bare_cpu_s'] / n * 1000:.2f} / {r['ours_cpu_s'] / n * 1000:.2f} ms | "
            f"{r['cpu_overhead_ms_per_request']:+.2f} ms |")
