"""pipeline/processes.py on real processes: a session's members, also those that set a process group of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from pipeline.processes import session_members

# The leader starts a child that moves to a process group of its own (as Ray's daemons do), prints its pid, waits.
LEADER = ("import os, subprocess, sys, time\n"
          "child = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); time.sleep(60)'])\n"
          "print(child.pid, flush=True); time.sleep(60)")


def test_a_session_lists_its_members_in_other_groups_and_not_its_dead() -> None:
    leader = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        child = int(leader.stdout.readline())  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while os.getpgid(child) == leader.pid and time.monotonic() < deadline:  # until the child's setpgid ran
            time.sleep(0.05)
        assert os.getpgid(child) != leader.pid
        assert sorted(session_members(leader.pid)) == sorted([leader.pid, child])
        assert session_members(os.getsid(0)) and leader.pid not in session_members(os.getsid(0))
        os.kill(child, signal.SIGKILL)  # the leader never reaps it: a zombie is not a member
        while child in session_members(leader.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert session_members(leader.pid) == [leader.pid]
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
        for pid in session_members(leader.pid):
            os.kill(pid, signal.SIGKILL)
