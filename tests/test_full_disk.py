"""A full disk (issue 19, part 4): one line naming the path and the filesystem to free, nothing half-written
left behind, and the next run completes. The disk is a real tmpfs this test mounts over build/release or
build/annotations (CI runs as root; where mounting is not permitted the test is skipped and says why); pull
runs against a real Label Studio server."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.annotate.accounts import add_annotators
from pipeline.annotate.pull import ANNOTATIONS_FILE, SUMMARY_FILE, pull_annotations
from pipeline.annotate.push import push_rows
from pipeline.cli import main
from pipeline.engine.corpus_run import _step
from pipeline.engine.context import StepContext
from pipeline.errors import RescueError
from tests.labelstudio_fixtures import SETTINGS, LiveServer, write_truth_rows
from tests.release_inputs import published_benchmark


@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted on `folder` for the duration; unmounted after, also when the test fails."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def resize(folder: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(folder)], check=True)


def used_kib(folder: Path) -> int:
    stat = os.statvfs(folder)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize // 1024


def rescue(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--root", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def one_error(output: str) -> tuple[str, str]:
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in output, output
    after = output.split(errors[0], 1)[1]
    return errors[0], " ".join(after.split())


def test_freeze_on_a_full_disk_says_where_keeps_nothing_half_written_and_completes_next_time(tmp_path: Path) -> None:
    gold = published_benchmark(tmp_path)
    release = tmp_path / "build" / "release"
    with small_disk(release, "64k"):
        code, out = rescue(tmp_path, "freeze", "--gold", str(gold), "--version", "v1")
        assert code == 1
        error, fix = one_error(out)
        assert re.match(rf"error: cannot write {re.escape(str(release))}/v1/\S+: No space left on device$", error)
        assert f"fix: free space on the filesystem mounted at {release}" in fix and "run this again" in fix
        assert os.listdir(release) == []  # no staging folder, no half release

        resize(release, "32m")
        code, out = rescue(tmp_path, "freeze", "--gold", str(gold), "--version", "v1")
        assert code == 0, out
        assert rescue(tmp_path, "verify", str(release / "v1"))[0] == 0
        before = (release / "v1" / "MANIFEST.json").read_bytes()

        # A replacement that does not fit leaves the release it would replace as it was.
        changed = gold.read_text().replace('"Alan"', '"Alan B"')
        gold.write_text(changed)
        resize(release, f"{used_kib(release) + 32}k")
        code, out = rescue(tmp_path, "freeze", "--gold", str(gold), "--version", "v1", "--force")
        assert code == 1 and "No space left on device" in one_error(out)[0]
        assert sorted(os.listdir(release)) == ["v1"]
        assert (release / "v1" / "MANIFEST.json").read_bytes() == before
        assert rescue(tmp_path, "verify", str(release / "v1"))[0] == 0


@pytest.fixture(scope="module")
def pushed(ls_server: LiveServer) -> LiveServer:
    add_annotators(ls_server.project, ls_server.connection, ["ann@example.org", "bob@example.org"])
    write_truth_rows(ls_server.project, "sample/maya_and_daniel")
    push_rows(ls_server.project, ls_server.connection, settings=SETTINGS)
    return ls_server


def test_pull_on_a_full_disk_says_where_keeps_no_half_snapshot_and_completes_next_time(pushed: LiveServer) -> None:
    root = pushed.project.root
    annotations = root / "build" / "annotations"
    with small_disk(annotations, "8k"):
        code, out = rescue(root, "pull", "--standalone")
        assert code == 1
        error, fix = one_error(out)
        assert re.match(rf"error: cannot write {re.escape(str(annotations))}/\d{{8}}T\d{{6}}Z/\S+: No space left on "
                        "device$", error), error
        assert f"fix: free space on the filesystem mounted at {annotations}" in fix
        assert os.listdir(annotations) == []  # the snapshot folder being written was removed

        # The build's boundary around its pull step (what `rescue build` runs; the whole build would first
        # transcribe the sessions with real models): the same one line, not "internal error OSError(28, ...)".
        ctx = StepContext.load(pushed.project)
        with pytest.raises(RescueError) as caught, _step(ctx, "pull"):
            pull_annotations(pushed.project, pushed.connection, settings=SETTINGS)
        assert caught.value.message.startswith(f"rescue build, step pull: cannot write {annotations}/")
        assert "No space left on device" in caught.value.message and "internal error" not in caught.value.message
        assert f"free space on the filesystem mounted at {annotations}" in caught.value.fix
        assert os.listdir(annotations) == []

        resize(annotations, "64m")
        code, out = rescue(root, "pull", "--standalone")
        assert code == 0, out
        (snapshot,) = os.listdir(annotations)
        assert re.fullmatch(r"\d{8}T\d{6}Z", snapshot)
        summary = json.loads((annotations / snapshot / SUMMARY_FILE).read_text())
        assert summary["error"] == "" and (annotations / snapshot / ANNOTATIONS_FILE).is_file()
        assert {p["annotator"] for p in summary["projects"]} == {"ann@example.org", "bob@example.org"}
