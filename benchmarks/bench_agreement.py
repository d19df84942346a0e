"""`rescue agree` and `rescue gold` on synthetic annotations at the benchmark's full size and at 10x.

    .venv/bin/python benchmarks/bench_agreement.py [--scales 1,10] [--keep]

Full size = the published corpus's shape: 174 couple sessions with 5,875 rows and 17 family sessions
with 1,204 rows (7,079 rows), 3 annotators answering every field of every row (about 270,000 Annotation
records), written with the summary.json a pull writes beside it. Each step runs in a fresh process and
reports its wall time and peak RSS:

  agree        snapshot -> every coefficient, breakdown, 1,000 bootstrap resamples, HTML/CSV/MD/PNG;
               first without the text model: the first read of the snapshot without its summary.json
               (`-unsealed`: every record validated one by one), the first read as pulled (`-cold`: the
               sha256 matches the pull's, so the records are read in columns), and a re-run (`-warm`: the
               coded snapshot is cached); then with the text model on a cold and a warm embedding cache
  gold         consensus per field -> queue + gold rows with provenance (text fields exact / medoid)
  alpha        Krippendorff's alpha of every nominal/interval measure, ours vs the `krippendorff`
               package, on the same coded data in the same process

Goals (2-core machine): agree at full size < 5 s, at 10x < 30 s; alpha at least as fast as the
`krippendorff` package. The figures are written into docs/agreement.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DOC = REPO / "docs" / "agreement.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
FIRST_READ_START, FIRST_READ_END = "<!-- bench-first-read:start -->", "<!-- bench-first-read:end -->"
ANNOTATORS = ("ann.a@lab.org", "ann.b@lab.org", "ann.c@lab.org")
SNAPSHOT = "20261130T000000Z"


def build_project(root: Path, scale: int) -> dict[str, int]:
    """Schema, transcript rows and one annotation snapshot (streamed to disk: 10x is ~1.3 GB of JSON)."""
    from pipeline.agreement.synthetic import benchmark_shape, make_annotations, make_sessions
    from pipeline.project import Project
    from pipeline.schema import load_schema
    from pipeline.transcripts import rows_path, write_rows

    (root / "annotation_schemas").mkdir(parents=True)
    shutil.copy(REPO / "annotation_schemas" / "rescue-v1.yaml", root / "annotation_schemas")
    schema = load_schema(root / "annotation_schemas" / "rescue-v1.yaml")
    project = Project(root)
    sessions = make_sessions(0, shape=benchmark_shape(scale))
    for session in sessions:
        write_rows(rows_path(project, session.session_id), list(session.rows))
    path = root / "build" / "annotations" / SNAPSHOT / "annotations.jsonl"
    path.parent.mkdir(parents=True)
    records = 0
    digest = hashlib.sha256()
    with path.open("w", encoding="utf-8") as handle:
        for record in make_annotations(schema, sessions, ANNOTATORS, agreement=0.8, snapshot=SNAPSHOT):
            line = record.model_dump_json() + "\n"
            handle.write(line)
            digest.update(line.encode())
            records += 1
    seal(path, schema.id, records, digest.hexdigest())
    return {"sessions": len(sessions), "rows": sum(len(s.rows) for s in sessions), "records": records,
            "snapshot_mb": round(path.stat().st_size / 2**20)}


def seal(path: Path, schema_id: str, records: int, sha256: str) -> None:
    """summary.json beside the snapshot, as every pull writes it: record count and the file's sha256."""
    from pipeline.annotate.pull import PullSummary, ProjectPull

    summary = PullSummary(snapshot=SNAPSHOT, folder=path.parent.name, schema_version=schema_id, source="benchmark",
                          projects=(ProjectPull(scenario="couple", annotator=None, export_file="synthetic", tasks=0,
                                                annotations=0, cancelled=0, superseded=0, records=records,
                                                quarantined=0, annotators=ANNOTATORS),),
                          annotations_sha256=sha256)
    (path.parent / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")


@contextmanager
def unsealed(root: Path) -> Iterator[None]:
    """The snapshot without its summary.json: nothing vouches for its records, so each is validated."""
    summary = next((root / "build" / "annotations").rglob("summary.json"))
    hidden = summary.with_name("summary.json.hidden")
    summary.rename(hidden)
    try:
        yield
    finally:
        hidden.rename(summary)


def measure(step: str, root: Path) -> dict[str, object]:
    """Run one step in this (fresh) process; print wall time, peak RSS and what it did as JSON."""
    from pipeline.agreement.settings import AgreementSettings
    from pipeline.project import Project

    project = Project(root)
    started = time.perf_counter()
    out: dict[str, object] = {}
    if step.startswith("agree"):
        from pipeline.agreement.agree import run_agree

        with unsealed(root) if step.endswith("unsealed") else nullcontext():
            report = run_agree(project, AgreementSettings(), text=not step.startswith("agree-notext")).report
        out = {"figures": len(report.figures)}
        cache = next((project.build / "cache" / "agreement").glob("embeddings-*.npz"), None)
        if cache is not None:
            import numpy as np

            with np.load(cache) as data:
                out["texts_in_embedding_cache"] = len(data["keys"])
    elif step.startswith("gold"):
        from pipeline.agreement.gold import run_gold

        summary = run_gold(project, AgreementSettings(text_similarity=step != "gold-notext"))
        out = {"sessions_written": len(summary.sessions_written), "queue_items": summary.queue_items}
    elif step == "alpha":
        out = compare_alpha(project)
    out["wall_s"] = round(time.perf_counter() - started, 2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)  # whole process, imports included
    out["peak_rss_mb"] = round(usage.ru_maxrss / 1024)
    return out


def compare_alpha(project) -> dict[str, object]:  # type: ignore[no-untyped-def]
    import krippendorff
    import numpy as np

    from pipeline.agreement import metrics
    from pipeline.agreement.agree import read_snapshot
    from pipeline.agreement.distances import distance_for
    from pipeline.agreement.plan import build_plan
    from pipeline.agreement.ratings import build_row_index, extract_all
    from pipeline.schema import load_schema

    schema = load_schema(project.schemas / "rescue-v1.yaml")
    data = read_snapshot(project, schema)
    rows = build_row_index(data.answers)
    ratings = extract_all(build_plan(schema), data.answers, rows, data.annotators, schema)
    ours = theirs = 0.0
    compared = []
    for measure_id, r in ratings.items():
        if r.measure.level not in {"nominal", "interval"}:
            continue
        values = np.array(r.values if r.measure.level == "interval" else range(len(r.values)), dtype=float)
        matrix = np.full((len(r.annotators), r.n_units), np.nan)
        matrix[r.rater, r.unit] = values[r.code]
        started = time.perf_counter()
        reference = krippendorff.alpha(reliability_data=matrix, level_of_measurement=r.measure.level,
                                       value_domain=values)
        theirs += time.perf_counter() - started
        started = time.perf_counter()
        distance = distance_for(r.measure.level, r.values)
        table = metrics.rating_table(r.unit, r.code, r.unit_row, len(rows.row_ids), len(r.values), distance)
        sums = table.sums(np.ones((1, len(rows.row_ids))))
        value = float(metrics.alpha(sums, distance)[0])
        ours += time.perf_counter() - started
        assert abs(value - reference) < 1e-9, (measure_id, value, reference)
        compared.append(measure_id)
    return {"measures": compared, "ours_s": round(ours, 3), "krippendorff_s": round(theirs, 3),
            "speedup": round(theirs / ours, 1) if ours else None}


def run_child(step: str, root: Path, code: Path = REPO) -> dict[str, object]:
    """`step` in a fresh process, on this checkout's code or on another one's (`code`: its benchmarks/ and
    pipeline/, e.g. `git archive <rev> benchmarks pipeline | tar -x -C DIR`)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(code)}
    script = code / "benchmarks" / "bench_agreement.py"
    done = subprocess.run([sys.executable, str(script), "--measure", step, "--root", str(root)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{step} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_doc(results: dict[str, dict[str, object]], compared: bool = False) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    how = (" --old-code DIR`: first reads (cold cache) of the code before this change and after it, alternating "
           "in one run so both met the same load" if compared else "`")
    lines = [START, "",
             f"Measured {time.strftime('%Y-%m-%d')} (load average at the end: {load}; other work was running) on "
             f"{platform.machine()}, {os.cpu_count()} CPU cores, Python "
             f"{platform.python_version()} (`.venv/bin/python benchmarks/bench_agreement.py{how}). Each step ran in a "
             "fresh process; cpu = that process's user + system time (imports included), peak = its maximum RSS. "
             "Text model: all-MiniLM-L6-v2 on the CPU.", "",
             "| size | sessions / rows / records | step | wall | cpu | peak RSS | detail |",
             "|---|---|---|---|---|---|---|"]
    for scale, result in results.items():
        shape = result["shape"]
        for step, figures in result.items():
            if step == "shape":
                continue
            detail = {k: v for k, v in figures.items()  # type: ignore[union-attr]
                      if k not in {"wall_s", "cpu_s", "peak_rss_mb"}}
            size = f"{shape['sessions']} / {shape['rows']:,} / {shape['records']:,}"  # type: ignore[index]
            lines.append(f"| {scale} | {size} | {step} | "
                         f"{figures['wall_s']} s | {figures['cpu_s']} s | "  # type: ignore[index]
                         f"{figures['peak_rss_mb']} MB | "  # type: ignore[index]
                         f"{json.dumps(detail, ensure_ascii=False)} |")
    lines += ["", END]
    start, end = (FIRST_READ_START, FIRST_READ_END) if compared else (START, END)  # its own table
    lines[0], lines[-1] = start, end
    text = DOC.read_text(encoding="utf-8")
    if start in text and end in text:
        text = text[:text.index(start)] + "\n".join(lines) + text[text.index(end) + len(end):]
    else:
        text += "\n" + "\n".join(lines) + "\n"
    DOC.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--keep", action="store_true", help="keep the throw-away projects")
    parser.add_argument("--old-code", type=Path, help="another checkout's code (benchmarks/ and pipeline/): "
                        "measure only first reads, old and new alternating, then a warm run")
    parser.add_argument("--rounds", type=int, default=2, help="alternations with --old-code")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.root)))
        return
    results: dict[str, dict[str, object]] = {}
    for scale in (int(s) for s in args.scales.split(",")):
        root = Path(tempfile.mkdtemp(prefix=f"bench-agreement-{scale}x-"))
        try:
            label = "full size" if scale == 1 else f"{scale}x"
            print(f"{label}: generating synthetic annotations...", flush=True)
            result: dict[str, object] = {"shape": build_project(root, scale)}
            # The first read validates every record and caches the result (build/cache/agreement/): "cold".
            # "unsealed": the same snapshot without the summary.json its pull writes, read record by record
            steps = ["agree-notext-cold-unsealed", "agree-notext-cold", "agree-notext-warm", "gold-notext", "alpha"]
            if scale == 1:  # the text model's cost is its embedding rate (texts/s), measured once
                steps += ["agree-text-cold", "agree-text-warm", "gold-text"]
            if args.old_code:  # first reads, old and new code alternating, so both meet the same load
                steps = ["agree-notext-warm"]
                for round_number in range(1, args.rounds + 1):
                    for label_code, code in (("before", args.old_code), ("after", REPO)):
                        shutil.rmtree(root / "build" / "cache", ignore_errors=True)
                        name = f"agree-notext-cold ({label_code}, round {round_number})"
                        result[name] = run_child("agree-notext-cold", root, code)
                        print(f"  {name}: {result[name]}", flush=True)
            for step in steps:
                if "-cold" in step:
                    shutil.rmtree(root / "build" / "cache", ignore_errors=True)
                result[step] = run_child(step, root)
                print(f"  {step}: {result[step]}", flush=True)
            results[label] = result
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    write_doc(results, compared=args.old_code is not None)
    print(f"figures written to {DOC.relative_to(REPO)}")


if __name__ == "__main__":
    main()
