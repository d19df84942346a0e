"""What each corpus step last did: build/state/corpus/<step>.json (fingerprint of its inputs, outcome, details).

A step is up to date when its fingerprint equals the last successful run's and its outputs are intact:
the fingerprint covers the inputs that decide its output (rows, schema, settings section, annotation
snapshot, code version), never times or paths that do not change the result; the record also holds the
sha256 of each output file (`outputs`), so a damaged, cut or edited output is rebuilt, not trusted.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pipeline.catalog import load_catalog
from pipeline.step import Inputs, StepDetail
from pipeline.project import Project
from pipeline import layout
from pipeline.store import (OutputFile, StepRun, changed_outputs, output_file, sha256_file,
                            write_record_atomic)
from pipeline.transcripts import rows_path


class EarlierOutputs(StepDetail):
    """The outputs as a build from before outputs were hashed in `StepRun.outputs` recorded them in its detail."""

    outputs: dict[str, str] | None = None  # path -> sha256


def state_path(project: Project, step: str) -> Path:
    return layout.state_file(project, step)


def read_state(project: Project, step: str) -> StepRun | None:
    path = state_path(project, step)
    if not path.is_file():
        return None
    try:
        return StepRun.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # unreadable = never ran


def write_state(project: Project, state: StepRun) -> None:
    write_record_atomic(state_path(project, state.step), state)


def last_done(project: Project, step: str, fingerprint: str) -> StepRun | None:
    """The recorded run when it succeeded with exactly this fingerprint."""
    state = read_state(project, step)
    return state if state is not None and state.status == "done" and state.fingerprint == fingerprint else None


def last_done_with(project: Project, inputs: Inputs) -> StepRun | None:
    """`last_done` for the step's `Inputs`. A run recorded before per-input digests existed gets them now,
    once (its fingerprint matched, so they are the digests of its inputs): later checks can say which changed."""
    state = last_done(project, inputs.step, inputs.fingerprint())
    if state is not None and not state.input_digests:
        state = state.model_copy(update={"input_digests": inputs.digests()})
        write_state(project, state)
    return state


def file_sha(path: Path) -> str:
    return sha256_file(path) if path.is_file() else ""


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
    step did not write), by the one output rule of every step (`changed_outputs`); all of them when the
    record holds no digests (a build from before outputs were hashed)."""
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


def rows_digest(project: Project) -> dict[str, str]:
    """Catalog session -> sha256 of its rows.jsonl ('' when it has none yet)."""
    return {item.entry.session_id: file_sha(rows_path(project, item.entry.session_id))
            for item in load_catalog(project)}


def fingerprint(step: str, step_version: str, **inputs: object) -> str:
    return Inputs(step, step_version, inputs).fingerprint()
