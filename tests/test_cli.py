"""The command line as a user meets it: help everywhere, one-line errors with a fix, no tracebacks."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipeline.cli import main
from pipeline.project import Project
from tests.media import make_video

COMMANDS = sorted(main.commands)


def test_top_level_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output
    assert {"add-session", "build", "ingest", "sample", "status"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output and main.commands[command].help.split()[0] in result.output


def test_errors_are_one_line_with_a_fix_and_no_traceback(project: Project) -> None:
    project.main_catalog.write_text("session_id,scenario\n")
    result = CliRunner().invoke(main, ["--root", str(project.root), "status"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("error: raw_video/sessions.csv: missing column(s)")
    assert lines[1].strip().startswith("fix: use the header: session_id,scenario,participants")
    assert "Traceback" not in result.output


def test_debug_shows_the_traceback(project: Project) -> None:
    project.main_catalog.write_text("session_id,scenario\n")
    result = CliRunner().invoke(main, ["--root", str(project.root), "--debug", "status"])
    assert result.exit_code == 1 and result.exc_info is not None
    assert type(result.exception).__name__ == "RescueError"


def test_empty_catalog_points_to_sample_and_add_session(project: Project) -> None:
    result = CliRunner().invoke(main, ["--root", str(project.root), "build"])
    assert result.exit_code == 1
    assert "the catalog lists no sessions" in result.output and "rescue sample" in result.output


def test_unknown_session_id_is_named(project: Project) -> None:
    make_video(project.raw_video / "v.mp4", 2.0)
    runner = CliRunner()
    added = runner.invoke(main, ["--root", str(project.root), "add-session", str(project.raw_video / "v.mp4"),
                                 "--id", "v", "--scenario", "couple", "-p", "Ann", "-p", "Bob"])
    assert added.exit_code == 0, added.output
    assert "added v (raw_video/v.mp4" in added.output
    result = runner.invoke(main, ["--root", str(project.root), "ingest", "nope"])
    assert result.exit_code == 1 and "unknown session id(s): nope" in result.output


def test_add_session_with_bad_clip_text(project: Project) -> None:
    make_video(project.raw_video / "v.mp4", 2.0)
    result = CliRunner().invoke(main, ["--root", str(project.root), "add-session", str(project.raw_video / "v.mp4"),
                                       "--id", "v", "--scenario", "couple", "-p", "A", "--clip", "x", "9"])
    assert result.exit_code == 1 and "--clip x 9: not seconds or HH:MM:SS" in result.output


def test_bracketed_text_in_messages_is_printed_as_it_is(project: Project) -> None:
    """Rich markup must not eat `[tool.rescue.ingest]` (it did: "lower  min_clip_seconds")."""
    make_video(project.raw_video / "short.mp4", 3.0)
    result = CliRunner().invoke(main, ["--root", str(project.root), "add-session", str(project.raw_video / "short.mp4"),
                                       "--id", "s", "--scenario", "couple", "-p", "Ann", "-p", "Bob", "--clip", "0",
                                       "2"])
    assert result.exit_code == 1
    assert "lower [tool.rescue.ingest] min_clip_seconds" in result.output, result.output
    assert "error: " in result.output and "fix: " in result.output


def test_build_step_messages_keep_their_brackets() -> None:
    from pipeline.cli.console import console
    from pipeline.cli.corpus import print_outcome
    from pipeline.engine.context import StepOutcome

    outcome = StepOutcome(step="sample-annotations", status="skipped",
                          message="sample_annotations = false in [tool.rescue.build]", notes=("row [3] of s/a",))
    with console.capture() as captured:
        print_outcome(console, outcome)
    assert captured.get() == ("sample-annotations: skipped - sample_annotations = false in [tool.rescue.build]\n"
                              "  row [3] of s/a\n")


def test_a_relative_video_is_read_from_the_project_root(project: Project, tmp_path_factory: pytest.TempPathFactory,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    make_video(project.raw_video / "x.mp4", 2.0)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)  # the user runs the command from another folder, naming the project with --root
    result = CliRunner().invoke(main, ["--root", str(project.root), "add-session", "raw_video/x.mp4",
                                       "--id", "x", "--scenario", "couple", "-p", "Ann", "-p", "Bob"])
    assert result.exit_code == 0, result.output
    assert "added x (raw_video/x.mp4" in result.output
    missing = CliRunner().invoke(main, ["--root", str(project.root), "add-session", "raw_video/nope.mp4",
                                        "--id", "n", "--scenario", "couple", "-p", "Ann", "-p", "Bob"])
    assert missing.exit_code == 1
    assert f"looked for {project.root / 'raw_video/nope.mp4'} and {elsewhere / 'raw_video/nope.mp4'}" in missing.output
