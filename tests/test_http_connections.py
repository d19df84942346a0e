"""Requests to a Label Studio server on this machine go one per connection (`Connection: close`): Django's
runserver, which `label-studio start` runs, makes every answer on a kept-alive connection wait 40 ms for a delayed
ACK (pipeline/annotate/labelstudio.py, one_request_per_connection). A server elsewhere keeps its connections."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.annotate.labelstudio import Client, Connection, one_request_per_connection


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "http://localhost:8080/", "http://[::1]:8080",
                                 "http://127.0.1.1", "HTTP://LOCALHOST"])
def test_a_server_on_this_machine_gets_one_request_per_connection(url: str) -> None:
    assert one_request_per_connection(url) == {"Connection": "close"}


@pytest.mark.parametrize("url", ["https://labelstudio.example.org", "http://10.0.0.5:8080", "http://[2001:db8::1]",
                                 "not a url"])
def test_a_server_elsewhere_keeps_its_connections(url: str) -> None:
    assert one_request_per_connection(url) == {}


def test_the_client_asks_a_local_server_to_close_each_connection() -> None:
    seen: list[str | None] = []

    class WhoAmI(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keeps connections unless the client says otherwise

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            seen.append(self.headers.get("Connection"))
            body = json.dumps({"id": 1, "email": "admin@rescue.local"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), WhoAmI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        client = Client(Connection(f"http://127.0.0.1:{server.server_port}", "token", "embedded"))
        assert client.whoami() == (1, "admin@rescue.local")
        assert client.whoami() == (1, "admin@rescue.local")
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["close", "close"]
