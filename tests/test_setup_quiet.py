"""`make setup` prints one line per install step and shows a step's full log only when it fails.

Runs the real Makefile in a scratch copy of the project's top level: a real venv is made there (offline,
`PIP_NO_INDEX`), pip upgrade succeeds against it, and the editable install fails for real on a broken
pyproject.toml. The shared venvs of the checkout are never touched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def test_a_failing_install_step_prints_its_log_and_passing_steps_print_one_line(tmp_path: Path) -> None:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project\nname = broken\n")  # fails `pip install -e .` for real
    # the venv step of `make setup` (its stamp target), not the Debian packages step: no apt-get from a test
    stamp = f".venv/.installed-{hashlib.sha256(pyproject.read_bytes()).hexdigest()[:16]}"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(["make", "--no-print-directory", stamp, f"PYTHON={sys.executable}"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    before_failure, failed, log_text = out.partition("setup: pip-project FAILED")
    # up to the failure: one line per step, nothing of what the tools printed
    assert before_failure.splitlines() == [
        "setup: venv (log: build/logs/setup-venv.log)",
        "setup: pip-upgrade (log: build/logs/setup-pip-upgrade.log)",
        "setup: pip-project (log: build/logs/setup-pip-project.log)",
    ], out
    # the failing step's whole log follows, and it is kept on disk
    log = tmp_path / "build" / "logs" / "setup-pip-project.log"
    assert failed and log.read_text().strip() and log.read_text().strip() in log_text
    assert "error" in log_text.lower()  # pip's own report of the broken pyproject.toml
    assert not list((tmp_path / ".venv").glob(".installed-*"))  # no stamp: the next run retries the step
