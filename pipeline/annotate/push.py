"""`rescue push`: transcript rows -> one Label Studio project per scenario, schema version and annotator.

Every annotator labels the same rows in a project of their own (see `projects`), so nobody sees another
annotator's answers while labelling. Idempotent by row id, per project, with the server as the only
bookkeeping: before importing, push lists the project's tasks (`meta.row_id`) and imports only rows that
have no task yet; an annotator added later gets their projects, with every row, on the next push. Each
import request is one database transaction on the server, so a crash mid-push leaves whole batches, and
the next push imports exactly the rest: no duplicate, no gap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from pipeline.annotate.config import build_config
from pipeline.annotate.deleted_projects import GoneProject, gone_projects, refuse_gone
from pipeline.annotate.drafted import TRANSCRIPT_VERSION, SessionModelDrafts, load_model_drafts
from pipeline.annotate.guards import guards_of
from pipeline.annotate.labelstudio import Client, Connection, ProjectInfo
from pipeline.annotate.media_root import publish_media
from pipeline.annotate.present import Present
from pipeline.annotate.projects import annotation_projects, annotator_title, project_title
from pipeline.annotate.redraft import DraftPlan, plan_drafts, refresh_drafts
from pipeline.annotate.roster import Stranger
from pipeline.annotate.server import ServerPaths, connect
from pipeline.annotate.settings import AnnotateSettings
from pipeline.annotate.tasks import SessionRows, build_task, session_video
from pipeline.catalog import load_catalog
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.records import Record, Scenario
from pipeline.schema import SCENARIOS, AnnotationSchema, load_schema
from pipeline.settings import load_settings
from pipeline.transcripts import read_rows, rows_path

__all__ = ["ProjectPush", "PushSummary", "draft_notes", "gating_notes", "load_sessions", "project_title", "push_rows",
           "schema_path"]

Progress = Callable[[str, int, int], None]  # project label ("couple / ann@lab.org"), rows imported so far, to import


class ProjectPush(Record):
    scenario: Scenario
    annotator: str = Field(description="the account whose own project this is")
    title: str
    project_id: int
    project_url: str
    rows: int = Field(description="rows of the pushed sessions in this scenario")
    imported: int = Field(description="tasks created by this push")
    already_present: int = Field(description="rows that already had a task (matched by row id)")
    stale: int = Field(description="tasks of the pushed sessions whose row no longer exists")
    duplicates: int = Field(description="extra tasks for a row id that has more than one (should be 0)")
    listed: bool = Field(description="whether every task was listed (else the local copy matched the server)")
    batches: int
    config_updated: bool
    model_version: str = Field("", description="the project's model_version: the drafts Label Studio pre-fills")
    redrafted: int = Field(0, description="unannotated tasks whose prediction this push replaced (new drafts)")
    drafts_kept: int = Field(0, description="annotated tasks whose draft differs from the new one: left unchanged")
    drafts_hidden: int = Field(0, description="unannotated tasks drafted by another model version than the "
                                              "project's (Label Studio does not pre-fill them)")


class PushSummary(Record):
    schema_version: str
    server: str
    annotators: tuple[str, ...] = Field(description="who got their own project of each scenario")
    projects: tuple[ProjectPush, ...]
    sessions_without_rows: tuple[str, ...] = ()
    rows_without_media: int = 0
    drafts: dict[str, str] = Field(default_factory=dict, description="session -> model version of its drafts file")
    drafts_dropped: dict[str, int] = Field(default_factory=dict, description="session -> drafts of rows that no "
                                                                             "longer exist (never pushed)")
    drafts_refused: int = Field(0, description="drafted fields the schema refused (the transcript draft stands)")
    strangers: tuple[Stranger, ...] = Field((), description="accounts of the server not on the roster (no project)")
    recreated: tuple[str, ...] = Field((), description="projects that were deleted on the server and made again, "
                                                       "empty (--recreate-deleted), one line each")
    draft_sources: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="session -> field -> where its drafts come from (model, baseline or "
        "nothing), for gated drafts (gold-model); sessions with ungated drafts are not listed")

    @property
    def imported(self) -> int:
        return sum(p.imported for p in self.projects)

    def scenario_imported(self) -> dict[str, int]:
        """Tasks created per scenario, over its annotators' projects."""
        found: dict[str, int] = {}
        for part in self.projects:
            found[part.scenario] = found.get(part.scenario, 0) + part.imported
        return found


def schema_path(project: Project, settings: AnnotateSettings) -> Path:
    return project.schemas / settings.schema_file


