"""The build folder must be one folder for every node: the driver writes a marker with a random token under
build/, and a task pinned to each alive node reads it back (and reports the pipeline version it imports)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from pipeline import __version__
from pipeline.errors import RescueError
from pipeline.store import TMP_MARK

MARKER_PREFIX = ".ray-shared-check"  # with TMP_MARK in the name, a killed driver's marker is swept as debris


@dataclass(frozen=True)
class NodeView:
    node: str  # "IP (node id prefix)"
    token: str | None  # what the node read; None when it could not read the marker
    error: str
    version: str


def read_marker(marker: str, node: str) -> NodeView:
    """Runs on a worker of `node`. Top-level so Ray ships it by reference (the node must have the package)."""
    from pipeline import __version__ as worker_version

    try:
        return NodeView(node, Path(marker).read_text(encoding="utf-8"), "", worker_version)
    except OSError as exc:
        return NodeView(node, None, exc.strerror or type(exc).__name__, worker_version)


def _node_name(node: dict) -> str:
    return f"{node.get('NodeManagerAddress', '?')} (node {str(node.get('NodeID', ''))[:8]})"


def check_shared(build: Path) -> None:
    """Stop with a clear error unless every alive node sees this build folder (and runs this code version)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    build.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    marker = build / f"{MARKER_PREFIX}{TMP_MARK}{token[:8]}"
    marker.write_text(token, encoding="utf-8")
    try:
        remote = ray.remote(read_marker)
        nodes = [node for node in ray.nodes() if node.get("Alive")]
        pending = [remote.options(num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(
            node["NodeID"], soft=False)).remote(str(marker), _node_name(node)) for node in nodes]
        views: list[NodeView] = []
        for node, ref in zip(nodes, pending):
            try:
                views.append(ray.get(ref, timeout=120))
            except Exception as exc:  # the node cannot import the package, or died meanwhile
                raise RescueError(f"Ray node {_node_name(node)} cannot run the pipeline: {type(exc).__name__}: "
                                  f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}",
                                  "install this project (the same version) in the Python environment of every "
                                  "node (see docs/ray.md)") from exc
    finally:
        marker.unlink(missing_ok=True)
    unshared = [view for view in views if view.token != token]
    if unshared:
        seen = "; ".join(f"{view.node}: " + (f"cannot read it ({view.error})" if view.token is None
                                              else "reads another build folder's marker") for view in unshared)
        raise RescueError(f"the build folder {build} is not shared with every Ray node: {seen}",
                          f"put the project on a shared file system (NFS, CephFS, ...) mounted at {build.parent} on "
                          "every node, or run with --executor local")
    stale = [view for view in views if view.version != __version__]
    if stale:
        raise RescueError("Ray nodes run another version of the pipeline: " + "; ".join(
            f"{view.node} has {view.version}" for view in stale) + f" (this driver: {__version__})",
            "install the same version of this project on every node")
