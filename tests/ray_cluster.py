"""A real Ray cluster on 127.0.0.1 for the executor tests: `ray start --head --block` nodes started by the test
(token authentication on, with a token file of the test's own), stopped by signalling their process groups.

Every node's workers import this checkout (PYTHONPATH), as every node of a real cluster has the project installed.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.processes import session_members

REPO = Path(__file__).resolve().parents[1]
GRACE_S = 5  # seconds a node gets to stop before its process group is killed (stop())
RAY = str(Path(sys.executable).with_name("ray"))  # the CLI of the Ray this test process imports


def kill_session(session: int, wait_s: float = 10) -> None:
    """SIGKILL every process of the session and wait until none is left (zombies of ours are reaped by wait)."""
    deadline = time.monotonic() + wait_s
    while (members := session_members(session)) and time.monotonic() < deadline:
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def auth_env(token_file: Path) -> dict[str, str]:
    """Token authentication on, with this token: for the nodes and for the test's own driver."""
    if not token_file.exists():
        token_file.write_text(secrets.token_hex(32), encoding="utf-8")
        token_file.chmod(0o600)
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_file)}


@dataclass
class RayCluster:
    address: str
    env: dict[str, str]
    logs: Path
    nodes: list[subprocess.Popen] = field(default_factory=list)

    def start_node(self, args: list[str], name: str, *, wrap: list[str] = ()) -> None:
        """Start `ray start ... --block` (optionally under `wrap`, e.g. a mount namespace) and wait until it runs."""
        log = self.logs / f"{name}.log"
        handle = log.open("w")
        process = subprocess.Popen([*wrap, RAY, "start", *args, "--block", "--disable-usage-stats"], env=self.env,
                                   stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        self.nodes.append(process)
        deadline = time.monotonic() + 180
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ray node {name} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM each node's process group (ours alone), SIGKILL its whole session after a short grace.

        A node's graceful shutdown takes about 33 s, nearly all of it the raylet waiting out its own timeout; the
        test is over by then, so 5 s of grace, then the session is killed (it leaves nothing in /dev/shm)."""
        for process in reversed(self.nodes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(self.nodes):
            try:
                process.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            kill_session(process.pid)  # the node's raylet, GCS and workers (in process groups of their own)
            process.wait(timeout=30)
        self.nodes.clear()


def start_head(logs: Path, token_file: Path, *, num_cpus: int = 2) -> RayCluster:
    port = free_port()
    env = {**os.environ, **auth_env(token_file),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    cluster = RayCluster(address=f"127.0.0.1:{port}", env=env, logs=logs)
    # the client server on a free port too, not on Ray's fixed default 10001: another cluster of this machine (the
    # other xdist worker's, another worktree's test run) may hold it
    cluster.start_node(["--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", str(num_cpus),
                        "--include-dashboard=false", "--ray-client-server-port", str(free_port())], "head")
    return cluster


def cluster_pids(token_file: Path) -> list[int]:
    """Every process of the cluster that uses `token_file` (Ray passes its environment to all of them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(token_file).encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _hex_address(text: str) -> str:
    """/proc/net/tcp{,6} little-endian hex address -> dotted IPv4 or compressed IPv6."""
    raw = bytes.fromhex(text)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))  # four 32-bit words, each little-endian
    return str(ipaddress.IPv6Address(words))


def listening_sockets(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every TCP socket in LISTEN state that one of `pids` holds, from /proc (no psutil)."""
    listening: dict[str, tuple[str, int]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                address, port = fields[1].rsplit(":", 1)
                listening[fields[9]] = (_hex_address(address), int(port, 16))
    found = []
    def links(pid: int) -> list[str]:
        out = []
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    out.append(os.readlink(fd))
                except OSError:  # closed meanwhile
                    continue
        except OSError:  # the process ended
            pass
        return out

    for pid in pids:
        for link in links(pid):
            inode = link[len("socket:["):-1] if link.startswith("socket:[") else None
            if inode in listening:
                found.append((pid, *listening[inode]))
    return sorted(found)


# The local head of docs/ray.md ("A head on this machine only"): Ray replaces a loopback --node-ip-address by the
# machine's routable address unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, and its servers bind the node address.
LOCAL_HEAD_ENV = {"RAY_AUTH_MODE": "token", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
LOCAL_HEAD_ARGS = ("--head", "--node-ip-address", "127.0.0.1", "--port", "6379", "--include-dashboard=false")


def documented_local_head() -> str:
    """The command line docs/ray.md gives for the local head (the test checks the page holds it)."""
    return " ".join([*(f"{k}={v}" for k, v in LOCAL_HEAD_ENV.items()), "ray start", *LOCAL_HEAD_ARGS])


def start_local_head(logs: Path, token_file: Path, *, num_cpus: int = 1) -> RayCluster:
    """The documented local head, on free ports instead of 6379 and the client server's 10001."""
    logs.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, **auth_env(token_file), **LOCAL_HEAD_ENV,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    args = [str(port) if arg == "6379" else arg for arg in LOCAL_HEAD_ARGS]
    cluster = RayCluster(address=f"127.0.0.1:{port}", env=env, logs=logs)
    cluster.start_node([*args, "--num-cpus", str(num_cpus), "--ray-client-server-port", str(free_port())], "head")
    return cluster


def processes_titled(prefix: str, token_file: Path) -> list[int]:
    """Pids of this cluster's processes whose title (Ray sets `ray::<Class>.<method>`) starts with `prefix`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            mine = str(token_file).encode() in (entry / "environ").read_bytes()
        except OSError:
            continue
        if mine and title.startswith(prefix):
            found.append(int(entry.name))
    return found
