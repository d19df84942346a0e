"""The one module that talks to Label Studio (label_studio_sdk, plus plain HTTP for the sign-up form).

Everything the SDK returns is turned into plain values or our records here, and every failure the
user can fix (server down, wrong token, a config or task the server refuses) becomes a RescueError
with the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from ipaddress import ip_address
from typing import Any, Literal
from urllib.parse import urlsplit

from pipeline.errors import RescueError, masked_url

TIMEOUT = 600.0  # seconds; a full export of the benchmark takes a while
LIST_PAGE = 10_000


@dataclass(frozen=True)
class Connection:
    """Where the server is and how we authenticate; `source` picks the wording of fixes.

    `url` is what may be shown, logged or stored (a password in it masked, see masked_url); requests go to
    `endpoint`, the URL as given. So messages and records that print `connection.url` never leak it."""

    url: str
    token: str
    source: Literal["embedded", "environment"]
    endpoint: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoint", self.endpoint or self.url)
        object.__setattr__(self, "url", masked_url(self.url))

    def __repr__(self) -> str:  # never show the token, nor a password in the URL
        return f"Connection(url={self.url!r}, source={self.source!r})"

    @property
    def fix_unreachable(self) -> str:
        if self.source == "embedded":
            return "run `rescue labelstudio up` (or `rescue labelstudio status` to see what is wrong)"
        return "check LABEL_STUDIO_URL and that the server runs, or unset it to use the embedded server"

    @property
    def fix_token(self) -> str:
        if self.source == "embedded":
            return ("the admin token in build/labelstudio/admin.json does not match this server: stop it with "
                    "`rescue labelstudio down` and start it again with `rescue labelstudio up`")
        return "set LABEL_STUDIO_API_KEY to a valid access token (Label Studio: Account & Settings)"


@dataclass(frozen=True)
class ProjectInfo:
    id: int
    title: str
    label_config: str
    maximum_annotations: int
    model_version: str
    show_collab_predictions: bool
    task_number: int


@dataclass(frozen=True)
class TaskPredictions:
    task_id: int
    meta: dict[str, Any]
    predictions: tuple[tuple[int, str], ...]  # (prediction id, model_version)
    annotated: bool  # has an annotation, submitted or skipped


def validate_config(config: str, *, where: str) -> None:
    """Offline check with the SDK's LabelInterface, the same parser the server uses."""
    from label_studio_sdk.label_interface import LabelInterface

    try:
        LabelInterface(config).validate()
    except Exception as exc:  # the SDK raises several exception types for bad XML
        raise RescueError(f"{where}: Label Studio rejects the label config: {exc}",
                          "fix the annotation schema (see the field types at the top of the schema file)") from exc


class ResultChecker:
    """Offline checks of annotation `result` lists against one label config, parsed by the SDK's LabelInterface.

    `errors` is the structural check pull runs on every annotation (each entry names a control of the
    config, with that control's result type and object): cheap enough for 20,000 annotations, while
    results.decode checks the values. `sdk_errors` is the SDK's own, much slower, full validation.
    """

    def __init__(self, config: str) -> None:
        from label_studio_sdk.label_interface import LabelInterface

        self._interface = LabelInterface(config)
        self._controls = {c.name: (c.tag.lower(), frozenset(c.to_name or ())) for c in self._interface.controls}

    def errors(self, result: Sequence[dict[str, Any]]) -> list[str]:
        found = []
        for index, entry in enumerate(result):
            name = entry.get("from_name")
            control = self._controls.get(name) if isinstance(name, str) else None
            if control is None:
                found.append(f"Region {index}: 'from_name' {name!r} not found in configuration")
            elif str(entry.get("type", "")).lower() != control[0]:
                found.append(f"Region {index}: Type {entry.get('type')!r} does not match expected type "
                             f"{control[0]!r} for control {name!r}")
            elif entry.get("to_name") not in control[1]:
                found.append(f"Region {index}: 'to_name' {entry.get('to_name')!r} is not valid for control {name!r}")
            elif not isinstance(entry.get("value"), dict):
                found.append(f"Region {index}: no value for control {name!r}")
        return found

    def sdk_errors(self, result: Sequence[dict[str, Any]]) -> list[str]:
        return list(self._interface.validate_prediction({"result": list(result)}, return_errors=True))


def _prediction_key(prediction: Any) -> tuple[int, str]:
    """(id, model_version) of a listed prediction, which the SDK gives as a model or a plain dict."""
    raw = prediction if isinstance(prediction, dict) else prediction.dict()
    return int(raw["id"]), str(raw.get("model_version") or "")


