"""Which rows already have a task: the server is the truth, a local copy only saves listing it.

Listing every task's row id is slow on a big project (seconds to tens of seconds once tasks carry
annotations), so push keeps the last listing in build/labelstudio/present/ with the project's
fingerprint: number of tasks, highest task id and that task's row id, read in one cheap request.
The copy is used only while the server's fingerprint still matches it; any other change on the
server (tasks deleted or imported by someone else, a crash between an import and the copy's update)
changes the fingerprint and push lists the tasks again. `--full-check` always lists them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from pipeline import layout
from pipeline.annotate.labelstudio import Client
from pipeline.project import Project
from pipeline.records import Record
from pipeline.store import write_text_atomic


class PresentRows(Record):
    server: str
    project_id: int
    total: int
    max_task_id: int
    max_row_id: str
    rows: dict[str, int]  # row id -> number of tasks for it (more than 1 would be a duplicate)


def _path(project: Project, server: str, title: str) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{server}-{title}")
    return layout.labelstudio_dir(project) / "present" / f"{name}.json"


class Present:
    """The row ids of one project's tasks, kept in step with the imports push makes."""

    def __init__(self, project: Project, client: Client, project_id: int, title: str, *, full_check: bool) -> None:
        self.client, self.project_id = client, project_id
        source = client.connection
        server = "embedded" if source.source == "embedded" else source.url
        self.path = _path(project, server, title)
        total, max_id, max_row = client.task_fingerprint(project_id)
        cached = None if full_check else self._read()
        if (cached is not None and cached.server == server and cached.project_id == project_id
                and (cached.total, cached.max_task_id, cached.max_row_id) == (total, max_id, max_row)):
            self.state = cached
            self.listed = False
        else:
            keys = client.task_keys(project_id)
            self.state = PresentRows(server=server, project_id=project_id, total=sum(len(v) for v in keys.values()),
                                     max_task_id=max((i for ids in keys.values() for i in ids), default=0),
                                     max_row_id="", rows={row_id: len(ids) for row_id, ids in keys.items()})
            if self.state.max_task_id:
                self.state = self.state.model_copy(update={"max_row_id": next(
                    row for row, ids in keys.items() if self.state.max_task_id in ids)})
            self.listed = True
            self._write()

    def _read(self) -> PresentRows | None:
        try:
            return PresentRows.model_validate_json(self.path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, json.JSONDecodeError):
            return None

    def _write(self) -> None:
        write_text_atomic(self.path, self.state.model_dump_json() + "\n")

    @property
    def rows(self) -> dict[str, int]:
        return self.state.rows

    def imported(self, row_ids: list[str], task_ids: list[int]) -> None:
        """Record one successful import (tasks are created in request order, so the last is the highest)."""
        rows = dict(self.state.rows)
        for row_id in row_ids:
            rows[row_id] = rows.get(row_id, 0) + 1
        self.state = self.state.model_copy(update={
            "rows": rows, "total": self.state.total + len(task_ids),
            "max_task_id": max([self.state.max_task_id, *task_ids]), "max_row_id": row_ids[-1] if row_ids else
            self.state.max_row_id})
        self._write()
