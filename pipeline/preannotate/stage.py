"""The `preannotate` step, per session after `rows`: the chosen backend's drafts for every row, written to
build/preannotate/<session>/drafts.json (push sends them as predictions).

Its fingerprint covers the rows (the upstream `rows` outputs), the schema file and the training gold (input
files inside the project: a changed file marks the session stale; training files given by absolute path
elsewhere: their sha256 is part of the fingerprinted settings), and the backend settings (`settings_of`).
The drafts also record each training file's sha256.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from pipeline.annotate.settings import AnnotateSettings
from pipeline.errors import RescueError
from pipeline.preannotate.backends import make_backend, train_gold_files
from pipeline.preannotate.drafts import AREA, RECORD_NAME, SessionDrafts
from pipeline.preannotate.session import DraftSession
from pipeline.preannotate.settings import PreannotateSettings
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.schema import load_schema
from pipeline.settings import Settings
from pipeline.store import sha256_file
from pipeline.transcripts import read_rows, rows_path

__all__ = ["AREA", "RECORD_NAME", "preannotate_inputs", "preannotate_session", "stage_settings"]


class StageSettings(BaseModel):
    """What the step's output depends on among the settings: its own section and the schema file's name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preannotate: PreannotateSettings
    schema_file: str
    outside_gold: dict[str, str] = {}  # absolute training file -> sha256 (files outside the project: not stamped)


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def _outside_gold(settings: PreannotateSettings) -> dict[str, str]:
    hashes = {}
    for name in settings.train_gold if settings.backend == "gold-model" else ():
        path = Path(name)
        if path.is_absolute():
            stat = path.stat() if path.is_file() else None
            hashes[name] = _sha256(name, stat.st_size, stat.st_mtime_ns) if stat else "missing"
    return hashes


def stage_settings(settings: Settings) -> StageSettings:
    """The step's fingerprinted settings; training files given by absolute path are fingerprinted by content
    here (the runner stamps only files inside the project, see `preannotate_inputs`)."""
    return StageSettings(preannotate=settings.preannotate, schema_file=settings.annotate.schema_file,
                         outside_gold=_outside_gold(settings.preannotate))


def _schema_file(project: Project, annotate: AnnotateSettings) -> Path:
    return project.schemas / annotate.schema_file


def preannotate_inputs(project: Project, entry: CatalogEntry, settings: Settings | None = None) -> list[Path]:
    """The schema file and, for gold-model, the training gold files inside the project (stamped: a change re-runs
    the step; files elsewhere are hashed into the settings fingerprint, see `stage_settings`)."""
    from pipeline.settings import load_settings

    settings = settings or load_settings(project.root)
    files = [_schema_file(project, settings.annotate)]
    if settings.preannotate.backend == "gold-model":
        files += [f for f in train_gold_files(project, settings.preannotate) if f.is_relative_to(project.root)]
    return files


def draft_session(project: Project, entry: CatalogEntry, settings: Settings) -> SessionDrafts:
    """The library function behind the step: the backend's drafts of one session's rows."""
    schema = load_schema(_schema_file(project, settings.annotate))
    path = rows_path(project, entry.session_id)
    if not path.exists():
        raise RescueError(f"session {entry.session_id}: no rows ({project.rel_or_abs(path)})",
                          f"run `rescue rows {entry.session_id}` first")
    session = DraftSession(entry.session_id, entry.scenario, entry.participants, tuple(read_rows(project,
                                                                                                 entry.session_id)),
                           schema)
    return make_backend(project, settings.preannotate, schema).draft(session)


def preannotate_session(project: Project, entry: CatalogEntry, settings: Settings, workdir: Path,
                        final_dir: Path) -> SessionDrafts:
    drafts = draft_session(project, entry, settings)
    (workdir / RECORD_NAME).write_text(drafts.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return drafts
