"""Annotation projects that held answers and are gone from the server: push never re-creates one silently.

The newest intact snapshot says which annotator projects existed (with their ids) and what they held. When
one of them is gone (deleted through the API: any account of the open-source server may), push stops and says
so: the answers are kept by pull (`carry_forward`), and a new empty project would look like work that was
never done. The user then restores the server from a backup, or lets push make the project again, empty
(`rescue push --recreate-deleted`); the kept answers stay in the snapshots until the annotator answers those
rows again or the loss is accepted (`rescue pull --accept-deleted`). Push does not re-import the kept answers
under the annotator's name: the server would record them as made by the pipeline's admin for the annotator,
indistinguishable from an answer the annotator saved, which they did not save in that project.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pipeline import layout
from pipeline.annotate.carry_forward import previous_snapshot
from pipeline.annotate.projects import AnnotationProject
from pipeline.errors import RescueError
from pipeline.project import Project


@dataclass(frozen=True)
class GoneProject:
    scenario: str
    annotator: str
    project_id: int
    records: int  # records of that project the snapshot holds (its own export's, and answers kept from it)
    snapshot: str
    replaced_by: int | None = None  # a project of the same title and another id made since (not by this push)

    def line(self) -> str:
        known = f" (id {self.project_id})" if self.project_id >= 0 else ""
        now = f", replaced by a new project (id {self.replaced_by})" if self.replaced_by is not None else ""
        return (f"the {self.scenario} project of {self.annotator}{known} is gone from the server{now}; "
                f"snapshot {self.snapshot} holds {self.records} record(s) of their answers there (pull keeps them)")


def gone_projects(project: Project, found: Iterable[AnnotationProject], roster: Iterable[str]) -> list[GoneProject]:
    """The roster's projects the newest snapshot holds answers of and the server no longer has (by id): gone, or
    replaced by another project of the same title."""
    folder = previous_snapshot(layout.annotations_dir(project))
    if folder is None:
        return []
    try:
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    on_server = {(p.scenario, p.annotator): p.info.id for p in found}
    wanted = set(roster)
    held: dict[tuple[str, str], list[int]] = {}  # (scenario, annotator) -> [project id, records]
    for part in summary.get("projects") or []:
        if part.get("annotator") and part.get("project_id") is not None:
            held[(part["scenario"], part["annotator"])] = [int(part["project_id"]), int(part.get("records", 0))]
    for kept in summary.get("kept") or []:
        entry = held.get((kept["scenario"], kept["annotator"]))
        if entry is not None:
            entry[1] += len(kept.get("fields") or ())
        elif kept.get("kind") == "project_deleted":  # gone before the newest snapshot, still kept
            held[(kept["scenario"], kept["annotator"])] = [-1, len(kept.get("fields") or ())]
    gone = []
    for (scenario, annotator), (project_id, records) in sorted(held.items()):
        now = on_server.get((scenario, annotator))
        if annotator in wanted and records and now != project_id:  # -1: it was gone at the last pull
            gone.append(GoneProject(scenario, annotator, project_id, records, folder.name, now))
    return gone


def refuse_gone(gone: list[GoneProject]) -> None:
    """Stop for a project that is gone and not made again (one made again is a note of push)."""
    gone = [g for g in gone if g.replaced_by is None]
    if not gone:
        return
    first = gone[0]
    more = f" (and {len(gone) - 1} more project(s))" if len(gone) > 1 else ""
    raise RescueError(
        f"{first.line()}{more}: push does not re-create it empty",
        "restore the Label Studio database from a backup; or run `rescue push --recreate-deleted` to make it again, "
        "empty (pull keeps the old answers until the annotator answers those rows again or `rescue pull "
        "--accept-deleted`)")
