"""Start and stop the annotators' gateway (gateway.py) alongside the embedded server (server.py calls these).

The gateway is a process of this project's Python in a process group of its own, started once the server answers
and stopped with it; it also exits by itself when the server's process ends (a pidfd it watches), so a server
that is killed or stopped by any path never leaves its gateway behind. Its pid and URL are in the server's state
(build/labelstudio/server.json); its refusals go to build/labelstudio/gateway.log (mode 600).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from pipeline.errors import RescueError
from pipeline.processes import process_alive, stop_group

MODULE = "pipeline.annotate.gateway"
_children: dict[int, subprocess.Popen[bytes]] = {}


def gateway_url(host: str, port: int) -> str:
    """The URL to give annotators (a wildcard address is named by this machine's host name)."""
    shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host  # noqa: S104 - only a name to print
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def _probe_url(host: str, port: int) -> str:
    return f"http://127.0.0.1:{port}" if host in ("0.0.0.0", "") else (  # noqa: S104
        f"http://[::1]:{port}" if host == "::" else f"http://{host}:{port}" if ":" not in host
        else f"http://[{host}]:{port}")


def is_gateway(pid: int) -> bool:
    """Guards against a recycled pid: only our gateway module is ever signalled."""
    try:
        return MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def alive(pid: int) -> bool:
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        return False
    return pid > 0 and process_alive(pid) and is_gateway(pid)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=3.0) as answer:  # noqa: S310 - our own gateway
            return answer.headers.get("X-Rescue-Gateway") == "1"
    except (urllib.error.URLError, OSError):
        return False


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_gateway(*, upstream: str, server_pid: int, host: str, port: int, admin_file: Path, log_file: Path,
                  timeout: float, adjudicators: tuple[str, ...] = (), die_with_parent: bool = False) -> tuple[int, str]:
    """Start the gateway in front of `upstream` and wait until it answers; returns (pid, URL for annotators)."""
    if not port:
        try:
            with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
        except OSError as exc:
            raise RescueError(f"the annotators' gateway cannot listen on gateway_host {host!r} ({exc.strerror or exc})",
                              "set gateway_host in [tool.rescue.annotate] to an address of this machine "
                              "(127.0.0.1, or 0.0.0.0 for every interface)") from exc
    os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    argv = [sys.executable, "-m", MODULE, "--upstream", upstream, "--host", host, "--port", str(port),
            "--server-pid", str(server_pid), "--admin-file", str(admin_file), "--log-file", str(log_file)]
    for email in adjudicators:
        argv += ["--adjudicator", email]
    with log_file.open("ab") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,  # noqa: S603
                                   start_new_session=True, umask=0o077,
                                   preexec_fn=_die_with_parent if die_with_parent else None)  # noqa: PLW1509
    _children[process.pid] = process
    probe = _probe_url(host, port)
    deadline = time.monotonic() + timeout
    while not _answers(probe):
        if process.poll() is not None:
            _children.pop(process.pid, None)
            raise RescueError(f"the annotators' gateway could not start on {host}:{port} (exit code "
                              f"{process.returncode}; the port may be in use): see {log_file}",
                              "set another gateway_port in [tool.rescue.annotate] (0 picks a free one)")
        if time.monotonic() > deadline:
            stop_gateway(process.pid)
            raise RescueError(f"the annotators' gateway did not answer on {host}:{port} within {timeout:.0f} s",
                              f"see {log_file}")
        time.sleep(0.2)
    return process.pid, gateway_url(host, port)


def stop_gateway(pid: int, *, grace: float = 10.0, kill: bool = False) -> bool:
    """Stop the gateway `pid` (SIGTERM, SIGKILL after `grace`; at once with `kill`); returns whether it ran."""
    if not alive(pid):
        _reap(pid)
        return False
    stop_group(pid, lambda: alive(pid), grace=grace, kill=kill)
    _reap(pid)
    return True


def _reap(pid: int) -> None:
    child = _children.pop(pid, None)
    if child is not None:
        child.wait(timeout=10)
