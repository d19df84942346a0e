"""The annotators' gateway: a reverse proxy (aiohttp) in front of the embedded Label Studio server.

Annotators get the gateway's URL; the server's own port stays on 127.0.0.1 for the pipeline's admin access.
For every call the gateway finds out who is asking (the server's `/api/current-user/whoami` with the caller's
session cookie or `Authorization` header, cached for IDENTITY_TTL seconds) and admits it only if
gateway_rules.py allows the route and every project, view, task, annotation or draft it names is the caller's
own (looked up on the server with the admin token of build/labelstudio/admin.json, which never leaves this
process). Refusals are 403 with one log line in build/labelstudio/gateway.log: time, who, method, path (never
the query: a sign-up link's token would be a secret) and why. The gateway exits when the server does.

Adjudicators (`[tool.rescue.agreement] adjudicators`, passed as `--adjudicator EMAIL`) are admitted to the
adjudication projects as annotators are to their own. Run by gateway_process.py as `python -m
pipeline.annotate.gateway --upstream URL --host H --port P --server-pid PID --admin-file F --log-file F
[--adjudicator EMAIL]...`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web
from multidict import CIMultiDict
from yarl import URL

from pipeline.annotate import gateway_rules as rules
from pipeline.annotate.projects import is_adjudication_project, is_annotator_project

MARK_HEADER = "X-Rescue-Gateway"  # on every answer: how gateway_process knows the port is ours
IDENTITY_TTL = 30.0  # seconds a session's account is remembered (a session never changes hands; logout ends it)
PROJECTS_TTL = 10.0  # seconds the project titles are remembered (a project unknown to the cache refreshes it)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "trailers", "transfer-encoding", "upgrade", "content-length"})
MAX_BODY = 16 * 2**20


@dataclass(frozen=True)
class Caller:
    user_id: int
    email: str


class Refused(Exception):
    """A call the gateway does not admit; the message is the reason that goes to the log."""


class Gateway:
    def __init__(self, upstream: str, admin_token: str, log_file: Path, adjudicators: frozenset[str] = frozenset()
                 ) -> None:
        self.upstream = upstream.rstrip("/")
        self.adjudicators = frozenset(email.strip().lower() for email in adjudicators)
        self.admin = {"Authorization": f"Token {admin_token}"}
        self.log_file = log_file
        self.callers: dict[str, tuple[float, Caller | None]] = {}
        self.titles: dict[int, str] = {}
        self.titles_at = 0.0
        self.task_projects: dict[int, int] = {}  # a task never moves to another project
        self.proxy: ClientSession
        self.lookup: ClientSession

    async def open(self, _: web.Application) -> None:
        # One request per connection to the server on this machine: on a kept-alive connection Django's runserver
        # makes each answer wait 40 ms for a delayed ACK (labelstudio.one_request_per_connection).
        timeout = ClientTimeout(total=None, sock_connect=10)
        self.proxy = ClientSession(auto_decompress=False, timeout=timeout,  # bytes pass through as the server sent
                                   connector=TCPConnector(force_close=True))
        self.lookup = ClientSession(timeout=ClientTimeout(total=60), connector=TCPConnector(force_close=True))

    async def close(self, _: web.Application) -> None:
        await self.proxy.close()
        await self.lookup.close()

    def log(self, status: int, caller: Caller | None, method: str, path: str, reason: str) -> None:
        who = caller.email if caller else "anonymous"
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self.log_file.open("a", encoding="utf-8") as handle:
            handle.write(f"{when} {status} {who} {method} {path}: {reason}\n")

    # -- who is asking -------------------------------------------------------------------------------------------

    async def caller(self, request: web.Request) -> Caller | None:
        credentials = {name: request.headers[name] for name in ("Authorization", "Cookie") if name in request.headers}
        if not credentials:
            return None
        if "Authorization" in credentials:  # a token call is judged by the token's account alone
            credentials.pop("Cookie", None)
        key = hashlib.sha256(json.dumps(credentials, sort_keys=True).encode()).hexdigest()
        cached = self.callers.get(key)
        if cached and cached[0] > time.monotonic():
            return cached[1]
        async with self.lookup.get(f"{self.upstream}/api/current-user/whoami", headers=credentials,
                                   allow_redirects=False) as answer:
            body = await answer.json(content_type=None) if answer.status == 200 else None
        caller = Caller(int(body["id"]), str(body["email"]).lower()) if isinstance(body, dict) and "id" in body \
            else None
        if len(self.callers) > 10_000:
            self.callers.clear()
        self.callers[key] = (time.monotonic() + IDENTITY_TTL, caller)
        return caller

    # -- what belongs to whom (asked as admin) -------------------------------------------------------------------

    async def _admin_get(self, path: str, **params: str) -> Any:
        async with self.lookup.get(f"{self.upstream}{path}", headers=self.admin, params=params) as answer:
            if answer.status == 404:
                return None
            answer.raise_for_status()
            return await answer.json(content_type=None)

    async def project_title(self, project_id: int) -> str | None:
        stale = time.monotonic() - self.titles_at > PROJECTS_TTL
        if stale or project_id not in self.titles:
            titles: dict[int, str] = {}
            page = 1
            while True:
                answer = await self._admin_get("/api/projects/", page=str(page), page_size="1000")
                for project in (answer or {}).get("results", []):
                    titles[int(project["id"])] = str(project.get("title") or "")
                if not answer or not answer.get("next"):
                    break
                page += 1
            self.titles, self.titles_at = titles, time.monotonic()
        return self.titles.get(project_id)

    def owns(self, caller: Caller, title: str) -> bool:
        """The caller's own annotation project, or an adjudication project when the caller is an adjudicator."""
        return is_annotator_project(title, caller.email) or (caller.email in self.adjudicators
                                                             and is_adjudication_project(title))

    async def owned_project(self, caller: Caller, project_id: int) -> bool:
        title = await self.project_title(project_id)
        return title is not None and self.owns(caller, title)

    async def task_project(self, task_id: int) -> int | None:
        if task_id not in self.task_projects:
            task = await self._admin_get(f"/api/tasks/{task_id}/", fields="project")
            if not isinstance(task, dict) or task.get("project") is None:
                return None
            self.task_projects[task_id] = int(task["project"])
        return self.task_projects[task_id]

    async def resolve(self, kind: rules.Kind, object_id: int) -> tuple[int | None, str | None]:
        """(project id, its author: user id or email as text) of the object; (None, None) when there is none."""
        if kind == "project":
            return object_id, None
        if kind == "task":
            return await self.task_project(object_id), None
        if kind == "view":
            view = await self._admin_get(f"/api/dm/views/{object_id}/")
            return (int(view["project"]) if isinstance(view, dict) and view.get("project") else None), None
        path = "annotations" if kind.startswith("annotation") else "drafts"
        found = await self._admin_get(f"/api/{path}/{object_id}/")
        if not isinstance(found, dict) or found.get("task") is None:
            return None, None
        author = found.get("completed_by") if path == "annotations" else found.get("user")  # a draft names an email
        author = author.get("id") if isinstance(author, dict) else author
        return await self.task_project(int(found["task"])), None if author is None else str(author).lower()

    async def check(self, caller: Caller, route: rules.Route, request: web.Request, body: Any) -> None:
        named: list[tuple[rules.Kind, int]] = rules.path_ids(route, request.path)
        for key, kind in route.query.items():
            named += [(kind, _as_id(value, key)) for value in request.query.getall(key, []) if value not in ("", "0")]
        if isinstance(body, dict):  # a draft_id of 0 or null means none (the interface sends 0 with a first save)
            named += [(kind, _as_id(body[key], key)) for key, kind in route.body.items() if body.get(key)]
        if route.access == "owned" and not any(kind in ("project", "task", "view", "annotation", "annotation_write",
                                                        "draft", "draft_write") for kind, _ in named):
            raise Refused("names none of the caller's projects")
        if route.author_check and isinstance(body, dict):  # an answer or draft in someone else's name
            for key in ("completed_by", "updated_by", "user"):
                if body.get(key) not in (None, caller.user_id):
                    raise Refused(f"{key} {body.get(key)!r} is not the caller")
        for kind, object_id in named:
            project_id, author = await self.resolve(kind, object_id)
            if project_id is None:
                raise Refused(f"no {kind.removesuffix('_write')} {object_id}")
            if not await self.owned_project(caller, project_id):
                raise Refused(f"{kind.removesuffix('_write')} {object_id} is in project {project_id}, not one of "
                              "the caller's own")
            if kind.endswith("_write") and author not in (str(caller.user_id), caller.email):
                raise Refused(f"{kind.removesuffix('_write')} {object_id} was made by another account")

    def own_only(self, caller: Caller, payload: Any, what: str) -> Any:
        """A list of projects or accounts cut to the caller's own (the server lists every one of the organisation)."""
        items = payload.get("results") if isinstance(payload, dict) else payload
        if not isinstance(items, list):
            return [] if what == "users" else payload

        def own(item: Any) -> bool:
            if not isinstance(item, dict):
                return False
            if what == "users":
                return item.get("id") == caller.user_id
            return self.owns(caller, str(item.get("title") or ""))

        kept = [item for item in items if own(item)]
        return {**payload, "results": kept, "count": len(kept)} if isinstance(payload, dict) else kept

    # -- the proxy -----------------------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        method, path = request.method, request.path
        caller: Caller | None = None
        try:
            if "//" in path or "/." in path or "\\" in path:
                raise Refused("an unusual path")
            if rules.is_static(method, path):
                return await self.forward(request, b"")
            route = rules.find_route(method, path)
            if route is None:
                caller = await self.caller(request)
                raise Refused(rules.refusal_reason(method, path))
            body = await request.read() if request.can_read_body else b""
            if route.access == "open":
                return await self.forward(request, body)
            caller = await self.caller(request)
            if caller is None:
                if method == "GET" and not path.startswith("/api/"):
                    raise web.HTTPFound(f"/user/login/?next={path}")
                return web.json_response({"detail": "log in first"}, status=401, headers={MARK_HEADER: "1"})
            parsed = _json_body(body) if body and (route.body or route.author_check) else None
            await self.check(caller, route, request, parsed)
            if route.only_own:
                return await self.forward_filtered(request, caller, route.only_own)
            return await self.forward(request, body)
        except Refused as refusal:
            self.log(403, caller, method, path, str(refusal))
            return web.json_response({"detail": f"refused by the annotators' gateway: {refusal}"}, status=403,
                                     headers={MARK_HEADER: "1"})

    def _upstream_request(self, request: web.Request) -> tuple[URL, CIMultiDict[str]]:
        url = URL(self.upstream).with_path(request.path).with_query(request.query)
        headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP)
        return url, headers  # Host stays the caller's: Django checks a POST's Origin against it

    async def forward(self, request: web.Request, body: bytes) -> web.StreamResponse:
        url, headers = self._upstream_request(request)
        async with self.proxy.request(request.method, url, headers=headers, data=body or None,
                                      allow_redirects=False) as answer:
            response = web.StreamResponse(status=answer.status, reason=answer.reason)
            for name, value in answer.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    response.headers.add(name, value)
            if "Content-Length" in answer.headers:
                response.content_length = int(answer.headers["Content-Length"])
            response.headers[MARK_HEADER] = "1"
            try:
                await response.prepare(request)
                async for chunk in answer.content.iter_chunked(2**16):
                    await response.write(chunk)
                await response.write_eof()
            except ConnectionResetError:  # the browser went away (a video seek cancels the range it asked for)
                pass
            return response

    async def forward_filtered(self, request: web.Request, caller: Caller, what: str) -> web.Response:
        url, headers = self._upstream_request(request)
        headers.pop("Accept-Encoding", None)  # plain JSON, to be filtered
        async with self.lookup.request("GET", url, headers=headers, allow_redirects=False) as answer:
            data = await answer.read()
            status = answer.status
        if status != 200:
            return web.Response(status=status, body=data, headers={MARK_HEADER: "1"})
        payload = self.own_only(caller, json.loads(data), what)
        return web.json_response(payload, headers={MARK_HEADER: "1"})


