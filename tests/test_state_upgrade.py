"""Corpus state records written by earlier versions (issue 21: "old state files are read once and rewritten").

An earlier build kept its outputs' digests in the record's detail (`{"outputs": {path: sha256}}`) and no digest
per named input. `rescue status` reads such a record as it is and rewrites nothing (it takes no lock); the
first read by a build (which holds the lock) rewrites it once in today's layout: the outputs as `outputs`
(size, sha256), the step's own detail without them, a digest per named input. An output edited since is
never blessed by the upgrade: the record stays as it was, and the step runs again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.engine.context import BuildRun, StepContext
from pipeline.engine.state import damaged_outputs, read_state, state_path
from pipeline.project import Project
from pipeline.settings import Settings
from pipeline.step import Inputs, file_sha


def _earlier_build(project: Project) -> tuple[Inputs, list[Path], Path]:
    """An agreement report and the record an earlier version wrote for it."""
    folder = project.build / "agreement"
    folder.mkdir(parents=True)
    outputs = [folder / "report.html", folder / "report.json"]
    outputs[0].write_text("<html>kappa</html>\n")
    outputs[1].write_text('{"alpha": 0.7}\n')
    inputs = Inputs("agree", "2", {"annotations": "a" * 64, "settings": {"seed": 1}, "schema": "b" * 64})
    record = {"step": "agree", "fingerprint": inputs.fingerprint(), "status": "done",
              "detail": {"snapshot": "20261130T100000Z",
                         "outputs": {project.rel(path): file_sha(path) for path in outputs}},
              "code_version": "0.9.0", "finished_at": "2026-11-30T10:00:00+00:00", "elapsed_s": 1.5}
    path = state_path(project, "agree")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return inputs, outputs, path


def _context(project: Project, *, writes: bool) -> StepContext:
    return StepContext(project, Settings(), (), build=BuildRun(writes=writes))


def test_an_earlier_record_is_read_as_it_is_by_status_and_rewritten_once_by_the_build(project: Project) -> None:
    inputs, outputs, path = _earlier_build(project)
    before = path.read_text()

    looked = _context(project, writes=False).last_run("agree")  # `rescue status`: reads, rewrites nothing
    assert looked is not None and looked.status == "done" and not looked.outputs
    assert damaged_outputs(project, looked, outputs) == []  # judged intact by the digests in its detail
    assert path.read_text() == before

    run = _context(project, writes=True).last_done_with(inputs)  # the build's first read
    assert run is not None
    record = json.loads(path.read_text())
    assert [(o["path"], o["size"], o["sha256"]) for o in record["outputs"]] == \
        [(project.rel(p), p.stat().st_size, file_sha(p)) for p in outputs]
    assert record["detail"] == {"snapshot": "20261130T100000Z"}  # the step's own detail, kept
    assert record["input_digests"] == inputs.digests()
    assert record["fingerprint"] == inputs.fingerprint() and record["finished_at"] == "2026-11-30T10:00:00+00:00"

    rewritten = path.stat().st_mtime_ns
    again = _context(project, writes=True).last_done_with(inputs)  # once: today's layout is not rewritten
    assert again == read_state(project, "agree") and path.stat().st_mtime_ns == rewritten
    assert damaged_outputs(project, again, outputs) == []
    outputs[1].write_text('{"alpha": 0.1}\n')  # the one output rule of today's records sees an edit
    assert damaged_outputs(project, again, outputs) == [project.rel(outputs[1])]


def test_an_earlier_record_whose_output_changed_is_not_upgraded_and_its_step_runs_again(project: Project) -> None:
    inputs, outputs, path = _earlier_build(project)
    outputs[0].write_text("<html>edited</html>\n")
    before = path.read_text()
    run = _context(project, writes=True).last_done_with(inputs)
    assert run is not None and not run.outputs  # no upgrade: the edit must not be recorded as the step's output
    assert json.loads(path.read_text())["detail"]["outputs"] == json.loads(before)["detail"]["outputs"]
    assert damaged_outputs(project, run, outputs) == [project.rel(outputs[0])]
