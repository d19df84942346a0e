"""`rescue leaderboard`: scored run folders side by side, per task, model, mode and scenario.

The run folders are written here in `rescue run-model`'s layout and scored with the real `rescue evaluate`
(tests/test_judge.py covers the scoring itself); the numbers below are worked out by hand.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from pipeline.cli import main
from pipeline.tasks.leaderboard import read_leaderboard, to_csv, to_markdown
from pipeline.tasks.runs import read_run, release_info, score_run
from tests.run_folders import make_run, media_release


def short(release_dir: Path) -> str:
    info = release_info(release_dir)
    return f"{info['version']}@{info['manifest_sha256'][:8]}"


def scored_runs(release_dir: Path, root: Path) -> Path:
    """Three STP runs (model-a on two releases, model-b), one damaged scores.json, one run not scored yet."""
    runs = root / "build" / "runs"
    gold = [json.loads(line) for line in (release_dir / "gold/stp.jsonl").read_text().splitlines()]
    perfect = [{"id": g["id"], "target_top3": [g["gold"]["target_label"]]} for g in gold]
    # model-b always says Evelyn: right for the 2 couple instances whose gold is Evelyn; not a family candidate
    evelyn = [{"id": g["id"], "target_top3": ["Evelyn"]} for g in gold]
    other = media_release(release_dir, root / "other" / "v1")  # same version name, different content
    for name, rel, model, mode, answers in (("b-audio", release_dir, "model-b", "audio", evelyn),
                                            ("a-text", release_dir, "model-a", "dialogue", perfect),
                                            ("a-other", other, "model-a", "dialogue", perfect)):
        score_run(read_run(make_run(runs / name, rel, "stp", answers, [], model=model, mode=mode)), rel,
                  text_similarity=False)
    make_run(runs / "broken", release_dir, "stp", perfect, [])
    (runs / "broken" / "scores.json").write_text('{"task": "stp", "scores": ')
    make_run(runs / "pending", release_dir, "itp", [], [])
    return runs


def test_markdown_and_csv_tables_with_the_right_numbers(release: Path, tmp_path: Path) -> None:
    runs = scored_runs(release, tmp_path)
    board = read_leaderboard(runs)
    [table] = board.tables
    assert table.task == "stp"
    assert table.header == ["run", "model", "mode", "release", "scorer", "overall n", "overall R@1", "overall MRR",
                            "couple n", "couple R@1", "couple MRR", "family n", "family R@1", "family MRR"]
    this, other = short(release), short(tmp_path / "other" / "v1")
    first_a = sorted([("a-text", this), ("a-other", other)], key=lambda x: x[1])
    markdown = to_markdown(board).splitlines()
    assert markdown[:4] == ["## STP", "", "| " + " | ".join(table.header) + " |",
                            "|---|---|---|---|---|" + "---:|" * 9]
    perfect = "| 6 | 1.0000 | 1.0000 | 4 | 1.0000 | 1.0000 | 2 | 1.0000 | 1.0000 |"
    assert markdown[4:] == [
        f"| {first_a[0][0]} | model-a | dialogue | {first_a[0][1]} |  {perfect}",
        f"| {first_a[1][0]} | model-a | dialogue | {first_a[1][1]} |  {perfect}",
        f"| b-audio | model-b | audio | {this} |  | 6 | 0.3333 | 0.3333 | 4 | 0.5000 | 0.5000 | 2 | 0.0000 | 0.0000 |"]
    rows = list(csv.DictReader(io.StringIO(to_csv(board))))
    assert len(rows) == 3 * 9  # 3 runs x 3 scopes x (n + 2 metrics)
    b = {(r["scope"], r["metric"]): float(r["value"]) for r in rows if r["model"] == "model-b"}
    assert b == {("overall", "n"): 6, ("couple", "n"): 4, ("family", "n"): 2,
                 ("overall", "R@1"): 0.3333, ("overall", "MRR"): 0.3333, ("couple", "R@1"): 0.5,
                 ("couple", "MRR"): 0.5, ("family", "R@1"): 0.0, ("family", "MRR"): 0.0}
    assert {r["release"] for r in rows} == {this, other} and {r["task"] for r in rows} == {"stp"}
    assert any("runs scored against 2 releases" in w for w in board.warnings)


def test_a_damaged_scores_file_is_named_not_a_crash(release: Path, tmp_path: Path) -> None:
    runs = scored_runs(release, tmp_path)
    result = CliRunner().invoke(main, ["--root", str(tmp_path), "leaderboard", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert f"{runs / 'broken' / 'scores.json'} is damaged" in " ".join(result.output.split())
    assert f"{runs / 'pending'} is not scored yet" in " ".join(result.output.split())
    assert "| b-audio | model-b | audio |" in result.output and "broken |" not in result.output
    out = tmp_path / "board.csv"
    again = CliRunner().invoke(main, ["--root", str(tmp_path), "leaderboard", "--format", "csv", "--out", str(out)])
    assert again.exit_code == 0 and out.read_text() == to_csv(read_leaderboard(runs))
    terminal = CliRunner().invoke(main, ["--root", str(tmp_path), "leaderboard"])
    assert terminal.exit_code == 0 and "STP overall" in terminal.output and "STP family" in terminal.output
    assert "model-b" in terminal.output and "0.3333" in terminal.output
    (tmp_path / "nothing").mkdir()
    empty = CliRunner().invoke(main, ["--root", str(tmp_path / "nothing"), "leaderboard"])
    assert empty.exit_code == 0 and "no scored runs" in empty.output
