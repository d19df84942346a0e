"""Progress inside a session: transcribe and diarize report seconds of audio done, rows the clips cut, while
the real stages run on a sample session (real WhisperX, pyannote and ffmpeg)."""

from __future__ import annotations

import pytest

from pipeline.engine.context import StepContext
from pipeline.engine.runner import run_stage
from pipeline.engine.session_steps import STAGES
from pipeline.project import Project
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE


@pytest.mark.slow  # the real speech models, run by the test itself
def test_stages_report_progress_inside_the_session(sample_project: Project) -> None:
    context = StepContext.load(sample_project)
    entries = context.select([COUPLE])
    heard: dict[str, list[tuple[float, float, str]]] = {}
    for name in ("ingest", "transcribe", "diarize", "rows"):
        report = run_stage(context, STAGES[name], entries,
                           on_progress=lambda sid, done, total, unit, name=name: heard.setdefault(name, []).append(
                               (done, total, unit)) if sid == COUPLE else None)
        assert report.ran == [COUPLE], report.failed
    duration = read_rows(sample_project, COUPLE)[-1].end  # the last row ends near the end of the audio
    for name in ("transcribe", "diarize"):
        reports = heard[name]
        assert len(reports) >= 2, (name, reports)  # moves within the session, not only at its end
        assert {unit for _, _, unit in reports} == {"s of audio"}
        done = [d for d, _, _ in reports]
        assert done == sorted(done) and 0 <= done[0] < done[-1]
        total = reports[-1][1]
        assert done[-1] == total and total >= duration - 0.5  # the whole session's audio, in seconds
    clips = heard["rows"]
    rows = len(read_rows(sample_project, COUPLE))
    assert [unit for _, _, unit in clips] == ["clips"] * len(clips) and clips[-1][:2] == (rows, rows)
