"""Push and pull at the benchmark's full size against the embedded Label Studio server.

    .venv/bin/python benchmarks/bench_annotate.py [--keep]

Builds a throw-away project with the published corpus's shape (174 couple sessions with 5,875 rows,
17 family sessions with 1,204 rows: 7,079 rows), starts a server from the test template database
(build/test-cache/, made by the tests; else a first start that migrates), and measures, each in a
fresh process (wall time and that process's peak RSS):

  push       every row imported as a task (with the transcript draft) into each of the 3 annotators' own projects
  re-push    nothing new to import (idempotency check against the server)
  pull       export + snapshot + validation of the 6 projects, each annotator's answer on every row

Goals: push < 60 s, idle re-push < 5 s, pull < 30 s. The figures are written into docs/annotation.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.annotate import server  # noqa: E402
from pipeline.annotate.accounts import add_annotators  # noqa: E402
from pipeline.annotate.config import build_config  # noqa: E402
from pipeline.annotate.labelstudio import Client  # noqa: E402
from pipeline.annotate.projects import annotator_title  # noqa: E402
from pipeline.annotate.push import load_sessions  # noqa: E402
from pipeline.annotate.results import encode  # noqa: E402
from pipeline.annotate.settings import AnnotateSettings  # noqa: E402
from pipeline.annotate.tasks import build_task  # noqa: E402
from pipeline.catalog import render_catalog  # noqa: E402
from pipeline.project import Project  # noqa: E402
from pipeline.records import CatalogEntry, TranscriptRow, row_id_for  # noqa: E402
from pipeline.schema import load_schema  # noqa: E402
from pipeline.store import sha256_file, write_text_atomic  # noqa: E402
from pipeline.transcripts import rows_path, write_rows  # noqa: E402

DOCS = REPO / "docs" / "annotation.md"
TEMPLATE = REPO / "build" / "test-cache" / "labelstudio-1.23.2"
START, END = "<!-- bench_annotate:start -->", "<!-- bench_annotate:end -->"
SHAPE = {"couple": (174, 5875, ("Alan", "Evelyn")), "family": (17, 1204, ("Maria", "Nick", "Joel"))}
ANNOTATORS = ["ann@example.org", "bob@example.org", "cem@example.org"]
WORDS = ("I just feel like nobody listens when I try to explain what happened last weekend at home "
         "and then it turns into another fight about the phone and work and money").split()


def make_corpus(root: Path) -> int:
    project = Project(root)
    (root / "raw_video" / "bench").mkdir(parents=True)
    shutil.copytree(REPO / "annotation_schemas", project.schemas)
    video = root / "raw_video" / "bench" / "session.mp4"
    video.write_bytes(b"\0" * 1024)  # never played: only its path travels in the tasks
    rng = random.Random(7079)
    entries, total = [], 0
    for scenario, (sessions, rows, people) in SHAPE.items():
        for number in range(sessions):
            count = rows // sessions + (1 if number < rows % sessions else 0)
            sid = f"bench/{scenario}_{number:03d}"
            entries.append(CatalogEntry(session_id=sid, scenario=scenario, participants=people,  # type: ignore[arg-type]
                                        video=project.rel(video), sha256=sha256_file(video)))
            made, clock = [], 0.5
            speakers = (*people, "Therapist")
            for index in range(1, count + 1):
                speaker = speakers[index % len(speakers)]
                length = rng.uniform(2, 12)
                text = " ".join(rng.choice(WORDS) for _ in range(int(length * 2.5)))
                made.append(TranscriptRow(row_id=row_id_for(sid, clock, clock + length), session_id=sid,
                                          row_index=index, start=round(clock, 3), end=round(clock + length, 3),
                                          speaker=speaker, target=(people[0] if speaker != people[0] else "Therapist",),
                                          text=text, clip=project.rel(video)))
                clock += length + rng.uniform(0.1, 1.5)
            write_rows(rows_path(project, sid), made)
            total += count
    catalog = project.main_catalog
    write_text_atomic(catalog, render_catalog(project, catalog, entries))
    return total


def annotation_values(row: TranscriptRow, people: tuple[str, ...], rng: random.Random, schema) -> dict:  # noqa: ANN001
    """A complete, plausible annotation of one row (every field the row's speaker makes applicable)."""
    others = [p for p in (*people, "Therapist") if p != row.speaker]
    values = {"primary_speaker": row.speaker, "target": [rng.choice(others)], "dialogue_cleaned": row.text,
              "tone_of_voice": rng.choice(["calm", "sharp", "tearful", "flat and tired"]),
              "background_dialogue": [],
              "body_posture": [{"person": p, "description": "leaning back, arms crossed"} for p in people[:2]],
              "facial_expressions": [{"person": row.speaker if row.speaker in people else people[0],
                                      "description": "furrowed brow"}],
              "self_directed_behavior": [],
              "internal_emotion": [{"person": row.speaker, "emotion_description": "feels unheard",
                                    "intensity": rng.randint(0, 10)}],
              "interaction_behavior": [{"initiator": row.speaker, "target": [others[0]], "description": "looks at"}]}
    scenario = "family" if len(people) > 2 else "couple"
    if row.speaker == "Therapist":
        values |= {"support_strategy": [{"provider": "Therapist", "target": [people[0]],
                                         "strategy_type": rng.choice(schema.labels("support_strategy", scenario)),
                                         "strategy_content": "brings the quieter one in"}],
                   "relation_cycle_state": rng.choice(schema.labels("relation_pattern", scenario)),
                   "relation_cycle_reason": "one presses, the other retreats",
                   "relation_cycle_evidence_rows": sorted({max(1, row.row_index - 2), row.row_index})}
    else:
        values |= {"utterance_type": rng.choice(schema.labels("utterance_type", scenario)),
                   "viewpoints_attitudes": [{"source": row.speaker, "target": others[0], "viewpoint": "does not care",
                                             "attitude": "resentful"}]}
    return values


def prepare_annotations(root: Path, connection) -> int:  # noqa: ANN001
    """Replace each annotator's pushed projects with the same tasks carrying that annotator's annotation."""
    project = Project(root)
    settings = AnnotateSettings()
    schema = load_schema(project.schemas / settings.schema_file)
    client = Client(connection)
    ids = {email: user_id for user_id, email in client.users().items()}
    sessions, _ = load_sessions(project)
    rng = random.Random(3)
    made = 0
    for scenario in SHAPE:
        for email in ANNOTATORS:
            title = annotator_title(schema, scenario, email)  # type: ignore[arg-type]
            info = client.find_project(title)
            if info is not None:
                client.delete_project(info.id)
            info = client.create_project(title, "benchmark", build_config(schema, scenario), 1)  # type: ignore[arg-type]
            batch: list[dict] = []
            for session in (s for s in sessions if s.entry.scenario == scenario):
                entities = schema.entities(session.entry.scenario, session.entry.participants)
                for index, row in enumerate(session.rows):
                    task = build_task(schema, session, index, context_rows=settings.context_rows, media_url=None)
                    task["annotations"] = [
                        {"result": encode(schema, annotation_values(row, session.entry.participants, rng, schema),
                                          entities), "completed_by": ids[email]}]
                    batch.append(task)
                    if len(batch) == 250:
                        made += len(client.import_tasks(info.id, batch))
                        batch = []
            if batch:
                made += len(client.import_tasks(info.id, batch))
    credit_imported_annotations(server.ServerPaths.of(project).database)
    return made


def credit_imported_annotations(database: Path) -> None:
    """Make the imported annotations look as if each annotator had saved them through the API.

    Importing 21,237 annotations with their tasks takes a minute; creating them one by one through the API would
    take about 17 (48 ms each). But Label Studio bulk-creates imported annotations without `save()`, so their
    `updated_by` stays empty, and pull quarantines every one of them as not its annotator's work
    (pipeline/annotate/authorship.py). `save()` would have set `updated_by` to the saving account: the one the
    annotation is credited to. This sets exactly that, in the server's own database (SQLite, WAL: safe while it
    runs)."""
    import sqlite3

    with sqlite3.connect(database, timeout=60) as db:
        db.execute("UPDATE task_completion SET updated_by_id = completed_by_id WHERE updated_by_id IS NULL")


def phase(name: str, root: Path) -> dict:
    """Run one measured step in this process (called through a child process by `measure`)."""
    from pipeline.annotate.pull import pull_annotations
    from pipeline.annotate.push import push_rows

    project = Project(root)
    started = time.perf_counter()
    if name == "push":
        summary = push_rows(project)
        detail = {"imported": summary.imported, "present": sum(p.already_present for p in summary.projects)}
    else:
        pulled = pull_annotations(project)
        detail = {"records": pulled.records, "quarantined": pulled.quarantined,
                  "annotations": pulled.annotations, **pulled.timings}
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), **detail}