def load_sessions(project: Project, session_ids: tuple[str, ...] = ()) -> tuple[list[SessionRows], list[str]]:
    """Catalog sessions with rows (build/transcripts/<id>/rows.jsonl); the ids of those without rows."""
    entries = [item.entry for item in load_catalog(project)]
    known = {entry.session_id for entry in entries}
    unknown = [sid for sid in session_ids if sid not in known]
    if unknown:
        raise RescueError(f"unknown session id(s): {', '.join(unknown)}", "run `rescue status` to list the sessions")
    chosen = [entry for entry in entries if not session_ids or entry.session_id in session_ids]
    sessions, missing = [], []
    for entry in chosen:
        if not rows_path(project, entry.session_id).exists():
            missing.append(entry.session_id)
            continue
        rows = tuple(read_rows(project, entry.session_id))
        sessions.append(SessionRows(entry, rows, session_video(project, entry.session_id)))
    return sessions, missing


def serve_media(project: Project, sessions: list[SessionRows]) -> list[Path]:
    """Publish the sessions' media into the embedded server's media root (its document root); returns the
    folders there to connect as local-files storages."""
    return publish_media(project, ServerPaths.of(project).media, sessions)


def _ensure_project(client: Client, schema: AnnotationSchema, scenario: Scenario, annotator: str,
                    config: str) -> tuple[ProjectInfo, bool]:
    title = annotator_title(schema, scenario, annotator)
    info = client.find_project(title)
    if info is None:
        description = (f"RESCUE-BENCH rows, {scenario} sessions, annotation schema {schema.id}: the project of "
                       f"{annotator} only (annotators label independently, each in their own project). Made by "
                       "`rescue push`; the labelling config is generated from the schema: do not edit it here.")
        return client.create_project(title, description, config, 1), False
    updated = False
    if info.label_config.strip() != config.strip():
        try:
            client.update_project(info.id, label_config=config)
        except RescueError as exc:
            raise RescueError(f"Label Studio rejected the new label config of project {title!r}: {exc.message}",
                              f"keep changes to schema {schema.id} compatible with its existing annotations, or "
                              "give the changed schema a new version (a new project)") from exc
        updated = True
    if info.maximum_annotations != 1:  # one annotator per project: the row goes to nobody else here
        client.update_project(info.id, maximum_annotations=1)
    return info, updated


def push_rows(project: Project, connection: Connection | None = None, *, settings: AnnotateSettings | None = None,
              schema: AnnotationSchema | None = None, session_ids: tuple[str, ...] = (),
              progress: Progress | None = None, full_check: bool = False,
              annotators: Sequence[str] | None = None, recreate_deleted: bool = False) -> PushSummary:
    """Create/refresh every annotator's project of each scenario and import every row that has no task there.

    `annotators` defaults to the roster (`roster.counted_annotators`): [tool.rescue.agreement] `annotators` when
    set, else the annotators `rescue annotators add` put on the roster; never an adjudicator, never an account
    that is only on the server (reported as a stranger). A project the newest snapshot holds answers of that is
    gone from the server stops the push (`deleted_projects`) unless `recreate_deleted`."""
    loaded = load_settings(project.root)
    settings = settings or loaded.annotate
    schema = schema or load_schema(schema_path(project, settings))
    sessions, missing = load_sessions(project, session_ids)
    connection = connection or connect(project)
    client = Client(connection)
    client.whoami()  # a wrong token or a dead server fails here, before any work
    guards = guards_of(project, client, loaded.agreement.annotators, loaded.agreement.adjudicators)
    roster = (tuple(sorted({a.strip().lower() for a in annotators} - guards.adjudicators))
              if annotators is not None else guards.counted)
    gone = gone_projects(project, annotation_projects(client, schema), roster) if sessions else []
    if not recreate_deleted:
        refuse_gone(gone)
    drafts = {s.session_id: found for s in sessions
              if (found := load_model_drafts(project, schema, s.session_id, s.rows)) is not None}
    plan = plan_drafts(schema, sessions, drafts)
    results = []
    for scenario in SCENARIOS:
        chosen = [s for s in sessions if s.entry.scenario == scenario]
        if not chosen:
            continue
        config = build_config(schema, scenario)
        for annotator in roster:
            results.append(_push_project(project, client, schema, scenario, annotator, config, chosen, settings,
                                         progress, full_check, plan))
    no_media = sum(1 for s in sessions for r in s.rows if not (r.clip or s.session_video))
    return PushSummary(schema_version=schema.id, server=connection.url, annotators=roster, projects=tuple(results),
                       sessions_without_rows=tuple(missing), rows_without_media=no_media,
                       drafts={sid: d.model_version for sid, d in sorted(drafts.items())},
                       drafts_dropped=_dropped(drafts), drafts_refused=plan.refused, strangers=guards.strangers,
                       recreated=tuple(_recreated(g) for g in gone),
                       draft_sources={sid: dict(d.sources) for sid, d in sorted(drafts.items()) if d.sources})


