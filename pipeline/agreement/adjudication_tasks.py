"""Which Label Studio task adjudicates which row: build/adjudication/tasks.json, written when the queue is pushed
and when adjudications are pulled, read by the agreement report to link each disputed row to its adjudication
task (project ids stay the same across server restarts; only the address changes, and links take that from the
settings: pipeline.annotate.addresses)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline import layout
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.store import write_text_atomic

TASKS_FILE = "tasks.json"


class AdjudicationTasks(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    projects: dict[str, int] = {}  # scenario -> adjudication project id
    tasks: dict[str, int] = {}  # row id -> its newest adjudication task (a row asked again gets a newer task)


def read_adjudication_tasks(project: Project) -> AdjudicationTasks:
    path = layout.adjudication_dir(project) / TASKS_FILE
    if not path.is_file():
        return AdjudicationTasks()
    try:
        return AdjudicationTasks.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise RescueError(f"{project.rel(path)} is not a readable list of adjudication tasks "
                          f"({exc.__class__.__name__})",
                          "delete it; `rescue adjudicate --push` or `--pull` writes it again") from exc


def record_adjudication_tasks(project: Project, scenario: str, project_id: int,
                              tasks: Iterable[tuple[int, str]]) -> None:
    """Add one scenario's adjudication project and its (task id, row id) pairs to the file."""
    known = read_adjudication_tasks(project)
    rows = dict(known.tasks)
    for task_id, row_id in sorted(tasks):
        if row_id:
            rows[row_id] = task_id  # ascending: the newest task of a row wins
    updated = AdjudicationTasks(projects={**known.projects, scenario: project_id}, tasks=dict(sorted(rows.items())))
    write_text_atomic(layout.adjudication_dir(project) / TASKS_FILE, updated.model_dump_json(indent=1) + "\n")