def server_cpu(pid: int) -> float:
    """CPU seconds the server process has used so far (utime + stime from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(name: str, root: Path, server_pid: int) -> dict:
    """One step in a fresh process; also the server's CPU time during it (figures that load cannot inflate)."""
    before = server_cpu(server_pid)
    out = subprocess.run([sys.executable, __file__, "--phase", name, "--root", str(root)], check=True,
                         capture_output=True, text=True)
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    return {**measured, "server_cpu_s": round(server_cpu(server_pid) - before, 1)}


def server_memory(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: round(int(status[key].split()[0]) / 1024) for key in ("VmRSS", "VmHWM")}


def write_docs(report: dict) -> None:
    push, idle, pull = report["push"], report["repush"], report["pull"]
    relist, done = report["relist"], report["annotated"]
    lines = [START, "",
             f"Measured {report['date']} on {report['machine']} (`benchmarks/bench_annotate.py`): "
             f"{report['rows']:,} rows in {report['sessions']} sessions, 3 annotators (each with their own project "
             f"per scenario), embedded server (SQLite), batches of {report['batch']} tasks; load average {report['load']} during the run "
             "(the machine is shared: figures vary by up to 2x with load).", "",
             "| step | wall time | goal | CPU: rescue / server | peak RSS (rescue process) | result |",
             "|---|---|---|---|---|---|",
             f"| push | {push['wall_s']:.1f} s | < 60 s | {push['cpu_s']} s / {push['server_cpu_s']} s | "
             f"{push['peak_rss_mb']} MB | {push['imported']:,} tasks imported |",
             f"| re-push, nothing new | {idle['wall_s']:.1f} s | < 5 s | {idle['cpu_s']} s / {idle['server_cpu_s']} s "
             f"| {idle['peak_rss_mb']} MB | {idle['imported']} imported, {idle['present']:,} already there |",
             f"| pull | {pull['wall_s']:.1f} s | < 30 s | {pull['cpu_s']} s / {pull['server_cpu_s']} s | "
             f"{pull['peak_rss_mb']} MB | {pull['annotations']:,} annotations -> {pull['records']:,} records, "
             f"{pull['quarantined']} quarantined |",
             f"| re-push, projects changed on the server (lists all tasks) | {relist['wall_s']:.1f} s | | "
             f"{relist['cpu_s']} s / {relist['server_cpu_s']} s | {relist['peak_rss_mb']} MB | "
             f"{relist['imported']} imported, {relist['present']:,} already there |",
             f"| re-push, nothing new, 21k annotations present | {done['wall_s']:.1f} s | < 5 s | "
             f"{done['cpu_s']} s / {done['server_cpu_s']} s | {done['peak_rss_mb']} MB | "
             f"{done['imported']} imported, {done['present']:,} already there |", "",
             f"Of the pull, {pull['wait_for_exports_s']:.1f} s went to waiting for Label Studio's JSON exports (the "
             f"server serialises every annotation; the next export is fetched while the previous one is parsed), "
             f"{pull['parse_s']:.1f} s to storing and parsing them, {pull.get('write_s', 0):.1f} s to writing the "
             "records.", "",
             f"Label Studio server memory after the run: {report['server']['VmRSS']} MB resident, peak "
             f"{report['server']['VmHWM']} MB.", "", END]
    text = DOCS.read_text(encoding="utf-8") if DOCS.exists() else "# Annotation\n"
    block = "\n".join(lines)
    if START in text and END in text:
        text = text[:text.index(START)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOCS.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the throw-away project (printed at the end)")
    parser.add_argument("--phase", choices=["push", "pull"], help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.root)))
        return
    root = Path(tempfile.mkdtemp(prefix="bench-annotate-"))
    paths = server.ServerPaths.of(Project(root))
    try:
        rows = make_corpus(root)
        print(f"corpus: {rows} rows in {sum(s for s, _, _ in SHAPE.values())} sessions under {root}", flush=True)
        template = TEMPLATE if (TEMPLATE / server.DB_NAME).exists() else None
        state = server.start(paths, AnnotateSettings(), project_root=REPO, template=template,
                             die_with_parent=True)
        connection = server.connect(Project(root), paths)
        add_annotators(Project(root), connection, ANNOTATORS)
        report: dict = {"rows": rows, "sessions": sum(s for s, _, _ in SHAPE.values()),
                        "batch": AnnotateSettings().batch_size}
        report["push"] = measure("push", root, state.pid)
        print("push", report["push"], flush=True)
        report["repush"] = measure("push", root, state.pid)
        print("re-push", report["repush"], flush=True)
        started = time.perf_counter()
        made = prepare_annotations(root, connection)
        print(f"prepared {made} tasks with one annotation each in {time.perf_counter() - started:.0f} s", flush=True)
        report["pull"] = measure("pull", root, state.pid)
        print("pull", report["pull"], flush=True)
        if report["pull"]["quarantined"] or not report["pull"]["records"]:  # a pull of nothing measures nothing
            raise SystemExit(f"the pull kept {report['pull']['records']} records and quarantined "
                             f"{report['pull']['quarantined']}: the prepared annotations are not valid; nothing written")
        report["relist"] = measure("push", root, state.pid)  # projects were replaced: push lists every task
        print("re-push after the projects changed", report["relist"], flush=True)
        report["annotated"] = measure("push", root, state.pid)
        print("re-push, annotations present", report["annotated"], flush=True)
        report["server"] = server_memory(state.pid)
        report["load"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        report["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d")
        report["machine"] = f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs"
        write_docs(report)
        print(f"figures written to {DOCS.relative_to(REPO)}")
    finally:
        server.stop(paths)
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