def _recreated(gone: GoneProject) -> str:
    if gone.replaced_by is not None:
        return f"{gone.line()}: the new project does not hold the old answers"
    return f"{gone.line()}: made again, empty (--recreate-deleted)"


def draft_notes(summary: PushSummary) -> list[str]:
    """What push did with the model drafts, one line each (also printed by `rescue push`)."""
    notes = [f"{sid}: {count} draft(s) of rows that no longer exist (re-segmented) dropped, not pushed"
             for sid, count in summary.drafts_dropped.items()]
    notes += gating_notes(summary)
    if summary.drafts_refused:
        notes.append(f"{summary.drafts_refused} drafted field(s) refused by schema {summary.schema_version} (those "
                     "fields show the transcript draft)")
    for p in summary.projects:
        if p.redrafted or p.drafts_kept:
            notes.append(f"{p.title}: {p.redrafted} unannotated task(s) got the new drafts ({p.model_version}); "
                         f"{p.drafts_kept} annotated task(s) keep the draft their annotator saw")
        if p.drafts_hidden:
            notes.append(f"{p.title}: {p.drafts_hidden} unannotated task(s) carry drafts of another model version "
                         f"than the project's {p.model_version}; Label Studio does not pre-fill them")
    return notes


SOURCE_WORDS = {"model": "from the model", "baseline": "from the majority baseline",
                "nothing": "left empty"}


def gating_notes(summary: PushSummary) -> list[str]:
    """Per session with gated drafts: which fields are drafted from the model, the baseline, or left empty."""
    notes = []
    for sid, sources in summary.draft_sources.items():
        parts = []
        for source, words in SOURCE_WORDS.items():
            fields = [name for name, found in sources.items() if found == source]
            if fields:
                parts.append(f"{words}: {', '.join(fields)}")
        notes.append(f"{sid}: drafts {'; '.join(parts)} (why: the gates in build/preannotate/{sid}/drafts.json)")
    return notes


def _dropped(drafts: dict[str, SessionModelDrafts]) -> dict[str, int]:
    return {sid: d.dropped for sid, d in sorted(drafts.items()) if d.dropped}


def _push_project(project: Project, client: Client, schema: AnnotationSchema, scenario: Scenario, annotator: str,
                  config: str, sessions: list[SessionRows], settings: AnnotateSettings, progress: Progress | None,
                  full_check: bool, plan: DraftPlan) -> ProjectPush:
    info, updated = _ensure_project(client, schema, scenario, annotator, config)
    if client.connection.source == "embedded" and settings.media_url is None:
        for folder in serve_media(project, sessions):
            client.ensure_local_storage(info.id, str(folder))
    present = Present(project, client, info.id, info.title, full_check=full_check)
    wanted = [(s, i) for s in sessions for i in range(len(s.rows))]
    todo = [(s, i) for s, i in wanted if s.rows[i].row_id not in present.rows]
    imported = batches = 0
    with_draft = False
    label = f"{scenario} / {annotator}"
    if progress:
        progress(label, 0, len(todo))
    for start in range(0, len(todo), settings.batch_size):
        chunk = todo[start:start + settings.batch_size]
        batch = [build_task(schema, s, i, context_rows=settings.context_rows, media_url=settings.media_url,
                            draft=plan.rows[s.rows[i].row_id].draft) for s, i in chunk]
        with_draft = with_draft or any("predictions" in task for task in batch)
        created = client.import_tasks(info.id, batch)
        present.imported([s.rows[i].row_id for s, i in chunk], created)
        imported += len(created)
        batches += 1
        if progress:
            progress(label, imported, len(todo))
    redraft = None
    if plan.model_drafts or info.model_version not in ("", TRANSCRIPT_VERSION):  # model drafts now or before
        redraft = refresh_drafts(client, info, schema, plan)
    elif with_draft and info.model_version != TRANSCRIPT_VERSION:
        client.update_project(info.id, model_version=TRANSCRIPT_VERSION)  # show the drafts to annotators
    pushed_sessions = {s.session_id for s in sessions}
    current = {s.rows[i].row_id for s, i in wanted}
    stale = sum(1 for row_id in present.rows
                if row_id.rsplit("@", 1)[0] in pushed_sessions and row_id not in current)
    return ProjectPush(
        scenario=scenario, annotator=annotator, title=info.title, project_id=info.id,
        project_url=f"{client.connection.url}/projects/{info.id}/data", rows=len(wanted), imported=imported,
        already_present=len(wanted) - len(todo), stale=stale,
        duplicates=sum(count - 1 for count in present.rows.values()), listed=present.listed, batches=batches,
        config_updated=updated,
        model_version=redraft.version if redraft else (TRANSCRIPT_VERSION if with_draft else info.model_version),
        redrafted=redraft.replaced if redraft else 0, drafts_kept=redraft.kept_annotated if redraft else 0,
        drafts_hidden=redraft.hidden if redraft else 0)
