"""The xdist plumbing of the suite itself: a fixture made once per run by whichever worker asks first
(tests/run_once.py), and the longest-first order of the work units (tests/xdist_schedule.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.xdist_schedule import PER_UNLISTED_TEST, SECONDS, expected_seconds, unit_of

REPO = Path(__file__).resolve().parents[1]
# Each process asks for "thing"; the maker notes its pid and takes a moment, so the others come while it works.
ASK = """
import os, sys, time
from pathlib import Path
from tests.run_once import once_in
shared = Path(sys.argv[1])
def make(folder):
    with open(shared / "makers.log", "a") as log:
        log.write(f"{os.getpid()}\\n")
    time.sleep(1)
    if sys.argv[2] == "fail":
        raise RuntimeError("the maker broke")
    (folder / "made.txt").write_text("made")
print(once_in(shared, "thing", make))
"""


def ask(shared: Path, how: str, count: int) -> list[subprocess.CompletedProcess[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    running = [subprocess.Popen([sys.executable, "-c", ASK, str(shared), how], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(count)]
    done = []
    for process in running:
        out, err = process.communicate()
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def test_three_processes_asking_at_once_make_it_once_and_all_get_it(tmp_path: Path) -> None:
    done = ask(tmp_path, "make", 3)
    assert [d.returncode for d in done] == [0, 0, 0], [d.stderr for d in done]
    assert {d.stdout.strip() for d in done} == {str(tmp_path / "thing")}
    assert len((tmp_path / "makers.log").read_text().split()) == 1
    assert (tmp_path / "thing" / "made.txt").read_text() == "made"
    assert sorted(p.name for p in (tmp_path / "thing").iterdir()) == ["made.txt"]  # no note inside what is copied


def test_a_failed_maker_is_not_paid_again_and_the_others_get_its_error(tmp_path: Path) -> None:
    done = ask(tmp_path, "fail", 2)
    assert [d.returncode != 0 for d in done] == [True, True]
    assert len((tmp_path / "makers.log").read_text().split()) == 1
    assert sum("failed in another worker" in d.stderr for d in done) == 1
    assert all("the maker broke" in d.stderr for d in done)
    assert not (tmp_path / "thing").exists()


def test_units_are_files_or_xdist_groups_and_unlisted_files_count_by_their_tests() -> None:
    assert unit_of("tests/test_a.py::test_x") == "tests/test_a.py"
    assert unit_of("tests/test_a.py::test_x[a@b]") == "tests/test_a.py"  # an @ inside parameters is no group
    assert unit_of("tests/test_a.py::test_x@ray") == unit_of("tests/test_b.py::test_y[1]@ray") == "group ray"
    longest = max(SECONDS, key=SECONDS.__getitem__)
    assert expected_seconds([f"{longest}::a", f"{longest}::b"]) == SECONDS[longest]
    assert expected_seconds(["tests/test_new.py::a", "tests/test_new.py::b"]) == 2 * PER_UNLISTED_TEST