def _detail(body: Any) -> str:
    if isinstance(body, dict):
        detail = body.get("validation_errors") or body.get("detail") or body
        return json.dumps(detail, ensure_ascii=False) if not isinstance(detail, str) else detail
    return str(body)[:500]


def one_request_per_connection(url: str) -> dict[str, str]:
    """`Connection: close` for a server on this machine, else nothing.

    Label Studio's own server (Django's runserver, what `label-studio start` runs) sends a response's headers and
    body in two writes without TCP_NODELAY; on a kept-alive connection the body then waits for the client's
    delayed ACK, 40 ms on Linux, in every request (measured: /health 50 ms kept alive, 6 ms on a new connection;
    docs/annotation.md, Performance). A new loopback connection costs well under a millisecond; across a network
    (TLS handshakes) keeping connections is cheaper, and servers there usually sit behind a proxy that answers
    in one write."""
    host = (urlsplit(url).hostname or "").lower()
    loopback = host == "localhost"
    if not loopback:
        try:
            loopback = ip_address(host).is_loopback
        except ValueError:
            loopback = False
    return {"Connection": "close"} if loopback else {}


@cache
def _tls_context() -> Any:
    """httpx's default TLS context (CA bundle, SSL_CERT_FILE), made once: each new one reads the CA bundle again,
    which made a Client cost about 40 ms, and commands and tests make many."""
    import httpx

    return httpx.create_ssl_context()


