"""What each step last did: build/state/corpus/<step>.json for a corpus step (fingerprint of its inputs,
outcome, its typed detail, its outputs), build/state/<step>/<session>.json for a step partitioned by session.

A step is up to date when its fingerprint equals the last successful run's and its outputs are intact:
the fingerprint covers the inputs that decide its output (rows, schema, settings section, annotation
snapshot, code version), never times or paths that do not change the result; the record also holds the
sha256 of each output file (`outputs`), so a damaged, cut or edited output is rebuilt, not trusted.

A corpus record written by an earlier version is read as it is and, on the first read by a build (which
holds the lock), rewritten once in today's layout (`read_state(upgrade=True)`): its outputs' digests move
from its detail into `outputs`, and a record without per-input digests gets them (`last_done_with`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pipeline import layout
from pipeline.project import Project
from pipeline.records import CatalogEntry
from pipeline.step import Inputs, StepDetail, file_sha
from pipeline.store import OutputFile, StepRun, changed_outputs, output_file, sha256_file, write_record_atomic
from pipeline.transcripts import rows_path


class EarlierOutputs(StepDetail):
    """The outputs as a build from before outputs were hashed in `StepRun.outputs` recorded them in its detail."""

    outputs: dict[str, str] | None = None  # path -> sha256


def state_path(project: Project, step: str) -> Path:
    return layout.state_file(project, step)


def read_state(project: Project, step: str, *, upgrade: bool = False) -> StepRun | None:
    """The corpus step's last run (None: it never ran, or its record is unreadable). `upgrade` (a build, which
    holds the lock): a record of an earlier layout is rewritten in today's, once."""
    path = state_path(project, step)
    if not path.is_file():
        return None
    try:
        run = StepRun.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # unreadable = never ran
    if upgrade and (today := upgraded(project, run)) is not None:
        write_state(project, today)
        return today
    return run


def upgraded(project: Project, run: StepRun) -> StepRun | None:
    """`run` in today's layout when it is a done run of an earlier one whose outputs (recorded in its detail
    as path -> sha256) are all still what it wrote; None when there is nothing to upgrade, or an output
    changed (then `damaged_outputs` finds it, and the step runs again)."""
    earlier = EarlierOutputs.of(run)
    if run.status != "done" or run.outputs or earlier is None or not earlier.outputs:
        return None
    paths = [_path(project, name) for name in earlier.outputs]
    if any(not sha or file_sha(path) != sha for path, sha in zip(paths, earlier.outputs.values(), strict=True)):
        return None
    detail = {key: value for key, value in run.detail.items() if key != "outputs"}
    return run.model_copy(update={"outputs": output_records(project, paths), "detail": detail})


def _path(project: Project, name: str) -> Path:
    path = Path(name)
    return path if path.is_absolute() else project.root / path


def write_state(project: Project, state: StepRun) -> None:
    write_record_atomic(state_path(project, state.step), state)


def last_done(project: Project, step: str, fingerprint: str, *, upgrade: bool = False) -> StepRun | None:
    """The recorded run when it succeeded with exactly this fingerprint."""
    state = read_state(project, step, upgrade=upgrade)
    return state if state is not None and state.status == "done" and state.fingerprint == fingerprint else None


def last_done_with(project: Project, inputs: Inputs) -> StepRun | None:
    """`last_done` for the step's `Inputs`, as a build reads it (records of an earlier layout are upgraded). A
    run recorded before per-input digests existed gets them now, once (its fingerprint matched, so they are
    the digests of its inputs): later checks can say which changed."""
    state = last_done(project, inputs.step, inputs.fingerprint(), upgrade=True)
    if state is not None and not state.input_digests:
        state = state.model_copy(update={"input_digests": inputs.digests()})
        write_state(project, state)
    return state


def outputs_digest(project: Project, paths: Iterable[Path]) -> dict[str, str]:
    """Output file (relative to the project) -> its sha256 ('' = missing), recorded when a step finishes."""
    return {project.rel_or_abs(path): file_sha(path) for path in sorted(paths)}


def output_records(project: Project, paths: Iterable[Path]) -> tuple[OutputFile, ...]:
    """The step's output files as recorded in its state (the ones that exist)."""
    return tuple(output_file(project.root, path) if path.is_relative_to(project.root) else
                 OutputFile(path=str(path), size=path.stat().st_size, sha256=sha256_file(path))
                 for path in sorted(paths) if path.is_file())


def damaged_outputs(project: Project, state: StepRun, paths: Iterable[Path]) -> list[str]:
    """The outputs whose content is not what the step last wrote (missing, cut, edited, or a file that the
    step did not write), by the one output rule of every step (`changed_outputs`); for a record of an earlier
    layout not upgraded yet, by the digests in its detail (all of them when it holds none)."""
    paths = sorted(paths)
    if state.outputs:
        now = {project.rel_or_abs(path) for path in paths if path.is_file()}
        recorded = {output.path for output in state.outputs}
        return sorted((now ^ recorded) | set(changed_outputs(project.root, state.outputs)))
    now = outputs_digest(project, paths)
    earlier = EarlierOutputs.of(state)
    recorded = earlier.outputs if earlier is not None else None
    if recorded is None or set(recorded) != set(now):
        return sorted(now)
    return [path for path, sha in now.items() if not sha or recorded[path] != sha]


def rows_digest(project: Project, catalog: Iterable[CatalogEntry]) -> dict[str, str]:
    """Catalog session -> sha256 of its rows.jsonl ('' when it has none yet)."""
    return {entry.session_id: file_sha(rows_path(project, entry.session_id)) for entry in catalog}
