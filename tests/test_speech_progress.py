"""Progress inside a session: transcribe and diarize report seconds of audio done, rows the clips cut, while
the real stages run on the sample sessions (real WhisperX, pyannote and ffmpeg). What the runner reported is
recorded as the suite's one speech build of the samples runs (`built_samples`, tests/speech_fixtures.py)."""

from __future__ import annotations

from pipeline.project import Project
from pipeline.transcripts import read_rows
from tests.speech_fixtures import COUPLE, FAMILY, SPEECH_STAGES, progress_heard


def test_stages_report_progress_inside_the_session(built_samples: Project) -> None:
    heard = progress_heard(built_samples)
    assert set(heard) <= set(SPEECH_STAGES)
    for session in (COUPLE, FAMILY):
        duration = read_rows(built_samples, session)[-1].end  # the last row ends near the end of the audio
        for name in ("transcribe", "diarize"):
            reports = [(done, total, unit) for sid, done, total, unit in heard[name] if sid == session]
            assert len(reports) >= 2, (name, session, reports)  # moves within the session, not only at its end
            assert {unit for _, _, unit in reports} == {"s of audio"}
            done = [d for d, _, _ in reports]
            assert done == sorted(done) and 0 <= done[0] < done[-1]
            total = reports[-1][1]
            assert done[-1] == total and total >= duration - 0.5  # the whole session's audio, in seconds
        clips = [(done, total, unit) for sid, done, total, unit in heard["rows"] if sid == session]
        rows = len(read_rows(built_samples, session))
        assert [unit for _, _, unit in clips] == ["clips"] * len(clips) and clips[-1][:2] == (rows, rows)
