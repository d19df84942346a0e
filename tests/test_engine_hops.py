"""How far a step function is from `rescue build` (issue 21: at most 6 hops), measured on a real build: the
call stack when the ingest step's function is entered, from the `build` command's own function down.
docs/architecture.md writes the chain out."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.engine.steps import STEPS
from pipeline.project import Project
from pipeline.records import CatalogEntry

MOST_HOPS = 6


def chain_to(frame: FrameType) -> list[str]:
    """The functions called from the `build` command's body down to `frame` (the step function), in order."""
    names = []
    while frame is not None and not (frame.f_code.co_name == "build" and
                                     frame.f_code.co_filename.endswith("pipeline/cli/build.py")):
        names.append(f"{frame.f_code.co_filename.rsplit('pipeline/', 1)[-1]}:{frame.f_code.co_qualname}")
        frame = frame.f_back  # type: ignore[assignment]
    assert frame is not None, "the step function was not called from `rescue build`"
    return names[::-1]


def test_rescue_build_reaches_a_session_step_function_in_at_most_six_hops(
        project: Project, add_video: Callable[..., CatalogEntry]) -> None:
    add_video("a", 2.0)
    step_code = STEPS["ingest"].run.__code__
    seen: list[list[str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is step_code and not seen:
            seen.append(chain_to(frame))

    sys.setprofile(profile)
    try:
        result = CliRunner().invoke(main, ["--root", str(project.root), "build", "--only", "ingest"])
    finally:
        sys.setprofile(None)
    assert result.exit_code == 0, result.output
    assert "ingest: 1 ran" in result.output
    (chain,) = seen
    assert chain[-1].startswith("engine/session_steps.py:"), chain  # the ingest step's declared function
    assert len(chain) <= MOST_HOPS, f"{len(chain)} hops: {' -> '.join(chain)}"
