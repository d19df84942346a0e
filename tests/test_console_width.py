"""Tables printed where the output is not a terminal (logs, CI) keep every column."""

from __future__ import annotations

import io

import pytest
from click.testing import CliRunner
from rich.table import Table

from pipeline.cli import main
from pipeline.cli.console import RescueConsole, console

HEADER = [f"column number {n}" for n in range(12)]  # ~190 characters: far past rich's default 80


def test_a_wide_table_written_to_a_pipe_is_not_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    table = Table()
    for name in HEADER:
        table.add_column(name)
    table.add_row(*(f"value {n} of a long row" for n in range(12)))
    buffer = io.StringIO()
    RescueConsole(file=buffer, soft_wrap=True, markup=False, highlight=False).print(table)
    text = buffer.getvalue()
    assert "…" not in text
    assert all(name in text for name in HEADER) and "value 11 of a long row" in text
    assert max(len(line) for line in text.splitlines()) > 80


def test_columns_set_by_the_user_still_bound_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    assert console.width == 60


def test_a_cli_table_in_captured_output_keeps_its_last_column(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "raw_video").mkdir()
    (tmp_path / "raw_video" / "sessions.csv").write_text(
        "session_id,scenario,participants,video,sha256,subtitles,clip_start,clip_end,source\n"
        "a_rather_long_session_identifier/with/several/parts_001,couple,Alexandra;Maximilian,"
        f"raw_video/a_rather_long_session_identifier_with_several_parts_001.mp4,{'0' * 64},,,,\n")
    result = CliRunner().invoke(main, ["--root", str(tmp_path), "status"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    assert "a_rather_long_session_identifier/with/several/parts_001" in result.output
