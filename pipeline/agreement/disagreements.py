"""Where annotators disagree: per measure, the units whose coded answers differ, with the row's transcript
text, each annotator's answer and a link to the Label Studio task.

Works on the coded ratings (prepared.py), so "differ" means exactly what the coefficients count: two given
values that are not equal after normalisation (an empty answer is no answer, as in alpha). Text measures
are left out: free text nearly always differs word for word; its agreement is the similarity figure.
Each measure lists at most `limit` units (in session and row order) and counts the rest, so the report stays
readable at full size.

Links: annotations live in one Label Studio project per annotator, so a row has one task per annotator: the
report links each annotator's task (project ids from the pull summary, task ids from the records) and the row's
adjudication task where the queue was pushed (build/adjudication/tasks.json). The address is the configured one
(pipeline.annotate.addresses.link_base: `public_url`, the external server, or the embedded server's gateway on
its kept port), never the port the server happened to have at pull time, and never with credentials.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pipeline.agreement.adjudication_tasks import read_adjudication_tasks
from pipeline.agreement.inputs import SUMMARY_FILE
from pipeline.agreement.prepared import Prepared
from pipeline.agreement.ratings import Ratings
from pipeline.agreement.results import Disagreement, GivenAnswer, MeasureDisagreements, TaskLink
from pipeline.errors import RescueError
from pipeline.project import Project
from pipeline.transcripts import read_rows, rows_path


def shown_value(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(map(str, value)) if value else "(none)"
    return str(value)


def task_projects(snapshot_file: Path) -> dict[tuple[str, str], int]:
    """(scenario, annotator) -> project id from the pull summary beside the snapshot; {} when there is none."""
    path = snapshot_file.parent / SUMMARY_FILE
    if not path.is_file():
        return {}
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        return {(str(p["scenario"]), str(p["annotator"])): int(p["project_id"])
                for p in summary.get("projects", ()) if p.get("annotator") and p.get("project_id") is not None}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RescueError(f"{path} is not a readable pull summary ({exc})",
                          "run `rescue pull` for a fresh snapshot; never edit snapshot files by hand") from exc


def task_url(base: str, project_id: int, task_id: int) -> str:
    return f"{base}/projects/{project_id}/data?task={task_id}"


class _Links:
    """Every known task of a row: each annotator's (in answer order), then the adjudication task."""

    def __init__(self, project: Project, prepared: Prepared) -> None:
        from pipeline.annotate.addresses import link_base
        from pipeline.settings import load_settings

        self.base = link_base(project, load_settings(project.root).annotate)
        self.projects = task_projects(prepared.path) if self.base else {}
        self.adjudication = read_adjudication_tasks(project) if self.base else None
        self.task_ids = prepared.task_ids

    def of(self, scenario: str, row_id: str, annotators: list[str]) -> tuple[TaskLink, ...]:
        if not self.base:
            return ()
        links = []
        for annotator in annotators:
            project_id, task_id = self.projects.get((scenario, annotator)), self.task_ids.get((row_id, annotator))
            if project_id is not None and task_id:
                links.append(TaskLink(kind="annotator", annotator=annotator, label=f"{annotator}'s task {task_id}",
                                      url=task_url(self.base, project_id, task_id)))
        assert self.adjudication is not None
        project_id, task_id = self.adjudication.projects.get(scenario), self.adjudication.tasks.get(row_id)
        if project_id is not None and task_id:
            links.append(TaskLink(kind="adjudication", url=task_url(self.base, project_id, task_id),
                                  label=f"adjudication task {task_id}"))
        return tuple(links)


def _differing_units(r: Ratings) -> tuple[np.ndarray, int]:
    """Units with two or more ratings whose codes differ (ascending), and the number of pairable units."""
    if not len(r.unit):
        return np.zeros(0, dtype=np.int64), 0
    counts = np.bincount(r.unit, minlength=r.n_units)
    low = np.full(r.n_units, np.iinfo(np.int32).max, dtype=np.int64)
    high = np.full(r.n_units, -1, dtype=np.int64)
    np.minimum.at(low, r.unit, r.code)
    np.maximum.at(high, r.unit, r.code)
    pairable = counts >= 2
    return np.flatnonzero(pairable & (low != high)), int(pairable.sum())


class _Texts:
    """Transcript text per row id, read once per session and only for the sessions shown."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.by_session: dict[str, dict[str, str]] = {}

    def get(self, session_id: str, row_id: str) -> str:
        if session_id not in self.by_session:
            rows = read_rows(self.project, session_id) if rows_path(self.project, session_id).is_file() else []
            self.by_session[session_id] = {row.row_id: row.text for row in rows}
        return self.by_session[session_id].get(row_id, "")


def find_disagreements(project: Project, prepared: Prepared, limit: int) -> tuple[MeasureDisagreements, ...]:
    links = _Links(project, prepared)
    texts = _Texts(project)
    rows = prepared.rows
    out = []
    for measure_id, r in prepared.ratings.items():
        if r.measure.level == "text":
            continue
        units, pairable = _differing_units(r)
        order = np.argsort(r.unit_row[units], kind="stable") if len(units) else units
        chosen = units[order][:limit]
        by_unit = np.argsort(r.unit, kind="stable")
        starts = np.searchsorted(r.unit[by_unit], chosen)
        ends = np.searchsorted(r.unit[by_unit], chosen, side="right")
        shown = []
        for unit, start, end in zip(chosen.tolist(), starts.tolist(), ends.tolist()):
            picked = by_unit[start:end]
            given = sorted((r.annotators[int(r.rater[i])], shown_value(r.values[int(r.code[i])])) for i in picked)
            row = int(r.unit_row[unit])
            row_id, session = rows.row_ids[row], rows.sessions[int(rows.row_session[row])]
            scenario = rows.session_scenario[int(rows.row_session[row])]
            shown.append(Disagreement(session_id=session, row_id=row_id, row_index=int(rows.row_index[row]),
                                      item=r.unit_key[unit], text=texts.get(session, row_id),
                                      answers=tuple(GivenAnswer(annotator=a, answer=v) for a, v in given),
                                      links=links.of(scenario, row_id, list(dict.fromkeys(a for a, _ in given)))))
        out.append(MeasureDisagreements(measure=measure_id, units=pairable, total=len(units), shown=tuple(shown)))
    return tuple(out)