def _as_id(value: object, key: str) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise Refused(f"{key}={value!r} is not an id") from None


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise Refused("a body that is not JSON") from None


def _exit_with_server(server_pid: int) -> None:
    """Stop (SIGTERM to ourselves: a graceful exit) when the server's process ends, however it ends."""
    try:
        handle = os.pidfd_open(server_pid)
    except OSError:
        os.kill(os.getpid(), signal.SIGTERM)
        return
    asyncio.get_running_loop().add_reader(handle, os.kill, os.getpid(), signal.SIGTERM)


def make_app(gateway: Gateway, server_pid: int | None = None) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app.on_startup.append(gateway.open)
    if server_pid:
        app.on_startup.append(lambda _: _start_watch(server_pid))
    app.on_cleanup.append(gateway.close)
    app.router.add_route("*", "/{tail:.*}", gateway.handle)
    return app


async def _start_watch(server_pid: int) -> None:
    _exit_with_server(server_pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("--upstream", "--host", "--admin-file", "--log-file"):
        parser.add_argument(name, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--adjudicator", action="append", default=[])
    args = parser.parse_args()
    token = json.loads(Path(args.admin_file).read_text(encoding="utf-8"))["token"]
    gateway = Gateway(args.upstream, token, Path(args.log_file), frozenset(args.adjudicator))
    web.run_app(make_app(gateway, args.server_pid), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