class Client:
    """A thin, typed wrapper over the SDK calls push, pull and the account commands need."""

    def __init__(self, connection: Connection) -> None:
        import httpx
        from label_studio_sdk import LabelStudio

        self.connection = connection
        http = httpx.Client(timeout=TIMEOUT, follow_redirects=True, verify=_tls_context(),  # as the SDK's own, but
                            headers=one_request_per_connection(connection.endpoint))
        self._sdk = LabelStudio(base_url=connection.endpoint, api_key=connection.token, timeout=TIMEOUT,
                                httpx_client=http)

    @contextmanager
    def _api(self, what: str) -> Iterator[None]:
        import httpx
        from label_studio_sdk.core.api_error import ApiError

        url = self.connection.url  # masked: fit for messages
        try:
            yield
        except httpx.InvalidURL as exc:
            raise RescueError(f"{url} is not a valid Label Studio URL ({what})",
                              self.connection.fix_unreachable) from exc
        except httpx.TransportError as exc:
            raise RescueError(f"cannot reach Label Studio at {url} ({what}): {type(exc).__name__}",
                              self.connection.fix_unreachable) from exc
        except ApiError as exc:
            if exc.status_code in (401, 403):
                raise RescueError(f"Label Studio at {url} refused the API token ({exc.status_code}) while trying "
                                  f"to {what}", self.connection.fix_token) from exc
            raise RescueError(f"Label Studio at {url} refused to {what} ({exc.status_code}): {_detail(exc.body)}",
                              "see the message; the server's log has details") from exc

    # -- identity ------------------------------------------------------------------------------------------
    def whoami(self) -> tuple[int, str]:
        with self._api("identify the token's user"):
            user = self._sdk.users.whoami()
        return int(user.id), str(user.email)

    def users(self) -> dict[int, str]:
        """Every account of the organisation: id -> email."""
        with self._api("list users"):
            return {int(u.id): str(u.email) for u in self._sdk.users.list()}

    def accounts(self) -> list[tuple[int, str, str]]:
        """Every account of the organisation: (id, email, when the server says it joined, ISO or '')."""
        with self._api("list users"):
            return [(int(u.id), str(u.email).lower(), u.date_joined.isoformat(timespec="seconds") if u.date_joined
                     else "") for u in self._sdk.users.list()]

    def invite_token(self) -> str:
        with self._api("get the organisation's invite link"):
            return str(self._sdk.organizations.invites.get_invite_link().token)

    # -- projects ------------------------------------------------------------------------------------------
    @staticmethod
    def _info(project: Any) -> ProjectInfo:
        return ProjectInfo(id=int(project.id), title=str(project.title), label_config=project.label_config or "",
                           maximum_annotations=int(project.maximum_annotations or 1),
                           model_version=project.model_version or "",
                           show_collab_predictions=bool(project.show_collab_predictions),
                           task_number=int(project.task_number or 0))

    def find_project(self, title: str) -> ProjectInfo | None:
        with self._api("list projects"):
            matches = [p for p in self._sdk.projects.list(title=title, page_size=100) if p.title == title]
        if len(matches) > 1:
            raise RescueError(f"Label Studio at {self.connection.url} has {len(matches)} projects titled {title!r}",
                              "rename or delete the extra ones so that push and pull know which one to use")
        return self.project(int(matches[0].id)) if matches else None

    def projects_titled(self, part: str) -> list[ProjectInfo]:
        """Every project whose title contains `part` (the server's filter ignores case)."""
        with self._api("list projects"):
            ids = [int(p.id) for p in self._sdk.projects.list(title=part, page_size=100) if part in str(p.title)]
        return [self.project(project_id) for project_id in sorted(ids)]

    def project(self, project_id: int) -> ProjectInfo:
        with self._api(f"read project {project_id}"):
            return self._info(self._sdk.projects.get(id=project_id))

    def create_project(self, title: str, description: str, config: str, maximum_annotations: int) -> ProjectInfo:
        with self._api(f"create project {title!r}"):
            created = self._sdk.projects.create(title=title, description=description, label_config=config,
                                                maximum_annotations=maximum_annotations,
                                                show_collab_predictions=True, enable_empty_annotation=False)
        return self.project(int(created.id))

    def delete_project(self, project_id: int) -> None:
        with self._api(f"delete project {project_id}"):
            self._sdk.projects.delete(id=project_id)

    def update_project(self, project_id: int, **fields: Any) -> None:
        what = "change the label config of" if "label_config" in fields else "update"
        with self._api(f"{what} project {project_id}"):
            self._sdk.projects.update(id=project_id, **fields)

    def ensure_local_storage(self, project_id: int, path: str) -> None:
        """A local-files source lets the embedded server serve media under `path` to this project's users."""
        with self._api(f"connect local media folder {path}"):
            present = {s.path for s in self._sdk.import_storage.local.list(project=project_id)}
            if path not in present:
                self._sdk.import_storage.local.create(project=project_id, path=path, title="media (do not sync)",
                                                      use_blob_urls=False)

    # -- tasks ---------------------------------------------------------------------------------------------
    def task_keys(self, project_id: int) -> dict[str, list[int]]:
        """`meta.row_id` -> task ids for every task of the project (only ids and meta travel: fast)."""
        keys: dict[str, list[int]] = {}
        for task_id, meta in self.task_metas(project_id).items():
            row_id = meta.get("row_id")
            if row_id is not None:
                keys.setdefault(str(row_id), []).append(task_id)
        return keys

    def task_metas(self, project_id: int) -> dict[int, dict[str, Any]]:
        """Task id -> `meta` for every task of the project, in id order (only ids and meta travel)."""
        metas: dict[int, dict[str, Any]] = {}
        page, seen = 1, 0
        with self._api(f"list the tasks of project {project_id}"):
            while True:
                pager = self._sdk.tasks.list(project=project_id, include="id,meta", fields="task_only",
                                             page=page, page_size=LIST_PAGE)
                items = pager.items or []
                for task in items:
                    metas[int(task.id)] = dict(task.meta or {})
                seen += len(items)
                if not items or seen >= int(pager.response.total or 0):
                    return dict(sorted(metas.items()))
                page += 1

    def task_predictions(self, project_id: int) -> list[TaskPredictions]:
        """Every task's meta, predictions (id, model_version) and whether anyone annotated it (or skipped it)."""
        found: list[TaskPredictions] = []
        page = 1
        with self._api(f"list the predictions of project {project_id}"):
            while True:
                pager = self._sdk.tasks.list(project=project_id, fields="all", page=page, page_size=LIST_PAGE,
                                             include="id,meta,predictions,total_annotations,cancelled_annotations")
                items = pager.items or []
                for task in items:
                    predictions = tuple(_prediction_key(p) for p in task.predictions or ())
                    found.append(TaskPredictions(
                        task_id=int(task.id), meta=dict(task.meta or {}), predictions=predictions,
                        annotated=bool((task.total_annotations or 0) + (task.cancelled_annotations or 0))))
                if not items or len(found) >= int(pager.response.total or 0):
                    return sorted(found, key=lambda t: t.task_id)
                page += 1

    def replace_prediction(self, task_id: int, old: Sequence[int], prediction: dict[str, Any],
                           meta: dict[str, Any]) -> None:
        """Delete the task's predictions, add `prediction`, then record it in the task's meta (last, so that a
        crash in between leaves a meta that differs from the wanted one and the next push repeats this)."""
        with self._api(f"replace the prediction of task {task_id}"):
            for prediction_id in old:
                self._sdk.predictions.delete(id=prediction_id)
            self._sdk.predictions.create(task=task_id, result=prediction["result"], score=prediction.get("score"),
                                         model_version=prediction["model_version"])
            self._sdk.tasks.update(id=str(task_id), meta=meta)

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        """One atomic import request (the server creates all tasks of a request in one transaction); new ids."""
        with self._api(f"import {len(tasks)} tasks into project {project_id}"):
            response = self._sdk.projects.import_tasks(id=project_id, request=tasks, return_task_ids=True)
        return [int(i) for i in (response.task_ids or [])]

    def task_fingerprint(self, project_id: int) -> tuple[int, int, str]:
        """(number of tasks, highest task id, that task's meta.row_id): one cheap request."""
        with self._api(f"count the tasks of project {project_id}"):
            pager = self._sdk.tasks.list(project=project_id, include="id,meta", fields="task_only", page=1,
                                         page_size=1, query=json.dumps({"ordering": ["-tasks:id"]}))
        items = pager.items or []
        if not items:
            return 0, 0, ""
        return int(pager.response.total or 0), int(items[0].id), str((items[0].meta or {}).get("row_id", ""))

    def create_annotation(self, task_id: int, result: list[dict[str, Any]], *, completed_by: int | None = None,
                          lead_time: float | None = None) -> int:
        extra: dict[str, Any] = {}
        if completed_by is not None:
            extra["completed_by"] = completed_by
        if lead_time is not None:
            extra["lead_time"] = lead_time
        with self._api(f"annotate task {task_id}"):
            return int(self._sdk.annotations.create(id=task_id, result=result, **extra).id)

    def task_detail(self, task_id: int) -> dict[str, Any]:
        """One task as plain JSON (data, meta, overlap, predictions, annotations)."""
        with self._api(f"read task {task_id}"):
            return json.loads(self._sdk.tasks.get(id=str(task_id)).json())

    def delete_task(self, task_id: int) -> None:
        with self._api(f"delete task {task_id}"):
            self._sdk.tasks.delete(id=str(task_id))

    def export_json(self, project_id: int) -> bytes:
        """The full JSON export of every task (annotations with their region ids intact)."""
        with self._api(f"export project {project_id}"):
            return b"".join(self._sdk.projects.exports.download_sync(
                project_id, export_type="JSON", download_all_tasks=True, download_resources=False))


