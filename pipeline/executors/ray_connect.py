"""Connecting the driver to a Ray cluster, with errors that name the address and the fix.

Ray's own `ray.init(address=...)` retries an unreachable address for minutes; a TCP probe first answers in
seconds. Token authentication (on by default in Ray 2.60 for clusters started with a token) stays on: the
driver reads the token from ~/.ray/auth_token, $RAY_AUTH_TOKEN_PATH or $RAY_AUTH_TOKEN, as Ray does.
"""

from __future__ import annotations

import os
import socket

from pipeline.errors import RescueError

PROBE_SECONDS = 5.0
_START = ("start one with `ray start --head` on the head node (see docs/ray.md), or pass its address: "
          "--ray-address HOST:PORT")


def resolve_address(address: str) -> str | None:
    """HOST:PORT of the cluster to join; None for 'local' (a private Ray on this machine)."""
    if address == "local":
        return None
    if address in {"", "auto"}:
        from ray._private.services import get_ray_address_from_environment  # $RAY_ADDRESS, then `ray start`'s file

        try:
            found = get_ray_address_from_environment("auto", None)
        except ConnectionError as exc:
            raise RescueError(f"--ray-address auto: no Ray cluster runs on this machine ({exc})", _START) from exc
        if not found:
            raise RescueError("--ray-address auto: no Ray cluster runs on this machine", _START)
        return found
    return address


def probe(address: str) -> None:
    """Refuse at once when nothing listens at HOST:PORT (instead of Ray's minutes of retries)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RescueError(f"--ray-address {address!r} is not HOST:PORT",
                          "pass the head node's address as printed by `ray start --head`, e.g. 10.0.0.5:6379")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
            pass
    except OSError as exc:
        raise RescueError(f"no Ray cluster reachable at {address}: {exc.strerror or exc}",
                          "check the address and that the head node runs `ray start --head` and is reachable "
                          "from this machine (firewall: the GCS port), or use --executor local") from exc


def connect(address: str) -> bool:
    """Join (or, for 'local', start) a Ray cluster. Returns whether this call initialised Ray (then the caller
    shuts it down). Nothing is written to the build folder here."""
    import ray

    if ray.is_initialized():
        return False
    target = resolve_address(address)
    if target is not None:
        probe(target)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    try:
        ray.init(address=target, logging_level="ERROR", log_to_driver=False,
                 include_dashboard=False if target is None else None)
    except Exception as exc:  # Ray raises ConnectionError, AuthenticationError, RuntimeError, ...
        where = target or "a local Ray"
        fix = ("make the cluster's token available here: copy ~/.ray/auth_token from the head node, or set "
               "RAY_AUTH_TOKEN_PATH (see docs/ray.md)") if "token" in str(exc).lower() else _START
        if target is not None and os.environ.get("RAY_AUTH_MODE") != "token":
            # a driver without token mode is refused by a head started with it, and Ray then reports a
            # missing cluster, not the refusal: say so
            fix = (f"{fix}; a cluster started with RAY_AUTH_MODE=token (docs/ray.md) needs it on this driver too: "
                   "RAY_AUTH_MODE=token rescue build --executor ray ...")
        raise RescueError(f"cannot join the Ray cluster at {where}: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''}", fix) from exc
    return True
