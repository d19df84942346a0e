"""The local Ray head of docs/ray.md listens on loopback only (issue 22, part 3): started exactly as the page
says (on free ports), a driver with the documented environment joins it and runs a task, and then every TCP
socket that any of the cluster's processes (GCS, raylet, agents, workers) listens on is a loopback address:
none on 0.0.0.0 or ::, none on the machine's routable address. Read from /proc, not from Ray's flags."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ray_cluster import (
    LOCAL_HEAD_ENV,
    REPO,
    cluster_pids,
    documented_local_head,
    listening_sockets,
    start_local_head,
)


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 (a dual-stack socket bound to 127.0.0.1)
    return (mapped or ip).is_loopback


@pytest.mark.slow  # a Ray cluster the test starts itself
def test_the_documented_local_head_listens_on_loopback_only(tmp_path: Path) -> None:
    assert documented_local_head() in (REPO / "docs" / "ray.md").read_text(encoding="utf-8")
    token = tmp_path / "auth_token"
    cluster = start_local_head(tmp_path / "logs", token)
    try:
        driver = ("import ray\nray.init(address=%r, logging_level='ERROR')\n"
                  "print('answer', ray.get(ray.remote(lambda: 41 + 1).remote()))\nray.shutdown()\n" % cluster.address)
        ran = subprocess.run([sys.executable, "-c", driver], env={**cluster.env, **LOCAL_HEAD_ENV},
                             capture_output=True, text=True, timeout=300)
        assert "answer 42" in ran.stdout, ran.stdout + ran.stderr
        sockets = listening_sockets(cluster_pids(token))
    finally:
        cluster.stop()
    port = int(cluster.address.rsplit(":", 1)[1])
    assert any(p == port and _loopback(address) for _, address, p in sockets), sockets   # the GCS is there
    assert len({pid for pid, _, _ in sockets}) >= 3, sockets      # GCS, raylet, a worker (at least)
    exposed = [(pid, address, p) for pid, address, p in sockets if not _loopback(address)]
    assert not exposed, f"listening beyond loopback: {exposed}"
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") is None   # the test's own process is untouched