def sign_up(url: str, invite_token: str, email: str, password: str) -> Literal["created", "exists"]:
    """Create an account through the organisation's invite link (the open-source API has no password field)."""
    import httpx

    with httpx.Client(base_url=url, follow_redirects=False, timeout=60, headers=one_request_per_connection(url)) as web:
        try:
            web.get("/user/signup/", params={"token": invite_token})
            response = web.post("/user/signup/", params={"token": invite_token},
                                data={"email": email, "password": password,
                                      "csrfmiddlewaretoken": web.cookies.get("csrftoken", "")},
                                headers={"Referer": f"{url}/user/signup/"})
        except httpx.TransportError as exc:
            raise RescueError(f"cannot reach Label Studio at {masked_url(url)} to sign up {email}",
                              "start the server (`rescue labelstudio up`)") from exc
    if response.status_code in (302, 303):
        return "created"
    if "already exists" in response.text:
        return "exists"
    if response.status_code == 403:
        raise RescueError(f"Label Studio at {masked_url(url)} refused the sign-up of {email} (invite link rejected)",
                          "check that the API token belongs to an owner of the organisation")
    raise RescueError(f"Label Studio at {masked_url(url)} refused the sign-up of {email}: "
                      f"{_form_errors(response.text)}",
                      "use a valid email and a password of at least 8 characters that is not too common")


def _form_errors(html: str) -> str:
    import re

    found = re.findall(r'class="[^"]*(?:error|field_errors)[^"]*"[^>]*>\s*([^<]{3,200})<', html)
    return "; ".join(dict.fromkeys(text.strip() for text in found if text.strip())) or "the form was not accepted"


def login_token(url: str, email: str, password: str) -> str:
    """An account's own API token, through a browser-style login (so it can annotate as itself)."""
    import httpx

    with httpx.Client(base_url=url, follow_redirects=False, timeout=60, headers=one_request_per_connection(url)) as web:
        web.get("/user/login/")
        response = web.post("/user/login/", data={"email": email, "password": password,
                                                  "csrfmiddlewaretoken": web.cookies.get("csrftoken", "")},
                            headers={"Referer": f"{url}/user/login/"})
        if response.status_code not in (302, 303):
            raise RescueError(f"Label Studio at {masked_url(url)} refused the login of {email}",
                              "check the password in build/labelstudio/annotators.json")
        token = web.get("/api/current-user/token")
    if token.status_code != 200:
        raise RescueError(f"Label Studio at {masked_url(url)} has no API token for {email} ({token.status_code})",
                          "start the server with legacy tokens enabled (the embedded server does)")
    return str(token.json()["token"])
