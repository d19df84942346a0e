"""Gold made from the sample sessions' reference labels, for the pre-annotation tests. Helpers only, no tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.benchmark_format import BenchmarkRow, BenchmarkSession
from pipeline.sample.annotators import reference_labels
from tests.release_inputs import SCHEMA


def sample_session(name: str, start: int, stop: int) -> BenchmarkSession:
    ref = reference_labels(name, SCHEMA)
    turns = list(ref.turns)[start:stop]
    rows = [BenchmarkRow(start_time=(start + n) * 5.0, end_time=(start + n) * 5.0 + 4.0, row_index=n, **values)
            for n, values in enumerate(turns, start=1)]
    return BenchmarkSession(sample_id=ref.session_id, scenario=ref.scenario,
                            participants=list(ref.script.participants), rows=rows)


def write_gold(path: Path, sessions: list[BenchmarkSession]) -> Path:
    path.write_text("".join(s.model_dump_json() + "\n" for s in sessions), encoding="utf-8")
    return path
