"""A process that holds a project's build lock, as a running `rescue build` does (the writers' lock tests).
Helpers only, no tests."""

from __future__ import annotations

import subprocess
import sys

from pipeline.project import Project


def start_holder(project: Project) -> subprocess.Popen[str]:
    """Another process that holds build/.lock (as a running `rescue build` does) until it is killed."""
    script = ("import sys, time\n"
              "from pathlib import Path\n"
              "from pipeline.project import Project\n"
              "from pipeline.engine.runner import build_lock\n"
              "sys.argv = ['rescue', 'build']\n"
              f"with build_lock(Project(Path({str(project.root)!r}))):\n"
              "    print('held', flush=True)\n"
              "    time.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder
