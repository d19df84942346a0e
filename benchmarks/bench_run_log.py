"""Run-log benchmark: the size of a full-size run's log and the CPU time the log adds per request.

    .venv/bin/python benchmarks/bench_run_log.py [--repeats 2] [--no-docs]

The release is the synthetic full-size one (pipeline/tasks/synthetic.py: 191 samples, 7,079 rows; frozen once
under build/bench-run-model/, shared with bench_run_model.py). Per task, in the dialogue mode with the default
leak-free batches of 5, every request is built and audited as `rescue run-model` sends it; each gets a made-up
answer that answers every target validly (no model is called: the log's cost does not depend on who answers).
Then, as a run does, `RunLog.answered` logs each answer (reading it, the prompt spans, one append and flush to
the partial files) and `RunLog.finish` writes requests.jsonl and samples.jsonl whole; then the log is read back
and rendered as `rescue show-run --html` renders it. Figures: the files' sizes, CPU time of `answered` per request
and of `finish` per run, the page's size and wall time (read and render), fastest of `--repeats`. Writes
benchmarks/results/bench_run_log.json and the table between the markers in docs/run-model.md.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_run_model import release_folder  # noqa: E402  (a sibling script: the same full-size release)
from publish import publish  # noqa: E402

DOCS = ROOT / "docs" / "run-model.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_run_log.json"
START, END = "<!-- bench_run_log:start -->", "<!-- bench_run_log:end -->"
MODE, BATCH = "dialogue", 5
REASON = "The client has just finished a long turn and the partner has not answered yet, so the therapist steps in."


def answer_fields(task: str, record: dict[str, Any]) -> dict[str, Any]:
    """A valid answer for one target (the shape the prompt asks for), with a reason of a typical length."""
    from pipeline.tasks.predictions import CANDIDATES_FIELD, RANKING_FIELD

    if task == "itp":
        fields: dict[str, Any] = {"should_speak": "yes", "confidence": 0.7}
    elif task in RANKING_FIELD:
        fields = {RANKING_FIELD[task]: list(record[CANDIDATES_FIELD[task]])[:3]}
    elif task == "er":
        fields = {"predicted_internal_emotion": "feels dismissed and hurt", "predicted_intensity_score": 6}
    else:
        fields = {"predicted_viewpoints": [{"source": record["speaker"], "target": record["participants"][0],
                                            "viewpoint": "wants to be taken seriously"}]}
    return {**fields, "reason": REASON}


def one_task(release: Path, task: str, repeats: int) -> dict[str, Any]:
    from pipeline.llm.client import ChatAnswer
    from pipeline.llm.request import payload_digest
    from pipeline.runmodel.audit import gate
    from pipeline.runmodel.batches import batch_request, make_batches
    from pipeline.runmodel.prompts import system_prompt
    from pipeline.tasks.registry import task_spec
    from pipeline.runmodel.run import task_records
    from pipeline.runmodel.run_log import RunLog
    from pipeline.runmodel.settings import RunModelSettings
    from pipeline.runmodel.show import load_run
    from pipeline.runmodel.show_html import to_html
    from pipeline.schema import load_schema

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    settings = RunModelSettings(model="stand-in", batch_size=BATCH)
    records, _ = task_records(release, task)
    batches = make_batches(records, BATCH, task=task, mode=MODE, batching=settings.batching)
    systems = {s: system_prompt(schema, task, s, MODE) for s in {b.scenario for b in batches}}

    def wire(request: Any) -> dict[str, Any]:
        return request.payload(settings.model, settings.max_completion_tokens)

    gated, _ = gate(task, MODE, batches, lambda b: batch_request(task, MODE, b, systems[b.scenario], release,
                                                                 settings), wire, settings.batching)
    outcomes = []
    for batch in gated.batches:
        content = json.dumps({"sample_id": batch.sample_id, "predictions": [
            {task_spec(task).prompt.id_key: r["id"], **answer_fields(task, r)} for r in batch.records]})
        outcomes.append(ChatAnswer(content=content, finish_reason="stop", refusal="", prompt_tokens=1000,
                                   completion_tokens=len(content) // 4, cached=False))
    best: dict[str, float] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(dir=ROOT / "build", prefix="bench-run-log-") as scratch:
            log = RunLog(Path(scratch) / "run", task, MODE, records, gated.batches, gated.requests, wire,
                         lambda r: payload_digest(settings.endpoint, wire(r)))
            cpu = time.process_time()
            for index, outcome in enumerate(outcomes):
                log.answered(index, outcome)
            answered = time.process_time() - cpu
            cpu = time.process_time()
            log.finish(outcomes, gated.refused)
            finish = time.process_time() - cpu
            sizes = {name: (Path(scratch) / "run" / name).stat().st_size for name in ("requests.jsonl",
                                                                                     "samples.jsonl")}
            began = time.perf_counter()
            loaded = load_run(Path(scratch) / "run")
            page = to_html(loaded, loaded.views, shown_of=len(loaded.views))
            html_s, sizes["html"] = time.perf_counter() - began, len(page.encode("utf-8"))
        best = {"answered": min(answered, best.get("answered", answered)),
                "finish": min(finish, best.get("finish", finish)), "html": min(html_s, best.get("html", html_s))}
    requests = len(gated.requests)
    return {"task": task, "instances": len(records), "requests": requests,
            "requests_mib": sizes["requests.jsonl"] / 2**20, "samples_mib": sizes["samples.jsonl"] / 2**20,
            "answered_ms_per_request": 1000 * best["answered"] / requests, "finish_s": best["finish"],
            "html_mib": sizes["html"] / 2**20, "html_s": best["html"]}


def markdown(result: dict) -> str:
    intro = (f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']}: the full-size synthetic release, mode "
             f"{MODE}, leak-free batches of {BATCH}, every instance answered; CPU time, fastest of {result['repeats']}.")
    head = ("| task | instances | requests | requests.jsonl | samples.jsonl | CPU per request (logged as it arrives) "
            "| CPU to write the log at the end | `show-run --html` of every instance: size, wall time |")
    lines = [intro, "", head, "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['task'].upper()} | {r['instances']:,} | {r['requests']:,} | {r['requests_mib']:.1f} MiB | "
              f"{r['samples_mib']:.1f} MiB | {r['answered_ms_per_request']:.2f} ms | {r['finish_s']:.2f} s | "
              f"{r['html_mib']:.1f} MiB, {r['html_s']:.1f} s |"
              for r in result["runs"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tasks", default="itp,stp,ssp,rpp,er,vp")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/run-model.md")
    args = parser.parse_args()
    (ROOT / "build").mkdir(exist_ok=True)
    load = os.getloadavg()[0]
    release = release_folder()
    runs = [one_task(release, task, args.repeats) for task in args.tasks.split(",")]
    result = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared; load "
                         f"average {load:.1f}), Python {platform.python_version()}",
              "repeats": args.repeats, "runs": runs}
    publish(result, markdown(result), RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
