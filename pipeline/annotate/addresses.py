"""Where people open Label Studio: the address that links (the agreement report's) use, stable across restarts.

The embedded server's own port is a new free one at every start and stays the pipeline's admin access; people
reach the server through the annotators' gateway. Its port is `gateway_port`, or with 0 (the default) the one
picked at the first start, remembered in build/labelstudio/gateway_port.json and taken again at every start
while it is free, so a link written today still opens after `rescue labelstudio down` and `up`. A team behind
an HTTPS proxy sets `public_url`; an external server (`LABEL_STUDIO_URL`) is its own address. Links never carry
credentials (a user or password in either URL is dropped).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pipeline import layout
from pipeline.annotate.gateway_process import gateway_url
from pipeline.annotate.settings import AnnotateSettings
from pipeline.project import Project
from pipeline.store import write_text_atomic

GATEWAY_PORT_FILE = "gateway_port.json"


def without_credentials(url: str) -> str:
    """`url` without a user or password and without a trailing slash (what a link may show)."""
    parts = urlsplit(url.strip())
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])).rstrip("/")


def remembered_gateway_port(base: Path) -> int:
    """The gateway port the last start picked (0 when none was recorded or the file is unreadable)."""
    try:
        port = json.loads((base / GATEWAY_PORT_FILE).read_text(encoding="utf-8"))["port"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    return port if isinstance(port, int) and 0 < port < 65536 else 0


def remember_gateway_port(base: Path, port: int) -> None:
    write_text_atomic(base / GATEWAY_PORT_FILE, json.dumps({"port": port}) + "\n")


def _free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds: TIME_WAIT counts as free
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def gateway_port(base: Path, settings: AnnotateSettings) -> int:
    """The port to start the gateway on: the configured one, else the remembered one while free, else 0 (pick)."""
    if settings.gateway_port:
        return settings.gateway_port
    port = remembered_gateway_port(base)
    return port if port and _free(settings.gateway_host, port) else 0


def link_base(project: Project, settings: AnnotateSettings) -> str:
    """The address links point to: `public_url`, else the external server, else the embedded server's gateway
    (its configured or remembered port); "" when there is none yet (no gateway was ever started)."""
    if settings.public_url:
        return without_credentials(settings.public_url)
    external = os.environ.get("LABEL_STUDIO_URL", "").strip()
    if external:
        return without_credentials(external)
    port = settings.gateway_port or remembered_gateway_port(layout.labelstudio_dir(project))
    return gateway_url(settings.gateway_host, port) if port else ""
