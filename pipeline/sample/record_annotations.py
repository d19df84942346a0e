"""Record the stored annotation export of the sample sessions, once, through a real Label Studio server.

    python -m pipeline.sample.record_annotations [--root DIR] [--out pipeline/sample/annotations]

What it does, all through the real embedded server and the pipeline's own code:
1. a project with the two sample sessions built through `rows` (real ASR + diarization); `--root`
   reuses one, else a temporary one is made (`rescue sample` + the per-session stages, ~4 min);
2. a fresh embedded server (its own data dir under the root's build/labelstudio/, which must not exist);
3. `push_rows` for the three simulated annotators (each gets their own project per scenario), then their
   accounts and the adjudicator's (`add_annotators`);
4. every annotator's answers (`simulated_annotations`, placed on the rows by time overlap with the
   sample's truth turns) encoded with `results.encode` and created with `completed_by` in that
   annotator's own project;
5. pull, adjudicate, the queue pushed to the adjudication projects, and the adjudicator's answers (the
   reference labels of each queued row) created there; the result is checked: gold for both sessions;
6. the full JSON exports of both kinds of project written to `--out` with `recording.json` (account id ->
   email, how it was made); the annotators' projects of a scenario are written as one export, each row
   one task holding every annotator's annotation (the stored format, independent of the project layout). No token or password is written: exports hold account ids, not secrets.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import RescueError
from pipeline.project import Project

if TYPE_CHECKING:
    from pipeline.annotate.labelstudio import Client
    from pipeline.schema import AnnotationSchema

OUT = Path(__file__).resolve().parent / "annotations"
REPO = Path(__file__).resolve().parents[2]


def export_text(tasks: list[dict[str, object]]) -> str:
    """The export as a JSON array with one task per line: complete, and reviewable task by task in a diff."""
    return "[\n" + ",\n".join(json.dumps(task, ensure_ascii=False) for task in tasks) + "\n]\n"


def _build_samples(root: Path) -> Project:
    from pipeline.engine.context import StepContext
    from pipeline.engine.runner import run_stage
    from pipeline.sample_sessions import install_samples
    from pipeline.engine.session_steps import STAGES

    project = Project(root)
    project.raw_video.mkdir(parents=True, exist_ok=True)
    if not project.schemas.exists():
        shutil.copytree(REPO / "annotation_schemas", project.schemas)
    install_samples(project)
    context = StepContext.load(project)
    for stage in STAGES.values():
        report = run_stage(context, stage, list(context.catalog))
        if report.failed:
            raise RescueError(f"{stage.name} failed: {report.failed}", "fix the sample build first (`rescue build`)")
    return project


def _annotate(project: Project, client: Client, schema: AnnotationSchema, accounts: dict[str, int],
              adjudication: bool) -> dict[str, object]:
    """Create the simulated annotators' (or the adjudicator's) annotations; returns what was placed where."""
    from pipeline.annotate.results import encode
    from pipeline.annotate.projects import annotator_title
    from pipeline.catalog import load_catalog
    from pipeline.annotate.build_session import adjudication_titles
    from pipeline.sample.annotators import ADJUDICATOR, ANNOTATORS
    from pipeline.sample.row_answers import annotator_answers, reference_answers, sample_truth
    from pipeline.transcripts import read_rows

    titles = adjudication_titles(schema)
    report: dict[str, object] = {}
    samples = set(_sample_ids())
    for item in load_catalog(project):
        entry = item.entry
        if entry.session_id not in samples:
            continue
        rows = read_rows(project, entry.session_id)
        truth = sample_truth(project, entry.session_id)
        entities = schema.entities(entry.scenario, entry.participants)
        if adjudication:
            answers, mapping = reference_answers(entry.session_id, truth, rows, schema)
            per_row = {(ADJUDICATOR, row_id): values for row_id, values in answers.items()}
        else:
            per_row, mapping = annotator_answers(entry.session_id, truth, rows, schema, ANNOTATORS)
        made = 0
        tasks: dict[str, dict[str, list[int]]] = {}  # project title -> row id -> task ids
        for (email, row_id), values in sorted(per_row.items()):
            title = titles[entry.scenario] if adjudication else annotator_title(schema, entry.scenario, email)
            if title not in tasks:
                info = client.find_project(title)
                if info is None:
                    raise RescueError(f"no project {title!r} on the recording server", "push the sample rows first")
                tasks[title] = client.task_keys(info.id)
            for task_id in tasks[title].get(row_id, [])[:1]:
                client.create_annotation(task_id, encode(schema, values, entities), completed_by=accounts[email])
                made += 1
        report[entry.session_id] = {"rows": len(rows), "annotations": made,
                                    "turns_without_own_row": list(mapping.unplaced_turns)}
    return report


def _sample_ids() -> list[str]:
    from pipeline.sample.annotators import SAMPLE_NAMES, reference_labels

    return [reference_labels(name).session_id for name in SAMPLE_NAMES]


def record(project: Project, out: Path, template: Path | None = None) -> dict[str, object]:
    from pipeline.agreement.gold import run_adjudicate, run_gold
    from pipeline.agreement.queue_labelstudio import pull_adjudications, push_queue
    from pipeline.annotate import server
    from pipeline.annotate.accounts import add_annotators
    from pipeline.annotate.labelstudio import Client
    from pipeline.annotate.pull import pull_annotations
    from pipeline.annotate.push import push_rows, schema_path
    from pipeline.annotate.build_session import adjudication_titles, fetch_annotation_exports, fetch_exports
    from pipeline.annotate.stored import FORMAT, RECORDING, export_name
    from pipeline.sample.annotators import ADJUDICATOR, ANNOTATORS
    from pipeline.schema import load_schema
    from pipeline.settings import load_settings
    from pipeline.store import sha256_file
    from pipeline.transcripts import rows_path

    settings = load_settings(project.root)
    annotate = settings.annotate.model_copy(update={"server_venv": str(REPO / settings.annotate.server_venv)})
    schema = load_schema(schema_path(project, annotate))
    paths = server.ServerPaths.of(project)
    if paths.data.exists():
        raise RescueError(f"{paths.data} exists: the recording needs a fresh, empty server",
                          f"move {paths.base} away, or pass another --root")
    server.start(paths, annotate, project_root=project.root, template=template, die_with_parent=True)
    try:
        connection = server.connect(project, paths)
        client = Client(connection)
        push_rows(project, connection, settings=annotate, schema=schema, annotators=ANNOTATORS)
        made = [*add_annotators(project, connection, list(ANNOTATORS)),
                *add_annotators(project, connection, [ADJUDICATOR], role="adjudicator")]  # the roster's roles
        accounts = {a.email: a.user_id for a in made}
        placed = _annotate(project, client, schema, accounts, adjudication=False)
        pull_annotations(project, connection, settings=annotate, schema=schema)
        agreement = settings.agreement
        _, items = run_adjudicate(project, agreement)
        if items:
            push_queue(project, agreement, items, connection)
            _annotate(project, client, schema, accounts, adjudication=True)
            pull_adjudications(project, agreement, connection)
        gold = run_gold(project, agreement)
        if gold.sessions_pending:
            raise RescueError(f"the recorded annotations leave gold pending: {gold.sessions_pending}",
                              "check the simulated annotators and the adjudicator's answers")
        exports = {"annotation": _per_row(fetch_annotation_exports(client, schema)),
                   "adjudication": {e.scenario: e.tasks for e in fetch_exports(client, adjudication_titles(schema))}}
        users = client.users()
    finally:
        server.stop(paths)
    out.mkdir(parents=True, exist_ok=True)
    used = set()
    for kind, found in exports.items():
        for scenario, tasks in found.items():
            used |= {a["completed_by"] for t in tasks for a in t.get("annotations") or []}
            (out / export_name(scenario, kind)).write_text(  # type: ignore[arg-type]
                export_text(tasks), encoding="utf-8")
    meta = {
        "format": FORMAT,
        "note": "Synthetic demo annotations of the built-in sample sessions: three simulated annotators "
                "(pipeline/sample/annotators.py) and an adjudicator giving the reference labels, made through a "
                "real Label Studio server by `python -m pipeline.sample.record_annotations`. `rescue build` "
                "re-creates them when the server holds no annotations for these sessions.",
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "label_studio_sdk": version("label-studio-sdk"),
        "schema": schema.id,
        "scenarios": sorted({s for found in exports.values() for s in found}),
        "users": {str(user_id): users[user_id] for user_id in sorted(used)},
        "sessions": {sid: {**info, "rows_sha256": sha256_file(rows_path(project, sid))}  # type: ignore[dict-item]
                     for sid, info in placed.items()},
        "queue_items": len(items),
        "gold_sessions": list(gold.sessions_written),
    }
    (out / RECORDING).write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def _per_row(exports: list) -> dict[str, list[dict[str, object]]]:  # type: ignore[type-arg]
    """scenario -> one task per row holding the annotations of every annotator's project (first project's task)."""
    merged: dict[str, dict[str, dict]] = {}  # type: ignore[type-arg]
    for export in exports:
        for task in export.tasks:
            rows = merged.setdefault(export.scenario, {})
            row_id = (task.get("meta") or {}).get("row_id")
            if row_id in rows:
                rows[row_id]["annotations"] += task.get("annotations") or []
            else:
                rows[row_id] = task
    return {scenario: list(rows.values()) for scenario, rows in merged.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, help="a project root whose sample sessions are built through `rows`")
    parser.add_argument("--out", type=Path, default=OUT, help="where the exports go (default: %(default)s)")
    parser.add_argument("--template", type=Path, help="a migrated server database to start from (tests' cache)")
    args = parser.parse_args(argv)
    try:
        if args.root:
            project = _build_samples(args.root.resolve())
            meta = record(project, args.out, args.template)
        else:
            with tempfile.TemporaryDirectory(prefix="rescue-record-") as tmp:
                meta = record(_build_samples(Path(tmp).resolve()), args.out, args.template)
    except RescueError as exc:
        print(f"error: {exc.message}\n  fix: {exc.fix}", file=sys.stderr)
        return 1
    print(f"recorded {sum(i['annotations'] for i in meta['sessions'].values())} annotations of "  # type: ignore[union-attr]
          f"{len(meta['sessions'])} sessions (+ adjudications of {meta['queue_items']} queued fields) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
