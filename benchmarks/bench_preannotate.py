"""Benchmark the gold-model pre-annotation backend at the published benchmark's size: train on 7,079 synthetic
gold rows (174 couple + 17 family sessions, pipeline/tasks/synthetic.py) and draft all of them. One command:

    .venv/bin/python benchmarks/bench_preannotate.py [--no-docs]

Three runs, each in a fresh process limited to 2 threads:
  cold     empty build/ cache: every row text embedded by MiniLM (the first run's embedding time is reported)
  warm     embeddings cached, no trained model cached: train (with the gate's cross-validation) + draft
  reuse    embeddings and the trained model cached: what each later session of a build pays
The figures are written into docs/preannotate.md between the BENCH markers. Not a test: nothing asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "preannotate.md"
RESULTS = ROOT / "benchmarks" / "results" / "bench_preannotate.json"
START, END = "<!-- BENCH:preannotate:start -->", "<!-- BENCH:preannotate:end -->"
THREADS = {name: "2" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def one(root: Path) -> dict:
    """Train on the synthetic gold and draft every session; the caches live under root/build/."""
    sys.path.insert(0, str(ROOT))
    import torch

    torch.set_num_threads(2)
    from pipeline.preannotate.backends import make_backend
    from pipeline.preannotate.session import session_from_gold
    from pipeline.preannotate.settings import PreannotateSettings
    from pipeline.project import Project
    from pipeline.schema import load_schema
    from pipeline.tasks.gold_input import read_gold_file

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    gold = root / "gold.jsonl"
    started, cpu_started = time.perf_counter(), time.process_time()
    backend = make_backend(Project(root), PreannotateSettings(backend="gold-model", train_gold=(str(gold),)), schema)
    sessions, _ = read_gold_file(gold, schema)
    read = time.perf_counter() - started
    backend.trained()  # type: ignore[attr-defined]
    trained = time.perf_counter() - started
    stats = backend.stats  # type: ignore[attr-defined]
    train_embed_s, train_embedded = stats.seconds, stats.embedded
    rows = quarantined = drafted_fields = 0
    for session in sessions:
        drafts = backend.draft(session_from_gold(session, schema))
        rows += len(drafts.rows)
        quarantined += len(drafts.quarantined)
        drafted_fields += sum(len(d.values) for d in drafts.rows)
    total, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    gates = backend.trained().gates  # type: ignore[attr-defined]
    return {"sessions": len(sessions), "rows": rows, "quarantined": quarantined,
            "fields_per_row": round(drafted_fields / max(rows, 1), 1), "read_s": round(read, 2),
            "train_s": round(trained - read, 2), "draft_s": round(total - trained, 2), "total_s": round(total, 2),
            "cpu_s": round(cpu, 2), "load_end": round(os.getloadavg()[0], 1),
            "embedded_texts": stats.embedded, "embed_s": round(stats.seconds, 2),
            "train_embedded_texts": train_embedded, "train_embed_s": round(train_embed_s, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "gate_s": round(backend.gate_seconds, 2),  # type: ignore[attr-defined]
            "gates": {source: [g.field for g in gates if g.source == source] for source in ("model", "baseline",
                                                                                              "nothing")},
            "notes": list(getattr(backend.trained(), "notes", [])), }  # type: ignore[attr-defined]


def run_child(root: Path) -> dict:
    env = {**os.environ, **THREADS, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, __file__, "--child", str(root)], capture_output=True, text=True, env=env,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", type=Path)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one(args.child)))
        return
    sys.path.insert(0, str(ROOT))
    from pipeline.schema import load_schema
    from pipeline.tasks.synthetic import synthetic_sessions

    schema = load_schema(ROOT / "annotation_schemas" / "rescue-v1.yaml")
    load = round(os.getloadavg()[0], 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "gold.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in synthetic_sessions(schema)),
                                         encoding="utf-8")
        cold = run_child(root)
        shutil.rmtree(root / "build" / "cache" / "preannotate" / "models")
        warm = run_child(root)
        reuse = run_child(root)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, 2 threads", "load": load,
              "cold": cold, "warm": warm, "reuse": reuse}
    table = "\n".join([
        f"Measured {time.strftime('%Y-%m-%d')} on {result['machine']} (load average {load} at the start), "
        f"{warm['rows']:,} synthetic gold rows ({warm['sessions']} sessions), trained on and drafted in full:",
        "",
        "| run | embedded texts | embedding s | train s (gate s) | draft s | total s (wall) | CPU s | load at end "
        "| peak RSS MB | quarantined |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {name} | {r['embedded_texts']:,} | {r['embed_s']} | {r['train_s']} ({r['gate_s']}) | {r['draft_s']} "
          f"| {r['total_s']} | {r['cpu_s']} | {r['load_end']} | {r['peak_rss_mb']} | {r['quarantined']} |"
          for name, r in (("cold (first run)", cold), ("warm (embeddings cached)", warm),
                          ("reuse (model cached too)", reuse))),
        "",
        "Gates (the synthetic labels are drawn at random, so the model should win nowhere): "
        + "; ".join(f"{source}: {', '.join(fields) or 'none'}" for source, fields in warm["gates"].items()) + ".",
    ])
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from publish import publish

    publish(result, table, RESULTS, DOCS, START, END, write_docs=not args.no_docs)


if __name__ == "__main__":
    main()
