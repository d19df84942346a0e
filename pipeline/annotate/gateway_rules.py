"""What the annotators' gateway (gateway.py) lets through: an allow-list of the calls Label Studio 1.23's labelling
interface makes, found by driving the real UI in Chromium and logging every request (tests/test_gateway_browser.py
does it again and fails on a call the list does not admit).

A call is admitted when its method and path match a route below AND every object it names (a project, view, task,
annotation or draft id in the path, the query or the JSON body) belongs to the caller: a project titled as the
caller's own (projects.is_annotator_project), a view, task or draft of such a project, an annotation the caller
made there. Anything else is refused: user management, invites, sign-up, tokens, project creation and settings,
imports, exports, deletion, storages, webhooks, and every call on another account's work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Access = Literal["open", "signed_in", "owned"]
# what an id names; `annotation_write` and `draft_write` also require the caller to be the object's author
Kind = Literal["project", "view", "task", "annotation", "annotation_write", "draft", "draft_write"]

STATIC = re.compile(r"^/(static|react-app|label-studio-frontend|dm|editor-frontend)/[^?]*$|^/favicon\.ico$"
                    r"|^/(robots\.txt|sw\.js|manifest\.json)$")
ID = r"(\d+)"


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    pattern: re.Pattern[str]
    access: Access
    names: tuple[Kind, ...] = ()  # what each captured id of the path names
    query: dict[str, Kind] = field(default_factory=dict)  # query parameters that name objects
    body: dict[str, Kind] = field(default_factory=dict)  # JSON body keys that name objects
    author_check: bool = False  # a body's `completed_by` must be the caller (an answer in someone else's name)
    only_own: Literal["projects", "users"] | None = None  # a list answered with the caller's own projects / account


def _route(methods: str, path: str, access: Access, *names: Kind, **extra: object) -> Route:
    pattern = re.compile(f"^{path}/?$")
    return Route(frozenset(methods.split()), pattern, access, names, **extra)  # type: ignore[arg-type]


_IN_PROJECT: dict[str, Kind] = {"project": "project", "view": "view"}
_PAGE_PROJECT: dict[str, Kind] = {"project": "project", "task": "task"}

ROUTES: tuple[Route, ...] = (
    _route("GET HEAD", "/health", "open"),
    _route("GET POST", "/user/login", "open"),
    _route("GET POST", "/logout", "open"),
    _route("GET", "/heidi-tips", "open"),  # the login page's tips (the open-source server answers 404)
    # pages of the interface (the app loads its data through the API below)
    _route("GET", "", "signed_in"),
    _route("GET", "/projects", "signed_in"),
    _route("GET", f"/projects/{ID}", "owned", "project"),
    _route("GET", f"/projects/{ID}/data", "owned", "project", query=_PAGE_PROJECT),
    _route("GET", "/user/account", "signed_in"),
    # what the project list, the data manager and the labelling view ask for
    _route("GET", "/api/current-user/whoami", "signed_in"),
    _route("GET", "/api/version", "signed_in"),
    _route("GET", "/api/projects", "signed_in", only_own="projects"),
    _route("GET", f"/api/projects/{ID}", "owned", "project"),
    _route("GET", f"/api/projects/{ID}/next", "owned", "project"),
    _route("GET", f"/api/projects/{ID}/label-stream-history", "owned", "project", query=_IN_PROJECT),
    _route("GET", "/api/users", "owned", query={"project": "project"}, only_own="users"),  # the annotator column
    _route("GET", "/api/ml", "owned", query={"project": "project"}),  # read only: the data manager asks for it
    _route("GET", "/api/label_links", "owned", query={"project": "project"}),
    _route("GET", "/api/dm/project", "owned", query=_IN_PROJECT),
    _route("GET", "/api/dm/columns", "owned", query=_IN_PROJECT),
    _route("GET", "/api/dm/actions", "owned", query=_IN_PROJECT),
    _route("GET", "/api/dm/views", "owned", query=_IN_PROJECT),
    _route("POST", "/api/dm/views", "owned", body={"project": "project"}),
    _route("GET PATCH PUT", f"/api/dm/views/{ID}", "owned", "view", query=_IN_PROJECT, body={"project": "project"}),
    _route("GET", "/api/tasks", "owned", query=_IN_PROJECT),
    _route("GET", f"/api/tasks/{ID}", "owned", "task", query=_IN_PROJECT),
    _route("GET", f"/api/tasks/{ID}/annotations", "owned", "task", query=_IN_PROJECT),
    _route("POST", f"/api/tasks/{ID}/annotations", "owned", "task", query=_IN_PROJECT, author_check=True,
           body={"task": "task", "project": "project", "draft_id": "draft_write"}),
    _route("GET", f"/api/annotations/{ID}", "owned", "annotation"),
    _route("PATCH PUT", f"/api/annotations/{ID}", "owned", "annotation_write", query=_IN_PROJECT, author_check=True,
           body={"task": "task", "project": "project", "draft_id": "draft_write"}),
    _route("POST", f"/api/tasks/{ID}/drafts", "owned", "task", query=_IN_PROJECT, author_check=True,
           body={"task": "task", "project": "project"}),
    _route("POST", f"/api/tasks/{ID}/annotations/{ID}/drafts", "owned", "task", "annotation_write",
           query=_IN_PROJECT, author_check=True, body={"task": "task", "project": "project"}),
    _route("GET", f"/api/drafts/{ID}", "owned", "draft"),
    _route("PATCH PUT", f"/api/drafts/{ID}", "owned", "draft_write", query=_IN_PROJECT, author_check=True,
           body={"task": "task", "project": "project"}),
    # the media a task shows: the server serves only the media root (media_root.py), which every annotator labels
    _route("GET HEAD", "/data/local-files", "signed_in"),
)

# why a call is refused, for the log line (the first match names it; anything unlisted is "not in the allow-list")
_REFUSED = (
    (re.compile(r"^/api/users|^/api/organizations/\d+/memberships|^/api/invite|^/user/signup|^/api/current-user/"
                r"(reset-token|token)|^/api/token"), "user management, invites, sign-up and tokens"),
    (re.compile(r"/export|/exports"), "exports"),
    (re.compile(r"/import|/storages|/webhooks|/ml"), "imports, storages, webhooks and ML backends"),
)


def find_route(method: str, path: str) -> Route | None:
    for route in ROUTES:
        if method in route.methods and route.pattern.match(path):
            return route
    return None


def refusal_reason(method: str, path: str) -> str:
    if method == "DELETE":
        return "deletion"
    for pattern, reason in _REFUSED:
        if pattern.search(path):
            return reason
    if method == "POST" and re.match(r"^/api/projects/?$", path):
        return "project creation"
    if re.match(r"^/api/projects/\d+", path) and method in ("PATCH", "PUT", "POST"):
        return "project settings"
    return "not in the allow-list of the labelling interface"


def path_ids(route: Route, path: str) -> list[tuple[Kind, int]]:
    match = route.pattern.match(path)
    assert match is not None
    return [(kind, int(value)) for kind, value in zip(route.names, match.groups(), strict=True)]


def is_static(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and bool(STATIC.match(path))
